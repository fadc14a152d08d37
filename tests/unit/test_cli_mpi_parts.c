/*
 * test_cli_mpi_parts.c - a railcp-mpi rank's share cut into consecutive
 * sessions (cli/mpi_parts.c), with the per-session cap made small: each part
 * within the cap's entries and chunks and a valid list on its own (every
 * entry's directories before it: it decodes), every file in exactly one
 * part and every directory in one at least (an empty one too), a share that
 * fits left as one part, a file of more chunks than the cap alone in its
 * part, the parts packed and read back one at a time, a cut-short pack
 * refused, a share of long paths cut by the memory its parts take to
 * decode (a lowered limit), the chunk cap apart from the entry cap, a
 * share of many parts cut in time of the share, and
 * the test-only cap read from RAILCP_TEST_SESSION_ENTRIES.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/mpi.h"
#include "common/common.h"
#include "io/io_int.h"
#include "test_io_tree.h"

#include <errno.h>

#define KIB 1024u
#define N_FILES 21 /* a/ 12, a/b/ 5, e/big and e/s0-s2 */
#define N_DIRS 6   /* top, a, a/b, c, c/d, e */
/* A session's caps of max entries and max chunks, and a server's memory. */
#define CAPS(max)                                                                                  \
	((struct cli_mpi_caps){.entries = (max), .chunks = (max), .memory = IO_MANIFEST_MAX_MEMORY})

