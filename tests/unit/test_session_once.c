/*
 * test_session_once.c - a server serving once (railcp serve --ssh, here
 * over the loopback transport): it serves the first client that proves its
 * key and returns by itself when that session ends, with the session's
 * status; a client with another key does not end it, nor does a second
 * client turned away as busy; and it gives up, with a sentence, when no
 * client proves the key in time.
 */
#include "session_harness.h"
#include "session_gate.h"

static const unsigned one_rail[] = {1};

/* Serve once beneath root with key, the server's --timeout timeout_ms. */
static void once_start(struct fx *fx, const char *root, const char *key, int timeout_ms)
{
	plan_make(&fx->srv.plan, one_rail, 1, 1, 1, BUDGET);
	fx->srv.timeout_ms = timeout_ms;
	fx->srv.once = true;
	fx->srv.key = key;
	server_start(&fx->srv, NULL, root, NULL);
}

/* Push fx's src/top to dst beneath the server's root, proving key. */
static int push_top(const struct fx *fx, const char *key, const char *dst)
{
	char top[4096];
	const char *srcs[] = {top};
	struct eng_copy_opts cp = copy_opts(ENG_PUSH, srcs, 1, dst);
	struct topo_plan plan;
	struct eng_report r;

	t_path(top, fx->base, "src/top");
	cp.key = key;
	plan_make(&plan, one_rail, 1, 1, 1, BUDGET);
	return copy(&fx->srv, &plan, &cp, NULL, &r);
}

static void src_make(struct fx *fx, char root[4096])
{
	char src[4096];

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	tree_make(src);
}

static void test_a_server_serving_once_returns_when_its_copy_ends(void **state)
{
	struct fx *fx = *state;
	char root[4096], src[4096];

	src_make(fx, root);
	once_start(fx, root, TEST_KEY, TIMEOUT_MS);
	assert_int_equal(push_top(fx, TEST_KEY, ""), 0);
	/* It stops by itself, with the session's status, and listens no more. */
	assert_true(WAIT_FOR(atomic_load(&fx->srv.ended)));
	assert_int_equal(server_stop(&fx->srv), 0);
	t_path(src, fx->base, "src");
	tree_same(src, root);
	assert_int_equal(push_top(fx, TEST_KEY, "again"), -ECONNREFUSED);
}

