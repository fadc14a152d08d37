/*
 * cm.c - the verbs transport's connections: one RC queue pair per link,
 * connected with rdma_cm.
 *
 * The client's id is resolved from the local rail's address to the server
 * rail's address, so the QP lands on the device and port that own the
 * source address; the GID follows from it (RoCE v2: the address's own;
 * InfiniBand: the port's behind the IPoIB interface). The device the id
 * resolved to is checked against the rail the plan chose.
 *
 * The client of a session connects each link and the server accepts
 * (cm_accept.c);
 * either may be the receiver (push and bench: the server; pull: the
 * client). Connection data travels in rdma_cm private data: the request
 * names the session token and the server's link; the receiver's slots
 * (address, rkey, count, size) travel in the request when the client
 * receives, else in the accept. Each end says its port's active MTU there,
 * and both QPs take the smaller: rdma_cm would give each end its own
 * route's (the passive end the active end's), and a rail whose ends differ
 * (jumbo frames on one side) would carry one direction and drop the other.
 * So the QPs are railcp's (ibv_create_qp), moved through INIT, RTR and RTS
 * with rdma_cm's attributes and the agreed MTU (cm_qp.c), and the client
 * completes with rdma_establish. Each link's connect has one deadline
 * (--connect-timeout) for its address, route and answer; a link that
 * fails is freed at once, and with failover the session leaves it out
 * (the server gives up a link whose request it could not take, which
 * rdma_cm ended, or which was not established within that limit, through
 * cfg->link_failed, and one the client gave up through abandon). An event
 * that ends a link already connected while others connect is kept for
 * check_events. Both ends post their receives (the
 * cfg's link_ready) before they connect or accept, so no write or credit
 * can find a queue empty.
 *
 * Threading: everything here runs on the session's thread, before the
 * workers start and after they stopped.
 */
#include "engine/transport/verbs_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cm_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_conn *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->cfg = cfg;
	c->ep = calloc(cfg->n_links ? cfg->n_links : 1, sizeof(*c->ep));
	c->ch = rdma_create_event_channel();
	if (!c->ep || !c->ch) {
		err = c->ch ? -ENOMEM
			    : rcp_err(-errno, "cannot open rdma_cm (%s): is rdma_ucm loaded?",
				      strerror(errno));
		free(c->ep);
		if (c->ch)
			rdma_destroy_event_channel(c->ch);
		free(c);
		return err;
	}
	fcntl(c->ch->fd, F_SETFL, fcntl(c->ch->fd, F_GETFL) | O_NONBLOCK);
	*conn_out = c;
	return 0;
}

static void cm_conn_destroy(struct eng_conn *c)
{
	unsigned i, k;

	if (!c)
		return;
	for (i = 0; i < c->cfg->n_links; i++) {
		struct vep *e = &c->ep[i];

		if (!e->id)
			continue;
		if (e->connected)
			rdma_disconnect(e->id);
		if (e->qp)
			ibv_destroy_qp(e->qp);
		rdma_destroy_id(e->id);
	}
	for (i = 0; i < c->n_listen; i++)
		rdma_destroy_id(c->listen[i]);
	for (i = 0; i < c->cfg->n_workers; i++) {
		struct eng_tr_worker *w = c->cfg->worker[i];

		for (k = 0; k < w->n_cqs; k++)
			eng__verbs_cq_destroy(w->cq[k]->tr);
		w->n_cqs = 0;
	}
	rdma_destroy_event_channel(c->ch);
	free(c->ep);
	free(c);
}

/*
 * Wait for the next event on the channel, at most timeout_ms. With ctl_fd >= 0,
 * return -EPIPE (no sentence: the caller reads the control connection) as
 * soon as the peer sends something or hangs up there.
 */
int eng__cm_next(struct eng_conn *c, int ctl_fd, int timeout_ms, struct rdma_cm_event **ev_out)
{
	struct pollfd pfd[2] = {{.fd = c->ch->fd, .events = POLLIN},
				{.fd = ctl_fd, .events = POLLIN}};
	int r;

	for (;;) {
		if (rdma_get_cm_event(c->ch, ev_out) == 0)
			return 0;
		if (errno != EAGAIN)
			return rcp_err(-errno, "rdma_get_cm_event: %s", strerror(errno));
		r = poll(pfd, ctl_fd >= 0 ? 2 : 1, timeout_ms);
		if (r == 0)
			return rcp_err(-ETIMEDOUT, "no answer from rdma_cm within %d s",
				       timeout_ms / 1000);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && ctl_fd >= 0 && pfd[1].revents)
			return -EPIPE;
	}
}

/*
 * An event for another link while one connects: a link already connected
 * that rdma_cm ends is kept for check_events to report (the job may go on
 * without it); anything else of another id is not this step's business.
 */
