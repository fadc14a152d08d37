/*
 * test_session_dry.c - --dry-run and filters over the loopback transport
 * (session_harness.h), protocol 9: a dry run's list is what a copy would
 * do, entry by entry, with how the destination differs, and nothing is
 * made on either side (a push's server compares, a pull's client does); a
 * pull's filter travels to the server, whose walk applies it. --delete
 * (protocol 11): a push's server removes the extras of the directories
 * the copy covered once the copy is in, keeps what the client's filter
 * excludes and names what it removed to the client; a dry run names the
 * same and removes nothing; a pull's client does the same on its side;
 * the walking side says "alive" once per ENG_ALIVE_NS (eng__alive_tick).
 *
 * Threading: one session at a time.
 */
#include "session_harness.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>

struct dry {
	char src[4096], root[4096], back[4096], top[4096];
	struct topo_plan plan;
	/* what the dry run told */
	unsigned calls;
	size_t n;
	char path[16][64];
	uint8_t why[16];
	/* what --delete told: the names heard, each followed by ';' */
	bool delete_extra; /* the copies' --delete */
	char said[512];
	uint64_t deleted;
};

static void dry_list(const struct io_manifest *m, const uint8_t *why,
		     const struct eng_dry_chunks *c, void *ctx)
{
	struct dry *d = ctx;
	size_t i;

	assert_null(c); /* no -c here: test_session_checksum.c */
	d->calls++;
	d->n = m->n;
	for (i = 0; i < m->n && i < RCP_ARRAY_SIZE(d->path); i++) {
		snprintf(d->path[i], sizeof(d->path[i]), "%s", m->entry[i].path);
		d->why[i] = why[i];
	}
}

static void dry_start(struct fx *fx, struct dry *d)
{
	static const unsigned rails[] = {1, 2};

	memset(d, 0, sizeof(*d));
	fx_dir(fx, "src", d->src);
	fx_dir(fx, "root", d->root);
	fx_dir(fx, "back", d->back);
	tree_make(d->src);
	t_path(d->top, d->src, "top");
	plan_make(&fx->srv.plan, rails, 2, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, d->root, NULL);
	plan_make(&d->plan, rails, 2, 2, 1, BUDGET);
}

static void said(const char *path, void *ctx)
{
	struct dry *d = ctx;
	size_t n = strlen(d->said);

	snprintf(d->said + n, sizeof(d->said) - n, "%s;", path);
}

static int dry_copy(struct fx *fx, struct dry *d, enum eng_copy_dir dir, const char *dst,
		    bool dry_run, bool update, const struct io_filter *f)
{
	const char *push_src[] = {d->top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, dst)
						  : copy_opts(ENG_PULL, pull_src, 1, dst);
	struct eng_report r;
	int err;

	cp.preserve = true;
	cp.update = update;
	cp.dry_run = dry_run;
	cp.dry_list = dry_list;
	cp.delete_extra = d->delete_extra;
	cp.deleted = said;
	cp.deleted_ctx = d;
	d->said[0] = '\0';
	cp.dry_ctx = d;
	cp.filter = f;
	err = copy(&fx->srv, &d->plan, &cp, NULL, &r);
	d->deleted = err ? 0 : r.deleted;
	return err;
}

