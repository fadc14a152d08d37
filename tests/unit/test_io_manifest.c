/*
 * test_io_manifest.c - the walk of a tree with every kind of entry (and
 * without railcp's temporaries), the naming rule, and the manifest's
 * encoding: a faithful round trip, every kind of hostile input (a
 * temporary's name included) refused with a sentence, and a peer's list
 * kept within its cost bounds: names built to collide under the old
 * unkeyed hash checked in a few probes each (probes counted, not time),
 * entry and memory limits refused with a sentence, SipHash-2-4 checked
 * against its published vectors and OpenSSL's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "io/io.h"
#include "test_io_collide.h"
#include "test_io_tree.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
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
	m = walk1(fx->base, "top/sub/", IO_WALK_RECURSIVE, NULL); /* trailing slash ignored */
	assert_int_equal(m->n, 2);
	assert_string_equal(m->entry[0].path, "sub");
	assert_string_equal(m->entry[1].path, "sub/deep.txt");
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

/* What a receiver leaves while it works, or when it is killed: never data. */
#define TMP_A ".railcp-tmp-0123456789abcdef"
#define TMP_B ".railcp-tmp-fedcba9876543210"

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

/* ---- hand-built hostile manifests ---- */

struct mb {
	uint8_t b[16384];
	size_t n;
};

static void mb_u(struct mb *m, uint64_t v, unsigned bytes)
{
	unsigned i;

	for (i = 0; i < bytes; i++)
		m->b[m->n++] = (uint8_t)(v >> (8 * i));
}

static void mb_hdr(struct mb *m, unsigned version, uint64_t count)
{
	m->n = 0;
	memcpy(m->b, "RCPM", 4);
	m->n = 4;
	mb_u(m, version, 2);
	mb_u(m, 0, 2);
	mb_u(m, count, 8);
}

static void mb_entry(struct mb *m, unsigned type, const char *path, size_t plen, uint32_t mode,
		     uint64_t size)
{
	mb_u(m, type, 1);
	mb_u(m, 0, 1);
	mb_u(m, plen, 2);
	mb_u(m, mode, 4);
	mb_u(m, 1000, 8);
	mb_u(m, size, 8);
	memcpy(m->b + m->n, path, plen);
	m->n += plen;
}

static void mb_dir(struct mb *m, const char *path)
{
	mb_entry(m, IO_DIR, path, strlen(path), 0755, 0);
}

/* A file with n extents given as (offset, length) pairs. */
static void mb_file(struct mb *m, const char *path, uint64_t size, unsigned n,
		    const uint64_t *pairs)
{
	unsigned i;

	mb_entry(m, IO_FILE, path, strlen(path), 0644, size);
	mb_u(m, n, 4);
	for (i = 0; i < 2 * n; i++)
		mb_u(m, pairs[i], 8);
}

static void expect_bad(const struct mb *m, int err, const char *words)
{
	struct io_manifest *d = NULL;
	int got = io_manifest_decode(m->b, m->n, &d);

	if (got != err || !strstr(rcp_err_msg(got), words))
		fail_msg("got %d \"%s\", wanted %d with \"%s\"", got, rcp_err_msg(got), err, words);
	assert_null(d);
}

static void expect_good(const struct mb *m, size_t n)
{
	struct io_manifest *d = NULL;

	assert_int_equal(io_manifest_decode(m->b, m->n, &d), 0);
	assert_int_equal(d->n, n);
	io_manifest_destroy(d);
}

