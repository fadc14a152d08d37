/*
 * test_session_queue.c - proven sessions at a full server wait their turn
 * in arrival order (engine/session/queue.c): the order of admission, a
 * waiting client that hangs up, a server that stops with clients waiting.
 * (A waiting client that runs out of time: test_session_burst.c and
 * test_session_memory.c.)
 *
 * Design: over the loopback transport (session_harness.h), with a server
 * of one session (--max-sessions 1) whose place a raw push holds, held in
 * the middle; waiting clients are benches on threads of this process, or
 * raw connections that read the server's "queued" frames themselves.
 *
 * Threading: the server, the waiting clients' threads, the log tap's.
 */
#include "session_harness.h"

/* Clients waiting at once in the order test. */
#define WAITERS 4

/*
 * What the log said: sessions waiting, the order sessions began, a client
 * that left. Each line also goes on to stderr (tap.saved), so that a
 * failure's message shows.
 */
struct seen {
	_Atomic unsigned waiting;
	_Atomic unsigned started;
	_Atomic unsigned order[WAITERS + 1];
	_Atomic bool left;
	struct log_tap tap;
};

static void seen_line(const char *line, void *ctx)
{
	struct seen *s = ctx;
	unsigned id, n;

	dprintf(s->tap.saved, "%s", line);
	if (strstr(line, " from 127.0.0.1 waits its turn: place "))
		atomic_fetch_add(&s->waiting, 1);
	if (strstr(line, "failed: the client left while waiting its turn (place 1 of 1)"))
		atomic_store(&s->left, true);
	if (sscanf(line, "railcp: session %u from 127.0.0.1: bench,", &id) == 1 &&
	    strstr(line, ": bench, ") && (n = atomic_fetch_add(&s->started, 1)) <= WAITERS)
		atomic_store(&s->order[n], id);
}

struct waiter {
	const struct server *srv;
	pthread_t thread;
	int err;
	char msg[256];
};

static void *waiter_main(void *arg)
{
	static const unsigned one[] = {1};
	struct waiter *w = arg;
	struct topo_plan plan;
	struct eng_report r = {0};

	plan_make(&plan, one, 1, 1, 1, BUDGET);
	w->err = bench(w->srv, &plan, 256 * KiB, 64 * KiB, NULL, &r);
	snprintf(w->msg, sizeof(w->msg), "%s", w->err ? rcp_err_msg(w->err) : "");
	return NULL;
}

/* A server of one session beneath a fresh root, the log tapped into s (at INFO). */
static void serve_one(struct fx *fx, struct seen *s)
{
	static const unsigned one[] = {1};
	char root[4096];

	fx_dir(fx, "root", root);
	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	fx->srv.max_sessions = 1;
	rcp_log_set_level(RCP_LOG_INFO); /* before any thread: the "waits its turn" lines */
	log_tap_start(&s->tap, seen_line, s);
	server_start(&fx->srv, NULL, root, NULL);
}

static void serve_one_end(struct fx *fx, struct seen *s)
{
	server_stop(&fx->srv);
	log_tap_stop(&s->tap);
	rcp_log_set_level(RCP_LOG_NOTICE);
	fx->srv.max_sessions = 0;
}

/*
 * WAITERS benches arrive one after another while the server's one place
 * is held; when it frees, they run in the order they arrived (session ids
 * go by arrival). Before, each asked again after its own jittered backoff,
 * in no order.
 */
static void test_waiting_sessions_are_admitted_in_arrival_order(void **state)
{
	struct fx *fx = *state;
	struct waiter w[WAITERS];
	struct seen s = {0};
	unsigned i;
	int held;

	serve_one(fx, &s);
	held = raw_push_ready((uint16_t)atomic_load(&fx->srv.port), "d");
	for (i = 0; i < WAITERS; i++) {
		w[i] = (struct waiter){.srv = &fx->srv};
		assert_int_equal(pthread_create(&w[i].thread, NULL, waiter_main, &w[i]), 0);
		assert_true(WAIT_FOR(atomic_load(&s.waiting) == i + 1));
	}
	close(held);
	for (i = 0; i < WAITERS; i++)
		pthread_join(w[i].thread, NULL);
	serve_one_end(fx, &s);
	for (i = 0; i < WAITERS; i++)
		if (w[i].err)
			fail_msg("waiting client %u failed: %s", i, w[i].msg);
	assert_int_equal(atomic_load(&s.started), WAITERS);
	for (i = 1; i < WAITERS; i++)
		if (atomic_load(&s.order[i]) != atomic_load(&s.order[i - 1]) + 1)
			fail_msg("session %u began after session %u: not in arrival order",
				 atomic_load(&s.order[i]), atomic_load(&s.order[i - 1]));
}

