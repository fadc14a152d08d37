/*
 * verbs.c - the verbs transport's data path and per-worker resources.
 *
 * Per worker and device: one completion channel, CQ, protection domain and
 * one memory registration covering the worker's whole slot memory (made
 * once, before any connection; never per chunk). A chunk is two work
 * requests chained under one doorbell: its 64-byte header as an RDMA write
 * (inline where the device allows, so it costs no DMA read), then its
 * payload as an RDMA write with immediate naming the slot. Credits are
 * zero-byte sends with immediate. Connection management is in cm.c.
 *
 * Rail addresses: a RoCE port's RoCE v2 GID's, an InfiniBand port's IPoIB
 * interface's (railaddr.c), IPv4 where there is one, else global IPv6, with
 * the prefix of the interface that holds it (getifaddrs).
 *
 * Threading: the data-path operations run on the worker that owns the CQ;
 * set-up and teardown on the session's thread while no worker runs.
 */
#include "engine/transport/device_int.h"
#include "engine/transport/verbs_int.h"

#include "common/common.h"
#include "engine/engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Receives posted per ibv_post_recv call. */
#define VB_RECV_BATCH 64

static int vb_write_imm(struct eng_ep *ep, const struct eng_write *w, unsigned n)
{
	struct vep *e = ep->tr;
	struct ibv_send_wr wr[2 * ENG_WRITE_BATCH], *bad = NULL;
	struct ibv_sge sge[2 * ENG_WRITE_BATCH];
	unsigned i;
	int r;

	if (n > ENG_WRITE_BATCH)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct ibv_send_wr *h = &wr[2 * i], *d = &wr[2 * i + 1];

		sge[2 * i] =
			(struct ibv_sge){(uintptr_t)w[i].hdr, sizeof(*w[i].hdr), w[i].hdr_lkey};
		sge[2 * i + 1] = (struct ibv_sge){(uintptr_t)w[i].data, w[i].len, w[i].data_lkey};
		*h = (struct ibv_send_wr){.wr_id = w[i].wr_id,
					  .next = d,
					  .sg_list = &sge[2 * i],
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = e->inline_hdr ? IBV_SEND_INLINE : 0};
		h->wr.rdma.remote_addr = w[i].hdr_dst.addr;
		h->wr.rdma.rkey = w[i].hdr_dst.rkey;
		*d = (struct ibv_send_wr){.wr_id = w[i].wr_id,
					  .next = i + 1 < n ? &wr[2 * i + 2] : NULL,
					  .sg_list = &sge[2 * i + 1],
					  .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					  .send_flags = w[i].signaled ? IBV_SEND_SIGNALED : 0,
					  .imm_data = htonl(w[i].imm)};
		d->wr.rdma.remote_addr = w[i].data_dst.addr;
		d->wr.rdma.rkey = w[i].data_dst.rkey;
	}
	r = ibv_post_send(e->qp, wr, &bad);
	return r ? -r : 0;
}

static int vb_send_imm(struct eng_ep *ep, uint64_t wr_id, bool signaled, uint32_t imm)
{
	struct vep *e = ep->tr;
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
				 .imm_data = htonl(imm)},
			   *bad = NULL;
	int r = ibv_post_send(e->qp, &wr, &bad);

	return r ? -r : 0;
}

static int vb_post_recv(struct eng_ep *ep, uint64_t wr_id, unsigned n)
{
	struct vep *e = ep->tr;
	struct ibv_recv_wr wr[VB_RECV_BATCH], *bad = NULL;
	unsigned i, k;
	int r;

	while (n > 0) {
		k = n < VB_RECV_BATCH ? n : VB_RECV_BATCH;
		for (i = 0; i < k; i++)
			wr[i] = (struct ibv_recv_wr){.wr_id = wr_id,
						     .next = i + 1 < k ? &wr[i + 1] : NULL};
		r = ibv_post_recv(e->qp, wr, &bad);
		if (r)
			return -r;
		n -= k;
	}
	return 0;
}

