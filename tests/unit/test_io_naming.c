/*
 * test_io_naming.c - rsync's naming rule as pure decisions: a source's
 * last name, the contents case, the names a pull accepts from a hostile
 * server, and where a copy lands for every outcome of opening the
 * destination. No file system: manifests are built in test memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "io/io_int.h"

#include <errno.h>
#include <string.h>

#define ERR_ENOENT_TEXT "the destination root was not found (a test sentence)"

/* A manifest in test memory of up to 8 entries, from "path" and "path/" (a directory). */
struct fake {
	struct io_manifest m;
	struct io_entry e[8];
	char path[8][64];
};

static const struct io_manifest *tm_make(struct fake *t, const char *const *paths, size_t n)
{
	size_t i, len;

	assert_true(n <= RCP_ARRAY_SIZE(t->e));
	memset(t, 0, sizeof(*t));
	for (i = 0; i < n; i++) {
		len = strlen(paths[i]);
		assert_true(len > 0 && len < sizeof(t->path[i]));
		memcpy(t->path[i], paths[i], len + 1);
		t->e[i].type = IO_FILE;
		if (t->path[i][len - 1] == '/') {
			t->path[i][len - 1] = '\0';
			t->e[i].type = IO_DIR;
		}
		t->e[i].path = t->path[i];
	}
	t->m.entry = t->e;
	t->m.n = n;
	t->m.cap = n;
	return &t->m;
}

/* The last name of src as a string ("" when it has none of its own). */
static const char *name_of(const char *src, char out[IO_PATH_MAX])
{
	const char *name = NULL;
	size_t n = io__src_name(src, &name);

	assert_non_null(name);
	assert_true(name >= src && name + n <= src + strlen(src));
	memcpy(out, name, n);
	out[n] = '\0';
	return out;
}

/* ---- a source's last name ---- */

static void test_src_name_is_the_last_component(void **state)
{
	char out[IO_PATH_MAX];

	(void)state;
	assert_string_equal(name_of("a/b/file", out), "file");
	assert_string_equal(name_of("file", out), "file");
	assert_string_equal(name_of("/etc", out), "etc");
	assert_string_equal(name_of("./x", out), "x");
	assert_string_equal(name_of("../x", out), "x");
}

/* As rsync reads a source: "dir/" is its contents, so it has no name of its own. */
static void test_src_with_a_trailing_slash_has_no_name_of_its_own(void **state)
{
	const char *src = "a/b/", *name = NULL;

	(void)state;
	assert_int_equal(io__src_name(src, &name), 0);
	assert_ptr_equal(name, src + 4);
	assert_int_equal(io__src_name("a/dir///", &name), 0);
	assert_int_equal(io__src_name("dir/", &name), 0);
	assert_int_equal(io__src_name("a/..b/", &name), 0);
}

static void test_src_without_a_name_of_its_own_has_length_zero(void **state)
{
	static const char *const none[] = {
		"", "/", "//", ".", "..", "./", "../", "dir/.", "dir/..", "dir/./", "/a/b/..//",
	};
	const char *name;
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(none); i++) {
		name = NULL;
		assert_int_equal(io__src_name(none[i], &name), 0);
		assert_non_null(name); /* set even then: a caller may compare 0 bytes at it */
	}
}

static void test_src_names_that_only_start_with_dots_are_names(void **state)
{
	char out[IO_PATH_MAX];

	(void)state;
	assert_string_equal(name_of("...", out), "...");
	assert_string_equal(name_of("a/.hidden", out), ".hidden");
	assert_string_equal(name_of("a/..b", out), "..b");
	assert_string_equal(name_of("a/.b", out), ".b");
}

/* ---- the contents case ---- */

static void test_one_source_without_a_name_is_contents_only(void **state)
{
	const char *const dot[] = {"dir/."}, *const root[] = {"/"}, *const empty[] = {""};
	const char *const slash[] = {"dir/"};

	(void)state;
	assert_true(io_src_contents_only(dot, 1));
	assert_true(io_src_contents_only(root, 1));
	assert_true(io_src_contents_only(empty, 1));
	assert_true(io_src_contents_only(slash, 1));
}

