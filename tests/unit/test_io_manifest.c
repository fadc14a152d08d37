/*
 * test_io_manifest.c - the walk of a tree with every kind of entry (and
 * without railcp's temporaries), the naming rule, and the manifest's
 * encoding: a faithful round trip, every truncation refused, the renaming
 * of the single source. Hostile manifests are in test_io_manifest_decode.c,
 * the cost bounds of a peer's list in test_io_manifest_cost.c. Each test
 * runs on one thread, on a scratch tree of its own (test_io_tree.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "io/io.h"
#include "test_io_manifest.h"
#include "test_io_tree.h"

#include <strings.h>
struct fixture {
	char base[4096];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	t_mkdtemp(fx->base);
	t_tree(fx->base);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	t_rm_rf(fx->base);
	free(fx);
	return 0;
}

static struct io_manifest *walk1(const char *base, const char *rel, unsigned flags,
				 const char *as_name)
{
	struct io_manifest *m = NULL;
	char p[4096];
	const char *src[] = {p};

	t_path(p, base, rel);
	assert_int_equal(io_manifest_walk(NULL, src, 1, flags, as_name, &m), 0);
	assert_non_null(m);
	return m;
}

static void test_walk_lists_every_kind_of_entry_parents_first(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top", IO_WALK_RECURSIVE, NULL);
	const struct io_entry *e = m->entry;

	assert_int_equal(m->n, 7); /* the fifo is skipped */
	assert_string_equal(e[0].path, "top");
	assert_int_equal(e[0].type, IO_DIR);
	assert_int_equal(e[0].mode, 0750);
	assert_int_equal(e[0].mtime_ns, T_TOP * 1000000000 + 5);
	assert_string_equal(e[1].path, "top/empty");
	assert_int_equal(e[1].type, IO_FILE);
	assert_int_equal(e[1].size, 0);
	assert_int_equal(e[1].n_ext, 0);
	assert_string_equal(e[2].path, "top/link");
	assert_int_equal(e[2].type, IO_SYMLINK);
	assert_string_equal(e[2].link, "sub/deep.txt");
	assert_int_equal(e[2].size, 12);
	assert_string_equal(e[3].path, "top/sparse");
	assert_int_equal(e[3].size, SPARSE_SIZE);
	assert_int_equal(e[3].n_ext, 2);
	assert_int_equal(e[3].ext[0].off, 0);
	assert_int_equal(e[3].ext[0].len, 4096);
	assert_int_equal(e[3].ext[1].off, SPARSE_FAR);
	assert_int_equal(e[3].ext[1].len, 8192);
	assert_int_equal(e[3].data_bytes, 12288);
	assert_string_equal(e[4].path, "top/sub");
	assert_int_equal(e[4].type, IO_DIR);
	assert_string_equal(e[5].path, "top/sub/deep.txt");
	assert_int_equal(e[5].mode, 0644);
	assert_int_equal(e[5].mtime_ns, T_DEEP * 1000000000 + 123456789);
	assert_int_equal(e[5].ext[0].len, 5);
	assert_string_equal(e[6].path, "top/" ODD_NAME);
	assert_int_equal(e[6].size, 5);
	assert_int_equal(m->n_files, 4);
	assert_int_equal(m->data_bytes, 12288 + 5 + 5);
	assert_non_null(strstr(e[5].src, "/top/sub/deep.txt"));
	io_manifest_destroy(m);
}

static void test_walk_names_a_file_source_by_its_last_name(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top/sub/deep.txt", 0, NULL);

	assert_int_equal(m->n, 1);
	assert_string_equal(m->entry[0].path, "deep.txt");
	io_manifest_destroy(m);
	m = walk1(fx->base, "top/sub", IO_WALK_RECURSIVE, NULL);
	assert_int_equal(m->n, 2);
	assert_string_equal(m->entry[0].path, "sub");
	assert_string_equal(m->entry[1].path, "sub/deep.txt");
	io_manifest_destroy(m);
}

/* As rsync reads a source, a trailing slash is the directory's contents. */
static void test_walk_of_a_trailing_slash_puts_contents_at_the_root(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top/sub/", IO_WALK_RECURSIVE, NULL);

	assert_int_equal(m->n, 1);
	assert_string_equal(m->entry[0].path, "deep.txt");
	io_manifest_destroy(m);
	m = walk1(fx->base, "top/sub//", IO_WALK_RECURSIVE, NULL);
	assert_int_equal(m->n, 1);
	assert_string_equal(m->entry[0].path, "deep.txt");
	io_manifest_destroy(m);
}

