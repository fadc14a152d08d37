/*
 * loopback_cm.c - the loopback transport's set-up: rail addresses and
 * connections between two jobs of one process, so that whole sessions (the
 * control protocol, pairing, slot budgets, name checks) run in unit tests
 * with no device.
 *
 * A process-wide fabric holds the listeners, each an (address, port) that
 * leads to a server's connections. A client's connect queues a request
 * there (token, the server's link number) and waits; the server's
 * accept_all takes requests as rdma_cm would deliver them, checks them as
 * the verbs transport does, and completes both ends at once: it makes the
 * endpoint pair, gives the sender the receiver's slots, and posts both
 * ends' receives (each side's link_ready) before it wakes the client, so
 * nothing can arrive at an end with no receive posted. A connection's ends
 * know each other: when one side's connections are destroyed the other's
 * check_events reports the loss, as rdma_cm reports DISCONNECTED.
 *
 * Rails are named "loop<N>" (a RoCE port) or "loopib<N>" (an InfiniBand
 * port), 0 <= N < 256, and have the address 198.18.<N>.1/24, in the
 * benchmarking range the testbed uses; "loopv6<N>" (a RoCE port on IPv6
 * alone) has 2001:2:0:<N>::1/64. Each is found as a real port's is
 * (loopback_dev.c's device model).
 *
 * Threading: the fabric's lock guards listeners, requests and the ends'
 * knowledge of each other, and the faults injected at set-up
 * (eng__loop_inject_connect: a request refused, never answered, or one the
 * server cannot take, which it gives up through cfg->link_failed); each
 * connection set is otherwise used by its
 * session's thread only.
 */
#include "engine/transport/loopback.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOOP_MAX_LISTENERS 256
#define LOOP_FIRST_PORT 20000
/* How often a waiting accept looks at the control connection. */
#define LOOP_WAIT_STEP_MS 10

struct loop_req {
	struct loop_req *next;
	uint64_t token;
	uint32_t link; /* the server's link it asks for */
	struct eng_conn *client;
	struct eng_link *cl; /* the client's link */
	bool fail;	     /* injected: the server cannot take it */
	int state;	     /* 0 waiting, 1 accepted, -errno refused */
};

struct eng_conn {
	const struct eng_conn_cfg *cfg;
	struct eng_ep **ep;	/* one per link, whichever side made it */
	struct loop_req *queue; /* server: requests not yet taken */
	unsigned established;
	struct eng_conn *peer; /* the other end, while it exists */
	bool reset;	       /* the other end went away */
	bool *gone;	       /* server: links given up at set-up */
	unsigned n_gone;
	/* server: links it gave up under the fabric lock, for link_failed once unlocked */
	unsigned *fail_link;
	char (*fail_why)[200];
	unsigned n_fail;
};

struct loop_listener {
	union eng_sockaddr addr;
	struct eng_conn *conn;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct loop_listener l[LOOP_MAX_LISTENERS];
	unsigned n;
	uint16_t next_port;
	struct {
		char dev[16];
		enum eng_loop_fault f;
		unsigned n;
	} fault[8]; /* eng__loop_inject_connect's, by client rail */
} fabric = {.lock = PTHREAD_MUTEX_INITIALIZER,
	    .cond = PTHREAD_COND_INITIALIZER,
	    .next_port = LOOP_FIRST_PORT};

static int loop_rail_addrs(const struct topo_plan *plan, struct eng_rail_addr *out)
{
	unsigned r;
	int err = 0;

	for (r = 0; !err && r < plan->n_rails; r++)
		err = eng__loop_rail_addr(plan->rail[r].dev, plan->rail[r].port, &out[r]);
	return err;
}

static int loop_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_conn *c = calloc(1, sizeof(*c));
	unsigned i;
	int err = 0;
	unsigned n = cfg->n_links ? cfg->n_links : 1;

	if (c) {
		c->ep = calloc(n, sizeof(*c->ep));
		c->gone = calloc(n, sizeof(*c->gone));
		c->fail_link = calloc(n, sizeof(*c->fail_link));
		c->fail_why = calloc(n, sizeof(*c->fail_why));
	}
	if (!c || !c->ep || !c->gone || !c->fail_link || !c->fail_why) {
		if (c) {
			free(c->ep);
			free(c->gone);
			free(c->fail_link);
			free(c->fail_why);
		}
		free(c);
		return -ENOMEM;
	}
	c->cfg = cfg;
	for (i = 0; i < cfg->n_workers && !err; i++) {
		struct eng_tr_worker *w = cfg->worker[i];

		if (w->n_cqs == 0 && (err = eng__loop_cq_create(&w->cq[0])) == 0)
			w->n_cqs = 1;
	}
	*conn_out = c;
	return err; /* on failure the caller destroys c, CQs made so far with it */
}