static void cm_other_event(struct eng_conn *c, struct rdma_cm_event *ev)
{
	struct eng_link *l = ev->id->context;

	if (l && c->ep[l->index].connected &&
	    (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL))
		c->ep[l->index].gone_ev = rdma_event_str(ev->event);
	rdma_ack_cm_event(ev);
}

/* The milliseconds left until deadline_ns, at least 1 while it has not passed. */
int eng__cm_ms_left(uint64_t deadline_ns)
{
	uint64_t now = rcp_now_ns();

	return now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000) + 1;
}

/* What a link waits for when rdma_cm owes it want, for a timeout's sentence. */
static const char *cm_awaited(enum rdma_cm_event_type want)
{
	switch (want) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return "to resolve the peer's address";
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return "to resolve the route";
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return "for the peer's answer to the connect request";
	default:
		return "for an event";
	}
}

/*
 * Wait for event want on id until deadline_ns (a link's connect timeout of
 * total_ms); any other outcome is an error naming the step, and a timeout
 * also what was awaited.
 */
static int cm_expect(struct eng_conn *c, struct rdma_cm_id *id, enum rdma_cm_event_type want,
		     const char *step, uint64_t deadline_ns, int total_ms, struct conn_acc *acc_out)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;
	int err, status, left;

	for (;;) {
		if ((left = eng__cm_ms_left(deadline_ns)) == 0)
			err = -ETIMEDOUT;
		else
			err = eng__cm_next(c, -1, left, &ev);
		if (err == -ETIMEDOUT)
			return rcp_err(err, "%s: no answer from rdma_cm within %g s (waiting %s)",
				       step, total_ms / 1000.0, cm_awaited(want));
		if (err)
			return rcp_err(err, "%s: %s", step, rcp_err_msg(err));
		if (ev->id == id)
			break;
		cm_other_event(c, ev);
	}
	got = ev->event;
	status = ev->status;
	if (got == want && acc_out && ev->param.conn.private_data_len >= sizeof(*acc_out))
		memcpy(acc_out, ev->param.conn.private_data, sizeof(*acc_out));
	rdma_ack_cm_event(ev);
	if (got != want)
		return rcp_err(got == RDMA_CM_EVENT_REJECTED ? -ECONNREFUSED : -EHOSTUNREACH,
			       "%s: rdma_cm says %s (status %d)", step, rdma_event_str(got),
			       status);
	return 0;
}

/* Free what was made for link k (its QP and id); it stays abandoned if it was. */
void eng__cm_link_drop(struct eng_conn *c, unsigned k)
{
	struct vep *e = &c->ep[k];
	bool abandoned = e->abandoned;

	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->id)
		rdma_destroy_id(e->id);
	*e = (struct vep){.abandoned = abandoned};
}

/* This link's slots, for the peer that writes into them. */
struct conn_slots eng__cm_slots_of(const struct eng_link *l)
{
	const struct vcq *q = ((const struct vep *)l->ep->tr)->vcq;

	return (struct conn_slots){htole64((uintptr_t)l->data), htole64((uintptr_t)l->hdr),
				   htole32(q->mr->rkey),	htole32(q->mr->rkey),
				   htole32(l->n_slots),		htole32(l->slot_size)};
}

/* The sender takes the receiver's slots, which must be what the session agreed. */
int eng__cm_slots_take(struct eng_link *l, const struct conn_slots *in, const char *step)
{
	if (le32toh(in->n_slots) != l->n_slots || le32toh(in->slot_size) != l->slot_size)
		return rcp_err(-EPROTO,
			       "%s: the receiver offered %u slots of %u bytes, expected %u of %u",
			       step, le32toh(in->n_slots), le32toh(in->slot_size), l->n_slots,
			       l->slot_size);
	l->peer_data = (struct eng_remote){le64toh(in->data_addr), le32toh(in->data_rkey)};
	l->peer_hdr = (struct eng_remote){le64toh(in->hdr_addr), le32toh(in->hdr_rkey)};
	return 0;
}

int eng__cm_tos_set(const struct eng_conn *c, struct rdma_cm_id *id, const char *what)
{
	uint8_t tos = c->cfg->qp.tos;

	if (!c->cfg->qp.tos_set)
		return 0;
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)))
		return rcp_err(-errno, "%s: cannot set the traffic class %u (--tos): %s", what, tos,
			       strerror(errno));
	return 0;
}

