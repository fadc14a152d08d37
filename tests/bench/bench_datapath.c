/*
 * bench_datapath.c - the data path's speed and CPU cost on this host, with
 * no RDMA device: whole push sessions of the engine over its loopback
 * transport (a server and a client in this process, as session_harness.h
 * runs them; control over real TCP on 127.0.0.1, data through the in-process
 * fabric, which has no link speed limit), against cp of the same files. A
 * measurement, not a test: `scons bench` builds
 * build/<variant>/tests/bench/bench_datapath; tools/bench/datapath runs it.
 *
 *   bench_datapath [--bytes N] [--files N] [--file-size N] [--rounds N]
 *                  [--dir DIR] [--chunk N] [--qps N] [--rails N] [--workers N]
 *                  [--slot-memory N] [--quick] [--verbose]   (--help: defaults)
 *
 * Two cases, from one directory to another beneath DIR (default /dev/shm, a
 * tmpfs, so no disk is measured): one big file (--bytes, default 1 GiB) and
 * a tree of --files small files (default 2000 of 4 KiB) in TREE_DIRS
 * directories. Each round times an engine push (the wall clock of the
 * client's whole run: walk, connect, data, every file in place) and cp (cp
 * or cp -r of the same source, as a child process), the two taking turns
 * at going first, after one warm-up round that is not counted (case_run says
 * why). Every engine copy is compared byte for byte with its source,
 * untimed; destinations are removed between rounds. Printed per
 * case: GiB/s or files/s (also over the engine's data phase alone: first
 * post to last completion, as it reports it), min/median/max over the
 * rounds, CPU seconds per GiB at each end, the ratio engine/cp of the
 * medians, and each end's steps (common/steps.h: walk, control, manifest,
 * memory, connect, data, end, finalize, teardown; the client's from its
 * report, the server's from its session's record) in ms.
 *
 * CPU per end: a sampler thread reads each data-path thread's CPU time
 * (tests/bench/datapath_sampler.c says how, and to what resolution); the
 * sources and the checks of the copies are in tests/bench/datapath_files.c.
 * Both are linked into this binary alone (tests/SConscript).
 *
 * Prints a closing line 'datapath: N passed, N failed' (tools/check counts
 * it): a case passes when every round ran and every copy was identical.
 * Exit status 0 when all passed, 1 when a case failed, 2 on a usage or
 * set-up error.
 *
 * Threading: the main thread runs the client and cp; the server (its
 * listener and sessions) and the sampler run on their own threads.
 */
/*
 * The server, plans and copies as the session tests make them (plan_make,
 * server_start, copy_opts, copy). Its set-up asserts with cmocka: a server
 * that cannot listen ends the bench with cmocka's message and status 255.
 */
#include "tests/unit/session_harness.h"
#include "tests/bench/datapath_files.h"
#include "tests/bench/datapath_sampler.h"
#include "tests/bench/datapath_steps.h"

#include <ctype.h>
#include <getopt.h>
#include <sched.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#define MAX_RAILS 16

extern char **environ;

/* ---- the bench ---- */

struct opts {
	uint64_t bytes, files, file_size, chunk, budget;
	unsigned rounds, qps, rails, workers;
	unsigned helpers,
		io_depth; /* the plans', both ends: 0 the engine's choice, TOPO_NONE none */
	const char *dir;
	bool verbose;
};

/* One case's figures, one per round. */
struct bcase {
	const char *name;
	const char *rel; /* beneath the source directory and the destinations */
	bool tree;
	uint64_t files, bytes;
	char src[4096];
	unsigned rounds; /* rounds that ran and were verified */
	bool failed;
	double eng_s[MAX_ROUNDS], data_s[MAX_ROUNDS], cpu[N_ENDS][MAX_ROUNDS];
	double proc[MAX_ROUNDS], cp_s[MAX_ROUNDS], cp_cpu[MAX_ROUNDS];
	struct steps_log steps;			      /* each end's steps (common/steps.h) */
	unsigned threads[N_ENDS], io_threads[N_ENDS]; /* the most at once, in the last round */
	char file_io[128];			      /* the sender's, as the engine reports it */
};

struct bench_ctx {
	const struct opts *o;
	char base[4096], src[4096], root[4096], cpdst[4096];
	struct server srv;
	struct topo_plan plan;
	uint8_t *ba, *bb;
};