static void test_decode_refuses_hostile_names(void **state)
{
	static const struct {
		const char *name;
		size_t len;
		const char *words;
	} bad[] = {
		{"", 0, "is empty"},
		{"/etc/x", 6, "\"/etc/x\" is absolute"},
		{"../x", 4, "\"../x\" has a \"..\" component"},
		{"a/../../x", 9, "has a \"..\" component"},
		{"a/./b", 5, "has a \".\" component"},
		{".", 1, "has a \".\" component"},
		{"a//b", 4, "has an empty component"},
		{"a/", 2, "has an empty component"},
		{"a\0b", 3, "\"a\\x00b\" contains a NUL byte"},
		{"\x1b[31m/x", 7, "\"\\x1b[31m/x\": its directory is not listed"},
	};
	char longname[4200];
	struct mb m;
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(bad); i++) {
		mb_hdr(&m, 1, 1);
		mb_entry(&m, IO_DIR, bad[i].name, bad[i].len, 0755, 0);
		expect_bad(&m, -EBADMSG, bad[i].words);
	}
	memset(longname, 'n', sizeof(longname));
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_DIR, longname, 4096, 0755, 0);
	expect_bad(&m, -EBADMSG, "longer than 4095 bytes");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_DIR, longname, 256, 0755, 0);
	expect_bad(&m, -EBADMSG, "component longer than 255 bytes");
	mb_hdr(&m, 1, 1); /* the limits themselves are fine, and so are odd bytes */
	mb_entry(&m, IO_DIR, longname, 255, 0755, 0);
	expect_good(&m, 1);
	mb_hdr(&m, 1, 1);
	mb_dir(&m, ODD_NAME);
	expect_good(&m, 1);
}

static void test_decode_refuses_temporary_names(void **state)
{
	static const char *const fine[] = {
		"x.railcp-tmp-1",
		".railcp-tmpx",
		".railcp-tmp",
		"a/x.railcp-tmp-1",
	};
	struct mb m;
	size_t i;

	(void)state;
	mb_hdr(&m, 1, 1);
	mb_file(&m, TMP_A, 0, 0, NULL);
	expect_bad(&m, -EBADMSG,
		   "malformed at entry 0: the name \"" TMP_A "\" has a component that starts "
		   "with \".railcp-tmp-\", which is reserved for railcp's temporary files");
	mb_hdr(&m, 1, 1);
	mb_dir(&m, TMP_A);
	expect_bad(&m, -EBADMSG, "the name \"" TMP_A "\" has a component that starts with");
	mb_hdr(&m, 1, 1); /* the prefix alone is reserved too */
	mb_file(&m, ".railcp-tmp-", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "reserved for railcp's temporary files");
	mb_hdr(&m, 1, 2); /* nested: a symlink over another session's temporary */
	mb_dir(&m, "a");
	mb_entry(&m, IO_SYMLINK, "a/" TMP_A, strlen("a/" TMP_A), 0777, 4);
	mb_u(&m, 4, 2);
	memcpy(m.b + m.n, "/etc", 4);
	m.n += 4;
	expect_bad(&m, -EBADMSG,
		   "at entry 1: the name \"a/" TMP_A "\" has a component that starts with");
	mb_hdr(&m, 1, 3); /* in the middle */
	mb_dir(&m, "a");
	mb_dir(&m, "a/" TMP_A);
	mb_file(&m, "a/" TMP_A "/f", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "at entry 1: the name \"a/" TMP_A "\" has a component");
	/* only the prefix at the start of a component is reserved */
	mb_hdr(&m, 1, 1 + RCP_ARRAY_SIZE(fine));
	mb_dir(&m, "a");
	for (i = 0; i < RCP_ARRAY_SIZE(fine); i++)
		mb_file(&m, fine[i], 0, 0, NULL);
	expect_good(&m, 1 + RCP_ARRAY_SIZE(fine));
}

/*
 * Beneath a root on a case-insensitive file system (ext4 casefold, CIFS)
 * ".RAILCP-TMP-x" is railcp's ".railcp-tmp-x": the prefix is reserved in any
 * case, with the same sentence.
 */
