/*
 * identity.c - which server the client dialed, and whether it is this one.
 *
 * One key may be copied to several servers (a fleet of data movers). The
 * proofs show that both ends hold the key, not that the client reached the
 * server it meant: a relay on the path could take a session meant for a
 * and hand it to b, which holds the same key, and b would write the push
 * into its own root. So the hello names the server as the user gave it,
 * the host and the port ("server": {"host", "port"}), the transcript binds
 * those bytes into the proofs (no relay can change them unnoticed), and
 * the server refuses a session dialed to another.
 *
 * The host matches when, after the port matches the one this server
 * listens on:
 *   - it is an address (IPv4 or IPv6) of one of this host's interfaces,
 *     or the address the connection arrived on (a loopback address counts
 *     only there: every host has 127.0.0.1, and a connection that arrived
 *     over the network was not dialed to this host's loopback);
 *   - it is this host's name (gethostname), or that name's first label;
 *   - it is a name that resolves (getaddrinfo) to such an address;
 *   - or it is one of the names the operator gave (serve --name HOST,
 *     HOST:PORT, [ADDR]:PORT or an IPv6 address alone): an address a NAT
 *     forwards here, an alias only the clients resolve.
 * A server whose key is its session's alone (serve --ssh) takes any name:
 * a relay has nowhere else to take that session.
 *
 * The check runs after the client's proof (a stranger cannot make the
 * server resolve names), on the session's own thread; a name's lookup may
 * wait for DNS.
 *
 * Threading: eng__identity_check uses only its arguments and the process's
 * interface list; any thread.
 */
#include "engine/session/session_int.h"

#include "common/common.h"
#include "engine/session/proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOST_MAX 255 /* a DNS name's limit */

/* a and b are one address, an IPv4 one and its IPv6 mapping too (a dual-stack listener's end). */
static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	struct in6_addr ka, kb;

	if ((a->sa_family != AF_INET && a->sa_family != AF_INET6) ||
	    (b->sa_family != AF_INET && b->sa_family != AF_INET6))
		return false;
	eng__addr_key(a, &ka);
	eng__addr_key(b, &kb);
	return IN6_ARE_ADDR_EQUAL(&ka, &kb);
}

/* Whether sa is this host's: the connection's own end (local), or a non-loopback interface's. */
static bool addr_is_here(const struct sockaddr *sa, const struct sockaddr *local,
			 const struct ifaddrs *ifs)
{
	if (local && same_addr(sa, local))
		return true;
	if (eng__addr_loopback(sa))
		return false;
	for (; ifs; ifs = ifs->ifa_next)
		if (ifs->ifa_addr && same_addr(sa, ifs->ifa_addr))
			return true;
	return false;
}

/* Whether name is this host's name or its first label. */
static bool is_own_name(const char *name)
{
	char own[HOST_MAX + 1];
	size_t label;

	if (gethostname(own, sizeof(own)) || !own[0])
		return false;
	own[HOST_MAX] = '\0';
	label = strcspn(own, ".");
	return !strcasecmp(name, own) || (strlen(name) == label && !strncasecmp(name, own, label));
}

/* Whether host (an address or a name) is this host, the connection's end being local. */
static bool host_is_here(const char *host, const struct sockaddr *local)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
	struct ifaddrs *ifs = NULL;
	bool here = false;

	if (is_own_name(host))
		return true;
	if (getaddrinfo(host, NULL, &hints, &res))
		return false;
	if (getifaddrs(&ifs))
		ifs = NULL;
	for (ai = res; ai && !here; ai = ai->ai_next)
		here = addr_is_here(ai->ai_addr, local, ifs);
	freeifaddrs(ifs);
	freeaddrinfo(res);
	return here;
}

