/*
 * tcp.c - the TCP transport's data path: each stripe a TCP connection,
 * each of its ends an endpoint with a reader thread (set-up: tcp_cm.c).
 *
 * Sending: the worker that owns an endpoint writes its chunks' frames
 * (frame, 64-byte header, payload straight from the slot) with one sendmsg
 * per batch, and a credit as a bare frame. A plain sendmsg leaves the
 * kernel a copy, so a signaled write or send completes once it returned:
 * the slot is free again, as after an RDMA write's completion. A zero-copy
 * one (MSG_ZEROCOPY, tcp_zc.c) leaves the kernel the slot's pages, so its
 * completion waits for the kernel's notification, which the endpoint's
 * reader takes from the socket's error queue. A send that
 * fails, or finds no room for TCP_SEND_STALL_S, completes with an error
 * and takes the endpoint down, as a QP in the error state does.
 *
 * Receiving: a thread per endpoint blocks in recv and is the only reader of
 * its socket. Before a byte of a chunk lands it checks the frame: the type
 * this end may get, a receive posted, and at a receiver a credit held for
 * the slot the frame names (spent here, given back by this end's
 * send_imm) and a length that fits the slot; then the header, against the
 * frame and the link; only then are header and payload read into the slot.
 * A peer can so never write outside the slots it was credited, nor into a
 * slot whose chunk is still being written to disk. A frame that fails, or
 * the connection ending, stops the reader with one sentence: an error
 * completion wakes the worker, and check_events reports the link lost.
 *
 * Why threads and not epoll in the worker: a blocking reader places a
 * payload with one recv straight into its slot, with no partial-frame state
 * machine; the worker loop stays the one verbs and loopback drive (poll,
 * arm, sleep on the CQ's eventfd). A reader costs a thread per stripe,
 * which at 4 stripes per rail is few.
 *
 * Each CQ is a locked queue of completions and an eventfd; readers and the
 * owner push, the owner polls. The lock orders a reader's writes into a
 * slot before the owner's use of them.
 *
 * Threading: an endpoint is posted to by its owning worker only; its
 * reader touches recvs, credited, lost and why (atomics, or written before
 * lost is set with release order) and its CQ (locked).
 */
#include "engine/transport/tcp_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

struct tcp_cq {
	struct eng_cq cq;
	pthread_mutex_t lock;
	struct eng_wc *item;
	size_t n, cap;
	int efd;
	bool armed;
};

static const struct eng_tr_ops tcp_ops;

static void cq_wake(struct tcp_cq *c)
{
	uint64_t one = 1;

	if (write(c->efd, &one, sizeof(one)) < 0)
		return; /* the counter is full: the owner wakes anyway */
}

int eng__tcp_cq_push(struct tcp_cq *c, const struct eng_wc *wc)
{
	int err = 0;

	pthread_mutex_lock(&c->lock);
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct eng_wc *it = realloc(c->item, cap * sizeof(*it));

		if (!it) {
			err = -ENOMEM;
			goto out;
		}
		c->item = it;
		c->cap = cap;
	}
	c->item[c->n++] = *wc;
	if (c->armed) {
		c->armed = false;
		cq_wake(c);
	}
out:
	pthread_mutex_unlock(&c->lock);
	return err;
}

static int tcp_poll(struct eng_cq *cq, struct eng_wc *wc, int max)
{
	struct tcp_cq *c = cq->tr;
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->n < (size_t)max ? c->n : (size_t)max;
	if (n > 0) { /* item may still be NULL, and memcpy must not see it */
		memcpy(wc, c->item, n * sizeof(*wc));
		memmove(c->item, c->item + n, (c->n - n) * sizeof(*wc));
		c->n -= n;
	}
	pthread_mutex_unlock(&c->lock);
	return (int)n;
}

