/*
 * stripe.c - one stripe's chunks and credits, at both ends.
 *
 * Sender: a stripe holds one credit per receiver slot. While it has credits
 * and the job has chunks left, it claims the next chunk from the job's
 * shared cursor and hands the slot's task to a helper (iothreads.c), which
 * reads and hashes the chunk into the local copy of the slot. Chunks whose
 * tasks are done go out as writes of header and data into the receiver's
 * slot (write-with-imm, immediate = slot), several under one doorbell. A
 * credit (send-with-imm naming the slot) frees the slot again. Claiming from
 * a shared cursor is what spreads chunks over rails: a stripe takes a chunk
 * only when a credit comes back, so each rail gets chunks in proportion to
 * the rate at which it drains them - its speed.
 *
 * Receiver: each incoming immediate names a slot; its header is validated
 * against the session and the slot, then the slot's task goes to a helper,
 * which checks, hashes and writes the chunk; once it is back, a receive is
 * reposted and the credit returned. A slot whose task is still out cannot
 * receive: an honest sender has no credit for it.
 *
 * Only one in signal_every writes and sends asks for a completion: the
 * others' queue entries are freed by the next signaled one. The send queue
 * is counted, not inferred from the credits: a credit can arrive before the
 * completion of the write it answers is polled (the CQ holds both, in no
 * promised order), so a sender that posted on credits alone could hold the
 * new writes and the old ones' entries at once and overrun the queue. A
 * chunk that does not fit waits among the ready ones, a credit that does
 * not fit waits in credit_wait, until a signaled completion frees entries.
 *
 * A failure on the fabric (an error completion, a post the device refused)
 * goes to failover.c, which takes the stripe down alone or fails the job; a
 * peer that breaks the protocol fails the job at once (stripe_fail).
 *
 * Threading: a stripe belongs to its worker's thread; what it counts for the
 * coordinator (the stripe's and worker's counters) has that one writer.
 */
#include "engine/datapath/datapath_int.h"

#include "common/common.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t wr_id_of(struct eng_stripe *s, unsigned op)
{
	return (uint64_t)(uintptr_t)s | op;
}

static bool signal_now(struct eng_stripe *s)
{
	if (++s->unsignaled < s->job->signal_every)
		return false;
	s->unsignaled = 0;
	return true;
}

static struct eng_ep *ep_of(struct eng_stripe *s)
{
	return s->link.ep;
}

/* Work requests a chunk takes: the header's write and the data's write-with-imm. */
#define WRS_PER_CHUNK 2

static unsigned sq_room(const struct eng_stripe *s)
{
	return s->link.send_depth - (unsigned)(s->sq_posted - s->sq_freed);
}

/* wrs more entries in use; a signaled one frees them all, and those before, on completion. */
static void sq_use(struct eng_stripe *s, unsigned wrs, bool signaled)
{
	s->sq_posted += wrs;
	if (signaled) {
		assert(s->sq_marks < s->link.send_depth);
		s->sq_mark[(s->sq_head + s->sq_marks++) % s->link.send_depth] = s->sq_posted;
	}
}

/* A signaled write or send completed (in order, as a send queue's do). */
static void sq_completed(struct eng_stripe *s)
{
	if (s->sq_marks == 0)
		return; /* not one of ours to count: nothing was signaled */
	s->sq_freed = s->sq_mark[s->sq_head];
	s->sq_head = (s->sq_head + 1) % s->link.send_depth;
	s->sq_marks--;
}

static int sq_init(struct eng_stripe *s)
{
	s->sq_mark = calloc(s->link.send_depth ? s->link.send_depth : 1, sizeof(*s->sq_mark));
	return s->sq_mark ? 0 : -ENOMEM;
}

/* One task per slot, its stripe and slot set once. */
static int tasks_init(struct eng_stripe *s)
{
	unsigned i, n = s->link.n_slots;

	s->task = calloc(n, sizeof(*s->task));
	if (!s->task)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		s->task[i] = (struct eng_task){.stripe = s, .slot = i};
	return 0;
}