static int cm_resolve(struct eng_conn *c, struct rdma_cm_id *id, const union eng_sockaddr *src,
		      const union eng_sockaddr *dst, const char *step, uint64_t deadline_ns,
		      int total_ms)
{
	int err = eng__cm_tos_set(c, id, step);

	if (err)
		return err;
	if (rdma_resolve_addr(id, (struct sockaddr *)&src->sa, (struct sockaddr *)&dst->sa,
			      eng__cm_ms_left(deadline_ns)))
		return rcp_err(-errno, "%s: %s", step, strerror(errno));
	if ((err = cm_expect(c, id, RDMA_CM_EVENT_ADDR_RESOLVED, step, deadline_ns, total_ms,
			     NULL)) != 0)
		return err;
	if (rdma_resolve_route(id, eng__cm_ms_left(deadline_ns)))
		return rcp_err(-errno, "%s: %s", step, strerror(errno));
	return cm_expect(c, id, RDMA_CM_EVENT_ROUTE_RESOLVED, step, deadline_ns, total_ms, NULL);
}

/* Address, route, QP, request and answer, all before deadline_ns; then RTR, RTS, established. */
static int cm_connect_steps(struct eng_conn *c, struct eng_link *l, struct rdma_cm_id *id,
			    const union eng_sockaddr *src, const union eng_sockaddr *dst,
			    struct conn_req *req, const char *step, int timeout_ms)
{
	uint64_t deadline = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct rdma_conn_param cp = {.private_data = req,
				     .private_data_len = sizeof(*req),
				     .retry_count = c->cfg->qp.retry_count
							    ? (uint8_t)c->cfg->qp.retry_count
							    : CM_RETRIES,
				     .rnr_retry_count = CM_RETRIES};
	struct conn_acc acc = {0};
	uint32_t own;
	int err;

	if ((err = cm_resolve(c, id, src, dst, step, deadline, timeout_ms)) != 0)
		return err;
	if ((err = eng__cm_link_qp(c, l, id)) != 0)
		return rcp_err(err, "%s: %s", step, rcp_err_msg(err));
	if (c->cfg->receiver)
		req->slots = eng__cm_slots_of(l);
	own = eng__cm_port_mtu(id);
	req->mtu = htole32(own);
	cp.qp_num = c->ep[l->index].qp->qp_num;
	if (rdma_connect(id, &cp))
		return rcp_err(-errno, "%s: %s", step, strerror(errno));
	if ((err = cm_expect(c, id, RDMA_CM_EVENT_CONNECT_RESPONSE, step, deadline, timeout_ms,
			     &acc)) != 0)
		return err;
	/* Our QP: its states are ours to set, at the MTU both ends can take. */
	if ((err = eng__cm_qp_ready(c, &c->ep[l->index],
				    eng__cm_mtu_agree(c, l, own, le32toh(acc.mtu)))) != 0)
		return rcp_err(err, "%s: %s", step, rcp_err_msg(err));
	if (rdma_establish(id))
		return rcp_err(-errno, "%s: rdma_establish: %s", step, strerror(errno));
	c->ep[l->index].connected = true;
	return c->cfg->receiver ? 0 : eng__cm_slots_take(l, &acc.slots, step);
}

static int cm_connect(struct eng_conn *c, struct eng_link *l, const union eng_sockaddr *src,
		      const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	struct conn_req req = {
		htole64(l->token), htole32(peer_link), htole32(CONN_MAGIC), {0}, 0, 0};
	struct rdma_cm_id *id;
	char step[160], a[64], b[64];
	int err;

	eng__addr_ntop(&src->sa, a, sizeof(a));
	eng__addr_ntop(&dst->sa, b, sizeof(b));
	snprintf(step, sizeof(step), "connecting %s (%s) to %s port %u", l->rail_dev, a, b,
		 eng__addr_port(&dst->sa));
	if (rdma_create_id(c->ch, &id, l, RDMA_PS_TCP))
		return rcp_err(-errno, "rdma_create_id: %s", strerror(errno));
	c->ep[l->index].id = id;
	err = cm_connect_steps(c, l, id, src, dst, &req, step, timeout_ms);
	if (err) /* the link is left out (or the session fails): nothing of it stays */
		eng__cm_link_drop(c, l->index);
	return err;
}

/* Pass every link of c on ctx (and on port, unless 0) to lost, or fail without lost. */
static int links_lost(struct eng_conn *c, struct ibv_context *ctx, uint8_t port, struct ibv_qp *qp,
		      const char *what, eng_link_lost_fn lost, void *lctx)
{
	char why[256];
	unsigned i;

	for (i = 0; i < c->cfg->n_links; i++) {
		struct rdma_cm_id *id = c->ep[i].id;

		if (!id || id->verbs != ctx || (port && id->port_num != port) ||
		    (qp && c->ep[i].qp != qp))
			continue;
		snprintf(why, sizeof(why), "%s on %s", what, c->ep[i].desc);
		if (!lost)
			return rcp_err(-ECONNRESET, "%s", why);
		lost(lctx, i, why);
	}
	return 0;
}

