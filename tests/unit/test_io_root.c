/*
 * test_io_root.c - the receiver's confinement beneath its root: hostile
 * names and symlinks leading out (also swapped in after a check) are
 * refused, by the lexical check and by openat2 alone; a symlink at a final
 * name is replaced, never followed; what the root already holds; a
 * destination opened beneath the root; a directory the receiver keeps open
 * for the copy, moved out of the root meanwhile, takes no more files. The
 * directory metadata is in
 * test_io_root_dirs.c, the writing of files in test_io_root_write.c. Each
 * test runs on one thread, in a scratch directory of its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_io_root.h"

#include <sys/wait.h>

/* Nothing at all outside the root, no temporary anywhere. */
static void assert_nothing_escaped(const struct fixture *fx)
{
	DIR *d = opendir(fx->outside);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		     strcmp(de->d_name, "target");
	closedir(d);
	assert_int_equal(n, 0);
	assert_false(t_exists(fx->base, "x"));
	assert_int_equal(t_count_tmp(fx->base), 0);
}

static void expect_refused(struct io_root *r, const char *name, int err, const char *words)
{
	struct io_wfile *w = NULL;
	struct fe f;

	fe_other(&f, IO_DIR, name, NULL);
	assert_int_equal(io_root_mkdir(r, &f.e), err);
	assert_non_null(strstr(rcp_err_msg(err), words));
	fe_other(&f, IO_SYMLINK, name, "t");
	assert_int_equal(io_root_symlink(r, &f.e), err);
	assert_non_null(strstr(rcp_err_msg(err), words));
	fe_file(&f, name, 0, 0, NULL);
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), err);
	assert_non_null(strstr(rcp_err_msg(err), words));
	assert_null(w);
}

static void test_hostile_names_are_refused_before_anything_is_created(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char abs[4096];
	struct fe a;

	fe_other(&a, IO_DIR, "a", NULL);
	assert_int_equal(io_root_mkdir(r, &a.e), 0);
	t_path(abs, fx->outside, "x");
	expect_refused(r, "../x", -EINVAL, "refused \"../x\"");
	expect_refused(r, abs, -EINVAL, "is absolute");
	expect_refused(r, "a/../../x", -EINVAL, "refused \"a/../../x\"");
	io_root_close(r);
	assert_nothing_escaped(fx);
}

static void test_openat2_alone_refuses_what_leads_out(void **state)
{
	struct fixture *fx = *state;
	char abs[4096], link[4096];
	const char *last = NULL;
	int rfd, fd = -1;

	t_path(abs, fx->outside, "x");
	t_path(link, fx->root, "out");
	assert_int_equal(symlink(fx->outside, link), 0);
	t_path(link, fx->root, "a");
	assert_int_equal(mkdir(link, 0755), 0);
	rfd = open(fx->root, O_PATH | O_DIRECTORY);
	assert_true(rfd >= 0);
	/* the lexical check is bypassed here: the kernel alone must refuse */
	assert_int_equal(io__parent_open(rfd, "../x", &fd, &last), -EXDEV);
	assert_int_equal(io__parent_open(rfd, abs, &fd, &last), -EXDEV);
	assert_int_equal(io__parent_open(rfd, "a/../../x", &fd, &last), -EXDEV);
	assert_int_equal(io__parent_open(rfd, "out/x", &fd, &last), -EXDEV);
	assert_non_null(strstr(rcp_err_msg(-EXDEV), "\"out/x\": its directory leads outside"));
	assert_int_equal(fd, -1);
	assert_int_equal(io__parent_open(rfd, "a/../a/x", &fd, &last), 0); /* stays inside */
	assert_string_equal(last, "x");
	close(fd);
	close(rfd);
}

static void test_symlinks_leading_out_are_refused(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char p[4096];

	t_path(p, fx->root, "out");
	assert_int_equal(symlink(fx->outside, p), 0);
	t_path(p, fx->root, "up");
	assert_int_equal(symlink("../outside", p), 0);
	expect_refused(r, "out/x", -EXDEV, "leads outside the root");
	expect_refused(r, "up/x", -EXDEV, "\"up/x\": its directory leads outside the root");
	io_root_close(r);
	assert_nothing_escaped(fx);
}

