/*
 * topology.h - where things are, and where railcp puts its work.
 *
 * The only module that reads hwloc, libnuma and the sysfs device tree.
 *
 *   machine  NUMA nodes (allowed CPUs, memory, hugepages, distances) and
 *            rails (RDMA ports), from hwloc on this host or an hwloc XML file.
 *            On this host the rails come from the caller (engine/ owns verbs),
 *            from an XML file they come from hwloc's OpenFabrics OS devices.
 *   plan     a pure function of a machine and the user's options: one worker
 *            per used NUMA node, its CPUs, rails, QPs and buffer size.
 *   profile  a plan saved as text and checked against a machine when loaded.
 *   pool     a worker's node-local buffer pool (hugepages when reserved).
 *
 * All structures are plain data with fixed-size arrays, so a plan can be
 * copied, compared and built in tests without hwloc or a device.
 *
 * Threading: every function is thread-safe unless it says otherwise (none
 * keeps shared state); an object must not be modified by two threads at once.
 */
#ifndef RAILCP_TOPOLOGY_H
#define RAILCP_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TOPO_NUMA_UNKNOWN (-1)

struct topo_locality {
	int numa_node;	/* TOPO_NUMA_UNKNOWN when no rule gives one */
	char rule[256]; /* how numa_node was found, or why it is unknown */
};

/*
 * NUMA node of RDMA device ibdev (e.g. "mlx5_0", "rxe0"), found from the
 * nearest ancestor of its PCI device that reports a numa_node; for a virtual
 * device (rxe, siw) that has none, from the device under its parent netdev.
 * sysfs_root is "/sys" on a live machine (tests point it at a fixture tree).
 * Returns 0 and fills *out (possibly with TOPO_NUMA_UNKNOWN), or -ENOENT when
 * sysfs has no such device.
 */
int topo_ibdev_locality(const char *sysfs_root, const char *ibdev, struct topo_locality *out);

/*
 * The same for network interface ifname ("eth0"), from its device: a
 * virtual interface (lo, a bridge) has none and gets TOPO_NUMA_UNKNOWN.
 */
int topo_netdev_locality(const char *sysfs_root, const char *ifname, struct topo_locality *out);

/* ---- bitmaps of CPUs or NUMA nodes ------------------------------------- */

#define TOPO_MAX_CPUS 1024
#define TOPO_MAX_NODES 64
#define TOPO_MAX_RAILS 64

struct topo_bitmap {
	uint64_t w[TOPO_MAX_CPUS / 64];
};

void topo_bitmap_zero(struct topo_bitmap *b);
/* Ignores bits >= TOPO_MAX_CPUS. */
void topo_bitmap_set(struct topo_bitmap *b, unsigned bit);
bool topo_bitmap_isset(const struct topo_bitmap *b, unsigned bit);
unsigned topo_bitmap_count(const struct topo_bitmap *b);
/* First set bit at or after from, or -1. */
int topo_bitmap_next(const struct topo_bitmap *b, unsigned from);
void topo_bitmap_and(struct topo_bitmap *dst, const struct topo_bitmap *src);
bool topo_bitmap_equal(const struct topo_bitmap *a, const struct topo_bitmap *b);
/* True when every bit of a is in b. */
bool topo_bitmap_subset(const struct topo_bitmap *a, const struct topo_bitmap *b);
/* "0-3,8,10-11"; -EINVAL (no sentence: callers name the option or line). */
int topo_bitmap_parse(const char *text, struct topo_bitmap *out);
/* The same list form, "none" when empty; truncated to len. */
void topo_bitmap_format(const struct topo_bitmap *b, char *buf, size_t len);

/* ---- the machine ------------------------------------------------------- */

struct topo_node {
	int id;			 /* OS index */
	struct topo_bitmap cpus; /* allowed CPUs of the node */
	unsigned n_cpus_all;	 /* CPUs of the node, allowed or not */
	uint64_t mem_bytes;
	uint64_t huge_2m; /* free (this host) or reserved (XML) 2 MiB pages */
	uint64_t huge_1g; /* the same for 1 GiB pages */
	bool usable;	  /* can host a worker: allowed memory and CPUs */
	bool excluded;	  /* the binding keeps the process off this node */
	char why[128];	  /* why not usable, "" when usable */
};

