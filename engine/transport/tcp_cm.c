/*
 * tcp_cm.c - the TCP transport's set-up: rail addresses (a rail is an IP
 * interface, named as the kernel names it) and each stripe's connection.
 *
 * The server listens on each rail's address for the session (a port of the
 * kernel's choice, sent in the welcome as for RDMA). A client's stripe
 * connects from its rail's address and sends a hello: the server's link it
 * asks for and that link's token (what rdma_cm private data carries for
 * verbs), and the slot geometry it expects. The server takes it only if the
 * token is the link's, the link is not taken, and the geometry is its own;
 * it makes its end, posts its receives (link_ready) and starts its reader
 * before it answers, so nothing the client sends can find no receive. A
 * connection that fails the checks is answered with the error and closed,
 * and the server waits on for the right one, as the verbs transport refuses
 * a stranger's connection request. Once every link is connected the
 * listeners close: nobody else may join the session.
 *
 * Accepted connections wait for their hellos side by side, without
 * blocking: a stranger that connects and says nothing is closed after
 * TCP_HELLO_MS, or sooner when TCP_MAX_PENDING others arrive after it,
 * and never delays the client's own connections.
 *
 * Threading: a connection set is used by its session's thread only (its
 * endpoints' readers are tcp.c's).
 */
#include "engine/transport/device_int.h"
#include "engine/transport/tcp_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TCP_HELLO_MAGIC 0x72746831u /* "rth1" */
/* How long an accepted connection may take to say which link it is. */
#define TCP_HELLO_MS 5000

struct tcp_hello {
	uint32_t magic;
	uint32_t link; /* the server's link it asks for */
	uint64_t token;
	uint32_t n_slots;
	uint32_t slot_size;
};

struct tcp_answer {
	uint32_t magic;
	int32_t status; /* 0, or the errno of the refusal */
	uint32_t n_slots;
	uint32_t slot_size;
};

/* Connections a session's listeners hold at once before their hellos are whole. */
#define TCP_MAX_PENDING 16

/* An accepted connection whose hello is still coming: read without blocking. */
struct tcp_pending {
	int fd;
	size_t got;
	struct tcp_hello h;
	uint64_t end_ns; /* refused when its hello is not whole by then */
};

struct eng_conn {
	const struct eng_conn_cfg *cfg;
	struct eng_ep **ep; /* by link index */
	int lfd[TOPO_MAX_RAILS];
	unsigned n_lfd;
	unsigned established;
	struct tcp_pending pend[TCP_MAX_PENDING];
	unsigned n_pend;
	bool *gone; /* by link index: the client gave it up at set-up (abandon) */
	unsigned n_gone;
	enum tcp_zc_mode zc; /* a sender's sends: RAILCP_TCP_ZEROCOPY */
};

static int tcp_rail_addr(const struct ifaddrs *all, const char *dev, struct eng_rail_addr *out)
{
	const struct ifaddrs *i;

	for (i = all; i; i = i->ifa_next)
		if (!strcmp(i->ifa_name, dev) && eng__ifa_rail_addr(i, AF_INET, out))
			return 0;
	return rcp_err(-EADDRNOTAVAIL, "rail %s is not an interface with an IPv4 address", dev);
}

static int tcp_rail_addrs(const struct topo_plan *plan, struct eng_rail_addr *out)
{
	struct ifaddrs *all;
	unsigned r;
	int err = 0;

	if (getifaddrs(&all) != 0)
		return rcp_err(-errno, "getifaddrs: %s", strerror(errno));
	for (r = 0; r < plan->n_rails && !err; r++)
		err = tcp_rail_addr(all, plan->rail[r].dev, &out[r]);
	freeifaddrs(all);
	return err;
}

