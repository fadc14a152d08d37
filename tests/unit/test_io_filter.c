/*
 * test_io_filter.c - what a walk leaves out (io/filter.c): rules with
 * rsync's meaning (a glob on the name, a trailing '/' for directories, a
 * leading '/' anchored at the source's top, a '/' inside matching the
 * path's end, "**" across slashes, the first match deciding), the paths
 * of --files-from, hostile patterns and encodings refused with a sentence,
 * and walks of a real tree through a filter (an excluded directory is not
 * entered, a listed path not found is said).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "io/io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A filter of rules "-pat" and "+pat", in order. */
static struct io_filter *rules(const char *const *r, size_t n)
{
	struct io_filter *f;
	size_t i;

	assert_int_equal(io_filter_create(&f), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(io_filter_rule(f, r[i][0] == '+', r[i] + 1), 0);
	assert_int_equal(io_filter_finish(f), 0);
	return f;
}

#define RULES(...)                                                                                 \
	rules((const char *const[]){__VA_ARGS__},                                                  \
	      sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void test_a_glob_without_a_slash_matches_the_last_name(void **state)
{
	struct io_filter *f = RULES("-*.o", "-core");

	(void)state;
	assert_true(io_filter_excluded(f, "x.o", false));
	assert_true(io_filter_excluded(f, "a/b/x.o", false));
	assert_true(io_filter_excluded(f, "a/core", true));
	assert_false(io_filter_excluded(f, "a.o/x", false)); /* the name is x */
	assert_false(io_filter_excluded(f, "x.oo", false));
	assert_false(io_filter_excluded(f, "corefile", false));
	assert_false(io_filter_excluded(f, "a/xcore", false));
	assert_true(io_filter_excluded(f, ".o", false)); /* '*' takes a leading dot too */
	io_filter_destroy(f);
}

static void test_a_trailing_slash_matches_directories_only(void **state)
{
	struct io_filter *f = RULES("-build/");

	(void)state;
	assert_true(io_filter_excluded(f, "build", true));
	assert_true(io_filter_excluded(f, "a/build", true));
	assert_false(io_filter_excluded(f, "build", false));
	io_filter_destroy(f);
}

static void test_a_leading_slash_anchors_at_the_source_top(void **state)
{
	struct io_filter *f = RULES("-/tmp", "-/a/*.log");

	(void)state;
	assert_true(io_filter_excluded(f, "tmp", true));
	assert_false(io_filter_excluded(f, "a/tmp", true));
	assert_true(io_filter_excluded(f, "a/x.log", false));
	assert_false(io_filter_excluded(f, "b/a/x.log", false));
	assert_false(io_filter_excluded(f, "a/b/x.log", false)); /* '*' stops at '/' */
	io_filter_destroy(f);
}

static void test_a_slash_inside_matches_the_end_of_the_path(void **state)
{
	struct io_filter *f = RULES("-b/c", "-d*/e?");

	(void)state;
	assert_true(io_filter_excluded(f, "b/c", false));
	assert_true(io_filter_excluded(f, "a/b/c", false));
	assert_false(io_filter_excluded(f, "c", false));
	assert_false(io_filter_excluded(f, "xb/c", false));
	assert_false(io_filter_excluded(f, "b/c/d", false));
	assert_true(io_filter_excluded(f, "x/dir/e1", false));
	assert_false(io_filter_excluded(f, "x/dir/e12", false));
	io_filter_destroy(f);
}

static void test_a_double_star_crosses_slashes(void **state)
{
	struct io_filter *f = RULES("-/cache/**", "-**/deep.bin");

	(void)state;
	assert_true(io_filter_excluded(f, "cache/a/b/c", false));
	assert_false(io_filter_excluded(f, "x/cache/a", false));
	assert_true(io_filter_excluded(f, "a/b/deep.bin", false));
	assert_false(io_filter_excluded(f, "a/b/deep.binx", false));
	io_filter_destroy(f);
}

static void test_the_first_match_decides(void **state)
{
	struct io_filter *f = RULES("+keep.o", "-*.o", "+*.o");

	(void)state;
	assert_false(io_filter_excluded(f, "a/keep.o", false));
	assert_true(io_filter_excluded(f, "a/other.o", false));
	assert_false(io_filter_excluded(f, "a/other.c", false)); /* no match: kept */
	io_filter_destroy(f);
}

static void test_brackets_and_escapes_are_fnmatch_s(void **state)
{
	struct io_filter *f = RULES("-[ab]x", "-\\*lit", "-q[!0-9]", "-*.[o-q]", "-y[-z]");

	(void)state;
	assert_true(io_filter_excluded(f, "ax", false));
	assert_false(io_filter_excluded(f, "cx", false));
	assert_true(io_filter_excluded(f, "*lit", false));
	assert_false(io_filter_excluded(f, "alit", false));
	assert_true(io_filter_excluded(f, "qa", false));
	assert_false(io_filter_excluded(f, "q1", false));
	assert_true(io_filter_excluded(f, "a/x.o", false)); /* indexed by each byte it takes */
	assert_true(io_filter_excluded(f, "x.p", false));
	assert_true(io_filter_excluded(f, "x.q", false));
	assert_false(io_filter_excluded(f, "x.r", false));
	assert_true(io_filter_excluded(f, "y-", false));
	assert_true(io_filter_excluded(f, "yz", false));
	assert_false(io_filter_excluded(f, "ya", false));
	io_filter_destroy(f);
	/* A '[' inside a bracket: fnmatch's one bracket holds a, [ and b, not "b" alone. */
	f = RULES("-*[a[b]");
	assert_true(io_filter_excluded(f, "xa", false));
	assert_true(io_filter_excluded(f, "x[", false));
	assert_true(io_filter_excluded(f, "xb", false));
	assert_false(io_filter_excluded(f, "xc", false));
	io_filter_destroy(f);
}

static void test_hostile_patterns_are_refused_with_a_sentence(void **state)
{
	struct io_filter *f;
	char *big = malloc(IO_PATH_MAX + 1);
	size_t i;

	(void)state;
	assert_non_null(big);
	assert_int_equal(io_filter_create(&f), 0);
	assert_int_equal(io_filter_rule(f, false, "/"), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "matches no name"));
	assert_int_equal(io_filter_rule(f, false, "a\xff"), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "not UTF-8"));
	assert_int_equal(io_filter_rule(f, false, "a\xc3"), -EINVAL); /* cut short */
	assert_int_equal(io_filter_rule(f, false, "a\nb"), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "control character"));
	assert_int_equal(io_filter_rule(f, false, "caf\xc3\xa9"), 0); /* UTF-8 is fine */
	memset(big, 'a', IO_PATH_MAX);
	big[IO_PATH_MAX] = '\0';
	assert_int_equal(io_filter_rule(f, false, big), -EINVAL);
	/* fnmatch backtracks: "*a*a*...*[!a]b" over a long name takes exponential time. */
	assert_int_equal(io_filter_rule(f, false, "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*[!a]b"),
			 -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "more than 16 '*'"));
	assert_int_equal(io_filter_rule(f, false, "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*[!a]b"), 0);
	for (i = 2; i < IO_FILTER_MAX_RULES; i++)
		assert_int_equal(io_filter_rule(f, false, "x"), 0);
	assert_int_equal(io_filter_rule(f, false, "x"), -E2BIG);
	assert_int_equal(io_filter_path(f, "../etc"), -EINVAL);
	assert_int_equal(io_filter_path(f, "a/../b"), -EINVAL);
	assert_int_equal(io_filter_path(f, "a/.railcp-tmp-x"), -EINVAL);
	io_filter_destroy(f);
	free(big);
}