static void dir_make(const char *base, const char *rel)
{
	char p[4096];

	t_path(p, base, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

/*
 * top/ with a/ (12 files), a/b/ (5), c/ and c/d/ (empty), e/big (5 chunks
 * of 1 KiB) and e/s0-s2 (1 byte each); walked.
 */
static struct io_manifest *tree(char base[4096])
{
	static const char big[5 * KIB];
	struct io_manifest *m = NULL;
	char top[4096], rel[64];
	const char *src[1] = {top};
	int i;

	t_mkdtemp(base);
	dir_make(base, "top");
	dir_make(base, "top/a");
	dir_make(base, "top/a/b");
	dir_make(base, "top/c");
	dir_make(base, "top/c/d");
	dir_make(base, "top/e");
	for (i = 0; i < 12; i++) {
		snprintf(rel, sizeof(rel), "top/a/f%02d", i);
		t_write(base, rel, "x", 1, 0644);
	}
	for (i = 0; i < 5; i++) {
		snprintf(rel, sizeof(rel), "top/a/b/g%d", i);
		t_write(base, rel, "yy", 2, 0644);
	}
	t_write(base, "top/e/big", big, sizeof(big), 0644);
	for (i = 0; i < 3; i++) {
		snprintf(rel, sizeof(rel), "top/e/s%d", i);
		t_write(base, rel, "z", 1, 0644);
	}
	t_path(top, base, "top");
	assert_int_equal(io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(m->n, N_FILES + N_DIRS);
	return m;
}

static void tree_remove(const char *base)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	assert_int_equal(system(cmd), 0);
}

/* A part is a list a session takes: it encodes and decodes (each entry's directories first). */
static void part_valid(const struct io_manifest *p)
{
	struct io_manifest *back = NULL;
	size_t len;
	void *buf;

	assert_int_equal(io_manifest_encode(p, &buf, &len), 0);
	assert_int_equal(io_manifest_decode(buf, len, &back), 0);
	assert_int_equal(back->n, p->n);
	io_manifest_destroy(back);
	free(buf);
}

/* How many of parts hold path. */
static size_t holding(struct io_manifest *const *parts, size_t n, const char *path)
{
	size_t k, i, got = 0;

	for (k = 0; k < n; k++)
		for (i = 0; i < parts[k]->n; i++)
			got += !strcmp(parts[k]->entry[i].path, path);
	return got;
}

static void parts_destroy(struct io_manifest **parts, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++)
		io_manifest_destroy(parts[k]);
	free(parts);
}

static void test_a_share_past_the_cap_is_cut_into_valid_parts(void **state)
{
	struct io_manifest *m, **parts;
	uint64_t bytes = 0, files = 0;
	char base[4096];
	size_t n, k, i;

	(void)state;
	m = tree(base);
	assert_int_equal(cli_mpi_parts(m, &CAPS(6), KIB, &parts, &n), 0);
	assert_true(n >= 5); /* 27 entries, 6 a part, directories again in each */
	for (k = 0; k < n; k++) {
		part_valid(parts[k]);
		assert_true(parts[k]->n <= 6);
		assert_true(io_plan_count(parts[k], KIB) <= 6);
		bytes += parts[k]->data_bytes;
		files += parts[k]->n_files;
	}
	assert_int_equal(files, N_FILES);
	assert_int_equal(bytes, m->data_bytes);
	for (i = 0; i < m->n; i++)
		if (m->entry[i].type == IO_DIR)
			assert_true(holding(parts, n, m->entry[i].path) >= 1);
		else
			assert_int_equal(holding(parts, n, m->entry[i].path), 1);
	assert_int_equal(holding(parts, n, "top/c/d"), 1); /* empty, made once */
	parts_destroy(parts, n);
	io_manifest_destroy(m);
	tree_remove(base);
}

static void test_a_share_within_the_cap_is_one_part(void **state)
{
	struct io_manifest *m, **parts;
	char base[4096];
	size_t n, i;

	(void)state;
	m = tree(base);
	assert_int_equal(cli_mpi_parts(m, &CAPS(IO_MANIFEST_MAX_ENTRIES), KIB, &parts, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(parts[0]->n, m->n);
	for (i = 0; i < m->n; i++) {
		assert_string_equal(parts[0]->entry[i].path, m->entry[i].path);
		assert_string_equal(parts[0]->entry[i].src, m->entry[i].src);
	}
	parts_destroy(parts, n);
	io_manifest_destroy(m);
	tree_remove(base);
}

static void test_a_file_of_more_chunks_than_the_cap_goes_alone(void **state)
{
	struct io_manifest *m, **parts;
	char base[4096];
	size_t n, k, i, at = SIZE_MAX;

	(void)state;
	m = tree(base);
	/* 4 entries or chunks a part: e/big's 5 chunks fit none */
	assert_int_equal(cli_mpi_parts(m, &CAPS(4), KIB, &parts, &n), 0);
	for (k = 0; k < n; k++) {
		part_valid(parts[k]);
		for (i = 0; i < parts[k]->n; i++)
			if (!strcmp(parts[k]->entry[i].path, "top/e/big"))
				at = k;
		if (at != k)
			assert_true(parts[k]->n <= 4 && io_plan_count(parts[k], KIB) <= 4);
	}
	assert_true(at < n);
	assert_int_equal(parts[at]->n_files, 1);
	assert_int_equal(holding(parts, n, "top/e/big"), 1);
	parts_destroy(parts, n);
	io_manifest_destroy(m);
	tree_remove(base);
}

static void test_packed_parts_are_read_back_one_at_a_time(void **state)
{
	struct io_manifest *m, **parts, *p;
	const char *at, *end;
	char base[4096];
	size_t n, k = 0, len, i;
	void *buf;

	(void)state;
	m = tree(base);
	assert_int_equal(cli_mpi_parts(m, &CAPS(5), KIB, &parts, &n), 0);
	assert_int_equal(cli_mpi_pack_parts(m, &CAPS(5), KIB, &buf, &len), 0);
	at = buf, end = (const char *)buf + len;
	while (!cli_mpi_unpack_next(&at, end, &p) && p) {
		assert_true(k < n);
		assert_int_equal(p->n, parts[k]->n);
		for (i = 0; i < p->n; i++) {
			assert_string_equal(p->entry[i].path, parts[k]->entry[i].path);
			assert_string_equal(p->entry[i].src, parts[k]->entry[i].src);
			assert_int_equal(p->entry[i].ino, parts[k]->entry[i].ino);
		}
		io_manifest_destroy(p);
		k++;
	}
	assert_int_equal(k, n);
	assert_true(at == end);
	/* cut short: refused, nothing returned */
	at = buf, end = (const char *)buf + len - 1;
	while (!cli_mpi_unpack_next(&at, end, &p) && p)
		io_manifest_destroy(p);
	p = (struct io_manifest *)1;
	assert_int_equal(cli_mpi_unpack_next(&at, end, &p), -EBADMSG);
	free(buf);
	parts_destroy(parts, n);
	io_manifest_destroy(m);
	tree_remove(base);
}

/*
 * A share of MANY files under one directory against a cap of 1 chunk a
 * session, every other file of 2 chunks (over it), the rest of 1: MANY
 * parts, each built from its own entries, each the directory and its
 * file in share order. (Its speed is not asserted here: a scan of the
 * whole share per part, MANY x parts steps, took 14 s of CPU in the
 * release build, building each part from its own entries 0.2 s; time
 * build/release/tests/test_cli_mpi_parts shows it.)
 */
#define MANY 200000
static void test_a_share_of_many_parts_is_cut_one_file_a_part_in_share_order(void **state)
{
	static const struct io_extent one = {0, KIB}, two = {0, 2 * KIB};
	const struct cli_mpi_caps caps = {
		.entries = 1000, .chunks = 1, .memory = IO_MANIFEST_MAX_MEMORY};
	struct io_manifest *m = calloc(1, sizeof(*m)), *p;
	struct io_entry *e;
	const char *at, *end;
	char path[32];
	size_t i, k = 0, len, files = 0;
	void *buf;

	(void)state;
	assert_non_null(m);
	assert_int_equal(io__manifest_add(m, &e), 0);
	e->path = strdup("top"), e->type = IO_DIR, e->mode = 0755;
	for (i = 0; i < MANY; i++) {
		snprintf(path, sizeof(path), "top/f%06zu", i);
		assert_int_equal(io__manifest_add(m, &e), 0);
		e->path = strdup(path), e->type = IO_FILE, e->mode = 0644;
		e->ext = malloc(sizeof(*e->ext));
		assert_non_null(e->path);
		assert_non_null(e->ext);
		*e->ext = i % 2 ? two : one;
		e->n_ext = 1, e->size = e->data_bytes = e->ext->len;
		m->n_files++, m->data_bytes += e->data_bytes;
	}
	assert_int_equal(cli_mpi_pack_parts(m, &caps, KIB, &buf, &len), 0);
	at = buf, end = (const char *)buf + len;
	while (!cli_mpi_unpack_next(&at, end, &p) && p) {
		assert_int_equal(p->n, 2);
		assert_string_equal(p->entry[0].path, "top");
		for (i = 1; i < p->n; i++, files++)
			assert_string_equal(p->entry[i].path, m->entry[1 + files].path);
		io_manifest_destroy(p);
		k++;
	}
	assert_true(at == end);
	assert_int_equal(files, MANY);
	assert_int_equal(k, MANY);
	free(buf);
	io_manifest_destroy(m);
}

/*
 * 40 files of 200-byte names, a session's memory lowered to what about 8
 * of them take decoded (not gigabytes): the share is cut by memory, long
 * before its entry cap, and each part decodes within that memory (the
 * decoder's own count), every file in one part.
 */
static void test_a_share_of_long_paths_is_cut_by_decoded_memory(void **state)
{
	struct cli_mpi_caps caps = CAPS(1000);
	struct io_manifest *m = NULL, **parts;
	char base[4096], top[4096], rel[256];
	const char *src[1] = {top};
	uint64_t files = 0;
	size_t n, k, i, len;
	void *buf;

	(void)state;
	t_mkdtemp(base);
	dir_make(base, "top");
	for (i = 0; i < 40; i++) {
		snprintf(rel, sizeof(rel), "top/%0200zu", i);
		t_write(base, rel, "x", 1, 0644);
	}
	t_path(top, base, "top");
	assert_int_equal(io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	caps.memory = io_manifest_decoded_base(9) + 9 * io_manifest_decoded_cost(&m->entry[1]);
	assert_int_equal(cli_mpi_parts(m, &caps, KIB, &parts, &n), 0);
	for (k = 0; k < n; k++) {
		struct io__decode_ctl ctl = {.max_memory = caps.memory};
		struct io_manifest *back = NULL;

		assert_true(parts[k]->n < caps.entries);
		assert_int_equal(io_manifest_encode(parts[k], &buf, &len), 0);
		assert_int_equal(io__manifest_decode(buf, len, &ctl, &back), 0);
		assert_true(ctl.memory <= caps.memory);
		files += back->n_files;
		io_manifest_destroy(back);
		free(buf);
	}
	assert_int_equal(files, 40);
	assert_true(n >= 5); /* 8 files and the top a part at most */
	parts_destroy(parts, n);
	io_manifest_destroy(m);
	tree_remove(base);
}

/* The chunk cap is its own: a part closes at 3 chunks though 100 entries would fit. */
static void test_the_chunk_cap_is_not_the_entry_cap(void **state)
{
	struct cli_mpi_caps caps = CAPS(100);
	struct io_manifest *m, **parts;
	char base[4096];
	size_t n, k;

	(void)state;
	caps.chunks = 3;
	m = tree(base);
	assert_int_equal(cli_mpi_parts(m, &caps, KIB, &parts, &n), 0);
	assert_true(n >= 7); /* 20 one-chunk files, 3 a part, and big's 5 alone */
	for (k = 0; k < n; k++)
		if (!holding(&parts[k], 1, "top/e/big"))
			assert_true(io_plan_count(parts[k], KIB) <= 3);
	parts_destroy(parts, n);
	io_manifest_destroy(m);
	tree_remove(base);
}

/*
 * The job's directories as the last session's one list: they fit by count
 * and by memory to decode, not by count alone (a list of 6 within 6
 * entries is refused when its decoding would pass the memory cap).
 */
static void test_the_last_sessions_directories_fit_by_count_and_memory(void **state)
{
	struct cli_mpi_caps caps = CAPS(N_DIRS);
	bool keep[N_FILES + N_DIRS];
	struct io_manifest *m;
	uint64_t memory = 0;
	char base[4096];
	size_t i;

	(void)state;
	m = tree(base);
	for (i = 0; i < m->n; i++) {
		keep[i] = m->entry[i].type == IO_DIR;
		memory += keep[i] ? io_manifest_decoded_cost(&m->entry[i]) : 0;
	}
	caps.memory = io_manifest_decoded_base(N_DIRS) + memory;
	assert_true(cli_mpi_list_fits(m, keep, &caps));
	caps.memory--;
	assert_false(cli_mpi_list_fits(m, keep, &caps));
	caps = CAPS(N_DIRS - 1);
	assert_false(cli_mpi_list_fits(m, keep, &caps));
	io_manifest_destroy(m);
	tree_remove(base);
}

static void test_the_cap_is_lowered_only_by_a_valid_test_variable(void **state)
{
	(void)state;
	unsetenv("RAILCP_TEST_SESSION_ENTRIES");
	assert_int_equal(cli_mpi_session_max(), IO_MANIFEST_MAX_ENTRIES);
	setenv("RAILCP_TEST_SESSION_ENTRIES", "16", 1);
	assert_int_equal(cli_mpi_session_max(), 16);
	setenv("RAILCP_TEST_SESSION_ENTRIES", "0", 1);
	assert_int_equal(cli_mpi_session_max(), IO_MANIFEST_MAX_ENTRIES);
	setenv("RAILCP_TEST_SESSION_ENTRIES", "16x", 1);
	assert_int_equal(cli_mpi_session_max(), IO_MANIFEST_MAX_ENTRIES);
	setenv("RAILCP_TEST_SESSION_ENTRIES", "99999999999", 1);
	assert_int_equal(cli_mpi_session_max(), IO_MANIFEST_MAX_ENTRIES);
	unsetenv("RAILCP_TEST_SESSION_ENTRIES");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_share_past_the_cap_is_cut_into_valid_parts),
		cmocka_unit_test(test_a_share_within_the_cap_is_one_part),
		cmocka_unit_test(test_a_file_of_more_chunks_than_the_cap_goes_alone),
		cmocka_unit_test(test_packed_parts_are_read_back_one_at_a_time),
		cmocka_unit_test(test_a_share_of_long_paths_is_cut_by_decoded_memory),
		cmocka_unit_test(test_the_chunk_cap_is_not_the_entry_cap),
		cmocka_unit_test(test_a_share_of_many_parts_is_cut_one_file_a_part_in_share_order),
		cmocka_unit_test(test_the_last_sessions_directories_fit_by_count_and_memory),
		cmocka_unit_test(test_the_cap_is_lowered_only_by_a_valid_test_variable),
	};

	rcp_log_set_level(RCP_LOG_SILENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
