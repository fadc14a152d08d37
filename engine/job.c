/*
 * job.c - the data path: worker threads, credits, and the coordinator.
 *
 * Sender: a stripe holds one credit per receiver slot. While it has credits
 * and the job has chunks left, it claims the next chunk from the job's
 * shared cursor, fills its local copy of the slot and writes header and data
 * into the receiver's slot (write-with-imm, immediate = slot), several chunks
 * under one doorbell. A credit (send-with-imm naming the slot) frees the slot
 * again. Claiming from a shared cursor is what spreads chunks over rails: a
 * stripe takes a chunk only when a credit comes back, so each rail gets
 * chunks in proportion to the rate at which it drains them - its speed.
 *
 * Receiver: each incoming immediate names a slot; its header is validated
 * against the session and the slot before the sink sees the data; then a
 * receive is reposted and the credit returned.
 *
 * Workers block on their CQ's event fd after a short busy poll, with a
 * timeout, so every wait ends on a completion, the job's stop flag, or the
 * stall limit. The coordinator (eng__job_run) only starts, watches and joins.
 *
 * Threading: a stripe and its CQ belong to one worker; the job's cursor,
 * counters and stop flag are atomics; the first error is kept under a lock.
 */
#include "engine/engine_int.h"

#include "common/common.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ENG_BATCH 16
#define ENG_POLL_BATCH 32
#define ENG_STALL_MS 60000

uint64_t eng_now_ns(void)
{
	return eng__now_ns();
}

uint64_t eng__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void eng__job_fail(struct eng_job *job, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&job->err_lock);
	if (atomic_load(&job->err) == 0) {
		va_start(ap, fmt);
		vsnprintf(job->err_text, sizeof(job->err_text), fmt, ap);
		va_end(ap);
		atomic_store(&job->err, err ? err : -EIO);
	}
	pthread_mutex_unlock(&job->err_lock);
	atomic_store(&job->stop, true);
}

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

int eng__stripe_init_sender(struct eng_stripe *s)
{
	unsigned i;

	s->free_slot = calloc(s->n_slots, sizeof(*s->free_slot));
	if (!s->free_slot)
		return -ENOMEM;
	for (i = 0; i < s->n_slots; i++)
		s->free_slot[i] = s->n_slots - 1 - i; /* slot 0 is used first */
	s->n_free = s->n_slots;
	return s->ep->ops->post_recv(s->ep, wr_id_of(s, ENG_WR_RECV), s->n_slots);
}

int eng__stripe_init_receiver(struct eng_stripe *s)
{
	return s->ep->ops->post_recv(s->ep, wr_id_of(s, ENG_WR_RECV), s->n_slots);
}

void eng__stripe_fini(struct eng_stripe *s)
{
	free(s->free_slot);
	s->free_slot = NULL;
}

static void stripe_fail(struct eng_stripe *s, int err, const char *what)
{
	char where[256];

	s->ep->ops->describe(s->ep, where, sizeof(where));
	eng__job_fail(s->job, err, "%s on %s", what, where);
}

/* Sender: claim chunks for free slots and post them in one chain. */
static void stripe_pump(struct eng_stripe *s)
{
	struct eng_job *job = s->job;
	struct eng_write batch[ENG_BATCH];
	unsigned n = 0;
	int err;

	while (s->n_free > 0 && n < ENG_BATCH && !atomic_load_explicit(&job->stop, memory_order_relaxed)) {
		uint64_t seq = atomic_fetch_add(&job->next_chunk, 1);
		unsigned slot;
		struct eng_chunk_hdr *h;

		if (seq >= job->src.n_chunks)
			break;
		slot = s->free_slot[--s->n_free];
		h = &s->hdr[slot];
		memset(h, 0, sizeof(*h));
		h->magic = ENG_HDR_MAGIC;
		h->slot = slot;
		h->token = job->token;
		h->seq = seq;
		err = job->src.fill(job->src.ctx, h, s->data + (size_t)slot * s->slot_size);
		if (err) {
			eng__job_fail(job, err, "%s", rcp_err_msg(err));
			return;
		}
		batch[n++] = (struct eng_write){
			.wr_id = wr_id_of(s, ENG_WR_WRITE),
			.signaled = signal_now(s),
			.hdr = h,
			.hdr_lkey = s->lkey,
			.hdr_dst = {s->peer_hdr.addr + (uint64_t)slot * sizeof(*h), s->peer_hdr.rkey},
			.data = s->data + (size_t)slot * s->slot_size,
			.data_lkey = s->lkey,
			.len = h->len,
			.data_dst = {s->peer_data.addr + (uint64_t)slot * s->slot_size,
				     s->peer_data.rkey},
			.imm = slot,
		};
	}
	if (n == 0)
		return;
	if (job->t_first_post_ns == 0) {
		uint64_t zero = 0;

		atomic_compare_exchange_strong(&job->t_first_post_ns, &zero, eng__now_ns());
	}
	s->outstanding += n;
	err = s->ep->ops->write_imm(s->ep, batch, n);
	if (err)
		stripe_fail(s, err, "posting RDMA writes failed");
}