int eng__stripe_init_sender(struct eng_stripe *s)
{
	unsigned i, n = s->link.n_slots;

	s->free_slot = calloc(n, sizeof(*s->free_slot));
	s->ready = calloc(n, sizeof(*s->ready));
	if (!s->free_slot || !s->ready || tasks_init(s) || sq_init(s))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		s->free_slot[i] = n - 1 - i; /* slot 0 is used first */
	s->n_free = n;
	return ep_of(s)->ops->post_recv(ep_of(s), wr_id_of(s, ENG_WR_RECV), n);
}

int eng__stripe_init_receiver(struct eng_stripe *s)
{
	s->credit_wait = calloc(s->link.n_slots, sizeof(*s->credit_wait));
	if (!s->credit_wait || tasks_init(s) || sq_init(s))
		return -ENOMEM;
	return ep_of(s)->ops->post_recv(ep_of(s), wr_id_of(s, ENG_WR_RECV), s->link.n_slots);
}

/*
 * The peer broke the protocol: that is this side's own finding, and the
 * sentence it ends with. Not a fabric error, so the session neither waits
 * for the peer's reason nor takes the peer's sentence for its own (a liar's
 * rails fail too, once its victim stops, and it says so).
 */
static void stripe_fail(struct eng_stripe *s, int err, const char *what)
{
	char where[256];

	ep_of(s)->ops->describe(ep_of(s), where, sizeof(where));
	eng__job_fail(s->job, err, "%s on %s", what, where);
}

/* Keep the first and latest times of the worker's chunks: the coordinator merges them. */
static void worker_clock(struct eng_worker *w, bool first_only)
{
	uint64_t now = rcp_now_ns();

	if (atomic_load_explicit(&w->t_first_ns, memory_order_relaxed) == 0)
		atomic_store_explicit(&w->t_first_ns, now, memory_order_relaxed);
	if (!first_only)
		atomic_store_explicit(&w->t_last_ns, now, memory_order_relaxed);
}

/* The write that carries slot's header and payload, made ready by its task. */
static void chunk_write(struct eng_stripe *s, unsigned slot, struct eng_write *out)
{
	const struct eng_link *l = &s->link;
	struct eng_chunk_hdr *h = &l->hdr[slot];

	*h = s->task[slot].hdr;
	s->task[slot].posted = true;
	*out = (struct eng_write){
		.wr_id = wr_id_of(s, ENG_WR_WRITE),
		.signaled = signal_now(s),
		.hdr = h,
		.hdr_lkey = l->lkey,
		.hdr_dst = {l->peer_hdr.addr + (uint64_t)slot * sizeof(*h), l->peer_hdr.rkey},
		.data = l->data + (size_t)slot * l->slot_size,
		.data_lkey = l->lkey,
		.len = h->len,
		.data_dst = {l->peer_data.addr + (uint64_t)slot * l->slot_size, l->peer_data.rkey},
		.imm = slot,
	};
}

/* The slot's task (its hdr set) out to the worker's helpers, or done at once; see task_done. */
static void task_start(struct eng_stripe *s, struct eng_task *t)
{
	t->queued = true;
	s->busy++;
	if (eng__task_submit(s->worker, t))
		eng__stripe_task_done(t);
}

/* Post the ready chunks that fit in the send queue; the rest wait for its completions. */
void eng__stripe_flush(struct eng_stripe *s)
{
	struct eng_write batch[ENG_WRITE_BATCH];
	unsigned n, i, done = 0;
	int err;

	while (done < s->n_ready && !atomic_load_explicit(&s->job->stop, memory_order_relaxed)) {
		n = s->n_ready - done < ENG_WRITE_BATCH ? s->n_ready - done : ENG_WRITE_BATCH;
		if (n > sq_room(s) / WRS_PER_CHUNK)
			n = sq_room(s) / WRS_PER_CHUNK;
		if (n == 0) { /* full: sq_completed makes room, and the worker flushes again */
			memmove(s->ready, s->ready + done, (s->n_ready - done) * sizeof(*s->ready));
			s->n_ready -= done;
			return;
		}
		for (i = 0; i < n; i++) {
			chunk_write(s, s->ready[done + i], &batch[i]);
			sq_use(s, WRS_PER_CHUNK, batch[i].signaled);
		}
		worker_clock(s->worker, true);
		if (s->outstanding == 0) /* the watchdog's clock starts with the first chunk out */
			s->moved_ns = rcp_now_ns();
		s->outstanding += n;
		atomic_fetch_add_explicit(&s->job->rail[s->rail].out, n, memory_order_relaxed);
		done += n;
		err = ep_of(s)->ops->write_imm(ep_of(s), batch, n);
		if (err) {
			eng__stripe_lost(s, err, "posting RDMA writes failed");
			break;
		}
	}
	s->n_ready = 0;
}

