/*
 * datapath_sampler.c - per-thread CPU from /proc/self/task, for
 * bench_datapath.c: how much CPU the sending and the receiving end of a
 * push spend.
 *
 * CPU per end: a sampler thread reads /proc/self/task/<tid>/stat (the
 * thread's name) every SAMPLE_MS and, for threads named rcp-snd-* (the
 * sending end) or rcp-rcv-* (the receiving end), their CPU time, keeping the
 * last value per thread, so threads that end during the run still count.
 * The kernel's io_uring workers (iou-wrk-<tid>, iou-sqp-<tid>: threads of
 * this process that do the I/O a ring could not complete inline) count for
 * the end of the thread <tid> whose ring they serve.
 * The CPU time comes from /proc/self/task/<tid>/schedstat (time on a CPU, in
 * ns: the total that stat's utime + stime split, without their 10 ms clock
 * ticks, which would round a 200-file tree's data path to zero), or from
 * stat's utime + stime where the kernel has no schedstat. Resolution: up to
 * SAMPLE_MS of CPU a thread spends after its last sample before it exits is
 * lost, and a thread that lives less than SAMPLE_MS may be missed. The
 * process's RUSAGE_SELF delta, less the sampler's own CPU, is printed as a
 * cross-check: it also holds the client's and the server's session threads
 * (walk, control, authentication, setting up the slot memory), which belong
 * to neither end.
 *
 * Threading: sampler_start and sampler_stop run on the bench's main thread;
 * between them the sampler thread alone writes the struct sampler, and
 * sampler_stop reads it only after joining that thread.
 */
#include "tests/bench/datapath_sampler.h"

#include "common/common.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool use_schedstat;

/*
 * The end a thread's name gives: END_SND or END_RCV for the engine's threads;
 * -1 for others, with *owner_out set for the kernel's io_uring workers
 * (iou-wrk-<tid>, iou-sqp-<tid>), which work for thread <tid>'s ring and
 * count for its end.
 */
static int name_end(const char *comm, size_t len, pid_t *owner_out)
{
	*owner_out = 0;
	if (len > 8 && !strncmp(comm, "rcp-snd-", 8))
		return END_SND;
	if (len > 8 && !strncmp(comm, "rcp-rcv-", 8))
		return END_RCV;
	if (len > 8 && (!strncmp(comm, "iou-wrk-", 8) || !strncmp(comm, "iou-sqp-", 8)))
		*owner_out = (pid_t)strtol(comm + 8, NULL, 10);
	return -1;
}