static void test_walk_of_dot_puts_contents_at_the_root(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top/sub/.", IO_WALK_RECURSIVE, NULL);

	assert_int_equal(m->n, 1);
	assert_string_equal(m->entry[0].path, "deep.txt");
	io_manifest_destroy(m);
}

static void test_walk_as_name_renames_the_single_source(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top/sub", IO_WALK_RECURSIVE, "new");

	assert_int_equal(m->n, 2);
	assert_string_equal(m->entry[0].path, "new");
	assert_string_equal(m->entry[1].path, "new/deep.txt");
	io_manifest_destroy(m);
}

static void test_walk_refuses_a_directory_without_recursive(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = NULL;
	char p[4096];
	const char *src[] = {p};

	t_path(p, fx->base, "top");
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &m), -EISDIR);
	assert_null(m);
	assert_non_null(strstr(rcp_err_msg(-EISDIR), "-r"));
}

static void test_walk_refuses_two_sources_with_one_name(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = NULL;
	char a[4096], b[4096];
	const char *src[] = {a, b};

	t_path(a, fx->base, "top/sub/deep.txt");
	t_path(b, fx->base, "top/sub/./deep.txt");
	assert_int_equal(io_manifest_walk(NULL, src, 2, 0, NULL, &m), -EEXIST);
	assert_null(m);
	assert_non_null(strstr(rcp_err_msg(-EEXIST), "deep.txt"));
}

static void test_walk_records_a_top_level_symlink_as_a_link(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top/link", IO_WALK_RECURSIVE, NULL);

	assert_int_equal(m->n, 1);
	assert_int_equal(m->entry[0].type, IO_SYMLINK);
	assert_string_equal(m->entry[0].link, "sub/deep.txt");
	io_manifest_destroy(m);
}