/*
 * Sender: claim the next chunks for the stripe's free slots and hand each to
 * a helper to read and hash; chunks done at once (the bench pattern, a job
 * without helpers) are ready to post. A batch at a time, as the old inline
 * fill did: one stripe that claimed every slot it has would leave a short
 * job's chunks all on its rail.
 */
void eng__stripe_pump(struct eng_stripe *s)
{
	struct eng_job *job = s->job;
	unsigned n = 0;

	/* At most a batch per round: the worker's other stripes, and other workers, claim too. */
	while (s->n_free > 0 && n++ < ENG_WRITE_BATCH &&
	       !atomic_load_explicit(&job->stop, memory_order_relaxed)) {
		uint64_t seq;
		unsigned slot;
		struct eng_task *t;

		if (!eng__job_claim(job, &seq))
			break;
		slot = s->free_slot[--s->n_free];
		t = &s->task[slot];
		t->hdr = (struct eng_chunk_hdr){
			.magic = ENG_HDR_MAGIC, .slot = slot, .token = job->token, .seq = seq};
		t->held = true;
		task_start(s, t);
	}
}

static void chunk_done(struct eng_stripe *s, uint32_t len)
{
	atomic_fetch_add_explicit(&s->bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->chunks, 1, memory_order_relaxed);
	worker_clock(s->worker, false);
	atomic_fetch_add_explicit(&s->worker->done_chunks, 1, memory_order_release);
}

/*
 * Sender: a credit came back for slot imm. Only a slot whose write is out
 * may be credited: not one never written, free, credited already, or one
 * claimed whose chunk is still being read (or ready, not yet posted). The
 * count of writes out is not enough to tell: a hostile receiver that names
 * a claimed slot would have it claimed again while its task is still out
 * (test_session_misbehave.c).
 */
static void on_credit(struct eng_stripe *s, uint32_t slot)
{
	if (slot >= s->link.n_slots || !s->task[slot].posted) {
		stripe_fail(s, -EPROTO,
			    "the receiver returned a credit for a slot it does not hold");
		return;
	}
	s->task[slot].posted = false;
	s->free_slot[s->n_free++] = slot;
	s->outstanding--;
	s->moved_ns = rcp_now_ns();
	atomic_store_explicit(&s->job->rail[s->rail].moved_ns, s->moved_ns, memory_order_relaxed);
	atomic_fetch_sub_explicit(&s->job->rail[s->rail].out, 1, memory_order_relaxed);
	s->task[slot].held = false;
	chunk_done(s, s->link.hdr[slot].len);
	if (ep_of(s)->ops->post_recv(ep_of(s), wr_id_of(s, ENG_WR_RECV), 1))
		eng__stripe_lost(s, -EIO, "reposting a receive failed");
}

/* Receiver: the header must match the session, the slot and the slot size. */
static const char *hdr_invalid(const struct eng_stripe *s, const struct eng_chunk_hdr *h,
			       uint32_t slot)
{
	if (h->magic != ENG_HDR_MAGIC)
		return "a chunk header with a bad magic number";
	if (h->token != s->job->token)
		return "a chunk of another session";
	if (h->slot != slot)
		return "a chunk header that names another slot";
	if (h->len == 0 || h->len > s->link.slot_size)
		return "a chunk longer than its slot";
	if (h->seq >= s->job->src.n_chunks)
		return "a chunk number beyond the job's last";
	return NULL;
}

/*
 * Receiver: slot imm holds a chunk. The header is copied out of the slot
 * first: the sender can write into the slot memory at any time, so checking
 * it in place and reading it again later would let a hostile sender change
 * the length between the check and the use.
 */
