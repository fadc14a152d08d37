/*
 * test_io_partial_busy.c - a partial file whose lock another copy still
 * holds (io/partial.c, lock_wait): the same push run again straight after
 * a cut one can come before the session that held the file has ended. A
 * lock let go within the wait: what the cut copy received is kept. A lock
 * held throughout: nothing of it is kept, every byte travels, the file
 * lands whole, and the other copy's partial file is left to it. Whole copies over the loopback
 * transport (partial_harness.h).
 *
 * A -c -n dry run after a cut -c copy, and a --partial -n one after a cut
 * --partial copy, read its data file back without the
 * lock (a copy that starts meanwhile takes it at once: pread is wrapped,
 * -Wl,--wrap in tests/SConscript, to try it there), and one that gave up
 * waiting spares no copy its wait.
 *
 * Threading: one gated copy at a time, a canceller thread, and a thread
 * that lets the lock go; the wrapper's state is plain globals, set while
 * no copy runs.
 */
#include "partial_harness.h"

#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>

ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);

/* The data file watched (st_ino 0: none), and what each read of it found of its lock. */
static const char *watch_path;
static ino_t watch_ino;
static _Atomic unsigned reads_watched, reads_locked;

/*
 * Each read of the watched file first tries the lock a copy would take, as
 * another copy; one at a time, since the digests' pass reads on several
 * threads and two tries at once would find each other's lock.
 */
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
	static pthread_mutex_t one = PTHREAD_MUTEX_INITIALIZER;
	struct stat st;
	int other;

	if (watch_ino && fstat(fd, &st) == 0 && st.st_ino == watch_ino &&
	    (other = open(watch_path, O_RDONLY | O_CLOEXEC)) >= 0) {
		pthread_mutex_lock(&one);
		reads_watched++;
		if (flock(other, LOCK_EX | LOCK_NB) < 0)
			reads_locked++;
		close(other); /* and the lock, if it got it */
		pthread_mutex_unlock(&one);
	}
	return __real_pread(fd, buf, n, off);
}

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

/* A cut -c push of the big file to a name with no old file: its server's session ended. */
static void cut_c_push(struct fx *fx, struct pt *p)
{
	struct eng_report r;

	pt_start(fx, p, NULL);
	p->checksum = true;
	pt_copy(fx, p, ENG_PUSH, gate_arm(75), true, &r);
	server_again(fx, p);
	assert_int_equal(count_prefix(p->root, ".railcp-tmp-p"), 1);
}

/*
 * A dry run reads back each chunk a cut copy claims (minutes, for a big
 * file): a copy that starts meanwhile takes the data file's lock at once,
 * where it would wait 2 s for the dry run's and then send the file whole.
 * p: a cut copy's, -c or --partial as p->checksum says.
 */
static void dry_reads_unlocked(struct fx *fx, struct pt *p)
{
	struct eng_dry_chunks c;
	char data[4096];
	struct stat st;

	path_of_prefix(p->root, ".railcp-tmp-p", data);
	assert_int_equal(stat(data, &st), 0);
	watch_path = data;
	reads_watched = reads_locked = 0;
	watch_ino = st.st_ino;
	c = pt_dry(fx, p, ENG_PUSH);
	watch_ino = 0;
	assert_true(c.differ > 0 && c.differ < c.chunks); /* what the cut copy received, kept */
	assert_true(reads_watched >= c.chunks - c.differ);
	assert_int_equal(reads_locked, 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_dry_runs_read_back_keeps_no_copy_from_the_lock(void **state)
{
	struct pt p;

	cut_c_push(*state, &p);
	dry_reads_unlocked(*state, &p);
}

/* The same for --partial -n after a cut --partial push. */
static void test_a_partial_dry_runs_read_back_keeps_no_copy_from_the_lock(void **state)
{
	struct pt p;

	pt_start(*state, &p, NULL);
	cut_push(*state, &p);
	dry_reads_unlocked(*state, &p);
}

/*
 * A dry run that waited for a held lock and gave up does not make the -c
 * copy that follows give up at once (the quiet time after a wait that ran
 * out is a copy's own): it waits, the lock goes, and what the cut copy
 * received is kept.
 */
static void test_a_dry_run_that_gave_up_spares_no_copy_its_wait(void **state)
{
	struct fx *fx = *state;
	struct eng_dry_chunks c;
	struct eng_report r;
	struct holder h;
	pthread_t t;
	struct pt p;

	cut_c_push(fx, &p);
	h = (struct holder){hold_partial(&p), 300};
	c = pt_dry(fx, &p, ENG_PUSH);
	assert_int_equal(c.differ, c.chunks); /* the held file's claims: not taken */
	assert_int_equal(pthread_create(&t, NULL, let_go, &h), 0);
	resumed_push(fx, &p, &r);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(r.bytes_kept > 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	/* In this order: a copy's wait that runs out spares the waits of the next 10 s. */
	const struct CMUnitTest tests[] = {
		T(test_a_lock_let_go_within_the_wait_keeps_what_arrived),
		T(test_a_dry_runs_read_back_keeps_no_copy_from_the_lock),
		T(test_a_partial_dry_runs_read_back_keeps_no_copy_from_the_lock),
		T(test_a_dry_run_that_gave_up_spares_no_copy_its_wait),
		T(test_a_lock_held_throughout_sends_the_file_whole),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
