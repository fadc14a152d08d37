/*
 * loopback.c - the loopback transport's data path: in-process endpoints
 * and CQs (connection management over them is in loopback_cm.c).
 *
 * Each CQ is a mutex-protected list of completions with a ready time and a
 * timerfd; the worker that owns it polls and sleeps on it exactly as on a
 * verbs CQ. Arming sets the timer to the earliest ready time, so a worker
 * sleeps until the simulated link delivers, not a scheduler tick more. A
 * write copies header and data into the peer's memory at once (addresses
 * are plain pointers) and queues the peer's immediate completion for when a
 * link of the endpoint's speed would have delivered it. A write or send with
 * no receive posted at the peer fails like an RNR error on real hardware, so
 * credit bugs show up as failures, not as silent overwrites.
 *
 * The two endpoints of a connection share a pair: its lock covers every
 * post that touches the peer (its memory, its CQ), and once either end is
 * destroyed the pair is broken and the survivor's posts complete with an
 * error, so one side's teardown never leaves the other writing into freed
 * memory - what a QP whose peer vanished does on real hardware.
 *
 * A send queue of a given depth (eng__loop_sq) is modelled too: a post that
 * finds it full fails with ENOMEM as ibv_post_send does, and a work request's
 * entry is free once a signaled one posted with or after it has completed.
 * Its completions can be made late by a lag, so that credits arrive before
 * the completions of the writes they answer, an order real CQs allow.
 *
 * Tests read counts of what it did (eng__loop_counts, eng__loop_cq_arms)
 * to wait until the engine has had its chance to do something wrong.
 *
 * Threading: a CQ may be fed from any thread (its lock); an endpoint is
 * posted to only by its owning worker; receive counts are atomics because
 * the peer's worker consumes them, and so are the counts tests read.
 */
#include "engine/transport/loopback.h"

#include "common/common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

struct loop_item {
	struct eng_wc wc;
	uint64_t ready_ns;
};

struct loop_cq {
	struct eng_cq cq;
	pthread_mutex_t lock;
	struct loop_item *item;
	size_t n, cap;
	int efd;
	bool armed;	       /* the owner sleeps on efd: a push that is due sooner re-sets it */
	uint64_t wake_ns;      /* when efd fires while armed (UINT64_MAX: only on a push) */
	_Atomic uint64_t arms; /* for tests (eng__loop_cq_arms) */
};

/* What the two endpoints of a connection share. */
struct loop_pair {
	pthread_mutex_t lock;
	unsigned refs;
	bool broken; /* an end was destroyed: nothing crosses any more */
};

struct loop_ep {
	struct eng_ep ep;
	struct loop_cq *cq;
	struct loop_ep *peer; /* valid while the pair is not broken */
	struct loop_pair *pair;
	uint32_t qp_num, peer_qp_num;
	double gbps;
	uint64_t busy_until_ns;
	_Atomic unsigned recvs;
	_Atomic uint64_t recv_wr_id;
	unsigned fail_countdown; /* 0: no error armed */
	unsigned mute_countdown; /* 0: none armed; the post it reaches and all later vanish */
	bool muted;
	_Atomic unsigned in_flight, max_in_flight;
	/* the send queue (eng__loop_sq; depth 0: not modelled), the owner's alone */
	struct loop_sq {
		unsigned depth;
		uint64_t lag_ns;   /* added to each signaled completion's time */
		uint64_t posted;   /* work requests ever posted */
		uint64_t freed;	   /* of those, the ones whose entries are free again */
		struct loop_mark { /* a signaled request: when it completes, what it frees */
			uint64_t ready_ns, upto;
		} * mark; /* a ring of depth */
		unsigned head, n;
	} sq;
};

static const struct eng_tr_ops loop_ops;

/* eng__loop_counts' */
static struct {
	_Atomic uint64_t credits, receiver_looks;
} counts;

/* Fire the CQ's timer at ready_ns (CLOCK_MONOTONIC); 1 ns means at once. */
static int cq_wake_at(struct loop_cq *c, uint64_t ready_ns)
{
	struct itimerspec its = {
		.it_value = {(time_t)(ready_ns / 1000000000ull), (long)(ready_ns % 1000000000ull)}};

	if (ready_ns == 0)
		its.it_value.tv_nsec = 1;
	return timerfd_settime(c->efd, TFD_TIMER_ABSTIME, &its, NULL) ? -errno : 0;
}

