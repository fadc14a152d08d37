/*
 * session_liar.c - the functions of session_liar.h: the loopback transport
 * with its endpoints' operations swapped for a const table (liar_ops) that
 * forwards to the loopback's and alters one post, as liar.lie says. The
 * swap happens where the transport has made the endpoints (connect at a
 * client, accept_all at a server), before the job's workers start; the
 * victim runs unmodified. Compiled once, linked into each test that
 * includes the header.
 *
 * Threading: the hostile end's workers read the liar's state (set before
 * the session starts) and change only its atomics; one lying session at a
 * time.
 */
#include "session_liar.h"
#include "session_gate.h"

struct liar liar;

static struct eng_transport liar_tr;

static struct eng_link *liar_link(struct eng_ep *ep)
{
	unsigned i;

	for (i = 0; i < liar.cfg->n_links; i++)
		if (liar.cfg->link[i]->ep == ep)
			return liar.cfg->link[i];
	fail_msg("an endpoint the liar did not make");
	return NULL;
}

/* Another file of the sender's job than file (the job's files: its source's context). */
static uint64_t liar_other_file(struct eng_link *l, uint64_t file)
{
	const struct eng_job *job = ((struct eng_stripe *)l)->job; /* the link comes first */
	const struct io_manifest *m = eng__files_manifest(job->src.ctx);
	uint64_t i;

	for (i = 0; i < m->n; i++)
		if (i != file && m->entry[i].type == IO_FILE)
			return i;
	fail_msg("the job has one file only");
	return file;
}

/* Whether the write w is the one to lie in; if so, the lie is told (once). */
static bool liar_now(const struct eng_write *w, enum lie lie)
{
	bool no = false;

	return liar.lie == lie && w->hdr->seq == liar.seq &&
	       atomic_compare_exchange_strong(&liar.told, &no, true);
}

/*
 * LIE_FINISHED: the first write of chunk liar.seq or later, once the chunk
 * of the finished file (seq 0, the whole of file a) went out and came back.
 */
static bool liar_finished_now(const struct eng_write *w)
{
	bool no = false;

	if (liar.lie != LIE_FINISHED)
		return false;
	if (w->hdr->seq == 0 && !atomic_load(&liar.have_finished)) {
		liar.finished = *w->hdr;
		atomic_store(&liar.have_finished, true);
	}
	return w->hdr->seq >= liar.seq && atomic_load(&liar.finished_credited) &&
	       atomic_compare_exchange_strong(&liar.told, &no, true);
}

/* w, altered in place (its header is h, a copy), as liar.lie says. */
static void liar_write(struct eng_link *l, struct eng_write *w, struct eng_chunk_hdr *h)
{
	*h = *w->hdr;
	w->hdr = h;
	if (liar_now(w, LIE_SLOT_UNKNOWN))
		w->imm = l->n_slots + 3; /* the header and data still go to the slot's own place */
	else if (liar_now(w, LIE_HDR_SLOT))
		h->slot = (h->slot + 1) % l->n_slots;
	else if (liar_now(w, LIE_FILE))
		h->file = liar_other_file(l, h->file);
	else if (liar_now(w, LIE_OFFSET))
		h->offset += h->len;
	else if (liar_now(w, LIE_LEN_LONG))
		h->len = l->slot_size + 1;
	else if (liar_now(w, LIE_LEN_SHORT))
		h->len--;
	else if (liar_finished_now(w)) {
		*h = liar.finished; /* the data stays the chunk's own: other bytes */
		h->slot = w->imm;
	}
}

static int liar_write_imm(struct eng_ep *ep, const struct eng_write *w, unsigned n)
{
	struct eng_link *l = liar_link(ep);
	struct eng_chunk_hdr h[ENG_WRITE_BATCH];
	struct eng_write ws[ENG_WRITE_BATCH];
	unsigned i, again = n;
	int err;

	assert_true(n <= ENG_WRITE_BATCH);
	for (i = 0; i < n; i++) {
		ws[i] = w[i];
		liar_write(l, &ws[i], &h[i]);
		/*
		 * Into the slot of the write just before it, whose chunk the victim
		 * has not even seen yet (its CQ is held from here): the liar holds
		 * no credit for it. It takes the receive its own slot's write would
		 * have, so it cannot fail for want of one (RNR) instead.
		 */
		if (i > 0 && liar.lie == LIE_NO_CREDIT && ws[i].hdr->seq >= liar.seq &&
		    again == n && !atomic_exchange(&liar.told, true)) {
			again = i;
			h[i].slot = ws[i - 1].imm;
			ws[i].imm = ws[i - 1].imm;
			ws[i].hdr_dst = ws[i - 1].hdr_dst;
			ws[i].data_dst = ws[i - 1].data_dst;
		}
	}
	err = liar.real->write_imm(ep, ws, n);
	if (again < n)
		atomic_store(&liar.dup_out, true);
	return err;
}