static void test_listed_paths_want_their_way_and_their_contents(void **state)
{
	struct io_filter *f;
	bool found[3] = {false};

	(void)state;
	assert_int_equal(io_filter_create(&f), 0);
	assert_int_equal(io_filter_path(f, "./a/b/file"), 0);
	assert_int_equal(io_filter_path(f, "/d/"), 0);
	assert_int_equal(io_filter_path(f, "a-z"), 0);
	assert_int_equal(io_filter_path(f, "d"), 0); /* twice: once */
	assert_int_equal(io_filter_finish(f), 0);
	assert_int_equal(io_filter_n_paths(f), 3);
	assert_string_equal(io_filter_path_at(f, 0), "a-z");
	assert_true(io__filter_wanted(f, "a", true, false, found));	    /* on the way */
	assert_true(io__filter_wanted(f, "a/b", true, false, found));	    /* on the way */
	assert_false(io__filter_wanted(f, "a/c", true, false, found));	    /* not */
	assert_false(io__filter_wanted(f, "a", false, false, found));	    /* a file */
	assert_true(io__filter_wanted(f, "a/b/file", false, false, found)); /* listed */
	assert_true(found[1]);
	assert_false(io__filter_wanted(f, "d/x", false, false, found)); /* not without -r */
	assert_true(io__filter_wanted(f, "d/x/y", false, true, found)); /* with -r */
	assert_false(found[2]);
	assert_true(io__filter_wanted(f, "d", true, false, found));
	assert_true(found[2]);
	assert_false(found[0]);
	io_filter_destroy(f);
}

static void test_the_encoding_reads_back_and_hostile_bytes_are_refused(void **state)
{
	struct io_filter *f = RULES("-*.o", "+keep/", "-/x/**"), *g;
	void *buf;
	size_t len;

	(void)state;
	assert_int_equal(io_filter_path(f, "x/y"), 0);
	assert_int_equal(io_filter_finish(f), 0);
	assert_int_equal(io_filter_encode(f, &buf, &len), 0);
	assert_int_equal(io_filter_decode(buf, len, &g), 0);
	assert_true(io_filter_excluded(g, "a/b.o", false));
	assert_false(io_filter_excluded(g, "keep", true));
	assert_true(io_filter_excluded(g, "x/a/b", false));
	assert_int_equal(io_filter_n_paths(g), 1);
	io_filter_destroy(g);
	assert_int_equal(io_filter_decode(buf, len - 1, &g), -EBADMSG); /* no last NUL */
	assert_int_equal(io_filter_decode("?x", 3, &g), -EBADMSG);
	assert_int_equal(io_filter_decode("-", 2, &g), -EBADMSG);
	assert_int_equal(io_filter_decode("-\xfe", 3, &g), -EBADMSG);
	assert_int_equal(io_filter_decode("f../a", 6, &g), -EBADMSG);
	assert_int_equal(io_filter_decode("", IO_FILTER_MAX_BYTES + 1u, &g), -EFBIG);
	free(buf);
	io_filter_destroy(f);
}