static void test_decode_refuses_temporary_names_in_any_case(void **state)
{
	static const char *const bad[] = {
		".RAILCP-TMP-x",
		".Railcp-Tmp-x",
		".railcp-TMP-0123456789abcdef",
		"a/.rAiLcP-tMp-",
	};
	char words[512];
	struct mb m;
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(bad); i++) {
		mb_hdr(&m, 1, bad[i][0] == 'a' ? 2 : 1);
		if (bad[i][0] == 'a')
			mb_dir(&m, "a");
		mb_file(&m, bad[i], 0, 0, NULL);
		snprintf(words, sizeof(words),
			 "the name \"%s\" has a component that starts with \".railcp-tmp-\", "
			 "which is reserved for railcp's temporary files",
			 bad[i]);
		expect_bad(&m, -EBADMSG, words);
	}
}

static void test_decode_refuses_absurd_counts(void **state)
{
	uint64_t ext[2] = {0, 1};
	struct mb m;

	(void)state;
	mb_hdr(&m, 1, 1ull << 40);
	mb_dir(&m, "a");
	expect_bad(&m, -EBADMSG, "claims 1099511627776 entries");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_FILE, "f", 1, 0644, 100);
	mb_u(&m, 0xffffffffu, 4);
	expect_bad(&m, -EBADMSG, "extent count exceeds");
	mb_hdr(&m, 1, 2); /* says two entries, holds one */
	mb_file(&m, "f", 1, 1, ext);
	expect_bad(&m, -EBADMSG, "claims 2 entries");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_FILE, "f", 1, 0644, 1ull << 63);
	mb_u(&m, 0, 4);
	expect_bad(&m, -EBADMSG, "size is impossible");
}

static void test_decode_refuses_bad_extents(void **state)
{
	static const struct {
		uint64_t size;
		unsigned n;
		uint64_t pairs[4];
	} bad[] = {
		{100, 1, {90, 20}},			    /* past the size */
		{100, 1, {101, 0}},			    /* empty, and outside */
		{100, 1, {10, 0}},			    /* empty */
		{100, 2, {50, 10, 10, 10}},		    /* unsorted */
		{100, 2, {10, 20, 25, 10}},		    /* overlapping */
		{UINT64_MAX >> 1, 1, {16, UINT64_MAX - 8}}, /* off + len overflows */
	};
	uint64_t good[4] = {0, 10, 10, 90};
	struct mb m;
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(bad); i++) {
		mb_hdr(&m, 1, 1);
		mb_file(&m, "f", bad[i].size, bad[i].n, bad[i].pairs);
		expect_bad(&m, -EBADMSG, "an extent is empty, unsorted, overlapping or outside");
	}
	mb_hdr(&m, 1, 1); /* adjacent extents that fill the file are fine */
	mb_file(&m, "f", 100, 2, good);
	expect_good(&m, 1);
}

static void test_decode_refuses_bad_structure(void **state)
{
	struct mb m;

	(void)state;
	mb_hdr(&m, 1, 1);
	mb_file(&m, "a/f", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "\"a/f\": its directory is not listed before it");
	mb_hdr(&m, 1, 2);
	mb_file(&m, "a/f", 0, 0, NULL);
	mb_dir(&m, "a");
	expect_bad(&m, -EBADMSG, "its directory is not listed before it");
	mb_hdr(&m, 1, 2); /* a symlink is no directory to write through */
	mb_entry(&m, IO_SYMLINK, "a", 1, 0777, 4);
	mb_u(&m, 4, 2);
	memcpy(m.b + m.n, "/etc", 4);
	m.n += 4;
	mb_file(&m, "a/passwd", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "its directory is not listed before it");
	mb_hdr(&m, 1, 2);
	mb_dir(&m, "a");
	mb_file(&m, "a", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "the same path appears twice");
	mb_hdr(&m, 1, 3);
	mb_dir(&m, "a");
	mb_dir(&m, "a/b");
	mb_file(&m, "a/b/c", 0, 0, NULL);
	expect_good(&m, 3);
}