static void test_a_named_source_is_not_contents_only(void **state)
{
	const char *const one[] = {"dir"}, *const two[] = {"a/dir", "x"};

	(void)state;
	assert_false(io_src_contents_only(one, 1));
	assert_false(io_src_contents_only(two, 2));
	assert_false(io_src_contents_only(two, 0));
}

static void test_any_source_without_a_name_makes_the_copy_contents(void **state)
{
	const char *const two[] = {"x", "dir/"}, *const dots[] = {".", ".."};

	(void)state;
	assert_true(io_src_contents_only(two, 2));
	assert_true(io_src_contents_only(dots, 2));
}

/* ---- the names a pull accepts ---- */

static void test_pull_accepts_the_requested_names(void **state)
{
	const char *const src[] = {"far/away/a", "b", "/abs/c"};
	const char *const paths[] = {"a/", "a/f", "a/sub/", "a/sub/g", "b", "c"};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 3, true, tm_make(&t, paths, 6)), 0);
}

static void test_pull_accepts_an_empty_manifest(void **state)
{
	const char *const src[] = {"a"};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 1, false, tm_make(&t, NULL, 0)), 0);
}

static void test_pull_refuses_an_unrequested_top_level_name(void **state)
{
	const char *const src[] = {"a", "b"};
	const char *const paths[] = {"a", "evil", "b"};
	struct fake t;

	(void)state;
	rcp_err_clear();
	assert_int_equal(io_pull_names_check(src, 2, true, tm_make(&t, paths, 3)), -EPROTO);
	assert_string_equal(rcp_err_msg(-EPROTO), "the server sent \"evil\", which was not asked "
						  "for: refusing the whole copy");
}

static void test_pull_refuses_a_name_that_only_shares_a_prefix(void **state)
{
	const char *const src[] = {"dir"};
	const char *const longer[] = {"dirx"}, *const shorter[] = {"di"},
			  *const slashed[] = {"dir"};
	const char *const src_longer[] = {"dirx"};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 1, true, tm_make(&t, longer, 1)), -EPROTO);
	assert_non_null(strstr(rcp_err_msg(-EPROTO), "\"dirx\""));
	assert_int_equal(io_pull_names_check(src, 1, true, tm_make(&t, shorter, 1)), -EPROTO);
	assert_int_equal(io_pull_names_check(src_longer, 1, true, tm_make(&t, slashed, 1)),
			 -EPROTO);
}

static void test_pull_refuses_a_directory_without_r(void **state)
{
	const char *const src[] = {"d"};
	const char *const paths[] = {"d/"};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 1, false, tm_make(&t, paths, 1)), -EPROTO);
	assert_string_equal(rcp_err_msg(-EPROTO),
			    "the server sent the directory \"d\", but -r was not given");
	assert_int_equal(io_pull_names_check(src, 1, true, tm_make(&t, paths, 1)), 0);
}

static void test_pull_of_contents_refuses_a_nested_directory_without_r(void **state)
{
	const char *const src[] = {"dir/."};
	const char *const paths[] = {"f", "g/", "g/h"};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 1, false, tm_make(&t, paths, 3)), -EPROTO);
	assert_non_null(strstr(rcp_err_msg(-EPROTO), "the directory \"g\""));
}

static void test_pull_of_contents_accepts_any_names(void **state)
{
	const char *const src[] = {"dir/."}, *const whole[] = {""};
	const char *const paths[] = {"anything", "else/", "else/x", "..."};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 1, true, tm_make(&t, paths, 4)), 0);
	assert_int_equal(io_pull_names_check(whole, 1, true, tm_make(&t, paths, 4)), 0);
}

