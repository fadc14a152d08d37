/*
 * peercred.c - which user made a loopback TCP connection (IPv4 or IPv6),
 * for a server without a key: it serves only its own user (listener.c).
 *
 * SO_PEERCRED answers only on unix sockets, so the owner of the peer's end
 * is asked of the kernel's sock_diag netlink interface (sock_diag(7)): one
 * SOCK_DIAG_BY_FAMILY query for the TCP socket whose local end is the
 * peer's address and port and whose remote end is ours, answered with the
 * uid that created it (its creator's fsuid, fixed at socket()). The kernel
 * answers within the sendto, so the reply is read without waiting.
 *
 * An answer counts only if it names an established socket with exactly
 * that 4-tuple, and our end is still established after it: closed peers
 * are reported as owned by uid 0 (time-wait sockets), and a lookup that
 * misses the established table falls back to listening sockets. Both
 * checks together mean the socket found is the one our connection speaks
 * to, since no two established sockets of a network namespace share a
 * 4-tuple. Every doubt is a refusal, with a sentence.
 *
 * Threading: no state; thread-safe.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

/* One end of a TCP connection as sock_diag names it. */
struct diag_end {
	uint8_t family;
	__be16 port;
	__be32 addr[4];
};

/*
 * sa as sock_diag names it; mapped: an IPv4-mapped IPv6 address as the
 * IPv4 one (the peer of a dual-stack listener is an IPv4 socket).
 */
static struct diag_end diag_end(const struct sockaddr_storage *sa, bool mapped)
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
	struct diag_end e = {.family = (uint8_t)sa->ss_family};

	if (sa->ss_family == AF_INET) {
		e.port = in->sin_port;
		e.addr[0] = in->sin_addr.s_addr;
	} else if (mapped && IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
		e.family = AF_INET;
		e.port = in6->sin6_port;
		memcpy(&e.addr[0], &in6->sin6_addr.s6_addr[12], 4);
	} else {
		e.port = in6->sin6_port;
		memcpy(e.addr, &in6->sin6_addr, sizeof(e.addr));
	}
	return e;
}

/* The sock_diag entry of the TCP socket with local end src and remote end dst. */
static int diag_query(const struct diag_end *src, const struct diag_end *dst,
		      struct inet_diag_msg *msg_out)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {.nh = {.nlmsg_len = sizeof(req),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST,
			.nlmsg_seq = 1},
		 .r = {.sdiag_family = src->family,
		       .sdiag_protocol = IPPROTO_TCP,
		       .id = {.idiag_sport = src->port,
			      .idiag_dport = dst->port,
			      .idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}}};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK}, from;
	socklen_t from_len = sizeof(from);
	long buf[1024]; /* aligned for struct nlmsghdr */
	const struct nlmsghdr *nh = (const struct nlmsghdr *)buf;
	ssize_t n;
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), err;

	memcpy(req.r.id.idiag_src, src->addr, sizeof(src->addr));
	memcpy(req.r.id.idiag_dst, dst->addr, sizeof(dst->addr));
	if (fd < 0)
		return -errno;
	n = sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel));
	if (n == (ssize_t)sizeof(req))
		n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from,
			     &from_len);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if (from.nl_pid != 0 || !NLMSG_OK(nh, (size_t)n) || nh->nlmsg_seq != 1)
		return -EPROTO;
	if (nh->nlmsg_type == NLMSG_ERROR && nh->nlmsg_len >= NLMSG_LENGTH(sizeof(int)))
		return ((const struct nlmsgerr *)NLMSG_DATA(nh))->error ?: -EPROTO;
	if (nh->nlmsg_type != SOCK_DIAG_BY_FAMILY || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*msg_out)))
		return -EPROTO;
	memcpy(msg_out, NLMSG_DATA(nh), sizeof(*msg_out));
	return 0;
}

/* addr (of family) as 16 bytes, an IPv4 address mapped (::ffff:a.b.c.d). */
static void diag_key(uint8_t family, const __be32 addr[4], __be32 out[4])
{
	if (family == AF_INET) {
		out[0] = out[1] = 0;
		out[2] = htonl(0xffff);
		out[3] = addr[0];
	} else {
		memcpy(out, addr, 4 * sizeof(*out));
	}
}

/* The answer's address a (of family) is ours, b (of ours_family): each mapped alike. */
static bool diag_same(uint8_t family, const __be32 a[4], uint8_t ours_family, const __be32 b[4])
{
	__be32 ka[4], kb[4];

	diag_key(family, a, ka);
	diag_key(ours_family, b, kb);
	return !memcmp(ka, kb, sizeof(ka));
}

