/*
 * verbs.c - the verbs transport: RC queue pairs connected with rdma_cm.
 *
 * Per worker and device: one completion channel, CQ, protection domain and
 * one memory registration covering the worker's whole slot memory (made once,
 * before any connection; never per chunk). Per stripe: one rdma_cm id and
 * its QP. The sender's id is resolved from the local rail's address to the
 * receiver rail's address, so the QP lands on the device and port that own
 * the source address; the RoCE v2 GID follows from it. The device the id
 * resolved to is checked against the rail the plan chose.
 *
 * The client of a session connects each stripe and the server accepts;
 * either may be the receiver (push and bench: the server; pull: the
 * client). Connection data travels in rdma_cm private data: the request
 * names the session token and the server's stripe; the receiver's slots
 * (address, rkey, count, size) travel in the request when the client
 * receives, else in the accept. Both ends post their receives before they
 * connect or accept, so no write or credit can find a queue empty.
 *
 * Threading: set-up and teardown run on the session's thread before workers
 * start and after they stopped; the data-path operations run on the worker
 * that owns the CQ.
 */
#include "engine/engine_int.h"
#include "engine/verbs.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VB_HDR_INLINE sizeof(struct eng_chunk_hdr)

struct vcq {
	struct eng_cq cq;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_cq *ibcq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
};

struct vep {
	struct eng_ep ep;
	struct rdma_cm_id *id;
	struct vcq *vcq;
	bool inline_hdr;
	bool connected;
	char desc[200];
};

struct eng_verbs {
	struct eng_job *job;
	struct rdma_event_channel *ch;
	struct vep *ep;                 /* one per stripe */
	struct rdma_cm_id *listen[TOPO_MAX_RAILS];
	unsigned n_listen;
	unsigned established;
};

/* The receiver's slots, little-endian on the wire. */
struct conn_slots {
	uint64_t data_addr;
	uint64_t hdr_addr;
	uint32_t data_rkey;
	uint32_t hdr_rkey;
	uint32_t n_slots;
	uint32_t slot_size;
};

/* The client's request (slots zero unless the client receives); the accept is a conn_slots. */
struct conn_req {
	uint64_t token;
	uint32_t stripe;
	uint32_t magic;
	struct conn_slots slots;
};
/* rdma_cm carries 56 bytes of private data in a request over the TCP port space. */
_Static_assert(sizeof(struct conn_req) <= 56, "the request fits rdma_cm's private data");

#define CONN_MAGIC 0x72636d31u /* "rcm1" */

/* ---- data path ---- */

static int vb_write_imm(struct eng_ep *ep, const struct eng_write *w, unsigned n)
{
	struct vep *e = ep->tr;
	struct ibv_send_wr wr[2 * 16], *bad = NULL;
	struct ibv_sge sge[2 * 16];
	unsigned i;
	int r;

	if (n > 16)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct ibv_send_wr *h = &wr[2 * i], *d = &wr[2 * i + 1];

		sge[2 * i] = (struct ibv_sge){(uintptr_t)w[i].hdr, sizeof(*w[i].hdr), w[i].hdr_lkey};
		sge[2 * i + 1] = (struct ibv_sge){(uintptr_t)w[i].data, w[i].len, w[i].data_lkey};
		*h = (struct ibv_send_wr){.wr_id = w[i].wr_id, .next = d, .sg_list = &sge[2 * i],
					  .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = e->inline_hdr ? IBV_SEND_INLINE : 0};
		h->wr.rdma.remote_addr = w[i].hdr_dst.addr;
		h->wr.rdma.rkey = w[i].hdr_dst.rkey;
		*d = (struct ibv_send_wr){.wr_id = w[i].wr_id, .next = i + 1 < n ? &wr[2 * i + 2] : NULL,
					  .sg_list = &sge[2 * i + 1], .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					  .send_flags = w[i].signaled ? IBV_SEND_SIGNALED : 0,
					  .imm_data = htonl(w[i].imm)};
		d->wr.rdma.remote_addr = w[i].data_dst.addr;
		d->wr.rdma.rkey = w[i].data_dst.rkey;
	}
	r = ibv_post_send(e->id->qp, wr, &bad);
	return r ? -r : 0;
}