static void test_walk_beneath_a_root_stays_inside_it(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = NULL, *bad = NULL;
	struct io_root *root = NULL;
	struct io_rfile *f = NULL;
	char p[4096], q[4096], buf[8];
	const char *src[1];
	uint64_t hash = 0;

	t_path(p, fx->base, "top");
	assert_int_equal(io_root_open(p, 0, &root), 0);
	t_path(p, fx->base, "top/out");
	assert_int_equal(symlink(fx->base, p), 0); /* leads out of the root "top" */
	src[0] = "../top";
	assert_int_equal(io_manifest_walk(root, src, 1, IO_WALK_RECURSIVE, NULL, &bad), -EINVAL);
	src[0] = fx->base;
	assert_int_equal(io_manifest_walk(root, src, 1, IO_WALK_RECURSIVE, NULL, &bad), -EINVAL);
	src[0] = "out/top/empty";
	assert_int_equal(io_manifest_walk(root, src, 1, 0, NULL, &bad), -EXDEV);
	assert_null(bad);
	src[0] = ".";
	assert_int_equal(io_manifest_walk(root, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_string_equal(m->entry[0].path, "empty"); /* the root's contents, at the root */
	io_manifest_destroy(m);
	src[0] = "sub";
	assert_int_equal(io_manifest_walk(root, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(m->n, 2);
	assert_string_equal(m->entry[1].path, "sub/deep.txt");
	assert_string_equal(m->entry[1].src, "sub/deep.txt");
	assert_int_equal(io_rfile_open(root, &m->entry[1], 0, &f), 0);
	assert_int_equal(io_chunk_read(f, 0, 5, buf, &hash), 0);
	assert_memory_equal(buf, "deep\n", 5);
	io_rfile_close(f);
	/* the directory swapped for a symlink out between the walk and the read */
	t_path(p, fx->base, "top/sub");
	t_path(q, fx->base, "top/sub.real");
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(symlink(fx->base, p), 0);
	f = NULL;
	assert_int_equal(io_rfile_open(root, &m->entry[1], 0, &f), -EXDEV);
	assert_null(f);
	io_manifest_destroy(m);
	io_root_close(root);
}

static bool has_tmp_component(const char *path)
{
	const char *c, *slash;

	for (c = path;; c = slash + 1) {
		if (!strncasecmp(c, ".railcp-tmp-", 12))
			return true;
		slash = strchr(c, '/');
		if (!slash)
			return false;
	}
}

static void test_walk_skips_temporary_names(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m, *bad = NULL;
	struct io_root *root = NULL;
	const char *src[1];
	char p[4096];
	size_t i;

	t_write(fx->base, "top/" TMP_A, "half", 4, 0600);
	t_path(p, fx->base, "top/sub/" TMP_B);
	assert_int_equal(symlink("deep.txt", p), 0);
	t_path(p, fx->base, "top/.railcp-tmp-dir");
	assert_int_equal(mkdir(p, 0755), 0);
	t_write(fx->base, "top/.railcp-tmp-dir/inside", "x", 1, 0644);
	t_write(fx->base, "top/x.railcp-tmp-1", "ok", 2, 0644); /* not the prefix: data */
	t_write(fx->base, "top/.RAILCP-TMP-x", "up", 2, 0644);	/* the prefix in another case */
	m = walk1(fx->base, "top", IO_WALK_RECURSIVE, NULL);
	assert_int_equal(m->n, 8); /* the tree's 7 and x.railcp-tmp-1 */
	for (i = 0; i < m->n; i++)
		assert_false(has_tmp_component(m->entry[i].path));
	assert_string_equal(m->entry[m->n - 1].path, "top/x.railcp-tmp-1");
	io_manifest_destroy(m);
	/* a temporary named as the source itself is refused, not sent */
	t_path(p, fx->base, "top/" TMP_A);
	src[0] = p;
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &bad), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), TMP_A ": names that start with "
							   "\".railcp-tmp-\" are reserved"));
	t_path(p, fx->base, "top/.RAILCP-TMP-x"); /* in any case */
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &bad), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), ".RAILCP-TMP-x: names that start with "
						     "\".railcp-tmp-\" are reserved"));
	/* a server's tree, walked for a pull, gives no temporary either */
	t_path(p, fx->base, "top");
	assert_int_equal(io_root_open(p, 0, &root), 0);
	src[0] = ".";
	assert_int_equal(io_manifest_walk(root, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(m->n, 7);
	for (i = 0; i < m->n; i++)
		assert_false(has_tmp_component(m->entry[i].path));
	io_manifest_destroy(m);
	src[0] = TMP_A;
	assert_int_equal(io_manifest_walk(root, src, 1, 0, NULL, &bad), -EINVAL);
	src[0] = "sub/" TMP_B;
	assert_int_equal(io_manifest_walk(root, src, 1, 0, NULL, &bad), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "are reserved for railcp's temporary files"));
	src[0] = ".railcp-tmp-dir/inside"; /* a peer's path through one, too */
	assert_int_equal(io_manifest_walk(root, src, 1, 0, NULL, &bad), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL),
			       "\".railcp-tmp-dir/inside\": the name has a "
			       "component that starts with \".railcp-tmp-\""));
	src[0] = ".Railcp-Tmp-dir/inside";
	assert_int_equal(io_manifest_walk(root, src, 1, 0, NULL, &bad), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL),
			       "\".Railcp-Tmp-dir/inside\": the name has a "
			       "component that starts with \".railcp-tmp-\""));
	assert_null(bad);
	io_root_close(root);
}

static void test_encode_decode_round_trip_keeps_every_field(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top", IO_WALK_RECURSIVE, NULL), *d = NULL;
	const struct io_entry *a, *b;
	size_t len, i;
	void *buf;

	assert_int_equal(io_manifest_encode(m, &buf, &len), 0);
	assert_int_equal(io_manifest_decode(buf, len, &d), 0);
	assert_int_equal(d->n, m->n);
	assert_int_equal(d->data_bytes, m->data_bytes);
	assert_int_equal(d->n_files, m->n_files);
	for (i = 0; i < m->n; i++) {
		a = &m->entry[i];
		b = &d->entry[i];
		assert_string_equal(a->path, b->path);
		assert_null(b->src);
		assert_int_equal(a->type, b->type);
		assert_int_equal(a->mode, b->mode);
		assert_int_equal(a->mtime_ns, b->mtime_ns);
		assert_int_equal(a->size, b->size);
		assert_int_equal(a->n_ext, b->n_ext);
		if (a->n_ext)
			assert_memory_equal(a->ext, b->ext, a->n_ext * sizeof(*a->ext));
		if (a->link)
			assert_string_equal(a->link, b->link);
		else
			assert_null(b->link);
	}
	free(buf);
	io_manifest_destroy(m);
	io_manifest_destroy(d);
}

