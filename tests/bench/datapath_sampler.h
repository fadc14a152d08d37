/*
 * datapath_sampler.h - the CPU each end of a push spends, for
 * bench_datapath.c (tests/bench/datapath_sampler.c has the design): a
 * sampler thread that reads every thread's CPU time from /proc/self/task.
 * sampler_start and sampler_stop are called from one thread, the bench's
 * main thread; the sampler runs on a thread of its own in between.
 */
#ifndef RAILCP_BENCH_DATAPATH_SAMPLER_H
#define RAILCP_BENCH_DATAPATH_SAMPLER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#define SAMPLE_MS 10
#define MAX_TIDS 1024
#define MAX_ROUNDS 100
/* After the client returns, how long the server's workers may take to end. */
#define SETTLE_MS 5000

enum end { END_SND, END_RCV, N_ENDS };

/* ---- per-thread CPU from /proc/self/task ---- */

struct tid_cpu {
	pid_t tid;
	enum end end;
	uint64_t base, last; /* CPU ns */
};

struct sampler {
	pthread_t thread;
	_Atomic bool stop;
	struct tid_cpu t[MAX_TIDS];
	unsigned n;
	unsigned alive[N_ENDS];			  /* data-path threads, io_uring workers too */
	unsigned max_own[N_ENDS], max_io[N_ENDS]; /* the most at once: the engine's, the kernel's */
	bool overflow;
	double self_s; /* the sampler thread's own CPU */
};

/* Threads' CPU from schedstat (ns) where the kernel has it, else from stat (clock ticks). */
extern bool use_schedstat;

double ru_seconds(const struct rusage *r);
/* Start sampling; 0 or a negative errno. */
int sampler_start(struct sampler *s);
/* Stop once every data-path thread has ended; CPU seconds per end into cpu[end][r]. */
void sampler_stop(struct sampler *s, double cpu[N_ENDS][MAX_ROUNDS], unsigned r);

#endif