static int vb_send_imm(struct eng_ep *ep, uint64_t wr_id, bool signaled, uint32_t imm)
{
	struct vep *e = ep->tr;
	struct ibv_send_wr wr = {.wr_id = wr_id, .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
				 .imm_data = htonl(imm)}, *bad = NULL;
	int r = ibv_post_send(e->id->qp, &wr, &bad);

	return r ? -r : 0;
}

static int vb_post_recv(struct eng_ep *ep, uint64_t wr_id, unsigned n)
{
	struct vep *e = ep->tr;
	struct ibv_recv_wr wr[64], *bad = NULL;
	unsigned i, k;
	int r;

	while (n > 0) {
		k = n < 64 ? n : 64;
		for (i = 0; i < k; i++)
			wr[i] = (struct ibv_recv_wr){.wr_id = wr_id, .next = i + 1 < k ? &wr[i + 1] : NULL};
		r = ibv_post_recv(e->id->qp, wr, &bad);
		if (r)
			return -r;
		n -= k;
	}
	return 0;
}

static int vb_poll(struct eng_cq *cq, struct eng_wc *wc, int max)
{
	struct vcq *c = cq->tr;
	struct ibv_wc iwc[32];
	int n, i;

	n = ibv_poll_cq(c->ibcq, max < 32 ? max : 32, iwc);
	if (n < 0)
		return -EIO;
	for (i = 0; i < n; i++) {
		wc[i] = (struct eng_wc){.wr_id = iwc[i].wr_id, .status = iwc[i].status,
					.status_str = ibv_wc_status_str(iwc[i].status),
					.qp_num = iwc[i].qp_num};
		if (iwc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM || iwc[i].opcode == IBV_WC_RECV)
			wc[i].op = ENG_WC_RECV_IMM;
		else
			wc[i].op = iwc[i].opcode == IBV_WC_SEND ? ENG_WC_SEND : ENG_WC_WRITE;
		wc[i].imm = ntohl(iwc[i].imm_data);
	}
	return n;
}

static int vb_arm(struct eng_cq *cq)
{
	int r = ibv_req_notify_cq(((struct vcq *)cq->tr)->ibcq, 0);

	return r ? -r : 0;
}

static int vb_event_fd(struct eng_cq *cq)
{
	return ((struct vcq *)cq->tr)->ch->fd;
}

static void vb_ack_events(struct eng_cq *cq)
{
	struct vcq *c = cq->tr;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	while (ibv_get_cq_event(c->ch, &ev_cq, &ev_ctx) == 0)
		ibv_ack_cq_events(ev_cq, 1);
}

static void vb_describe(struct eng_ep *ep, char *buf, size_t len)
{
	snprintf(buf, len, "%s", ((struct vep *)ep->tr)->desc);
}

static const struct eng_tr_ops verbs_ops = {
	.name = "verbs",
	.write_imm = vb_write_imm,
	.send_imm = vb_send_imm,
	.post_recv = vb_post_recv,
	.poll = vb_poll,
	.arm = vb_arm,
	.event_fd = vb_event_fd,
	.ack_events = vb_ack_events,
	.describe = vb_describe,
};

/* ---- set-up ---- */

static unsigned qp_send_depth(const struct eng_job *job, unsigned n_slots)
{
	return 2 * (n_slots + job->signal_every) + 8; /* header + data per chunk */
}

static void vcq_destroy(struct vcq *c)
{
	if (!c)
		return;
	if (c->ibcq) {
		vb_ack_events(&c->cq);
		ibv_destroy_cq(c->ibcq);
	}
	if (c->ch)
		ibv_destroy_comp_channel(c->ch);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	free(c);
}