struct topo_rail {
	char dev[64];	/* "mlx5_0", "rxe1" */
	unsigned port;	/* 1-based */
	char state[16]; /* "ACTIVE", "DOWN", ... */
	bool active;
	char link_layer[16]; /* "InfiniBand", "Ethernet", "unknown" */
	double gbps;	     /* 0 when unknown */
	int numa_node;	     /* TOPO_NUMA_UNKNOWN when unknown */
	char rule[256];	     /* how numa_node was found, or why unknown */
};

struct topo_machine {
	char source[256]; /* "this host" or the XML file */
	char host[64];
	bool thp; /* transparent hugepages usable through madvise */
	size_t n_nodes;
	struct topo_node node[TOPO_MAX_NODES];	       /* in id order */
	unsigned dist[TOPO_MAX_NODES][TOPO_MAX_NODES]; /* by position in node[] */
	bool dist_known;			       /* false: 10 on the diagonal, 20 elsewhere */
	size_t n_rails;
	struct topo_rail rail[TOPO_MAX_RAILS]; /* in name, port order */
};

/* What the process may use: CPUs (sched_getaffinity) and memory nodes. */
struct topo_binding {
	bool cpus_set;
	struct topo_bitmap cpus;
	bool nodes_set;
	struct topo_bitmap nodes;
};

/*
 * The binding of the calling process: its CPU affinity (taskset, numactl
 * --cpunodebind, cgroup cpuset) and, under an MPOL_BIND memory policy
 * (numactl --membind), the nodes it may allocate on.
 */
int topo_binding_of_process(struct topo_binding *out);

/*
 * Discover the machine with hwloc: this host when xml_path is NULL, else the
 * hwloc XML export xml_path (whose OpenFabrics devices become the rails).
 * binding (may be NULL) further restricts CPUs and nodes, on top of what
 * hwloc reports as allowed. On this host the rails are left empty: add them
 * with topo_machine_add_rail. hwloc loads none of its plugins (GPU, X11,
 * libxml2): the first call sets HWLOC_PLUGINS_PATH empty, so make it before
 * other threads read the environment; thread-safe after that.
 */
int topo_machine_create(const char *xml_path, const struct topo_binding *binding,
			struct topo_machine **machine_out);

/*
 * topo_machine_create(xml_path, NULL, ...) run in a child process, for a file
 * a user names: hwloc crashing on a malformed file, or taking longer than
 * TOPO_XML_SECONDS, becomes an error with one sentence instead of taking
 * the caller down. The same machine and the same errors otherwise. Not
 * thread-safe: it forks, so call it while the process has one thread.
 */
#define TOPO_XML_SECONDS 30
int topo_machine_read_xml(const char *xml_path, struct topo_machine **machine_out);

/* Accepts NULL. */
void topo_machine_destroy(struct topo_machine *m);

/* Add a rail, keeping name/port order; -ENOSPC past TOPO_MAX_RAILS, -EEXIST on a duplicate. */
int topo_machine_add_rail(struct topo_machine *m, const struct topo_rail *rail);

/* An IP interface of this host, as the TCP transport sees it. */
struct topo_netif {
	char name[64]; /* "eth0", as the kernel names it */
	char addr[16]; /* its first IPv4 address, the one a rail binds to */
	unsigned prefix;
	bool up; /* up and running */
	bool loopback;
	unsigned mtu;	/* bytes; 0 when unknown */
	double gbps;	/* 0 when unknown */
	int numa_node;	/* TOPO_NUMA_UNKNOWN when unknown */
	char rule[256]; /* how numa_node was found, or why unknown */
};

struct topo_netif_list {
	size_t n;
	struct topo_netif nif[TOPO_MAX_RAILS]; /* in the kernel's order */
};

/*
 * This host's interfaces with an IPv4 address, loopback ones too, with the
 * MTU, speed and NUMA node sysfs_root ("/sys") reports: the TCP transport's
 * rails come from this list. Past TOPO_MAX_RAILS, out holds the first ones
 * and a notice names the first left out. Thread-safe.
 */
int topo_netifs_list(const char *sysfs_root, struct topo_netif_list *out);

/*
 * Add this host's IPv4 interfaces as rails (the TCP transport's): port 1,
 * "UP" and active when the interface is up and running, link layer "IP",
 * its speed and NUMA node from sysfs_root ("/sys"). Loopback interfaces
 * only with loopback set: their address leads to the host that dials it,
 * never to a peer. Thread-safe.
 */
int topo_machine_add_ip_rails(struct topo_machine *m, const char *sysfs_root, bool loopback);