static void test_pull_with_one_contents_source_among_several_accepts_any_names(void **state)
{
	/* today's rule: one source asking for contents opens the top level to any name */
	const char *const src[] = {"a", "dir/."};
	const char *const paths[] = {"a", "zzz"};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 2, false, tm_make(&t, paths, 2)), 0);
}

static void test_pull_judges_nested_entries_by_their_top_level_name(void **state)
{
	const char *const src[] = {"a"};
	const char *const paths[] = {"a/", "a/b", "a/not-asked-for-but-inside"};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 1, true, tm_make(&t, paths, 3)), 0);
}

static void test_pull_refusal_escapes_the_name(void **state)
{
	const char *const src[] = {"a"};
	const char *const paths[] = {"\x1b[2J\\x"};
	struct fake t;

	(void)state;
	assert_int_equal(io_pull_names_check(src, 1, true, tm_make(&t, paths, 1)), -EPROTO);
	assert_non_null(strstr(rcp_err_msg(-EPROTO), "\"\\x1b[2J\\x5cx\""));
}

/* ---- top-level entries ---- */

static void test_top_count_counts_paths_without_a_slash(void **state)
{
	const char *const paths[] = {"a/", "a/b", "a/c/", "a/c/d", "e", "f/"};
	struct fake t;

	(void)state;
	assert_int_equal(io_manifest_top_count(tm_make(&t, paths, 6)), 3);
	assert_int_equal(io_manifest_top_count(tm_make(&t, paths, 0)), 0);
}

static void test_one_file_is_one_top_level_entry_that_is_no_directory(void **state)
{
	const char *const file[] = {"f"}, *const dir[] = {"d/", "d/f"};
	const char *const two[] = {"f", "g"}, *const nested[] = {"d/", "d/f", "d/g"};
	struct fake t;

	(void)state;
	assert_true(io_manifest_one_file(tm_make(&t, file, 1)));
	assert_false(io_manifest_one_file(tm_make(&t, dir, 2)));
	assert_false(io_manifest_one_file(tm_make(&t, two, 2)));
	assert_false(io_manifest_one_file(tm_make(&t, nested, 3)));
	assert_false(io_manifest_one_file(tm_make(&t, file, 0)));
}

/* ---- the path to try ---- */

static void assert_dest_path(const char *dst, const char *want)
{
	char out[IO_PATH_MAX];

	assert_int_equal(io_dest_path(dst, out), 0);
	assert_string_equal(out, want);
}

static void test_dest_path_strips_trailing_slashes_but_keeps_the_root(void **state)
{
	(void)state;
	assert_dest_path("dir/", "dir");
	assert_dest_path("a/b///", "a/b");
	assert_dest_path("a//b", "a//b");
	assert_dest_path("/", "/");
	assert_dest_path("///", "/");
	assert_dest_path("x", "x");
}

static void test_empty_destination_is_the_current_directory(void **state)
{
	(void)state;
	assert_dest_path("", ".");
}

static void test_dest_path_refuses_a_destination_too_long(void **state)
{
	static char dst[IO_PATH_MAX + 8], want[IO_PATH_MAX];
	char out[IO_PATH_MAX];

	(void)state;
	memset(want, 'a', IO_PATH_MAX - 1); /* the longest that fits */
	memcpy(dst, want, IO_PATH_MAX);
	assert_dest_path(dst, want);
	strcpy(dst + IO_PATH_MAX - 1, "///"); /* fits once its slashes are stripped */
	assert_dest_path(dst, want);
	strcpy(dst + IO_PATH_MAX - 1, "a");
	memset(out, 'z', sizeof(out));
	assert_int_equal(io_dest_path(dst, out), -ENAMETOOLONG);
	assert_int_equal(out[0], 'z');
	assert_non_null(strstr(rcp_err_msg(-ENAMETOOLONG), "is longer than 4095 bytes"));
}

/* ---- where a copy lands ---- */

enum { DIRS = 0, ONE_FILE = 1 }; /* one_file: one top-level file alone, or anything else */

