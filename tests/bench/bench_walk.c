/*
 * bench_walk.c - what --exclude costs a walk: io_manifest_walk of a tree of
 * 100,000 entries on tmpfs, with no filter and through 50 rules that match
 * nothing in it (so both walks list the same entries and the difference is
 * the matching alone). A measurement, not a test: `scons bench` builds
 * build/<variant>/tests/bench/bench_walk. The goal (issue 29): at most 5%
 * more walk time.
 *
 * Design: the tree is 400 directories of 249 files each, made under
 * $BENCH_WALK_DIR (default /dev/shm), then walked ROUNDS times each way,
 * alternating which goes first; the median of each and their ratio are
 * printed, with the minimum and maximum. The rules are the kinds a user
 * writes: suffixes (*.o), names (core, node_modules), directories
 * (cache/), anchored paths (/scratch), paths with a slash inside
 * (logs/ *.gz), and brackets; two of them ("f[a-z]*.dat") pass every
 * literal check and reach fnmatch(3) for each file.
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "io/io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 9
#define DIRS 400
#define FILES_PER_DIR 249 /* with the directories: 100,000 entries */

static const char *const rules[] = {
	"*.o",
	"*.a",
	"*.so",
	"*.tmp",
	"*.bak",
	"*.swp",
	"*.pyc",
	"*.class",
	"*.log",
	"*.out",
	"*~",
	"*.orig",
	"*.rej",
	"*.part",
	"*.lock",
	"*.pid",
	"*.core",
	"*.gcda",
	"*.gcno",
	"*.d",
	"core",
	".git",
	"node_modules",
	"__pycache__",
	"CVS",
	".svn",
	".DS_Store",
	"Thumbs.db",
	".cache",
	"build",
	"cache/",
	"tmp/",
	"obj/",
	".venv/",
	"target/",
	"/scratch",
	"/a/b/c",
	"/d000/skip",
	"/old",
	"/checkpoints/",
	"logs/*.gz",
	"x/y",
	"d*/e?",
	"run-*/core.*",
	"data/*.old",
	"*.[oa]",
	"[Dd]esktop.ini",
	"?.swp",
	"data-??.old",
	"[Tt]humbs.db",
};

/* The worst case: the last two rules replaced by two that reach fnmatch(3) for every file. */
static const char *const worst[] = {"f[a-z]*.dat", "f*[!0-9].dat"};

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

static int tree_make(const char *top)
{
	char p[4096];
	unsigned d, f;
	int fd;

	if (mkdir(top, 0755) != 0)
		return -errno;
	for (d = 0; d < DIRS; d++) {
		snprintf(p, sizeof(p), "%s/d%03u", top, d);
		if (mkdir(p, 0755) != 0)
			return -errno;
		for (f = 0; f < FILES_PER_DIR; f++) {
			snprintf(p, sizeof(p), "%s/d%03u/f%05u.dat", top, d, f);
			if ((fd = open(p, O_CREAT | O_WRONLY | O_EXCL, 0644)) < 0)
				return -errno;
			close(fd);
		}
	}
	return 0;
}

/* One walk of top through f (NULL: none): its seconds, or < 0 on failure. */
static double walk_once(const char *top, const struct io_filter *f, size_t *n_out)
{
	const char *src[] = {top};
	struct io_manifest *m;
	double t0 = now_s(), t;

	if (io_manifest_walk_filtered(NULL, src, 1, IO_WALK_RECURSIVE, NULL, f, &m) != 0)
		return -1;
	t = now_s() - t0;
	*n_out = m->n;
	io_manifest_destroy(m);
	return t;
}

