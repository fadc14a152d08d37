/*
 * verbs_int.h - private to engine/transport/: what the verbs data path
 * (verbs.c) and its rdma_cm connection management (cm.c) share, and the
 * wire format of the data a connection request and its accept carry.
 */
#ifndef RAILCP_ENGINE_VERBS_INT_H
#define RAILCP_ENGINE_VERBS_INT_H

#if !defined(ENG_LAYER_TRANSPORT) && !defined(RAILCP_TESTS)
#error "engine/transport/verbs_int.h is private to engine/transport/"
#endif

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "engine/transport/transport.h"

/* A worker's CQ on one device, with the device's PD and the worker's one registration. */
struct vcq {
	struct eng_cq cq;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_cq *ibcq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
};

/*
 * A link's endpoint: its rdma_cm id and QP. The QP is railcp's own, not
 * the id's (ibv_create_qp, not rdma_create_qp), so cm.c moves it through
 * its states itself and can give it the MTU both ends agreed.
 */
struct vep {
	struct eng_ep ep;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct vcq *vcq;
	bool inline_hdr;
	bool connected;
	bool abandoned;	      /* left out at set-up: no request for it is taken */
	uint64_t accepted_ns; /* server: when its request was answered (0: not yet) */
	const char *gone_ev;  /* an rdma_cm event that ended it during set-up, for check_events */
	char desc[200];
};

/*
 * Connection data (cm.c), in rdma_cm's private data: the request names the
 * session and the server's link, the receiver's slots travel in the request
 * when the client receives, else in the accept. Little-endian on the wire.
 */

/* The receiver's slots. */
struct conn_slots {
	uint64_t data_addr;
	uint64_t hdr_addr;
	uint32_t data_rkey;
	uint32_t hdr_rkey;
	uint32_t n_slots;
	uint32_t slot_size;
};

/*
 * The client's request (slots zero unless the client receives) and the
 * server's accept (slots zero unless the server receives). Each says its
 * port's active MTU (enum ibv_mtu): both ends use the smaller.
 */
struct conn_req {
	uint64_t token;
	uint32_t link;
	uint32_t magic;
	struct conn_slots slots;
	uint32_t mtu;
	uint32_t reserved;
};

struct conn_acc {
	struct conn_slots slots;
	uint32_t mtu;
	uint32_t reserved;
};
/* rdma_cm carries 56 bytes of private data in a request over the TCP port space. */
_Static_assert(sizeof(struct conn_req) <= 56, "the request fits rdma_cm's private data");

#define CONN_MAGIC 0x72636d32u /* "rcm2": the MTU in the request and the accept */

extern const struct eng_tr_ops eng__verbs_ops;

/* A session's connections (cm.c): one rdma_cm event channel, an endpoint per link. */
struct eng_conn {
	const struct eng_conn_cfg *cfg;
	struct rdma_event_channel *ch;
	struct vep *ep; /* one per link */
	struct rdma_cm_id *listen[TOPO_MAX_RAILS];
	unsigned n_listen;
	unsigned established;
	unsigned given_up;		       /* links left out at set-up (abandoned) */
	const char *mtu_noted[TOPO_MAX_RAILS]; /* rails whose MTU difference was said */
	unsigned n_mtu_noted;
};

/* rdma_cm's retry counts: the most the protocol allows (7: RNR retries forever). */
#define CM_RETRIES 7
/* Connection requests a listener queues. */
#define CM_BACKLOG 64

/* ---- what cm.c and cm_accept.c share ---- */

/*
 * The next event on c's channel within timeout_ms; with ctl_fd >= 0, -EPIPE
 * (no sentence) as soon as that turns readable.
 */
int eng__cm_next(struct eng_conn *c, int ctl_fd, int timeout_ms, struct rdma_cm_event **ev_out);

/* The milliseconds left until deadline_ns, at least 1 while it has not passed. */
int eng__cm_ms_left(uint64_t deadline_ns);

/* l's slots, for the peer that writes into them. */
struct conn_slots eng__cm_slots_of(const struct eng_link *l);

/* The sender takes the receiver's slots, which must be what the session agreed. */
int eng__cm_slots_take(struct eng_link *l, const struct conn_slots *in, const char *step);

/* Free what was made for link k (its QP and id); it stays abandoned if it was. */
void eng__cm_link_drop(struct eng_conn *c, unsigned k);

/* Refuse a connection request that is not ours to take, and free its id. */
void eng__cm_refuse(struct rdma_cm_event *ev);

/* The transport's listen, accept_all and abandon (cm_accept.c). */
int eng__cm_listen(struct eng_conn *c, const union eng_sockaddr *addr, uint16_t *port_out);
int eng__cm_accept_all(struct eng_conn *c, int ctl_fd, int timeout_ms);
bool eng__cm_abandon(struct eng_conn *c, unsigned k);

/* ---- a link's queue pair (cm_qp.c) ---- */

/* sa's IPv4 address as text, or "?". */
/*
 * With --tos, id's traffic class (RDMA_OPTION_ID_TOS), which must come
 * before route resolution: RoCE v2 puts it in the packets' IP header,
 * InfiniBand's path query turns it into the SL. 0, or an error said.
 */
int eng__cm_tos_set(const struct eng_conn *c, struct rdma_cm_id *id, const char *what);

/* The active MTU (enum ibv_mtu) of the port id resolved to; 0 when the port cannot say. */
uint32_t eng__cm_port_mtu(struct rdma_cm_id *id);

/*
 * The MTU (enum ibv_mtu) both ends of l take: the smaller of own and peer's,
 * both kept in l in bytes; a difference is said once per rail of c.
 */
uint32_t eng__cm_mtu_agree(struct eng_conn *c, struct eng_link *l, uint32_t own, uint32_t peer);

/*
 * l's QP on the device id resolved to, which must be the rail's: made, in
 * INIT (a receiver's admitting remote writes), its receives posted.
 */
int eng__cm_link_qp(struct eng_conn *c, struct eng_link *l, struct rdma_cm_id *id);

/* e's QP ready to send at MTU mtu (enum ibv_mtu): RTR, then RTS with c's knobs. */
int eng__cm_qp_ready(struct eng_conn *c, struct vep *e, uint32_t mtu);

/*
 * w's CQ, PD and registration of its memory on ctx's device, made on first
 * use (remote write access only for a receiver's slots).
 */
int eng__verbs_worker_cq(struct eng_tr_worker *w, bool receiver, struct ibv_context *ctx,
			 struct vcq **vcq_out);

/* Frees a CQ made by eng__verbs_worker_cq, its registration and PD. Accepts NULL. */
void eng__verbs_cq_destroy(struct vcq *c);

/* The IPv4 address of each of plan's rails (RoCE v2 GID or IPoIB interface: railaddr.c). */
int eng__verbs_rail_addrs(const struct topo_plan *plan, struct eng_rail_addr *out);

#endif