/* A decision that must succeed, from a fresh out-struct. */
static void decide(const char *dst, bool contents, int open_err, bool one_file,
		   enum io_dest_kind kind, const char *dir, const char *name)
{
	struct io_dest d;

	memset(&d, 0x5a, sizeof(d));
	assert_int_equal(io_dest_decide(dst, contents, open_err, one_file, &d), 0);
	assert_int_equal(d.kind, kind);
	assert_string_equal(d.dir, dir);
	assert_string_equal(d.name, name);
}

/* A decision that must fail with want, leaving the out-struct alone. */
static void decide_fails(const char *dst, bool contents, int open_err, bool one_file, int want)
{
	struct io_dest d;

	memset(&d, 0x5a, sizeof(d));
	assert_int_equal(io_dest_decide(dst, contents, open_err, one_file, &d), want);
	assert_int_equal(((unsigned char *)&d)[0], 0x5a);
	assert_int_equal((unsigned char)d.dir[0], 0x5a);
	assert_int_equal((unsigned char)d.name[0], 0x5a);
}

static void test_existing_directory_receives_every_entry_under_its_own_name(void **state)
{
	(void)state;
	decide("d", false, 0, ONE_FILE, IO_DEST_INTO, "d", "");
	decide("d", false, 0, DIRS, IO_DEST_INTO, "d", "");
	decide("d", true, 0, DIRS, IO_DEST_INTO, "d", "");
	decide("/", false, 0, DIRS, IO_DEST_INTO, "/", "");
	decide("", false, 0, DIRS, IO_DEST_INTO, ".", "");
	decide("d/", false, 0, DIRS, IO_DEST_INTO, "d", "");
	decide("a/d//", false, 0, DIRS, IO_DEST_INTO, "a/d", "");
}

/*
 * The point of rsync's rule: a directory lands under the same name whether
 * dst existed or not. The first run makes new (MKDIR "new" in "."), and
 * new/dir in it; the run again finds new (INTO "new"), and new/dir in it.
 */
static void test_a_directory_lands_under_its_own_name_whether_dst_existed_or_not(void **state)
{
	(void)state;
	decide("new", false, -ENOENT, DIRS, IO_DEST_MKDIR, ".", "new");
	decide("new", false, 0, DIRS, IO_DEST_INTO, "new", "");
	decide("a/b/new", false, -ENOENT, DIRS, IO_DEST_MKDIR, "a/b", "new");
	decide("a/b/new", false, 0, DIRS, IO_DEST_INTO, "a/b/new", "");
}

static void test_several_sources_to_a_missing_destination_make_it(void **state)
{
	(void)state;
	decide("new", false, -ENOENT, DIRS, IO_DEST_MKDIR, ".", "new");
	decide("x/y/new/", false, -ENOENT, DIRS, IO_DEST_MKDIR, "x/y", "new");
}

static void test_one_file_to_a_missing_name_is_created_as_it(void **state)
{
	(void)state;
	decide("new", false, -ENOENT, ONE_FILE, IO_DEST_RENAME, ".", "new");
	decide("a/b/new", false, -ENOENT, ONE_FILE, IO_DEST_RENAME, "a/b", "new");
}

static void test_one_file_replaces_a_file_destination(void **state)
{
	(void)state;
	decide("file", false, -ENOTDIR, ONE_FILE, IO_DEST_RENAME, ".", "file");
	decide("a/file", false, -ENOTDIR, ONE_FILE, IO_DEST_RENAME, "a", "file");
}

static void test_a_trailing_slash_on_dst_makes_a_directory_even_for_one_file(void **state)
{
	(void)state;
	decide("a/new/", false, -ENOENT, ONE_FILE, IO_DEST_MKDIR, "a", "new");
	decide("new//", false, -ENOENT, ONE_FILE, IO_DEST_MKDIR, ".", "new");
	decide_fails("file/", false, -ENOTDIR, ONE_FILE, -ENOTDIR);
}

