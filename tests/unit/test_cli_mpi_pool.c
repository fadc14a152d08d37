/*
 * test_cli_mpi_pool.c - railcp-mpi's pool of batches (cli/mpi_pool.c): the
 * slots' owners, a job split into the ranks' shares (each with its two
 * batches the balance of a job without a pool; 3/4 of it kept) and the
 * pool's batches (an eighth of a share each) with every byte covered once
 * at chunk boundaries, a rank's pieces of one file that meet merged, a batch's range of a cut file
 * counted once with the place's list naming the file, and rank 0's handing out: each batch once,
 * then none to each rank, done only when every rank has been told; a job of
 * directories only, more ranks than files and a sparse file beside a cut one;
 * and the directories a share or batch carries: those its entries need,
 * every directory of the job (empty ones once) in some rank's share, each
 * list valid; the batches packed, each cut within a session's caps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "cli/mpi.h"
#include "common/common.h"
#include "test_io_tree.h"

#define KIB 1024u

static void test_each_rank_keeps_six_slots_and_two_are_batches(void **state)
{
	unsigned r, slot, n = 3, count[9] = {0};

	(void)state;
	assert_int_equal(cli_mpi_pool_batches(n), 6);
	for (r = 0; r < n; r++)
		for (slot = 0; slot < CLI_MPI_SLOTS; slot++)
			count[cli_mpi_slot_owner(r, slot, n)]++;
	for (r = 0; r < n; r++)
		assert_int_equal(count[r], CLI_MPI_SLOTS_KEPT);
	for (r = n; r < n + cli_mpi_pool_batches(n); r++)
		assert_int_equal(count[r], 1);
	assert_int_equal(cli_mpi_slot_owner(0, 5, n), 0);
	assert_int_equal(cli_mpi_slot_owner(0, 6, n), 3);
	assert_int_equal(cli_mpi_slot_owner(2, 7, n), 8);
}

/* A tree of one 1 MiB file beside 12 of 1 KiB under base/top, walked. */
static struct io_manifest *tree(char *base, char *top)
{
	static char big[1024 * KIB], small[KIB];
	const char *src[1] = {top};
	struct io_manifest *m = NULL;
	char name[64];
	int i;