static int tcp_arm(struct eng_cq *cq)
{
	struct tcp_cq *c = cq->tr;

	pthread_mutex_lock(&c->lock);
	c->armed = c->n == 0;
	if (c->n)
		cq_wake(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int tcp_event_fd(struct eng_cq *cq)
{
	return ((struct tcp_cq *)cq->tr)->efd;
}

static void tcp_ack_events(struct eng_cq *cq)
{
	uint64_t v;

	if (read(((struct tcp_cq *)cq->tr)->efd, &v, sizeof(v)) < 0)
		return; /* nothing pending: EAGAIN */
}

static void tcp_describe(struct eng_ep *ep, char *buf, size_t len)
{
	snprintf(buf, len, "%s", ((struct tcp_ep *)ep->tr)->desc);
}

/* An error completion on the owner's CQ, and the endpoint down from now on. */
static int fail_wr(struct tcp_ep *e, uint64_t wr_id, enum eng_wc_op op, const char *why)
{
	struct eng_wc wc = {.wr_id = wr_id, .status = EIO, .status_str = why, .op = op};

	e->down = true;
	shutdown(e->fd, SHUT_RDWR);
	return eng__tcp_cq_push(e->cq, &wc);
}

/*
 * Everything of msg out, however the kernel splits it, zero-copy where e
 * sends so (tcp_zc.c); 0 or -errno.
 */
static int send_all(struct tcp_ep *e, struct msghdr *msg)
{
	while (msg->msg_iovlen > 0) {
		int flags = eng__tcp_zc_flags(e);
		ssize_t k = sendmsg(e->fd, msg, flags);

		/* over the kernel's limits for zero-copy (optmem, locked pages): plain */
		if (k < 0 && errno == ENOBUFS && (flags & MSG_ZEROCOPY)) {
			eng__tcp_zc_nobufs(e);
			k = sendmsg(e->fd, msg, flags = MSG_NOSIGNAL);
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		eng__tcp_zc_sent(e, flags);
		while (k > 0 && msg->msg_iovlen > 0) {
			size_t take = (size_t)k < msg->msg_iov->iov_len ? (size_t)k
									: msg->msg_iov->iov_len;

			msg->msg_iov->iov_base = (uint8_t *)msg->msg_iov->iov_base + take;
			msg->msg_iov->iov_len -= take;
			k -= (ssize_t)take;
			if (msg->msg_iov->iov_len == 0) {
				msg->msg_iov++;
				msg->msg_iovlen--;
			}
		}
	}
	return 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)

static const char *send_why(int err)
{
	return err == -ETIMEDOUT ? "the peer took nothing for " STR(TCP_SEND_STALL_S) " s"
	       : err == -EPIPE || err == -ECONNRESET ? "the peer closed the connection"
						     : "sending on the connection failed";
}

/*
 * w's iovecs at iov[*n_iov] on: frame, header, payload, and sealed a tag,
 * all but the payload from o. Sealed, the slot's payload is encrypted in
 * place: the sender fills the slot again from its source before any other
 * use. 0 or -EIO.
 */
static int chunk_iov(struct tcp_ep *e, const struct eng_write *w, struct tcp_chunk_out *o,
		     struct iovec *iov, size_t *n_iov)
{
	o->f = (struct tcp_frame){TCP_FRAME_MAGIC, TCP_FRAME_CHUNK, w->imm, w->len};
	if (!e->seal)
		o->hc = *w->hdr;
	else if (eng__tcp_seal_chunk(e->seal, &o->f, w->hdr, &o->hc, (uint8_t *)(uintptr_t)w->data,
				     o->tag))
		return -EIO;
	iov[(*n_iov)++] = (struct iovec){&o->f, sizeof(o->f)};
	iov[(*n_iov)++] = (struct iovec){&o->hc, sizeof(o->hc)};
	iov[(*n_iov)++] = (struct iovec){(void *)(uintptr_t)w->data, w->len};
	if (e->seal)
		iov[(*n_iov)++] = (struct iovec){o->tag, TCP_SEAL_TAG_LEN};
	return 0;
}

static int tcp_write_imm(struct eng_ep *ep, const struct eng_write *w, unsigned n)
{
	struct tcp_ep *e = ep->tr;
	struct tcp_chunk_out out[ENG_WRITE_BATCH];
	struct iovec iov[4 * ENG_WRITE_BATCH];
	struct msghdr msg = {.msg_iov = iov};
	unsigned i;
	int err;

	if (n > ENG_WRITE_BATCH)
		return -EINVAL;
	if (e->down)
		return fail_wr(e, w[0].wr_id, ENG_WC_WRITE, "the connection is down");
	for (i = 0; i < n; i++) {
		/* zero-copy: the kernel reads them after sendmsg, until the slot is free */
		struct tcp_chunk_out *o = &out[i];

		if (e->zc.outs && w[i].imm >= e->link->n_slots)
			return -EINVAL;
		if (e->zc.outs)
			o = &e->zc.outs[w[i].imm];
		if (chunk_iov(e, &w[i], o, iov, &msg.msg_iovlen))
			return fail_wr(e, w[0].wr_id, ENG_WC_WRITE, "sealing a chunk failed");
	}
	if ((err = send_all(e, &msg)) != 0)
		return fail_wr(e, w[0].wr_id, ENG_WC_WRITE, send_why(err));
	for (i = 0; i < n && !err; i++) {
		struct eng_wc wc = {.wr_id = w[i].wr_id, .op = ENG_WC_WRITE};

		if (w[i].signaled)
			err = eng__tcp_zc_complete(e, &wc);
	}
	return err;
}

static int tcp_send_imm(struct eng_ep *ep, uint64_t wr_id, bool signaled, uint32_t imm)
{
	struct tcp_ep *e = ep->tr;
	struct tcp_frame f = {TCP_FRAME_MAGIC, TCP_FRAME_CREDIT, imm, 0};
	struct iovec iov = {&f, sizeof(f)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct eng_wc wc = {.wr_id = wr_id, .op = ENG_WC_SEND};
	int err;

	if (e->down)
		return fail_wr(e, wr_id, ENG_WC_SEND, "the connection is down");
	/* The peer may write the slot as soon as the credit leaves: the reader must allow it. */
	if (e->receiver && imm < e->link->n_slots)
		atomic_store(&e->credited[imm], true);
	if ((err = send_all(e, &msg)) != 0)
		return fail_wr(e, wr_id, ENG_WC_SEND, send_why(err));
	return signaled ? eng__tcp_zc_complete(e, &wc) : 0;
}

static int tcp_post_recv(struct eng_ep *ep, uint64_t wr_id, unsigned n)
{
	struct tcp_ep *e = ep->tr;

	atomic_store(&e->recv_wr_id, wr_id);
	atomic_fetch_add(&e->recvs, n);
	return 0;
}

static void tcp_shutdown(struct eng_ep *ep)
{
	struct tcp_ep *e = ep->tr;

	e->down = true;
	shutdown(e->fd, SHUT_RDWR);
}

static const struct eng_tr_ops tcp_ops = {
	.name = "tcp",
	.write_imm = tcp_write_imm,
	.send_imm = tcp_send_imm,
	.post_recv = tcp_post_recv,
	.poll = tcp_poll,
	.arm = tcp_arm,
	.event_fd = tcp_event_fd,
	.ack_events = tcp_ack_events,
	.describe = tcp_describe,
	.shutdown = tcp_shutdown,
};

/* ---- the reader ---- */

/* Take one posted receive; false when none is left. */
static bool recv_take(struct tcp_ep *e)
{
	unsigned r = atomic_load(&e->recvs);

	do {
		if (r == 0)
			return false;
	} while (!atomic_compare_exchange_weak(&e->recvs, &r, r - 1));
	return true;
}

const char *eng__tcp_frame_check(struct tcp_ep *e, const struct tcp_frame *f)
{
	if (f->magic != TCP_FRAME_MAGIC)
		return "the peer sent a frame with a bad magic number";
	if (f->type != TCP_FRAME_CHUNK && f->type != TCP_FRAME_CREDIT)
		return "the peer sent a frame of an unknown type";
	if ((f->type == TCP_FRAME_CHUNK) != e->receiver)
		return e->receiver ? "the sender sent a credit" : "the receiver sent a chunk";
	if (f->type == TCP_FRAME_CREDIT && f->len != 0)
		return "the receiver sent a credit with a payload";
	if (e->receiver && f->imm >= e->link->n_slots)
		return "the sender wrote to a slot that does not exist";
	if (e->receiver && (f->len == 0 || f->len > e->link->slot_size))
		return "the sender sent a chunk longer than its slot";
	if (e->receiver && !atomic_exchange(&e->credited[f->imm], false))
		return "the sender wrote into a slot it held no credit for";
	if (!recv_take(e))
		return "the peer sent past the receives posted for it";
	return NULL;
}

const char *eng__tcp_hdr_check(const struct tcp_ep *e, const struct tcp_frame *f,
			       const struct eng_chunk_hdr *h)
{
	if (h->magic != ENG_HDR_MAGIC)
		return "the sender sent a chunk header with a bad magic number";
	if (h->slot != f->imm || h->len != f->len)
		return "the sender sent a chunk header that does not match its frame";
	(void)e; /* the session's token and the chunk number are the data path's to check */
	return NULL;
}

/* Exactly len bytes into buf: 0, or a sentence (the peer closed, an error). */
static const char *read_all(int fd, void *buf, size_t len, bool at_frame)
{
	size_t got = 0;

	while (got < len) {
		ssize_t k = recv(fd, (uint8_t *)buf + got, len - got, MSG_WAITALL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0)
			return at_frame && got == 0 ? "the peer closed the connection"
						    : "the peer closed the connection mid-frame";
		if (k < 0)
			return errno == ECONNRESET ? "the peer reset the connection"
						   : "reading from the connection failed";
		got += (size_t)k;
	}
	return NULL;
}

#define SEAL_FAILED "the sender sent a chunk that fails its authentication (AES-256-GCM)"

/*
 * Chunk frame f's header and payload into its slot (f is checked): NULL, or
 * why the link ends. Sealed, the header is decrypted and checked for its
 * bounds before the payload is read, and handed on only once the tag held.
 */
static const char *read_chunk(struct tcp_ep *e, const struct tcp_frame *f)
{
	uint8_t *slot = e->link->data + (size_t)f->imm * e->link->slot_size;
	uint8_t tag[TCP_SEAL_TAG_LEN];
	struct eng_chunk_hdr h;
	const char *bad;

	if ((bad = read_all(e->fd, &h, sizeof(h), false)) != NULL)
		return bad;
	if (e->seal &&
	    (eng__tcp_open_begin(e->seal, f) || eng__tcp_open_update(e->seal, &h, sizeof(h))))
		return "opening a sealed chunk failed";
	/* Sealed, a header that decrypts to nonsense was not sealed with this stripe's key. */
	if ((bad = eng__tcp_hdr_check(e, f, &h)) != NULL)
		return e->seal ? SEAL_FAILED : bad;
	if ((bad = read_all(e->fd, slot, f->len, false)) != NULL)
		return bad;
	if (e->seal) {
		if ((bad = read_all(e->fd, tag, sizeof(tag), false)) != NULL)
			return bad;
		if (eng__tcp_open_update(e->seal, slot, f->len) || !eng__tcp_open_end(e->seal, tag))
			return SEAL_FAILED;
	}
	memcpy(&e->link->hdr[f->imm], &h, sizeof(h));
	return NULL;
}

/* One frame, checked, into its place; NULL or why the link ends. */
static const char *read_frame(struct tcp_ep *e)
{
	struct tcp_frame f;
	struct eng_wc wc = {.op = ENG_WC_RECV_IMM};
	const char *bad;

	if ((bad = read_all(e->fd, &f, sizeof(f), true)) != NULL ||
	    (bad = eng__tcp_frame_check(e, &f)) != NULL)
		return bad;
	if (f.type == TCP_FRAME_CHUNK && (bad = read_chunk(e, &f)) != NULL)
		return bad;
	wc.wr_id = atomic_load(&e->recv_wr_id);
	wc.imm = f.imm;
	return eng__tcp_cq_push(e->cq, &wc) ? "out of memory for a completion" : NULL;
}

static void *reader_main(void *arg)
{
	struct tcp_ep *e = arg;
	const char *why;
	struct eng_wc wc = {.status = EIO, .op = ENG_WC_RECV_IMM};

	while ((why = e->zc.outs ? eng__tcp_zc_wait(e) : NULL) == NULL &&
	       (why = read_frame(e)) == NULL)
		;
	snprintf(e->why, sizeof(e->why), "%s", why);
	atomic_store_explicit(&e->lost, true, memory_order_release);
	shutdown(e->fd, SHUT_RDWR); /* a bad frame ends the link both ways */
	wc.wr_id = atomic_load(&e->recv_wr_id);
	wc.status_str = e->why;
	if (wc.wr_id)
		eng__tcp_cq_push(e->cq, &wc);
	return NULL;
}

/* ---- making and unmaking ---- */

int eng__tcp_cq_create(struct eng_cq **cq_out)
{
	struct tcp_cq *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->efd < 0) {
		int err = -errno;

		free(c);
		return rcp_err(err, "eventfd: %s", strerror(-err));
	}
	pthread_mutex_init(&c->lock, NULL);
	c->cq = (struct eng_cq){&tcp_ops, c};
	*cq_out = &c->cq;
	return 0;
}

void eng__tcp_cq_destroy(struct eng_cq *cq)
{
	struct tcp_cq *c;

	if (!cq)
		return;
	c = cq->tr;
	close(c->efd);
	pthread_mutex_destroy(&c->lock);
	free(c->item);
	free(c);
}

/* "tcp 127.0.0.1:40001 -> 127.0.0.1:40000 (lo)" */
static void ep_describe(struct tcp_ep *e)
{
	union eng_sockaddr a = {0}, b = {0};
	socklen_t la = sizeof(a), lb = sizeof(b);
	char sa[INET6_ADDRSTRLEN] = "?", sb[INET6_ADDRSTRLEN] = "?";

	if (getsockname(e->fd, &a.sa, &la) == 0)
		eng__addr_ntop(&a.sa, sa, sizeof(sa));
	if (getpeername(e->fd, &b.sa, &lb) == 0)
		eng__addr_ntop(&b.sa, sb, sizeof(sb));
	snprintf(e->desc, sizeof(e->desc), "tcp %s:%u -> %s:%u (%s)", sa, eng__addr_port(&a.sa), sb,
		 eng__addr_port(&b.sa), e->link->rail_dev ? e->link->rail_dev : "?");
}

int eng__tcp_ep_create(struct eng_cq *cq, int fd, struct eng_link *l, bool receiver,
		       struct eng_ep **ep_out)
{
	struct tcp_ep *e = calloc(1, sizeof(*e));
	unsigned i;

	if (e && receiver)
		e->credited = calloc(l->n_slots ? l->n_slots : 1, sizeof(*e->credited));
	if (!e || (receiver && !e->credited)) {
		free(e);
		return -ENOMEM;
	}
	e->ep = (struct eng_ep){&tcp_ops, e};
	e->cq = cq->tr;
	e->fd = fd;
	e->link = l;
	e->receiver = receiver;
	pthread_mutex_init(&e->zc.lock, NULL);
	/* The sender starts with a credit for every slot. */
	for (i = 0; receiver && i < l->n_slots; i++)
		atomic_init(&e->credited[i], true);
	ep_describe(e);
	*ep_out = &e->ep;
	return 0;
}

int eng__tcp_ep_start(struct eng_ep *ep)
{
	struct tcp_ep *e = ep->tr;
	int err = pthread_create(&e->reader, NULL, reader_main, e);

	if (err)
		return rcp_err(-err, "starting the reader of %s: %s", e->desc, strerror(err));
	e->reader_started = true;
	return 0;
}

int eng__tcp_ep_seal(struct eng_ep *ep, const uint8_t key[TCP_SEAL_KEY_LEN], uint32_t stripe)
{
	struct tcp_ep *e = ep->tr;

	return eng__tcp_seal_create(key, stripe, !e->receiver, &e->seal);
}

void eng__tcp_ep_destroy(struct eng_ep *ep)
{
	struct tcp_ep *e;

	if (!ep)
		return;
	e = ep->tr;
	shutdown(e->fd, SHUT_RDWR);
	if (e->reader_started)
		pthread_join(e->reader, NULL);
	eng__tcp_zc_close(e);
	close(e->fd);
	eng__tcp_seal_destroy(e->seal);
	eng__tcp_zc_fini(&e->zc);
	free(e->credited);
	free(e);
}
