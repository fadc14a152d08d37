/*
 * device_int.h - conversions from verbs port attributes, the listing the
 * process keeps, and a port's rail address (railaddr.c), private to
 * engine/transport/ and exposed here so unit tests can pin them without a
 * device.
 */
#ifndef RAILCP_ENGINE_DEVICE_INT_H
#define RAILCP_ENGINE_DEVICE_INT_H

#if !defined(ENG_LAYER_TRANSPORT) && !defined(RAILCP_TESTS)
#error "engine/transport/device_int.h is private to engine/transport/ and the tests"
#endif

#include <stdbool.h>
#include <stdint.h>

/* Lanes for an ibv_port_attr.active_width code; 0 if the code is unknown. */
unsigned eng__width_lanes(uint8_t active_width);

/*
 * Data rate of one lane in Gb/s for an ibv_port_attr.active_speed code
 * (SDR 2.5 ... XDR 200); 0 if the code is unknown.
 */
double eng__lane_gbps(uint8_t active_speed);

/* Bytes for an enum ibv_mtu value; 0 if unknown. */
unsigned eng__mtu_bytes(int mtu);

struct eng_device_list;

/*
 * A copy of this process's last listing of /sys (eng_device_list_create), or
 * a new listing when there is none: the listing the plan was made from, so
 * a session reads its rails' addresses without opening every device again.
 * Thread-safe. Free it with eng_device_list_destroy.
 */
int eng__device_list_kept(struct eng_device_list **list_out);

/* ---- railaddr.c: a rail's address on either link layer ---- */

struct eng_port;
struct eng_rail_addr;
struct ifaddrs;

/* Whether port's link layer is InfiniBand. */
bool eng__port_is_ib(const struct eng_port *port);

/*
 * The IPoIB interface of an InfiniBand port: the first of ifa's (a
 * getifaddrs list) whose hardware address carries one of port's GIDs, as
 * the kernel's rdma_cm matches them; NULL when there is none.
 */
const char *eng__ipoib_netdev(const struct eng_port *port, const struct ifaddrs *ifa);

/*
 * The address by which rdma_cm binds port (of device dev) as a rail: on
 * Ethernet (RoCE) the address of a RoCE v2 GID, on InfiniBand the first
 * address of its IPoIB interfaces; IPv4 where there is one, else global
 * IPv6 (railaddr.c); the prefix is that address's interface's in ifa. 0,
 * or -EADDRNOTAVAIL with a sentence naming the fix.
 */
int eng__port_rail_addr(const char *dev, const struct eng_port *port, const struct ifaddrs *ifa,
			struct eng_rail_addr *out);

/*
 * Whether i holds an address of family (AF_INET, AF_INET6) a rail may take
 * (IPv6: global, neither link-local nor mapped); if so, *out is it, with
 * its prefix from i's netmask.
 */
bool eng__ifa_rail_addr(const struct ifaddrs *i, int family, struct eng_rail_addr *out);

#endif
