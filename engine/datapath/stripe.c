/*
 * stripe.c - one stripe's chunks and credits, at both ends.
 *
 * Sender: a stripe holds one credit per receiver slot. While it has credits
 * and the job has chunks left, it claims the next chunk from the job's
 * shared cursor, fills its local copy of the slot and writes header and data
 * into the receiver's slot (write-with-imm, immediate = slot), several
 * chunks under one doorbell. A credit (send-with-imm naming the slot) frees
 * the slot again. Claiming from a shared cursor is what spreads chunks over
 * rails: a stripe takes a chunk only when a credit comes back, so each rail
 * gets chunks in proportion to the rate at which it drains them - its speed.
 *
 * Receiver: each incoming immediate names a slot; its header is validated
 * against the session and the slot before the sink sees the data; then a
 * receive is reposted and the credit returned.
 *
 * Only one in signal_every writes and sends asks for a completion: the
 * others' queue entries are freed by the next signaled one.
 *
 * Threading: a stripe belongs to its worker's thread; what it counts for the
 * coordinator (the stripe's and worker's counters) has that one writer.
 */
#include "engine/datapath/datapath_int.h"

#include "common/common.h"

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

int eng__stripe_init_sender(struct eng_stripe *s)
{
	unsigned i, n = s->link.n_slots;

	s->free_slot = calloc(n, sizeof(*s->free_slot));
	if (!s->free_slot)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		s->free_slot[i] = n - 1 - i; /* slot 0 is used first */
	s->n_free = n;
	return ep_of(s)->ops->post_recv(ep_of(s), wr_id_of(s, ENG_WR_RECV), n);
}

int eng__stripe_init_receiver(struct eng_stripe *s)
{
	return ep_of(s)->ops->post_recv(ep_of(s), wr_id_of(s, ENG_WR_RECV), s->link.n_slots);
}

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

/* Fill the slot's header and payload for chunk seq; the write that carries them. */
static int chunk_make(struct eng_stripe *s, uint64_t seq, struct eng_write *out)
{
	struct eng_job *job = s->job;
	const struct eng_link *l = &s->link;
	unsigned slot = s->free_slot[--s->n_free];
	struct eng_chunk_hdr *h = &l->hdr[slot];
	uint8_t *data = l->data + (size_t)slot * l->slot_size;
	int err;

	*h = (struct eng_chunk_hdr){
		.magic = ENG_HDR_MAGIC, .slot = slot, .token = job->token, .seq = seq};
	if ((err = job->src.fill(job->src.ctx, h, data)) != 0)
		return err;
	*out = (struct eng_write){
		.wr_id = wr_id_of(s, ENG_WR_WRITE),
		.signaled = signal_now(s),
		.hdr = h,
		.hdr_lkey = l->lkey,
		.hdr_dst = {l->peer_hdr.addr + (uint64_t)slot * sizeof(*h), l->peer_hdr.rkey},
		.data = data,
		.data_lkey = l->lkey,
		.len = h->len,
		.data_dst = {l->peer_data.addr + (uint64_t)slot * l->slot_size, l->peer_data.rkey},
		.imm = slot,
	};
	return 0;
}

void eng__stripe_pump(struct eng_stripe *s)
{
	struct eng_job *job = s->job;
	struct eng_write batch[ENG_WRITE_BATCH];
	unsigned n = 0;
	int err;

	while (s->n_free > 0 && n < ENG_WRITE_BATCH &&
	       !atomic_load_explicit(&job->stop, memory_order_relaxed)) {
		uint64_t seq = atomic_fetch_add(&job->next_chunk, 1);

		if (seq >= job->src.n_chunks)
			break;
		if ((err = chunk_make(s, seq, &batch[n++])) != 0) {
			eng__job_fail(job, err, "%s", rcp_err_msg(err));
			return;
		}
	}
	if (n == 0)
		return;
	worker_clock(s->worker, true);
	s->outstanding += n;
	err = ep_of(s)->ops->write_imm(ep_of(s), batch, n);
	if (err)
		stripe_fail(s, err, "posting RDMA writes failed");
}

static void chunk_done(struct eng_stripe *s, uint32_t len)
{
	atomic_fetch_add_explicit(&s->bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->chunks, 1, memory_order_relaxed);
	worker_clock(s->worker, false);
	atomic_fetch_add_explicit(&s->worker->done_chunks, 1, memory_order_release);
}

/* Sender: a credit came back for slot imm. */
static void on_credit(struct eng_stripe *s, uint32_t slot)
{
	unsigned i;

	if (slot >= s->link.n_slots || s->outstanding == 0) {
		stripe_fail(s, -EPROTO,
			    "the receiver returned a credit for a slot it does not hold");
		return;
	}
	for (i = 0; i < s->n_free; i++)
		if (s->free_slot[i] == slot) {
			stripe_fail(s, -EPROTO, "the receiver returned a credit twice");
			return;
		}
	s->free_slot[s->n_free++] = slot;
	s->outstanding--;
	chunk_done(s, s->link.hdr[slot].len);
	if (ep_of(s)->ops->post_recv(ep_of(s), wr_id_of(s, ENG_WR_RECV), 1))
		stripe_fail(s, -EIO, "reposting a receive failed");
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
	struct eng_job *job = s->job;
	struct eng_chunk_hdr h;
	const char *bad;
	char what[128];
	int err;

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
	err = job->sink.consume(job->sink.ctx, &h, s->link.data + (size_t)slot * s->link.slot_size);
	if (err) {
		eng__job_fail(job, err, "%s", rcp_err_msg(err));
		return;
	}
	chunk_done(s, h.len);
	err = ep_of(s)->ops->post_recv(ep_of(s), wr_id_of(s, ENG_WR_RECV), 1);
	if (!err)
		err = ep_of(s)->ops->send_imm(ep_of(s), wr_id_of(s, ENG_WR_SEND), signal_now(s),
					      slot);
	if (err)
		stripe_fail(s, err, "returning a credit failed");
}

void eng__stripe_complete(const struct eng_wc *wc)
{
	struct eng_stripe *s = (struct eng_stripe *)(uintptr_t)(wc->wr_id & ~(uint64_t)ENG_WR_MASK);
	char what[160];

	if (wc->status != 0) {
		snprintf(what, sizeof(what), "work completion error '%s' (status %d)",
			 wc->status_str, wc->status);
		stripe_fail(s, -EIO, what);
		return;
	}
	if ((wc->wr_id & ENG_WR_MASK) != ENG_WR_RECV)
		return; /* a signaled write or send: its queue entries are free again */
	if (s->job->role == ENG_SENDER)
		on_credit(s, wc->imm);
	else
		on_chunk(s, wc->imm);
}