/* Position of node id in m->node[], or -1. */
int topo_machine_node_index(const struct topo_machine *m, int id);

/* Position of rail dev:port in m->rail[], or -1. */
int topo_machine_rail_index(const struct topo_machine *m, const char *dev, unsigned port);

/* ---- the plan ---------------------------------------------------------- */

/*
 * QPs per rail when the user does not say. One QP does not saturate a
 * 400 Gb/s port at large messages; 2 to 8 do. 4 sits in the middle of that
 * range, so a 400 Gb/s rail runs at line rate without relying on the
 * optimistic end, while a 100 Gb/s rail (or Soft-RoCE) pays for only four
 * send queues and CQ entries; it also splits a chunk window evenly.
 */
#define TOPO_DEFAULT_QPS_PER_RAIL 4
#define TOPO_MAX_QPS_PER_RAIL 64

/*
 * Buffer bytes per stripe (one QP of one rail) when --buffer-mib is not given:
 * 8 MiB x 4 QPs = 32 MiB in flight per rail, which at 400 Gb/s is 670 us of
 * data, well beyond a fabric round trip plus the receiver's write jitter.
 */
#define TOPO_STRIPE_BUFFER_MIB 8
#define TOPO_MAX_BUFFER_MIB (1024 * 1024)

struct topo_rail_sel {
	char dev[64];
	unsigned port; /* 0: every port of dev */
};

struct topo_opts {
	bool nodes_set; /* --numa */
	struct topo_bitmap nodes;
	size_t n_rails; /* --rails */
	struct topo_rail_sel rails[TOPO_MAX_RAILS];
	unsigned qps_per_rail; /* 0: TOPO_DEFAULT_QPS_PER_RAIL */
	unsigned buffer_mib;   /* per worker; 0: derived from its stripes */
};

/* Parse "mlx5_0:1,mlx5_2" into opts->rails (replacing them); -EINVAL with a sentence. */
int topo_opts_parse_rails(const char *text, struct topo_opts *opts);

/*
 * The port's state now, from sysfs_root ("/sys") /class/infiniband/DEV/
 * ports/PORT/state: true when ACTIVE, and when the file is missing (a rail
 * sysfs does not list, such as the loopback transport's). A server asks per
 * session, so a rail that went down is not offered and one that came back is.
 * Thread-safe.
 */
bool topo_port_active(const char *sysfs_root, const char *dev, unsigned port);

enum topo_page {
	TOPO_PAGE_1G,  /* hugetlb 1 GiB pages */
	TOPO_PAGE_2M,  /* hugetlb 2 MiB pages */
	TOPO_PAGE_THP, /* normal pages with MADV_HUGEPAGE */
	TOPO_PAGE_4K,  /* normal pages */
};

/* "1 GiB hugepages", ... */
const char *topo_page_str(enum topo_page page);

struct topo_worker {
	int node;
	struct topo_bitmap cpus; /* the thread's affinity */
	size_t first_rail;	 /* its rails are plan->rail[first_rail ...] */
	size_t n_rails;
	uint64_t buffer_bytes;
	enum topo_page page; /* what the pool is expected to get */
	char why[96];	     /* why this worker exists */
};

struct topo_plan_rail {
	char dev[64];
	unsigned port;
	double gbps;
	int numa_node;
	unsigned worker; /* index into plan->worker[] */
	unsigned qps;
	char placement[192]; /* why it went to that worker */
};

/*
 * The fabric knobs a profile carries beside its placement, as the options
 * --tos, --ack-timeout, --retry-count and --connect-timeout take them: plain
 * numbers here, applied by the engine through the CLI, which lets an option
 * given on the command line win. 0 (tos: tos_set false) is "not set".
 */
#define TOPO_MAX_TOS 255
#define TOPO_MAX_ACK_TIMEOUT 31	      /* the verbs local ACK timeout exponent */
#define TOPO_MAX_RETRY_COUNT 7	      /* the verbs transport retry count */
#define TOPO_MAX_CONNECT_TIMEOUT 3600 /* seconds, as every seconds option */

struct topo_knobs {
	bool tos_set;
	unsigned tos;		  /* 0 to TOPO_MAX_TOS */
	unsigned ack_timeout;	  /* 1 to TOPO_MAX_ACK_TIMEOUT */
	unsigned retry_count;	  /* 1 to TOPO_MAX_RETRY_COUNT */
	unsigned connect_timeout; /* seconds, 1 to TOPO_MAX_CONNECT_TIMEOUT */
};