static void test_contents_to_a_new_name_make_it_as_a_directory(void **state)
{
	(void)state;
	decide("new", true, -ENOENT, ONE_FILE, IO_DEST_MKDIR, ".",
	       "new"); /* dir/ holding one file */
	decide("x/y/new", true, -ENOENT, DIRS, IO_DEST_MKDIR, "x/y", "new");
	decide("a/new//", true, -ENOENT, DIRS, IO_DEST_MKDIR, "a", "new");
}

static void test_only_one_file_may_land_on_a_non_directory(void **state)
{
	(void)state;
	decide_fails("file", true, -ENOTDIR, ONE_FILE, -ENOTDIR);
	decide_fails("file", false, -ENOTDIR, DIRS, -ENOTDIR);
	assert_string_equal(rcp_err_msg(-ENOTDIR),
			    "the destination \"file\" is not a directory, which it must be to "
			    "receive a directory, contents or several sources");
	decide_fails("a/file/", true, -ENOTDIR, DIRS,
		     -ENOTDIR); /* the sentence names dst as given */
	assert_non_null(strstr(rcp_err_msg(-ENOTDIR), "\"a/file/\""));
}

static void test_the_refusal_escapes_the_destination(void **state)
{
	(void)state;
	decide_fails("n\x1b", false, -ENOTDIR, DIRS, -ENOTDIR);
	assert_non_null(strstr(rcp_err_msg(-ENOTDIR), "\"n\\x1b\""));
}

static void test_other_open_errors_are_returned_as_they_are(void **state)
{
	static const int errs[] = {-EACCES, -ELOOP, -EINVAL, -EXDEV, -ENOMEM, -EIO};
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(errs); i++) {
		decide_fails("new", false, errs[i], ONE_FILE, errs[i]);
		decide_fails("new", true, errs[i], DIRS, errs[i]);
	}
}

static void test_destination_under_the_root_lands_in_the_root(void **state)
{
	(void)state;
	decide("/new", false, -ENOENT, ONE_FILE, IO_DEST_RENAME, "/", "new");
	decide("//new", false, -ENOENT, ONE_FILE, IO_DEST_RENAME, "/", "new");
	decide("/new", true, -ENOENT, DIRS, IO_DEST_MKDIR, "/", "new");
}

static void test_only_the_last_slash_is_cut_from_the_parent(void **state)
{
	(void)state;
	decide("a//new", false, -ENOENT, ONE_FILE, IO_DEST_RENAME, "a/", "new");
	decide("./new", false, -ENOENT, ONE_FILE, IO_DEST_RENAME, ".", "new");
	decide("../new", false, -ENOENT, DIRS, IO_DEST_MKDIR, "..", "new");
}

static void test_destination_without_a_name_keeps_the_open_error(void **state)
{
	static const char *const none[] = {"", "/", "//", ".", "..", "a/.", "a/..", "a/../", "./"};
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(none); i++) {
		rcp_err(-ENOENT, ERR_ENOENT_TEXT);
		decide_fails(none[i], false, -ENOENT, ONE_FILE, -ENOENT);
		assert_string_equal(rcp_err_msg(-ENOENT), ERR_ENOENT_TEXT);
		decide_fails(none[i], true, -ENOENT, DIRS, -ENOENT);
		decide_fails(none[i], false, -ENOTDIR, ONE_FILE, -ENOTDIR);
		decide_fails(none[i], true, -ENOTDIR, DIRS, -ENOTDIR);
	}
}

static void test_a_decision_forgets_the_expected_open_failure(void **state)
{
	(void)state;
	rcp_err(-ENOENT, ERR_ENOENT_TEXT);
	decide("new", false, -ENOENT, ONE_FILE, IO_DEST_RENAME, ".", "new");
	assert_string_not_equal(rcp_err_msg(-ENOENT), ERR_ENOENT_TEXT);
	rcp_err(-ENOENT, ERR_ENOENT_TEXT);
	decide("new", true, -ENOENT, DIRS, IO_DEST_MKDIR, ".", "new");
	assert_string_not_equal(rcp_err_msg(-ENOENT), ERR_ENOENT_TEXT);
	rcp_err(-EACCES, "kept");
	decide_fails("new", false, -EACCES, ONE_FILE, -EACCES);
	assert_string_equal(rcp_err_msg(-EACCES), "kept");
}