/* The worker's CQ, PD and registration on ctx's device, made on first use. */
static int worker_vcq(struct eng_worker *w, struct ibv_context *ctx, struct vcq **vcq_out)
{
	const char *dev = ibv_get_device_name(ctx->device);
	unsigned i, depth = 0;
	struct vcq *c;
	int err;

	for (i = 0; i < w->n_cqs; i++)
		if (((struct vcq *)w->cq[i]->tr)->ctx == ctx) {
			*vcq_out = w->cq[i]->tr;
			return 0;
		}
	if (w->n_cqs == ENG_MAX_CQS)
		return rcp_err(-ENOSPC, "worker %u drives more than %d devices", w->index, ENG_MAX_CQS);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct vcq){.cq = {&verbs_ops, c}, .ctx = ctx};
	for (i = 0; i < w->n_stripes; i++)
		depth += qp_send_depth(w->job, w->stripe[i]->n_slots) + w->stripe[i]->n_slots + 8;
	c->pd = ibv_alloc_pd(ctx);
	if (!c->pd) {
		err = rcp_err(-ENOMEM, "ibv_alloc_pd(%s) failed", dev);
		goto err_free;
	}
	/* Only a receiver's slots are written from the network. */
	c->mr = ibv_reg_mr(c->pd, w->mem, w->mem_len,
			   IBV_ACCESS_LOCAL_WRITE |
				   (w->job->role == ENG_RECEIVER ? IBV_ACCESS_REMOTE_WRITE : 0));
	if (!c->mr) {
		err = rcp_err(-errno, "cannot register %zu MiB of buffer memory on %s: %s "
				      "(is the memlock limit too low? see ulimit -l)",
			      w->mem_len >> 20, dev, strerror(errno));
		goto err_free;
	}
	c->ch = ibv_create_comp_channel(ctx);
	if (c->ch)
		c->ibcq = ibv_create_cq(ctx, (int)depth, c, c->ch, 0);
	if (!c->ch || !c->ibcq) {
		err = rcp_err(-errno ? -errno : -ENOMEM, "cannot create a completion queue of %u entries on %s: %s",
			      depth, dev, strerror(errno));
		goto err_free;
	}
	fcntl(c->ch->fd, F_SETFL, fcntl(c->ch->fd, F_GETFL) | O_NONBLOCK);
	w->cq[w->n_cqs++] = &c->cq;
	*vcq_out = c;
	return 0;
err_free:
	vcq_destroy(c);
	return err;
}

int eng__verbs_create(struct eng_job *job, struct eng_verbs **vb_out)
{
	struct eng_verbs *vb = calloc(1, sizeof(*vb));

	if (!vb)
		return -ENOMEM;
	vb->job = job;
	vb->ep = calloc(job->n_stripes ? job->n_stripes : 1, sizeof(*vb->ep));
	vb->ch = rdma_create_event_channel();
	if (!vb->ep || !vb->ch) {
		int err = vb->ch ? -ENOMEM : rcp_err(-errno, "cannot open rdma_cm (%s): is rdma_ucm loaded?",
						     strerror(errno));

		eng__verbs_destroy(vb);
		return err;
	}
	fcntl(vb->ch->fd, F_SETFL, fcntl(vb->ch->fd, F_GETFL) | O_NONBLOCK);
	*vb_out = vb;
	return 0;
}

void eng__verbs_destroy(struct eng_verbs *vb)
{
	unsigned i, k;

	if (!vb)
		return;
	for (i = 0; vb->ep && i < vb->job->n_stripes; i++) {
		struct vep *e = &vb->ep[i];

		if (!e->id)
			continue;
		if (e->connected)
			rdma_disconnect(e->id);
		if (e->id->qp)
			rdma_destroy_qp(e->id);
		rdma_destroy_id(e->id);
	}
	for (i = 0; i < vb->n_listen; i++)
		rdma_destroy_id(vb->listen[i]);
	for (i = 0; i < vb->job->n_workers; i++) {
		struct eng_worker *w = &vb->job->worker[i];

		for (k = 0; k < w->n_cqs; k++)
			vcq_destroy(w->cq[k]->tr);
		w->n_cqs = 0;
	}
	if (vb->ch)
		rdma_destroy_event_channel(vb->ch);
	free(vb->ep);
	free(vb);
}

int eng__verbs_event_fd(const struct eng_verbs *vb)
{
	return vb->ch->fd;
}

