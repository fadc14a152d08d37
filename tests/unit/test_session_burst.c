/*
 * test_session_burst.c - many clients of one host at once: a burst waits
 * its turn instead of being turned away (engine/session/listener.c parks
 * the connections past an address's share; queue.c has proven sessions
 * past --max-sessions wait their turn within the client's --timeout).
 *
 * Design: over the loopback transport (session_harness.h). A burst is
 * many benches on threads of this process, all from 127.0.0.1; a turn is
 * shown on raw connections (a hello that gets no answer until a place
 * frees); a busy server is one whose only session is a raw push held in
 * the middle.
 *
 * Threading: the server, the burst's client threads, a thread that ends
 * the held session.
 */
#include "session_harness.h"

/* Clients in the burst: twice an address's places before authentication, four times the
 * sessions. */
#define BURST (2 * ENG_MAX_PENDING_PER_ADDR)

struct burst_client {
	const struct server *srv;
	pthread_t thread;
	int err;
	char msg[256];
	uint64_t bytes;
};

static void *burst_main(void *arg)
{
	static const unsigned one[] = {1};
	struct burst_client *b = arg;
	struct topo_plan plan;
	struct eng_report r = {0};

	plan_make(&plan, one, 1, 1, 1, BUDGET);
	b->err = bench(b->srv, &plan, 256 * KiB, 64 * KiB, NULL, &r);
	snprintf(b->msg, sizeof(b->msg), "%s", b->err ? rcp_err_msg(b->err) : "");
	b->bytes = r.bytes;
	return NULL;
}

/*
 * BURST benches from one address at once, against a server of 4 sessions
 * and ENG_MAX_PENDING_PER_ADDR places per address: every one completes.
 * Before, the ones past the address's places were refused at once ("try
 * again later"), and so were the ones past the sessions.
 */
static void test_a_burst_from_one_address_is_served_whole(void **state)
{
	static const unsigned one[] = {1};
	struct fx *fx = *state;
	struct burst_client b[BURST];
	unsigned i;

	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	for (i = 0; i < BURST; i++) {
		b[i] = (struct burst_client){.srv = &fx->srv};
		assert_int_equal(pthread_create(&b[i].thread, NULL, burst_main, &b[i]), 0);
	}
	for (i = 0; i < BURST; i++)
		pthread_join(b[i].thread, NULL);
	for (i = 0; i < BURST; i++) {
		if (b[i].err)
			fail_msg("client %u of the burst failed: %s", i, b[i].msg);
		assert_int_equal(b[i].bytes, 256 * KiB);
	}
}

/*
 * Past its address's share, a connection waits, unanswered, and is served
 * as soon as a place of its address frees, before any newcomer.
 */
static void test_a_connection_past_its_addresss_share_waits_its_turn(void **state)
{
	static const unsigned one[] = {1};
	struct fx *fx = *state;
	int idle[ENG_MAX_PENDING_PER_ADDR], next, i;
	struct pollfd pfd;
	uint16_t port;
	json_t *hello, *m;

	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	port = (uint16_t)atomic_load(&fx->srv.port);
	for (i = 0; i < ENG_MAX_PENDING_PER_ADDR; i++)
		idle[i] = raw_connect_from(port, "127.0.0.3");
	next = raw_connect_from(port, "127.0.0.3");
	hello = json_pack("{s:s, s:s, s:i, s:s, s:I, s:I, s:I, s:[o], s:o}", "type", "hello",
			  "proto", "railcp", "version", ENG_PROTO_VERSION, "job", "bench", "chunk",
			  (json_int_t)(64 * KiB), "bytes", (json_int_t)MiB, "slots", (json_int_t)4,
			  "stripes", stripe_json("198.18.1.1", 24), ENG_KEY_SERVER,
			  dialed_json(port));
	raw_json(next, hello);
	/* No answer while the address's places are taken: not refused, waiting. */
	pfd = (struct pollfd){.fd = next, .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 300), 0);
	close(idle[0]);
	m = raw_recv(next);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "type")) ?: "?", "welcome");
	json_decref(m);
	close(next);
	for (i = 1; i < ENG_MAX_PENDING_PER_ADDR; i++)
		close(idle[i]);
	bench_ok(&fx->srv, NULL);
}

struct closer {
	int fd;
	unsigned after_ms;
};

static void *closer_main(void *arg)
{
	struct closer *c = arg;

	usleep(c->after_ms * 1000u);
	close(c->fd);
	return NULL;
}

/*
 * A server whose sessions are all taken has the proven client wait its
 * turn (engine/session/queue.c) until one ends, within its --timeout; past
 * that it fails with the server's sentence saying how long the queue was.
 */
