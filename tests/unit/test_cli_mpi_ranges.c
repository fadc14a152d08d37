/*
 * test_cli_mpi_ranges.c - railcp-mpi's balance of files and byte ranges
 * (cli/mpi_ranges.c): a file larger than its share cut at chunk boundaries
 * and covered exactly once (one chunk each when the share is less), files that fit and files that
 * may not be cut left whole, every rank within one chunk of the share on sizes from 1 byte to 1 GiB
 * (where whole files leave one rank three times the others), few cuts, a walked tree's dense file
 * cut and its sparse one not, and no ranks or no chunk refused; each rank's share of a cut file
 * as an entry of its ranges (cli/mpi_land.c), merged where they meet, and the list of cut files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/mpi.h"
#include "common/common.h"
#include "test_io_tree.h"

#define KIB 1024u
#define MIB (1024ull * 1024)

/* Each item's pieces cover it once, from 0 up, cut at multiples of chunk; load agrees. */
static void pieces_check(const struct cli_mpi_piece *p, size_t n_p, const uint64_t *bytes, size_t n,
			 unsigned n_ranks, uint32_t chunk, const uint64_t *load)
{
	uint64_t *next = calloc(n ? n : 1, sizeof(*next)), *got = calloc(n_ranks, sizeof(*got));
	size_t k;

	assert_non_null(next);
	assert_non_null(got);
	for (k = 0; k < n_p; k++) {
		assert_true(p[k].item < n);
		assert_true(p[k].owner < n_ranks);
		assert_int_equal(p[k].off, next[p[k].item]);
		assert_int_equal(p[k].off % chunk, 0);
		next[p[k].item] += p[k].len;
		got[p[k].owner] += p[k].len;
	}
	for (k = 0; k < n; k++)
		assert_int_equal(next[k], bytes[k]);
	for (k = 0; k < n_ranks; k++)
		assert_int_equal(got[k], load[k]);
	free(next);
	free(got);
}

static void test_a_file_larger_than_its_share_is_cut_at_chunks(void **state)
{
	const uint64_t bytes[] = {100 * KIB};
	const bool cut[] = {true};
	struct cli_mpi_piece *p;
	uint64_t load[4];
	size_t n, k;

	(void)state;
	assert_int_equal(cli_mpi_split(bytes, cut, 1, 4, KIB, &p, &n, load), 0);
	pieces_check(p, n, bytes, 1, 4, KIB, load);
	assert_int_equal(n, 4);
	for (k = 0; k < 4; k++) {
		assert_int_equal(p[k].len, 25 * KIB);
		assert_int_equal(p[k].owner, k);
		assert_int_equal(load[k], 25 * KIB);
	}
	free(p);
}

static void test_a_share_below_a_chunk_gets_one_chunk(void **state)
{
	const uint64_t bytes[] = {3 * KIB + 100};
	const bool cut[] = {true};
	struct cli_mpi_piece *p;
	uint64_t load[4];
	size_t n;

	(void)state;
	assert_int_equal(cli_mpi_split(bytes, cut, 1, 4, KIB, &p, &n, load), 0);
	pieces_check(p, n, bytes, 1, 4, KIB, load);
	assert_int_equal(n, 4);
	assert_int_equal(load[0], KIB);
	assert_int_equal(load[1], KIB);
	assert_int_equal(load[2], KIB);
	assert_int_equal(load[3], 100);
	free(p);
}

static void test_files_that_fit_their_share_are_not_cut(void **state)
{
	/* not whole chunks: the room the third one finds is its size, but not whole chunks */
	const uint64_t bytes[] = {10 * KIB + 300, 0, 10 * KIB + 300,
				  10 * KIB + 300, 0, 10 * KIB + 300};
	const bool cut[] = {true, true, true, true, true, true};
	struct cli_mpi_piece *p;
	uint64_t load[2];
	size_t n, k;

	(void)state;
	assert_int_equal(cli_mpi_split(bytes, cut, 6, 2, KIB, &p, &n, load), 0);
	pieces_check(p, n, bytes, 6, 2, KIB, load);
	assert_int_equal(n, 6); /* one piece each, the empty files too */
	for (k = 0; k < n; k++)
		assert_int_equal(p[k].len, bytes[p[k].item]);
	assert_int_equal(load[0], 20 * KIB + 600);
	assert_int_equal(load[1], 20 * KIB + 600);
	free(p);
}