static void addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

	if (!sa || sa->sa_family != AF_INET || !inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

/* The stripe's QP on the device id resolved to, which must be the rail's. */
static int stripe_make_qp(struct eng_verbs *vb, struct eng_stripe *s, struct rdma_cm_id *id,
			  const char *rail_dev)
{
	struct vep *e = &vb->ep[s->index];
	struct eng_worker *w = s->worker;
	const char *dev = ibv_get_device_name(id->verbs->device);
	struct ibv_qp_init_attr qa;
	struct vcq *c = NULL;
	char peer[64];
	int err;

	if (strcmp(dev, rail_dev) != 0)
		return rcp_err(-EXDEV, "the rail address of %s resolved to device %s: "
				       "check the addresses of the rails", rail_dev, dev);
	if ((err = worker_vcq(w, id->verbs, &c)) != 0)
		return err;
	qa = (struct ibv_qp_init_attr){.send_cq = c->ibcq, .recv_cq = c->ibcq, .qp_type = IBV_QPT_RC,
		.cap = {.max_send_wr = qp_send_depth(vb->job, s->n_slots), .max_recv_wr = s->n_slots + 8,
			.max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = VB_HDR_INLINE}};
	e->inline_hdr = rdma_create_qp(id, c->pd, &qa) == 0;
	if (!e->inline_hdr) {
		qa.cap.max_inline_data = 0; /* the device cannot inline a header: send it from memory */
		if (rdma_create_qp(id, c->pd, &qa))
			return rcp_err(-errno, "cannot create a queue pair on %s: %s", dev, strerror(errno));
	}
	*e = (struct vep){.ep = {&verbs_ops, e}, .id = id, .vcq = c, .inline_hdr = e->inline_hdr};
	addr_str(rdma_get_peer_addr(id), peer, sizeof(peer));
	snprintf(e->desc, sizeof(e->desc), "%s port %u qp 0x%x (peer %s)", dev, id->port_num,
		 id->qp->qp_num, peer);
	s->ep = &e->ep;
	s->lkey = c->mr->lkey;
	return 0;
}

/*
 * Wait for the next event on the channel, at most timeout_ms. With ctl_fd >= 0,
 * return -EPIPE (no sentence: the caller reads the control connection) as
 * soon as the peer sends something or hangs up there.
 */
static int cm_next_or_ctl(struct eng_verbs *vb, int ctl_fd, int timeout_ms,
			  struct rdma_cm_event **ev_out)
{
	struct pollfd pfd[2] = {{.fd = vb->ch->fd, .events = POLLIN}, {.fd = ctl_fd, .events = POLLIN}};
	int r;

	for (;;) {
		if (rdma_get_cm_event(vb->ch, ev_out) == 0)
			return 0;
		if (errno != EAGAIN)
			return rcp_err(-errno, "rdma_get_cm_event: %s", strerror(errno));
		r = poll(pfd, ctl_fd >= 0 ? 2 : 1, timeout_ms);
		if (r == 0)
			return rcp_err(-ETIMEDOUT, "no answer from rdma_cm within %d s", timeout_ms / 1000);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && ctl_fd >= 0 && pfd[1].revents)
			return -EPIPE;
	}
}

static int cm_next(struct eng_verbs *vb, int timeout_ms, struct rdma_cm_event **ev_out)
{
	return cm_next_or_ctl(vb, -1, timeout_ms, ev_out);
}

/* Wait for event want on id; any other outcome is an error naming the step. */
static int cm_expect(struct eng_verbs *vb, struct rdma_cm_id *id, enum rdma_cm_event_type want,
		     const char *step, int timeout_ms, struct conn_slots *acc_out)
{
	struct rdma_cm_event *ev;
	int err = cm_next(vb, timeout_ms, &ev), status;
	enum rdma_cm_event_type got;

	if (err)
		return rcp_err(err, "%s: %s", step, rcp_err_msg(err));
	got = ev->event;
	status = ev->status;
	if (got == want && ev->id == id && acc_out && ev->param.conn.private_data_len >= sizeof(*acc_out))
		memcpy(acc_out, ev->param.conn.private_data, sizeof(*acc_out));
	rdma_ack_cm_event(ev);
	if (got != want)
		return rcp_err(got == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED : -EHOSTUNREACH,
			       "%s: rdma_cm says %s (status %d)", step, rdma_event_str(got), status);
	return 0;
}

/* This stripe's slots, for the peer that writes into them. */
static struct conn_slots slots_of(const struct eng_stripe *s)
{
	const struct vcq *c = ((const struct vep *)s->ep->tr)->vcq;

	return (struct conn_slots){htole64((uintptr_t)s->data), htole64((uintptr_t)s->hdr),
				   htole32(c->mr->rkey), htole32(c->mr->rkey), htole32(s->n_slots),
				   htole32(s->slot_size)};
}

