/*
 * agree.c - which transport a session runs on, agreed by both ends
 * (protocol 13). A client on --transport auto names in its hello what it
 * can run ("transports"), besides the one it asks for ("transport"). A
 * server on auto that chose rdma serves tcp sessions too, over its TCP
 * plan; a server that serves tcp alone answers such a client asking for
 * rdma with an error frame flagged "other_transport", and the client asks
 * again over tcp (eng__client_run, below). An explicit --transport at either end keeps
 * the strict rule: a client asking for what the server does not serve is
 * refused with a sentence naming both.
 *
 * Threading: functions use only their arguments.
 */
#include "engine/session/fallback.h"

#include "common/common.h"

#include <errno.h>
#include <string.h>

void eng__transport_hello(json_t *hello, const struct eng_transport *tr, bool tcp_too)
{
	const char *word = eng__transport_word(tr);
	json_t *can;

	json_object_set_new(hello, ENG_KEY_TRANSPORT, json_string(word));
	if (!tcp_too || !strcmp(word, "tcp"))
		return;
	can = json_array();
	json_array_append_new(can, json_string(word));
	json_array_append_new(can, json_string("tcp"));
	json_object_set_new(hello, ENG_KEY_TRANSPORTS, can);
}

/* Whether the hello's "transports" names word. */
static bool hello_can(const json_t *hello, const char *word)
{
	const json_t *can = json_object_get(hello, ENG_KEY_TRANSPORTS);
	size_t i;

	for (i = 0; i < json_array_size(can); i++) {
		const char *w = json_string_value(json_array_get(can, i));

		if (w && !strcmp(w, word))
			return true;
	}
	return false;
}

int eng__transport_pick(const json_t *hello, const char *have, bool tcp_too, bool *tcp_out)
{
	const char *want = json_string_value(json_object_get(hello, ENG_KEY_TRANSPORT));

	if (!want)
		want = "rdma"; /* a client from before TCP */
	if (strcmp(want, "rdma") != 0 && strcmp(want, "tcp") != 0)
		return rcp_err(-EPROTO,
			       "the client asks for a transport this server does not know");
	*tcp_out = !strcmp(want, "tcp");
	if (!strcmp(want, have) || (*tcp_out && tcp_too))
		return 0;
	if (!strcmp(have, "tcp") && hello_can(hello, "tcp"))
		return rcp_err(ENG_ERR_OTHER_TRANSPORT,
			       "the client asks for --transport rdma by auto; this server serves "
			       "tcp alone: asking again over tcp");
	return rcp_err(-EPROTO,
		       "the client asks for --transport %s; this server serves %s (its "
		       "--transport)",
		       want, have);
}

/*
 * --transport auto that chose rdma, at a server that serves tcp alone
 * (agree.c): the same again over the TCP plan, with a line saying so. A
 * copy whose every RDMA rail failed mid-copy goes on over it (fallback.c).
 */
int eng__client_run(const struct eng_client_opts *o, struct eng_report *report_out)
{
	struct eng_fall fall = {0};
	struct eng_client_opts first = *o, tcp = *o;
	uint64_t t0 = rcp_now_ns();
	int err;

	first.fall = o->plan_tcp && o->copy ? &fall : NULL;
	err = eng__client_ask(&first, report_out);
	if (err != ENG_ERR_OTHER_TRANSPORT || !o->plan_tcp)
		return eng__client_fall_back(&first, err, t0, report_out);
	rcp_log(RCP_LOG_NOTICE,
		"the server serves tcp alone: going over tcp instead of rdma (--transport auto)");
	tcp.plan = o->plan_tcp;
	tcp.plan_tcp = NULL;
	tcp.tr = eng__transport_tcp();
	return eng__client_ask(&tcp, report_out);
}
