/*
 * bench_finalize.c - what fsync costs the receiver on this host: files
 * written and put in place through the real io_root/io_wfile API (open,
 * chunks with their hash, finalize), with and without IO_ROOT_FSYNC. A
 * measurement, not a test: `scons bench` builds
 * build/<variant>/tests/bench/bench_finalize.
 *
 *   bench_finalize [-t THREADS] [-r ROUNDS] [DIR]
 *
 * DIR (default /var/tmp, a disk where /tmp may be a tmpfs) receives a new
 * directory railcp-bench-XXXXXX that is removed at the end; the file system
 * under it is printed, since the figures mean nothing without it.
 *
 * Design: two workloads, 2000 files of 4 KiB and 8 files of 64 MiB (1 MiB
 * chunks), each in three modes: without fsync (the data may still be in the
 * page cache when the clock stops), the same followed by one syncfs (all of
 * it on the disk, in one go, at the end), and IO_ROOT_FSYNC (each file and
 * its directory synced before the next). Before every timed run the file
 * system is synced, so no run pays for the previous one's write-back; the
 * files are removed afterwards, untimed. Each run is repeated ROUNDS times
 * (default 3), the modes taking turns, and the median is printed with
 * files/s, MiB/s and the ratio to the run without fsync.
 *
 * Threading: THREADS (default 1) workers finalize files concurrently, as
 * the receiver's workers do; file i goes to worker i % THREADS.
 */
#include "common/common.h"
#include "io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)
#define MAX_THREADS 64
#define MAX_ROUNDS 15

struct load {
	const char *name;
	unsigned files;
	uint64_t size;
};

static const struct load loads[] = {
	{"2000 files of 4 KiB", 2000, 4096},
	{"8 files of 64 MiB", 8, 64ull << 20},
};

enum mode { NO_FSYNC, NO_FSYNC_SYNCFS, FSYNC, N_MODES };

static const char *const mode_name[N_MODES] = {
	"without fsync",
	"without fsync, then one syncfs",
	"with fsync (IO_ROOT_FSYNC)",
};

/* One timed run: files [0, files) of load into directory run/. */
struct run {
	struct io_root *root;
	const struct load *load;
	struct io_entry *e; /* one per file */
	struct io_extent ext;
	const uint8_t *buf; /* CHUNK bytes, the data of every chunk */
	uint64_t crc_full, crc_tail;
	unsigned threads;
	_Atomic int err;
};