static int tcp_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_conn *c = calloc(1, sizeof(*c));
	unsigned i;
	int err = 0;

	if (c) {
		c->ep = calloc(cfg->n_links ? cfg->n_links : 1, sizeof(*c->ep));
		c->gone = calloc(cfg->n_links ? cfg->n_links : 1, sizeof(*c->gone));
	}
	if (!c || !c->ep || !c->gone) {
		if (c) {
			free(c->ep);
			free(c->gone);
		}
		free(c);
		return -ENOMEM;
	}
	c->cfg = cfg;
	err = eng__tcp_zc_mode(&c->zc);
	for (i = 0; i < cfg->n_workers && !err; i++) {
		struct eng_tr_worker *w = cfg->worker[i];

		if (w->n_cqs == 0 && (err = eng__tcp_cq_create(&w->cq[0])) == 0)
			w->n_cqs = 1;
	}
	*conn_out = c;
	return err; /* on failure the caller destroys c, CQs made so far with it */
}

/* The listeners, and the connections they hold whose hellos never came whole. */
static void listeners_close(struct eng_conn *c)
{
	while (c->n_lfd > 0)
		close(c->lfd[--c->n_lfd]);
	while (c->n_pend > 0)
		close(c->pend[--c->n_pend].fd);
}

static void tcp_conn_destroy(struct eng_conn *c)
{
	unsigned i;

	if (!c)
		return;
	listeners_close(c);
	for (i = 0; i < c->cfg->n_links; i++) {
		eng__tcp_ep_destroy(c->ep[i]);
		c->cfg->link[i]->ep = NULL;
	}
	for (i = 0; i < c->cfg->n_workers; i++) {
		struct eng_tr_worker *w = c->cfg->worker[i];

		if (w->n_cqs)
			eng__tcp_cq_destroy(w->cq[0]);
		w->n_cqs = 0;
	}
	free(c->ep);
	free(c->gone);
	free(c);
}

/*
 * With --tos, fd's IP_TOS (an IPv6 socket's IPV6_TCLASS), before its SYN or
 * its first byte: 0, or an error said.
 */
static int tos_set(const struct eng_conn *c, int fd, const char *what)
{
	int tos = c->cfg->qp.tos, family = AF_INET;
	socklen_t len = sizeof(family);

	if (c->cfg->qp.tos_set && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) != 0)
		return rcp_err(-errno, "%s: getsockopt: %s", what, strerror(errno));
	if (!c->cfg->qp.tos_set ||
	    (family == AF_INET6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))
				: setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos))) == 0)
		return 0;
	return rcp_err(-errno, "%s: cannot set the traffic class %d (--tos): %s", what, tos,
		       strerror(errno));
}

static int tcp_listen(struct eng_conn *c, const union eng_sockaddr *addr, uint16_t *port_out)
{
	union eng_sockaddr a = *addr;
	socklen_t len = sizeof(a);
	int one = 1, fd, err;

	if (c->n_lfd == TOPO_MAX_RAILS)
		return rcp_err(-ENOSPC, "a session listens on %d rails at most", TOPO_MAX_RAILS);
	eng__addr_set_port(&a.ss, 0);
	fd = socket(a.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return rcp_err(-errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* its SYN-ACKs too */
	if ((err = tos_set(c, fd, "listening for stripes")) != 0) {
		close(fd);
		return err;
	}
	if (bind(fd, &a.sa, eng__addr_len(&a.sa)) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, &a.sa, &len) != 0) {
		char at[INET6_ADDRSTRLEN];

		err = -errno;
		close(fd);
		return rcp_err(err, "listening for stripes on %s: %s",
			       eng__addr_ntop(&addr->sa, at, sizeof(at)), strerror(-err));
	}
	c->lfd[c->n_lfd++] = fd;
	*port_out = eng__addr_port(&a.sa);
	return 0;
}

static void set_timeouts(int fd, int recv_ms, int send_s)
{
	struct timeval rt = {recv_ms / 1000, (recv_ms % 1000) * 1000}, st = {send_s, 0};
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rt, sizeof(rt));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &st, sizeof(st));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* All of len bytes, within the socket's receive timeout: 0 or -errno. */
static int xfer(int fd, void *buf, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t k = out ? send(fd, (uint8_t *)buf + done, len - done, MSG_NOSIGNAL)
				: recv(fd, (uint8_t *)buf + done, len - done, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k == 0 ? -ECONNRESET : errno == EAGAIN ? -ETIMEDOUT : -errno;
		done += (size_t)k;
	}
	return 0;
}