static void chunk_done(struct eng_stripe *s, uint32_t len)
{
	struct eng_job *job = s->job;
	uint64_t now = eng__now_ns(), zero = 0;

	atomic_fetch_add_explicit(&s->bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->chunks, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&job->rail[s->rail].bytes, len, memory_order_relaxed);
	atomic_fetch_add_explicit(&job->rail[s->rail].chunks, 1, memory_order_relaxed);
	atomic_fetch_add(&job->done_chunks, 1);
	atomic_compare_exchange_strong(&job->t_first_post_ns, &zero, now); /* receivers */
	/* Keep the latest: a worker pre-empted after reading the clock must not move it back. */
	for (uint64_t last = atomic_load(&job->t_last_done_ns); last < now;)
		if (atomic_compare_exchange_weak(&job->t_last_done_ns, &last, now))
			break;
}

/* Sender: a credit came back for slot imm. */
static void on_credit(struct eng_stripe *s, uint32_t slot)
{
	unsigned i;

	if (slot >= s->n_slots || s->outstanding == 0) {
		stripe_fail(s, -EPROTO, "the receiver returned a credit for a slot it does not hold");
		return;
	}
	for (i = 0; i < s->n_free; i++)
		if (s->free_slot[i] == slot) {
			stripe_fail(s, -EPROTO, "the receiver returned a credit twice");
			return;
		}
	s->free_slot[s->n_free++] = slot;
	s->outstanding--;
	chunk_done(s, s->hdr[slot].len);
	if (s->ep->ops->post_recv(s->ep, wr_id_of(s, ENG_WR_RECV), 1))
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
	if (h->len == 0 || h->len > s->slot_size)
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
	int err;

	if (slot >= s->n_slots) {
		stripe_fail(s, -EPROTO, "the sender wrote to a slot that does not exist");
		return;
	}
	memcpy(&h, (const void *)&s->hdr[slot], sizeof(h));
	atomic_signal_fence(memory_order_seq_cst); /* the copy is what gets checked and used */
	bad = hdr_invalid(s, &h, slot);
	if (bad) {
		char what[128];

		snprintf(what, sizeof(what), "the sender sent %s", bad);
		stripe_fail(s, -EPROTO, what);
		return;
	}
	err = job->sink.consume(job->sink.ctx, &h, s->data + (size_t)slot * s->slot_size);
	if (err) {
		eng__job_fail(job, err, "%s", rcp_err_msg(err));
		return;
	}
	chunk_done(s, h.len);
	err = s->ep->ops->post_recv(s->ep, wr_id_of(s, ENG_WR_RECV), 1);
	if (!err)
		err = s->ep->ops->send_imm(s->ep, wr_id_of(s, ENG_WR_SEND), signal_now(s), slot);
	if (err)
		stripe_fail(s, err, "returning a credit failed");
}

static void on_completion(const struct eng_wc *wc)
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

static bool worker_done(const struct eng_worker *w)
{
	const struct eng_job *job = w->job;
	unsigned i;

	if (job->role == ENG_RECEIVER)
		return false; /* runs until the session stops it */
	if (atomic_load(&job->next_chunk) < job->src.n_chunks)
		return false;
	for (i = 0; i < w->n_stripes; i++)
		if (w->stripe[i]->outstanding)
			return false;
	return true;
}

/* Poll every CQ of the worker once; returns the count or -errno. */
static int worker_poll(struct eng_worker *w, struct eng_wc *wc)
{
	unsigned i;
	int n = 0, k;

	for (i = 0; i < w->n_cqs && n < ENG_POLL_BATCH; i++) {
		k = w->cq[i]->ops->poll(w->cq[i], wc + n, ENG_POLL_BATCH - n);
		if (k < 0)
			return k;
		n += k;
	}
	return n;
}

/*
 * Sleep on the CQs' event fds, at most 100 ms. A completion may have arrived
 * between the last poll and the arm, so poll once more after arming.
 */
static int worker_sleep(struct eng_worker *w, struct eng_wc *wc, int *n)
{
	struct pollfd pfd[ENG_MAX_CQS];
	unsigned i;
	int err;

	for (i = 0; i < w->n_cqs; i++) {
		if ((err = w->cq[i]->ops->arm(w->cq[i])) != 0)
			return err;
		pfd[i] = (struct pollfd){.fd = w->cq[i]->ops->event_fd(w->cq[i]), .events = POLLIN};
	}
	*n = worker_poll(w, wc);
	if (*n != 0)
		return *n < 0 ? *n : 0;
	if (poll(pfd, w->n_cqs, 100) > 0)
		for (i = 0; i < w->n_cqs; i++)
			if (pfd[i].revents & POLLIN)
				w->cq[i]->ops->ack_events(w->cq[i]);
	return 0;
}

