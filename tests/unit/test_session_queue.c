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
 * raw connections that read the server's "queued" frames themselves. The
 * server's session_queue events are kept as serve --json prints them
 * (cli_queue_json): a line as each session joins the queue, and one as it
 * leaves it, admitted or refused.
 *
 * Threading: the server, the waiting clients' threads, the log tap's.
 */
#include "session_harness.h"

#include "cli/report.h"

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

/* The server's queue events, as serve --json's lines, in the order they came. */
#define EVENTS 16
static struct {
	pthread_mutex_t lock;
	unsigned n;
	json_t *ev[EVENTS];
} events = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void on_queue(const struct eng_queue_event *ev, void *ctx)
{
	json_t *o = cli_queue_json(ev);

	(void)ctx;
	assert_non_null(o);
	pthread_mutex_lock(&events.lock);
	if (events.n < EVENTS)
		events.ev[events.n++] = o;
	else
		json_decref(o);
	pthread_mutex_unlock(&events.lock);
}

static void events_clear(void)
{
	pthread_mutex_lock(&events.lock);
	while (events.n > 0)
		json_decref(events.ev[--events.n]);
	pthread_mutex_unlock(&events.lock);
}

/* The k-th event of kind ("queued", "admitted", "refused"); fails when there is none. */
static json_t *event_nth(const char *kind, unsigned k)
{
	unsigned i, seen = 0;

	for (i = 0; i < events.n; i++)
		if (!strcmp(json_string_value(json_object_get(events.ev[i], "event")), kind) &&
		    seen++ == k)
			return events.ev[i];
	fail_msg("no %s event %u among %u", kind, k, events.n);
	return NULL;
}

static json_int_t ev_int(const json_t *ev, const char *key)
{
	assert_true(json_is_integer(json_object_get(ev, key)));
	return json_integer_value(json_object_get(ev, key));
}

static const char *ev_str(const json_t *ev, const char *key)
{
	const char *v = json_string_value(json_object_get(ev, key));

	if (!v)
		fail_msg("%s is not a string in a %s event", key,
			 json_string_value(json_object_get(ev, "event")));
	return v;
}

/*
 * Session id of peer 127.0.0.1 joined the queue at place of the queue's
 * length place, because the server runs its one session, and left it as
 * kind ("admitted" or "refused", with error in its sentence) after waiting.
 */
static void expect_queued_then(unsigned nth, const char *kind, unsigned nth_left, const char *error)
{
	json_t *q = event_nth("queued", nth), *l;
	json_int_t id = ev_int(q, "session");

	assert_string_equal(ev_str(q, "peer"), "127.0.0.1");
	assert_int_equal(ev_int(q, "place"), nth + 1);
	assert_int_equal(ev_int(q, "of"), nth + 1);
	assert_string_equal(ev_str(q, "reason"), "the server is busy with 1 sessions");
	assert_int_equal(strlen(ev_str(q, "time")), strlen("2026-11-26T12:58:48.123Z"));
	l = event_nth(kind, nth_left);
	assert_int_equal(ev_int(l, "session"), id);
	assert_string_equal(ev_str(l, "peer"), "127.0.0.1");
	assert_true(ev_int(l, "waited_ms") >= 0);
	if (error)
		assert_non_null(strstr(ev_str(l, "error"), error));
	else
		assert_true(json_is_null(json_object_get(l, "error")));
	assert_null(json_object_get(l, "reason"));
}

/* A server of one session beneath a fresh root, the log tapped into s (at INFO). */
static void serve_one(struct fx *fx, struct seen *s)
{
	static const unsigned one[] = {1};
	char root[4096];

	fx_dir(fx, "root", root);
	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	fx->srv.max_sessions = 1;
	fx->srv.session_queue = on_queue;
	events_clear();
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
	fx->srv.session_queue = NULL;
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
	/* Each joined at the end of the queue and left it admitted, first in line, in turn. */
	assert_int_equal(events.n, 2 * WAITERS);
	for (i = 0; i < WAITERS; i++) {
		expect_queued_then(i, "admitted", i, NULL);
		assert_int_equal(ev_int(event_nth("admitted", i), "place"), 1);
		assert_int_equal(ev_int(event_nth("admitted", i), "session"), s.order[i]);
	}
	events_clear();
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
	expect_queued_then(0, "refused", 0,
			   "the client left while waiting its turn (place 1 of 1)");
	assert_int_equal(ev_int(event_nth("queued", 1), "place"), 1);
	events_clear();
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
	assert_int_equal(events.n, 0); /* told busy at once: it never joined the queue */
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
	expect_queued_then(0, "refused", 0, "the server is shutting down");
	assert_int_equal(events.n, 2);
	events_clear();
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
