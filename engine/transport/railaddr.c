/*
 * railaddr.c - the address by which rdma_cm binds a rail, IPv4 or IPv6, for
 * either link layer, as pure functions of a port (from the device listing)
 * and an interface list (getifaddrs'), so that the verbs transport and the
 * loopback's device model take the same path.
 *
 * A rail with an IPv4 address uses it; one without uses its first global
 * IPv6 address (never a link-local one: fe80::/10 needs a scope, and every
 * RoCE port has one, so it would pair every rail with every other).
 *
 * RoCE (link layer Ethernet): the port carries each of its netdev's
 * addresses as a RoCE v2 GID, an IPv4 one mapped (::ffff:a.b.c.d).
 * InfiniBand: no GID is an IP address (a GID is the subnet prefix and the
 * port's GUID, and has no netdev); the address is the port's IPoIB
 * interface's, the netdev whose 20-byte hardware address is 4 bytes of
 * flags and queue pair number and then one of the port's GIDs, which is
 * how the kernel's rdma_cm maps an IPoIB address to its device and port. A
 * partition's child interface (ib0.8001) carries the same GID: the first
 * address getifaddrs lists on any of them (under its label, "ib0:rail", if
 * it has one) is taken. Either way the prefix is that address's
 * interface's (all 32 or 128 bits when no interface lists it).
 *
 * Threading: thread-safe (no shared state).
 */
#include "engine/transport/device_int.h"
#include "engine/transport/transport.h"

#include "common/common.h"
#include "engine/engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <stddef.h>
#include <string.h>

#define IPOIB_HWADDR_LEN 20
#define IPOIB_GID_OFFSET 4

bool eng__port_is_ib(const struct eng_port *port)
{
	return port->link_layer && !strcmp(port->link_layer, "InfiniBand");
}

/*
 * Whether ifa is an IPoIB interface's link-layer entry carrying one of
 * port's GIDs. getifaddrs gives the whole 20-byte address (glibc keeps room
 * for it past sockaddr_ll's 8), read through bytes to stay inside the object.
 */
static bool ipoib_of_port(const struct eng_port *port, const struct ifaddrs *ifa)
{
	const struct sockaddr_ll *ll = (const struct sockaddr_ll *)(const void *)ifa->ifa_addr;
	const unsigned char *hw;
	size_t g;

	if (!ll || ll->sll_family != AF_PACKET || ll->sll_hatype != ARPHRD_INFINIBAND ||
	    ll->sll_halen != IPOIB_HWADDR_LEN)
		return false;
	hw = (const unsigned char *)ll + offsetof(struct sockaddr_ll, sll_addr) + IPOIB_GID_OFFSET;
	for (g = 0; g < port->n_gids; g++)
		if (!memcmp(hw, port->gids[g].raw, sizeof(port->gids[g].raw)))
			return true;
	return false;
}

const char *eng__ipoib_netdev(const struct eng_port *port, const struct ifaddrs *ifa)
{
	for (; ifa; ifa = ifa->ifa_next)
		if (ipoib_of_port(port, ifa))
			return ifa->ifa_name;
	return NULL;
}

/* Whether an address's name (its label: "ib0", "ib0:rail") is on the interface named dev. */
static bool label_of(const char *label, const char *dev)
{
	size_t n = strcspn(label, ":");

	return strlen(dev) == n && !strncmp(label, dev, n);
}

/* Whether the address labelled label is on an IPoIB interface of port. */
static bool label_is_ipoib_of(const struct eng_port *port, const struct ifaddrs *all,
			      const char *label)
{
	const struct ifaddrs *i;

	for (i = all; i; i = i->ifa_next)
		if (label_of(label, i->ifa_name) && ipoib_of_port(port, i))
			return true;
	return false;
}

bool eng_ipv6_rail_usable(const struct in6_addr *a)
{
	return !IN6_IS_ADDR_UNSPECIFIED(a) && !IN6_IS_ADDR_LOOPBACK(a) &&
	       !IN6_IS_ADDR_LINKLOCAL(a) && !IN6_IS_ADDR_V4MAPPED(a) && !IN6_IS_ADDR_MULTICAST(a);
}

/* g's address as a RoCE v2 GID of family (AF_INET or AF_INET6) into *out; false if it is none. */
static bool gid_addr(const struct eng_gid *g, int family, union eng_sockaddr *out)
{
	struct in6_addr a;

	if (g->type != ENG_GID_ROCE_V2)
		return false;
	memcpy(&a, g->raw, sizeof(a));
	memset(out, 0, sizeof(*out));
	if (family == AF_INET && IN6_IS_ADDR_V4MAPPED(&a)) {
		out->in.sin_family = AF_INET;
		memcpy(&out->in.sin_addr, &a.s6_addr[12], sizeof(out->in.sin_addr));
		return true;
	}
	if (family != AF_INET6 || !eng_ipv6_rail_usable(&a))
		return false;
	out->in6.sin6_family = AF_INET6;
	out->in6.sin6_addr = a;
	return true;
}