static void on_chunk(struct eng_stripe *s, uint32_t slot)
{
	struct eng_chunk_hdr h;
	struct eng_task *t;
	const char *bad;
	char what[128];

	if (slot >= s->link.n_slots) {
		stripe_fail(s, -EPROTO, "the sender wrote to a slot that does not exist");
		return;
	}
	memcpy(&h, (const void *)&s->link.hdr[slot], sizeof(h));
	atomic_signal_fence(memory_order_seq_cst); /* the copy is what gets checked and used */
	if ((bad = hdr_invalid(s, &h, slot)) != NULL) {
		snprintf(what, sizeof(what), "the sender sent %s", bad);
		stripe_fail(s, -EPROTO, what);
		return;
	}
	t = &s->task[slot];
	/* Held here (its chunk being written) or its credit not yet sent: the sender has none. */
	if (t->queued || t->owed) {
		stripe_fail(s, -EPROTO, "the sender wrote into a slot it held no credit for");
		return;
	}
	t->hdr = h;
	task_start(s, t);
}

/* Receiver: the waiting credits, in order, as far as the send queue has room. */
static void credits_send(struct eng_stripe *s)
{
	unsigned i, n = 0;
	int err = 0;

	while (n < s->n_credit_wait && sq_room(s) > 0 && !s->dead) {
		bool signaled = signal_now(s);

		err = ep_of(s)->ops->send_imm(ep_of(s), wr_id_of(s, ENG_WR_SEND), signaled,
					      s->credit_wait[n]);
		if (err) {
			eng__stripe_lost(s, err, "returning a credit failed");
			return;
		}
		sq_use(s, 1, signaled);
		s->task[s->credit_wait[n]].owed = false;
		n++;
	}
	for (i = n; i < s->n_credit_wait; i++)
		s->credit_wait[i - n] = s->credit_wait[i];
	s->n_credit_wait -= n;
}

/*
 * Receiver: the slot's chunk is written (or checked, or was a second copy):
 * counted the first time its number lands, then a receive again and the
 * credit back, unless the stripe went down meanwhile.
 */
static void chunk_consumed(struct eng_stripe *s, const struct eng_chunk_hdr *h)
{
	int err;

	if (eng__job_landed(s->job, h->seq))
		chunk_done(s, h->len);
	if (s->dead)
		return;
	err = ep_of(s)->ops->post_recv(ep_of(s), wr_id_of(s, ENG_WR_RECV), 1);
	if (err) {
		eng__stripe_lost(s, err, "returning a credit failed");
		return;
	}
	/* At most one credit per slot waits: on_chunk refuses a slot whose credit is owed. */
	s->task[h->slot].owed = true;
	s->credit_wait[s->n_credit_wait++] = h->slot;
	credits_send(s);
}

void eng__stripe_task_done(struct eng_task *t)
{
	struct eng_stripe *s = t->stripe;

	t->queued = false;
	s->busy--;
	if (t->err || atomic_load_explicit(&s->job->stop, memory_order_relaxed))
		return; /* the job failed (the error is recorded) or is ending */
	if (s->job->role == ENG_RECEIVER)
		chunk_consumed(s, &t->hdr);
	else if (!s->dead)
		s->ready[s->n_ready++] = t->slot;
	else if (t->held) { /* read for a stripe that went down meanwhile: another sends it */
		t->held = false;
		eng__job_requeue(s->job, t->hdr.seq);
	}
}

void eng__stripe_complete(const struct eng_wc *wc)
{
	struct eng_stripe *s = (struct eng_stripe *)(uintptr_t)(wc->wr_id & ~(uint64_t)ENG_WR_MASK);
	char what[160];

	if (s->dead)
		return; /* flushed out of a stripe that went down: failover.c has its chunks */
	if (wc->status != 0) {
		snprintf(what, sizeof(what), "work completion error '%s' (status %d)",
			 wc->status_str, wc->status);
		eng__stripe_lost(s, -EIO, what);
		return;
	}
	if ((wc->wr_id & ENG_WR_MASK) != ENG_WR_RECV) {
		sq_completed(s); /* a signaled write or send: its queue entries are free again */
		if (s->job->role == ENG_RECEIVER)
			credits_send(s);
		return;
	}
	if (s->job->role == ENG_SENDER)
		on_credit(s, wc->imm);
	else
		on_chunk(s, wc->imm);
}
