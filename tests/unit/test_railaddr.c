/*
 * test_railaddr.c - a rail's address on either link layer (railaddr.c),
 * over ports and interface lists built here as the device listing and
 * getifaddrs give them: a RoCE port by its IPv4-mapped RoCE v2 GID, or
 * without one by its global IPv6 GID (never a link-local one); an
 * InfiniBand port by its IPoIB interface, the one whose 20-byte hardware
 * address carries the port's GID, past an Ethernet interface, another
 * port's IPoIB interface and an Ethernet address that holds the same bytes;
 * a partition's child interface; an address with a label (ib0:rail); and
 * the two sentences when IPoIB is missing or has no address; IPoIB with
 * IPv6 alone. Then the loopback's device model, which sessions run through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/transport/device_int.h"
#include "engine/transport/loopback.h"
#include "common/common.h"
#include "engine/engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <string.h>

/* The GIDs of two InfiniBand ports: subnet prefix fe80::, then each port's GUID. */
static const uint8_t GID_A[16] = {0xfe, 0x80, [8] = 0, 2, 0xc9, 3, 0, 0xa, 0xb, 0xc};
static const uint8_t GID_B[16] = {0xfe, 0x80, [8] = 0, 2, 0xc9, 3, 0, 0xa, 0xb, 0xd};

/* An interface list of up to 8 entries, in the caller's memory, as getifaddrs links it. */
struct iflist {
	struct ifaddrs ifa[8];
	struct sockaddr_in in[8], mask[8];
	struct sockaddr_in6 in6[8], mask6[8];
	struct {
		struct sockaddr_ll ll;
		unsigned char room[16]; /* glibc's room for a 20-byte address */
	} hw[8];
	unsigned n;
};

static struct ifaddrs *add(struct iflist *l, const char *name)
{
	struct ifaddrs *i = &l->ifa[l->n];

	assert_true(l->n < 8);
	if (l->n)
		l->ifa[l->n - 1].ifa_next = i;
	i->ifa_name = (char *)name;
	l->n++;
	return i;
}

static void add_inet(struct iflist *l, const char *name, const char *addr, unsigned prefix)
{
	unsigned k = l->n;
	struct ifaddrs *i = add(l, name);

	l->in[k].sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, addr, &l->in[k].sin_addr), 1);
	l->mask[k].sin_family = AF_INET;
	l->mask[k].sin_addr.s_addr = htonl(prefix ? ~0u << (32 - prefix) : 0);
	i->ifa_addr = (struct sockaddr *)&l->in[k];
	i->ifa_netmask = (struct sockaddr *)&l->mask[k];
}

static void add_inet6(struct iflist *l, const char *name, const char *addr, unsigned prefix)
{
	unsigned k = l->n, b;
	struct ifaddrs *i = add(l, name);

	l->in6[k].sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, addr, &l->in6[k].sin6_addr), 1);
	l->mask6[k].sin6_family = AF_INET6;
	for (b = 0; b < prefix; b++)
		l->mask6[k].sin6_addr.s6_addr[b / 8] |= (uint8_t)(0x80u >> (b % 8));
	i->ifa_addr = (struct sockaddr *)&l->in6[k];
	i->ifa_netmask = (struct sockaddr *)&l->mask6[k];
}

/* A RoCE v2 GID of address text (IPv6 notation). */
static struct eng_gid v2_gid(const char *text)
{
	struct eng_gid g = {.type = ENG_GID_ROCE_V2};

	assert_int_equal(inet_pton(AF_INET6, text, g.raw), 1);
	return g;
}

/* A link-layer entry: type and address bytes (an IPoIB one: 4 bytes of QPN, then the GID). */
static void add_link(struct iflist *l, const char *name, unsigned short type, const uint8_t *addr,
		     unsigned char len)
{
	unsigned k = l->n;
	struct ifaddrs *i = add(l, name);

	assert_true(len <= 24);
	l->hw[k].ll.sll_family = AF_PACKET;
	l->hw[k].ll.sll_hatype = type;
	l->hw[k].ll.sll_halen = len;
	memcpy((unsigned char *)&l->hw[k] + offsetof(struct sockaddr_ll, sll_addr), addr, len);
	i->ifa_addr = (struct sockaddr *)&l->hw[k];
}

