/*
 * rails.c - the IP address of each rail, and which receiver rail each
 * sender stripe should use.
 *
 * rdma_cm needs an address per rail. A RoCE port carries its netdev's IPv4
 * address as an IPv4-mapped RoCE v2 GID, so the device listing already has
 * it; the prefix length comes from the netdev (getifaddrs). Rails are paired
 * by subnet: separate rails of a multi-rail fabric sit on separate subnets,
 * and a stripe can only reach a receiver rail on its own. Where no subnet
 * matches (routed fabrics) the least loaded receiver rail is used.
 *
 * Threading: thread-safe.
 */
#include "engine/rails.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <string.h>

static bool gid_is_ipv4(const struct eng_gid *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return g->type == ENG_GID_ROCE_V2 && memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

static unsigned prefix_of(struct in_addr a)
{
	struct ifaddrs *ifa, *i;
	unsigned bits = 32;

	if (getifaddrs(&ifa) != 0)
		return bits;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_netmask && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a.s_addr) {
			bits = (unsigned)__builtin_popcount(
				((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr);
			break;
		}
	freeifaddrs(ifa);
	return bits;
}

int eng__rail_addr(const struct eng_device_list *list, const char *dev, unsigned port,
		   struct eng_rail_addr *out)
{
	size_t d, g;

	for (d = 0; d < list->n; d++) {
		const struct eng_device *dv = &list->dev[d];

		if (strcmp(dv->name, dev) != 0 || port == 0 || port > dv->n_ports)
			continue;
		for (g = 0; g < dv->ports[port - 1].n_gids; g++) {
			const struct eng_gid *gid = &dv->ports[port - 1].gids[g];

			if (!gid_is_ipv4(gid))
				continue;
			memset(out, 0, sizeof(*out));
			out->addr.sin_family = AF_INET;
			memcpy(&out->addr.sin_addr, gid->raw + 12, 4);
			out->prefix = prefix_of(out->addr.sin_addr);
			inet_ntop(AF_INET, &out->addr.sin_addr, out->text, sizeof(out->text));
			return 0;
		}
		return rcp_err(-EADDRNOTAVAIL, "rail %s:%u has no IPv4 address (RoCE v2 GID); "
					       "give its netdev an IPv4 address", dev, port);
	}
	return rcp_err(-ENODEV, "rail %s:%u is not a port of this host", dev, port);
}

static bool same_subnet(struct in_addr a, struct in_addr b, unsigned prefix)
{
	uint32_t mask = prefix == 0 ? 0 : htonl(~0u << (32 - (prefix > 32 ? 32 : prefix)));

	return (a.s_addr & mask) == (b.s_addr & mask);
}

unsigned eng__rail_pair(const struct eng_rail_addr *from, const struct eng_rail_addr *to,
			unsigned n_to, unsigned *load)
{
	unsigned i, best = 0;
	bool best_match = false;

	for (i = 0; i < n_to; i++) {
		bool match = same_subnet(from->addr.sin_addr, to[i].addr.sin_addr, from->prefix);

		if ((match && !best_match) || (match == best_match && load[i] < load[best])) {
			best = i;
			best_match = match;
		}
	}
	load[best]++;
	return best;
}
