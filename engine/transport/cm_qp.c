/*
 * cm_qp.c - a link's queue pair, for cm.c: made on the device its rdma_cm id
 * resolved to (which must be the rail's), moved through INIT, RTR and RTS
 * here with the attributes rdma_cm gives and the MTU both ends agreed (the
 * QPs are railcp's, not the ids': rdma_cm would give each end its own
 * route's MTU).
 *
 * Threading: the session's thread, as cm.c.
 */
#include "engine/transport/device_int.h"
#include "engine/transport/verbs_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/*
 * Move e's QP to state st with the attributes rdma_cm gives for it; in INIT
 * a receiver's admits remote writes (rdma_cm gives none to an active side's
 * QP made before its request); in RTR its path MTU is at most mtu (an enum
 * ibv_mtu; 0: as rdma_cm says); in RTS the knobs' ACK timeout and retries
 * (k NULL, or 0: as rdma_cm says).
 */
static int qp_step(struct vep *e, enum ibv_qp_state st, bool receiver, uint32_t mtu,
		   const struct eng_qp_knobs *k)
{
	struct ibv_qp_attr attr = {.qp_state = st};
	int mask, r;

	if (rdma_init_qp_attr(e->id, &attr, &mask))
		return rcp_err(-errno, "%s: rdma_init_qp_attr: %s", e->desc, strerror(errno));
	if (st == IBV_QPS_INIT) {
		attr.qp_access_flags = receiver ? IBV_ACCESS_REMOTE_WRITE : 0;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (st == IBV_QPS_RTR && mtu && attr.path_mtu > mtu)
		attr.path_mtu = (enum ibv_mtu)mtu;
	if (st == IBV_QPS_RTS && k && k->ack_timeout) {
		attr.timeout = (uint8_t)k->ack_timeout;
		mask |= IBV_QP_TIMEOUT;
	}
	if (st == IBV_QPS_RTS && k && k->retry_count) {
		attr.retry_cnt = (uint8_t)k->retry_count;
		mask |= IBV_QP_RETRY_CNT;
	}
	r = ibv_modify_qp(e->qp, &attr, mask);
	return r ? rcp_err(-r, "%s: moving the QP to %s: %s", e->desc,
			   st == IBV_QPS_INIT  ? "INIT"
			   : st == IBV_QPS_RTR ? "RTR"
					       : "RTS",
			   strerror(r))
		 : 0;
}

/* The active MTU (enum ibv_mtu) of the port id resolved to; 0 when the port cannot say. */
uint32_t eng__cm_port_mtu(struct rdma_cm_id *id)
{
	struct ibv_port_attr pa;

	return ibv_query_port(id->verbs, id->port_num, &pa) ? 0 : (uint32_t)pa.active_mtu;
}

/*
 * The MTU both ends of l take: the smaller of this port's (own) and the
 * peer's; a difference is said once per rail of the connection, with what
 * fixes it (a peer's larger frames would be dropped here, or ours there:
 * a rail that takes nothing while both ports stay up).
 */
uint32_t eng__cm_mtu_agree(struct eng_conn *c, struct eng_link *l, uint32_t own, uint32_t peer)
{
	uint32_t agreed = !peer ? own : !own ? peer : own < peer ? own : peer;
	unsigned i;

	l->mtu = eng__mtu_bytes((int)own);
	l->peer_mtu = eng__mtu_bytes((int)peer);
	if (!peer || !own || own == peer)
		return agreed;
	for (i = 0; i < c->n_mtu_noted && strcmp(c->mtu_noted[i], l->rail_dev); i++)
		;
	if (i == c->n_mtu_noted && i < TOPO_MAX_RAILS) {
		c->mtu_noted[c->n_mtu_noted++] = l->rail_dev;
		rcp_log(RCP_LOG_NOTICE,
			"rail %s: active MTU %u here and %u at the peer: its QPs use %u; "
			"for the larger give both ends the same MTU (RoCE: ip link set dev "
			"IF mtu N on their netdevs; InfiniBand: the subnet manager gives "
			"each port the MTU it and its switch port support)",
			l->rail_dev, l->mtu, l->peer_mtu, eng__mtu_bytes((int)agreed));
	}
	return agreed;
}

/* The link's QP (in INIT, receives posted) on the device id resolved to, which must be the rail's.
 */
int eng__cm_link_qp(struct eng_conn *c, struct eng_link *l, struct rdma_cm_id *id)
{
	struct vep *e = &c->ep[l->index];
	const char *dev = ibv_get_device_name(id->verbs->device);
	struct ibv_qp_init_attr qa;
	struct vcq *q = NULL;
	struct ibv_qp *qp;
	char peer[64];
	int err;

	if (strcmp(dev, l->rail_dev) != 0)
		return rcp_err(-EXDEV,
			       "the rail address of %s resolved to device %s: "
			       "check the addresses of the rails",
			       l->rail_dev, dev);
	if ((err = eng__verbs_worker_cq(l->worker, c->cfg->receiver, id->verbs, &q)) != 0)
		return err;
	qa = (struct ibv_qp_init_attr){.send_cq = q->ibcq,
				       .recv_cq = q->ibcq,
				       .qp_type = IBV_QPT_RC,
				       .cap = {.max_send_wr = l->send_depth,
					       .max_recv_wr = l->n_slots + 8,
					       .max_send_sge = 1,
					       .max_recv_sge = 1,
					       .max_inline_data = sizeof(struct eng_chunk_hdr)}};
	qp = ibv_create_qp(q->pd, &qa);
	if (!qp) {
		/* The device cannot inline a header: send it from memory. */
		qa.cap.max_inline_data = 0;
		if (!(qp = ibv_create_qp(q->pd, &qa)))
			return rcp_err(-errno, "cannot create a queue pair on %s: %s", dev,
				       strerror(errno));
	}
	*e = (struct vep){.ep = {&eng__verbs_ops, e},
			  .id = id,
			  .qp = qp,
			  .vcq = q,
			  .inline_hdr = qa.cap.max_inline_data > 0};
	eng__addr_ntop(rdma_get_peer_addr(id), peer, sizeof(peer));
	snprintf(e->desc, sizeof(e->desc), "%s port %u qp 0x%x (peer %s)", dev, id->port_num,
		 qp->qp_num, peer);
	l->ep = &e->ep;
	l->lkey = q->mr->lkey;
	if ((err = qp_step(e, IBV_QPS_INIT, c->cfg->receiver, 0, NULL)) != 0)
		return err;
	return c->cfg->link_ready(c->cfg->ctx, l);
}

/* e's QP ready to send at MTU mtu (enum ibv_mtu): RTR, then RTS with c's knobs. */
int eng__cm_qp_ready(struct eng_conn *c, struct vep *e, uint32_t mtu)
{
	int err = qp_step(e, IBV_QPS_RTR, false, mtu, NULL);

	return err ? err : qp_step(e, IBV_QPS_RTS, false, 0, &c->cfg->qp);
}