static void test_a_wrong_key_does_not_end_a_server_serving_once(void **state)
{
	struct fx *fx = *state;
	char root[4096];
	int err;

	src_make(fx, root);
	once_start(fx, root, TEST_KEY, TIMEOUT_MS);
	err = push_top(fx, TEST_KEY_OTHER, "");
	assert_int_not_equal(err, 0);
	assert_non_null(strstr(rcp_err_msg(err), "does not know the shared key"));
	assert_false(atomic_load(&fx->srv.ended));
	/*
	 * No sleep for the server to look whether its session ended (every
	 * ENG_ONCE_POLL_MS): the loopback never sees a key refused on the
	 * control connection, so no count of it could prove the looks, and a
	 * slow host could skip them. What shows the wrong key's session was not
	 * the one: the server still takes the right key's push, and returns
	 * that session's status, 0, not the refusal, which the first session
	 * it counted would have left as its status whenever it looked.
	 */
	assert_int_equal(push_top(fx, TEST_KEY, ""), 0);
	assert_true(WAIT_FOR(atomic_load(&fx->srv.ended)));
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_failed_session_is_what_a_server_serving_once_returns(void **state)
{
	struct fx *fx = *state;
	char root[4096];
	int err;

	src_make(fx, root);
	once_start(fx, root, TEST_KEY, TIMEOUT_MS);
	/* A destination beneath a file that is not a directory fails the session. */
	t_write(root, "plain", "x", 1, 0644);
	err = push_top(fx, TEST_KEY, "plain/under");
	assert_int_not_equal(err, 0);
	assert_true(WAIT_FOR(atomic_load(&fx->srv.ended)));
	assert_true(server_stop(&fx->srv) < 0);
}

struct held_push {
	struct fx *fx;
	_Atomic bool release;
	pthread_t thread;
	int err;
};

/* The first push, through the gated transport: held after 4 chunks until release is set. */
static void *held_push_main(void *arg)
{
	struct held_push *h = arg;
	char top[4096];
	const char *srcs[] = {top};
	struct eng_copy_opts cp = copy_opts(ENG_PUSH, srcs, 1, "");
	struct topo_plan plan;
	struct eng_report r;

	t_path(top, h->fx->base, "src/top");
	cp.key = TEST_KEY;
	plan_make(&plan, one_rail, 1, 1, 1, BUDGET);
	plan.helpers = 1; /* the gate holds a helper, not the worker */
	h->err = copy(&h->fx->srv, &plan, &cp, gate_arm_until(4, &h->release), &r);
	return NULL;
}

/* A second push, asking for 1 s. */
static int busy_push(const struct fx *fx)
{
	char top[4096];
	const char *srcs[] = {top};
	struct eng_copy_opts cp = copy_opts(ENG_PUSH, srcs, 1, "second");
	struct eng_client_opts o;
	struct topo_plan plan;
	struct eng_report r;

	t_path(top, fx->base, "src/top");
	cp.key = TEST_KEY;
	plan_make(&plan, one_rail, 1, 1, 1, BUDGET);
	o = client_opts(&fx->srv, &plan, cp.chunk, NULL);
	o.copy = &cp;
	o.timeout_ms = 1000;
	return eng__client_run(&o, &r);
}

/*
 * While the one session runs, a second client with the key waits its turn
 * until 9/10 of its --timeout and is refused: it is no session served, so
 * the server goes on, and returns the first session's status when it ends.
 * (It once counted, ended the server and cut the first session off.)
 */
static void test_a_busy_client_does_not_end_a_server_serving_once(void **state)
{
	struct fx *fx = *state;
	struct held_push h = {.fx = fx};
	char root[4096];
	bool ended;
	int err;

	src_make(fx, root);
	fx->srv.max_sessions = 1; /* as railcp serve --ssh has it */
	once_start(fx, root, TEST_KEY, TIMEOUT_MS);
	assert_int_equal(pthread_create(&h.thread, NULL, held_push_main, &h), 0);
	assert_true(WAIT_FOR(atomic_load(&gate.hit)));
	err = busy_push(fx);
	ended = atomic_load(&fx->srv.ended);
	atomic_store(&h.release, true);
	pthread_join(h.thread, NULL); /* before any assert: h is on this stack */
	assert_int_equal(err, -ECONNABORTED);
	assert_non_null(strstr(rcp_err_msg(err), "no turn came within 0.9 s"));
	assert_false(ended);
	if (h.err)
		fail_msg("the first push: %s", rcp_err_msg(h.err));
	assert_true(WAIT_FOR(atomic_load(&fx->srv.ended)));
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_server_serving_once_gives_up_when_no_client_comes(void **state)
{
	struct fx *fx = *state;
	char root[4096];
	uint64_t t0 = rcp_now_ns();
	int err;

	src_make(fx, root);
	once_start(fx, root, TEST_KEY, 1000);
	assert_true(WAIT_FOR(atomic_load(&fx->srv.ended)));
	assert_true(rcp_now_ns() - t0 >= 900000000ull);
	err = server_stop(&fx->srv);
	assert_int_equal(err, -ETIMEDOUT);
	assert_string_equal(fx->srv.msg, "no client proved the key within 1 s");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_server_serving_once_returns_when_its_copy_ends),
		T(test_a_wrong_key_does_not_end_a_server_serving_once),
		T(test_a_failed_session_is_what_a_server_serving_once_returns),
		T(test_a_busy_client_does_not_end_a_server_serving_once),
		T(test_a_server_serving_once_gives_up_when_no_client_comes),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