/* Set base/rel's mtime to ns since the epoch, not following a symlink. */
static void mtime_ns_set(const char *base, const char *rel, int64_t ns)
{
	const struct timespec ts[2] = {{ns / 1000000000, ns % 1000000000},
				       {ns / 1000000000, ns % 1000000000}};
	char p[4096];

	t_path(p, base, rel);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void test_holds_only_the_same_size_and_time_or_link_target(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	const uint64_t one[] = {0, 5};
	char p[4096];
	struct fe f;

	fe_file(&f, "f", 5, 1, one);
	assert_false(io_root_holds(r, &f.e)); /* nothing there */
	t_write(fx->root, "f", "hello", 5, 0644);
	mtime_ns_set(fx->root, "f", f.e.mtime_ns);
	assert_true(io_root_holds(r, &f.e));
	f.e.mtime_ns++; /* a nanosecond apart */
	assert_false(io_root_holds(r, &f.e));
	f.e.mtime_ns--;
	f.e.size = 6;
	assert_false(io_root_holds(r, &f.e));
	/* A directory, or a link to the file, at the name is not the file. */
	fe_file(&f, "d", 0, 0, NULL);
	t_path(p, fx->root, "d");
	assert_int_equal(mkdir(p, 0755), 0);
	assert_false(io_root_holds(r, &f.e));
	fe_other(&f, IO_DIR, "d", NULL);
	assert_false(io_root_holds(r, &f.e)); /* a directory is always looked into */
	t_path(p, fx->root, "l");
	assert_int_equal(symlink("f", p), 0);
	fe_file(&f, "l", 5, 1, one);
	mtime_ns_set(fx->root, "l", f.e.mtime_ns);
	assert_false(io_root_holds(r, &f.e));
	fe_other(&f, IO_SYMLINK, "l", "f");
	assert_true(io_root_holds(r, &f.e));
	fe_other(&f, IO_SYMLINK, "l", "g");
	assert_false(io_root_holds(r, &f.e));
	fe_other(&f, IO_SYMLINK, "l", "ff");
	assert_false(io_root_holds(r, &f.e));
	/* Beneath a missing directory, or one that leads out: not held, and no sentence left. */
	fe_file(&f, "none/f", 5, 1, one);
	assert_false(io_root_holds(r, &f.e));
	t_write(fx->outside, "f", "hello", 5, 0644);
	mtime_ns_set(fx->outside, "f", f.e.mtime_ns);
	t_path(p, fx->root, "out");
	assert_int_equal(symlink(fx->outside, p), 0);
	fe_file(&f, "out/f", 5, 1, one);
	assert_false(io_root_holds(r, &f.e));
	assert_string_equal(rcp_err_msg(-EXDEV), strerror(EXDEV)); /* openat2's refusal forgotten */
	io_root_close(r);
}

static void swap_for_symlink_out(const struct fixture *fx, const char *name)
{
	char p[4096], q[4096];

	t_path(p, fx->root, name);
	assert_true(snprintf(q, sizeof(q), "%s.real", p) < (int)sizeof(q));
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(symlink(fx->outside, p), 0);
}

static void test_symlink_swapped_in_after_a_check_is_refused(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	struct fe d, f;
	bool done = false;

	fe_other(&d, IO_DIR, "a", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	swap_for_symlink_out(fx, "a"); /* after the directory was made and checked */
	expect_refused(r, "a/x", -EXDEV, "leads outside the root");
	/* swapped while a file is being received: it still lands where it was checked */
	fe_other(&d, IO_DIR, "b", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	fe_file(&f, "b/x", 3, 1, (const uint64_t[]){0, 3});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	swap_for_symlink_out(fx, "b");
	assert_int_equal(wr(w, 0, "abc", 3, &done), 0);
	assert_true(done);
	assert_int_equal(io_wfile_finalize(w), 0);
	assert_true(t_exists(fx->root, "b.real/x"));
	io_root_close(r);
	assert_nothing_escaped(fx);
}

static void test_a_symlink_at_the_final_name_is_replaced_not_followed(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	char p[4096], l[4096], buf[16] = {0};
	bool done = false;
	struct fe f;
	int fd;

	t_write(fx->outside, "target", "secret", 6, 0644);
	t_path(p, fx->outside, "target");
	t_path(l, fx->root, "f");
	assert_int_equal(symlink(p, l), 0);
	fe_file(&f, "f", 3, 1, (const uint64_t[]){0, 3});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, "new", 3, &done), 0);
	assert_int_equal(io_wfile_finalize(w), 0);
	fd = open(p, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	assert_memory_equal(buf, "secret", 6);
	t_path(p, fx->root, "f");
	fd = open(p, O_RDONLY | O_NOFOLLOW);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 3);
	close(fd);
	assert_memory_equal(buf, "new", 3);
	io_root_close(r);
}

static void test_mkdir_reuses_a_directory_and_symlink_replaces_a_file(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char p[4096], target[64] = {0};
	struct fe f;

	fe_other(&f, IO_DIR, "d", NULL);
	assert_int_equal(io_root_mkdir(r, &f.e), 0);
	assert_int_equal(io_root_mkdir(r, &f.e), 0); /* cp -r into an existing directory */
	t_write(fx->root, "file", "x", 1, 0644);
	fe_other(&f, IO_DIR, "file", NULL);
	assert_int_equal(io_root_mkdir(r, &f.e), -EEXIST);
	assert_non_null(strstr(rcp_err_msg(-EEXIST), "\"file\": something else is in the way"));
	fe_other(&f, IO_SYMLINK, "file", "../../anywhere");
	assert_int_equal(io_root_symlink(r, &f.e), 0);
	t_path(p, fx->root, "file");
	assert_int_equal(readlink(p, target, sizeof(target) - 1), 14);
	assert_string_equal(target, "../../anywhere");
	assert_int_equal(t_count_tmp(fx->root), 0);
	io_root_close(r);
}

static void test_open_beneath_confines_the_destination(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0), *sub = NULL;
	struct io_wfile *w = NULL;
	bool done = false;
	char p[4096];
	struct fe f;

	t_path(p, fx->root, "sub");
	assert_int_equal(mkdir(p, 0755), 0);
	t_path(p, fx->root, "out");
	assert_int_equal(symlink(fx->outside, p), 0);
	assert_int_equal(io_root_open_beneath(r, "../outside", &sub), -EINVAL);
	assert_int_equal(io_root_open_beneath(r, fx->outside, &sub), -EINVAL);
	assert_int_equal(io_root_open_beneath(r, "out", &sub), -EXDEV);
	assert_int_equal(io_root_open_beneath(r, "missing", &sub), -ENOENT);
	assert_null(sub);
	assert_int_equal(io_root_open_beneath(r, "sub", &sub), 0);
	fe_file(&f, "x", 1, 1, (const uint64_t[]){0, 1});
	assert_int_equal(io_wfile_open(sub, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, "x", 1, &done), 0);
	assert_int_equal(io_wfile_finalize(w), 0);
	assert_true(t_exists(fx->root, "sub/x"));
	io_root_close(sub);
	assert_int_equal(io_root_open_beneath(r, ".", &sub), 0);
	io_root_close(sub);
	io_root_close(r);
	assert_nothing_escaped(fx);
}

