/*
 * session_gate.c - the functions of session_gate.h: the gated loopback
 * transport, which holds a sender's chunks where their reads finish, and
 * the canceller thread that acts once it holds. Compiled once, linked into
 * each test that includes the header.
 *
 * Threading: the gate's state is atomic; one gated copy at a time.
 */
#include "session_gate.h"

struct gate gate;

/* The loopback's table, with gate_conn_create. */
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

const struct eng_transport *gate_arm(unsigned after)
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

const struct eng_transport *gate_arm_until(unsigned after, _Atomic bool *release)
{
	const struct eng_transport *tr = gate_arm(after);

	gate.release = release;
	return tr;
}

const struct eng_transport *gate_arm_held(unsigned after, _Atomic bool *release)
{
	const struct eng_transport *tr = gate_arm_until(after, release);

	gate.past_stop = true;
	return tr;
}

void *canceller_main(void *arg)
{
	struct canceller *c = arg;

	c->held = WAIT_FOR(atomic_load(&gate.hit));
	c->saw_tmp = WAIT_FOR(c->until ? c->until(c->dir) : t_count_tmp(c->dir) > 0);
	atomic_store(c->flag, true);
	return NULL;
}