struct topo_plan {
	unsigned qps_per_rail;
	struct topo_knobs knobs; /* a profile's, or what to save; topo_plan_build: none */
	uint64_t buffer_total;	 /* all workers' pools */
	size_t n_workers;
	struct topo_worker worker[TOPO_MAX_NODES]; /* in node order */
	size_t n_rails;
	struct topo_plan_rail rail[TOPO_MAX_RAILS]; /* grouped by worker */
	char notes[1024];			    /* rails left out and why, one per line */
	/* the data path's threads and rings (engine/datapath/iothreads.c); 0: chosen by the engine
	 */
	unsigned helpers;  /* per worker; TOPO_NONE: the worker reads, hashes and writes itself */
	unsigned io_depth; /* per helper; TOPO_NONE: pread and pwrite instead of io_uring */
};

/* helpers or io_depth of a plan: none at all. */
#define TOPO_NONE (~0u)
/* The most helpers per worker, and ring entries per helper, a plan may ask for. */
#define TOPO_MAX_HELPERS 64
#define TOPO_MAX_IO_DEPTH 1024

/*
 * Place workers and rails (policy in plan.c's header and doc/operations.md).
 * Errors, each with a sentence: -EINVAL for options that contradict the
 * machine (a missing or inactive rail named by --rails, a node --numa names
 * that does not exist or is not allowed), -ENODEV when no rail is usable and
 * --numa asks for no worker.
 */
int topo_plan_build(const struct topo_machine *m, const struct topo_opts *opts,
		    struct topo_plan **plan_out);

/* Accepts NULL. */
void topo_plan_destroy(struct topo_plan *plan);

/* ---- profiles ---------------------------------------------------------- */

/*
 * Write plan as a profile (format: profile.c header, doc/operations.md), with
 * the knobs plan->knobs sets; -errno with a sentence.
 */
int topo_profile_save(const struct topo_plan *plan, const struct topo_machine *m, const char *path);

/*
 * Read the profile at path and check it against machine m. opts may be NULL;
 * its qps_per_rail and buffer_mib, when non-zero, override the profile's.
 * The profile's fabric knobs land in (*plan_out)->knobs, unmerged.
 * A profile that cannot be parsed or contradicts m gives -EINVAL and one
 * sentence "PATH:LINE: ...".
 */
int topo_profile_load(const char *path, const struct topo_machine *m, const struct topo_opts *opts,
		      struct topo_plan **plan_out);

/* ---- buffers ----------------------------------------------------------- */

struct topo_pool {
	void *base;
	size_t len;
	int node;
	enum topo_page page; /* what backs the mapping */
	char fallback[192];  /* why a better page size was not used, or "" */
};

/*
 * Map bytes (rounded up to the page size) bound to NUMA node: 1 GiB then
 * 2 MiB hugetlb pages when the node has enough free, else THP, else normal
 * pages. Pages are not touched: the worker calls topo_pool_touch.
 */
int topo_pool_create(int node, uint64_t bytes, struct topo_pool **pool_out);

/* Accepts NULL. */
void topo_pool_destroy(struct topo_pool *pool);

/* Fault every page in from the calling thread (the worker that owns it). */
void topo_pool_touch(struct topo_pool *pool);

struct topo_pool_probe {
	int node_first;	      /* node of the first page, -1 if not resident */
	int node_last;	      /* node of the last page */
	uint64_t kernel_page; /* page size of the mapping, bytes */
	uint64_t anon_huge;   /* bytes of it on transparent hugepages */
};

/* Where the pool's pages really are (get_mempolicy, /proc/self/smaps). */
int topo_pool_probe(const struct topo_pool *pool, struct topo_pool_probe *probe_out);

/*
 * Check RLIMIT_MEMLOCK against bytes about to be registered: -ENOMEM with a
 * sentence naming `ulimit -l` when the soft limit is lower, unless the
 * process may lock any amount (topo_can_lock_any).
 */
int topo_memlock_check(uint64_t bytes);

/*
 * Whether CAP_IPC_LOCK is in the calling thread's effective set: the kernel
 * then locks and registers memory past RLIMIT_MEMLOCK.
 */
bool topo_can_lock_any(void);

/*
 * Pin the calling thread to cpus and prefer node for its allocations. Call it
 * first thing in a worker thread.
 */
int topo_thread_bind(const struct topo_bitmap *cpus, int node);

#endif
