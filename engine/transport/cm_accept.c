/*
 * cm_accept.c - the verbs transport's server side of connecting, for cm.c:
 * listening on a rail, taking each link's request (checked against the
 * session's tokens, its QP made and moved to RTS at the agreed MTU, then
 * accepted), and giving a link up at set-up with failover: a request that
 * cannot be taken (refused), one rdma_cm ends (REJECTED, CONNECT_ERROR,
 * UNREACHABLE, DISCONNECTED, ...), one answered but not established within
 * the connect timeout (cfg->link_failed tells the session), and one the
 * client gave up on (eng__cm_abandon).
 *
 * Threading: the session's thread, as cm.c.
 */
#include "engine/transport/verbs_int.h"

#include "common/common.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int eng__cm_listen(struct eng_conn *c, const union eng_sockaddr *addr, uint16_t *port_out)
{
	struct rdma_cm_id *id;
	char a[64];
	int err;

	if (c->n_listen == TOPO_MAX_RAILS)
		return -ENOSPC;
	if (rdma_create_id(c->ch, &id, NULL, RDMA_PS_TCP))
		return rcp_err(-errno, "rdma_create_id: %s", strerror(errno));
	c->listen[c->n_listen++] = id;
	eng__addr_ntop(&addr->sa, a, sizeof(a));
	/* The same on each listening id, before the bind (a client's request carries its own). */
	if ((err = eng__cm_tos_set(c, id, "listening for RDMA connections")) != 0)
		return err;
	if (rdma_bind_addr(id, (struct sockaddr *)&addr->sa) || rdma_listen(id, CM_BACKLOG))
		return rcp_err(-errno, "cannot listen for RDMA connections on %s: %s", a,
			       strerror(errno));
	*port_out = ntohs(rdma_get_src_port(id));
	return 0;
}

/* The client asks for a link: check it, make its QP, post receives, accept. */
static int on_connect_request(struct eng_conn *c, struct rdma_cm_event *ev)
{
	const struct conn_req *req = ev->param.conn.private_data;
	struct conn_acc acc = {0};
	struct rdma_conn_param cp = {.private_data = &acc,
				     .private_data_len = sizeof(acc),
				     .retry_count = c->cfg->qp.retry_count
							    ? (uint8_t)c->cfg->qp.retry_count
							    : CM_RETRIES,
				     .rnr_retry_count = CM_RETRIES};
	uint32_t own;
	struct eng_link *l;
	uint32_t k;
	int err;

	if (ev->param.conn.private_data_len < sizeof(*req) || le32toh(req->magic) != CONN_MAGIC)
		return rcp_err(-EPERM, "an RDMA connection request that is not from railcp");
	k = le32toh(req->link);
	if (k >= c->cfg->n_links || le64toh(req->token) != c->cfg->link[k]->token)
		return rcp_err(-EPERM, "an RDMA connection request that is not from this session");
	if (c->ep[k].id || c->ep[k].abandoned)
		return rcp_err(-EPROTO,
			       "an RDMA connection request for stripe %u, which is not open", k);
	l = c->cfg->link[k];
	c->ep[k].id = ev->id;
	ev->id->context = l;
	if ((err = eng__cm_link_qp(c, l, ev->id)) != 0)
		return err;
	if (!c->cfg->receiver &&
	    (err = eng__cm_slots_take(l, &req->slots, "accepting a stripe")) != 0)
		return err;
	if (c->cfg->receiver)
		acc.slots = eng__cm_slots_of(l);
	own = eng__cm_port_mtu(ev->id);
	acc.mtu = htole32(own);
	if ((err = eng__cm_qp_ready(c, &c->ep[k],
				    eng__cm_mtu_agree(c, l, own, le32toh(req->mtu)))) != 0)
		return err;
	cp.qp_num = c->ep[k].qp->qp_num;
	if (rdma_accept(ev->id, &cp))
		return rcp_err(-errno, "rdma_accept: %s", strerror(errno));
	c->ep[k].accepted_ns = rcp_now_ns();
	return 0;
}

/* Refuse a connection request that is not ours to take, and free its id. */
void eng__cm_refuse(struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;

	rdma_reject(id, NULL, 0);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id); /* after the ack: destroying waits for the id's events */
}

/* Server, with failover: link k failed at set-up; its id and QP go, set-up goes on. */
static void link_give_up(struct eng_conn *c, unsigned k, const char *why)
{
	char text[256];

	snprintf(text, sizeof(text), "%s", why); /* why may be rcp_err_msg's, which is reused */
	c->ep[k].abandoned = true;
	c->given_up++;
	eng__cm_link_drop(c, k);
	c->cfg->link_failed(c->cfg->link_failed_ctx, k, text);
}

