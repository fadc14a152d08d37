/*
 * loopback_dev.c - the loopback transport's device model: each rail a port
 * of one link layer with its GID table and the host's interfaces around
 * it, passed through railaddr.c as a real port and getifaddrs' list are,
 * so the engine's tests run the address code of either link layer.
 *
 * Rail "loop<N>" is a RoCE port: GIDs fe80::N (RoCE v1) and the IPv4-mapped
 * ::ffff:198.18.N.1 (RoCE v2) of netdev loopN, 198.18.N.1/24. Rail
 * "loopib<N>" is an InfiniBand port: one GID fe80::2:c903:N:1 (the subnet
 * prefix and a GUID, no IP address), its IPoIB interface ibN with a 20-byte
 * hardware address ending in that GID and 198.18.N.1/24, and before it an
 * Ethernet interface ethN with 198.19.N.1/16, as a host has beside its
 * fabric: only the IPoIB match may choose the address. Rail "loopv6<N>" is
 * a RoCE port on IPv6 alone: GIDs fe80::N (RoCE v1 and v2, link-local, which
 * a rail never takes) and 2001:2:0:N::1 (RoCE v2) of netdev loopv6N,
 * 2001:2:0:N::1/64 (in 2001:2::/48, kept for benchmarking by RFC 5180).
 * N < 256 in each.
 *
 * Threading: thread-safe (everything on the caller's stack).
 */
#include "engine/transport/device_int.h"
#include "engine/transport/loopback.h"

#include "common/common.h"
#include "engine/engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <stdio.h>
#include <string.h>

/* sockaddr_ll with room for an IPoIB address past its 8 bytes, as glibc's getifaddrs keeps it. */
struct model_ll {
	struct sockaddr_ll ll;
	unsigned char room[16];
};

struct model {
	struct eng_gid gid[3];
	struct eng_port port;
	struct ifaddrs ifa[4];
	struct sockaddr_in in[2], mask[2];
	struct sockaddr_in6 in6, mask6;
	struct model_ll hw[2];
	char eth[IF_NAMESIZE], ib[IF_NAMESIZE];
};

static void model_inet(struct ifaddrs *i, struct sockaddr_in *in, struct sockaddr_in *mask,
		       char *name, uint32_t addr, unsigned prefix)
{
	*in = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(addr)};
	*mask = (struct sockaddr_in){.sin_family = AF_INET,
				     .sin_addr.s_addr = htonl(~0u << (32 - prefix))};
	i->ifa_name = name;
	i->ifa_addr = (struct sockaddr *)(void *)in;
	i->ifa_netmask = (struct sockaddr *)(void *)mask;
}

static void model_link(struct ifaddrs *i, struct model_ll *hw, char *name, unsigned short type,
		       const unsigned char *addr, unsigned char len)
{
	memset(hw, 0, sizeof(*hw));
	hw->ll.sll_family = AF_PACKET;
	hw->ll.sll_hatype = type;
	hw->ll.sll_halen = len;
	memcpy((unsigned char *)hw + offsetof(struct sockaddr_ll, sll_addr), addr, len);
	i->ifa_name = name;
	i->ifa_addr = (struct sockaddr *)(void *)hw;
}

static void model_gid(struct eng_gid *g, unsigned index, enum eng_gid_type type,
		      const uint8_t raw[16])
{
	g->index = index;
	g->type = type;
	memcpy(g->raw, raw, sizeof(g->raw));
	inet_ntop(AF_INET6, raw, g->addr, sizeof(g->addr));
}

static void model_roce(struct model *m, unsigned n)
{
	uint8_t ll[16] = {0xfe, 0x80, [15] = (uint8_t)n};
	uint8_t v4[16] = {[10] = 0xff, 0xff, 198, 18, (uint8_t)n, 1};

	m->port.link_layer = "Ethernet";
	snprintf(m->eth, sizeof(m->eth), "loop%u", n);
	model_gid(&m->gid[0], 0, ENG_GID_ROCE_V1, ll);
	model_gid(&m->gid[1], 1, ENG_GID_ROCE_V2, v4);
	memcpy(m->gid[1].netdev, m->eth, sizeof(m->gid[1].netdev));
	m->port.n_gids = 2;
	model_inet(&m->ifa[0], &m->in[0], &m->mask[0], m->eth, 0xc6120001u | n << 8, 24);
}