static void add_ipoib(struct iflist *l, const char *name, const uint8_t gid[16])
{
	uint8_t hw[20] = {0x00, 0x00, 0x10, 0x48};

	memcpy(hw + 4, gid, 16);
	add_link(l, name, ARPHRD_INFINIBAND, hw, sizeof(hw));
}

static struct eng_port ib_port(struct eng_gid *g, const uint8_t raw[16])
{
	memset(g, 0, sizeof(*g));
	g->type = ENG_GID_IB;
	memcpy(g->raw, raw, 16);
	return (struct eng_port){.num = 1, .link_layer = "InfiniBand", .n_gids = 1, .gids = g};
}

static void test_roce_port_takes_its_v2_gids_address_and_its_netdevs_prefix(void **state)
{
	struct eng_gid g[2] = {
		{.type = ENG_GID_ROCE_V1, .raw = {0xfe, 0x80, [15] = 1}},
		{.type = ENG_GID_ROCE_V2, .raw = {[10] = 0xff, 0xff, 198, 18, 0, 1}}};
	struct eng_port p = {.num = 1, .link_layer = "Ethernet", .n_gids = 2, .gids = g};
	struct iflist l = {0};
	struct eng_rail_addr a;

	(void)state;
	add_inet(&l, "eth0", "192.0.2.7", 24);
	add_inet(&l, "eth1", "198.18.0.1", 20);
	assert_int_equal(eng__port_rail_addr("rxe0", &p, l.ifa, &a), 0);
	assert_string_equal(a.text, "198.18.0.1");
	assert_int_equal(a.prefix, 20);
	assert_int_equal(a.addr.sa.sa_family, AF_INET);
	/* a RoCE port without an IPv4 or global IPv6 GID is refused */
	p.n_gids = 1;
	assert_int_equal(eng__port_rail_addr("rxe0", &p, l.ifa, &a), -EADDRNOTAVAIL);
	assert_non_null(strstr(rcp_err_msg(-EADDRNOTAVAIL),
			       "rail rxe0:1 has no IPv4 or global IPv6 address"));
}

/*
 * IPv6: a RoCE port without IPv4 takes its global IPv6 GID, with the prefix
 * of the interface entry holding it, past link-local v2 GIDs (every RoCE
 * port has them); with an IPv4 GID as well, IPv4 wins, in either order.
 */
static void test_roce_port_without_ipv4_takes_its_global_ipv6_gid(void **state)
{
	struct eng_gid g[4] = {v2_gid("fe80::5054:ff:fe12:3401"), v2_gid("2001:2:0:1::a"),
			       v2_gid("::ffff:198.18.1.1"), v2_gid("2001:2:0:9::a")};
	struct eng_port p = {.num = 1, .link_layer = "Ethernet", .n_gids = 2, .gids = g};
	struct iflist l = {0};
	struct eng_rail_addr a;

	(void)state;
	add_inet6(&l, "eth0", "2001:2:0:9::a", 64);
	add_inet6(&l, "eth1", "fe80::5054:ff:fe12:3401", 64);
	add_inet6(&l, "eth1", "2001:2:0:1::a", 56);
	add_inet(&l, "eth1", "198.18.1.1", 24);
	assert_int_equal(eng__port_rail_addr("rxe1", &p, l.ifa, &a), 0);
	assert_int_equal(a.addr.sa.sa_family, AF_INET6);
	assert_string_equal(a.text, "2001:2:0:1::a");
	assert_int_equal(a.prefix, 56);
	assert_int_equal(a.addr.in6.sin6_port, 0);
	p.n_gids = 4; /* an IPv4 GID after it: IPv4 is taken */
	assert_int_equal(eng__port_rail_addr("rxe1", &p, l.ifa, &a), 0);
	assert_int_equal(a.addr.sa.sa_family, AF_INET);
	assert_string_equal(a.text, "198.18.1.1");
	/* link-local alone is no address for a rail */
	p.n_gids = 1;
	assert_int_equal(eng__port_rail_addr("rxe1", &p, l.ifa, &a), -EADDRNOTAVAIL);
	/* a global GID no interface lists takes all 128 bits */
	g[1] = v2_gid("2001:2:0:7::a");
	p.n_gids = 2;
	assert_int_equal(eng__port_rail_addr("rxe1", &p, l.ifa, &a), 0);
	assert_string_equal(a.text, "2001:2:0:7::a");
	assert_int_equal(a.prefix, 128);
}

