/*
 * ctladdr.c - the control connection's addresses, IPv4 or IPv6.
 *
 * A server listening on "::" with IPV6_V6ONLY off sees its IPv4 peers as
 * IPv4-mapped IPv6 addresses (::ffff:a.b.c.d). Everything here says and
 * compares them as the IPv4 addresses they are, so a peer is one peer
 * whichever socket it reached, and logs name it as the user knows it.
 *
 * Threading: no state; thread-safe.
 */
#include "engine/session/session_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

void eng__addr_key(const struct sockaddr *sa, struct in6_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET6) {
		*out = ((const struct sockaddr_in6 *)sa)->sin6_addr;
	} else if (sa->sa_family == AF_INET) {
		out->s6_addr[10] = out->s6_addr[11] = 0xff;
		memcpy(&out->s6_addr[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

bool eng__addr_same_peer(const struct in6_addr *a, const struct in6_addr *b)
{
	if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4MAPPED(b))
		return IN6_ARE_ADDR_EQUAL(a, b);
	return memcmp(a->s6_addr, b->s6_addr, 8) == 0; /* the /64 */
}

const char *eng__addr_key_text(const struct in6_addr *a, char *buf, size_t len)
{
	if (IN6_IS_ADDR_V4MAPPED(a))
		return inet_ntop(AF_INET, &a->s6_addr[12], buf, (socklen_t)len) ? buf : "?";
	return inet_ntop(AF_INET6, a, buf, (socklen_t)len) ? buf : "?";
}

const char *eng__addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	struct in6_addr key;

	eng__addr_key(sa, &key);
	return eng__addr_key_text(&key, buf, len);
}

bool eng__addr_loopback(const struct sockaddr *sa)
{
	struct in6_addr key;

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return false;
	eng__addr_key(sa, &key);
	return IN6_IS_ADDR_LOOPBACK(&key) || (IN6_IS_ADDR_V4MAPPED(&key) && key.s6_addr[12] == 127);
}