static void test_decode_refuses_bad_fields(void **state)
{
	struct mb m;

	(void)state;
	mb_hdr(&m, 2, 0);
	expect_bad(&m, -EPROTONOSUPPORT, "version 2");
	mb_hdr(&m, 1, 0);
	m.b[0] = 'X';
	expect_bad(&m, -EBADMSG, "not a railcp manifest");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, 9, "a", 1, 0644, 0);
	expect_bad(&m, -EBADMSG, "type is unknown");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_DIR, "a", 1, 0100755, 0);
	expect_bad(&m, -EBADMSG, "reserved bits");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_DIR, "a", 1, 0755, 7);
	expect_bad(&m, -EBADMSG, "size is impossible");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_SYMLINK, "l", 1, 0777, 3);
	mb_u(&m, 3, 2);
	memcpy(m.b + m.n, "a\0b", 3);
	m.n += 3;
	expect_bad(&m, -EBADMSG, "target contains a NUL");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_SYMLINK, "l", 1, 0777, 5);
	mb_u(&m, 3, 2);
	memcpy(m.b + m.n, "abc", 3);
	m.n += 3;
	expect_bad(&m, -EBADMSG, "target length is wrong");
	mb_hdr(&m, 1, 1);
	mb_dir(&m, "a");
	mb_u(&m, 0, 1);
	expect_bad(&m, -EBADMSG, "1 bytes after its last entry");
	mb_hdr(&m, 1, 0);
	expect_good(&m, 0);
}

/* ---- cost bounds ---- */

static const uint8_t sip_key[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static void test_siphash24_matches_the_published_vectors(void **state)
{
	uint8_t msg[15];
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	/* the SipHash paper, appendix A (15 bytes), and the first of its test vectors */
	assert_int_equal(io__siphash24(sip_key, msg, 15), 0xa129ca6149be45e5ull);
	assert_int_equal(io__siphash24(sip_key, msg, 0), 0x726fdb47dd0e0e31ull);
}

/* OpenSSL's SipHash-2-4 (EVP_MAC "SIPHASH", 8-byte output, little-endian). */
static uint64_t openssl_siphash24(const uint8_t key[16], const uint8_t *p, size_t n)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	size_t size = 8, got = 0;
	OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
			       OSSL_PARAM_END};
	uint8_t out[8];
	uint64_t v = 0;
	int i;

	assert_non_null(ctx);
	assert_int_equal(EVP_MAC_init(ctx, key, 16, params), 1);
	assert_int_equal(EVP_MAC_update(ctx, p, n), 1);
	assert_int_equal(EVP_MAC_final(ctx, out, &got, sizeof(out)), 1);
	assert_int_equal(got, 8);
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	for (i = 7; i >= 0; i--)
		v = v << 8 | out[i];
	return v;
}

static void test_siphash24_agrees_with_openssl_at_every_length(void **state)
{
	uint8_t key[16], msg[80];
	size_t n, i;

	(void)state;
	for (n = 0; n < sizeof(msg); n++) {
		for (i = 0; i < sizeof(key); i++)
			key[i] = (uint8_t)(n * 131 + i * 29 + 7);
		for (i = 0; i < n; i++)
			msg[i] = (uint8_t)(i * 2654435761u >> 13);
		assert_int_equal(io__siphash24(key, msg, n), openssl_siphash24(key, msg, n));
	}
}

#define N_COLLIDE 100000