/* A raw keyless bench that gives its --timeout: it reads "queued", place 1 of 1. */
static int raw_waiter(uint16_t port)
{
	int fd = raw_connect(port);
	json_t *hello = hello_bench(1, 64 * KiB), *m;

	json_object_set_new(hello, "slots", json_integer(4));
	json_object_set_new(hello, ENG_KEY_SERVER, dialed_json(port));
	json_object_set_new(hello, ENG_KEY_TIMEOUT_MS, json_integer(TIMEOUT_MS));
	raw_json(fd, hello);
	m = raw_recv(fd);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "type")) ?: "?", "queued");
	assert_int_equal(json_integer_value(json_object_get(m, "place")), 1);
	assert_int_equal(json_integer_value(json_object_get(m, "of")), 1);
	json_decref(m);
	return fd;
}

/*
 * A waiting client that hangs up leaves its place at once (the server's
 * log says so, long before its --timeout), and the next comes first.
 */
static void test_a_waiting_client_that_hangs_up_frees_its_place(void **state)
{
	struct fx *fx = *state;
	struct seen s = {0};
	uint16_t port;
	int held, fd;
	uint64_t t0;

	serve_one(fx, &s);
	port = (uint16_t)atomic_load(&fx->srv.port);
	held = raw_push_ready(port, "d");
	fd = raw_waiter(port);
	t0 = rcp_now_ns();
	close(fd);
	assert_true(WAIT_FOR(atomic_load(&s.left)));
	assert_true(rcp_now_ns() - t0 < (uint64_t)TIMEOUT_MS * 1000000u / 2);
	fd = raw_waiter(port); /* place 1 of 1 again: the one that left holds none */
	close(fd);
	close(held);
	bench_ok(&fx->srv, NULL);
	serve_one_end(fx, &s);
}

/*
 * A client whose hello gives no --timeout does not wait: it is told the
 * server is busy at once, and may ask again (client.c's retry path).
 */
static void test_a_client_that_gives_no_timeout_is_told_busy(void **state)
{
	struct fx *fx = *state;
	struct seen s = {0};
	json_t *hello;
	uint16_t port;
	int held, fd;

	serve_one(fx, &s);
	port = (uint16_t)atomic_load(&fx->srv.port);
	held = raw_push_ready(port, "d");
	fd = raw_connect(port);
	hello = hello_bench(1, 64 * KiB);
	json_object_set_new(hello, "slots", json_integer(4));
	json_object_set_new(hello, ENG_KEY_SERVER, dialed_json(port));
	raw_json(fd, hello);
	assert_refused(fd, "the server is busy with 1 sessions; try again later");
	close(fd);
	close(held);
	serve_one_end(fx, &s);
	assert_int_equal(atomic_load(&s.waiting), 0);
}

/* A server that stops tells the clients waiting their turn why, and returns. */
static void test_a_server_that_stops_tells_waiting_clients(void **state)
{
	struct fx *fx = *state;
	struct seen s = {0};
	uint16_t port;
	int held, fd;

	serve_one(fx, &s);
	port = (uint16_t)atomic_load(&fx->srv.port);
	held = raw_push_ready(port, "d");
	fd = raw_waiter(port);
	serve_one_end(fx, &s);
	assert_refused(fd, "the server is shutting down; this session was waiting its turn, "
			   "place 1 of 1 in its queue");
	close(fd);
	close(held);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_waiting_sessions_are_admitted_in_arrival_order),
		T(test_a_waiting_client_that_hangs_up_frees_its_place),
		T(test_a_client_that_gives_no_timeout_is_told_busy),
		T(test_a_server_that_stops_tells_waiting_clients),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