/*
 * The entry names the socket we asked for: src's end, in state. An IPv4
 * query may be answered by an IPv6 socket of a dual-stack listener, its
 * addresses IPv4-mapped: the same connection.
 */
static bool diag_is(const struct inet_diag_msg *m, const struct diag_end *src,
		    const struct diag_end *dst, int state)
{
	if (m->idiag_family != src->family &&
	    !(src->family == AF_INET && m->idiag_family == AF_INET6))
		return false;
	return m->idiag_state == state && m->id.idiag_sport == src->port &&
	       diag_same(m->idiag_family, m->id.idiag_src, src->family, src->addr) &&
	       m->id.idiag_dport == dst->port &&
	       diag_same(m->idiag_family, m->id.idiag_dst, dst->family, dst->addr);
}

static bool tcp_established(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
	       ti.tcpi_state == TCP_ESTABLISHED;
}

/*
 * The peer's entry, ESTABLISHED: -ECONNRESET when fd itself is no longer
 * connected. Just after a connect or accept the far end may not have taken
 * the last packet of the handshake yet (a request socket in SYN_RECV, or
 * not found): asked again, up to about 10 ms. An entry still not found
 * while fd is connected is -ENOENT, not a close: the far end may be a
 * server still finishing its handshake on a loaded host, or behind a
 * loopback DNAT or REDIRECT that sock_diag cannot follow, and saying it
 * went away would have railcp-mpi leave a live server unprobed.
 */
static int peer_entry(const struct diag_end *src, const struct diag_end *dst, int fd,
		      struct inet_diag_msg *m)
{
	int err = 0, tries;

	for (tries = 0; tries < 10; tries++) {
		if (tries)
			usleep(1000);
		err = diag_query(src, dst, m);
		if (err && err != -ENOENT)
			return err;
		if (!err && diag_is(m, src, dst, TCP_ESTABLISHED))
			return tcp_established(fd) ? 0 : -ECONNRESET;
		if (!tcp_established(fd))
			return -ECONNRESET;
	}
	return tcp_established(fd) ? -ENOENT : -ECONNRESET;
}

int eng__tcp_peer_uid(int fd, uid_t *uid_out)
{
	struct sockaddr_storage us, peer;
	socklen_t us_len = sizeof(us), peer_len = sizeof(peer);
	struct diag_end src, dst;
	struct inet_diag_msg m;
	int err;

	if (getsockname(fd, (struct sockaddr *)&us, &us_len) ||
	    getpeername(fd, (struct sockaddr *)&peer, &peer_len))
		return rcp_err(-errno, "the server cannot see the connection's addresses (%s)",
			       strerror(errno));
	if ((us.ss_family != AF_INET && us.ss_family != AF_INET6) || peer.ss_family != us.ss_family)
		return rcp_err(-EAFNOSUPPORT, "the connection is neither IPv4 nor IPv6");
	src = diag_end(&peer, true);
	dst = diag_end(&us, true);
	err = peer_entry(&src, &dst, fd, &m);
	if (err == -ENOENT)
		return rcp_err(err, "the kernel's sock_diag finds no far end of a connection still "
				    "open (a handshake not yet finished, or an address rewritten "
				    "by DNAT or REDIRECT)");
	if (err && err != -ECONNRESET)
		return rcp_err(err,
			       "the kernel's sock_diag cannot say which user made the connection "
			       "(%s)",
			       strerror(-err));
	if (err)
		return rcp_err(-ECONNRESET,
			       "the connection closed before the server could tell which user "
			       "made it");
	*uid_out = m.idiag_uid;
	return 0;
}

int eng__tcp_peer_uid_probe(int lfd)
{
	struct sockaddr_storage us, none;
	socklen_t len = sizeof(us);
	struct diag_end src, dst;
	struct inet_diag_msg m;
	int err;

	if (getsockname(lfd, (struct sockaddr *)&us, &len))
		return -errno;
	memset(&none, 0, sizeof(none));
	none.ss_family = us.ss_family;
	src = diag_end(&us, false);
	dst = diag_end(&none, false);
	if ((err = diag_query(&src, &dst, &m)) != 0)
		return rcp_err(err, "the kernel's sock_diag lookup failed: %s", strerror(-err));
	if (!diag_is(&m, &src, &dst, TCP_LISTEN))
		return rcp_err(-EPROTO, "the kernel's sock_diag answered about another socket");
	if (m.idiag_uid != geteuid())
		return rcp_err(-EPROTO,
			       "the kernel's sock_diag names uid %u, not this process's uid %u, "
			       "as the owner of its listening socket",
			       m.idiag_uid, (unsigned)geteuid());
	return 0;
}
