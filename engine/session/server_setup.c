/*
 * server_setup.c - a server session's stripes, once its file list is
 * settled (server.c): each client stripe paired with a rail of this host
 * whose port is ACTIVE now (pairing.c), as many of them as its buffer gives
 * 2 slots each (the others unpaired, the welcome saying why), as many
 * slots per stripe as the client, --max-memory and the job's chunks allow,
 * the job built, a listener on each rail in use, the welcome that says
 * where each stripe must connect, and the accepts. A stripe that cannot be
 * accepted, or that the client says it could not connect ("lost"), is left
 * out (failover) and the other side told; the set-up fails only when no
 * stripe is left.
 *
 * Threading: the session's own thread.
 */
#include "engine/session/server.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>

/* The welcome: token, slots, and for each client stripe where to connect. */
static int welcome_send(struct srv_session *ss, const uint16_t *port)
{
	json_t *m = eng__proto_msg(ENG_MSG_WELCOME, true), *arr = json_array();
	unsigned seen[TOPO_MAX_RAILS] = {0}, base[TOPO_MAX_RAILS], r, k = 0;
	struct eng_report rep; /* the job's slots and rail names */
	size_t i;
	int err = 0;

	eng__job_report(ss->s.job, &rep);
	for (r = 0; r < ss->plan.n_rails; r++) {
		base[r] = k;
		k += ss->plan.rail[r].qps;
	}
	/* Keyed, both sides derived the tokens; else they are this session's secret in clear. */
	if (!ss->s.key)
		err = eng__proto_set_hex(m, ENG_KEY_TOKEN, ss->s.tokens, sizeof(ss->s.tokens));
	json_object_set_new(m, ENG_KEY_CHUNKS,
			    json_integer((json_int_t)eng__job_chunks(ss->s.job)));
	json_object_set_new(m, ENG_KEY_SLOTS, json_integer(rep.n_slots));
	json_object_set_new(m, ENG_KEY_SLOT_SIZE, json_integer(ss->s.chunk));
	for (i = 0; i < json_array_size(json_object_get(ss->hello, ENG_KEY_STRIPES)); i++) {
		json_t *st = json_object();

		r = ss->peer_rail[i];
		if (r == ENG_NO_RAIL) {
			json_object_set_new(st, ENG_KEY_UNPAIRED, json_true());
			if (ss->trimmed[i])
				json_object_set_new(st, ENG_KEY_BUFFER_FULL, json_true());
			json_array_append_new(arr, st);
			continue;
		}
		json_object_set_new(st, ENG_KEY_ADDR, json_string(ss->addr[r].text));
		json_object_set_new(st, ENG_KEY_PORT, json_integer(port[r]));
		json_object_set_new(st, ENG_KEY_STRIPE, json_integer(base[r] + seen[r]++));
		json_object_set_new(st, ENG_KEY_RAIL, json_string(rep.rail[r].name));
		json_array_append_new(arr, st);
	}
	json_object_set_new(m, ENG_KEY_STRIPES, arr);
	if (!err)
		err = eng__proto_send(&ss->s.ctl, m);
	json_decref(m);
	return err;
}

/* Which of the plan's rails can take stripes now: a port that went down since the start cannot. */
static void rails_usable(struct srv_session *ss, bool usable[TOPO_MAX_RAILS])
{
	unsigned r;

	for (r = 0; r < ss->plan.n_rails; r++) {
		usable[r] = topo_port_active("/sys", ss->plan.rail[r].dev, ss->plan.rail[r].port);
		if (!usable[r])
			rcp_log(RCP_LOG_NOTICE, "session %u: %s:%u is not ACTIVE: not offered",
				ss->id, ss->plan.rail[r].dev, ss->plan.rail[r].port);
	}
}

/*
 * While the stripes connect, the client may say on the control connection
 * that one will never come ("lost": it could not connect it), or why it
 * gave up (an error). Anything else is out of turn.
 */
static int accept_heard(struct srv_session *ss)
{
	json_t *msg = NULL;
	uint64_t n;
	int got = eng__proto_poll(&ss->s.ctl, ENG_MSG_LOST, &msg), err;

	if (got <= 0)
		return got < 0 ? got : rcp_err(-EPROTO, "the sender broke off while connecting");
	if ((err = eng__proto_get_u64(msg, ENG_KEY_STRIPE, &n)) == 0)
		err = eng__session_link_heard(
			&ss->s, n, json_string_value(json_object_get(msg, ENG_KEY_MESSAGE)));
	json_decref(msg);
	return err;
}