static void model_roce6(struct model *m, unsigned n)
{
	uint8_t ll[16] = {0xfe, 0x80, [15] = (uint8_t)n};
	uint8_t v6[16] = {0x20, 0x01, 0, 2, 0, 0, 0, (uint8_t)n, [15] = 1};
	uint8_t mask[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

	m->port.link_layer = "Ethernet";
	snprintf(m->eth, sizeof(m->eth), "loopv6%u", n);
	model_gid(&m->gid[0], 0, ENG_GID_ROCE_V1, ll);
	model_gid(&m->gid[1], 1, ENG_GID_ROCE_V2, ll);
	model_gid(&m->gid[2], 2, ENG_GID_ROCE_V2, v6);
	memcpy(m->gid[2].netdev, m->eth, sizeof(m->gid[2].netdev));
	m->port.n_gids = 3;
	m->in6 = (struct sockaddr_in6){.sin6_family = AF_INET6};
	memcpy(m->in6.sin6_addr.s6_addr, v6, sizeof(v6));
	m->mask6 = (struct sockaddr_in6){.sin6_family = AF_INET6};
	memcpy(m->mask6.sin6_addr.s6_addr, mask, sizeof(mask));
	m->ifa[0].ifa_name = m->eth;
	m->ifa[0].ifa_addr = (struct sockaddr *)(void *)&m->in6;
	m->ifa[0].ifa_netmask = (struct sockaddr *)(void *)&m->mask6;
}

static void model_ib(struct model *m, unsigned n)
{
	const uint8_t gid[16] = {0xfe, 0x80, [8] = 0, 2, 0xc9, 3, 0, (uint8_t)n, 0, 1};
	unsigned char ipoib[20] = {0x00, 0x00, 0x10, 0x48}, mac[6] = {0x52, 0x54, 0, 0, 0, n};

	m->port.link_layer = "InfiniBand";
	snprintf(m->eth, sizeof(m->eth), "eth%u", n);
	snprintf(m->ib, sizeof(m->ib), "ib%u", n);
	model_gid(&m->gid[0], 0, ENG_GID_IB, gid);
	m->port.n_gids = 1;
	memcpy(ipoib + 4, gid, sizeof(gid));
	model_link(&m->ifa[0], &m->hw[0], m->eth, ARPHRD_ETHER, mac, sizeof(mac));
	model_inet(&m->ifa[1], &m->in[0], &m->mask[0], m->eth, 0xc6130001u | n << 8, 16);
	model_link(&m->ifa[2], &m->hw[1], m->ib, ARPHRD_INFINIBAND, ipoib, sizeof(ipoib));
	model_inet(&m->ifa[3], &m->in[1], &m->mask[1], m->ib, 0xc6120001u | n << 8, 24);
}

int eng__loop_rail_addr(const char *dev, unsigned port, struct eng_rail_addr *out)
{
	struct model m;
	unsigned n, i;
	char tail;
	bool ib = sscanf(dev, "loopib%u%c", &n, &tail) == 1;
	bool v6 = !ib && sscanf(dev, "loopv6%u%c", &n, &tail) == 1;

	if ((!ib && !v6 && sscanf(dev, "loop%u%c", &n, &tail) != 1) || n > 255)
		return rcp_err(-ENODEV, "rail %s:%u is not a loopback rail", dev, port);
	memset(&m, 0, sizeof(m));
	m.port.num = port;
	m.port.state = "ACTIVE";
	m.port.active = true;
	m.port.active_mtu = 4096;
	m.port.gids = m.gid;
	if (ib)
		model_ib(&m, n);
	else if (v6)
		model_roce6(&m, n);
	else
		model_roce(&m, n);
	for (i = 0; i + 1 < RCP_ARRAY_SIZE(m.ifa) && m.ifa[i + 1].ifa_name; i++)
		m.ifa[i].ifa_next = &m.ifa[i + 1];
	return eng__port_rail_addr(dev, &m.port, m.ifa, out);
}