int eng__identity_parse(const char *name, uint16_t default_port, char host_out[256],
			uint16_t *port_out)
{
	const char *host = name, *colon = strrchr(name, ':');
	size_t n;
	unsigned long port = default_port;
	char *end;

	if (name[0] == '[') { /* [ADDR] or [ADDR]:PORT */
		const char *close = strchr(name, ']');

		if (!close || (close[1] && close[1] != ':'))
			return rcp_err(-EINVAL, "--name %s: write an IPv6 address as [ADDR]:PORT",
				       name);
		host = name + 1;
		colon = close[1] ? close + 1 : NULL;
		n = (size_t)(close - host);
	} else {
		if (colon && strchr(name, ':') != colon) {
			struct in6_addr a;
			char addr[INET6_ADDRSTRLEN];

			snprintf(addr, sizeof(addr), "%.*s", (int)strcspn(name, "%"), name);
			if (inet_pton(AF_INET6, addr, &a) != 1)
				return rcp_err(-EINVAL,
					       "--name %s is neither HOST:PORT nor an IPv6 address",
					       name);
			colon = NULL; /* an IPv6 address alone: a port needs [ADDR]:PORT */
		}
		n = colon ? (size_t)(colon - name) : strlen(name);
	}
	if (colon) {
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || port == 0 || port > 65535)
			return rcp_err(-EINVAL, "--name %s: the port must be 1-65535", name);
	}
	if (n == 0 || n > HOST_MAX)
		return rcp_err(-EINVAL,
			       "--name '%s' needs a host name or address (HOST, HOST:PORT or "
			       "[ADDR]:PORT)",
			       name);
	memcpy(host_out, host, n);
	host_out[n] = '\0';
	*port_out = (uint16_t)port;
	return 0;
}

int eng_serve_name_check(const char *name)
{
	char host[HOST_MAX + 1];
	uint16_t port;

	return eng__identity_parse(name, ENG_DEFAULT_PORT, host, &port);
}

/* Whether host:port is one of the names the operator gave (serve --name). */
static bool is_given_name(const char *const *names, uint16_t own_port, const char *host,
			  uint16_t port)
{
	char h[HOST_MAX + 1];
	uint16_t p;

	for (; names && *names; names++)
		if (!eng__identity_parse(*names, own_port, h, &p) && p == port &&
		    !strcasecmp(h, host))
			return true;
	return false;
}

int eng__identity_dialed(const json_t *hello, char host_out[256], uint16_t *port_out)
{
	const json_t *server = json_object_get(hello, ENG_KEY_SERVER);
	const char *host = json_string_value(json_object_get(server, ENG_KEY_HOST));
	json_int_t port = json_integer_value(json_object_get(server, ENG_KEY_PORT));
	size_t n = host ? strlen(host) : 0;

	if (!json_is_object(server) || n == 0 || n > HOST_MAX || memchr(host, '\0', n) ||
	    !json_is_integer(json_object_get(server, ENG_KEY_PORT)) || port < 1 || port > 65535)
		return rcp_err(-EPROTO, "the client's hello does not say which server it dialed "
					"(\"server\": a host and a port)");
	memcpy(host_out, host, n + 1);
	*port_out = (uint16_t)port;
	return 0;
}

int eng__identity_check(const char *const *names, uint16_t own_port, int fd, const json_t *hello)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	char host[HOST_MAX + 1], shown[4 * HOST_MAX + 1], own[HOST_MAX + 1] = "";
	uint16_t port;
	int err = eng__identity_dialed(hello, host, &port);

	if (err)
		return err;
	if (is_given_name(names, own_port, host, port))
		return 0;
	if (port == own_port && host_is_here(host, getsockname(fd, (struct sockaddr *)&local, &len)
							   ? NULL
							   : (struct sockaddr *)&local))
		return 0;
	gethostname(own, sizeof(own) - 1);
	rcp_printable(host, shown, sizeof(shown));
	return rcp_err(-EACCES,
		       "the client dialed %s port %u, which is not this server (%s, port %u): a "
		       "relay may have moved the session; if that name or port reaches this "
		       "server (a NAT, an alias), start it with --name %s%s%s:%u",
		       shown, port, own, own_port, strchr(shown, ':') ? "[" : "", shown,
		       strchr(shown, ':') ? "]" : "", port);
}
