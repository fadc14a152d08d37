/*
 * test_cli_mpi_ranges.c - railcp-mpi's balance of files and byte ranges
 * (cli/mpi_ranges.c): a file larger than its share cut at chunk boundaries
 * and covered exactly once (one chunk each when the share is less), files that fit and files that
 * may not be cut left whole, every rank within one chunk of the share on sizes from 1 byte to 1 GiB
 * (where whole files leave one rank three times the others), few cuts, a walked tree's dense file
 * cut and its sparse one not, and no ranks or no chunk refused.
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
		cmocka_unit_test(test_no_ranks_or_no_chunk_is_refused),
	};

	rcp_log_set_level(RCP_LOG_SILENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
