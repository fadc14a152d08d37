/*
 * engine.h - the RDMA engine's public interface.
 *
 * For now: discovery of RDMA devices and ports (railcp devices). The data
 * path (workers, stripes, credits) arrives with the engine issue.
 *
 * Threading: not thread-safe unless a function says so.
 */
#ifndef RAILCP_ENGINE_H
#define RAILCP_ENGINE_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum eng_gid_type {
	ENG_GID_IB,
	ENG_GID_ROCE_V1,
	ENG_GID_ROCE_V2,
};

struct eng_gid {
	uint32_t index;
	enum eng_gid_type type;
	uint8_t raw[16];
	char addr[46];             /* text form (IPv6 notation, IPv4-mapped for RoCE v2 over IPv4) */
	char netdev[IF_NAMESIZE];  /* "" when the GID has no netdev */
};

struct eng_port {
	unsigned num;                  /* 1-based, as verbs numbers ports */
	const char *state;             /* "ACTIVE", "DOWN", ... */
	bool active;
	const char *link_layer;        /* "InfiniBand", "Ethernet" */
	unsigned active_mtu;           /* bytes */
	unsigned width;                /* lanes; 0 when verbs reports an unknown width */
	double lane_gbps;              /* data rate of one lane; 0 when unknown */
	double gbps;                   /* width x lane rate */
	char netdev[IF_NAMESIZE];      /* netdev behind a RoCE port, else "" */
	size_t n_gids;
	struct eng_gid *gids;
};

struct eng_device {
	char name[64];
	char node_guid[20];            /* "xxxx:xxxx:xxxx:xxxx" */
	int numa_node;                 /* -1 when unknown */
	char numa_rule[256];           /* how numa_node was found */
	unsigned n_ports;
	struct eng_port *ports;
};

struct eng_device_list {
	size_t n;
	struct eng_device *dev;
};

/*
 * Open every RDMA device, read its ports and GID tables, close it again.
 * sysfs_root is "/sys" on a live machine. Returns -ENODEV, with a sentence,
 * when the host has no RDMA device.
 */
int eng_device_list_create(const char *sysfs_root, struct eng_device_list **list_out);

/* Accepts NULL. */
void eng_device_list_destroy(struct eng_device_list *list);

const char *eng_gid_type_str(enum eng_gid_type type);

#endif