static void test_a_push_dry_run_lists_everything_new_and_writes_nothing(void **state)
{
	struct fx *fx = *state;
	struct dry d;

	dry_start(fx, &d);
	assert_int_equal(dry_copy(fx, &d, ENG_PUSH, "", true, false, NULL), 0);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.n, 8);
	assert_string_equal(d.path[0], "top");
	assert_string_equal(d.path[4], "top/sub/big.bin");
	for (size_t i = 0; i < d.n; i++)
		assert_int_equal(d.why[i], IO_DIFF_NEW);
	assert_true(dir_empty(d.root));
	/* Into a new name: the names the copy would give in it (rsync's rule:
	 * fresh/top, the top never renamed to fresh), nothing made. */
	assert_int_equal(dry_copy(fx, &d, ENG_PUSH, "fresh", true, false, NULL), 0);
	assert_string_equal(d.path[0], "top");
	assert_string_equal(d.path[4], "top/sub/big.bin");
	assert_true(dir_empty(d.root));
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_push_dry_run_with_update_says_what_differs(void **state)
{
	struct fx *fx = *state;
	char p[4096];
	struct stat before, after;
	struct dry d;

	dry_start(fx, &d);
	assert_int_equal(dry_copy(fx, &d, ENG_PUSH, "", false, false, NULL), 0);
	assert_int_equal(d.calls, 0);		   /* a real copy lists nothing */
	pattern_write(d.src, "top/a.txt", 101, 9); /* another size */
	t_path(p, d.root, "top/sub/deeper/c.txt");
	assert_int_equal(utimensat(AT_FDCWD, p, (struct timespec[]){{1, 0}, {1, 0}}, 0), 0);
	t_path(p, d.root, "top/void");
	assert_int_equal(rmdir(p), 0);
	t_path(p, d.root, "top/sub/big.bin");
	assert_int_equal(stat(p, &before), 0);
	assert_int_equal(dry_copy(fx, &d, ENG_PUSH, "", true, true, NULL), 0);
	assert_int_equal(d.n, 8);
	assert_int_equal(d.why[0], IO_DIFF_SAME);  /* top */
	assert_int_equal(d.why[1], IO_DIFF_SIZE);  /* a.txt */
	assert_int_equal(d.why[2], IO_DIFF_SAME);  /* empty */
	assert_int_equal(d.why[4], IO_DIFF_SAME);  /* big.bin */
	assert_int_equal(d.why[6], IO_DIFF_MTIME); /* c.txt */
	assert_int_equal(d.why[7], IO_DIFF_NEW);   /* void */
	assert_int_equal(stat(p, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	t_path(p, d.root, "top/void");
	assert_false(t_exists(d.root, "top/void")); /* not made */
	assert_int_equal(t_count_tmp(d.root), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_dry_run_makes_no_destination(void **state)
{
	struct fx *fx = *state;
	char dst[4096];
	struct dry d;

	dry_start(fx, &d);
	assert_int_equal(dry_copy(fx, &d, ENG_PUSH, "", false, false, NULL), 0);
	t_path(dst, d.back, "new");
	assert_int_equal(dry_copy(fx, &d, ENG_PULL, dst, true, false, NULL), 0);
	assert_int_equal(d.calls, 1);
	assert_int_equal(d.n, 8);
	assert_string_equal(d.path[0], "top"); /* new/top, as the pull would make */
	assert_int_equal(d.why[0], IO_DIFF_NEW);
	assert_true(dir_empty(d.back));
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_s_filter_is_applied_by_the_server(void **state)
{
	struct fx *fx = *state;
	struct io_filter *f;
	struct dry d;

	dry_start(fx, &d);
	assert_int_equal(dry_copy(fx, &d, ENG_PUSH, "", false, false, NULL), 0);
	assert_int_equal(io_filter_create(&f), 0);
	assert_int_equal(io_filter_rule(f, false, "*.bin"), 0);
	assert_int_equal(io_filter_rule(f, false, "/void/"), 0);
	assert_int_equal(io_filter_finish(f), 0);
	assert_int_equal(dry_copy(fx, &d, ENG_PULL, d.back, false, false, f), 0);
	assert_true(t_exists(d.back, "top/a.txt"));
	assert_true(t_exists(d.back, "top/sub/deeper/c.txt"));
	assert_false(t_exists(d.back, "top/sub/big.bin"));
	assert_false(t_exists(d.back, "top/void"));
	io_filter_destroy(f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* Beneath base/top: an extra file, an extra directory tree, an excluded file. */
static void extras(const char *base)
{
	char p[4096];

	t_path(p, base, "top/old");
	assert_int_equal(mkdir(p, 0755), 0);
	t_write(base, "top/old/x", "x", 1, 0644);
	t_write(base, "top/sub/stale", "s", 1, 0644);
	t_write(base, "top/keep.log", "k", 1, 0644);
	t_write(base, "beside", "b", 1, 0644);
}

static struct io_filter *logs_out(void)
{
	struct io_filter *f = NULL;

	assert_int_equal(io_filter_create(&f), 0);
	assert_int_equal(io_filter_rule(f, false, "*.log"), 0);
	assert_int_equal(io_filter_finish(f), 0);
	return f;
}

/*
 * The extras put beneath base (the destination as dst names it) go with
 * --delete, once the copy is in, and are named; a dry run first names the
 * same and removes nothing; the excluded file and the neighbour stay.
 */
static void extras_go(struct fx *fx, struct dry *d, enum eng_copy_dir dir, const char *dst,
		      const char *base)
{
	struct io_filter *f = logs_out();

	d->delete_extra = true;
	extras(base);
	assert_int_equal(dry_copy(fx, d, dir, dst, true, false, f), 0);
	assert_string_equal(d->said, "top/old/x;top/old/;top/sub/stale;");
	assert_int_equal(d->deleted, 3);
	assert_true(t_exists(base, "top/old/x") && t_exists(base, "top/sub/stale"));
	assert_int_equal(dry_copy(fx, d, dir, dst, false, false, f), 0);
	assert_string_equal(d->said, "top/old/x;top/old/;top/sub/stale;");
	assert_int_equal(d->deleted, 3);
	assert_false(t_exists(base, "top/old") || t_exists(base, "top/sub/stale"));
	assert_true(t_exists(base, "top/keep.log") && t_exists(base, "beside"));
	assert_true(t_exists(base, "top/sub/big.bin"));
	io_filter_destroy(f);
}

static void test_a_push_removes_the_extras_and_keeps_the_excluded(void **state)
{
	struct fx *fx = *state;
	struct dry d;

	dry_start(fx, &d);
	assert_int_equal(dry_copy(fx, &d, ENG_PUSH, "", false, false, NULL), 0);
	extras_go(fx, &d, ENG_PUSH, "", d.root);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_removes_the_extras_here(void **state)
{
	struct fx *fx = *state;
	struct dry d;

	dry_start(fx, &d);
	assert_int_equal(dry_copy(fx, &d, ENG_PUSH, "", false, false, NULL), 0);
	assert_int_equal(dry_copy(fx, &d, ENG_PULL, d.back, false, false, NULL), 0);
	extras_go(fx, &d, ENG_PULL, d.back, d.back);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The walking side: ALIVES "alive" frames 100 ms apart, then "deleted". */
#define ALIVES 6

static void *walker_main(void *arg)
{
	struct eng_ctl *c = arg;
	json_t *m = eng__proto_msg(ENG_MSG_DELETED, false);
	int i;

	for (i = 0; i < ALIVES; i++) {
		usleep(100 * 1000);
		if (eng__proto_send_type(c, ENG_MSG_ALIVE))
			break;
	}
	json_object_set_new(m, ENG_KEY_COUNT, json_integer(0));
	(void)eng__proto_send(c, m);
	json_decref(m);
	return NULL;
}

/*
 * A --delete walk longer than the peer's wait: each "alive" frame starts
 * the wait afresh (300 ms here, the walk 600 ms), and the frame waited for
 * is then taken. Without them, or if they did not restart it, the wait
 * would end at 300 ms.
 */
static void test_alive_frames_keep_a_wait_for_a_long_walk(void **state)
{
	int sv[2];
	struct eng_ctl waiter, walker;
	pthread_t t;
	json_t *m = NULL;
	uint64_t t0;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	waiter = ENG_CTL_PLAIN(sv[0]);
	walker = ENG_CTL_PLAIN(sv[1]);
	assert_int_equal(pthread_create(&t, NULL, walker_main, &walker), 0);
	t0 = rcp_now_ns();
	assert_int_equal(eng__proto_recv(&waiter, 300, ENG_MSG_DELETED, &m), 0);
	assert_true(rcp_now_ns() - t0 >= 500 * 1000000ull); /* the walk's time, past one wait */
	json_decref(m);
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
}

/* Whether a frame waits on fd, read at once (a socketpair's send is there when it returns). */
static bool frame_waits(int fd)
{
	char b;

	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

/*
 * eng__alive_tick after each entry of a long list: no frame before
 * ENG_ALIVE_NS have passed since eng__alive_init or the last frame, and at
 * the first entry past it an "alive" frame (the clock read per entry, not
 * every so many entries: one entry that took long, or the sort before the
 * first, is followed by a frame at once). The "none yet" checks hold only
 * if this thread was not held past the cadence between init and tick.
 */
static void test_alive_ticks_say_alive_once_per_cadence(void **state)
{
	struct eng_ctl waiter, walker;
	struct eng_alive a;
	json_t *m = NULL;
	uint64_t t0;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	waiter = ENG_CTL_PLAIN(sv[0]);
	walker = ENG_CTL_PLAIN(sv[1]);
	t0 = rcp_now_ns();
	eng__alive_init(&a, &walker);
	eng__alive_tick(&a);
	if (rcp_now_ns() - t0 < ENG_ALIVE_NS)
		assert_false(frame_waits(sv[0]));
	while (rcp_now_ns() - t0 <= ENG_ALIVE_NS) /* the cadence's time is the condition */
		usleep(10 * 1000);
	t0 = rcp_now_ns();
	eng__alive_tick(&a); /* one entry past the cadence */
	assert_int_equal(eng__proto_recv(&waiter, 1000, NULL, &m), 0);
	assert_string_equal(json_string_value(json_object_get(m, ENG_KEY_TYPE)), ENG_MSG_ALIVE);
	json_decref(m);
	eng__alive_tick(&a);
	if (rcp_now_ns() - t0 < ENG_ALIVE_NS)
		assert_false(frame_waits(sv[0]));
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_push_dry_run_lists_everything_new_and_writes_nothing),
		T(test_a_push_dry_run_with_update_says_what_differs),
		T(test_a_pull_dry_run_makes_no_destination),
		T(test_a_pull_s_filter_is_applied_by_the_server),
		T(test_a_push_removes_the_extras_and_keeps_the_excluded),
		T(test_a_pull_removes_the_extras_here),
		cmocka_unit_test(test_alive_frames_keep_a_wait_for_a_long_walk),
		cmocka_unit_test(test_alive_ticks_say_alive_once_per_cadence),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
