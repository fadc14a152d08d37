/*
 * doctor.h - private to cli/: `railcp doctor [HOST]`, the pieces of it.
 *
 *   doctor_sys.c    reads what the checks need: sysfs and procfs files under
 *                   a root directory ("" on a live host, a fixture tree in
 *                   tests), and the live host's devices, addresses, limits
 *   doctor_check.c  the checks: pure functions of a struct cli_doctor, each
 *                   problem one sentence and the command that fixes it
 *   doctor_out.c    the report for people and --json
 *   doctor_peer.c   with HOST: one tiny bench session per rail
 *   cmd_doctor.c    the command line
 *
 * Threading: none of it is thread-safe; the command runs on one thread.
 */
#ifndef RAILCP_CLI_DOCTOR_H
#define RAILCP_CLI_DOCTOR_H

#include <jansson.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "topology/topology.h"

#define DOC_MAX_GIDS 32	  /* shown per port; a port with more is cut there */
#define DOC_MAX_ADDRS 8	  /* IPv4 addresses per netdev */
#define DOC_MAX_PROBS 128 /* problems kept; more are counted, not kept */
/*
 * Bytes of headers around a RoCE v2 packet's payload that the netdev's MTU
 * must also carry (IPv4/IPv6, UDP, BTH, RETH, ICRC): Soft-RoCE reserves 80,
 * so a port's active MTU is the largest IB MTU <= netdev MTU - 80.
 */
#define DOC_ROCE_HDR_BYTES 80

struct doc_gid {
	unsigned index;
	char gid[40];  /* as sysfs prints it: "0000:0000:0000:0000:0000:ffff:c612:0001" */
	char type[16]; /* "IB", "RoCE v1", "RoCE v2" */
	int ipver;     /* 4, 6, or 0 for a GID that is no IP address */
	char ip[46];   /* "198.18.0.1", "fe80::...", "" */
	char ndev[IF_NAMESIZE];
};

struct doc_addr {
	uint32_t addr; /* host byte order */
	unsigned prefix;
	char text[24]; /* "198.18.0.1/24" */
};

/* Kernel settings, as the kernel applies them to a netdev: max(all, the netdev's); -1 unknown. */
struct doc_sysctl {
	int arp_ignore, arp_announce, rp_filter;
};

struct doc_rail {
	char dev[64];
	unsigned port;
	bool planned; /* in the plan copies would use */
	char state[16];
	bool active;
	char link_layer[16];
	unsigned active_mtu;	  /* bytes; 0 unknown */
	char netdev[IF_NAMESIZE]; /* "" for none (InfiniBand without IPoIB) */
	int netdev_mtu;		  /* -1 unknown */
	char operstate[16];	  /* the netdev's: "up", "down", ... */
	size_t n_gids;
	struct doc_gid gid[DOC_MAX_GIDS];
	size_t n_addrs;
	struct doc_addr addr[DOC_MAX_ADDRS]; /* IPv4 */
	bool ipv6; /* the netdev has a global IPv6 address, which a rail takes without IPv4 */
	struct doc_sysctl sys;
};

struct doc_node {
	int id;
	uint64_t huge_2m_total, huge_2m_free;
	uint64_t huge_1g_total, huge_1g_free;
	uint64_t pool_bytes; /* the plan's worker pool on this node; 0 none */
};

struct doc_problem {
	bool hurts;	/* a copy would fail or slow down: exit status 1 */
	char what[80];	/* "rxe1:1", "memlock", "node 0" */
	char text[320]; /* one sentence */
	char fix[256];	/* the command that fixes it, "" when none */
};

/* Per rail, with HOST: what a one-chunk bench session over it saw. */
struct doc_peer_rail {
	char rail[80]; /* this end's rail, as the engine reports it */
	char peer[80]; /* the server's rail(s) it was paired with */
	unsigned mtu, peer_mtu;
	/* one 4 KiB write posted until its credit came back: the least and the median of 3 */
	double rtt_ms, rtt_ms_median;
	bool ok;
	char error[320];
};

struct cli_doctor {
	bool no_device;			  /* the host has no RDMA device at all */
	char suggest_netdev[IF_NAMESIZE]; /* then: an Ethernet netdev for Soft-RoCE, or "" */
	size_t n_rails;
	struct doc_rail rail[TOPO_MAX_RAILS];
	char plan_error[320]; /* why there is no plan, "" when there is */
	size_t n_nodes;
	struct doc_node node[TOPO_MAX_NODES];
	uint64_t memlock_limit; /* soft RLIMIT_MEMLOCK; UINT64_MAX unlimited */
	bool lock_any;		/* CAP_IPC_LOCK */
	uint64_t memlock_need;	/* the default plan's pools */
	/* with HOST */
	const char *host;
	size_t n_peer;
	struct doc_peer_rail peer[TOPO_MAX_RAILS];
	/* the checks' findings */
	size_t n_probs, n_probs_lost;
	struct doc_problem prob[DOC_MAX_PROBS];
};

/* ---- doctor_sys.c ---- */

/*
 * Read the GID table of dev's port from root/sys/class/infiniband/DEV/ports/
 * PORT/gids, gid_attrs/types and gid_attrs/ndevs, leaving out unused (all
 * zero) entries as show_gids does. 0, or -errno with a sentence when the
 * port's gids directory cannot be read.
 */
int cli_doctor_read_gids(const char *root, struct doc_rail *r);

/* The netdev's MTU and operstate from root/sys/class/net/IF; -errno with a sentence. */
int cli_doctor_read_netdev(const char *root, struct doc_rail *r);

/* net.ipv4.conf.{all,IF}.* from root/proc/sys, as the kernel combines them (doc_sysctl). */
void cli_doctor_read_sysctl(const char *root, const char *ifname, struct doc_sysctl *out);

/*
 * Every NUMA node's 2 MiB and 1 GiB hugepages, from
 * root/sys/devices/system/node/nodeN/hugepages; 0 (and no nodes) on a host
 * without that directory.
 */
int cli_doctor_read_nodes(const char *root, struct cli_doctor *d);

/*
 * The live host: every device port (eng_device_list), each one's GIDs,
 * netdev, IPv4 addresses and kernel settings, the nodes' hugepages, the
 * memlock limit, and which rails and pools the plan (NULL: none could be
 * made) uses. d->no_device when there is no device. -errno with a sentence
 * only for what stops the report itself (no memory).
 */
int cli_doctor_gather(struct cli_doctor *d, const struct topo_plan *plan);

/* ---- doctor_check.c ---- */

/* Run every check on d, appending to d->prob. */
void cli_doctor_check(struct cli_doctor *d);

/* Whether a problem found would hurt a copy (the exit status 1). */
bool cli_doctor_hurts(const struct cli_doctor *d);

/* Add a problem (kept while there is room, else counted). */
void cli_doctor_problem(struct cli_doctor *d, bool hurts, const char *what, const char *fix,
			const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- doctor_out.c ---- */

void cli_doctor_print(FILE *f, const struct cli_doctor *d);
json_t *cli_doctor_json(const struct cli_doctor *d);

#endif