static _Atomic bool interrupted;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&interrupted, true);
}

/* The push ended with err and rep: it succeeded and dst holds c's source, byte for byte. */
static bool engine_check(struct bench_ctx *b, const struct bcase *c, int err,
			 const struct eng_report *rep, const char *dst)
{
	uint64_t files = 0;

	if (err) {
		printf("    engine push failed: %s\n", rcp_err_msg(err));
		return false;
	}
	if (rep->bytes != c->bytes || rep->files != c->files) {
		printf("    WRONG COPY: the engine reports %" PRIu64 " bytes in %" PRIu64
		       " files, not %" PRIu64 " in %" PRIu64 "\n",
		       rep->bytes, rep->files, c->bytes, c->files);
		return false;
	}
	if (!c->tree)
		return file_equal(c->src, dst, b->ba, b->bb);
	return tree_equal(c->src, dst, b->ba, b->bb, &files) && files == c->files;
}

/* One engine push of c into the server's root, checked; figures into round r. */
static bool engine_round(struct bench_ctx *b, struct bcase *c, unsigned r)
{
	const char *src[] = {c->src};
	struct eng_copy_opts cp = copy_opts(ENG_PUSH, src, 1, "");
	struct sampler *smp = calloc(1, sizeof(*smp));
	struct eng_report rep = {0};
	struct rusage r0, r1;
	char dst[4096];
	uint64_t t0, t1;
	unsigned n_ended;
	bool ok;
	int err;

	if (!smp || (err = sampler_start(smp)) != 0) {
		printf("    cannot start the CPU sampler: %s\n", strerror(smp ? -err : ENOMEM));
		free(smp);
		return false;
	}
	cp.chunk = (uint32_t)b->o->chunk;
	cp.recursive = c->tree;
	cp.cancel = &interrupted;
	n_ended = steps_ended();
	getrusage(RUSAGE_SELF, &r0);
	t0 = rcp_now_ns();
	err = copy(&b->srv, &b->plan, &cp, NULL, &rep);
	t1 = rcp_now_ns();
	sampler_stop(smp, c->cpu, r);
	if (!err)
		steps_take(&c->steps, r, &rep.steps, n_ended);
	getrusage(RUSAGE_SELF, &r1);
	t_path(dst, b->root, c->rel);
	ok = engine_check(b, c, err, &rep, dst);
	snprintf(c->file_io, sizeof(c->file_io), "%s", rep.file_io);
	if (smp->overflow)
		printf("    note: more than %u threads; the CPU per end is short\n", MAX_TIDS);
	c->eng_s[r] = (double)(t1 - t0) / 1e9;
	c->data_s[r] = rep.seconds;
	c->proc[r] = ru_seconds(&r1) - ru_seconds(&r0) - smp->self_s;
	memcpy(c->threads, smp->max_own, sizeof(c->threads));
	memcpy(c->io_threads, smp->max_io, sizeof(c->io_threads));
	free(smp);
	t_rm_rf(dst);
	return ok;
}

/* cp (-r) of c into the cp destination; figures into round r. */
static bool cp_round(struct bench_ctx *b, struct bcase *c, unsigned r)
{
	char dst[4096], *argv[] = {"cp", c->tree ? "-r" : "--", c->src, dst, NULL};
	struct rusage ru = {0};
	uint64_t t0;
	pid_t pid;
	int st = 0, err;

	t_path(dst, b->cpdst, c->rel);
	t0 = rcp_now_ns();
	err = posix_spawn(&pid, "/bin/cp", NULL, NULL, argv, environ);
	if (err) {
		printf("    cannot run /bin/cp: %s\n", strerror(err));
		return false;
	}
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	c->cp_s[r] = (double)(rcp_now_ns() - t0) / 1e9;
	c->cp_cpu[r] = ru_seconds(&ru);
	t_rm_rf(dst);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("    cp failed (status 0x%x)\n", (unsigned)st);
		return false;
	}
	return true;
}

static double gib(uint64_t bytes)
{
	return (double)bytes / (double)GIB;
}