static void test_a_file_that_may_not_be_cut_travels_whole(void **state)
{
	const uint64_t bytes[] = {100 * KIB, 1};
	struct cli_mpi_piece *p;
	uint64_t load[4];
	size_t n;

	(void)state;
	assert_int_equal(cli_mpi_split(bytes, NULL, 2, 4, KIB, &p, &n, load), 0);
	pieces_check(p, n, bytes, 2, 4, KIB, load);
	assert_int_equal(n, 2);
	assert_int_equal(load[0], 100 * KIB);
	assert_int_equal(load[1], 1);
	free(p);
}

/* Sizes from 1 byte to 2^max_shift, as many of each power of two (log-uniform). */
static void sizes_fill(uint64_t *bytes, size_t n, unsigned max_shift, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		bytes[i] = (uint64_t)1 << (seed >> 16) % (max_shift + 1);
		seed = seed * 1103515245u + 12345u;
		bytes[i] += (seed >> 8) % bytes[i]; /* between the powers too */
	}
}

static void test_every_rank_ends_within_a_chunk_of_its_share(void **state)
{
	enum { N = 60, R = 7 }; /* few enough that the largest are cut */
	static uint64_t bytes[N];
	static bool cut[N];
	struct cli_mpi_piece *p;
	uint64_t load[R], total = 0, share;
	size_t n, k;
	unsigned seed;

	(void)state;
	for (seed = 1; seed <= 5; seed++) {
		sizes_fill(bytes, N, 30, seed); /* 1 B to 1 GiB */
		for (k = 0, total = 0; k < N; k++) {
			cut[k] = true;
			total += bytes[k];
		}
		share = (total + R - 1) / R;
		assert_int_equal(cli_mpi_split(bytes, cut, N, R, (uint32_t)MIB, &p, &n, load), 0);
		pieces_check(p, n, bytes, N, R, (uint32_t)MIB, load);
		assert_true(n > N);	     /* some were cut */
		assert_true(n <= N + 2 * R); /* few */
		for (k = 0; k < R; k++) {
			assert_true(load[k] + MIB >= share);
			assert_true(load[k] <= share + MIB);
		}
		free(p);
	}
}

static void test_one_big_file_no_longer_holds_one_rank(void **state)
{
	enum { N = 1001, R = 4 };
	static uint64_t bytes[N];
	static bool cut[N];
	unsigned owner[N];
	struct cli_mpi_piece *p;
	uint64_t load[R], lo = UINT64_MAX, hi = 0;
	size_t n, k;

	(void)state;
	for (k = 0; k < N; k++) {
		bytes[k] = k ? MIB : 1024 * MIB; /* 1 GiB beside a thousand 1 MiB files */
		cut[k] = true;
	}
	/* Whole files: the big one's rank has three times the others' bytes. */
	assert_int_equal(cli_mpi_balance(bytes, N, R, owner, load), 0);
	for (k = 0; k < R; k++) {
		lo = load[k] < lo ? load[k] : lo;
		hi = load[k] > hi ? load[k] : hi;
	}
	assert_true(hi > 3 * lo);
	assert_int_equal(cli_mpi_split(bytes, cut, N, R, 256 * KIB, &p, &n, load), 0);
	pieces_check(p, n, bytes, N, R, 256 * KIB, load);
	for (k = 0; k < R; k++)
		assert_int_equal(load[k], 2024 * MIB / R);
	free(p);
}

/* The pieces of entry i of m. */
static size_t pieces_of(const struct cli_mpi_piece *p, size_t n, size_t i, uint64_t *bytes_out)
{
	size_t k, c = 0;

	*bytes_out = 0;
	for (k = 0; k < n; k++)
		if (p[k].item == i) {
			c++;
			*bytes_out += p[k].len;
		}
	return c;
}