static void test_decision_refuses_a_destination_too_long(void **state)
{
	static char dst[IO_PATH_MAX + 1];

	(void)state;
	memset(dst, 'a', IO_PATH_MAX);
	dst[IO_PATH_MAX] = '\0';
	decide_fails(dst, false, -ENOENT, ONE_FILE, -ENAMETOOLONG);
	decide_fails(dst, false, 0, ONE_FILE, -ENAMETOOLONG);
	dst[IO_PATH_MAX - 1] = '\0';
	decide(dst, false, 0, ONE_FILE, IO_DEST_INTO, dst, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_src_name_is_the_last_component),
		cmocka_unit_test(test_src_with_a_trailing_slash_has_no_name_of_its_own),
		cmocka_unit_test(test_src_without_a_name_of_its_own_has_length_zero),
		cmocka_unit_test(test_src_names_that_only_start_with_dots_are_names),
		cmocka_unit_test(test_one_source_without_a_name_is_contents_only),
		cmocka_unit_test(test_a_named_source_is_not_contents_only),
		cmocka_unit_test(test_any_source_without_a_name_makes_the_copy_contents),
		cmocka_unit_test(test_pull_accepts_the_requested_names),
		cmocka_unit_test(test_pull_accepts_an_empty_manifest),
		cmocka_unit_test(test_pull_refuses_an_unrequested_top_level_name),
		cmocka_unit_test(test_pull_refuses_a_name_that_only_shares_a_prefix),
		cmocka_unit_test(test_pull_refuses_a_directory_without_r),
		cmocka_unit_test(test_pull_of_contents_refuses_a_nested_directory_without_r),
		cmocka_unit_test(test_pull_of_contents_accepts_any_names),
		cmocka_unit_test(
			test_pull_with_one_contents_source_among_several_accepts_any_names),
		cmocka_unit_test(test_pull_judges_nested_entries_by_their_top_level_name),
		cmocka_unit_test(test_pull_refusal_escapes_the_name),
		cmocka_unit_test(test_top_count_counts_paths_without_a_slash),
		cmocka_unit_test(test_one_file_is_one_top_level_entry_that_is_no_directory),
		cmocka_unit_test(test_dest_path_strips_trailing_slashes_but_keeps_the_root),
		cmocka_unit_test(test_empty_destination_is_the_current_directory),
		cmocka_unit_test(test_dest_path_refuses_a_destination_too_long),
		cmocka_unit_test(test_existing_directory_receives_every_entry_under_its_own_name),
		cmocka_unit_test(
			test_a_directory_lands_under_its_own_name_whether_dst_existed_or_not),
		cmocka_unit_test(test_several_sources_to_a_missing_destination_make_it),
		cmocka_unit_test(test_one_file_to_a_missing_name_is_created_as_it),
		cmocka_unit_test(test_one_file_replaces_a_file_destination),
		cmocka_unit_test(test_a_trailing_slash_on_dst_makes_a_directory_even_for_one_file),
		cmocka_unit_test(test_contents_to_a_new_name_make_it_as_a_directory),
		cmocka_unit_test(test_only_one_file_may_land_on_a_non_directory),
		cmocka_unit_test(test_the_refusal_escapes_the_destination),
		cmocka_unit_test(test_other_open_errors_are_returned_as_they_are),
		cmocka_unit_test(test_destination_under_the_root_lands_in_the_root),
		cmocka_unit_test(test_only_the_last_slash_is_cut_from_the_parent),
		cmocka_unit_test(test_destination_without_a_name_keeps_the_open_error),
		cmocka_unit_test(test_a_decision_forgets_the_expected_open_failure),
		cmocka_unit_test(test_decision_refuses_a_destination_too_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
