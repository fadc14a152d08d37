/*
 * bench_mpi_balance.c - railcp-mpi's balance: each rank's bytes against
 * the mean for whole files (cli_mpi_balance, what the push does today) and
 * for files and byte ranges (cli_mpi_split), on trees whose file sizes
 * span 1 byte to 64 MiB and 1 byte to 1 GiB. A measurement of the
 * planning alone (no file is made or sent), not a test: `scons bench`
 * builds build/<variant>/tests/bench/bench_mpi_balance. The goal (issue
 * 27): each rank's bytes within 10% of the mean.
 *
 * Design: sizes drawn log-uniformly (as many files of each power of two,
 * and between them) from a fixed seed, so every run prints the same
 * figures; chunk 1 MiB (the default). For each tree and rank count: the
 * largest and smallest rank's bytes over the mean, largest over smallest
 * (railcp-mpi's "balance"), and the ranges' cuts; then one 1 GiB file
 * among a thousand of 1 MiB; then one case rank by rank. Arguments, all
 * optional: FILES MAX_SHIFT RANKS for that case (default 20 30 8: 20 files
 * of 1 B to 1 GiB over 8 ranks). Trees of many files balance as whole
 * files already; ranges matter where a share is not much larger than the
 * largest file.
 *
 * Threading: one thread.
 */
#include "cli/mpi.h"
#include "common/common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHUNK (1u << 20)
#define MIB (1024.0 * 1024.0)

static uint64_t *sizes_make(size_t n, unsigned max_shift, unsigned seed)
{
	uint64_t *b = calloc(n ? n : 1, sizeof(*b));
	size_t i;

	for (i = 0; b && i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint64_t)1 << (seed >> 16) % (max_shift + 1);
		seed = seed * 1103515245u + 12345u;
		b[i] += (uint64_t)(seed >> 4) % b[i];
	}
	return b;
}

struct spread {
	double hi, lo, ratio; /* largest and smallest over the mean; largest over smallest */
};

static struct spread spread_of(const uint64_t *load, unsigned n_ranks)
{
	uint64_t hi = 0, lo = UINT64_MAX, sum = 0;
	double mean;
	unsigned r;

	for (r = 0; r < n_ranks; r++) {
		sum += load[r];
		hi = load[r] > hi ? load[r] : hi;
		lo = load[r] < lo ? load[r] : lo;
	}
	mean = (double)sum / n_ranks;
	return (struct spread){
		.hi = hi / mean, .lo = lo / mean, .ratio = lo ? (double)hi / (double)lo : 1e9};
}

/* Both balances of n files of sizes b (label: what they are) over n_ranks: 0, or -1 after a line.
 */
static int run(const uint64_t *b, size_t n, const char *label, unsigned n_ranks, bool per_rank)
{
	uint64_t *whole = calloc(n_ranks, sizeof(*whole)),
		 *ranged = calloc(n_ranks, sizeof(*ranged)), total = 0;
	bool *cut = calloc(n ? n : 1, sizeof(*cut));
	unsigned *owner = calloc(n ? n : 1, sizeof(*owner)), r;
	struct cli_mpi_piece *p = NULL;
	size_t n_p = 0, i;
	struct spread w, g;
	int err = whole && ranged && cut && owner ? 0 : -1;

	for (i = 0; !err && i < n; i++) {
		cut[i] = true;
		total += b[i];
	}
	if (!err && (cli_mpi_balance(b, n, n_ranks, owner, whole) ||
		     cli_mpi_split(b, cut, n, n_ranks, CHUNK, &p, &n_p, ranged)))
		err = -1;
	if (!err) {
		w = spread_of(whole, n_ranks);
		g = spread_of(ranged, n_ranks);
		printf("%6zu %-16s %10.1f %5u | %6.3f %6.3f %8.3g | %6.3f %6.3f %6.3f %5zu\n", n,
		       label, (double)total / MIB, n_ranks, w.hi, w.lo, w.ratio, g.hi, g.lo,
		       g.ratio, n_p - n);
	}
	for (r = 0; !err && per_rank && r < n_ranks; r++)
		printf("  rank %2u: whole files %10.1f MiB (%+6.2f%% of the mean), ranges %10.1f "
		       "MiB (%+6.2f%%)\n",
		       r, whole[r] / MIB, 100.0 * (whole[r] * n_ranks / (double)total - 1),
		       ranged[r] / MIB, 100.0 * (ranged[r] * n_ranks / (double)total - 1));
	if (err)
		fprintf(stderr, "bench_mpi_balance: out of memory\n");
	free(whole);
	free(ranged);
	free(cut);
	free(owner);
	free(p);
	return err;
}

/* n files of 1 B to 2^max_shift over n_ranks. */
static int run_tree(size_t n, unsigned max_shift, unsigned n_ranks, bool per_rank)
{
	uint64_t *b = sizes_make(n, max_shift, 7);
	char label[32];
	int err;

	snprintf(label, sizeof(label), "1 B-%.0f MiB", (double)((uint64_t)1 << max_shift) / MIB);
	err = b ? run(b, n, label, n_ranks, per_rank) : -1;
	if (!b)
		fprintf(stderr, "bench_mpi_balance: out of memory\n");
	free(b);
	return err;
}

/* One 1 GiB file beside 1,000 files of 1 MiB: the file that held a whole job on one rank. */
static int run_one_big(unsigned n_ranks)
{
	static uint64_t b[1001];
	size_t i;

	for (i = 0; i < 1001; i++)
		b[i] = i ? 1u << 20 : 1u << 30;
	return run(b, 1001, "1 GiB+1000x1 MiB", n_ranks, false);
}

int main(int argc, char **argv)
{
	static const size_t files[] = {20, 200, 2000};
	static const unsigned shifts[] = {26, 30}, ranks[] = {2, 4, 8, 16};
	size_t f, s, k;
	int err = 0;

	printf("chunk 1 MiB; largest (hi) and smallest (lo) rank over the mean, and hi/lo\n");
	printf("%6s %-16s %10s %5s | %-24s | %-20s %5s\n", "files", "sizes", "MiB", "ranks",
	       "whole files: hi lo hi/lo", "ranges: hi lo hi/lo", "cuts");
	for (s = 0; s < 2; s++)
		for (f = 0; f < 3; f++)
			for (k = 0; k < 4 && !err; k++)
				err = run_tree(files[f], shifts[s], ranks[k], false);
	for (k = 0; k < 4 && !err; k++)
		err = run_one_big(ranks[k]);
	if (!err) {
		size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20;
		unsigned shift = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 30,
			 r = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 8;

		if (shift > 40 || r == 0 || r > 4096) {
			fprintf(stderr, "bench_mpi_balance: MAX_SHIFT is at most 40, RANKS 1 to "
					"4096\n");
			return 1;
		}
		printf("\n");
		err = run_tree(n, shift, r, true);
	}
	return err ? 1 : 0;
}
