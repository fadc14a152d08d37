/*
 * steps.h - where a session's time goes: its fixed steps (the machine's
 * discovery, the walk, the control connection, the file list, memory,
 * connections, the end exchange, the finalize, the teardown) beside its data
 * phase, each measured once on CLOCK_MONOTONIC (rcp_now_ns).
 *
 * A session keeps one struct rcp_steps: rcp_steps_start marks a moment and
 * each rcp_steps_lap charges the time since the last mark to one step, so the
 * steps of one thread add up to its wall time, none counted twice. The
 * engine's report carries them (eng_report.steps); --json prints them as
 * "steps" (rcp_steps_json's keys are doc/usage.md's) and -v as one line.
 *
 * Threading: a struct rcp_steps belongs to the one thread that laps it.
 */
#ifndef RAILCP_COMMON_STEPS_H
#define RAILCP_COMMON_STEPS_H

#include <stddef.h>
#include <stdint.h>

enum rcp_step {
	RCP_STEP_TOPOLOGY, /* hwloc and the device (or interface) discovery: the plan */
	RCP_STEP_WALK,	   /* the sources walked and cut into chunks */
	RCP_STEP_CONTROL,  /* the key, the control connection, hello and proofs */
	RCP_STEP_MANIFEST, /* the file list and maps either way, the welcome */
	RCP_STEP_MEMORY,   /* the job: slot memory, workers, the transport's connection set */
	RCP_STEP_CONNECT,  /* every stripe connected (on RDMA also its registration) */
	RCP_STEP_DATA,	   /* the data phase: the job's run */
	RCP_STEP_END,	   /* the end exchange (done and result) less the finalize */
	RCP_STEP_FINALIZE, /* the receiver: files checked in place, directories finished */
	RCP_STEP_TEARDOWN, /* connections closed, memory freed, threads joined */
	RCP_STEP_N,
};

struct rcp_steps {
	uint64_t ns[RCP_STEP_N]; /* each step's total */
	uint64_t mark;		 /* the last lap (0: not started) */
};

/* Forget every step and mark now. */
void rcp_steps_start(struct rcp_steps *s);

/* Charge the time since the last mark to step, and mark now. */
void rcp_steps_lap(struct rcp_steps *s, enum rcp_step step);

/* The step's key in --json and its word in -v: "topology", "walk", ... */
const char *rcp_step_name(enum rcp_step step);

/* The fixed steps' sum: every step but the data phase. */
uint64_t rcp_steps_setup_ns(const struct rcp_steps *s);

/*
 * One line for -v into buf: "topology 12.1 ms, walk 0.8 ms, ..., data
 * 61.0 ms; fixed 110.2 ms". Returns buf.
 */
const char *rcp_steps_line(const struct rcp_steps *s, char *buf, size_t size);

#endif