/* A file of 10 bytes received whole at name and put in place: io_wfile_open's or finalize's result.
 */
static int put(struct io_root *r, const char *name)
{
	static const char ten[10] = "0123456789";
	uint64_t pair[2] = {0, 10};
	struct io_wfile *w = NULL;
	bool done = false;
	struct fe f;
	int err;

	fe_file(&f, name, 10, 1, pair);
	if ((err = io_wfile_open(r, &f.e, CH, &w)) != 0)
		return err;
	assert_int_equal(wr(w, 0, ten, 10, &done), 0);
	assert_true(done);
	return io_wfile_finalize(w);
}

/*
 * The receiver keeps each directory open for the copy (dircache.c). One
 * whose ancestor is moved out of the root between two files must not take
 * the second file with it: the second fails as if it had resolved its own
 * parent, nothing lands outside, and a new directory of that name beneath
 * the root takes the next file.
 */
static void test_a_kept_directory_moved_out_of_the_root_takes_no_more_files(void **state)
{
	static const struct io_manifest none = {0};
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_FSYNC);
	char from[4096], to[4096], p[4096];
	struct fe d;
	int err;

	fe_other(&d, IO_DIR, "a", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	fe_other(&d, IO_DIR, "a/b", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	assert_int_equal(put(r, "a/b/f1"), 0); /* a/b is kept open from here on */
	t_path(from, fx->root, "a");
	t_path(to, fx->outside, "a");
	assert_int_equal(rename(from, to), 0); /* its parent goes, and it with it */
	err = put(r, "a/b/f2");
	assert_int_equal(err, -ENOENT);
	assert_non_null(strstr(rcp_err_msg(err), "cannot open the directory of \"a/b/f2\""));
	t_path(p, to, "b");
	assert_true(t_exists(p, "f1"));
	assert_false(t_exists(p, "f2"));
	assert_int_equal(t_count_tmp(fx->base), 0);
	assert_int_equal(mkdir(from, 0755), 0); /* someone makes a new a/b in the root */
	t_path(p, from, "b");
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(put(r, "a/b/f3"), 0);
	assert_true(t_exists(p, "f3"));
	t_path(p, to, "b");
	assert_false(t_exists(p, "f3"));
	assert_int_equal(io_root_dirs_finish(r, &none), 0); /* the new a/b is synced */
	io_root_close(r);
}

/*
 * A file being written holds its kept directory's descriptor: when a later
 * file finds the directory moved, that descriptor must stay open (and its
 * number unused by anything else) until the copy ends. Closed, its number
 * would go to the next directory opened, here c, and the first file's
 * rename would land there.
 */
static void test_a_moved_directory_s_descriptor_stays_with_the_file_in_flight(void **state)
{
	static const struct io_manifest none = {0};
	static const char ten[10] = "0123456789";
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_FSYNC);
	char from[4096], to[4096], p[4096];
	uint64_t pair[2] = {0, 10};
	struct io_wfile *w = NULL;
	bool done = false;
	struct fe d, f;

	fe_other(&d, IO_DIR, "a", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	fe_other(&d, IO_DIR, "a/b", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	fe_file(&f, "a/b/first", 10, 1, pair);
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0); /* in flight, in the kept a/b */
	t_path(from, fx->root, "a");
	t_path(to, fx->outside, "a");
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(put(r, "a/b/second"), -ENOENT); /* a/b found moved */
	fe_other(&d, IO_DIR, "c", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	assert_int_equal(put(r, "c/third"), 0); /* c kept: a new descriptor */
	assert_int_equal(wr(w, 0, ten, 10, &done), 0);
	assert_true(done);
	assert_int_equal(io_wfile_finalize(w), 0);
	t_path(p, fx->root, "c");
	assert_false(t_exists(p, "first")); /* never through a reused descriptor */
	t_path(p, to, "b");
	assert_true(
		t_exists(p, "first")); /* where its directory went, as an openat2 per file did */
	assert_int_equal(io_root_dirs_finish(r, &none), 0);
	io_root_close(r);
}

/*
 * Many directories (the table grows past its first size, and past the 256
 * kept at most, the rest open their own parent per file): each file in its own.
 */
static void test_a_file_in_each_of_many_kept_directories_lands_in_its_own(void **state)
{
	static const struct io_manifest none = {0};
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_FSYNC);
	char name[32], dir[4096];
	struct fe d;
	unsigned i, round;

	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "d%03u", i);
		fe_other(&d, IO_DIR, name, NULL);
		assert_int_equal(io_root_mkdir(r, &d.e), 0);
	}
	for (round = 0; round < 2; round++) /* the second round finds every one kept */
		for (i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "d%03u/f%u", i, round);
			assert_int_equal(put(r, name), 0);
		}
	assert_int_equal(io_root_dirs_finish(r, &none), 0);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "d%03u", i);
		t_path(dir, fx->root, name);
		assert_true(t_exists(dir, "f0"));
		assert_true(t_exists(dir, "f1"));
	}
	assert_int_equal(t_count_tmp(fx->base), 0);
	io_root_close(r);
}