/* A small tree under base: top/{a.o, b.c, build/{x.o, y}, sub/{a.o, keep.txt}}. */
static void tree(const char *base)
{
	static const char *const dirs[] = {"top", "top/build", "top/sub"};
	static const char *const files[] = {"top/a.o",	   "top/b.c",	  "top/build/x.o",
					    "top/build/y", "top/sub/a.o", "top/sub/keep.txt"};
	char p[4096];
	size_t i;
	int fd;

	for (i = 0; i < RCP_ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s/%s", base, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	for (i = 0; i < RCP_ARRAY_SIZE(files); i++) {
		snprintf(p, sizeof(p), "%s/%s", base, files[i]);
		assert_true((fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0644)) >= 0);
		close(fd);
	}
}

/* The manifest's paths joined by spaces. */
static void paths(const struct io_manifest *m, char *out, size_t len)
{
	size_t i;

	out[0] = '\0';
	for (i = 0; i < m->n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "",
			 m->entry[i].path);
}

static void test_a_walk_leaves_out_what_the_rules_exclude(void **state)
{
	struct io_filter *f = RULES("+/a.o", "-*.o", "-build/");
	struct io_manifest *m;
	char base[] = "/tmp/railcp-filter-XXXXXX", cwd[4096], got[1024];
	const char *src[] = {"top"};

	(void)state;
	assert_non_null(mkdtemp(base));
	tree(base);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(base), 0);
	assert_int_equal(io_manifest_walk_filtered(NULL, src, 1, IO_WALK_RECURSIVE, NULL, f, &m),
			 0);
	paths(m, got, sizeof(got));
	assert_string_equal(got, "top top/a.o top/b.c top/sub top/sub/keep.txt");
	io_manifest_destroy(m);
	io_filter_destroy(f);
	/* --files-from: only what is listed, and the way to it; a listed path not there is said */
	assert_int_equal(io_filter_create(&f), 0);
	assert_int_equal(io_filter_path(f, "sub/keep.txt"), 0);
	assert_int_equal(io_filter_path(f, "build"), 0);
	assert_int_equal(io_filter_finish(f), 0);
	assert_int_equal(io_manifest_walk_filtered(NULL, src, 1, IO_WALK_RECURSIVE, NULL, f, &m),
			 0);
	paths(m, got, sizeof(got));
	assert_string_equal(got, "top top/build top/build/x.o top/build/y top/sub "
				 "top/sub/keep.txt");
	io_manifest_destroy(m);
	assert_int_equal(io_manifest_walk_filtered(NULL, src, 1, 0, NULL, f, &m), 0);
	paths(m, got, sizeof(got)); /* without -r a listed directory comes alone */
	assert_string_equal(got, "top top/build top/sub top/sub/keep.txt");
	io_manifest_destroy(m);
	assert_int_equal(io_filter_path(f, "nothere"), 0);
	assert_int_equal(io_filter_finish(f), 0);
	assert_int_equal(io_manifest_walk_filtered(NULL, src, 1, 0, NULL, f, &m), -ENOENT);
	assert_non_null(strstr(rcp_err_msg(-ENOENT), "\"nothere\", which is not in top"));
	src[0] = "top/b.c";
	assert_int_equal(io_manifest_walk_filtered(NULL, src, 1, 0, NULL, f, &m), -ENOTDIR);
	io_filter_destroy(f);
	assert_int_equal(chdir(cwd), 0);
	snprintf(cwd, sizeof(cwd), "rm -rf %s", base);
	assert_int_equal(system(cwd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_glob_without_a_slash_matches_the_last_name),
		cmocka_unit_test(test_a_trailing_slash_matches_directories_only),
		cmocka_unit_test(test_a_leading_slash_anchors_at_the_source_top),
		cmocka_unit_test(test_a_slash_inside_matches_the_end_of_the_path),
		cmocka_unit_test(test_a_double_star_crosses_slashes),
		cmocka_unit_test(test_the_first_match_decides),
		cmocka_unit_test(test_brackets_and_escapes_are_fnmatch_s),
		cmocka_unit_test(test_hostile_patterns_are_refused_with_a_sentence),
		cmocka_unit_test(test_listed_paths_want_their_way_and_their_contents),
		cmocka_unit_test(test_the_encoding_reads_back_and_hostile_bytes_are_refused),
		cmocka_unit_test(test_a_walk_leaves_out_what_the_rules_exclude),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
