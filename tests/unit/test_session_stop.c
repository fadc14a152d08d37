/*
 * test_session_stop.c - a server's stop ends every session at once, also
 * one that waits for its peer: a client that sent nothing yet, or one that
 * stopped halfway through sending its file list, must not hold the stop
 * for its --timeout.
 */
#include "session_harness.h"

/* The server's --timeout here: a stop that waited for it would be plain. */
#define LONG_TIMEOUT_MS 60000
/* What a stop may take, however slow the host: far below LONG_TIMEOUT_MS and ENG_PREAUTH_MS. */
#define STOP_BOUND_NS 5000000000ull

/* A push whose file list never comes: the server waits in the middle of a read. */
static int push_halfway(uint16_t port)
{
	int fd = raw_push_ready(port, "d");

	/* Half a frame of the file list: the server is inside a read now. */
	assert_int_equal(send(fd, "\0\0", 2, MSG_NOSIGNAL), 2);
	return fd;
}

static void test_a_stop_ends_sessions_that_wait_for_their_peer(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char root[4096];
	struct eng_ctl c;
	uint64_t t0, took;
	int idle, half, err;
	json_t *m = NULL;

	fx_dir(fx, "root", root);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	fx->srv.timeout_ms = LONG_TIMEOUT_MS;
	server_start(&fx->srv, NULL, root, NULL);
	idle = raw_connect((uint16_t)atomic_load(&fx->srv.port)); /* says nothing at all */
	half = push_halfway((uint16_t)atomic_load(&fx->srv.port));
	t0 = rcp_now_ns();
	assert_int_equal(server_stop(&fx->srv), 0);
	took = rcp_now_ns() - t0;
	if (took > STOP_BOUND_NS)
		fail_msg("the stop took %.1f s: a session held it", (double)took / 1e9);
	/* The halfway client is told why. */
	c = ENG_CTL_PLAIN(half);
	err = eng__proto_recv(&c, TIMEOUT_MS, NULL, &m);
	assert_null(m);
	assert_int_equal(err, -ECONNABORTED);
	assert_non_null(strstr(rcp_err_msg(err), "shutting down"));
	close(idle);
	close(half);
	assert_true(dir_empty(root));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_stop_ends_sessions_that_wait_for_their_peer),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
