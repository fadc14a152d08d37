/*
 * dial.c - the client's control connection: the TCP connect to a server
 * (from --bind's address when given) and, without a key, the check that
 * what answered is a listener of this user, before anything is sent to it.
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

static bool is_loopback4(const struct addrinfo *ai)
{
	const struct sockaddr_in *a = (const struct sockaddr_in *)ai->ai_addr;

	return ai->ai_family == AF_INET && (ntohl(a->sin_addr.s_addr) >> 24) == 127;
}

/* fd leaves from bind_addr (an IPv4 address; NULL: the kernel's choice): 0, else -1 and errno. */
static int tcp_bind(int fd, const char *bind_addr)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	if (!bind_addr)
		return 0;
	if (inet_pton(AF_INET, bind_addr, &a.sin_addr) != 1) {
		errno = EINVAL;
		return -1;
	}
	return bind(fd, (struct sockaddr *)&a, sizeof(a));
}

/*
 * Connect to host's port, from bind_addr if not NULL (then IPv4 only).
 * keyless: to a loopback IPv4 address only (a keyless server listens on
 * 127.0.0.1 alone), else -ENOKEY without connecting anywhere.
 */
int eng__ctl_dial(const char *host, uint16_t port, const char *bind_addr, int timeout_ms,
		  bool keyless, int *fd_out)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
	char service[8];
	int fd = -1, r, err = 0, tried = 0;

	snprintf(service, sizeof(service), "%u", port);
	r = getaddrinfo(host, service, &hints, &res);
	if (r)
		return rcp_err(-EHOSTUNREACH, "cannot resolve %s: %s", host, gai_strerror(r));
	for (ai = res; ai; ai = ai->ai_next) {
		if (keyless && !is_loopback4(ai))
			continue;
		tried++;
		if (bind_addr && ai->ai_family != AF_INET)
			continue;
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (tcp_bind(fd, bind_addr)) {
			err = errno;
			close(fd);
			freeaddrinfo(res);
			return rcp_err(-err, "cannot send from %s (--bind): %s", bind_addr,
				       strerror(err));
		}
		if (eng__tcp_connect_timeout(fd, ai->ai_addr, ai->ai_addrlen, timeout_ms) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (!tried)
		return rcp_err(-ENOKEY,
			       "no key, and %s is not this host: without a key railcp talks only "
			       "to a server of its own user on this host (configure a key: "
			       "--key-file, RAILCP_KEY or ~/.config/railcp/key)",
			       host);
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
