/*
 * bench_manifest_decode.c - how long io_manifest_decode takes on this host
 * for an ordinary large file list and for one built to defeat the old
 * unkeyed hash of the duplicate check: a measurement, not a test, so
 * `scons test` neither builds nor runs it; `scons bench` builds
 * build/<variant>/tests/bench/bench_manifest_decode.
 *
 * Design: two lists, each encoded once and decoded ROUNDS times; the
 * minimum, median and maximum of the rounds are printed with the check's
 * probes per look-up and the memory the decode counted against
 * IO_MANIFEST_MAX_MEMORY.
 *   ordinary:  1,000 directories of 999 files each ("dataset/part-0042/
 *              sample-000123.bin" in shape): 1,000,000 entries
 *   colliding: 100,000 names that all start at one slot of the old check's
 *              table (tests/unit/test_io_collide.h); the old check took
 *              about n^2/2 = 5 * 10^9 probes on them
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "io/io_int.h"
#include "tests/unit/test_io_collide.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 3
#define DIRS 1000
#define FILES_PER_DIR 999
#define N_COLLIDE 100000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The ordinary list's names, directories before their files (NULL if out of memory). */
static char **ordinary_names(size_t *n_out)
{
	size_t n = DIRS * (FILES_PER_DIR + 1), k = 0, d, f;
	char **names = calloc(n, sizeof(*names));

	for (d = 0; names && d < DIRS; d++) {
		for (f = 0; f <= FILES_PER_DIR; f++, k++) {
			names[k] = malloc(48);
			if (!names[k]) {
				t_names_free(names, k);
				return NULL;
			}
			if (f == 0)
				snprintf(names[k], 48, "part-%04zu", d);
			else
				snprintf(names[k], 48, "part-%04zu/sample-%06zu.bin", d, f);
		}
	}
	*n_out = n;
	return names;
}

/* Mark every "part-NNNN" entry of m a directory. */
static void dirs_mark(struct io_manifest *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strchr(m->entry[i].path, '/'))
			m->entry[i].type = IO_DIR;
}

/* Decode buf ROUNDS times and print one line about it; 0, or 1 on failure. */
static int bench_list(const char *what, const void *buf, size_t len)
{
	struct io__decode_ctl ctl = {0};
	struct io_manifest *d;
	double s[ROUNDS], start;
	size_t n = 0;
	int i, err;

	for (i = 0; i < ROUNDS; i++) {
		start = now_s();
		err = io__manifest_decode(buf, len, &ctl, &d);
		s[i] = now_s() - start;
		if (err) {
			fprintf(stderr, "bench_manifest_decode: %s\n", rcp_err_msg(err));
			return 1;
		}
		n = d->n;
		io_manifest_destroy(d);
	}
	qsort(s, ROUNDS, sizeof(s[0]), cmp_double);
	printf("%-10s %8zu entries, %6.1f MiB encoded: min %.3f, median %.3f, max %.3f s "
	       "(%.0f ns per entry); %.2f probes per look-up, longest %llu; %.0f MiB counted\n",
	       what, n, (double)len / (1 << 20), s[0], s[ROUNDS / 2], s[ROUNDS - 1],
	       s[ROUNDS / 2] * 1e9 / (double)n, (double)ctl.probes / (double)ctl.lookups,
	       (unsigned long long)ctl.longest, (double)ctl.memory / (1 << 20));
	return 0;
}

/* Encode the names as a list (dirs: mark the directories) and bench it. */
static int bench_names(const char *what, char **names, size_t n, int dirs)
{
	struct io_manifest *m = names ? t_manifest_of(names, n) : NULL;
	void *buf = NULL;
	size_t len = 0;
	int rc = 1;

	if (m && dirs)
		dirs_mark(m);
	if (m && io_manifest_encode(m, &buf, &len) == 0)
		rc = bench_list(what, buf, len);
	else
		fprintf(stderr, "bench_manifest_decode: out of memory building the %s list\n",
			what);
	free(buf);
	io_manifest_destroy(m);
	t_names_free(names, n);
	return rc;
}

int main(void)
{
	size_t n = 0;
	char **names;
	int rc;

	printf("io_manifest_decode, %d rounds each (SipHash-2-4 keyed duplicate check)\n", ROUNDS);
	names = ordinary_names(&n);
	rc = bench_names("ordinary", names, n, 1);
	rc |= bench_names("colliding", t_collide_names(N_COLLIDE), N_COLLIDE, 0);
	return rc;
}