/* The matching alone, without the file system: each entry's path through f. */
static void match_alone(const char *top, const struct io_filter *f)
{
	const char *src[] = {top};
	struct io_manifest *m;
	size_t i, cut, out = 0;
	double t0;

	if (io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m) != 0)
		return;
	cut = strlen(m->entry[0].path) + 1;
	t0 = now_s();
	for (i = 1; i < m->n; i++)
		out += io_filter_excluded(f, m->entry[i].path + cut, m->entry[i].type == IO_DIR);
	printf("  matching alone:  %.1f ms for %zu entries (%.0f ns each), %zu excluded\n",
	       (now_s() - t0) * 1e3, m->n - 1, (now_s() - t0) * 1e9 / (double)(m->n - 1), out);
	io_manifest_destroy(m);
}

/* The 50 rules, the worst two last with worst. */
static struct io_filter *filter_make(bool with_worst)
{
	struct io_filter *f;
	size_t i, n = RCP_ARRAY_SIZE(rules);

	if (io_filter_create(&f) != 0)
		return NULL;
	for (i = 0; i < n; i++)
		if (io_filter_rule(f, false,
				   with_worst && i >= n - 2 ? worst[i - (n - 2)] : rules[i]) != 0) {
			io_filter_destroy(f);
			return NULL;
		}
	if (io_filter_finish(f) != 0) {
		io_filter_destroy(f);
		return NULL;
	}
	return f;
}

/* ROUNDS walks each way, alternating; the medians and their ratio. */
static int compare(const char *top, bool with_worst)
{
	double plain[ROUNDS], filtered[ROUNDS];
	size_t i, n_plain = 0, n_filtered = 0;
	struct io_filter *f = filter_make(with_worst);

	if (!f)
		return 1;
	walk_once(top, NULL, &n_plain); /* warm the caches */
	for (i = 0; i < ROUNDS; i++) {
		if (i % 2) {
			filtered[i] = walk_once(top, f, &n_filtered);
			plain[i] = walk_once(top, NULL, &n_plain);
		} else {
			plain[i] = walk_once(top, NULL, &n_plain);
			filtered[i] = walk_once(top, f, &n_filtered);
		}
		if (plain[i] < 0 || filtered[i] < 0 || n_plain != n_filtered) {
			fprintf(stderr,
				"bench_walk: a walk failed or listed %zu entries, not %zu\n",
				n_filtered, n_plain);
			io_filter_destroy(f);
			return 1;
		}
	}
	qsort(plain, ROUNDS, sizeof(double), cmp_double);
	qsort(filtered, ROUNDS, sizeof(double), cmp_double);
	printf("%s:\n", with_worst ? "50 rules, 2 of them reaching fnmatch(3) for every file"
				   : "50 rules, every file turned down by their literal parts");
	printf("  walk, no filter:  median %.1f ms (min %.1f, max %.1f), %zu entries\n",
	       plain[ROUNDS / 2] * 1e3, plain[0] * 1e3, plain[ROUNDS - 1] * 1e3, n_plain);
	printf("  walk, 50 rules:   median %.1f ms (min %.1f, max %.1f)\n",
	       filtered[ROUNDS / 2] * 1e3, filtered[0] * 1e3, filtered[ROUNDS - 1] * 1e3);
	printf("  ratio of medians: %.3f (goal: at most 1.05)\n",
	       filtered[ROUNDS / 2] / plain[ROUNDS / 2]);
	match_alone(top, f);
	io_filter_destroy(f);
	return 0;
}

int main(void)
{
	const char *base = getenv("BENCH_WALK_DIR") ? getenv("BENCH_WALK_DIR") : "/dev/shm";
	double t0;
	char top[3800], cmd[4200];
	int err;

	snprintf(top, sizeof(top), "%s/railcp-bench-walk-%d", base, (int)getpid());
	t0 = now_s();
	if ((err = tree_make(top)) != 0) {
		fprintf(stderr, "bench_walk: cannot make the tree under %s: %s\n", base,
			strerror(-err));
		return 1;
	}
	printf("tree: %u entries under %s, made in %.2f s\n", DIRS * (FILES_PER_DIR + 1) + 1, top,
	       now_s() - t0);
	err = compare(top, false) || compare(top, true);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 && !err ? 0 : 1;
}