/*
 * The end of link l on connected fd, the server's stripe number stripe:
 * made, sealed when the session has a key, its receives posted, its reader
 * started.
 */
static int link_make(struct eng_conn *c, struct eng_link *l, int fd, uint32_t stripe)
{
	struct eng_ep *ep;
	int err;

	set_timeouts(fd, 0, TCP_SEND_STALL_S);
	if ((err = eng__tcp_ep_create(l->worker->cq[0], fd, l, c->cfg->receiver, &ep)) != 0) {
		close(fd);
		return err;
	}
	c->ep[l->index] = l->ep = ep;
	if (c->cfg->chunk_key && (err = eng__tcp_ep_seal(ep, c->cfg->chunk_key, stripe)) != 0)
		return err;
	if ((err = eng__tcp_ep_zerocopy(ep, c->zc)) != 0)
		return err;
	if ((err = c->cfg->link_ready(c->cfg->ctx, l)) != 0)
		return err;
	return eng__tcp_ep_start(ep);
}

/* Connect fd to dst within timeout_ms: 0 or -errno. */
static int connect_within(int fd, const union eng_sockaddr *dst, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int soerr = 0;
	socklen_t len = sizeof(soerr);

	if (connect(fd, &dst->sa, eng__addr_len(&dst->sa)) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	if (poll(&p, 1, timeout_ms) == 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
		return -errno;
	return -soerr;
}

static int set_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? -errno : 0;
}

static int client_hello(int fd, const struct eng_link *l, uint32_t peer_link)
{
	struct tcp_hello h = {TCP_HELLO_MAGIC, peer_link, l->token, l->n_slots, l->slot_size};
	struct tcp_answer a;
	int err = xfer(fd, &h, sizeof(h), true);

	if (!err)
		err = xfer(fd, &a, sizeof(a), false);
	if (err)
		return err;
	if (a.magic != TCP_HELLO_MAGIC)
		return -EPROTO;
	if (a.status != 0)
		return a.status > 0 ? -a.status : -EPROTO;
	if (a.n_slots != l->n_slots || a.slot_size != l->slot_size)
		return -EPROTO;
	return 0;
}

static int tcp_connect(struct eng_conn *c, struct eng_link *l, const union eng_sockaddr *src,
		       const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	union eng_sockaddr from = *src;
	char to[INET6_ADDRSTRLEN];
	int fd, err;

	eng__addr_ntop(&dst->sa, to, sizeof(to));
	eng__addr_set_port(&from.ss, 0);
	if (from.sa.sa_family != dst->sa.sa_family)
		return rcp_err(-EAFNOSUPPORT,
			       "connecting %s to %s: the rail and the server's are "
			       "of different IP families",
			       l->rail_dev, to);
	fd = socket(from.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return rcp_err(-errno, "socket: %s", strerror(errno));
	err = tos_set(c, fd, l->rail_dev);
	if (!err)
		err = bind(fd, &from.sa, eng__addr_len(&from.sa)) ? -errno : 0;
	if (!err)
		err = connect_within(fd, dst, timeout_ms);
	if (!err)
		err = set_blocking(fd);
	if (!err) {
		set_timeouts(fd, timeout_ms, TCP_SEND_STALL_S);
		err = client_hello(fd, l, peer_link);
	}
	if (err) {
		close(fd);
		return rcp_err(err, "connecting %s to %s port %u: %s", l->rail_dev, to,
			       eng__addr_port(&dst->sa),
			       err == -EPROTO ? "the server's answer is not this session's"
					      : strerror(-err));
	}
	return link_make(c, l, fd, peer_link);
}

/* Whether the hello h asks for a link of c that waits for it: 0, or the errno of the refusal. */
static int hello_check(const struct eng_conn *c, const struct tcp_hello *h, const char **why)
{
	const struct eng_link *l;

	*why = "a TCP connection that is not from this session";
	if (h->magic != TCP_HELLO_MAGIC || h->link >= c->cfg->n_links)
		return EPERM;
	l = c->cfg->link[h->link];
	if (h->token != l->token)
		return EPERM;
	*why = "a TCP connection for a stripe that is not open";
	if (c->ep[h->link] || c->gone[h->link])
		return EPROTO;
	*why = "a TCP connection that expects other slots";
	if (h->n_slots != l->n_slots || h->slot_size != l->slot_size)
		return EPROTO;
	return 0;
}

/* Close pending connection i, saying why at -v. */
static void pending_drop(struct eng_conn *c, unsigned i, const char *why)
{
	close(c->pend[i].fd);
	c->pend[i] = c->pend[--c->n_pend];
	rcp_log(RCP_LOG_INFO, "refused %s", why);
}

/* A connection from listener lfd, pending until its hello is whole; the oldest makes room. */
static void pending_add(struct eng_conn *c, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	unsigned i, oldest = 0;

	if (fd < 0)
		return;
	if (c->n_pend == TCP_MAX_PENDING) {
		for (i = 1; i < c->n_pend; i++)
			if (c->pend[i].end_ns < c->pend[oldest].end_ns)
				oldest = i;
		pending_drop(c, oldest, "a TCP connection that said nothing while others waited");
	}
	c->pend[c->n_pend++] = (struct tcp_pending){
		.fd = fd, .end_ns = rcp_now_ns() + (uint64_t)TCP_HELLO_MS * 1000000ull};
}

/* Pending connection i's whole hello: its link's end made and the answer sent, or refused. */
static int hello_done(struct eng_conn *c, unsigned i)
{
	struct tcp_pending p = c->pend[i];
	struct tcp_answer a = {TCP_HELLO_MAGIC, 0, 0, 0};
	struct eng_link *l;
	const char *why;
	int err;

	c->pend[i] = c->pend[--c->n_pend];
	a.status = hello_check(c, &p.h, &why);
	if (a.status) {
		if (send(p.fd, &a, sizeof(a), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			(void)0; /* a stranger that cannot take the refusal gets the close alone */
		close(p.fd);
		rcp_log(RCP_LOG_INFO, "refused %s", why);
		return 0;
	}
	l = c->cfg->link[p.h.link];
	a.n_slots = l->n_slots;
	a.slot_size = l->slot_size;
	if ((err = tos_set(c, p.fd, l->rail_dev)) != 0) {
		close(p.fd);
		return err;
	}
	if ((err = set_blocking(p.fd)) != 0) {
		close(p.fd);
		return rcp_err(err, "fcntl: %s", strerror(-err));
	}
	if ((err = link_make(c, l, p.fd, p.h.link)) != 0)
		return err;
	c->established++;
	if ((err = xfer(p.fd, &a, sizeof(a), true)) != 0)
		return rcp_err(err, "answering the client's stripe %u: %s", p.h.link,
			       strerror(-err));
	return 0;
}

/* Read what pending connection i has sent of its hello; on the whole of it, hello_done. */
static int pending_read(struct eng_conn *c, unsigned i)
{
	struct tcp_pending *p = &c->pend[i];
	ssize_t k = recv(p->fd, (uint8_t *)&p->h + p->got, sizeof(p->h) - p->got, MSG_DONTWAIT);

	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (k <= 0) {
		pending_drop(c, i, "a TCP connection that closed before its hello");
		return 0;
	}
	p->got += (size_t)k;
	return p->got == sizeof(p->h) ? hello_done(c, i) : 0;
}

/* Milliseconds to poll for: to the deadline or the first pending hello's end, at least 1. */
static int poll_ms(const struct eng_conn *c, uint64_t deadline, uint64_t now)
{
	uint64_t end = deadline;
	unsigned i;

	for (i = 0; i < c->n_pend; i++)
		if (c->pend[i].end_ns < end)
			end = c->pend[i].end_ns;
	return end > now ? (int)((end - now) / 1000000ull) + 1 : 1;
}

/*
 * One round: wait for a connection, a hello's bytes or the control
 * connection, and take what came. -EPIPE when the control connection
 * turned readable.
 */
static int accept_round(struct eng_conn *c, int ctl_fd, uint64_t deadline)
{
	struct pollfd p[TOPO_MAX_RAILS + TCP_MAX_PENDING + 1];
	unsigned i, n = 0, n_pend = c->n_pend;
	uint64_t now = rcp_now_ns();
	int err = 0;

	for (i = 0; i < c->n_lfd; i++)
		p[n++] = (struct pollfd){.fd = c->lfd[i], .events = POLLIN};
	for (i = 0; i < n_pend; i++)
		p[n++] = (struct pollfd){.fd = c->pend[i].fd, .events = POLLIN};
	p[n++] = (struct pollfd){.fd = ctl_fd, .events = POLLIN};
	if (poll(p, n, poll_ms(c, deadline, now)) < 0 && errno != EINTR)
		return rcp_err(-errno, "poll: %s", strerror(errno));
	if (ctl_fd >= 0 && p[n - 1].revents)
		return -EPIPE; /* the caller reads the control connection */
	/* Back to front: a pending connection taken out moves the last one into its place. */
	for (i = n_pend; i-- > 0 && !err;)
		if (p[c->n_lfd + i].revents)
			err = pending_read(c, i);
	now = rcp_now_ns();
	for (i = c->n_pend; i-- > 0;)
		if (c->pend[i].end_ns <= now)
			pending_drop(c, i, "a TCP connection that did not say which stripe it is");
	for (i = 0; i < c->n_lfd && !err; i++)
		if (p[i].revents)
			pending_add(c, c->lfd[i]);
	return err;
}

static int tcp_accept_all(struct eng_conn *c, int ctl_fd, int timeout_ms)
{
	uint64_t deadline = rcp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int err = 0;

	while (!err && c->established + c->n_gone < c->cfg->n_links) {
		if (rcp_now_ns() >= deadline)
			return rcp_err(-ETIMEDOUT,
				       "waiting for the client's TCP connections: no answer "
				       "within %d s",
				       timeout_ms / 1000);
		err = accept_round(c, ctl_fd, deadline);
	}
	if (!err) /* every link is connected: nobody else may join this session */
		listeners_close(c);
	return err;
}

/* The client gave up link k at set-up: not waited for, not taken later. */
static bool tcp_abandon(struct eng_conn *c, unsigned k)
{
	if (k >= c->cfg->n_links || c->ep[k])
		return k < c->cfg->n_links;
	if (!c->gone[k]) {
		c->gone[k] = true;
		c->n_gone++;
	}
	return false;
}

/* A stripe whose reader stopped is lost: passed on once, with the reader's sentence. */
static int tcp_check_events(struct eng_conn *c, eng_link_lost_fn lost, void *ctx)
{
	char why[sizeof(((struct tcp_ep *)0)->why) + sizeof(((struct tcp_ep *)0)->desc) + 2];
	unsigned i;

	for (i = 0; i < c->cfg->n_links; i++) {
		struct tcp_ep *e = c->ep[i] ? c->ep[i]->tr : NULL;

		if (!e || e->told || !atomic_load_explicit(&e->lost, memory_order_acquire))
			continue;
		e->told = true;
		snprintf(why, sizeof(why), "%s: %s", e->desc, e->why);
		if (!lost)
			return rcp_err(-ECONNRESET, "%s", why);
		lost(ctx, i, why);
	}
	return 0;
}

static const struct eng_transport tcp_transport = {
	.name = "tcp",
	.pinned = false,
	.rail_addrs = tcp_rail_addrs,
	.conn_create = tcp_conn_create,
	.conn_destroy = tcp_conn_destroy,
	.connect = tcp_connect,
	.listen = tcp_listen,
	.accept_all = tcp_accept_all,
	.abandon = tcp_abandon,
	.check_events = tcp_check_events,
};

const struct eng_transport *eng__transport_tcp(void)
{
	return &tcp_transport;
}
