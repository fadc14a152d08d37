/*
 * sockaddr.c - socket addresses of either family, IPv4 or IPv6: parsed
 * from text, their ports, and the subnet test by which rails are paired.
 * The control connection (engine/session/ctladdr.c) and the rails use them
 * alike.
 *
 * Threading: no state; thread-safe.
 */
#include "engine/transport/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int eng__addr_parse(const char *text, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		*len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

uint16_t eng__addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return sa->sa_family == AF_INET ? ntohs(((const struct sockaddr_in *)sa)->sin_port) : 0;
}

void eng__addr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

socklen_t eng__addr_len(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : 0;
}

/* Whether the first bits of a and b (n bytes each) agree. */
static bool same_bits(const uint8_t *a, const uint8_t *b, size_t n, unsigned bits)
{
	size_t whole = bits / 8;
	unsigned rest = bits % 8;
	uint8_t mask = (uint8_t)(0xff00u >> rest);

	if (whole >= n)
		return memcmp(a, b, n) == 0;
	return memcmp(a, b, whole) == 0 && (rest == 0 || ((a[whole] ^ b[whole]) & mask) == 0);
}

bool eng__addr_same_subnet(const union eng_sockaddr *a, const union eng_sockaddr *b,
			   unsigned prefix)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return same_bits((const uint8_t *)&a->in.sin_addr, (const uint8_t *)&b->in.sin_addr,
				 4, prefix);
	if (a->sa.sa_family == AF_INET6)
		return same_bits(a->in6.sin6_addr.s6_addr, b->in6.sin6_addr.s6_addr, 16, prefix);
	return false;
}

const char *eng__addr_ntop(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *raw = NULL;

	if (sa && sa->sa_family == AF_INET)
		raw = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa && sa->sa_family == AF_INET6)
		raw = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (!raw || !inet_ntop(sa->sa_family, raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}