/* The sender takes the receiver's slots, which must be what the session agreed. */
static int slots_take(struct eng_stripe *s, const struct conn_slots *in, const char *step)
{
	if (le32toh(in->n_slots) != s->n_slots || le32toh(in->slot_size) != s->slot_size)
		return rcp_err(-EPROTO, "%s: the receiver offered %u slots of %u bytes, expected %u of %u",
			       step, le32toh(in->n_slots), le32toh(in->slot_size), s->n_slots, s->slot_size);
	s->peer_data = (struct eng_remote){le64toh(in->data_addr), le32toh(in->data_rkey)};
	s->peer_hdr = (struct eng_remote){le64toh(in->hdr_addr), le32toh(in->hdr_rkey)};
	return 0;
}

/* Post the stripe's receives for its role: chunk announcements or credits. */
static int stripe_init(struct eng_stripe *s)
{
	return s->job->role == ENG_SENDER ? eng__stripe_init_sender(s) : eng__stripe_init_receiver(s);
}

int eng__verbs_connect(struct eng_verbs *vb, struct eng_stripe *s, const char *rail_dev,
		       const struct sockaddr_in *src, const struct sockaddr_in *dst,
		       uint32_t peer_stripe, int timeout_ms)
{
	struct conn_req req = {htole64(vb->job->token), htole32(peer_stripe), htole32(CONN_MAGIC), {0}};
	struct rdma_conn_param cp = {.private_data = &req, .private_data_len = sizeof(req),
				     .retry_count = 7, .rnr_retry_count = 7};
	struct conn_slots acc = {0};
	struct rdma_cm_id *id;
	char step[160], a[64], b[64];
	int err;

	addr_str((const struct sockaddr *)src, a, sizeof(a));
	addr_str((const struct sockaddr *)dst, b, sizeof(b));
	snprintf(step, sizeof(step), "connecting %s (%s) to %s port %u", rail_dev, a, b, ntohs(dst->sin_port));
	if (rdma_create_id(vb->ch, &id, s, RDMA_PS_TCP))
		return rcp_err(-errno, "rdma_create_id: %s", strerror(errno));
	vb->ep[s->index].id = id;
	if (rdma_resolve_addr(id, (struct sockaddr *)src, (struct sockaddr *)dst, timeout_ms))
		return rcp_err(-errno, "%s: %s", step, strerror(errno));
	if ((err = cm_expect(vb, id, RDMA_CM_EVENT_ADDR_RESOLVED, step, timeout_ms, NULL)) != 0)
		return err;
	if (rdma_resolve_route(id, timeout_ms))
		return rcp_err(-errno, "%s: %s", step, strerror(errno));
	if ((err = cm_expect(vb, id, RDMA_CM_EVENT_ROUTE_RESOLVED, step, timeout_ms, NULL)) != 0)
		return err;
	if ((err = stripe_make_qp(vb, s, id, rail_dev)) != 0)
		return err;
	if ((err = stripe_init(s)) != 0)
		return rcp_err(err, "%s: posting receives failed", step);
	if (vb->job->role == ENG_RECEIVER)
		req.slots = slots_of(s);
	if (rdma_connect(id, &cp))
		return rcp_err(-errno, "%s: %s", step, strerror(errno));
	if ((err = cm_expect(vb, id, RDMA_CM_EVENT_ESTABLISHED, step, timeout_ms, &acc)) != 0)
		return err;
	vb->ep[s->index].connected = true;
	return vb->job->role == ENG_SENDER ? slots_take(s, &acc, step) : 0;
}

int eng__verbs_listen(struct eng_verbs *vb, const struct sockaddr_in *addr, uint16_t *port_out)
{
	struct rdma_cm_id *id;
	char a[64];

	if (vb->n_listen == TOPO_MAX_RAILS)
		return -ENOSPC;
	if (rdma_create_id(vb->ch, &id, NULL, RDMA_PS_TCP))
		return rcp_err(-errno, "rdma_create_id: %s", strerror(errno));
	vb->listen[vb->n_listen++] = id;
	addr_str((const struct sockaddr *)addr, a, sizeof(a));
	if (rdma_bind_addr(id, (struct sockaddr *)addr) || rdma_listen(id, 64))
		return rcp_err(-errno, "cannot listen for RDMA connections on %s: %s", a, strerror(errno));
	*port_out = ntohs(rdma_get_src_port(id));
	return 0;
}

