/*
 * test_session_update.c - copies with --update over the loopback transport
 * (session_harness.h): what the receiver holds already (a file of the same
 * size and mtime, a symlink to the same target) does not travel and is
 * left alone, both ways; a file changed since (new mtime, or new size) is
 * sent again whole; without -p the times differ, so everything travels.
 * The report's sent and skipped figures are what the tests hold to, so a
 * quick check that silently sent everything again would fail them.
 *
 * Threading: one session at a time.
 */
#include "session_harness.h"

#include <sys/stat.h>

#define BIG "top/sub/big.bin"
#define BIG_BYTES (300 * KiB + 1234)

static ino_t ino_of(const char *base, const char *rel)
{
	char p[4096];
	struct stat st;

	t_path(p, base, rel);
	assert_int_equal(lstat(p, &st), 0);
	return st.st_ino;
}

/* Set rel's mtime to sec (whole seconds, so it differs from any copy's). */
static void mtime_set(const char *base, const char *rel, time_t sec)
{
	const struct timespec ts[2] = {{sec, 0}, {sec, 0}};
	char p[4096];

	t_path(p, base, rel);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

struct up {
	char src[4096], root[4096], back[4096], top[4096];
	struct topo_plan plan;
};

/* The tree (with a symlink) at src/top, a server with root, the client's plan. */
static void up_start(struct fx *fx, struct up *u)
{
	static const unsigned rails[] = {1, 2};
	char p[4096];

	fx_dir(fx, "src", u->src);
	fx_dir(fx, "root", u->root);
	fx_dir(fx, "back", u->back);
	tree_make(u->src);
	t_path(p, u->src, "top/link");
	assert_int_equal(symlink("sub/big.bin", p), 0);
	t_path(u->top, u->src, "top");
	plan_make(&fx->srv.plan, rails, 2, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, u->root, NULL);
	plan_make(&u->plan, rails, 2, 2, 1, BUDGET);
}

static int up_copy(struct fx *fx, struct up *u, enum eng_copy_dir dir, bool preserve, bool update,
		   struct eng_report *r)
{
	const char *push_src[] = {u->top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
						  : copy_opts(ENG_PULL, pull_src, 1, u->back);

	cp.preserve = preserve;
	cp.update = update;
	memset(r, 0, sizeof(*r));
	return copy(&fx->srv, &u->plan, &cp, NULL, r);
}

/* Nothing travelled: every file and its bytes were skipped. */
static void all_skipped(const struct eng_report *r)
{
	assert_int_equal(r->files_total, TREE_FILES);
	assert_int_equal(r->files_skipped, TREE_FILES);
	assert_int_equal(r->bytes_skipped, TREE_BYTES);
	assert_int_equal(r->bytes, 0);
	assert_int_equal(r->chunks, 0);
	assert_int_equal(r->files, 0);
}

static void test_a_push_again_with_update_sends_nothing_and_leaves_all_alone(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct up u;
	ino_t big, link;

	up_start(fx, &u);
	assert_int_equal(up_copy(fx, &u, ENG_PUSH, true, true, &r), 0);
	assert_int_equal(r.files_skipped, 0); /* nothing there yet */
	assert_int_equal(r.bytes, TREE_BYTES);
	tree_same(u.src, u.root);
	big = ino_of(u.root, BIG);
	link = ino_of(u.root, "top/link");
	assert_int_equal(up_copy(fx, &u, ENG_PUSH, true, true, &r), 0);
	all_skipped(&r);
	/* Left alone: a file or link put in place again would be a new inode. */
	assert_int_equal(ino_of(u.root, BIG), big);
	assert_int_equal(ino_of(u.root, "top/link"), link);
	tree_same(u.src, u.root);
	assert_int_equal(t_count_tmp(u.root), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_update_sends_a_changed_file_again_whole(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct up u;
	ino_t small;

	up_start(fx, &u);
	assert_int_equal(up_copy(fx, &u, ENG_PUSH, true, false, &r), 0);
	small = ino_of(u.root, "top/a.txt");
	/* The same size with other bytes and a new mtime: sent again, whole. */
	pattern_write(u.src, BIG, BIG_BYTES, 99);
	mtime_set(u.src, BIG, 1500000000);
	assert_int_equal(up_copy(fx, &u, ENG_PUSH, true, true, &r), 0);
	assert_int_equal(r.files_skipped, TREE_FILES - 1);
	assert_int_equal(r.bytes_skipped, TREE_BYTES - BIG_BYTES);
	assert_int_equal(r.bytes, BIG_BYTES);
	assert_int_equal(r.files, 1);
	tree_same(u.src, u.root);
	assert_int_equal(ino_of(u.root, "top/a.txt"), small);
	/* A link to another target is replaced. */
	t_path(u.back, u.src, "top/link"); /* u.back as scratch: this test pulls nothing */
	assert_int_equal(unlink(u.back), 0);
	assert_int_equal(symlink("a.txt", u.back), 0);
	assert_int_equal(up_copy(fx, &u, ENG_PUSH, true, true, &r), 0);
	all_skipped(&r);
	tree_same(u.src, u.root);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_again_with_update_sends_only_what_changed(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct up u;

	up_start(fx, &u);
	assert_int_equal(up_copy(fx, &u, ENG_PUSH, true, false, &r), 0);
	assert_int_equal(up_copy(fx, &u, ENG_PULL, true, true, &r), 0);
	assert_int_equal(r.files_skipped, 0);
	tree_same(u.src, u.back);
	assert_int_equal(up_copy(fx, &u, ENG_PULL, true, true, &r), 0);
	all_skipped(&r);
	/* The server's copy grows: a new size is sent again. */
	pattern_write(u.root, "top/a.txt", 200, 7);
	assert_int_equal(up_copy(fx, &u, ENG_PULL, true, true, &r), 0);
	assert_int_equal(r.files_skipped, TREE_FILES - 1);
	assert_int_equal(r.bytes, 200);
	tree_same(u.root, u.back);
	assert_int_equal(t_count_tmp(u.back), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_update_without_preserve_sends_everything_again(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct up u;

	up_start(fx, &u);
	/* Every file of the source gets a time no copy without -p can give it. */
	mtime_set(u.src, "top/a.txt", 1400000000);
	mtime_set(u.src, "top/empty", 1400000000);
	mtime_set(u.src, BIG, 1400000000);
	mtime_set(u.src, "top/sub/deeper/c.txt", 1400000000);
	assert_int_equal(up_copy(fx, &u, ENG_PUSH, false, true, &r), 0);
	assert_int_equal(up_copy(fx, &u, ENG_PUSH, false, true, &r), 0);
	assert_int_equal(r.files_skipped, 0);
	assert_int_equal(r.bytes, TREE_BYTES);
	tree_same(u.src, u.root);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_push_again_with_update_sends_nothing_and_leaves_all_alone),
		T(test_update_sends_a_changed_file_again_whole),
		T(test_a_pull_again_with_update_sends_only_what_changed),
		T(test_update_without_preserve_sends_everything_again),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