/* Per round: the engine's rate, data phase and CPU, cp's rate and CPU. */
static void round_print(const struct bcase *c, unsigned r, bool warmup)
{
	double eng = c->tree ? (double)c->files / c->eng_s[r] : gib(c->bytes) / c->eng_s[r];
	double cpr = c->tree ? (double)c->files / c->cp_s[r] : gib(c->bytes) / c->cp_s[r];
	const char *unit = c->tree ? "files/s" : "GiB/s";
	char label[32];

	if (warmup)
		snprintf(label, sizeof(label), "warm-up");
	else
		snprintf(label, sizeof(label), "round %u", r + 1);
	printf("  %-8s engine %.3f s, %.2f %s (data phase %.3f s); CPU s: sender %.3f, "
	       "receiver %.3f, process %.3f | cp %.3f s, %.2f %s, CPU %.3f s\n",
	       label, c->eng_s[r], eng, unit, c->data_s[r], c->cpu[END_SND][r], c->cpu[END_RCV][r],
	       c->proc[r], c->cp_s[r], cpr, unit, c->cp_cpu[r]);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* min, median, max of v[0..n) (n > 0), each as v * num, or as num / v when invert. */
static void spread(const double *v, unsigned n, double num, bool invert, double out[3])
{
	double s[MAX_ROUNDS];
	unsigned i;

	for (i = 0; i < n; i++)
		s[i] = invert ? num / v[i] : v[i] * num;
	qsort(s, n, sizeof(*s), dbl_cmp);
	out[0] = s[0];
	out[1] = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	out[2] = s[n - 1];
}

static void row(const char *label, const double *v, unsigned n, double num, bool invert,
		double *median_out)
{
	double m[3];

	spread(v, n, num, invert, m);
	printf("  %-30s %12.3f %12.3f %12.3f\n", label, m[0], m[1], m[2]);
	if (median_out)
		*median_out = m[1];
}

/* A row of the steps' table (datapath_steps.c): ms already. */
static void steps_row(const char *label, const double *v, unsigned n)
{
	row(label, v, n, 1, false, NULL);
}

static void case_print(const struct bcase *c)
{
	const char *unit = c->tree ? "files/s" : "GiB/s";
	double amount = c->tree ? (double)c->files : gib(c->bytes);
	double per_gib = c->bytes ? 1 / gib(c->bytes) : 0;
	double eng_med, cp_med;
	char label[64];
	unsigned n = c->rounds;

	printf("%s: %" PRIu64 " file%s, %.3f GiB; %u round%s verified; data-path threads at once: "
	       "sender %u + %u io_uring, receiver %u + %u io_uring\n",
	       c->name, c->files, c->files == 1 ? "" : "s", gib(c->bytes), n, n == 1 ? "" : "s",
	       c->threads[END_SND], c->io_threads[END_SND], c->threads[END_RCV],
	       c->io_threads[END_RCV]);
	printf("  file I/O (sender): %s\n", c->file_io);
	printf("  %-30s %12s %12s %12s\n", "", "min", "median", "max");
	snprintf(label, sizeof(label), "engine %s", unit);
	row(label, c->eng_s, n, amount, true, &eng_med);
	snprintf(label, sizeof(label), "cp %s", unit);
	row(label, c->cp_s, n, amount, true, &cp_med);
	snprintf(label, sizeof(label), "engine %s in its data phase", unit);
	row(label, c->data_s, n, amount, true, NULL);
	row("engine wall s", c->eng_s, n, 1, false, NULL);
	row("engine data phase s", c->data_s, n, 1, false, NULL);
	row("cp wall s", c->cp_s, n, 1, false, NULL);
	if (c->bytes) {
		row("CPU s/GiB sender end", c->cpu[END_SND], n, per_gib, false, NULL);
		row("CPU s/GiB receiver end", c->cpu[END_RCV], n, per_gib, false, NULL);
		row("CPU s/GiB process", c->proc, n, per_gib, false, NULL);
		row("CPU s/GiB cp", c->cp_cpu, n, per_gib, false, NULL);
	}
	if (c->tree) {
		row("CPU us/file sender", c->cpu[END_SND], n, 1e6 / (double)c->files, false, NULL);
		row("CPU us/file receiver", c->cpu[END_RCV], n, 1e6 / (double)c->files, false,
		    NULL);
		row("CPU us/file cp", c->cp_cpu, n, 1e6 / (double)c->files, false, NULL);
	}
	snprintf(label, sizeof(label), "engine/cp, %s (medians)", unit);
	printf("  %-30s %12s %12.3f\n", label, "", eng_med / cp_med);
	steps_print(&c->steps, c->rounds, steps_row);
	printf("\n");
}

/*
 * Every round of c, engine and cp taking turns at going first, after a
 * warm-up round (verified, not counted): in a VM the first touch of this much
 * memory can cost more than the copy itself (the first engine round of 1 GiB
 * measured 3x slower than the next ones), and whichever ran first would pay.
 */
static void case_run(struct bench_ctx *b, struct bcase *c)
{
	unsigned i, r;
	bool ok;

	printf("%s: %s\n", c->name, c->src);
	for (i = 0; i <= b->o->rounds && !atomic_load(&interrupted); i++) {
		r = i ? i - 1 : 0; /* the warm-up's figures are overwritten by round 1 */
		if (i == 0 || r % 2 == 0)
			ok = engine_round(b, c, r) && cp_round(b, c, r);
		else
			ok = cp_round(b, c, r) && engine_round(b, c, r);
		if (!ok) {
			c->failed = true;
			printf("  %s failed\n", i ? "a round" : "the warm-up");
			break;
		}
		round_print(c, r, i == 0);
		c->rounds = i;
	}
	if (c->rounds == 0)
		c->failed = true;
	if (c->rounds > 0)
		case_print(c);
}

/* ---- set-up ---- */

static int mkdir_in(const char *base, const char *name, char out[4096])
{
	int err;

	t_path(out, base, name);
	if (mkdir(out, 0755) == 0)
		return 0;
	err = errno;
	printf("bench_datapath: cannot create %s: %s\n", out, strerror(err));
	return -err;
}

/* The scratch directory, its parts, and the sources; keys only from nowhere. */
static int ctx_setup(struct bench_ctx *b, struct bcase cases[2])
{
	char cfg[4096];
	int err;

	t_path(b->base, b->o->dir, "railcp-bench-XXXXXX");
	if (!mkdtemp(b->base)) {
		err = errno;
		printf("bench_datapath: cannot create a directory in %s: %s\n", b->o->dir,
		       strerror(err));
		b->base[0] = '\0';
		return -err;
	}
	if (mkdir_in(b->base, "src", b->src) || mkdir_in(b->base, "root", b->root) ||
	    mkdir_in(b->base, "cp", b->cpdst) || mkdir_in(b->base, "cfg", cfg))
		return -EIO;
	/* No key from the environment or the home directory: the server serves this user only. */
	unsetenv(ENG_AUTH_ENV);
	setenv("XDG_CONFIG_HOME", cfg, 1);
	b->ba = malloc(IO_BLOCK);
	b->bb = malloc(IO_BLOCK);
	if (!b->ba || !b->bb)
		return -ENOMEM;
	t_path(cases[0].src, b->src, cases[0].rel);
	t_path(cases[1].src, b->src, cases[1].rel);
	if ((err = file_make(cases[0].src, cases[0].bytes, 0, b->ba)) != 0 ||
	    (err = tree_make_flat(cases[1].src, cases[1].files, b->o->file_size, b->ba)) != 0) {
		printf("bench_datapath: cannot write the sources in %s: %s\n", b->src,
		       strerror(-err));
		return err;
	}
	return 0;
}

static void ctx_cleanup(struct bench_ctx *b)
{
	server_stop(&b->srv);
	if (b->base[0])
		t_rm_rf(b->base);
	free(b->ba);
	free(b->bb);
}

static void header_print(const struct bench_ctx *b)
{
	const struct opts *o = b->o;
	struct utsname u;
	struct statfs fs;
	bool tmpfs = statfs(b->base, &fs) == 0 && fs.f_type == TMPFS_MAGIC;

	uname(&u);
	printf("bench_datapath: engine push over the loopback transport vs cp, %ld CPUs, "
	       "Linux %s\n",
	       sysconf(_SC_NPROCESSORS_ONLN), u.release);
	printf("  files in %s (%s)\n", b->base,
	       tmpfs ? "tmpfs" : "NOT tmpfs: the disk is measured too");
	printf("  %u rail%s (loop1..loop%u) x %u QPs, %u worker%s per end, chunk %" PRIu64
	       " KiB, slot memory %u MiB per worker, a warm-up and %u round%s (engine and "
	       "cp take turns going first)\n",
	       o->rails, o->rails == 1 ? "" : "s", o->rails, o->qps, o->workers,
	       o->workers == 1 ? "" : "s", o->chunk >> 10,
	       (unsigned)(b->plan.worker[0].buffer_bytes >> 20), o->rounds,
	       o->rounds == 1 ? "" : "s");
	printf("  CPU per end: threads rcp-snd-* (sender: the client) / rcp-rcv-* (receiver: "
	       "the server) and their io_uring workers, from /proc/self/task/*/%s every %d ms "
	       "(resolution %s, plus up to %d ms per thread after its last sample); process: "
	       "RUSAGE_SELF, all threads but the sampler\n\n",
	       use_schedstat ? "schedstat" : "stat", SAMPLE_MS,
	       use_schedstat ? "1 ns" : "1 clock tick per thread", SAMPLE_MS);
}

/* ---- options ---- */

/* A size with an optional binary suffix: 64M, 1G, 4KiB. */
static int parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	if (*end && (u = strchr(units, toupper((unsigned char)*end))) != NULL) {
		v <<= 10 * (u - units + 1);
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * Every worker may run on every CPU this process may: the engine sizes its
 * helpers from a worker's CPUs as it does for railcp on this host.
 */
static void plan_cpus(struct topo_plan *p)
{
	cpu_set_t set;
	unsigned w, c;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (w = 0; w < p->n_workers; w++)
		for (c = 0; c < CPU_SETSIZE && c < TOPO_MAX_CPUS; c++)
			if (CPU_ISSET(c, &set))
				topo_bitmap_set(&p->worker[w].cpus, c);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_datapath [OPTION]... (sizes take K, M, G: 64M)\n"
		   "  --bytes N        size of the big file (default 1G; --quick 64M)\n"
		   "  --files N        files in the tree (default 2000; --quick 200)\n"
		   "  --file-size N    size of each file of the tree (default 4K)\n"
		   "  --rounds N       counted rounds of each case (default 5; --quick 2)\n"
		   "  --dir DIR        where sources and destinations go (default /dev/shm)\n"
		   "  --chunk N        bytes per RDMA write (default 1M)\n"
		   "  --qps N          QPs per rail (default 4)\n"
		   "  --rails N        loopback rails loop1..loopN (default 2)\n"
		   "  --workers N      workers per end, the rails spread over them (default 1)\n"
		   "  --slot-memory N  slot memory per worker at each end (default 64M)\n"
		   "  --helpers N      helper threads per worker at each end, as railcp's\n"
		   "                   --helpers (default: the engine's choice; 0: none)\n"
		   "  --io-depth N     ring entries per helper, as railcp's --io-depth\n"
		   "                   (default: the engine's choice; 0: pread and pwrite)\n"
		   "  --quick          short sizes for CI\n"
		   "  --verbose        the engine's notices (each server session) on stderr\n");
}

static int opts_parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {{"bytes", 1, 0, 'b'},     {"files", 1, 0, 'f'},
					   {"file-size", 1, 0, 's'}, {"rounds", 1, 0, 'r'},
					   {"dir", 1, 0, 'd'},	     {"chunk", 1, 0, 'c'},
					   {"qps", 1, 0, 'q'},	     {"rails", 1, 0, 'R'},
					   {"workers", 1, 0, 'w'},   {"slot-memory", 1, 0, 'm'},
					   {"quick", 0, 0, 'Q'},     {"verbose", 0, 0, 'v'},
					   {"helpers", 1, 0, 'H'},   {"io-depth", 1, 0, 'D'},
					   {"help", 0, 0, 'h'},	     {0, 0, 0, 0}};
	uint64_t v[128] = {0};
	bool set[128] = {false}, quick = false;
	int c;

	*o = (struct opts){.dir = "/dev/shm"};
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		} else if (c == 'Q') {
			quick = true;
		} else if (c == 'v') {
			o->verbose = true;
		} else if (c == 'd') {
			o->dir = optarg;
		} else if (c == '?' || parse_size(optarg, &v[c])) {
			if (c != '?')
				fprintf(stderr, "bench_datapath: not a number: %s\n", optarg);
			usage(stderr);
			return -EINVAL;
		} else {
			set[c] = true;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return -EINVAL;
	}
	o->bytes = set['b'] ? v['b'] : quick ? 64 * MiB : GIB;
	o->files = set['f'] ? v['f'] : quick ? 200 : 2000;
	o->file_size = set['s'] ? v['s'] : 4 * KiB;
	o->rounds = (unsigned)(set['r'] ? v['r'] : quick ? 2 : 5);
	o->chunk = set['c'] ? v['c'] : ENG_CHUNK_DEFAULT;
	o->qps = (unsigned)(set['q'] ? v['q'] : 4);
	o->rails = (unsigned)(set['R'] ? v['R'] : 2);
	o->workers = (unsigned)(set['w'] ? v['w'] : 1);
	o->budget = set['m'] ? v['m'] : 64 * MiB;
	o->helpers = !set['H'] ? 0 : v['H'] == 0 ? TOPO_NONE : (unsigned)v['H'];
	o->io_depth = !set['D'] ? 0 : v['D'] == 0 ? TOPO_NONE : (unsigned)v['D'];
	if (o->rounds < 1 || o->rounds > MAX_ROUNDS || o->bytes < 1 || o->files < 1 || o->qps < 1 ||
	    o->qps > 64 || o->rails < 1 || o->rails > MAX_RAILS || o->workers < 1 ||
	    o->workers > o->rails || o->chunk < ENG_CHUNK_MIN || o->chunk > ENG_CHUNK_MAX ||
	    o->chunk % ENG_CHUNK_MIN || (set['H'] && v['H'] > TOPO_MAX_HELPERS) ||
	    (set['D'] && v['D'] > TOPO_MAX_IO_DEPTH)) {
		fprintf(stderr,
			"bench_datapath: out of range: rounds 1..%d, bytes and files >= 1, "
			"qps 1..64, rails 1..%d, workers 1..rails, chunk a multiple of %u up "
			"to %u, helpers 0..%u, io-depth 0..%u\n",
			MAX_ROUNDS, MAX_RAILS, ENG_CHUNK_MIN, ENG_CHUNK_MAX, TOPO_MAX_HELPERS,
			TOPO_MAX_IO_DEPTH);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct bcase cases[2] = {
		{.name = "big file", .rel = "big.bin"},
		{.name = "tree of small files", .rel = "tree", .tree = true}};
	static struct bench_ctx b;
	struct sigaction sa = {.sa_handler = on_signal};
	unsigned rails[MAX_RAILS], i, passed = 0, failed = 0;
	struct opts o;

	setvbuf(stdout, NULL, _IOLBF, 0);
	use_schedstat = access("/proc/self/schedstat", R_OK) == 0;
	if (opts_parse(argc, argv, &o))
		return 2;
	rcp_log_set_level(o.verbose ? RCP_LOG_NOTICE : RCP_LOG_SILENT);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	b.o = &o;
	cases[0].files = 1;
	cases[0].bytes = o.bytes;
	cases[1].files = o.files;
	cases[1].bytes = o.files * o.file_size;
	for (i = 0; i < o.rails; i++)
		rails[i] = i + 1;
	plan_make(&b.srv.plan, rails, o.rails, 1, o.workers, o.budget);
	plan_make(&b.plan, rails, o.rails, o.qps, o.workers, o.budget);
	plan_cpus(&b.srv.plan);
	plan_cpus(&b.plan);
	b.srv.plan.helpers = b.plan.helpers = o.helpers;
	b.srv.plan.io_depth = b.plan.io_depth = o.io_depth;
	if (ctx_setup(&b, cases)) {
		ctx_cleanup(&b);
		return 2;
	}
	header_print(&b);
	b.srv.session_end = steps_session_end;
	server_start(&b.srv, NULL, b.root, NULL);
	for (i = 0; i < RCP_ARRAY_SIZE(cases) && !atomic_load(&interrupted); i++)
		case_run(&b, &cases[i]);
	for (i = 0; i < RCP_ARRAY_SIZE(cases); i++) {
		passed += !cases[i].failed && cases[i].rounds == o.rounds;
		failed += cases[i].failed;
	}
	ctx_cleanup(&b);
	if (atomic_load(&interrupted))
		printf("bench_datapath: interrupted\n");
	/* tools/check reads this line: a name of letters only, then the counts. */
	printf("datapath: %u passed, %u failed\n", passed, failed);
	return failed || passed != RCP_ARRAY_SIZE(cases) ? 1 : 0;
}