/* IPoIB with a global IPv6 address alone: the IB rail takes it, not the link-local one. */
static void test_ib_port_with_ipv6_ipoib_takes_its_global_address(void **state)
{
	struct eng_gid g;
	struct eng_port p = ib_port(&g, GID_A);
	struct iflist l = {0};
	struct eng_rail_addr a;

	(void)state;
	add_inet6(&l, "eth0", "2001:2:0:5::1", 64);
	add_ipoib(&l, "ib0", GID_A);
	add_inet6(&l, "ib0", "fe80::2:c903:a:b0c", 64);
	add_inet6(&l, "ib0", "2001:2:0:3::1", 64);
	assert_int_equal(eng__port_rail_addr("mlx5_0", &p, l.ifa, &a), 0);
	assert_int_equal(a.addr.sa.sa_family, AF_INET6);
	assert_string_equal(a.text, "2001:2:0:3::1");
	assert_int_equal(a.prefix, 64);
	add_inet(&l, "ib0", "10.1.0.1", 16); /* an IPv4 address as well: IPv4 wins */
	assert_int_equal(eng__port_rail_addr("mlx5_0", &p, l.ifa, &a), 0);
	assert_string_equal(a.text, "10.1.0.1");
}

static void test_ib_port_takes_its_ipoib_interfaces_address(void **state)
{
	struct eng_gid g;
	struct eng_port p = ib_port(&g, GID_A);
	const uint8_t mac[6] = {0x52, 0x54, 0, 0, 0, 1};
	uint8_t lookalike[20] = {0};
	struct iflist l = {0};
	struct eng_rail_addr a;

	(void)state;
	/* before it: an Ethernet interface, one whose (odd) address holds the GID, another port's
	 */
	add_link(&l, "eth0", ARPHRD_ETHER, mac, sizeof(mac));
	add_inet(&l, "eth0", "192.0.2.7", 24);
	memcpy(lookalike + 4, GID_A, 16);
	add_link(&l, "odd0", ARPHRD_ETHER, lookalike, sizeof(lookalike));
	add_inet(&l, "odd0", "192.0.3.7", 24);
	add_ipoib(&l, "ib1", GID_B);
	add_inet(&l, "ib1", "10.1.0.1", 16);
	add_ipoib(&l, "ib0", GID_A);
	add_inet(&l, "ib0", "10.0.0.1", 24);
	assert_string_equal(eng__ipoib_netdev(&p, l.ifa), "ib0");
	assert_true(eng__port_is_ib(&p));
	assert_int_equal(eng__port_rail_addr("mlx5_0", &p, l.ifa, &a), 0);
	assert_string_equal(a.text, "10.0.0.1");
	assert_int_equal(a.prefix, 24);
	/* the other port's is its own */
	p = ib_port(&g, GID_B);
	assert_int_equal(eng__port_rail_addr("mlx5_1", &p, l.ifa, &a), 0);
	assert_string_equal(a.text, "10.1.0.1");
	assert_int_equal(a.prefix, 16);
}

static void test_ib_partition_child_carries_the_ports_gid(void **state)
{
	struct eng_gid g;
	struct eng_port p = ib_port(&g, GID_A);
	struct iflist l = {0};
	struct eng_rail_addr a;

	(void)state;
	add_ipoib(&l, "ib0", GID_A); /* the parent, no IPv4 address */
	add_ipoib(&l, "ib0.8001", GID_A);
	add_inet(&l, "ib0.8001", "10.8.0.1", 24);
	assert_int_equal(eng__port_rail_addr("mlx5_0", &p, l.ifa, &a), 0);
	assert_string_equal(a.text, "10.8.0.1");
	assert_string_equal(eng__ipoib_netdev(&p, l.ifa), "ib0");
}