/* i's address if it is one of family a rail may take (NULL: not). */
static const struct sockaddr *inet_of(const struct ifaddrs *i, int family)
{
	if (!i->ifa_addr || i->ifa_addr->sa_family != family)
		return NULL;
	if (family == AF_INET6 &&
	    !eng_ipv6_rail_usable(
		    &((const struct sockaddr_in6 *)(const void *)i->ifa_addr)->sin6_addr))
		return NULL;
	return i->ifa_addr;
}

/* The entry of ifa holding address a (NULL: none). */
static const struct ifaddrs *entry_of(const struct ifaddrs *ifa, const union eng_sockaddr *a)
{
	for (; ifa; ifa = ifa->ifa_next)
		if (inet_of(ifa, a->sa.sa_family) &&
		    eng__addr_same_subnet((const union eng_sockaddr *)(const void *)ifa->ifa_addr,
					  a, 128))
			return ifa;
	return NULL;
}

/* The prefix of address a by its interface's netmask (all 32 or 128 bits without one). */
static unsigned prefix_of(const struct sockaddr *a, const struct sockaddr *mask)
{
	bool v4 = a->sa_family == AF_INET;
	const uint8_t *m;
	unsigned n = 0;
	size_t k;

	if (!mask || mask->sa_family != a->sa_family)
		return v4 ? 32 : 128;
	m = v4 ? (const uint8_t *)&((const struct sockaddr_in *)(const void *)mask)->sin_addr
	       : ((const struct sockaddr_in6 *)(const void *)mask)->sin6_addr.s6_addr;
	for (k = 0; k < (v4 ? 4u : 16u); k++)
		n += (unsigned)__builtin_popcount(m[k]);
	return n;
}

/* The interface's address a, with the prefix of the entry's netmask. */
static void addr_fill(const struct sockaddr *a, const struct ifaddrs *entry,
		      struct eng_rail_addr *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(&out->addr, a, eng__addr_len(a));
	eng__addr_set_port(&out->addr.ss, 0);
	if (a->sa_family == AF_INET6)
		out->addr.in6.sin6_scope_id = 0;
	out->prefix = prefix_of(a, entry ? entry->ifa_netmask : NULL);
	eng__addr_ntop(&out->addr.sa, out->text, sizeof(out->text));
}

bool eng__ifa_rail_addr(const struct ifaddrs *i, int family, struct eng_rail_addr *out)
{
	if (!inet_of(i, family))
		return false;
	addr_fill(i->ifa_addr, i, out);
	return true;
}

static int roce_addr(const char *dev, const struct eng_port *port, const struct ifaddrs *ifa,
		     struct eng_rail_addr *out)
{
	static const int family[] = {AF_INET, AF_INET6};
	union eng_sockaddr a;
	size_t f, g;

	for (f = 0; f < RCP_ARRAY_SIZE(family); f++)
		for (g = 0; g < port->n_gids; g++)
			if (gid_addr(&port->gids[g], family[f], &a)) {
				addr_fill(&a.sa, entry_of(ifa, &a), out);
				return 0;
			}
	return rcp_err(-EADDRNOTAVAIL,
		       "rail %s:%u has no IPv4 or global IPv6 address (RoCE v2 GID); "
		       "give its netdev one",
		       dev, port->num);
}

static int ib_addr(const char *dev, const struct eng_port *port, const struct ifaddrs *ifa,
		   struct eng_rail_addr *out)
{
	static const int family[] = {AF_INET, AF_INET6};
	const struct ifaddrs *i;
	const char *ipoib;
	size_t f;

	for (f = 0; f < RCP_ARRAY_SIZE(family); f++)
		for (i = ifa; i; i = i->ifa_next)
			if (inet_of(i, family[f]) && label_is_ipoib_of(port, ifa, i->ifa_name)) {
				addr_fill(i->ifa_addr, i, out);
				return 0;
			}
	ipoib = eng__ipoib_netdev(port, ifa);
	if (ipoib)
		return rcp_err(-EADDRNOTAVAIL,
			       "rail %s:%u (InfiniBand) has no IPv4 or global IPv6 address: give "
			       "its IPoIB interface %s one (ip addr add ADDRESS/PREFIX dev %s)",
			       dev, port->num, ipoib, ipoib);
	return rcp_err(-EADDRNOTAVAIL,
		       "rail %s:%u (InfiniBand) has no IPoIB interface, which rdma_cm needs for "
		       "its address: load ib_ipoib (modprobe ib_ipoib) and give the interface "
		       "an IP address",
		       dev, port->num);
}

int eng__port_rail_addr(const char *dev, const struct eng_port *port, const struct ifaddrs *ifa,
			struct eng_rail_addr *out)
{
	return eng__port_is_ib(port) ? ib_addr(dev, port, ifa, out)
				     : roce_addr(dev, port, ifa, out);
}