static int cq_push(struct loop_cq *c, const struct eng_wc *wc, uint64_t ready_ns)
{
	int err = 0;

	pthread_mutex_lock(&c->lock);
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct loop_item *it = realloc(c->item, cap * sizeof(*it));

		if (!it) {
			err = -ENOMEM;
			goto out;
		}
		c->item = it;
		c->cap = cap;
	}
	c->item[c->n++] = (struct loop_item){*wc, ready_ns};
	if (c->armed && ready_ns < c->wake_ns) {
		c->wake_ns = ready_ns;
		err = cq_wake_at(c, ready_ns);
		/* Due now: the owner wakes, and arms again before it sleeps. */
		if (ready_ns <= rcp_now_ns())
			c->armed = false;
	}
out:
	pthread_mutex_unlock(&c->lock);
	return err;
}

static int loop_poll(struct eng_cq *cq, struct eng_wc *wc, int max)
{
	struct loop_cq *c = (struct loop_cq *)cq;
	uint64_t now = rcp_now_ns();
	size_t i, keep = 0;
	int n = 0;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->n; i++) {
		if (n < max && c->item[i].ready_ns <= now)
			wc[n++] = c->item[i].wc;
		else
			c->item[keep++] = c->item[i];
	}
	c->n = keep;
	pthread_mutex_unlock(&c->lock);
	return n;
}

static int loop_arm(struct eng_cq *cq)
{
	struct loop_cq *c = (struct loop_cq *)cq;
	uint64_t first = UINT64_MAX;
	size_t i;
	int err = 0;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->n; i++)
		if (c->item[i].ready_ns < first)
			first = c->item[i].ready_ns;
	/*
	 * Armed either way: a completion pushed before the first one pending is
	 * due (a credit before a late signaled write's) must wake it sooner.
	 */
	c->armed = true;
	c->wake_ns = first;
	atomic_fetch_add(&c->arms, 1);
	if (first != UINT64_MAX)
		err = cq_wake_at(c, first);
	pthread_mutex_unlock(&c->lock);
	return err;
}

static int loop_event_fd(struct eng_cq *cq)
{
	return ((struct loop_cq *)cq)->efd;
}

static void loop_ack_events(struct eng_cq *cq)
{
	uint64_t v;

	if (read(((struct loop_cq *)cq)->efd, &v, sizeof(v)) < 0)
		return; /* nothing pending: EAGAIN */
}

static void loop_describe(struct eng_ep *ep, char *buf, size_t len)
{
	struct loop_ep *e = (struct loop_ep *)ep;

	snprintf(buf, len, "loopback qp 0x%x (peer qp 0x%x)", e->qp_num, e->peer_qp_num);
}

/* An error completion on our own CQ, as a failed WR gives on hardware. */
static int fail_wr(struct loop_ep *e, uint64_t wr_id, enum eng_wc_op op, const char *why)
{
	struct eng_wc wc = {
		.wr_id = wr_id, .status = 12, .status_str = why, .op = op, .qp_num = e->qp_num};

	return cq_push(e->cq, &wc, 0);
}

/*
 * Whether e's send queue has room for wrs more work requests, its entries
 * freed as far as its signaled requests have completed by now.
 */
static bool sq_room(struct loop_ep *e, unsigned wrs)
{
	struct loop_sq *q = &e->sq;
	uint64_t now = rcp_now_ns();

	if (q->depth == 0)
		return true;
	while (q->n > 0 && q->mark[q->head].ready_ns <= now) {
		q->freed = q->mark[q->head].upto;
		q->head = (q->head + 1) % q->depth;
		q->n--;
	}
	return q->posted - q->freed + wrs <= q->depth;
}

/* wrs posted (sq_room said yes); a signaled one's completion, *ready_ns, comes lag_ns late. */
static void sq_count(struct loop_ep *e, unsigned wrs, bool signaled, uint64_t *ready_ns)
{
	struct loop_sq *q = &e->sq;

	if (q->depth == 0)
		return;
	q->posted += wrs;
	if (signaled) {
		*ready_ns += q->lag_ns;
		q->mark[(q->head + q->n++) % q->depth] = (struct loop_mark){*ready_ns, q->posted};
	}
}

static bool injected_error(struct loop_ep *e)
{
	return e->fail_countdown && --e->fail_countdown == 0;
}

/* Whether this post vanishes: accepted, never delivered, never completed. */
static bool injected_mute(struct loop_ep *e)
{
	if (e->mute_countdown && --e->mute_countdown == 0)
		e->muted = true;
	return e->muted;
}