static void test_ib_address_with_a_label_is_its_interfaces(void **state)
{
	struct eng_gid g;
	struct eng_port p = ib_port(&g, GID_A);
	struct iflist l = {0};
	struct eng_rail_addr a;

	(void)state;
	add_ipoib(&l, "ib0", GID_A);
	add_inet(&l, "ib0x", "10.7.0.1", 24);	  /* another interface, not a label of ib0 */
	add_inet(&l, "ib0:rail", "10.9.0.1", 24); /* ip addr add ... dev ib0 label ib0:rail */
	assert_int_equal(eng__port_rail_addr("mlx5_0", &p, l.ifa, &a), 0);
	assert_string_equal(a.text, "10.9.0.1");
}

static void test_ib_port_without_ipoib_or_its_address_says_what_to_do(void **state)
{
	struct eng_gid g;
	struct eng_port p = ib_port(&g, GID_A);
	struct iflist l = {0};
	struct eng_rail_addr a;
	int err;

	(void)state;
	add_inet(&l, "eth0", "192.0.2.7", 24);
	add_ipoib(&l, "ib1", GID_B);
	add_inet(&l, "ib1", "10.1.0.1", 16);
	assert_null(eng__ipoib_netdev(&p, l.ifa));
	err = eng__port_rail_addr("mlx5_0", &p, l.ifa, &a);
	assert_int_equal(err, -EADDRNOTAVAIL);
	assert_string_equal(
		rcp_err_msg(err),
		"rail mlx5_0:1 (InfiniBand) has no IPoIB interface, which rdma_cm needs "
		"for its address: load ib_ipoib (modprobe ib_ipoib) and give the "
		"interface an IP address");
	add_ipoib(&l, "ib0", GID_A);
	err = eng__port_rail_addr("mlx5_0", &p, l.ifa, &a);
	assert_int_equal(err, -EADDRNOTAVAIL);
	assert_string_equal(rcp_err_msg(err),
			    "rail mlx5_0:1 (InfiniBand) has no IPv4 or global IPv6 address: give "
			    "its IPoIB interface ib0 one (ip addr add ADDRESS/PREFIX dev ib0)");
}

/* The loopback's device model goes through the same code: loopibN past its ethN decoy. */
static void test_loopback_model_has_roce_and_infiniband_rails(void **state)
{
	struct eng_rail_addr a;

	(void)state;
	assert_int_equal(eng__loop_rail_addr("loopib3", 1, &a), 0);
	assert_string_equal(a.text, "198.18.3.1");
	assert_int_equal(a.prefix, 24);
	assert_int_equal(eng__loop_rail_addr("loop4", 1, &a), 0);
	assert_string_equal(a.text, "198.18.4.1");
	assert_int_equal(a.prefix, 24);
	assert_int_equal(eng__loop_rail_addr("loopv62", 1, &a), 0);
	assert_string_equal(a.text, "2001:2:0:2::1");
	assert_int_equal(a.prefix, 64);
	assert_int_equal(eng__loop_rail_addr("loopib256", 1, &a), -ENODEV);
	assert_int_equal(eng__loop_rail_addr("loopx1", 1, &a), -ENODEV);
	assert_string_equal(rcp_err_msg(-ENODEV), "rail loopx1:1 is not a loopback rail");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roce_port_takes_its_v2_gids_address_and_its_netdevs_prefix),
		cmocka_unit_test(test_roce_port_without_ipv4_takes_its_global_ipv6_gid),
		cmocka_unit_test(test_ib_port_with_ipv6_ipoib_takes_its_global_address),
		cmocka_unit_test(test_ib_port_takes_its_ipoib_interfaces_address),
		cmocka_unit_test(test_ib_partition_child_carries_the_ports_gid),
		cmocka_unit_test(test_ib_address_with_a_label_is_its_interfaces),
		cmocka_unit_test(test_ib_port_without_ipoib_or_its_address_says_what_to_do),
		cmocka_unit_test(test_loopback_model_has_roce_and_infiniband_rails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
