/*
 * railaddr.c - the IPv4 address by which rdma_cm binds a rail, for either
 * link layer, as pure functions of a port (from the device listing) and an
 * interface list (getifaddrs'), so that the verbs transport and the
 * loopback's device model take the same path.
 *
 * RoCE (link layer Ethernet): the port carries its netdev's IPv4 address as
 * an IPv4-mapped RoCE v2 GID. InfiniBand: no GID is an IP address (a GID is
 * the subnet prefix and the port's GUID, and has no netdev); the address is
 * the port's IPoIB interface's, the netdev whose 20-byte hardware address
 * is 4 bytes of flags and queue pair number and then one of the port's
 * GIDs, which is how the kernel's rdma_cm maps an IPoIB address to its
 * device and port. A partition's child interface (ib0.8001) carries the
 * same GID: the first IPv4 address getifaddrs lists on any of them (under
 * its label, "ib0:rail", if it has one) is taken. Either way the prefix is
 * that address's interface's.
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

static bool gid_is_ipv4(const struct eng_gid *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return g->type == ENG_GID_ROCE_V2 && memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

static const struct sockaddr_in *inet_of(const struct ifaddrs *i)
{
	return i->ifa_addr && i->ifa_addr->sa_family == AF_INET
		       ? (const struct sockaddr_in *)(const void *)i->ifa_addr
		       : NULL;
}

/* The entry of ifa holding IPv4 address a (NULL: none). */
static const struct ifaddrs *entry_of(const struct ifaddrs *ifa, struct in_addr a)
{
	for (; ifa; ifa = ifa->ifa_next)
		if (inet_of(ifa) && inet_of(ifa)->sin_addr.s_addr == a.s_addr)
			return ifa;
	return NULL;
}

/* The interface's address a, its prefix from the entry's netmask (32 without one). */
static void addr_fill(struct in_addr a, const struct ifaddrs *entry, struct eng_rail_addr *out)
{
	const struct sockaddr_in *mask =
		entry && entry->ifa_netmask ? (const void *)entry->ifa_netmask : NULL;

	memset(out, 0, sizeof(*out));
	out->addr.sin_family = AF_INET;
	out->addr.sin_addr = a;
	out->prefix = mask ? (unsigned)__builtin_popcount(mask->sin_addr.s_addr) : 32;
	inet_ntop(AF_INET, &out->addr.sin_addr, out->text, sizeof(out->text));
}

static int roce_addr(const char *dev, const struct eng_port *port, const struct ifaddrs *ifa,
		     struct eng_rail_addr *out)
{
	struct in_addr a;
	size_t g;

	for (g = 0; g < port->n_gids; g++)
		if (gid_is_ipv4(&port->gids[g])) {
			memcpy(&a, port->gids[g].raw + 12, sizeof(a));
			addr_fill(a, entry_of(ifa, a), out);
			return 0;
		}
	return rcp_err(-EADDRNOTAVAIL,
		       "rail %s:%u has no IPv4 address (RoCE v2 GID); "
		       "give its netdev an IPv4 address",
		       dev, port->num);
}

static int ib_addr(const char *dev, const struct eng_port *port, const struct ifaddrs *ifa,
		   struct eng_rail_addr *out)
{
	const struct ifaddrs *i;
	const char *ipoib;

	for (i = ifa; i; i = i->ifa_next)
		if (inet_of(i) && label_is_ipoib_of(port, ifa, i->ifa_name)) {
			addr_fill(inet_of(i)->sin_addr, i, out);
			return 0;
		}
	ipoib = eng__ipoib_netdev(port, ifa);
	if (ipoib)
		return rcp_err(-EADDRNOTAVAIL,
			       "rail %s:%u (InfiniBand) has no IPv4 address: give its IPoIB "
			       "interface %s one (ip addr add ADDRESS/PREFIX dev %s)",
			       dev, port->num, ipoib, ipoib);
	return rcp_err(-EADDRNOTAVAIL,
		       "rail %s:%u (InfiniBand) has no IPoIB interface, which rdma_cm needs for "
		       "its address: load ib_ipoib (modprobe ib_ipoib) and give the interface "
		       "an IPv4 address",
		       dev, port->num);
}

int eng__port_rail_addr(const char *dev, const struct eng_port *port, const struct ifaddrs *ifa,
			struct eng_rail_addr *out)
{
	return eng__port_is_ib(port) ? ib_addr(dev, port, ifa, out)
				     : roce_addr(dev, port, ifa, out);
}