static void test_decode_checks_names_built_against_the_old_hash_in_few_probes(void **state)
{
	size_t mask = t_old_table_slots(N_COLLIDE) - 1, i, len;
	struct io__decode_ctl ctl = {0};
	char **names = t_collide_names(N_COLLIDE);
	struct io_manifest *m, *d = NULL;
	double avg;
	void *buf;

	(void)state;
	assert_non_null(names);
	/* the attack is real: under the old check every name starts at one slot */
	for (i = 0; i < N_COLLIDE; i++)
		assert_int_equal(t_fnv1a(T_FNV_BASIS, names[i], strlen(names[i])) & mask,
				 T_COLLIDE_TARGET & mask);
	m = t_manifest_of(names, N_COLLIDE);
	assert_non_null(m);
	assert_int_equal(io_manifest_encode(m, &buf, &len), 0);
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), 0);
	assert_int_equal(d->n, N_COLLIDE);
	assert_string_equal(d->entry[N_COLLIDE - 1].path, names[N_COLLIDE - 1]);
	/* one look-up per top-level name; the old check made about N/2 probes each */
	assert_int_equal(ctl.lookups, N_COLLIDE);
	avg = (double)ctl.probes / (double)ctl.lookups;
	print_message("%d names colliding under FNV-1a mod %zu: %.3f probes per look-up, "
		      "longest %llu\n",
		      N_COLLIDE, mask + 1, avg, (unsigned long long)ctl.longest);
	assert_true(avg < 4.0);
	io_manifest_destroy(d);
	io_manifest_destroy(m);
	free(buf);
	t_names_free(names, N_COLLIDE);
}

/*
 * Were the key to leak, names could be aimed at one slot again: the probe
 * limit still refuses the list at the first look-up that would examine
 * more than 512 slots, rather than check it in quadratic time.
 */
static void test_check_refuses_a_run_longer_than_the_probe_limit(void **state)
{
	enum { N = 520 };
	size_t mask = t_old_table_slots(N) - 1, i, len; /* the new table is sized alike */
	struct io_manifest *m, *d = NULL;
	char *names[N], name[16];
	const uint8_t *key;
	unsigned k = 0;
	void *buf;

	(void)state;
	assert_int_equal(io__hash_key(&key), 0);
	for (i = 0; i < N; i++) {
		do
			snprintf(name, sizeof(name), "k%07u", k++);
		while ((io__siphash24(key, name, strlen(name)) & mask) != 0);
		names[i] = strdup(name);
		assert_non_null(names[i]);
	}
	m = t_manifest_of(names, N);
	assert_non_null(m);
	assert_int_equal(io_manifest_encode(m, &buf, &len), 0);
	assert_int_equal(io_manifest_decode(buf, len, &d), -EOVERFLOW);
	assert_null(d);
	assert_non_null(strstr(rcp_err_msg(-EOVERFLOW), "manifest entry 512 \""));
	assert_non_null(strstr(rcp_err_msg(-EOVERFLOW),
			       "more than 512 names share its place in the duplicate check"));
	/* 512 of them are still fine: the limit is on one look-up's slots */
	io_manifest_destroy(m);
	m = t_manifest_of(names, 512);
	assert_non_null(m);
	assert_int_equal(io__manifest_check(m, NULL), 0);
	io_manifest_destroy(m);
	free(buf);
	for (i = 0; i < N; i++)
		free(names[i]);
}

/* n files "f<i>", encoded. */
static void *files_encoded(size_t n, size_t *len_out)
{
	char **names = calloc(n, sizeof(*names));
	struct io_manifest *m;
	void *buf;
	size_t i;

	assert_non_null(names);
	for (i = 0; i < n; i++) {
		names[i] = malloc(16);
		assert_non_null(names[i]);
		snprintf(names[i], 16, "f%zu", i);
	}
	m = t_manifest_of(names, n);
	assert_non_null(m);
	assert_int_equal(io_manifest_encode(m, &buf, len_out), 0);
	io_manifest_destroy(m);
	t_names_free(names, n);
	return buf;
}

