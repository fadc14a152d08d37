/*
 * test_io_partial_busy.c - a partial file whose lock another copy still
 * holds (io/partial.c, lock_wait): the same push run again straight after
 * a cut one can come before the session that held the file has ended. A
 * lock let go within the wait: what the cut copy received is kept. A lock
 * held throughout: nothing of it is kept, every byte travels, the file
 * lands whole, and the other copy's partial file is left to it. Whole copies over the loopback
 * transport (partial_harness.h).
 *
 * Threading: one gated copy at a time, a canceller thread, and a thread
 * that lets the lock go.
 */
#include "partial_harness.h"

#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

struct holder {
	int fd;
	unsigned ms; /* let go after this long */
};

static void *let_go(void *arg)
{
	struct holder *h = arg;

	usleep(h->ms * 1000);
	close(h->fd);
	return NULL;
}

/* The cut copy's data file in p's root, locked here as the copy that wrote it would hold it. */
static int hold_partial(const struct pt *p)
{
	char data[4096];
	int fd;

	path_of_prefix(p->root, ".railcp-tmp-p", data);
	fd = open(data, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	return fd;
}

static void test_a_lock_let_go_within_the_wait_keeps_what_arrived(void **state)
{
	struct fx *fx = *state;
	struct holder h;
	struct eng_report r;
	pthread_t t;
	struct pt p;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	h = (struct holder){hold_partial(&p), 300};
	assert_int_equal(pthread_create(&t, NULL, let_go, &h), 0);
	resumed_push(fx, &p, &r);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(r.bytes_kept > 0);
	assert_int_equal(r.bytes + r.bytes_kept, PBIG);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_lock_held_throughout_sends_the_file_whole(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char got[4096];
	struct pt p;
	int fd;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	fd = hold_partial(&p);
	assert_int_equal(pt_copy(fx, &p, ENG_PUSH, NULL, false, &r), 0);
	assert_int_equal(r.bytes_kept, 0);
	assert_int_equal(r.bytes, PBIG);
	t_path(got, p.root, "big");
	file_same(p.big, got, PBIG);
	/* the other copy's data file, record and log are its own: left as they are */
	assert_int_equal(count_prefix(p.root, ".railcp-tmp-p"), 1);
	assert_int_equal(t_count_tmp(p.root), 3);
	close(fd);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	/* In this order: a wait that runs out spares the waits of the next 10 s. */
	const struct CMUnitTest tests[] = {
		T(test_a_lock_let_go_within_the_wait_keeps_what_arrived),
		T(test_a_lock_held_throughout_sends_the_file_whole),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