static void test_a_dense_file_is_cut_and_a_sparse_one_is_not(void **state)
{
	static char big[64 * KIB];
	struct io_manifest *m = NULL;
	char base[4096], top[4096];
	const char *src[1] = {top};
	struct cli_mpi_piece *p;
	uint64_t load[3], b;
	size_t n, i, k;

	(void)state;
	t_mkdtemp(base);
	t_tree(base);
	memset(big, 'x', sizeof(big));
	t_write(base, "top/big", big, sizeof(big), 0644);
	t_path(top, base, "top");
	assert_int_equal(io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(cli_mpi_assign_ranges(m, 3, 4 * KIB, &p, &n, load), 0);
	assert_int_equal(load[0] + load[1] + load[2], m->data_bytes);
	for (i = 0; i < m->n; i++) {
		const struct io_entry *e = &m->entry[i];
		size_t c = pieces_of(p, n, i, &b);

		if (e->type == IO_DIR) {
			assert_int_equal(c, 0);
			continue;
		}
		assert_int_equal(b, e->type == IO_FILE ? e->data_bytes : 0);
		if (!strcmp(e->path, "top/big"))
			assert_true(c >= 2);
		else
			assert_int_equal(c, 1); /* the sparse file too, larger than its room */
	}
	for (k = 0; k < n; k++)
		assert_int_equal(p[k].off % (4 * KIB), 0);
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

/* Rank r's entry of path in its share (NULL: none). */
static const struct io_entry *share_entry(const struct io_manifest *m, const char *path)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->entry[i].path, path))
			return &m->entry[i];
	return NULL;
}

