/*
 * topology.h - where things are: NUMA locality of RDMA devices.
 *
 * The only module that reads hwloc, libnuma and the sysfs device tree.
 * Every function takes the sysfs root as a parameter ("/sys" on a live
 * machine) so tests can point it at a fixture tree.
 *
 * Threading: all functions are thread-safe (no shared state).
 */
#ifndef RAILCP_TOPOLOGY_H
#define RAILCP_TOPOLOGY_H

#define TOPO_NUMA_UNKNOWN (-1)

struct topo_locality {
	int numa_node;  /* TOPO_NUMA_UNKNOWN when no rule gives one */
	char rule[256]; /* how numa_node was found, or why it is unknown */
};

/*
 * NUMA node of RDMA device ibdev (e.g. "mlx5_0", "rxe0"), found from the
 * nearest ancestor of its PCI device that reports a numa_node; for a virtual
 * device (rxe, siw) that has none, from the device under its parent netdev.
 * Returns 0 and fills *out (possibly with TOPO_NUMA_UNKNOWN), or -ENOENT when
 * sysfs has no such device.
 */
int topo_ibdev_locality(const char *sysfs_root, const char *ibdev, struct topo_locality *out);

#endif