struct worker {
	struct run *run;
	unsigned t;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One file through the receiver's whole path: open, every chunk, finalize. */
static int file_receive(struct run *run, const struct io_entry *e)
{
	struct io_wfile *w;
	uint64_t off;
	uint32_t len;
	bool done;
	int err;

	err = io_wfile_open(run->root, e, CHUNK, &w);
	if (err)
		return err;
	for (off = 0; off < e->size; off += len) {
		len = e->size - off < CHUNK ? (uint32_t)(e->size - off) : CHUNK;
		err = io_chunk_write(w, off, run->buf, len,
				     len == CHUNK ? run->crc_full : run->crc_tail, &done);
		if (err) {
			io_wfile_abort(w);
			return err;
		}
	}
	return io_wfile_finalize(w);
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct run *run = wk->run;
	unsigned i;
	int err;

	for (i = wk->t; i < run->load->files && !atomic_load(&run->err); i += run->threads) {
		err = file_receive(run, &run->e[i]);
		if (err) {
			atomic_store(&run->err, err);
			fprintf(stderr, "bench_finalize: %s\n", rcp_err_msg(err));
		}
	}
	return NULL;
}

/* Run the workers; 0 or the first error. */
static int run_workers(struct run *run)
{
	struct worker wk[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	unsigned t;

	for (t = 0; t < run->threads; t++) {
		wk[t] = (struct worker){run, t};
		if (pthread_create(&tid[t], NULL, worker_main, &wk[t])) {
			atomic_store(&run->err, -EAGAIN);
			break;
		}
	}
	while (t-- > 0)
		pthread_join(tid[t], NULL);
	return atomic_load(&run->err);
}

/* Sync the whole file system that holds dir. */
static int fs_sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = syncfs(fd) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static void run_files_remove(const char *dir, const struct run *run)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unsigned i;

	if (fd < 0)
		return;
	for (i = 0; i < run->load->files; i++)
		unlinkat(fd, run->e[i].path, 0);
	unlinkat(fd, "run", AT_REMOVEDIR);
	close(fd);
}

/* One timed run of load in mode: seconds, or a negative value on failure. */
static double run_once(const char *dir, struct run *run, enum mode mode)
{
	struct io_entry d = {.path = "run", .type = IO_DIR, .mode = 0755};
	double start, s;
	int err;

	io_root_set_flags(run->root, mode == FSYNC ? IO_ROOT_FSYNC : 0);
	err = io_root_mkdir(run->root, &d);
	err = err ? err : fs_sync(dir);
	if (err) {
		fprintf(stderr, "bench_finalize: cannot prepare a run in %s: %s\n", dir,
			strerror(-err));
		return -1;
	}
	atomic_store(&run->err, 0);
	start = now_s();
	err = run_workers(run);
	if (!err && mode == NO_FSYNC_SYNCFS)
		err = fs_sync(dir);
	s = now_s() - start;
	run_files_remove(dir, run);
	return err ? -1 : s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The entries of load: run/f00000 ... with one extent each. */
static int entries_make(struct run *run)
{
	char name[32];
	unsigned i;

	run->e = calloc(run->load->files, sizeof(*run->e));
	if (!run->e)
		return -ENOMEM;
	run->ext = (struct io_extent){0, run->load->size};
	for (i = 0; i < run->load->files; i++) {
		snprintf(name, sizeof(name), "run/f%05u", i);
		run->e[i] = (struct io_entry){.path = strdup(name),
					      .type = IO_FILE,
					      .mode = 0644,
					      .size = run->load->size,
					      .ext = &run->ext,
					      .n_ext = 1,
					      .data_bytes = run->load->size};
		if (!run->e[i].path)
			return -ENOMEM;
	}
	run->crc_tail = io_chunk_hash(run->buf, (size_t)(run->load->size % CHUNK));
	return 0;
}

static void entries_free(struct run *run)
{
	unsigned i;

	for (i = 0; run->e && i < run->load->files; i++)
		free(run->e[i].path);
	free(run->e);
	run->e = NULL;
}

/* Every mode of one load, ROUNDS times, modes taking turns; prints the medians. */
static int load_bench(const char *dir, struct run *run, unsigned rounds)
{
	double sec[N_MODES][MAX_ROUNDS], med[N_MODES];
	double mib = (double)run->load->files * (double)run->load->size / (1 << 20);
	unsigned r, k;
	int m;

	if (entries_make(run))
		return -ENOMEM;
	for (r = 0; r < rounds; r++)
		for (k = 0; k < N_MODES; k++) {
			m = (int)((k + r) % N_MODES); /* each mode goes first in some round */
			sec[m][r] = run_once(dir, run, (enum mode)m);
			if (sec[m][r] < 0)
				return -EIO;
		}
	printf("%s, %u thread%s, median of %u rounds:\n", run->load->name, run->threads,
	       run->threads == 1 ? "" : "s", rounds);
	for (m = 0; m < N_MODES; m++) {
		qsort(sec[m], rounds, sizeof(double), cmp_double);
		med[m] = sec[m][rounds / 2];
		printf("  %-32s %8.3f s %10.1f files/s %9.1f MiB/s  x%.2f the time without "
		       "fsync (min %.3f s, max %.3f s)\n",
		       mode_name[m], med[m], run->load->files / med[m], mib / med[m],
		       med[m] / med[NO_FSYNC], sec[m][0], sec[m][rounds - 1]);
	}
	entries_free(run);
	return 0;
}

/*
 * The mount that holds dir, from /proc/self/mountinfo (the longest mount
 * point that is a prefix of dir's real path): "ext4 /dev/vda on / (rw,...)".
 */
static void fs_describe(const char *dir, char *out, size_t len)
{
	char real[PATH_MAX], line[4096], mnt[PATH_MAX], type[64], src[1024], opts[512];
	size_t best = 0, n;
	const char *dash;
	FILE *f;

	snprintf(out, len, "unknown file system");
	if (!realpath(dir, real) || !(f = fopen("/proc/self/mountinfo", "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %1023s %511s", type, src, opts) != 3)
			continue;
		n = strlen(mnt);
		if (strncmp(real, mnt, n) || (n > 1 && real[n] && real[n] != '/') || n < best)
			continue;
		best = n;
		snprintf(out, len, "%s %s mounted on %s (%s)", type, src, mnt, opts);
	}
	fclose(f);
}

static int args_parse(int argc, char **argv, unsigned *threads, unsigned *rounds, const char **dir)
{
	int c;

	while ((c = getopt(argc, argv, "t:r:h")) != -1) {
		if (c == 't' && atoi(optarg) >= 1 && atoi(optarg) <= MAX_THREADS)
			*threads = (unsigned)atoi(optarg);
		else if (c == 'r' && atoi(optarg) >= 1 && atoi(optarg) <= MAX_ROUNDS)
			*rounds = (unsigned)atoi(optarg);
		else
			return -1;
	}
	if (optind < argc - 1)
		return -1;
	*dir = optind < argc ? argv[optind] : "/var/tmp";
	return 0;
}

int main(int argc, char **argv)
{
	struct run run = {.threads = 1};
	char top[PATH_MAX], fs[PATH_MAX + 2048];
	unsigned rounds = 3, i;
	uint8_t *buf = NULL;
	const char *dir;
	int err = 0;

	if (args_parse(argc, argv, &run.threads, &rounds, &dir)) {
		fprintf(stderr,
			"usage: bench_finalize [-t THREADS (1-%d)] [-r ROUNDS (1-%d)] "
			"[DIR (default /var/tmp)]\n",
			MAX_THREADS, MAX_ROUNDS);
		return 2;
	}
	snprintf(top, sizeof(top), "%s/railcp-bench-XXXXXX", dir);
	if (!mkdtemp(top) || posix_memalign((void **)&buf, IO_DIRECT_ALIGN, CHUNK)) {
		fprintf(stderr, "bench_finalize: cannot make a directory in %s: %s\n", dir,
			strerror(errno));
		return 1;
	}
	for (i = 0; i < CHUNK; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 24); /* not zeros: nothing to elide */
	run.buf = buf;
	run.crc_full = io_chunk_hash(buf, CHUNK);
	fs_describe(top, fs, sizeof(fs));
	printf("bench_finalize: files written through io_wfile into %s\n  on %s\n", top, fs);
	err = io_root_open(top, 0, &run.root);
	for (i = 0; !err && i < sizeof(loads) / sizeof(loads[0]); i++) {
		run.load = &loads[i];
		err = load_bench(top, &run, rounds);
		entries_free(&run);
	}
	if (err)
		fprintf(stderr, "bench_finalize: failed: %s\n", strerror(-err));
	io_root_close(run.root);
	rmdir(top);
	free(buf);
	return err ? 1 : 0;
}