/* Under the fabric lock: forget c's listeners and refuse what waits for c. */
static void fabric_forget(struct eng_conn *c)
{
	unsigned i, k = 0;

	for (i = 0; i < fabric.n; i++)
		if (fabric.l[i].conn != c)
			fabric.l[k++] = fabric.l[i];
	fabric.n = k;
	for (struct loop_req *r = c->queue; r; r = r->next)
		r->state = -ECONNREFUSED;
	c->queue = NULL;
	pthread_cond_broadcast(&fabric.cond);
}

static void loop_conn_destroy(struct eng_conn *c)
{
	unsigned i;

	if (!c)
		return;
	pthread_mutex_lock(&fabric.lock);
	fabric_forget(c);
	if (c->peer) {
		c->peer->reset = true;
		c->peer->peer = NULL;
	}
	pthread_mutex_unlock(&fabric.lock);
	for (i = 0; i < c->cfg->n_links; i++)
		eng__loop_ep_destroy(c->ep[i]);
	for (i = 0; i < c->cfg->n_workers; i++) {
		struct eng_tr_worker *w = c->cfg->worker[i];

		if (w->n_cqs)
			eng__loop_cq_destroy(w->cq[0]);
		w->n_cqs = 0;
	}
	free(c->ep);
	free(c->gone);
	free(c->fail_link);
	free(c->fail_why);
	free(c);
}

static int loop_listen(struct eng_conn *c, const union eng_sockaddr *addr, uint16_t *port_out)
{
	struct loop_listener *l;

	pthread_mutex_lock(&fabric.lock);
	if (fabric.n == LOOP_MAX_LISTENERS) {
		pthread_mutex_unlock(&fabric.lock);
		return rcp_err(-ENOSPC, "the loopback fabric has %d listeners already",
			       LOOP_MAX_LISTENERS);
	}
	l = &fabric.l[fabric.n++];
	l->addr = *addr;
	eng__addr_set_port(&l->addr.ss, fabric.next_port);
	l->conn = c;
	*port_out = fabric.next_port;
	fabric.next_port = fabric.next_port == UINT16_MAX ? LOOP_FIRST_PORT : fabric.next_port + 1;
	pthread_mutex_unlock(&fabric.lock);
	return 0;
}

static struct eng_conn *fabric_find(const union eng_sockaddr *dst)
{
	unsigned i;

	for (i = 0; i < fabric.n; i++)
		if (eng__addr_same_subnet(&fabric.l[i].addr, dst, 128) &&
		    eng__addr_port(&fabric.l[i].addr.sa) == eng__addr_port(&dst->sa))
			return fabric.l[i].conn;
	return NULL;
}

/* Wait on the fabric's condition at most ms milliseconds (the lock held). */
static void fabric_wait(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&fabric.cond, &fabric.lock, &ts);
}

static void queue_remove(struct eng_conn *server, struct loop_req *req)
{
	for (struct loop_req **p = &server->queue; *p; p = &(*p)->next)
		if (*p == req) {
			*p = req->next;
			return;
		}
}

void eng__loop_inject_connect(const char *rail_dev, enum eng_loop_fault f, unsigned n)
{
	unsigned i, free_i = RCP_ARRAY_SIZE(fabric.fault);

	pthread_mutex_lock(&fabric.lock);
	for (i = 0; i < RCP_ARRAY_SIZE(fabric.fault); i++) {
		if (!strcmp(fabric.fault[i].dev, rail_dev))
			break;
		if (!fabric.fault[i].dev[0] && free_i == RCP_ARRAY_SIZE(fabric.fault))
			free_i = i;
	}
	if (i == RCP_ARRAY_SIZE(fabric.fault))
		i = free_i;
	if (i < RCP_ARRAY_SIZE(fabric.fault)) {
		snprintf(fabric.fault[i].dev, sizeof(fabric.fault[i].dev), "%s",
			 f && n ? rail_dev : "");
		fabric.fault[i].f = f;
		fabric.fault[i].n = n;
	}
	pthread_mutex_unlock(&fabric.lock);
}

/* Under the fabric lock: the fault the next connect from rail dev meets, counted. */
static enum eng_loop_fault fault_take(const char *dev)
{
	unsigned i;