/* /proc/self/task/<tid>/<what> into buf, NUL-terminated; false when the thread is gone. */
static bool tid_file(pid_t tid, const char *what, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, what);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* A thread's end and owner (name_end) and, if either is set, its CPU ns; false when gone. */
static bool tid_read(pid_t tid, int *end_out, pid_t *owner_out, uint64_t *ns_out)
{
	char buf[1024], *open_p, *close_p, *p;
	unsigned long long ut, st, ns;
	int i;

	if (!tid_file(tid, "stat", buf, sizeof(buf)))
		return false;
	/* "tid (comm) state ppid ...": comm may hold spaces and parentheses. */
	open_p = strchr(buf, '(');
	close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p)
		return false;
	*end_out = name_end(open_p + 1, (size_t)(close_p - open_p - 1), owner_out);
	if (*end_out < 0 && !*owner_out)
		return true;
	if (use_schedstat) /* "run_ns wait_ns timeslices": the same total, to the ns */
		return tid_file(tid, "schedstat", buf, sizeof(buf)) &&
		       sscanf(buf, "%llu", &ns) == 1 && (*ns_out = ns, true);
	/* Fields 3 (state) to 13 come first; utime and stime are fields 14 and 15. */
	p = close_p + 1;
	for (i = 3; i < 14 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu %llu", &ut, &st) != 2)
		return false;
	*ns_out = (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	return true;
}

/* The end of the thread an io_uring worker works for; -1 when none. */
static int owner_end(const struct sampler *s, pid_t owner)
{
	uint64_t ns;
	pid_t none;
	unsigned i;
	int end;

	for (i = 0; i < s->n; i++)
		if (s->t[i].tid == owner)
			return (int)s->t[i].end;
	return tid_read(owner, &end, &none, &ns) ? end : -1;
}

/* Keep thread tid's CPU ns for end; first: it ran before the run, count from now. */
static void sampler_keep(struct sampler *s, pid_t tid, enum end end, uint64_t ns, bool first)
{
	unsigned i;

	for (i = 0; i < s->n && s->t[i].tid != tid; i++)
		;
	if (i == s->n) {
		if (s->n == MAX_TIDS) {
			s->overflow = true;
			return;
		}
		s->t[s->n++] = (struct tid_cpu){.tid = tid, .base = first ? ns : 0};
	}
	s->t[i].end = end; /* a helper may rename itself after its birth */
	s->t[i].last = ns;
}

/* One pass over the process's threads. */
static void sampler_scan(struct sampler *s, bool first)
{
	unsigned own[N_ENDS] = {0}, io[N_ENDS] = {0}, e;
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	uint64_t ns;
	pid_t tid, owner;
	int end;

	if (!d)
		return;
	while ((de = readdir(d))) {
		tid = (pid_t)atoi(de->d_name);
		if (tid <= 0 || !tid_read(tid, &end, &owner, &ns))
			continue;
		if (owner && (end = owner_end(s, owner)) >= 0)
			io[end]++;
		else if (end >= 0)
			own[end]++;
		if (end >= 0)
			sampler_keep(s, tid, (enum end)end, ns, first);
	}
	closedir(d);
	for (e = 0; e < N_ENDS; e++) {
		s->alive[e] = own[e] + io[e];
		if (own[e] > s->max_own[e])
			s->max_own[e] = own[e];
		if (io[e] > s->max_io[e])
			s->max_io[e] = io[e];
	}
}

double ru_seconds(const struct rusage *r)
{
	return (double)r->ru_utime.tv_sec + (double)r->ru_utime.tv_usec / 1e6 +
	       (double)r->ru_stime.tv_sec + (double)r->ru_stime.tv_usec / 1e6;
}

/* Scan every SAMPLE_MS; once told to stop, until no data-path thread is left. */
static void *sampler_main(void *arg)
{
	struct timespec step = {0, SAMPLE_MS * 1000000L};
	struct sampler *s = arg;
	struct rusage r0, r1;
	uint64_t settle_end = 0;

	pthread_setname_np(pthread_self(), "bench-sampler");
	getrusage(RUSAGE_THREAD, &r0);
	for (;;) {
		sampler_scan(s, false);
		if (atomic_load(&s->stop)) {
			if (!settle_end)
				settle_end = rcp_now_ns() + SETTLE_MS * 1000000ull;
			if (s->alive[END_SND] + s->alive[END_RCV] == 0 || rcp_now_ns() > settle_end)
				break;
		}
		nanosleep(&step, NULL);
	}
	getrusage(RUSAGE_THREAD, &r1);
	s->self_s = ru_seconds(&r1) - ru_seconds(&r0);
	return NULL;
}

int sampler_start(struct sampler *s)
{
	memset(s, 0, sizeof(*s));
	sampler_scan(s, true);
	return -pthread_create(&s->thread, NULL, sampler_main, s);
}

/* Stop once every data-path thread has ended; CPU seconds per end into cpu[end][r]. */
void sampler_stop(struct sampler *s, double cpu[N_ENDS][MAX_ROUNDS], unsigned r)
{
	unsigned i;

	atomic_store(&s->stop, true);
	pthread_join(s->thread, NULL);
	cpu[END_SND][r] = cpu[END_RCV][r] = 0;
	for (i = 0; i < s->n; i++)
		cpu[s->t[i].end][r] += (double)(s->t[i].last - s->t[i].base) / 1e9;
}