static void test_a_busy_server_has_the_client_wait_within_the_timeout(void **state)
{
	static const unsigned one[] = {1};
	struct fx *fx = *state;
	struct closer c = {.after_ms = 400};
	struct topo_plan plan;
	struct eng_client_opts o;
	struct eng_report r;
	char root[4096];
	uint64_t t0;
	pthread_t t;
	int err;

	fx_dir(fx, "root", root);
	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	fx->srv.max_sessions = 1;
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, one, 1, 1, 1, BUDGET);

	/* Held for good: waits 9/10 of its second, then the server's sentence. */
	c.fd = raw_push_ready((uint16_t)atomic_load(&fx->srv.port), "d");
	o = client_opts(&fx->srv, &plan, 64 * KiB, NULL);
	o.bench_bytes = 256 * KiB;
	o.timeout_ms = 1000;
	err = eng__client_run(&o, &r);
	assert_int_equal(err, -ECONNABORTED);
	if (!strstr(rcp_err_msg(err),
		    "the server says: no turn came within 0.9 s (9/10 of the "
		    "client's --timeout): this session waited at place 1 of 1 "
		    "in the server's queue, 1 sessions running (--max-sessions 1)"))
		fail_msg("a busy server: %s", rcp_err_msg(err));

	/* Held for 0.4 s: the bench waits its turn and runs. */
	t0 = rcp_now_ns();
	assert_int_equal(pthread_create(&t, NULL, closer_main, &c), 0);
	bench_ok(&fx->srv, NULL);
	pthread_join(t, NULL);
	assert_true(rcp_now_ns() - t0 >= 300 * 1000000ull);
	fx->srv.max_sessions = 0;
}

struct canceller {
	_Atomic bool flag;
	uint64_t at_ns;
};

/* Cancels when the client says it waits its turn. */
static void canceller_line(const char *line, void *ctx)
{
	struct canceller *c = ctx;

	if (strstr(line, "the server is full: this session waits its turn, place 1 of 1") &&
	    !atomic_load(&c->flag)) {
		c->at_ns = rcp_now_ns();
		atomic_store(&c->flag, true);
	}
}

/*
 * A copy that waits its turn at a busy server sees its cancel (Ctrl-C)
 * within a slice of its read, not at its --timeout: cancelled just as it
 * says it waits, it returns within 200 ms.
 */
static void test_a_copy_waiting_for_a_busy_server_is_cancelled_at_once(void **state)
{
	static const unsigned one[] = {1};
	struct fx *fx = *state;
	struct canceller c = {0};
	const char *src[1];
	char root[4096], dir[4096], file[4096 + 8];
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	struct log_tap tap;
	int held, err;

	fx_dir(fx, "root", root);
	fx_dir(fx, "src", dir);
	pattern_write(dir, "f", 4 * KiB, 1);
	snprintf(file, sizeof(file), "%s/f", dir);
	src[0] = file;
	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	fx->srv.max_sessions = 1;
	rcp_log_set_level(RCP_LOG_INFO); /* before any thread: the client's "waits its turn" */
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, one, 1, 1, 1, BUDGET);
	held = raw_push_ready((uint16_t)atomic_load(&fx->srv.port), "d");
	cp = copy_opts(ENG_PUSH, src, 1, "f");
	cp.cancel = &c.flag;
	log_tap_start(&tap, canceller_line, &c);
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	c.at_ns = rcp_now_ns() - c.at_ns; /* how late */
	log_tap_stop(&tap);
	server_stop(&fx->srv);
	rcp_log_set_level(RCP_LOG_NOTICE);
	close(held);
	assert_true(atomic_load(&c.flag));
	assert_int_equal(err, -EINTR);
	assert_string_equal(rcp_err_msg(err), "interrupted");
	if (c.at_ns > 200 * 1000000ull)
		fail_msg("the copy ended %.0f ms after its cancel", (double)c.at_ns / 1e6);
	fx->srv.max_sessions = 0;
}

static void peer_line(const char *line, void *ctx)
{
	if (strstr(line, " from 127.0.0.5: push of 1 files into "))
		atomic_store((_Atomic bool *)ctx, true);
}

/*
 * A copy's control connection leaves from --bind's address (the server's
 * log names it), and one from an address this host lacks fails with a
 * sentence naming it.
 */
static void test_a_copy_leaves_from_its_bind_address(void **state)
{
	static const unsigned one[] = {1};
	struct fx *fx = *state;
	const char *src[1];
	char root[4096], dir[4096], file[4096 + 8];
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	struct log_tap tap;
	_Atomic bool seen = false;
	int err;

	fx_dir(fx, "root", root);
	fx_dir(fx, "src", dir);
	pattern_write(dir, "f", 4 * KiB, 1);
	snprintf(file, sizeof(file), "%s/f", dir);
	src[0] = file;
	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, one, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PUSH, src, 1, "f");
	cp.bind_addr = "127.0.0.5";
	log_tap_start(&tap, peer_line, &seen);
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	log_tap_stop(&tap); /* the session's first line came before the copy's end */
	if (err)
		fail_msg("a copy from 127.0.0.5: %s", rcp_err_msg(err));
	assert_true(atomic_load(&seen));
	cp.bind_addr = "198.51.100.7"; /* TEST-NET-2: on no host */
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	assert_int_equal(err, -EADDRNOTAVAIL);
	assert_non_null(strstr(rcp_err_msg(err), "cannot send from 198.51.100.7 (--bind): "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_burst_from_one_address_is_served_whole),
		T(test_a_connection_past_its_addresss_share_waits_its_turn),
		T(test_a_busy_server_has_the_client_wait_within_the_timeout),
		T(test_a_copy_waiting_for_a_busy_server_is_cancelled_at_once),
		T(test_a_copy_leaves_from_its_bind_address),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
