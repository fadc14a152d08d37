/*
 * test_session_agree.c - --transport auto agreed by both ends (agree.c):
 * whole sessions, the real client and server code in one process, with
 * the loopback fabric playing the end that has RDMA ("rdma") and real TCP
 * on 127.0.0.1 (the rail "lo") the transport both can run. A server on
 * auto that chose rdma serves a tcp client over its TCP plan; a client on
 * auto that chose rdma, at a server that serves tcp alone, goes over tcp
 * with one line saying so; an explicit choice at either end that the
 * other does not serve is still refused with a sentence naming both. And
 * eng__transport_pick over every pairing of the hello's words.
 *
 * Threading: the server's threads, and the log tap's, which counts lines
 * into an atomic.
 */
#include "session_harness.h"

/* A plan on rail "lo" of qps stripes: the TCP plan of either end. */
static void plan_lo(struct topo_plan *p, unsigned qps)
{
	static const unsigned num[] = {0};

	plan_make(p, num, 1, qps, 1, BUDGET);
	snprintf(p->rail[0].dev, sizeof(p->rail[0].dev), "lo");
}

/* A plan on the loopback fabric's rail loop1: the RDMA plan of either end. */
static void plan_rdma(struct topo_plan *p)
{
	static const unsigned one[] = {1};

	plan_make(p, one, 1, 2, 1, BUDGET);
}

/* Lines seen: a client's that goes over tcp after all; a server's session of both over tcp. */
struct seen {
	_Atomic unsigned notices, tcp_sessions;
};

static void notice_line(const char *line, void *ctx)
{
	struct seen *s = ctx;

	if (strstr(line, "the server serves tcp alone: going over tcp instead of rdma"))
		atomic_fetch_add(&s->notices, 1);
	if (strstr(line, " MiB over 3 tcp stripes ("))
		atomic_fetch_add(&s->tcp_sessions, 1);
}

/* The sessions the last push_between's server said it ran over tcp beside rdma. */
static unsigned tcp_sessions;

struct ends {
	bool srv_rdma, srv_auto; /* the server's transport: rdma (loopback) or tcp; auto */
	bool cli_rdma, cli_auto; /* the client's, the same way */
	bool srv_once;		 /* the server serves one session (serve --ssh) */
};

/*
 * A tree pushed from a client to a server as e says, both ends' plans as
 * auto would make them; the push's result, its report in *r and the
 * notices seen in *notices. On success the tree arrived whole.
 */
static int push_between(struct fx *fx, struct ends e, struct eng_report *r, unsigned *notices)
{
	static struct topo_plan srv_tcp, cli_tcp, plan;
	char src[4096], root[4096], top[4096], got[4096];
	const char *push_src[] = {top};
	struct seen seen = {0, 0};
	struct eng_copy_opts cp;
	struct eng_client_opts o;
	struct log_tap tap;
	int err;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	tree_make(src);
	t_path(top, src, "top");
	plan_lo(&srv_tcp, 2);
	plan_lo(&cli_tcp, 3);
	if (e.srv_rdma)
		plan_rdma(&fx->srv.plan);
	else
		plan_lo(&fx->srv.plan, 2);
	fx->srv.plan_tcp = e.srv_rdma && e.srv_auto ? &srv_tcp : NULL;
	fx->srv.once = e.srv_once;
	server_start(&fx->srv, e.srv_rdma ? NULL : eng__transport_tcp(), root, NULL);
	if (e.cli_rdma)
		plan_rdma(&plan);
	else
		plan_lo(&plan, 3);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	o = client_opts(&fx->srv, &plan, cp.chunk, NULL);
	o.copy = &cp;
	o.tr = e.cli_rdma ? eng__transport_loopback() : eng__transport_tcp();
	o.plan_tcp = e.cli_rdma && e.cli_auto ? &cli_tcp : NULL;
	log_tap_start(&tap, notice_line, &seen);
	err = eng__client_run(&o, r);
	log_tap_stop(&tap);
	*notices = atomic_load(&seen.notices);
	tcp_sessions = atomic_load(&seen.tcp_sessions);
	if (!err) {
		t_path(got, root, "top");
		tree_same(top, got);
	}
	assert_int_equal(server_stop(&fx->srv), 0);
	return err;
}

/*
 * A push between e that goes through over transport (its client's plan of
 * it: 2 stripes of rdma, 3 of tcp), with notices client lines about going
 * over tcp instead and tcp_lines server lines of a tcp session beside rdma.
 */
static void agreed(void **state, struct ends e, const char *transport, unsigned notices,
		   unsigned tcp_lines)
{
	struct eng_report r;
	unsigned seen;

	assert_int_equal(push_between(*state, e, &r, &seen), 0);
	assert_string_equal(r.transport, transport);
	assert_int_equal(r.n_stripes, strcmp(transport, "tcp") ? 2 : 3);
	assert_int_equal(seen, notices);
	assert_int_equal(tcp_sessions, tcp_lines);
}

/* Both on auto, both with RDMA: rdma, and nothing said about it. */
static void test_both_on_auto_with_rdma_agree_on_rdma(void **state)
{
	agreed(state, (struct ends){true, true, true, true, false}, "rdma", 0, 0);
}

/* A server on auto that chose rdma serves a client without RDMA over tcp, and says so. */
static void test_a_server_on_auto_with_rdma_serves_a_tcp_client_over_tcp(void **state)
{
	agreed(state, (struct ends){true, true, false, false, false}, "tcp", 0, 1);
}

