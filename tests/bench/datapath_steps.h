/*
 * datapath_steps.h - each end's steps (common/steps.h) over the rounds of a
 * case, for bench_datapath.c: the client's from its report, the server's
 * from its session's record (eng_serve_opts.session_end, on the server's
 * thread), which the server makes after its answer to the client, so it is
 * waited for. steps_take and steps_print run on the bench's main thread.
 */
#ifndef RAILCP_BENCH_DATAPATH_STEPS_H
#define RAILCP_BENCH_DATAPATH_STEPS_H

#include "common/steps.h"
#include "engine/engine.h"
#include "tests/bench/datapath_sampler.h"

/* Seconds of each step at each end, per round. */
struct steps_log {
	double s[N_ENDS][RCP_STEP_N][MAX_ROUNDS];
};

/* The server's session_end callback: keeps the steps of the session that ended. */
void steps_session_end(const struct eng_session_record *rec, void *ctx);

/* Sessions ended so far: read before a push, given to steps_take after it. */
unsigned steps_ended(void);

/* Round r's steps: client's, and the server's once a session past n_ended ended (up to 5 s). */
void steps_take(struct steps_log *l, unsigned r, const struct rcp_steps *client, unsigned n_ended);

/*
 * Print each end's steps over n rounds (but topology: the plans are made by
 * the bench) with row(label, values, n): its min, median and max in ms.
 */
void steps_print(const struct steps_log *l, unsigned n,
		 void (*row)(const char *label, const double *v, unsigned n));

#endif
