/*
 * test_io_delete.c - --delete's walk (io/delete.c): only the directories a
 * copy covered, excluded entries and temporaries kept, symlinks removed as
 * links and never followed, nothing outside the root, a failure said once.
 */
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "test_io_root.h"

/* A manifest of the named entries (a trailing '/' for a directory). */
struct list {
	struct io_entry e[16];
	char p[16][64];
	struct io_manifest m;
};

static void list_of(struct list *l, const char *const *names)
{
	size_t i;

	memset(l, 0, sizeof(*l));
	for (i = 0; names[i]; i++) {
		size_t n = strlen(names[i]);
		bool dir = names[i][n - 1] == '/';

		assert_true(i < 16 && n < 64);
		memcpy(l->p[i], names[i], n - dir);
		l->e[i] = (struct io_entry){.path = l->p[i], .type = dir ? IO_DIR : IO_FILE};
	}
	l->m = (struct io_manifest){.entry = l->e, .n = i};
}

static void mk(const struct fixture *fx, const char *rel)
{
	char p[4096];

	t_path(p, fx->root, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void file(const struct fixture *fx, const char *rel)
{
	t_write(fx->root, rel, "x", 1, 0644);
}

static int del(const struct fixture *fx, const char *const *names, const struct io_delete_opts *o,
	       struct io_delete_result *res)
{
	struct io_root *r = NULL;
	struct list l;
	int err;

	list_of(&l, names);
	assert_int_equal(io_root_open(fx->root, 0, &r), 0);
	err = io_root_delete(r, &l.m, o, res);
	io_root_close(r);
	return err;
}

static void count_visit(void *ctx)
{
	(*(unsigned *)ctx)++;
}

/* top/ was copied: its extras go, nested ones too; what is beside top stays. */
static void test_extras_beneath_covered_directories_go(void **state)
{
	struct fixture *fx = *state;
	unsigned visits = 0;
	struct io_delete_opts o = {.visit = count_visit, .ctx = &visits};
	struct io_delete_result res;

	mk(fx, "top");
	mk(fx, "top/sub");
	file(fx, "top/keep");
	file(fx, "top/sub/keep");
	file(fx, "top/extra");
	mk(fx, "top/old");
	mk(fx, "top/old/deeper");
	file(fx, "top/old/deeper/f");
	file(fx, "top/sub/extra");
	file(fx, "beside");
	assert_int_equal(del(fx,
			     (const char *[]){"top/", "top/sub/", "top/keep", "top/sub/keep", NULL},
			     &o, &res),
			 0);
	assert_true(t_exists(fx->root, "top/keep") && t_exists(fx->root, "top/sub/keep"));
	assert_false(t_exists(fx->root, "top/extra") || t_exists(fx->root, "top/old") ||
		     t_exists(fx->root, "top/sub/extra"));
	assert_true(t_exists(fx->root, "beside")); /* the root was not covered */
	assert_int_equal(res.removed, 5);	   /* extra, old, deeper, f, sub/extra */
	assert_int_equal(res.failed, 0);
	/* Each entry of each directory read is a pulse (--delete's "alive" frames). */
	assert_true(visits >= 9);
}

/* A source's contents ("dir/") cover the root itself. */
static void test_contents_cover_the_root(void **state)
{
	struct fixture *fx = *state;
	struct io_delete_opts o = {.root_too = true};
	struct io_delete_result res;

	file(fx, "a");
	file(fx, "stale");
	assert_int_equal(del(fx, (const char *[]){"a", NULL}, &o, &res), 0);
	assert_true(t_exists(fx->root, "a"));
	assert_false(t_exists(fx->root, "stale"));
	assert_int_equal(res.removed, 1);
}

/* A single file's copy covers no directory. */
static void test_single_file_removes_nothing(void **state)
{
	struct fixture *fx = *state;
	struct io_delete_opts o = {0};
	struct io_delete_result res;

	file(fx, "f");
	file(fx, "other");
	assert_int_equal(del(fx, (const char *[]){"f", NULL}, &o, &res), 0);
	assert_true(t_exists(fx->root, "other"));
	assert_int_equal(res.removed, 0);
}

/* A symlink to a directory outside goes as a link; what it names is untouched. */
static void test_symlinks_go_as_links_never_followed(void **state)
{
	struct fixture *fx = *state;
	struct io_delete_opts o = {0};
	struct io_delete_result res;
	char p[4096];

	mk(fx, "top");
	mk(fx, "top/realdir");
	file(fx, "top/realdir/inside");
	t_write(fx->outside, "precious", "p", 1, 0644);
	t_path(p, fx->root, "top/out");
	assert_int_equal(symlink(fx->outside, p), 0);
	t_path(p, fx->root, "top/in");
	assert_int_equal(symlink("realdir", p), 0);
	assert_int_equal(del(fx,
			     (const char *[]){"top/", "top/realdir/", "top/realdir/inside", NULL},
			     &o, &res),
			 0);
	assert_false(t_exists(fx->root, "top/out") || t_exists(fx->root, "top/in"));
	assert_true(t_exists(fx->outside, "precious"));
	assert_true(t_exists(fx->root, "top/realdir/inside"));
	assert_int_equal(res.removed, 2);
}

/* A covered directory reached through a symlink (to outside) is not entered. */
static void test_covered_path_through_symlink_is_not_entered(void **state)
{
	struct fixture *fx = *state;
	struct io_delete_opts o = {0};
	struct io_delete_result res;
	char p[4096];

	t_write(fx->outside, "precious", "p", 1, 0644);
	t_path(p, fx->root, "top");
	assert_int_equal(symlink(fx->outside, p), 0);
	assert_int_equal(del(fx, (const char *[]){"top/", NULL}, &o, &res), 0);
	assert_true(t_exists(fx->outside, "precious"));
	assert_int_equal(res.removed, 0);
}

/* Excluded names are protected (a directory's contents with it); temporaries too. */
static void test_excluded_and_temporaries_stay(void **state)
{
	struct fixture *fx = *state;
	struct io_filter *f = NULL;
	struct io_delete_opts o = {0};
	struct io_delete_result res;

	assert_int_equal(io_filter_create(&f), 0);
	assert_int_equal(io_filter_rule(f, false, "*.log"), 0);
	assert_int_equal(io_filter_rule(f, false, "cache/"), 0);
	assert_int_equal(io_filter_finish(f), 0);
	o.filter = f;
	mk(fx, "top");
	file(fx, "top/run.log");
	mk(fx, "top/cache");
	file(fx, "top/cache/blob");
	file(fx, "top/cache.txt");
	file(fx, "top/.railcp-tmp-0123456789abcdef");
	mk(fx, "top/old"); /* extraneous, but holds an excluded file: both stay */
	file(fx, "top/old/x.log");
	file(fx, "top/old/y");
	assert_int_equal(del(fx, (const char *[]){"top/", NULL}, &o, &res), 0);
	assert_true(t_exists(fx->root, "top/old/x.log"));
	assert_false(t_exists(fx->root, "top/old/y"));
	assert_true(t_exists(fx->root, "top/run.log") && t_exists(fx->root, "top/cache/blob"));
	assert_true(t_exists(fx->root, "top/.railcp-tmp-0123456789abcdef"));
	assert_false(t_exists(fx->root, "top/cache.txt"));
	assert_int_equal(res.removed, 2);
	assert_int_equal(res.failed, 0);
	io_filter_destroy(f);
}

static void said(const char *path, bool is_dir, void *ctx)
{
	char *buf = ctx;
	size_t n = strlen(buf);

	snprintf(buf + n, 256 - n, "%s%s;", path, is_dir ? "/" : "");
}

/* A dry run names each entry, deepest first, and removes nothing. */
static void test_dry_run_names_and_removes_nothing(void **state)
{
	struct fixture *fx = *state;
	char names[256] = "";
	struct io_delete_opts o = {.dry = true, .said = said, .ctx = names};
	struct io_delete_result res;

	mk(fx, "top");
	mk(fx, "top/old");
	file(fx, "top/old/f");
	assert_int_equal(del(fx, (const char *[]){"top/", NULL}, &o, &res), 0);
	assert_string_equal(names, "top/old/f;top/old/;");
	assert_true(t_exists(fx->root, "top/old/f"));
	assert_int_equal(res.removed, 2);
}

/* As another user: a read-only directory's entries cannot go; one sentence, the rest done. */
static int readonly_scenario(const struct fixture *fx)
{
	struct io_delete_opts o = {0};
	struct io_delete_result res;
	char p[4096];
	int err;

	t_path(p, fx->root, "top/locked");
	if (mkdir(p, 0755) || snprintf(p, sizeof(p), "%s/top/locked/a", fx->root) <= 0 ||
	    close(open(p, O_CREAT | O_WRONLY, 0644)) ||
	    snprintf(p, sizeof(p), "%s/top/locked/b", fx->root) <= 0 ||
	    close(open(p, O_CREAT | O_WRONLY, 0644)) ||
	    snprintf(p, sizeof(p), "%s/top/locked", fx->root) <= 0 || chmod(p, 0555) ||
	    snprintf(p, sizeof(p), "%s/top/free", fx->root) <= 0 ||
	    close(open(p, O_CREAT | O_WRONLY, 0644)))
		return 10;
	err = del(fx, (const char *[]){"top/", NULL}, &o, &res);
	if (err != -EACCES)
		return 11;
	if (res.failed != 2 || res.removed != 1 || t_exists(fx->root, "top/free"))
		return 12;
	if (!strstr(rcp_err_msg(err), "could not remove \"top/locked/") ||
	    !strstr(rcp_err_msg(err), "(and 1 more") || strchr(rcp_err_msg(err), '\n'))
		return 13;
	if (!t_exists(fx->root, "top/locked/a") || !t_exists(fx->root, "top/locked/b"))
		return 14;
	return 0;
}

static void test_readonly_directory_fails_in_one_sentence(void **state)
{
	struct fixture *fx = *state;
	int status = -1;
	char p[4096];
	pid_t pid;

	t_path(p, fx->root, "top");
	assert_int_equal(mkdir(p, 0777), 0);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(chmod(fx->base, 0777), 0);
	assert_int_equal(chmod(fx->root, 0777), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* root removes anything: the scenario runs as nobody */
		if (geteuid() == 0 && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(2);
		_exit(readonly_scenario(fx));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		fail_msg("the read-only scenario failed at step %d", WEXITSTATUS(status));
}

/* In a mount namespace of its own: fx->outside bound onto top/mnt, an extra. Steps as exit codes.
 */
static int bind_scenario(const struct fixture *fx)
{
	struct io_delete_opts o = {0};
	struct io_delete_result res = {0};
	char mnt[4096];
	int err;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 77;
	t_path(mnt, fx->root, "top/mnt");
	if (mount(fx->outside, mnt, NULL, MS_BIND, NULL))
		return 10;
	err = del(fx, (const char *[]){"top/", NULL}, &o, &res);
	if (!t_exists(fx->outside, "precious"))
		return 11; /* the walk went through the bind mount */
	if (!err || res.failed != 1 || !strstr(rcp_err_msg(err), "mount point"))
		return 12;
	if (t_exists(fx->root, "top/extra"))
		return 13; /* the rest still goes */
	return 0;
}

/*
 * A bind mount of the same file system (same st_dev) inside a covered
 * directory is not entered: what it shows stays, and it counts as a failure.
 */
static void test_bind_mount_is_not_entered(void **state)
{
	struct fixture *fx = *state;
	int status = -1;
	pid_t pid;

	mk(fx, "top");
	mk(fx, "top/mnt");
	file(fx, "top/extra");
	t_write(fx->outside, "precious", "x", 1, 0644);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(bind_scenario(fx));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip(); /* no mount namespace for this user (CI runs as root, where there is) */
	if (WEXITSTATUS(status))
		fail_msg("the bind-mount scenario failed at step %d", WEXITSTATUS(status));
	assert_true(t_exists(fx->outside, "precious"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_extras_beneath_covered_directories_go, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_contents_cover_the_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_single_file_removes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks_go_as_links_never_followed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_covered_path_through_symlink_is_not_entered,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_excluded_and_temporaries_stay, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_names_and_removes_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_readonly_directory_fails_in_one_sentence,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_mount_is_not_entered, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