static void *worker_main(void *arg)
{
	struct eng_worker *w = arg;
	struct eng_job *job = w->job;
	struct eng_wc wc[ENG_POLL_BATCH];
	uint64_t idle_since = eng__now_ns();
	unsigned i;
	int n, k, err;

	if (w->n_stripes == 0) {
		atomic_store(&w->finished, true);
		return NULL;
	}
	if (w->bind && (err = topo_thread_bind(&w->cpus, w->node)) != 0)
		rcp_log(RCP_LOG_INFO, "worker %u: cannot bind to node %d: %s", w->index, w->node,
			rcp_err_msg(err));
	while (!atomic_load_explicit(&job->stop, memory_order_relaxed) && !worker_done(w)) {
		if (job->role == ENG_SENDER)
			for (i = 0; i < w->n_stripes; i++)
				stripe_pump(w->stripe[i]);
		n = worker_poll(w, wc);
		if (n == 0 && w->n_cqs && eng__now_ns() - idle_since > job->busy_poll_us * 1000ull) {
			err = worker_sleep(w, wc, &n);
			if (err) {
				eng__job_fail(job, err, "waiting for completions failed: %s",
					      strerror(-err));
				break;
			}
		}
		if (n < 0) {
			eng__job_fail(job, n, "polling the completion queue failed: %s", strerror(-n));
			break;
		}
		if (n > 0)
			idle_since = eng__now_ns();
		else if (eng__now_ns() - idle_since > ENG_STALL_MS * 1000000ull)
			eng__job_fail(job, -ETIMEDOUT, "no completion for %d s: the peer or the fabric stalled",
				      ENG_STALL_MS / 1000);
		for (k = 0; k < n; k++)
			on_completion(&wc[k]);
	}
	atomic_store(&w->finished, true);
	return NULL;
}

int eng__job_run(struct eng_job *job, void (*progress)(const struct eng_job *job, void *ctx),
		 void *ctx)
{
	unsigned i, done;
	int err;

	for (i = 0; i < job->n_workers; i++) {
		err = pthread_create(&job->worker[i].thread, NULL, worker_main, &job->worker[i]);
		if (err) {
			eng__job_fail(job, -err, "cannot start worker thread %u: %s", i, strerror(err));
			break;
		}
		job->worker[i].started = true;
	}
	do {
		struct timespec ts = {0, 20 * 1000 * 1000};

		nanosleep(&ts, NULL);
		if (progress)
			progress(job, ctx);
		for (i = 0, done = 0; i < job->n_workers; i++)
			done += atomic_load(&job->worker[i].finished);
	} while (done < job->n_workers && !atomic_load(&job->stop));
	atomic_store(&job->stop, true);
	for (i = 0; i < job->n_workers; i++)
		if (job->worker[i].started)
			pthread_join(job->worker[i].thread, NULL);
	err = atomic_load(&job->err);
	if (err)
		return rcp_err(err, "%s", job->err_text);
	return 0;
}

void eng__stream_place(const struct eng_source *src, struct eng_chunk_hdr *hdr)
{
	hdr->offset = hdr->seq * src->chunk;
	hdr->len = (uint32_t)(src->total - hdr->offset < src->chunk ? src->total - hdr->offset
								    : src->chunk);
}

void eng__bench_attach(struct eng_job *job, uint64_t bytes, uint32_t chunk)
{
	job->src = (struct eng_source){.total = bytes, .chunk = chunk,
				       .n_chunks = (bytes + chunk - 1) / chunk,
				       .fill = eng__bench_fill, .ctx = &job->src};
	job->sink = (struct eng_sink){.consume = eng__bench_check, .ctx = &job->src.chunk};
}

/* ctx: the job's eng_source, to place the chunk in the stream. */
int eng__bench_fill(void *ctx, struct eng_chunk_hdr *hdr, void *buf)
{
	uint64_t v, *w = buf;
	uint32_t i, n;

	eng__stream_place(ctx, hdr);
	v = eng__pattern_base(hdr->token, hdr->offset);
	n = hdr->len / 8;
	for (i = 0; i < n; i++, v += ENG_PATTERN_STEP)
		w[i] = v;
	memcpy(w + n, &v, hdr->len % 8); /* a short last chunk: the next word's first bytes */
	return 0;
}

/* ctx: the receiving job's chunk size (uint32_t *), to pin each chunk's place. */
int eng__bench_check(void *ctx, const struct eng_chunk_hdr *hdr, const void *data)
{
	uint64_t v = eng__pattern_base(hdr->token, hdr->offset), bad = 0;
	const uint64_t *w = data;
	uint32_t i, n = hdr->len / 8;

	if (ctx && hdr->offset != hdr->seq * *(const uint32_t *)ctx)
		return rcp_err(-EBADMSG, "chunk %llu arrived for offset %llu, not its own",
			       (unsigned long long)hdr->seq, (unsigned long long)hdr->offset);
	for (i = 0; i < n; i++, v += ENG_PATTERN_STEP)
		bad |= w[i] ^ v; /* no branch in the loop: it vectorises */
	if (!bad && memcmp(w + n, &v, hdr->len % 8) == 0)
		return 0;
	for (i = 0, v = eng__pattern_base(hdr->token, hdr->offset); i < n && w[i] == v; i++)
		v += ENG_PATTERN_STEP;
	return rcp_err(-EBADMSG, "data check failed: chunk %llu (offset %llu) arrived with wrong bytes at byte %u",
		       (unsigned long long)hdr->seq, (unsigned long long)hdr->offset, i * 8);
}
