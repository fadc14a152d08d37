/*
 * test_session_held.c - a side that stops on its own while its file I/O is
 * held (a hung disk) tells its peer why at once, not after its wait.
 *
 * Design: a push over the gated loopback (session_gate.h, gate_arm_held):
 * the client's helper thread is held inside a read until the test lets it
 * go, and the client is cancelled while it is held. The client's job stops
 * but waits for that read (eng__job_run: the kernel could still be writing
 * into its slot); its session sends its error frame meanwhile, so the
 * server's session ends, its temporary removed, before the read returns.
 * Before that was so, the error went only after the wait, and the server
 * waited for it, or for its own stall limit.
 *
 * Threading: the server and its sessions, a canceller and a watcher thread
 * beside the client on the test's thread.
 */
#include "session_harness.h"
#include "session_gate.h"

#define HBIG (2 * MiB + 100)

/* Once the cancel is set: whether the server's session ended (no temporary), then the release. */
struct watcher {
	_Atomic bool *cancel, *release;
	const char *root;
	pthread_t thread;
	bool cancelled, server_ended;
};

static void *watcher_main(void *arg)
{
	struct watcher *w = arg;

	w->cancelled = WAIT_FOR(atomic_load(w->cancel));
	w->server_ended = w->cancelled && WAIT_FOR(t_count_tmp(w->root) == 0);
	atomic_store(w->release, true);
	return NULL;
}

static void test_a_client_held_by_its_disk_tells_the_server_before_its_wait(void **state)
{
	struct fx *fx = *state;
	_Atomic bool cancel = false, release = false;
	struct push1 p = {.bytes = HBIG,
			  .seed = 7,
			  .helpers = 1, /* the gate holds the helper; the worker goes on */
			  .tr = gate_arm_held(ENG_WRITE_BATCH, &release),
			  .cancel = &cancel};
	struct canceller c = {.flag = &cancel, .dir = p.root};
	struct watcher w = {.cancel = &cancel, .release = &release, .root = p.root};
	int err;

	/* Both read the root only once the gate holds, after push_one has named it. */
	assert_int_equal(pthread_create(&c.thread, NULL, canceller_main, &c), 0);
	assert_int_equal(pthread_create(&w.thread, NULL, watcher_main, &w), 0);
	err = push_one(fx, &p);
	pthread_join(c.thread, NULL);
	pthread_join(w.thread, NULL);
	assert_true(c.held && c.saw_tmp);
	assert_int_equal(err, -EINTR);
	assert_false(atomic_load(&gate.gave_up));
	if (!w.server_ended)
		fail_msg("the server's session still ran while the client waited for its read");
	assert_false(t_exists(p.root, "big"));
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_client_held_by_its_disk_tells_the_server_before_its_wait),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
