/*
 * session_gate.h - a copy held mid-way for tests of what an interrupted
 * copy leaves (test_session_hostile.c, test_session_partial.c) and of a
 * side whose disk hangs (test_session_held.c).
 *
 * Threading: the gate's state is atomic; one gated copy at a time.
 */
#ifndef RAILCP_TEST_SESSION_GATE_H
#define RAILCP_TEST_SESSION_GATE_H

#include "session_harness.h"

/*
 * The gated transport: the loopback, but a sender job's chunk source holds
 * every chunk from the after-th on until the job stops (where its read
 * completes, on a helper thread), so a copy cannot finish before its cancel
 * is seen (or, armed with gate_arm_until, until the test sets a flag).
 * The gate gives up after 10 s, and the copy then succeeds, which fails
 * the test rather than hanging it. The chunks before the after-th go to
 * the worker as their reads complete and reach the receiver: the tests
 * give the sender a helper thread, since a worker without helpers would be
 * held itself.
 */
static struct gate {
	unsigned after;
	_Atomic unsigned filled;
	_Atomic bool hit;
	_Atomic bool gave_up;  /* it held 10 s in vain: open for good */
	_Atomic bool *release; /* set: the held chunks go on (gate_arm_until) */
	bool past_stop;	       /* the job's stop does not open it: a hung disk (gate_arm_held) */
	struct eng_job *job;
	int (*prepare)(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op);
	int (*complete)(void *ctx, struct eng_chunk_hdr *hdr, const void *buf, int64_t got,
			struct io_op *op);
	void *ctx;
} gate;

static struct eng_transport gate_tr;

static int gate_prepare(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op)
{
	struct gate *g = ctx;

	return g->prepare(g->ctx, hdr, buf, op);
}

/* Held where a chunk's read finishes: the chunks before it are already on their way. */
static int gate_complete(void *ctx, struct eng_chunk_hdr *hdr, const void *buf, int64_t got,
			 struct io_op *op)
{
	struct gate *g = ctx;

	if (op->kind == IO_OP_READ && atomic_fetch_add(&g->filled, 1) >= g->after &&
	    !atomic_load(&g->gave_up)) {
		atomic_store(&g->hit, true);
		if (!WAIT_FOR((!g->past_stop && atomic_load(&g->job->stop)) ||
			      (g->release && atomic_load(g->release))))
			atomic_store(&g->gave_up, true);
	}
	return g->complete(g->ctx, hdr, buf, got, op);
}

static int gate_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	/* The job's links are its stripes' first members (datapath_int.h). */
	struct eng_job *job = ((struct eng_stripe *)cfg->link[0])->job;

	if (job->role == ENG_SENDER) {
		gate.job = job;
		gate.prepare = job->src.prepare;
		gate.complete = job->src.complete;
		gate.ctx = job->src.ctx;
		job->src.prepare = gate_prepare;
		job->src.complete = gate_complete;
		job->src.ctx = &gate;
	}
	return eng__transport_loopback()->conn_create(cfg, conn_out);
}

static const struct eng_transport *gate_arm(unsigned after)
{
	gate_tr = *eng__transport_loopback();
	gate_tr.name = "gated loopback";
	gate_tr.conn_create = gate_conn_create;
	gate.after = after;
	gate.job = NULL;
	atomic_store(&gate.filled, 0);
	atomic_store(&gate.hit, false);
	atomic_store(&gate.gave_up, false);
	gate.release = NULL;
	gate.past_stop = false;
	return &gate_tr;
}

/* gate_arm, but the held chunks also go on once *release is set. */
static inline const struct eng_transport *gate_arm_until(unsigned after, _Atomic bool *release)
{
	const struct eng_transport *tr = gate_arm(after);

	gate.release = release;
	return tr;
}

/*
 * gate_arm_until, but the held reads wait for *release alone, as reads from
 * a hung disk would: the sender's job stops, its helper stays held.
 */
static inline const struct eng_transport *gate_arm_held(unsigned after, _Atomic bool *release)
{
	const struct eng_transport *tr = gate_arm_until(after, release);

	gate.past_stop = true;
	return tr;
}

/*
 * Another thread: once the gate holds and dir has a temporary (or what
 * until says of dir, if set), set the flag.
 */
struct canceller {
	_Atomic bool *flag;
	const char *dir;
	bool (*until)(const char *dir);
	pthread_t thread;
	bool held, saw_tmp;
};

static void *canceller_main(void *arg)
{
	struct canceller *c = arg;

	c->held = WAIT_FOR(atomic_load(&gate.hit));
	c->saw_tmp = WAIT_FOR(c->until ? c->until(c->dir) : t_count_tmp(c->dir) > 0);
	atomic_store(c->flag, true);
	return NULL;
}

#endif