/* Deliver one immediate to the peer after len bytes crossed the link. */
static int deliver(struct loop_ep *e, uint32_t len, uint32_t imm, uint64_t *ready_out)
{
	uint64_t now = rcp_now_ns(), start = e->busy_until_ns > now ? e->busy_until_ns : now;
	struct loop_ep *p = e->peer;
	struct eng_wc wc = {.op = ENG_WC_RECV_IMM, .imm = imm, .qp_num = p->qp_num};
	unsigned r = atomic_load(&p->recvs);

	do {
		if (r == 0)
			return -ENOBUFS;
	} while (!atomic_compare_exchange_weak(&p->recvs, &r, r - 1));
	e->busy_until_ns = start + (e->gbps > 0 ? (uint64_t)(len * 8.0 / e->gbps) : 0);
	wc.wr_id = p->recv_wr_id;
	*ready_out = e->busy_until_ns;
	return cq_push(p->cq, &wc, e->busy_until_ns);
}

/*
 * One write, under the pair's lock. Returns 0, 1 when it completed with an
 * error (nothing after it in the chain is executed, as on a QP that went to
 * the error state), or -errno.
 */
static int write_one(struct loop_ep *e, const struct eng_write *w)
{
	struct eng_wc wc = {.wr_id = w->wr_id, .op = ENG_WC_WRITE, .qp_num = e->qp_num};
	uint64_t ready;
	unsigned f;
	int err;

	if (!sq_room(e, 2)) /* the header's write and the data's */
		return -ENOMEM;
	if (e->pair->broken)
		return fail_wr(e, w->wr_id, ENG_WC_WRITE, "transport retry counter exceeded") ?: 1;
	if (injected_error(e))
		return fail_wr(e, w->wr_id, ENG_WC_WRITE, "injected error") ?: 1;
	if (injected_mute(e))
		return 0;
	memcpy((void *)(uintptr_t)w->hdr_dst.addr, w->hdr, sizeof(*w->hdr));
	memcpy((void *)(uintptr_t)w->data_dst.addr, w->data, w->len);
	/* In flight from the post on: count it before the peer can credit it back. */
	f = atomic_fetch_add(&e->in_flight, 1) + 1;
	if (f > atomic_load(&e->max_in_flight))
		atomic_store(&e->max_in_flight, f);
	err = deliver(e, w->len, w->imm, &ready);
	if (err)
		atomic_fetch_sub(&e->in_flight, 1);
	if (err == -ENOBUFS)
		return fail_wr(e, w->wr_id, ENG_WC_WRITE, "RNR retry counter exceeded") ?: 1;
	if (err)
		return err;
	sq_count(e, 2, w->signaled, &ready);
	return w->signaled ? cq_push(e->cq, &wc, ready) : 0;
}

static int loop_write_imm(struct eng_ep *ep, const struct eng_write *w, unsigned n)
{
	struct loop_ep *e = (struct loop_ep *)ep;
	unsigned i;
	int err = 0;

	pthread_mutex_lock(&e->pair->lock);
	for (i = 0; i < n && !err; i++)
		err = write_one(e, &w[i]);
	pthread_mutex_unlock(&e->pair->lock);
	return err < 0 ? err : 0;
}

/* A credit, under the pair's lock. */
static int send_one(struct loop_ep *e, uint64_t wr_id, bool signaled, uint32_t imm)
{
	struct eng_wc wc = {.wr_id = wr_id, .op = ENG_WC_SEND, .qp_num = e->qp_num};
	uint64_t ready;
	int err;

	if (!sq_room(e, 1))
		return -ENOMEM;
	if (e->pair->broken)
		return fail_wr(e, wr_id, ENG_WC_SEND, "transport retry counter exceeded");
	if (injected_error(e))
		return fail_wr(e, wr_id, ENG_WC_SEND, "injected error");
	if (injected_mute(e))
		return 0;
	/* The credit frees a write: uncount it before the sender can act on the credit. */
	atomic_fetch_sub(&e->peer->in_flight, 1);
	err = deliver(e, 0, imm, &ready);
	if (err)
		atomic_fetch_add(&e->peer->in_flight, 1);
	if (err == -ENOBUFS)
		return fail_wr(e, wr_id, ENG_WC_SEND, "RNR retry counter exceeded");
	if (err)
		return err;
	atomic_fetch_add(&counts.credits, 1);
	sq_count(e, 1, signaled, &ready);
	return signaled ? cq_push(e->cq, &wc, ready) : 0;
}

static int loop_send_imm(struct eng_ep *ep, uint64_t wr_id, bool signaled, uint32_t imm)
{
	struct loop_ep *e = (struct loop_ep *)ep;
	int err;

	pthread_mutex_lock(&e->pair->lock);
	err = send_one(e, wr_id, signaled, imm);
	pthread_mutex_unlock(&e->pair->lock);
	return err;
}