/* The client asks for a stripe: check it, make its QP, post receives, accept. */
static int on_connect_request(struct eng_verbs *vb, struct rdma_cm_event *ev, const char *const *rail_dev)
{
	const struct conn_req *req = ev->param.conn.private_data;
	struct eng_stripe *s;
	struct conn_slots acc = {0};
	struct rdma_conn_param cp = {.private_data = &acc, .private_data_len = sizeof(acc),
				     .retry_count = 7, .rnr_retry_count = 7};
	uint32_t k;
	int err;

	if (ev->param.conn.private_data_len < sizeof(*req) || le32toh(req->magic) != CONN_MAGIC ||
	    le64toh(req->token) != vb->job->token)
		return rcp_err(-EPERM, "an RDMA connection request that is not from this session");
	k = le32toh(req->stripe);
	if (k >= vb->job->n_stripes || vb->ep[k].id)
		return rcp_err(-EPROTO, "an RDMA connection request for stripe %u, which is not open", k);
	s = &vb->job->stripe[k];
	vb->ep[k].id = ev->id;
	ev->id->context = s;
	if ((err = stripe_make_qp(vb, s, ev->id, rail_dev[s->rail])) != 0)
		return err;
	if (vb->job->role == ENG_SENDER && (err = slots_take(s, &req->slots, "accepting a stripe")) != 0)
		return err;
	if ((err = stripe_init(s)) != 0)
		return err;
	if (vb->job->role == ENG_RECEIVER)
		acc = slots_of(s);
	if (rdma_accept(ev->id, &cp))
		return rcp_err(-errno, "rdma_accept: %s", strerror(errno));
	return 0;
}

/* Refuse a connection request that is not ours to take, and free its id. */
static void cm_refuse(struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;

	rdma_reject(id, NULL, 0);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id); /* after the ack: destroying waits for the id's events */
}

int eng__verbs_accept_all(struct eng_verbs *vb, const char *const *rail_dev, int ctl_fd,
			  int timeout_ms)
{
	uint64_t deadline = eng__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct rdma_cm_event *ev;
	unsigned i;
	int err = 0;

	while (vb->established < vb->job->n_stripes) {
		enum rdma_cm_event_type type;
		uint64_t now = eng__now_ns();

		/* One deadline for the whole set-up, however many events arrive. */
		err = now >= deadline ? rcp_err(-ETIMEDOUT, "no answer from rdma_cm within %d s",
						  timeout_ms / 1000)
				      : cm_next_or_ctl(vb, ctl_fd, (int)((deadline - now) / 1000000) + 1, &ev);
		if (err)
			return err == -EPIPE ? err : rcp_err(err, "waiting for the client's RDMA connections: %s",
							     rcp_err_msg(err));
		type = ev->event;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			err = on_connect_request(vb, ev, rail_dev);
			if (err && !ev->id->context) {
				/* Not from this session, or a stripe already taken: refuse it, go on. */
				rcp_log(RCP_LOG_INFO, "refused an RDMA connection request: %s", rcp_err_msg(err));
				cm_refuse(ev);
				continue;
			}
			if (err) {
				rdma_ack_cm_event(ev);
				return err;
			}
		} else if (type == RDMA_CM_EVENT_ESTABLISHED) {
			vb->ep[((struct eng_stripe *)ev->id->context)->index].connected = true;
			vb->established++;
		} else {
			rdma_ack_cm_event(ev);
			return rcp_err(-ECONNABORTED, "while connecting stripes, rdma_cm says %s",
				       rdma_event_str(type));
		}
		rdma_ack_cm_event(ev);
	}
	/* Every stripe is connected: nobody else may connect to this session. */
	for (i = 0; i < vb->n_listen; i++)
		rdma_destroy_id(vb->listen[i]);
	vb->n_listen = 0;
	return 0;
}

int eng__verbs_check_events(struct eng_verbs *vb)
{
	struct rdma_cm_event *ev;
	int err = 0;

	while (!err && rdma_get_cm_event(vb->ch, &ev) == 0) {
		enum rdma_cm_event_type type = ev->event;
		struct eng_stripe *s = ev->id->context;

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			cm_refuse(ev); /* a late or foreign request during the transfer */
			continue;
		}
		if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    type == RDMA_CM_EVENT_TIMEWAIT_EXIT)
			err = rcp_err(-ECONNRESET, "%s: rdma_cm says %s",
				      s ? ((struct vep *)s->ep->tr)->desc : "a rail", rdma_event_str(type));
		rdma_ack_cm_event(ev);
	}
	return err;
}