static int liar_send_imm(struct eng_ep *ep, uint64_t wr_id, bool signaled, uint32_t imm)
{
	struct eng_link *l = liar_link(ep);
	bool no = false;

	if (liar.lie < LIE_CREDIT_UNUSED || !atomic_compare_exchange_strong(&liar.told, &no, true))
		return liar.real->send_imm(ep, wr_id, signaled, imm);
	if (liar.lie == LIE_CREDIT_UNUSED)
		imm = l->n_slots - 1;
	else if (liar.lie == LIE_CREDIT_UNKNOWN)
		imm = l->n_slots + 3;
	else {
		/*
		 * Not before the sender's second read is held (session_gate.h):
		 * only then is the next slot surely claimed and not written. This
		 * holds the liar's worker alone, never the victim's.
		 */
		(void)WAIT_FOR(atomic_load(&gate.hit)); /* the test asserts it held */
		imm = (imm + 1) % l->n_slots;
	}
	return liar.real->send_imm(ep, wr_id, signaled, imm);
}

static int liar_post_recv(struct eng_ep *ep, uint64_t wr_id, unsigned n)
{
	return liar.real->post_recv(ep, wr_id, n);
}

static int liar_poll(struct eng_cq *cq, struct eng_wc *wc, int max)
{
	int n = liar.real->poll(cq, wc, max), i;

	/* LIE_FINISHED: the credit of the finished file's chunk (its slot is not reused before). */
	for (i = 0; i < n && liar.lie == LIE_FINISHED && atomic_load(&liar.have_finished); i++)
		if (wc[i].op == ENG_WC_RECV_IMM && wc[i].imm == liar.finished.slot)
			atomic_store(&liar.finished_credited, true);
	return n;
}

static int liar_cq_arm(struct eng_cq *cq)
{
	return liar.real->arm(cq);
}

static int liar_event_fd(struct eng_cq *cq)
{
	return liar.real->event_fd(cq);
}

static void liar_ack_events(struct eng_cq *cq)
{
	liar.real->ack_events(cq);
}

static void liar_describe(struct eng_ep *ep, char *buf, size_t len)
{
	liar.real->describe(ep, buf, len);
}

static void liar_shutdown(struct eng_ep *ep)
{
	liar.real->shutdown(ep);
}

static const struct eng_tr_ops liar_ops = {
	.name = "lying loopback",
	.write_imm = liar_write_imm,
	.send_imm = liar_send_imm,
	.post_recv = liar_post_recv,
	.poll = liar_poll,
	.arm = liar_cq_arm,
	.event_fd = liar_event_fd,
	.ack_events = liar_ack_events,
	.describe = liar_describe,
	.shutdown = liar_shutdown,
};

/* The endpoint of l (made by the transport just now) posts through the liar. */
static void liar_take(struct eng_link *l)
{
	unsigned i;

	if (!liar.real)
		liar.real = l->ep->ops;
	assert_ptr_equal(l->ep->ops, liar.real);
	l->ep->ops = &liar_ops;
	/* Its worker's CQs too: a worker polls through the CQ's table, not the endpoint's. */
	for (i = 0; i < l->worker->n_cqs; i++)
		if (l->worker->cq[i]->ops == liar.real)
			l->worker->cq[i]->ops = &liar_ops;
}

/*
 * Only the first session on the lying transport lies: a server's next one
 * (the bench that shows it serves on) is honest, and leaves liar alone
 * while the first one's workers may still read it.
 */
static int liar_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	int err = eng__transport_loopback()->conn_create(cfg, conn_out);

	if (!err && !liar.cfg) {
		liar.cfg = cfg;
		liar.conn = *conn_out;
	}
	return err;
}