/* Whether port of ctx is ACTIVE now (a query that fails says no). */
static bool port_active(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr attr;

	return ibv_query_port(ctx, port, &attr) == 0 && attr.state == IBV_PORT_ACTIVE;
}

/*
 * The devices' asynchronous events: a port that went down, a device that
 * failed, a QP the device moved to the error state. The first session to
 * read a device's event consumes it, so a server's other sessions on that
 * port learn of the failure from their own completions instead (after the
 * QP's retries). An event stays queued until a session reads it: a port
 * that went down while no session used it and is ACTIVE again left a
 * PORT_ERR that is history, not news, so one for a port that is ACTIVE now
 * is passed over (a flap that broke this session's QPs shows in their
 * completions).
 */
static int cm_async_events(struct eng_conn *c, eng_link_lost_fn lost, void *lctx)
{
	struct ibv_context *seen[ENG_MAX_CQS];
	unsigned i, k, n = 0;
	int err = 0;

	for (i = 0; i < c->cfg->n_links && n < ENG_MAX_CQS; i++) {
		struct ibv_context *ctx = c->ep[i].id ? c->ep[i].id->verbs : NULL;

		for (k = 0; k < n && seen[k] != ctx; k++)
			;
		if (ctx && k == n) {
			seen[n++] = ctx;
			fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
		}
	}
	for (k = 0; k < n && !err; k++) {
		struct ibv_async_event ev;
		char what[96];

		while (!err && ibv_get_async_event(seen[k], &ev) == 0) {
			snprintf(what, sizeof(what), "the device reported %s",
				 ibv_event_type_str(ev.event_type));
			if (ev.event_type == IBV_EVENT_PORT_ERR &&
			    port_active(seen[k], (uint8_t)ev.element.port_num))
				rcp_log(RCP_LOG_DEBUG,
					"%s: a port error of port %d, which is ACTIVE again: "
					"passed over",
					ibv_get_device_name(seen[k]->device), ev.element.port_num);
			else if (ev.event_type == IBV_EVENT_PORT_ERR)
				err = links_lost(c, seen[k], (uint8_t)ev.element.port_num, NULL,
						 what, lost, lctx);
			else if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
				err = links_lost(c, seen[k], 0, NULL, what, lost, lctx);
			else if (ev.event_type == IBV_EVENT_QP_FATAL ||
				 ev.event_type == IBV_EVENT_QP_REQ_ERR ||
				 ev.event_type == IBV_EVENT_QP_ACCESS_ERR)
				err = links_lost(c, seen[k], 0, ev.element.qp, what, lost, lctx);
			ibv_ack_async_event(&ev);
		}
	}
	return err;
}

/* Links rdma_cm ended while other links were being connected (cm_other_event, link_event). */
static int links_gone(struct eng_conn *c, eng_link_lost_fn lost, void *lctx)
{
	char why[256];
	unsigned i;

	for (i = 0; i < c->cfg->n_links; i++) {
		if (!c->ep[i].gone_ev)
			continue;
		snprintf(why, sizeof(why), "rdma_cm says %s on %s", c->ep[i].gone_ev,
			 c->ep[i].desc);
		c->ep[i].gone_ev = NULL;
		if (!lost)
			return rcp_err(-ECONNRESET, "%s", why);
		lost(lctx, i, why);
	}
	return 0;
}

static int cm_check_events(struct eng_conn *c, eng_link_lost_fn lost, void *lctx)
{
	struct rdma_cm_event *ev;
	char why[256];
	int err = links_gone(c, lost, lctx);

	while (!err && rdma_get_cm_event(c->ch, &ev) == 0) {
		enum rdma_cm_event_type type = ev->event;
		struct eng_link *l = ev->id->context;

		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			eng__cm_refuse(ev); /* a late or foreign request during the transfer */
			continue;
		}
		if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			snprintf(why, sizeof(why), "rdma_cm says %s on %s", rdma_event_str(type),
				 l ? c->ep[l->index].desc : "a rail");
			if (lost && l)
				lost(lctx, l->index, why);
			else
				err = rcp_err(-ECONNRESET, "%s", why);
		}
		rdma_ack_cm_event(ev);
	}
	return err ? err : cm_async_events(c, lost, lctx);
}

static const struct eng_transport verbs_transport = {
	.name = "verbs",
	.pinned = true,
	.rail_addrs = eng__verbs_rail_addrs,
	.conn_create = cm_conn_create,
	.conn_destroy = cm_conn_destroy,
	.connect = cm_connect,
	.listen = eng__cm_listen,
	.accept_all = eng__cm_accept_all,
	.abandon = eng__cm_abandon,
	.check_events = cm_check_events,
};

const struct eng_transport *eng__transport_verbs(void)
{
	return &verbs_transport;
}