	for (i = 0; i < RCP_ARRAY_SIZE(fabric.fault); i++)
		if (fabric.fault[i].dev[0] && !strcmp(fabric.fault[i].dev, dev) &&
		    fabric.fault[i].n) {
			fabric.fault[i].n--;
			return fabric.fault[i].f;
		}
	return ENG_LOOP_FAULT_NONE;
}

static int loop_connect(struct eng_conn *c, struct eng_link *l, const union eng_sockaddr *src,
			const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	struct loop_req req = {.token = l->token, .link = peer_link, .client = c, .cl = l};
	uint64_t deadline = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct eng_conn *server;
	enum eng_loop_fault f;
	char to[INET6_ADDRSTRLEN];
	uint16_t port = eng__addr_port(&dst->sa);

	(void)src;
	eng__addr_ntop(&dst->sa, to, sizeof(to));
	pthread_mutex_lock(&fabric.lock);
	f = fault_take(l->rail_dev);
	server = f == ENG_LOOP_FAULT_REFUSE ? NULL : fabric_find(dst);
	req.fail = f == ENG_LOOP_FAULT_ACCEPT_FAIL;
	while (f == ENG_LOOP_FAULT_SILENT && rcp_now_ns() < deadline)
		fabric_wait(LOOP_WAIT_STEP_MS); /* the request went nowhere */
	if (f == ENG_LOOP_FAULT_SILENT) {
		pthread_mutex_unlock(&fabric.lock);
		return rcp_err(-ETIMEDOUT, "connecting %s to %s port %u: no answer within %g s",
			       l->rail_dev, to, port, timeout_ms / 1000.0);
	}
	if (server) {
		req.next = server->queue;
		server->queue = &req;
		pthread_cond_broadcast(&fabric.cond);
	}
	while (server && req.state == 0 && rcp_now_ns() < deadline)
		fabric_wait(LOOP_WAIT_STEP_MS);
	if (server && req.state == 0)
		queue_remove(server, &req); /* the server may be gone: do not touch it otherwise */
	pthread_mutex_unlock(&fabric.lock);
	if (!server || req.state == -ECONNREFUSED)
		return rcp_err(-ECONNREFUSED, "connecting %s to %s port %u: refused", l->rail_dev,
			       to, port);
	if (req.state == 0)
		return rcp_err(-ETIMEDOUT, "connecting %s to %s port %u: no answer within %g s",
			       l->rail_dev, to, port, timeout_ms / 1000.0);
	if (req.state < 0)
		return rcp_err(req.state, "connecting %s to %s port %u: %s", l->rail_dev, to, port,
			       strerror(-req.state));
	return 0;
}

/* The sender of a link takes the receiver's slots, which must match its own. */
static int slots_join(struct eng_link *snd, const struct eng_link *rcv)
{
	if (snd->n_slots != rcv->n_slots || snd->slot_size != rcv->slot_size)
		return rcp_err(-EPROTO,
			       "the receiver offered %u slots of %u bytes, expected %u of %u",
			       rcv->n_slots, rcv->slot_size, snd->n_slots, snd->slot_size);
	snd->peer_data = (struct eng_remote){(uintptr_t)rcv->data, 0};
	snd->peer_hdr = (struct eng_remote){(uintptr_t)rcv->hdr, 0};
	return 0;
}

/* Under the fabric lock: complete one request of server c at both ends. */
static int accept_one(struct eng_conn *c, struct loop_req *req)
{
	const struct eng_conn_cfg *cc = req->client->cfg;
	struct eng_link *sl, *cl = req->cl;
	struct eng_ep *a = NULL, *b = NULL;
	int err;

	if (req->link >= c->cfg->n_links || req->token != c->cfg->link[req->link]->token)
		return rcp_err(-EPERM, "an RDMA connection request that is not from this session");
	if (c->ep[req->link] || c->gone[req->link])
		return rcp_err(-EPROTO,
			       "an RDMA connection request for stripe %u, which is not open",
			       req->link);
	if (req->fail)
		return rcp_err(-EIO, "accepting stripe %u: cannot make its queue pair (injected)",
			       req->link);
	sl = c->cfg->link[req->link];
	err = c->cfg->receiver ? slots_join(cl, sl) : slots_join(sl, cl);
	if (!err)
		err = eng__loop_connect(cl->worker->cq[0], sl->worker->cq[0], 0, &a, &b);
	/* Each end's send queue as deep as the QP verbs would make for it, and no deeper. */
	if (!err && (err = eng__loop_sq(a, cl->send_depth, 0)) == 0)
		err = eng__loop_sq(b, sl->send_depth, 0);
	if (err) {
		eng__loop_ep_destroy(a);
		eng__loop_ep_destroy(b);
		return err;
	}
	c->ep[sl->index] = sl->ep = b;
	req->client->ep[cl->index] = cl->ep = a;
	if ((err = c->cfg->link_ready(c->cfg->ctx, sl)) != 0 ||
	    (err = cc->link_ready(cc->ctx, cl)) != 0)
		return err;
	c->peer = req->client;
	req->client->peer = c;
	c->established++;
	return 0;
}