static void
test_each_share_carries_its_ranges_of_a_cut_file_and_the_list_names_it_whole(void **state)
{
	static char big[64 * KIB];
	struct io_manifest *m = NULL, *share, *back, *split = NULL;
	char base[4096], top[4096];
	const char *src[1] = {top};
	struct cli_mpi_piece *p;
	uint64_t load[3], covered = 0;
	size_t n, r, i, starts = 0, len;
	void *buf;

	(void)state;
	t_mkdtemp(base);
	t_tree(base);
	memset(big, 'x', sizeof(big));
	t_write(base, "top/sub/big", big, sizeof(big), 0644);
	t_path(top, base, "top");
	assert_int_equal(io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(cli_mpi_assign_ranges(m, 3, 4 * KIB, &p, &n, load), 0);
	for (r = 0; r < 3; r++) {
		const struct io_entry *e;

		assert_int_equal(cli_mpi_share_pieces(m, p, n, (unsigned)r, NULL, &share), 0);
		assert_int_equal(share->data_bytes, load[r]);
		assert_non_null(share_entry(share, "top/sub")); /* every directory, every rank */
		/* packed for the scatter and back: the ranges travel */
		assert_int_equal(cli_mpi_pack(share, &buf, &len), 0);
		assert_int_equal(cli_mpi_unpack(buf, len, &back), 0);
		free(buf);
		if ((e = share_entry(back, "top/sub/big")) != NULL) {
			assert_true(e->range);
			assert_int_equal(e->size, sizeof(big));
			for (i = 0; i < e->n_ext; i++) {
				assert_int_equal(e->ext[i].off % (4 * KIB), 0);
				covered += e->ext[i].len;
			}
		}
		for (i = 0; i < back->n; i++) /* nothing else is cut */
			assert_true(!back->entry[i].range ||
				    !strcmp(back->entry[i].path, "top/sub/big"));
		starts += e && e->ext[0].off == 0;
		assert_int_equal(cli_mpi_ranges_later(back), e && e->ext[0].off != 0);
		io_manifest_destroy(share);
		io_manifest_destroy(back);
	}
	assert_int_equal(covered, sizeof(big));
	assert_int_equal(starts, 1); /* the cut file counts once */
	assert_int_equal(cli_mpi_split_list(m, p, n, &split), 0);
	assert_int_equal(split->n, 3); /* top, top/sub and the cut file, whole */
	assert_int_equal(cli_mpi_split_files(split), 1);
	assert_false(split->entry[2].range);
	assert_string_equal(split->entry[2].path, "top/sub/big");
	assert_int_equal(split->entry[2].data_bytes, sizeof(big));
	io_manifest_destroy(split);
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

static void test_a_rank_s_pieces_of_a_file_that_meet_are_one_range(void **state)
{
	struct io_extent x = {0, 64 * KIB};
	struct io_entry e = {.path = "f",
			     .type = IO_FILE,
			     .mode = 0644,
			     .size = 64 * KIB,
			     .ext = &x,
			     .n_ext = 1,
			     .data_bytes = 64 * KIB};
	struct io_manifest m = {.entry = &e, .n = 1, .n_files = 1, .data_bytes = 64 * KIB};
	const struct cli_mpi_piece p[] = {{0, 48 * KIB, 16 * KIB, 0},
					  {0, 0, 16 * KIB, 0},
					  {0, 16 * KIB, 16 * KIB, 1},
					  {0, 32 * KIB, 16 * KIB, 0}};
	struct io_manifest *share = NULL;

	(void)state;
	assert_int_equal(cli_mpi_share_pieces(&m, p, 4, 0, NULL, &share), 0);
	assert_int_equal(share->n, 1);
	assert_true(share->entry[0].range);
	assert_int_equal(share->entry[0].n_ext, 2);
	assert_int_equal(share->entry[0].ext[0].off, 0);
	assert_int_equal(share->entry[0].ext[0].len, 16 * KIB);
	assert_int_equal(share->entry[0].ext[1].off, 32 * KIB);
	assert_int_equal(share->entry[0].ext[1].len, 32 * KIB);
	assert_int_equal(share->data_bytes, 48 * KIB);
	io_manifest_destroy(share);
}

static void test_a_share_s_ranges_come_right_after_its_directories(void **state)
{
	struct io_extent xa = {0, 4 * KIB}, xb = {0, 64 * KIB};
	struct io_entry e[3] = {
		{.path = "d", .type = IO_DIR, .mode = 0755},
		{.path = "d/a",
		 .type = IO_FILE,
		 .mode = 0644,
		 .size = 4 * KIB,
		 .ext = &xa,
		 .n_ext = 1,
		 .data_bytes = 4 * KIB},
		{.path = "d/b",
		 .type = IO_FILE,
		 .mode = 0644,
		 .size = 64 * KIB,
		 .ext = &xb,
		 .n_ext = 1,
		 .data_bytes = 64 * KIB},
	};
	struct io_manifest m = {.entry = e, .n = 3, .n_files = 2, .data_bytes = 68 * KIB};
	/* d/a whole on rank 0, d/b cut: its first half on rank 0, the rest on rank 1 */
	const struct cli_mpi_piece p[] = {
		{1, 0, 4 * KIB, 0}, {2, 0, 32 * KIB, 0}, {2, 32 * KIB, 32 * KIB, 1}};
	struct io_manifest *share = NULL;

	(void)state;
	assert_int_equal(cli_mpi_share_pieces(&m, p, 3, 0, NULL, &share), 0);
	assert_int_equal(share->n, 3);
	/* the range first after the directory, though walked after d/a: sent at the start */
	assert_string_equal(share->entry[0].path, "d");
	assert_string_equal(share->entry[1].path, "d/b");
	assert_true(share->entry[1].range);
	assert_string_equal(share->entry[2].path, "d/a");
	assert_false(share->entry[2].range);
	assert_int_equal(share->data_bytes, 36 * KIB);
	io_manifest_destroy(share);
}

static void test_no_ranks_or_no_chunk_is_refused(void **state)
{
	const uint64_t bytes[] = {1};
	struct cli_mpi_piece *p = NULL;
	uint64_t load[1];
	size_t n = 7;

	(void)state;
	assert_int_equal(cli_mpi_split(bytes, NULL, 1, 0, KIB, &p, &n, load), -EINVAL);
	assert_int_equal(cli_mpi_split(bytes, NULL, 1, 1, 0, &p, &n, load), -EINVAL);
	assert_null(p);
	assert_int_equal(n, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_file_larger_than_its_share_is_cut_at_chunks),
		cmocka_unit_test(test_a_share_below_a_chunk_gets_one_chunk),
		cmocka_unit_test(test_files_that_fit_their_share_are_not_cut),
		cmocka_unit_test(test_a_file_that_may_not_be_cut_travels_whole),
		cmocka_unit_test(test_every_rank_ends_within_a_chunk_of_its_share),
		cmocka_unit_test(test_one_big_file_no_longer_holds_one_rank),
		cmocka_unit_test(test_a_dense_file_is_cut_and_a_sparse_one_is_not),
		cmocka_unit_test(
			test_each_share_carries_its_ranges_of_a_cut_file_and_the_list_names_it_whole),
		cmocka_unit_test(test_a_rank_s_pieces_of_a_file_that_meet_are_one_range),
		cmocka_unit_test(test_a_share_s_ranges_come_right_after_its_directories),
		cmocka_unit_test(test_no_ranks_or_no_chunk_is_refused),
	};

	rcp_log_set_level(RCP_LOG_SILENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