	t_mkdtemp(base);
	t_path(top, base, "top");
	assert_int_equal(mkdir(top, 0755), 0);
	memset(big, 'x', sizeof(big));
	memset(small, 'y', sizeof(small));
	t_write(base, "top/big", big, sizeof(big), 0644);
	for (i = 0; i < 12; i++) {
		snprintf(name, sizeof(name), "top/s%d", i);
		t_write(base, name, small, sizeof(small), 0644);
	}
	assert_int_equal(io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	return m;
}

static void test_a_job_splits_into_three_quarter_shares_and_a_pool(void **state)
{
	struct io_manifest *m;
	char base[4096], top[4096];
	struct cli_mpi_piece *p;
	uint64_t load[6] = {0}, *next, sum = 0, even;
	size_t n, k, i;

	(void)state;
	m = tree(base, top);
	assert_int_equal(cli_mpi_pool_ranges(m, 2, 4 * KIB, &p, &n, load), 0);
	next = calloc(m->n, sizeof(*next));
	assert_non_null(next);
	for (k = 0; k < n; k++) { /* every byte once, in order, at chunks */
		assert_true(p[k].owner < 6);
		assert_int_equal(p[k].off, next[p[k].item]);
		assert_int_equal(p[k].off % (4 * KIB), 0);
		next[p[k].item] += p[k].len;
		/* merged: no two pieces of one item that meet have one owner */
		if (k)
			assert_false(p[k - 1].item == p[k].item && p[k - 1].owner == p[k].owner);
	}
	for (i = 0; i < m->n; i++)
		assert_int_equal(next[i], m->entry[i].type == IO_FILE ? m->entry[i].data_bytes : 0);
	for (k = 0; k < 6; k++)
		sum += load[k];
	assert_int_equal(sum, m->data_bytes);
	even = m->data_bytes / 2;
	for (k = 0; k < 2; k++) {
		uint64_t all = load[k] + load[2 + 2 * k] + load[3 + 2 * k];

		/* a rank and its two batches: the balance of a job without a pool */
		assert_true(all + 4 * KIB >= even && all <= even + 4 * KIB);
		/* it keeps 3/4 of it, within a chunk a slot */
		assert_true(load[k] + 6 * 4 * KIB >= all * 3 / 4 &&
			    load[k] <= all * 3 / 4 + 6 * 4 * KIB);
		/* each batch an eighth */
		assert_true(load[2 + 2 * k] + 4 * KIB >= all / 8 &&
			    load[2 + 2 * k] <= all / 8 + 4 * KIB);
	}
	free(next);
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

static void test_a_batch_s_range_lands_in_the_cut_file_counted_once(void **state)
{
	struct io_manifest *m, *part, *split = NULL;
	char base[4096], top[4096];
	struct cli_mpi_piece *p;
	uint64_t load[6], covered = 0;
	size_t n, k, x, starts = 0;
	unsigned o, batches = 0;

	(void)state;
	m = tree(base, top);
	assert_int_equal(cli_mpi_pool_ranges(m, 2, 4 * KIB, &p, &n, load), 0);
	for (o = 0; o < 6; o++) { /* two ranks' shares, then four batches */
		const struct io_entry *e = NULL;

		assert_int_equal(cli_mpi_share_pieces(m, p, n, o, NULL, &part), 0);
		assert_int_equal(part->data_bytes, load[o]);
		for (k = 0; k < part->n; k++)
			if (!strcmp(part->entry[k].path, "top/big"))
				e = &part->entry[k];
		if (e) {
			assert_true(e->range);
			for (x = 0; x < e->n_ext; x++) {
				assert_int_equal(e->ext[x].off % (4 * KIB), 0);
				covered += e->ext[x].len;
			}
			starts += e->ext[0].off == 0;
			batches += o >= 2;
		}
		assert_int_equal(cli_mpi_ranges_later(part), e && e->ext[0].off != 0);
		io_manifest_destroy(part);
	}
	assert_int_equal(covered, 1024 * KIB);
	assert_int_equal(starts, 1);
	assert_true(batches >= 2); /* rank 0's two batches: its share is the big file */
	assert_int_equal(cli_mpi_split_list(m, p, n, &split), 0);
	assert_int_equal(cli_mpi_split_files(split), 1);
	io_manifest_destroy(split);
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

static void test_each_batch_is_handed_out_once_then_none_to_every_rank(void **state)
{
	struct cli_mpi_pool pool = {.n = 5, .n_ranks = 3};
	bool seen[5] = {false};
	long b;
	int k;

	(void)state;
	for (k = 0; k < 5; k++) {
		b = cli_mpi_pool_take(&pool);
		assert_true(b >= 0 && b < 5);
		assert_false(seen[b]);
		seen[b] = true;
		assert_false(cli_mpi_pool_done(&pool));
	}
	assert_int_equal(cli_mpi_pool_take(&pool), -1);
	assert_int_equal(cli_mpi_pool_take(&pool), -1);
	assert_false(cli_mpi_pool_done(&pool)); /* one rank not yet told: rank 0 serves on */
	assert_int_equal(cli_mpi_pool_take(&pool), -1);
	assert_true(cli_mpi_pool_done(&pool));
}

static void test_an_empty_pool_is_done_once_every_rank_asked(void **state)
{
	struct cli_mpi_pool pool = {.n = 0, .n_ranks = 2};

	(void)state;
	assert_false(cli_mpi_pool_done(&pool));
	assert_int_equal(cli_mpi_pool_take(&pool), -1);
	assert_false(cli_mpi_pool_done(&pool));
	assert_int_equal(cli_mpi_pool_take(&pool), -1);
	assert_true(cli_mpi_pool_done(&pool));
}

/* top under base walked: its directories and files as the test made them. */
static struct io_manifest *walked(const char *top)
{
	const char *src[1] = {top};
	struct io_manifest *m = NULL;

	assert_int_equal(io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	return m;
}

/* Every file's bytes covered once, in order, each piece's owner below owners and load its sum. */
static void covered_once(const struct io_manifest *m, const struct cli_mpi_piece *p, size_t n,
			 unsigned owners, const uint64_t *load)
{
	uint64_t *next = calloc(m->n ? m->n : 1, sizeof(*next)), sum = 0;
	size_t k, i;

	assert_non_null(next);
	for (k = 0; k < n; k++) {
		assert_true(p[k].owner < owners);
		assert_int_equal(p[k].off, next[p[k].item]);
		next[p[k].item] += p[k].len;
	}
	for (i = 0; i < m->n; i++)
		assert_int_equal(next[i], m->entry[i].type == IO_FILE ? m->entry[i].data_bytes : 0);
	for (k = 0; k < owners; k++)
		sum += load[k];
	assert_int_equal(sum, m->data_bytes);
	free(next);
}

static void list_valid(const struct io_manifest *l);

/*
 * A push of directories only: no pieces, yet a list to free as
 * cli_mpi_split gives (a NULL one went to qsort: a sanitizer build's
 * railcp-mpi -r of empty directories exited 1), and every share empty.
 */
static void test_a_job_of_directories_only_has_no_pieces_and_empty_shares(void **state)
{
	struct io_manifest *m, *part;
	char base[4096], top[4096], sub[4096];
	struct cli_mpi_piece *p = NULL;
	struct cli_mpi_dirs d;
	uint64_t load[6] = {1, 1, 1, 1, 1, 1};
	size_t n = 99;
	unsigned o;

	(void)state;
	t_mkdtemp(base);
	t_path(top, base, "top");
	assert_int_equal(mkdir(top, 0755), 0);
	t_path(sub, base, "top/a");
	assert_int_equal(mkdir(sub, 0755), 0);
	t_path(sub, base, "top/a/b");
	assert_int_equal(mkdir(sub, 0755), 0);
	m = walked(top);
	assert_int_equal(m->data_bytes, 0);
	assert_int_equal(cli_mpi_pool_ranges(m, 2, 4 * KIB, &p, &n, load), 0);
	assert_non_null(p);
	assert_int_equal(n, 0);
	for (o = 0; o < 6; o++) {
		assert_int_equal(load[o], 0);
		assert_int_equal(cli_mpi_share_pieces(m, p, n, o, NULL, &part), 0);
		assert_int_equal(part->data_bytes, 0);
		io_manifest_destroy(part);
	}
	/* with the directories placed: the empty ones are the ranks', a batch has nothing at all */
	assert_int_equal(cli_mpi_dirs_init(&d, m, 2), 0);
	for (o = 0; o < 6; o++) {
		assert_int_equal(cli_mpi_share_pieces(m, p, n, o, &d, &part), 0);
		if (o >= 2)
			assert_int_equal(part->n, 0);
		list_valid(part);
		io_manifest_destroy(part);
	}
	cli_mpi_dirs_fini(&d);
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

/* Four ranks and two files of less than a chunk: each whole under one owner, the rest empty. */
static void test_more_ranks_than_files_leaves_shares_empty_and_files_whole(void **state)
{
	static char small[KIB];
	struct io_manifest *m;
	char base[4096], top[4096];
	struct cli_mpi_piece *p;
	uint64_t load[12];
	size_t n, k, files = 0;
	unsigned owners = 4 + cli_mpi_pool_batches(4);

	(void)state;
	t_mkdtemp(base);
	t_path(top, base, "top");
	assert_int_equal(mkdir(top, 0755), 0);
	memset(small, 'y', sizeof(small));
	t_write(base, "top/a", small, sizeof(small), 0644);
	t_write(base, "top/b", small, sizeof(small), 0644);
	m = walked(top);
	assert_int_equal(owners, 12);
	assert_int_equal(cli_mpi_pool_ranges(m, 4, 4 * KIB, &p, &n, load), 0);
	covered_once(m, p, n, owners, load);
	for (k = 0; k < n; k++) {
		assert_int_equal(p[k].off, 0);
		assert_int_equal(p[k].len, KIB);
		files++;
	}
	assert_int_equal(files, 2);
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

/* A sparse file is never cut (only a dense one is): one piece, all of its data, one owner. */
static void test_a_sparse_file_stays_one_piece_beside_a_cut_one(void **state)
{
	struct io_manifest *m;
	char base[4096], top[4096];
	struct cli_mpi_piece *p;
	uint64_t load[6];
	size_t n, k, i, sparse = SIZE_MAX, of_sparse = 0, of_big = 0;

	(void)state;
	m = tree(base, top);
	io_manifest_destroy(m);
	t_sparse(base, "top/sparse");
	m = walked(top);
	for (i = 0; i < m->n; i++)
		if (!strcmp(m->entry[i].path, "top/sparse"))
			sparse = i;
	assert_true(sparse != SIZE_MAX);
	assert_false(cli__mpi_dense(&m->entry[sparse]));
	assert_int_equal(cli_mpi_pool_ranges(m, 2, 4 * KIB, &p, &n, load), 0);
	covered_once(m, p, n, 6, load);
	for (k = 0; k < n; k++) {
		if (p[k].item == sparse) {
			of_sparse++;
			assert_int_equal(p[k].off, 0);
			assert_int_equal(p[k].len, m->entry[sparse].data_bytes);
		} else if (!strcmp(m->entry[p[k].item].path, "top/big")) {
			of_big++;
		}
	}
	assert_int_equal(of_sparse, 1);
	assert_true(of_big > 1); /* the dense big file is cut beside it */
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

/*
 * top/ with a/ (10 files of 1 KiB), b/ (10 of 2 KiB), b/deep/ (1 of 1 KiB)
 * and empty directories e1/, e1/e2/ and e3/, walked.
 */
static struct io_manifest *dirs_tree(char *base, char *top)
{
	static char data[2 * KIB];
	static const char *dirs[] = {"top",    "top/a",	    "top/b", "top/b/deep",
				     "top/e1", "top/e1/e2", "top/e3"};
	char name[64], p[4096];
	size_t i;

	t_mkdtemp(base);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		t_path(p, base, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	memset(data, 'z', sizeof(data));
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "top/a/f%zu", i);
		t_write(base, name, data, KIB, 0644);
		snprintf(name, sizeof(name), "top/b/g%zu", i);
		t_write(base, name, data, 2 * KIB, 0644);
	}
	t_write(base, "top/b/deep/h", data, KIB, 0644);
	t_path(top, base, "top");
	return walked(top);
}

/* Whether m has a file or symlink beneath directory d, at any depth. */
static bool beneath(const struct io_manifest *m, const char *d)
{
	size_t i, n = strlen(d);

	for (i = 0; i < m->n; i++)
		if (m->entry[i].type != IO_DIR && !strncmp(m->entry[i].path, d, n) &&
		    m->entry[i].path[n] == '/')
			return true;
	return false;
}

static size_t holding(struct io_manifest *const *l, size_t n, const char *path)
{
	size_t k, i, got = 0;

	for (k = 0; k < n; k++)
		for (i = 0; i < l[k]->n; i++)
			got += !strcmp(l[k]->entry[i].path, path);
	return got;
}

/* A list a session takes: it encodes and decodes (each entry's directories before it). */
static void list_valid(const struct io_manifest *l)
{
	struct io_manifest *back = NULL;
	size_t len;
	void *buf;

	assert_int_equal(io_manifest_encode(l, &buf, &len), 0);
	assert_int_equal(io_manifest_decode(buf, len, &back), 0);
	io_manifest_destroy(back);
	free(buf);
}

/*
 * Lists l[0..n) of job m, the first n_ranks of them ranks' shares: each
 * valid, each directory one carries either on the way to an entry of its
 * own or (a rank's share) one with no file beneath; every directory of m
 * in a rank's share or on the way to a batch's entry, and a directory with
 * nothing beneath (e1/e2, e3) in exactly one share.
 */
static void dirs_as_needed(const struct io_manifest *m, struct io_manifest *const *l, size_t n,
			   size_t n_ranks)
{
	size_t k, i;

	for (k = 0; k < n; k++) {
		list_valid(l[k]);
		for (i = 0; i < l[k]->n; i++) {
			const char *d = l[k]->entry[i].path;

			if (l[k]->entry[i].type == IO_DIR && !beneath(l[k], d))
				assert_true(k < n_ranks && !beneath(m, d));
		}
	}
	for (i = 0; i < m->n; i++)
		if (m->entry[i].type == IO_DIR)
			assert_true(holding(l, n, m->entry[i].path) >= 1);
	assert_int_equal(holding(l, n_ranks, "top/e1/e2"), 1);
	assert_int_equal(holding(l, n_ranks, "top/e3"), 1);
}

static void test_a_share_carries_only_the_directories_its_entries_need(void **state)
{
	struct io_manifest *m, *l[3];
	struct cli_mpi_dirs d;
	char base[4096], top[4096];
	unsigned *owner, r;
	uint64_t load[3];

	(void)state;
	m = dirs_tree(base, top);
	owner = calloc(m->n, sizeof(*owner));
	assert_non_null(owner);
	assert_int_equal(cli_mpi_dirs_init(&d, m, 3), 0);
	assert_int_equal(cli_mpi_assign(m, 3, owner, load), 0);
	for (r = 0; r < 3; r++)
		assert_int_equal(cli_mpi_share(m, owner, r, &d, &l[r]), 0);
	dirs_as_needed(m, l, 3, 3);
	/* b/deep's one file is one rank's: the others do not carry b/deep */
	assert_int_equal(holding(l, 3, "top/b/deep"), 1);
	for (r = 0; r < 3; r++)
		io_manifest_destroy(l[r]);
	cli_mpi_dirs_fini(&d);
	cli_mpi_dirs_fini(&d); /* a second time: nothing */
	free(owner);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

static void test_shares_and_batches_carry_only_the_directories_they_need(void **state)
{
	struct io_manifest *m, *l[6];
	struct cli_mpi_dirs d;
	char base[4096], top[4096];
	struct cli_mpi_piece *p;
	uint64_t load[6];
	size_t n;
	unsigned o;

	(void)state;
	m = dirs_tree(base, top);
	assert_int_equal(cli_mpi_dirs_init(&d, m, 2), 0);
	assert_int_equal(cli_mpi_pool_ranges(m, 2, 4 * KIB, &p, &n, load), 0);
	for (o = 0; o < 6; o++) /* two ranks' shares, then four batches */
		assert_int_equal(cli_mpi_share_pieces(m, p, n, o, &d, &l[o]), 0);
	dirs_as_needed(m, l, 6, 2);
	for (o = 0; o < 6; o++)
		io_manifest_destroy(l[o]);
	cli_mpi_dirs_fini(&d);
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

/* Sessions of 4 entries and 4 chunks: every batch packed within them, together the pool. */
static void test_each_batch_is_packed_within_a_session_s_caps(void **state)
{
	const struct cli_mpi_caps caps = {
		.entries = 4, .chunks = 4, .memory = IO_MANIFEST_MAX_MEMORY};
	struct cli_mpi_batches b = {0};
	struct io_manifest *m, *x;
	struct cli_mpi_dirs d;
	char base[4096], top[4096];
	struct cli_mpi_piece *p;
	uint64_t load[6], bytes = 0;
	size_t n, k;

	(void)state;
	m = dirs_tree(base, top);
	assert_int_equal(cli_mpi_dirs_init(&d, m, 2), 0);
	assert_int_equal(cli_mpi_pool_ranges(m, 2, KIB, &p, &n, load), 0);
	assert_int_equal(cli_mpi_batches_pack(m, p, n, 2, &d, &caps, KIB, &b), 0);
	assert_true(b.n > cli_mpi_pool_batches(2)); /* some batch was cut */
	for (k = 0; k < b.n; k++) {
		assert_int_equal(cli_mpi_unpack(b.all + b.off[k], (size_t)b.len[k], &x), 0);
		assert_true(x->n <= caps.entries);
		assert_true(io_plan_count(x, KIB) <= caps.chunks);
		assert_true(x->n_files > 0);
		bytes += x->data_bytes;
		io_manifest_destroy(x);
	}
	assert_int_equal(bytes, load[2] + load[3] + load[4] + load[5]);
	cli_mpi_batches_fini(&b);
	cli_mpi_batches_fini(NULL);
	cli_mpi_dirs_fini(&d);
	free(p);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_rank_keeps_six_slots_and_two_are_batches),
		cmocka_unit_test(test_a_job_splits_into_three_quarter_shares_and_a_pool),
		cmocka_unit_test(test_a_batch_s_range_lands_in_the_cut_file_counted_once),
		cmocka_unit_test(test_each_batch_is_handed_out_once_then_none_to_every_rank),
		cmocka_unit_test(test_an_empty_pool_is_done_once_every_rank_asked),
		cmocka_unit_test(test_a_job_of_directories_only_has_no_pieces_and_empty_shares),
		cmocka_unit_test(test_more_ranks_than_files_leaves_shares_empty_and_files_whole),
		cmocka_unit_test(test_a_sparse_file_stays_one_piece_beside_a_cut_one),
		cmocka_unit_test(test_a_share_carries_only_the_directories_its_entries_need),
		cmocka_unit_test(test_shares_and_batches_carry_only_the_directories_they_need),
		cmocka_unit_test(test_each_batch_is_packed_within_a_session_s_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