static void test_decode_refuses_every_truncation(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top", IO_WALK_RECURSIVE, NULL), *d;
	size_t len, cut;
	void *buf;

	assert_int_equal(io_manifest_encode(m, &buf, &len), 0);
	for (cut = 0; cut < len; cut++) {
		d = NULL;
		assert_int_equal(io_manifest_decode(buf, cut, &d), -EBADMSG);
		assert_null(d);
	}
	free(buf);
	io_manifest_destroy(m);
}

static void test_rename_top_renames_the_single_source_and_its_contents(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top", IO_WALK_RECURSIVE, NULL), *two = NULL;
	char a[4096], b[4096];
	const char *src[] = {a, b};

	assert_int_equal(io_manifest_rename_top(m, "new"), 0);
	assert_string_equal(m->entry[0].path, "new");
	assert_string_equal(m->entry[5].path, "new/sub/deep.txt");
	assert_int_equal(io_manifest_rename_top(m, "a/b"), -EINVAL);
	assert_int_equal(io_manifest_rename_top(m, ".."), -EINVAL);
	assert_string_equal(m->entry[5].path, "new/sub/deep.txt");
	t_path(a, fx->base, "top/sub/deep.txt");
	t_path(b, fx->base, "top/empty");
	assert_int_equal(io_manifest_walk(NULL, src, 2, 0, NULL, &two), 0);
	assert_int_equal(io_manifest_rename_top(two, "new"), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "several sources"));
	assert_string_equal(two->entry[0].path, "deep.txt");
	io_manifest_destroy(two);
	io_manifest_destroy(m);
}

/* A pick is a deep copy of the kept entries, its totals theirs (railcp-mpi's shares). */
static void test_pick_copies_the_kept_entries_and_counts_them(void **state)
{
	struct fixture *fx = *state;
	struct io_manifest *m = walk1(fx->base, "top", IO_WALK_RECURSIVE, NULL), *p = NULL;
	bool *keep = calloc(m->n, sizeof(*keep));
	uint64_t files = 0, bytes = 0;
	size_t i, n = 0;

	assert_non_null(keep);
	/* The directories (a receiver needs each kept entry's parents) and every other file. */
	for (i = 0; i < m->n; i++) {
		bool file = m->entry[i].type == IO_FILE;

		keep[i] = !file || i % 2 == 0;
		n += keep[i];
		files += keep[i] && file;
		bytes += keep[i] && file ? m->entry[i].size : 0;
	}
	assert_true(files > 0 && files < m->n_files);
	assert_int_equal(io_manifest_pick(m, keep, &p), 0);
	assert_int_equal(p->n, n);
	assert_int_equal(p->n_files, files);
	assert_int_equal(p->data_bytes, bytes);
	for (i = 0, n = 0; i < m->n; i++)
		if (keep[i]) {
			assert_string_equal(p->entry[n].path, m->entry[i].path);
			assert_ptr_not_equal(p->entry[n].path, m->entry[i].path);
			n++;
		}
	io_manifest_destroy(p);
	assert_int_equal(io_manifest_pick(m, NULL, &p), 0);
	assert_int_equal(p->n, m->n);
	assert_int_equal(p->n_files, m->n_files);
	assert_int_equal(p->data_bytes, m->data_bytes);
	io_manifest_destroy(p);
	io_manifest_destroy(m);
	free(keep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_walk_lists_every_kind_of_entry_parents_first,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_names_a_file_source_by_its_last_name,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_walk_of_a_trailing_slash_puts_contents_at_the_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_of_dot_puts_contents_at_the_root, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_walk_as_name_renames_the_single_source, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_walk_refuses_a_directory_without_recursive,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_refuses_two_sources_with_one_name, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_walk_records_a_top_level_symlink_as_a_link,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_beneath_a_root_stays_inside_it, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_walk_skips_temporary_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pick_copies_the_kept_entries_and_counts_them,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_encode_decode_round_trip_keeps_every_field,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_decode_refuses_every_truncation, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_rename_top_renames_the_single_source_and_its_contents, setup,
			teardown),
	};

	rcp_log_set_level(RCP_LOG_SILENT); /* no notice about the fixture's fifo */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