static int vb_poll(struct eng_cq *cq, struct eng_wc *wc, int max)
{
	struct vcq *c = cq->tr;
	struct ibv_wc iwc[ENG_POLL_BATCH];
	int n, i;

	n = ibv_poll_cq(c->ibcq, max < ENG_POLL_BATCH ? max : ENG_POLL_BATCH, iwc);
	if (n < 0)
		return -EIO;
	for (i = 0; i < n; i++) {
		wc[i] = (struct eng_wc){.wr_id = iwc[i].wr_id,
					.status = iwc[i].status,
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

/*
 * The QP to the error state: its queued work flushes, and the peer's next
 * packet to it gets no acknowledgement, so the peer's QP fails too (after
 * its retries) instead of writing into slots nobody reads.
 */
static void vb_shutdown(struct eng_ep *ep)
{
	struct vep *e = ep->tr;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	int r;

	if (!e->qp)
		return;
	r = ibv_modify_qp(e->qp, &attr, IBV_QP_STATE);
	if (r)
		rcp_log(RCP_LOG_INFO, "%s: moving the QP to the error state failed: %s", e->desc,
			strerror(r));
}

const struct eng_tr_ops eng__verbs_ops = {
	.name = "verbs",
	.write_imm = vb_write_imm,
	.send_imm = vb_send_imm,
	.post_recv = vb_post_recv,
	.poll = vb_poll,
	.arm = vb_arm,
	.event_fd = vb_event_fd,
	.ack_events = vb_ack_events,
	.describe = vb_describe,
	.shutdown = vb_shutdown,
};

/* ---- per-worker resources ---- */

void eng__verbs_cq_destroy(struct vcq *c)
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

static int vcq_open(struct vcq *c, struct eng_tr_worker *w, bool receiver, const char *dev)
{
	struct ibv_device_attr attr;

	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd)
		return rcp_err(-ENOMEM, "ibv_alloc_pd(%s) failed", dev);
	/* Only a receiver's slots are written from the network. */
	c->mr = ibv_reg_mr(c->pd, w->mem, w->mem_len,
			   IBV_ACCESS_LOCAL_WRITE | (receiver ? IBV_ACCESS_REMOTE_WRITE : 0));
	if (!c->mr)
		return rcp_err(-errno,
			       "cannot register %zu MiB of buffer memory on %s: %s "
			       "(is the memlock limit too low? see ulimit -l)",
			       w->mem_len >> 20, dev, strerror(errno));
	/* Every completion the links may have outstanding must fit: an overrun CQ breaks them all.
	 */
	if (ibv_query_device(c->ctx, &attr) == 0 && w->cq_depth > (unsigned)attr.max_cqe)
		return rcp_err(-ENOSPC,
			       "a worker's stripes need a completion queue of %u entries, but %s "
			       "allows %d: use fewer --qps-per-rail or a smaller --buffer-mib",
			       w->cq_depth, dev, attr.max_cqe);
	c->ch = ibv_create_comp_channel(c->ctx);
	if (c->ch)
		c->ibcq = ibv_create_cq(c->ctx, (int)w->cq_depth, c, c->ch, 0);
	if (!c->ch || !c->ibcq)
		return rcp_err(-errno ? -errno : -ENOMEM,
			       "cannot create a completion queue of %u entries on %s: %s",
			       w->cq_depth, dev, strerror(errno));
	fcntl(c->ch->fd, F_SETFL, fcntl(c->ch->fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

int eng__verbs_worker_cq(struct eng_tr_worker *w, bool receiver, struct ibv_context *ctx,
			 struct vcq **vcq_out)
{
	struct vcq *c;
	unsigned i;
	int err;

	for (i = 0; i < w->n_cqs; i++)
		if (((struct vcq *)w->cq[i]->tr)->ctx == ctx) {
			*vcq_out = w->cq[i]->tr;
			return 0;
		}
	if (w->n_cqs == ENG_MAX_CQS)
		return rcp_err(-ENOSPC, "worker %u drives more than %d devices", w->index,
			       ENG_MAX_CQS);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct vcq){.cq = {&eng__verbs_ops, c}, .ctx = ctx};
	err = vcq_open(c, w, receiver, ibv_get_device_name(ctx->device));
	if (err) {
		eng__verbs_cq_destroy(c);
		return err;
	}
	w->cq[w->n_cqs++] = &c->cq;
	*vcq_out = c;
	return 0;
}

/* ---- rail addresses (railaddr.c) ---- */

static int rail_addr(const struct eng_device_list *list, const struct ifaddrs *ifa, const char *dev,
		     unsigned port, struct eng_rail_addr *out)
{
	size_t d;

	for (d = 0; d < list->n; d++) {
		const struct eng_device *dv = &list->dev[d];

		if (strcmp(dv->name, dev) == 0 && port != 0 && port <= dv->n_ports)
			return eng__port_rail_addr(dev, &dv->ports[port - 1], ifa, out);
	}
	return rcp_err(-ENODEV, "rail %s:%u is not a port of this host", dev, port);
}

int eng__verbs_rail_addrs(const struct topo_plan *plan, struct eng_rail_addr *out)
{
	struct eng_device_list *devs = NULL;
	struct ifaddrs *ifa = NULL;
	unsigned r;
	int err = eng__device_list_kept(&devs);

	/* Without the list a RoCE rail's prefix is 32, as before railaddr.c; an IB rail fails. */
	if (!err && getifaddrs(&ifa) != 0)
		ifa = NULL;
	for (r = 0; !err && r < plan->n_rails; r++)
		err = rail_addr(devs, ifa, plan->rail[r].dev, plan->rail[r].port, &out[r]);
	if (ifa)
		freeifaddrs(ifa);
	eng_device_list_destroy(devs);
	return err;
}
