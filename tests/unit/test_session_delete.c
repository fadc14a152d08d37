/*
 * test_session_delete.c - --delete over the loopback transport
 * (session_harness.h), protocol 11: a push's server removes the extras of
 * the directories the copy covered once the copy is in, keeps what the
 * client's filter excludes, and names what it removed to the client; a
 * dry run names the same and removes nothing; a pull's client does the
 * same on its side.
 *
 * Threading: one session at a time.
 */
#include "session_harness.h"

#include <sys/stat.h>

struct del {
	char src[4096], root[4096], back[4096], top[4096];
	struct topo_plan plan;
	char said[512]; /* the names heard, each followed by ';' */
	uint64_t deleted;
};

static void said(const char *path, void *ctx)
{
	struct del *d = ctx;
	size_t n = strlen(d->said);

	snprintf(d->said + n, sizeof(d->said) - n, "%s;", path);
}

static void del_start(struct fx *fx, struct del *d)
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

static void noop_list(const struct io_manifest *m, const uint8_t *why, void *ctx)
{
	(void)m;
	(void)why;
	(void)ctx;
}

static int del_copy(struct fx *fx, struct del *d, enum eng_copy_dir dir, const char *dst,
		    bool delete_extra, bool dry_run, const struct io_filter *f)
{
	const char *push_src[] = {d->top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, dst)
						  : copy_opts(ENG_PULL, pull_src, 1, dst);
	struct eng_report r;
	int err;

	cp.recursive = true;
	cp.delete_extra = delete_extra;
	cp.deleted = said;
	cp.deleted_ctx = d;
	cp.dry_run = dry_run;
	cp.dry_list = noop_list;
	cp.filter = f;
	d->said[0] = '\0';
	err = copy(&fx->srv, &d->plan, &cp, NULL, &r);
	d->deleted = err ? 0 : r.deleted;
	return err;
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

static void test_a_push_removes_the_extras_and_keeps_the_excluded(void **state)
{
	struct fx *fx = *state;
	struct io_filter *f = logs_out();
	struct del d;

	del_start(fx, &d);
	assert_int_equal(del_copy(fx, &d, ENG_PUSH, "", false, false, NULL), 0);
	extras(d.root);
	/* A dry run names them, deepest first, and removes nothing. */
	assert_int_equal(del_copy(fx, &d, ENG_PUSH, "", true, true, f), 0);
	assert_string_equal(d.said, "top/old/x;top/old/;top/sub/stale;");
	assert_int_equal(d.deleted, 3);
	assert_true(t_exists(d.root, "top/old/x") && t_exists(d.root, "top/sub/stale"));
	/* For real. */
	assert_int_equal(del_copy(fx, &d, ENG_PUSH, "", true, false, f), 0);
	assert_string_equal(d.said, "top/old/x;top/old/;top/sub/stale;");
	assert_int_equal(d.deleted, 3);
	assert_false(t_exists(d.root, "top/old") || t_exists(d.root, "top/sub/stale"));
	assert_true(t_exists(d.root, "top/keep.log") && t_exists(d.root, "beside"));
	assert_true(t_exists(d.root, "top/sub/big.bin"));
	io_filter_destroy(f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_removes_the_extras_here(void **state)
{
	struct fx *fx = *state;
	struct io_filter *f = logs_out();
	struct del d;

	del_start(fx, &d);
	assert_int_equal(del_copy(fx, &d, ENG_PUSH, "", false, false, NULL), 0);
	assert_int_equal(del_copy(fx, &d, ENG_PULL, d.back, false, false, NULL), 0);
	extras(d.back);
	assert_int_equal(del_copy(fx, &d, ENG_PULL, d.back, true, true, f), 0);
	assert_string_equal(d.said, "top/old/x;top/old/;top/sub/stale;");
	assert_true(t_exists(d.back, "top/old/x"));
	assert_int_equal(del_copy(fx, &d, ENG_PULL, d.back, true, false, f), 0);
	assert_int_equal(d.deleted, 3);
	assert_false(t_exists(d.back, "top/old") || t_exists(d.back, "top/sub/stale"));
	assert_true(t_exists(d.back, "top/keep.log") && t_exists(d.back, "beside"));
	io_filter_destroy(f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_push_removes_the_extras_and_keeps_the_excluded),
		T(test_a_pull_removes_the_extras_here),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