/* A request of this session that could not be taken: refused, and its link given up. */
static int request_failed(struct eng_conn *c, struct rdma_cm_event *ev, int err)
{
	unsigned k = ((struct eng_link *)ev->id->context)->index;
	char why[256];

	if (!c->cfg->link_failed) {
		rdma_ack_cm_event(ev);
		return err;
	}
	snprintf(why, sizeof(why), "accepting it: %s", rcp_err_msg(err));
	rdma_reject(ev->id, NULL, 0);
	rdma_ack_cm_event(ev);
	link_give_up(c, k, why);
	return 0;
}

/*
 * rdma_cm ended a link while accepting (REJECTED, CONNECT_ERROR,
 * UNREACHABLE, DISCONNECTED, ...). With failover, one not yet established
 * is given up, one established is kept for check_events to report.
 */
static int link_event(struct eng_conn *c, struct rdma_cm_event *ev)
{
	struct eng_link *l = ev->id->context;
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;
	char why[160];

	rdma_ack_cm_event(ev);
	if (!l || !c->cfg->link_failed)
		return rcp_err(-ECONNABORTED, "while connecting stripes, rdma_cm says %s",
			       rdma_event_str(type));
	if (c->ep[l->index].connected) {
		c->ep[l->index].gone_ev = rdma_event_str(type);
		return 0;
	}
	snprintf(why, sizeof(why), "rdma_cm says %s (status %d) while accepting it",
		 rdma_event_str(type), status);
	link_give_up(c, l->index, why);
	return 0;
}

/* One event while accepting: 0 to go on, else the error that ends set-up. */
static int accept_event(struct eng_conn *c, struct rdma_cm_event *ev)
{
	enum rdma_cm_event_type type = ev->event;
	int err;

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		err = on_connect_request(c, ev);
		if (err && !ev->id->context) {
			/* Not from this session, or a link already taken: refuse it, go on. */
			rcp_log(RCP_LOG_INFO, "refused an RDMA connection request: %s",
				rcp_err_msg(err));
			eng__cm_refuse(ev);
			return 0;
		}
		if (err)
			return request_failed(c, ev, err);
	} else if (type == RDMA_CM_EVENT_ESTABLISHED) {
		c->ep[((struct eng_link *)ev->id->context)->index].connected = true;
		c->established++;
	} else {
		return link_event(c, ev);
	}
	rdma_ack_cm_event(ev);
	return 0;
}

/*
 * With failover and a connect timeout: the first link whose request was
 * answered longer ago than that and is not established yet, given up; else
 * when the next one is due (0: none is waited for).
 */
static uint64_t accept_overdue(struct eng_conn *c)
{
	uint64_t lim = (uint64_t)c->cfg->connect_timeout_ms * 1000000ull, next = 0;
	uint64_t now = rcp_now_ns();
	unsigned k;

	if (!c->cfg->link_failed || !lim)
		return 0;
	for (k = 0; k < c->cfg->n_links; k++) {
		struct vep *e = &c->ep[k];
		char why[128];

		if (!e->accepted_ns || e->connected || e->abandoned)
			continue;
		if (now - e->accepted_ns >= lim) {
			snprintf(why, sizeof(why),
				 "accepted, but not established within %g s (--connect-timeout)",
				 c->cfg->connect_timeout_ms / 1000.0);
			link_give_up(c, k, why);
			continue;
		}
		if (!next || e->accepted_ns + lim < next)
			next = e->accepted_ns + lim;
	}
	return next;
}

int eng__cm_accept_all(struct eng_conn *c, int ctl_fd, int timeout_ms)
{
	uint64_t deadline = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct rdma_cm_event *ev;
	unsigned i;
	int err;

	while (c->established + c->given_up < c->cfg->n_links) {
		uint64_t due = accept_overdue(c), until = due && due < deadline ? due : deadline;

		if (c->established + c->given_up == c->cfg->n_links)
			break;
		/* One deadline for the whole set-up, however many events arrive. */
		if (rcp_now_ns() >= deadline)
			err = rcp_err(-ETIMEDOUT, "no answer from rdma_cm within %d s",
				      timeout_ms / 1000);
		else if ((err = eng__cm_next(c, ctl_fd, eng__cm_ms_left(until), &ev)) == -EPIPE)
			return err; /* the control connection has the reason */
		if (err == -ETIMEDOUT && until < deadline) {
			rcp_err_clear();
			continue; /* a link's own limit: accept_overdue gives it up */
		}
		if (err)
			return rcp_err(err, "waiting for the client's RDMA connections: %s",
				       rcp_err_msg(err));
		if ((err = accept_event(c, ev)) != 0)
			return err;
	}
	/* Every link is connected: nobody else may connect to this session. */
	for (i = 0; i < c->n_listen; i++)
		rdma_destroy_id(c->listen[i]);
	c->n_listen = 0;
	return 0;
}

bool eng__cm_abandon(struct eng_conn *c, unsigned k)
{
	if (k >= c->cfg->n_links || c->ep[k].connected)
		return k < c->cfg->n_links;
	if (!c->ep[k].abandoned) {
		c->ep[k].abandoned = true;
		c->given_up++;
	}
	eng__cm_link_drop(c, k);
	return false;
}