/* A client on auto that chose rdma, at a server that serves tcp alone: tcp, one line. */
static void test_a_client_on_auto_with_rdma_goes_over_a_tcp_only_servers_tcp(void **state)
{
	agreed(state, (struct ends){false, true, true, true, false}, "tcp", 1, 0);
}

/*
 * The same at a server that serves once (serve --ssh, as a copy over ssh
 * starts it): the client sent to tcp comes back, and finds it still there.
 */
static void test_a_server_serving_once_waits_for_a_client_sent_to_tcp(void **state)
{
	agreed(state, (struct ends){false, true, true, true, true}, "tcp", 1, 0);
}

/* The refusal of pushing between e: its sentence must hold want. */
static void refused(void **state, struct ends e, const char *want)
{
	struct eng_report r;
	unsigned notices;
	int err = push_between(*state, e, &r, &notices);

	assert_int_not_equal(err, 0);
	if (!strstr(rcp_err_msg(err), want))
		fail_msg("the client was told \"%s\"", rcp_err_msg(err));
	assert_int_equal(notices, 0);
}

/* An explicit --transport rdma at a server that serves tcp (on auto, without RDMA): refused. */
static void test_an_explicit_rdma_client_at_a_tcp_server_is_refused(void **state)
{
	refused(state, (struct ends){false, true, true, false, false},
		"the client asks for --transport rdma; this server serves tcp (its --transport)");
}

/* A client without RDMA at a server whose --transport rdma was explicit: refused. */
static void test_a_tcp_client_at_an_explicit_rdma_server_is_refused(void **state)
{
	refused(state, (struct ends){true, false, false, true, false},
		"the client asks for --transport tcp; this server serves rdma (its --transport)");
}

/* The hello {"transport": want, "transports": can (NULL: none)}, picked by a server. */
static int pick(const char *want, json_t *can, const char *have, bool tcp_too, bool *tcp)
{
	json_t *hello = json_pack("{s:s}", "type", "hello");
	int err;

	if (want)
		json_object_set_new(hello, ENG_KEY_TRANSPORT, json_string(want));
	if (can)
		json_object_set_new(hello, ENG_KEY_TRANSPORTS, can);
	*tcp = false;
	err = eng__transport_pick(hello, have, tcp_too, tcp);
	json_decref(hello);
	return err;
}

/* Every pairing of the hello and the server, and what the hello says of a client on auto. */
static void test_transport_pick_over_every_pairing(void **state)
{
	json_t *hello = json_object();
	bool tcp;

	(void)state;
	assert_int_equal(pick("rdma", NULL, "rdma", false, &tcp), 0);
	assert_false(tcp);
	assert_int_equal(pick(NULL, NULL, "rdma", false, &tcp), 0); /* before TCP: rdma */
	assert_int_equal(pick("tcp", NULL, "rdma", true, &tcp), 0);
	assert_true(tcp);
	assert_int_equal(pick("tcp", NULL, "tcp", false, &tcp), 0);
	assert_true(tcp);
	assert_int_equal(pick("rdma", json_pack("[s,s]", "rdma", "tcp"), "rdma", true, &tcp), 0);
	assert_false(tcp);
	assert_int_equal(pick("rdma", json_pack("[s,s]", "rdma", "tcp"), "tcp", false, &tcp),
			 ENG_ERR_OTHER_TRANSPORT);
	assert_int_equal(pick("tcp", NULL, "rdma", false, &tcp), -EPROTO);
	assert_int_equal(pick("rdma", NULL, "tcp", false, &tcp), -EPROTO);
	/* what a client says other than a list of words is no offer of tcp */
	assert_int_equal(pick("rdma", json_string("tcp"), "tcp", false, &tcp), -EPROTO);
	assert_int_equal(pick("rdma", json_pack("[i,{}]", 7), "tcp", false, &tcp), -EPROTO);
	assert_int_equal(pick("smoke", NULL, "tcp", true, &tcp), -EPROTO);
	assert_non_null(strstr(rcp_err_msg(-EPROTO), "a transport this server does not know"));
	assert_int_equal(pick("", json_pack("[s]", "tcp"), "tcp", true, &tcp), -EPROTO);
	eng__transport_hello(hello, eng__transport_loopback(), true);
	assert_string_equal(json_string_value(json_object_get(hello, ENG_KEY_TRANSPORT)), "rdma");
	assert_int_equal(json_array_size(json_object_get(hello, ENG_KEY_TRANSPORTS)), 2);
	json_object_clear(hello);
	eng__transport_hello(hello, eng__transport_tcp(), true); /* tcp: nothing else to offer */
	assert_string_equal(json_string_value(json_object_get(hello, ENG_KEY_TRANSPORT)), "tcp");
	assert_null(json_object_get(hello, ENG_KEY_TRANSPORTS));
	json_decref(hello);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transport_pick_over_every_pairing),
		T(test_both_on_auto_with_rdma_agree_on_rdma),
		T(test_a_server_on_auto_with_rdma_serves_a_tcp_client_over_tcp),
		T(test_a_client_on_auto_with_rdma_goes_over_a_tcp_only_servers_tcp),
		T(test_a_server_serving_once_waits_for_a_client_sent_to_tcp),
		T(test_an_explicit_rdma_client_at_a_tcp_server_is_refused),
		T(test_a_tcp_client_at_an_explicit_rdma_server_is_refused),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