static void test_decode_refuses_more_entries_than_the_limit(void **state)
{
	size_t over = IO_MANIFEST_MAX_ENTRIES + 1, len = 16 + over * 24;
	struct io__decode_ctl ctl = {.max_entries = 999};
	struct io_manifest *d = NULL;
	uint8_t *big = calloc(1, len); /* zero pages: only the header is read */
	struct mb hdr;
	void *buf;

	(void)state;
	assert_non_null(big);
	mb_hdr(&hdr, 1, over); /* bytes enough for that many entries, so the limit speaks */
	memcpy(big, hdr.b, hdr.n);
	assert_int_equal(io_manifest_decode(big, len, &d), -EFBIG);
	assert_string_equal(rcp_err_msg(-EFBIG),
			    "the file list has 4194305 entries, more than the 4194304 one copy "
			    "may have: copy the tree in parts");
	assert_null(d);
	free(big);
	/* a real list one entry over a lower limit, and one at it */
	buf = files_encoded(1000, &len);
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "has 1000 entries, more than the 999"));
	assert_null(d);
	ctl.max_entries = 1000;
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), 0);
	assert_int_equal(d->n, 1000);
	/* the check itself, as a walk uses it, holds the same limit */
	ctl.max_entries = 999;
	assert_int_equal(io__manifest_check(d, &ctl), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "more than the 999 one copy may have"));
	ctl.max_entries = 0;
	assert_int_equal(io__manifest_check(d, &ctl), 0);
	io_manifest_destroy(d);
	free(buf);
}

static void test_decode_refuses_more_memory_than_the_limit(void **state)
{
	struct io__decode_ctl ctl = {0};
	struct io_manifest *d = NULL;
	uint64_t need;
	size_t len;
	void *buf = files_encoded(1000, &len);

	(void)state;
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), 0);
	need = ctl.memory;
	/* entries, a name and an extent array each, the table of 2048 slots */
	assert_true(need >= 1000 * (sizeof(struct io_entry) + 32 + 32) + 2048 * 8);
	assert_true(need <= 1000 * (sizeof(struct io_entry) + 32 + 32) + 2048 * 8 + 1024);
	io_manifest_destroy(d);
	d = NULL;
	ctl = (struct io__decode_ctl){.max_memory = need};
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), 0);
	assert_int_equal(ctl.memory, need);
	io_manifest_destroy(d);
	d = NULL;
	ctl.max_memory = need - 1;
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "decoding the file list would take more than "
						    "the 0 MiB of memory one copy may use (at "
						    "entry 999): copy the tree in parts"));
	assert_null(d);
	ctl.max_memory = 1000; /* not even the entries fit: refused before any is read */
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "(at entry 0)"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_walk_lists_every_kind_of_entry_parents_first,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_names_a_file_source_by_its_last_name,
						setup, teardown),
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
		cmocka_unit_test_setup_teardown(test_encode_decode_round_trip_keeps_every_field,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_decode_refuses_every_truncation, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_rename_top_renames_the_single_source_and_its_contents, setup,
			teardown),
		cmocka_unit_test(test_decode_refuses_hostile_names),
		cmocka_unit_test(test_decode_refuses_temporary_names),
		cmocka_unit_test(test_decode_refuses_temporary_names_in_any_case),
		cmocka_unit_test(test_decode_refuses_absurd_counts),
		cmocka_unit_test(test_decode_refuses_bad_extents),
		cmocka_unit_test(test_decode_refuses_bad_structure),
		cmocka_unit_test(test_decode_refuses_bad_fields),
		cmocka_unit_test(test_siphash24_matches_the_published_vectors),
		cmocka_unit_test(test_siphash24_agrees_with_openssl_at_every_length),
		cmocka_unit_test(test_decode_checks_names_built_against_the_old_hash_in_few_probes),
		cmocka_unit_test(test_check_refuses_a_run_longer_than_the_probe_limit),
		cmocka_unit_test(test_decode_refuses_more_entries_than_the_limit),
		cmocka_unit_test(test_decode_refuses_more_memory_than_the_limit),
	};

	rcp_log_set_level(RCP_LOG_SILENT); /* no notice about the fixture's fifo */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