static int loop_post_recv(struct eng_ep *ep, uint64_t wr_id, unsigned n)
{
	struct loop_ep *e = (struct loop_ep *)ep;

	e->recv_wr_id = wr_id;
	atomic_fetch_add(&e->recvs, n);
	return 0;
}

/* As a QP in the error state: nothing crosses the pair any more, either way. */
static void loop_shutdown(struct eng_ep *ep)
{
	struct loop_ep *e = (struct loop_ep *)ep;

	pthread_mutex_lock(&e->pair->lock);
	e->pair->broken = true;
	pthread_mutex_unlock(&e->pair->lock);
}

static const struct eng_tr_ops loop_ops = {
	.name = "loopback",
	.write_imm = loop_write_imm,
	.send_imm = loop_send_imm,
	.post_recv = loop_post_recv,
	.poll = loop_poll,
	.arm = loop_arm,
	.event_fd = loop_event_fd,
	.ack_events = loop_ack_events,
	.describe = loop_describe,
	.shutdown = loop_shutdown,
};

int eng__loop_cq_create(struct eng_cq **cq_out)
{
	struct loop_cq *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->efd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->efd < 0) {
		int err = -errno;

		free(c);
		return err;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->cq.ops = &loop_ops;
	c->cq.tr = c;
	*cq_out = &c->cq;
	return 0;
}

void eng__loop_cq_destroy(struct eng_cq *cq)
{
	struct loop_cq *c = (struct loop_cq *)cq;

	if (!c)
		return;
	close(c->efd);
	pthread_mutex_destroy(&c->lock);
	free(c->item);
	free(c);
}

int eng__loop_connect(struct eng_cq *cq_a, struct eng_cq *cq_b, double gbps, struct eng_ep **a_out,
		      struct eng_ep **b_out)
{
	static _Atomic uint32_t next_qp = 0x100;
	struct loop_ep *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct loop_pair *p = calloc(1, sizeof(*p));
	uint32_t qa = atomic_fetch_add(&next_qp, 1), qb = atomic_fetch_add(&next_qp, 1);

	if (!a || !b || !p) {
		free(a);
		free(b);
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	p->refs = 2;
	*a = (struct loop_ep){.ep = {&loop_ops, a},
			      .cq = (struct loop_cq *)cq_a,
			      .peer = b,
			      .pair = p,
			      .qp_num = qa,
			      .peer_qp_num = qb,
			      .gbps = gbps};
	*b = (struct loop_ep){.ep = {&loop_ops, b},
			      .cq = (struct loop_cq *)cq_b,
			      .peer = a,
			      .pair = p,
			      .qp_num = qb,
			      .peer_qp_num = qa,
			      .gbps = gbps};
	*a_out = &a->ep;
	*b_out = &b->ep;
	return 0;
}

void eng__loop_ep_destroy(struct eng_ep *ep)
{
	struct loop_ep *e = (struct loop_ep *)ep;
	struct loop_pair *p;
	bool last;

	if (!e)
		return;
	p = e->pair;
	pthread_mutex_lock(&p->lock);
	p->broken = true;
	last = --p->refs == 0;
	pthread_mutex_unlock(&p->lock);
	if (last) {
		pthread_mutex_destroy(&p->lock);
		free(p);
	}
	free(e->sq.mark);
	free(e);
}

int eng__loop_sq(struct eng_ep *ep, unsigned depth, uint64_t lag_ns)
{
	struct loop_ep *e = (struct loop_ep *)ep;
	struct loop_mark *mark = calloc(depth ? depth : 1, sizeof(*mark));

	if (!mark)
		return -ENOMEM;
	free(e->sq.mark);
	e->sq = (struct loop_sq){.depth = depth, .lag_ns = lag_ns, .mark = mark};
	return 0;
}

void eng__loop_inject_error(struct eng_ep *ep, unsigned after)
{
	((struct loop_ep *)ep)->fail_countdown = after;
}

void eng__loop_inject_mute(struct eng_ep *ep, unsigned after)
{
	((struct loop_ep *)ep)->mute_countdown = after;
}

unsigned eng__loop_max_in_flight(struct eng_ep *ep)
{
	return atomic_load(&((struct loop_ep *)ep)->max_in_flight);
}

uint64_t eng__loop_cq_arms(struct eng_cq *cq)
{
	return atomic_load(&((struct loop_cq *)cq)->arms);
}

void eng__loop_counts(struct eng_loop_counts *out)
{
	out->credits = atomic_load(&counts.credits);
	out->receiver_looks = atomic_load(&counts.receiver_looks);
}

void eng__loop_count_look(void)
{
	atomic_fetch_add(&counts.receiver_looks, 1);
}