/*
 * The lying session's connection gone, nothing may match it again: a later
 * session's connection can be allocated at the same address, and would
 * then be taken for the liar's, with liar.cfg long freed.
 */
static void liar_conn_destroy(struct eng_conn *conn)
{
	if (conn && conn == liar.conn)
		liar.conn = NULL;
	eng__transport_loopback()->conn_destroy(conn);
}

static int liar_connect(struct eng_conn *conn, struct eng_link *l, const union eng_sockaddr *src,
			const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	int err = eng__transport_loopback()->connect(conn, l, src, dst, peer_link, timeout_ms);

	if (!err && conn == liar.conn)
		liar_take(l);
	return err;
}

static int liar_accept_all(struct eng_conn *conn, int ctl_fd, int timeout_ms)
{
	int err = eng__transport_loopback()->accept_all(conn, ctl_fd, timeout_ms);
	unsigned i;

	for (i = 0; !err && conn == liar.conn && i < liar.cfg->n_links; i++)
		liar_take(liar.cfg->link[i]);
	return err;
}

/* The lying transport, for one session that tells lie about chunk seq. */
const struct eng_transport *liar_tell(enum lie lie, uint64_t seq)
{
	liar_tr = *eng__transport_loopback();
	liar_tr.name = "lying loopback";
	liar_tr.conn_create = liar_conn_create;
	liar_tr.conn_destroy = liar_conn_destroy;
	liar_tr.connect = liar_connect;
	liar_tr.accept_all = liar_accept_all;
	liar.lie = lie;
	liar.seq = seq;
	liar.real = NULL;
	liar.cfg = NULL;
	liar.conn = NULL;
	atomic_store(&liar.told, false);
	atomic_store(&liar.dup_out, false);
	atomic_store(&liar.have_finished, false);
	atomic_store(&liar.finished_credited, false);
	return &liar_tr;
}

/*
 * The victim's transport for LIE_NO_CREDIT: the loopback, but its workers
 * see no completion while the liar posts the batch with its two writes into
 * one slot, so both arrive in one poll, while the first one's task is
 * surely still out (the victim has a helper). Otherwise a fast victim could
 * have taken the first and returned its credit before the second arrived:
 * a write with a credit, then.
 */
static const struct eng_tr_ops *held_real;
static const struct eng_conn_cfg *held_cfg;
static struct eng_transport held_tr;

static int held_poll(struct eng_cq *cq, struct eng_wc *wc, int max)
{
	if (atomic_load(&liar.told) && !atomic_load(&liar.dup_out))
		return 0;
	return held_real->poll(cq, wc, max);
}

static int held_cq_arm(struct eng_cq *cq)
{
	return held_real->arm(cq);
}

static int held_event_fd(struct eng_cq *cq)
{
	return held_real->event_fd(cq);
}

static void held_ack_events(struct eng_cq *cq)
{
	held_real->ack_events(cq);
}

/* Only CQs use this table: the endpoints' operations are not in it. */
static const struct eng_tr_ops held_ops = {
	.name = "held loopback",
	.poll = held_poll,
	.arm = held_cq_arm,
	.event_fd = held_event_fd,
	.ack_events = held_ack_events,
};

static int held_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	held_cfg = cfg;
	return eng__transport_loopback()->conn_create(cfg, conn_out);
}

static int held_accept_all(struct eng_conn *conn, int ctl_fd, int timeout_ms)
{
	int err = eng__transport_loopback()->accept_all(conn, ctl_fd, timeout_ms);
	unsigned i, k;

	for (i = 0; !err && i < held_cfg->n_workers; i++)
		for (k = 0; k < held_cfg->worker[i]->n_cqs; k++) {
			struct eng_cq *cq = held_cfg->worker[i]->cq[k];

			if (!held_real)
				held_real = cq->ops;
			if (cq->ops == held_real)
				cq->ops = &held_ops;
		}
	return err;
}

const struct eng_transport *held_arm(void)
{
	held_tr = *eng__transport_loopback();
	held_tr.name = "held loopback";
	held_tr.conn_create = held_conn_create;
	held_tr.accept_all = held_accept_all;
	held_real = NULL;
	return &held_tr;
}
