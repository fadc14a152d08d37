/*
 * dial.c - the client's control connection: the TCP connect to a server
 * over IPv6 or IPv4 (from --bind's address when given) and, without a key,
 * the check that what answered is a listener of this user, before anything
 * is sent to it.
 *
 * Threading: none of its own; called on the client's thread.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* fd leaves from b (NULL: the kernel's choice): 0, else -1 and errno. */
static int tcp_bind(int fd, const struct sockaddr_storage *b, socklen_t len)
{
	return b ? bind(fd, (const struct sockaddr *)b, len) : 0;
}

/* ai is one to try: loopback only without a key, of --bind's family with it. */
static bool dial_fits(const struct addrinfo *ai, bool keyless, const struct sockaddr_storage *b)
{
	if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
		return false;
	if (keyless && !eng__addr_loopback(ai->ai_addr))
		return false;
	return !b || b->ss_family == ai->ai_family;
}

/* Connect to each of res that fits, in order, until one answers: its fd, else -1 (*err). */
static int dial_each(const struct addrinfo *res, bool keyless, const struct sockaddr_storage *b,
		     socklen_t blen, int timeout_ms, int *tried, int *err)
{
	const struct addrinfo *ai;
	int fd;

	for (ai = res; ai; ai = ai->ai_next) {
		if (!dial_fits(ai, keyless, b))
			continue;
		++*tried;
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			*err = errno;
			continue;
		}
		if (tcp_bind(fd, b, blen)) {
			*err = errno;
			close(fd);
			*tried = -1; /* --bind's address is not this host's: no other will do */
			return -1;
		}
		if (eng__tcp_connect_timeout(fd, ai->ai_addr, ai->ai_addrlen, timeout_ms) == 0)
			return fd;
		*err = errno;
		close(fd);
	}
	return -1;
}

/*
 * Connect to host's port (each address getaddrinfo gives, IPv6 and IPv4,
 * in its order), from bind_addr if not NULL (then its family only).
 * keyless: to a loopback address only (a keyless server listens on
 * loopback alone), else -ENOKEY without connecting anywhere.
 */
int eng__ctl_dial(const char *host, uint16_t port, const char *bind_addr, int timeout_ms,
		  bool keyless, int *fd_out)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
	struct sockaddr_storage b;
	socklen_t blen = 0;
	char service[8];
	int fd, r, err = 0, tried = 0;

	if (bind_addr && eng__addr_parse(bind_addr, 0, &b, &blen))
		return rcp_err(-EINVAL,
			       "cannot send from '%s' (--bind): not an IPv4 or IPv6 address",
			       bind_addr);
	snprintf(service, sizeof(service), "%u", port);
	r = getaddrinfo(host, service, &hints, &res);
	if (r)
		return rcp_err(-EHOSTUNREACH, "cannot resolve %s: %s", host, gai_strerror(r));
	fd = dial_each(res, keyless, bind_addr ? &b : NULL, blen, timeout_ms, &tried, &err);
	freeaddrinfo(res);
	if (tried < 0)
		return rcp_err(-err, "cannot send from %s (--bind): %s", bind_addr, strerror(err));
	if (!tried && keyless)
		return rcp_err(-ENOKEY,
			       "no key, and %s is not this host: without a key railcp talks only "
			       "to a server of its own user on this host (configure a key: "
			       "--key-file, RAILCP_KEY or ~/.config/railcp/key)",
			       host);
	if (!tried)
		return rcp_err(-EAFNOSUPPORT, "%s has no %s address to reach from %s (--bind)",
			       host, b.ss_family == AF_INET ? "IPv4" : "IPv6", bind_addr);
	if (fd < 0)
		return rcp_err(-(err ? err : EHOSTUNREACH),
			       "cannot reach a railcp server at %s port %u: %s", host, port,
			       strerror(err ? err : EHOSTUNREACH));
	eng__tcp_tune(fd, timeout_ms);
	*fd_out = fd;
	return 0;
}

/*
 * Without a key nothing proves who answers, and any user of this host can
 * listen on a port above 1024: the listener must be this user's (sock_diag,
 * as a keyless server checks its clients), or nothing is sent to it.
 */
int eng__ctl_peer_own(int fd, const char *host, uint16_t port)
{
	uid_t uid;
	int err = eng__tcp_peer_uid(fd, &uid);

	/*
	 * Our own socket reset or no longer connected: the server went away
	 * between the connect and this look (railcp-mpi moves on from it), no
	 * matter of the key. A far end sock_diag cannot find while our socket
	 * is still connected (-ENOENT) is not that: who listens cannot be told.
	 */
	if (err == -ECONNRESET || err == -ENOTCONN)
		return rcp_err(err, "the railcp server at %s port %u closed the connection at once",
			       host, port);
	if (err)
		return rcp_err(-ENOKEY, "no key, and who listens on %s port %u cannot be told: %s",
			       host, port, rcp_err_msg(err));
	if (uid != geteuid())
		return rcp_err(-ENOKEY,
			       "no key, and what listens on %s port %u belongs to uid %u, not to "
			       "this user (uid %u): without a key railcp talks only to a server "
			       "of its own user; refusing to send to it",
			       host, port, (unsigned)uid, (unsigned)geteuid());
	return 0;
}