/*
 * Every stripe connected or left out. Each word from the client (a stripe
 * it left out) starts the wait for the rest afresh: a client that leaves a
 * dead rail out after its --connect-timeout still has the others to do.
 */
static int stripes_accept(struct srv_session *ss)
{
	int err;

	while ((err = ss->s.tr->accept_all(ss->s.conn, ss->s.ctl.fd, ss->s.timeout_ms)) == -EPIPE) {
		if ((err = accept_heard(ss)) != 0)
			return err;
	}
	if (!err && ss->s.setup_err)
		err = rcp_err(ss->s.setup_err,
			      "cannot tell the client which stripes were left out: %s",
			      strerror(-ss->s.setup_err));
	return err;
}

/* How many stripes the plan's rails take. */
static unsigned plan_stripes(const struct topo_plan *plan)
{
	unsigned r, n = 0;

	for (r = 0; r < plan->n_rails; r++)
		n += plan->rail[r].qps;
	return n;
}

int eng__server_setup(struct srv_session *ss)
{
	const struct eng_transport *tr = ss->s.tr;
	const json_t *stripes = json_object_get(ss->hello, ENG_KEY_STRIPES);
	uint16_t port[TOPO_MAX_RAILS] = {0};
	unsigned r, n_slots = 0, dropped = 0;
	uint64_t client_slots;
	bool usable[TOPO_MAX_RAILS], capped;
	int err;

	ss->plan = *ss->base;
	rails_usable(ss, usable);
	if ((err = eng__stripes_pair(stripes, ss->addr, &ss->plan, usable, ss->peer_rail)) != 0)
		return err;
	/* Its share of --max-memory: as many stripes as that holds. */
	capped = ss->admit.bytes && eng__plan_buffers_cap(&ss->plan, ss->s.chunk, ss->admit.bytes);
	if ((err = eng__stripes_fit(&ss->plan, ss->s.chunk, "the server", &dropped)) != 0 ||
	    (err = eng__slots_per_stripe(&ss->plan, ss->s.chunk, "the server", &n_slots)) != 0)
		return err;
	eng__stripes_unpair(&ss->plan, stripes, ss->peer_rail, ss->trimmed);
	if (dropped)
		rcp_log(RCP_LOG_NOTICE,
			"session %u: the buffer (%s) holds %u of the client's %u "
			"stripes, 2 slots of %u KiB each: the others left out",
			ss->id, capped ? "its share of --max-memory" : "--buffer-mib",
			plan_stripes(&ss->plan), (unsigned)json_array_size(stripes),
			ss->s.chunk >> 10);
	/* The client's memory is the client's: never more slots than its hello says it can take. */
	if ((err = eng__proto_get_u64(ss->hello, ENG_KEY_SLOTS, &client_slots)) != 0)
		return err;
	if (client_slots < 2)
		return rcp_err(-EPROTO,
			       "the client can take %" PRIu64 " slots per stripe, fewer than 2",
			       client_slots);
	if (client_slots < n_slots)
		n_slots = (unsigned)client_slots;
	if (ss->admit.max_slots < n_slots) /* a session larger than --max-memory alone */
		n_slots = ss->admit.max_slots;
	if (ss->s.files) /* a copy: its chunks are known by now, either way */
		n_slots = eng__slots_for_job(n_slots, eng__files_chunks(ss->s.files));
	if (!ss->s.key && getrandom(ss->s.tokens, sizeof(ss->s.tokens), 0) != sizeof(ss->s.tokens))
		return rcp_err(-EIO, "cannot draw a session token: %s", strerror(errno));
	err = eng__session_job(&ss->s, &ss->plan, n_slots);
	rcp_steps_lap(&ss->s.steps, RCP_STEP_MEMORY);
	if (err)
		return err;
	for (r = 0; r < ss->plan.n_rails && !err; r++) {
		union eng_sockaddr a = ss->addr[r].addr;

		if (ss->plan.rail[r].qps)
			err = tr->listen(ss->s.conn, &a, &port[r]);
	}
	if (!err)
		err = welcome_send(ss, port);
	if (!err)
		err = stripes_accept(ss);
	return err ? err : eng__session_any_connected(&ss->s);
}