/* Under the fabric lock: take every waiting request; an error of this session ends set-up. */
static int accept_waiting(struct eng_conn *c)
{
	while (c->queue) {
		struct loop_req *req = c->queue;
		int err;

		c->queue = req->next;
		err = accept_one(c, req);
		req->state = err ? err : 1;
		pthread_cond_broadcast(&fabric.cond);
		if (err == -EPERM || err == -EPROTO) {
			/* Not from this session, or a link already taken: refuse it, go on. */
			rcp_log(RCP_LOG_INFO, "refused an RDMA connection request: %s",
				rcp_err_msg(err));
			continue;
		}
		if (err && c->cfg->link_failed) { /* refused, given up, told once unlocked */
			req->state = -ECONNREFUSED;
			c->gone[req->link] = true;
			c->n_gone++;
			c->fail_link[c->n_fail] = req->link;
			snprintf(c->fail_why[c->n_fail++], sizeof(c->fail_why[0]), "%s",
				 rcp_err_msg(err));
			continue;
		}
		if (err)
			return err;
	}
	return 0;
}

/* Under the fabric lock: pass the links given up to link_failed, the lock let go meanwhile. */
static void failed_tell(struct eng_conn *c)
{
	while (c->n_fail) {
		unsigned k = c->fail_link[--c->n_fail];
		char why[200];

		snprintf(why, sizeof(why), "%s", c->fail_why[c->n_fail]);
		pthread_mutex_unlock(&fabric.lock);
		c->cfg->link_failed(c->cfg->link_failed_ctx, k, why);
		pthread_mutex_lock(&fabric.lock);
	}
}

static int loop_accept_all(struct eng_conn *c, int ctl_fd, int timeout_ms)
{
	uint64_t deadline = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct pollfd pfd = {.fd = ctl_fd, .events = POLLIN};
	int err = 0;

	pthread_mutex_lock(&fabric.lock);
	while (!err && c->established + c->n_gone < c->cfg->n_links) {
		err = accept_waiting(c);
		failed_tell(c);
		if (err || c->established + c->n_gone == c->cfg->n_links)
			break;
		if (ctl_fd >= 0 && poll(&pfd, 1, 0) > 0)
			err = -EPIPE; /* the caller reads the control connection */
		else if (rcp_now_ns() >= deadline)
			err = rcp_err(-ETIMEDOUT,
				      "waiting for the client's RDMA connections: no answer "
				      "within %d s",
				      timeout_ms / 1000);
		else
			fabric_wait(LOOP_WAIT_STEP_MS);
	}
	if (!err) /* every link is connected: nobody else may connect to this session */
		fabric_forget(c);
	pthread_mutex_unlock(&fabric.lock);
	return err;
}

static bool loop_abandon(struct eng_conn *c, unsigned k)
{
	bool connected;

	pthread_mutex_lock(&fabric.lock);
	connected = k < c->cfg->n_links && c->ep[k];
	if (k < c->cfg->n_links && !connected && !c->gone[k]) {
		c->gone[k] = true;
		c->n_gone++;
	}
	pthread_mutex_unlock(&fabric.lock);
	return connected;
}

/* The peer closing is the whole connection set's end, not one link's: never passed to lost. */
static int loop_check_events(struct eng_conn *c, eng_link_lost_fn lost, void *ctx)
{
	bool reset;

	(void)lost;
	(void)ctx;
	if (c->cfg->receiver)
		eng__loop_count_look(); /* one pass of its session's watch (tests wait on it) */
	pthread_mutex_lock(&fabric.lock);
	reset = c->reset;
	pthread_mutex_unlock(&fabric.lock);
	return reset ? rcp_err(-ECONNRESET, "loopback: the peer closed its connections") : 0;
}

static const struct eng_transport loop_transport = {
	.name = "loopback",
	.pinned = false,
	.rail_addrs = loop_rail_addrs,
	.conn_create = loop_conn_create,
	.conn_destroy = loop_conn_destroy,
	.connect = loop_connect,
	.listen = loop_listen,
	.accept_all = loop_accept_all,
	.abandon = loop_abandon,
	.check_events = loop_check_events,
};

const struct eng_transport *eng__transport_loopback(void)
{
	return &loop_transport;
}