/*
 * Temporaries' names are drawn from a pool of random bits per thread: each
 * name differs from the others, and a child of fork draws its own, not the
 * names its parent takes next (O_EXCL would fail one of them).
 */
static void test_temporary_names_differ_in_a_thread_and_across_fork(void **state)
{
	char names[100][IO_TMP_NAME_LEN], child[IO_TMP_NAME_LEN] = "", mine[IO_TMP_NAME_LEN];
	int fds[2], status, i, j;
	pid_t pid;

	(void)state;
	for (i = 0; i < 100; i++) {
		io__tmp_name(names[i]);
		assert_int_equal(strncmp(names[i], IO_TMP_PREFIX, strlen(IO_TMP_PREFIX)), 0);
		for (j = 0; j < i; j++)
			assert_string_not_equal(names[i], names[j]);
	}
	io__tmp_name(mine); /* the pool holds more: a fork now copies it */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		io__tmp_name(child);
		_exit(write(fds[1], child, sizeof(child)) == (ssize_t)sizeof(child) ? 0 : 1);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], child, sizeof(child)), (ssize_t)sizeof(child));
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	io__tmp_name(mine);
	assert_string_not_equal(child, mine);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_hostile_names_are_refused_before_anything_is_created),
		T(test_openat2_alone_refuses_what_leads_out),
		T(test_symlinks_leading_out_are_refused),
		T(test_holds_only_the_same_size_and_time_or_link_target),
		T(test_symlink_swapped_in_after_a_check_is_refused),
		T(test_a_symlink_at_the_final_name_is_replaced_not_followed),
		T(test_mkdir_reuses_a_directory_and_symlink_replaces_a_file),
		T(test_open_beneath_confines_the_destination),
		T(test_a_kept_directory_moved_out_of_the_root_takes_no_more_files),
		T(test_a_moved_directory_s_descriptor_stays_with_the_file_in_flight),
		T(test_a_file_in_each_of_many_kept_directories_lands_in_its_own),
		T(test_temporary_names_differ_in_a_thread_and_across_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
