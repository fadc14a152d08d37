/*
 * locality.c - NUMA locality of RDMA devices from the sysfs device tree.
 *
 * A real NIC (mlx5, ...) has /sys/class/infiniband/DEV/device pointing at its
 * PCI function, which carries numa_node. A virtual device (rxe, siw) has no
 * device link; its "parent" file names the netdev it runs over, and that
 * netdev's device gives the locality. The device a netdev points at is not
 * always the PCI function: a virtio NIC points at its virtio device, whose
 * parent is the PCI function. So the walk climbs from the device towards the
 * root until a directory has a numa_node file.
 *
 * A numa_node of -1 (a machine without NUMA, or firmware that does not say)
 * is reported as unknown, with the rule naming the device that said so.
 */
#include "topology/topology.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* First line of a small sysfs file, without its newline; -errno on failure. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int err = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		err = -EIO;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return err;
}

/*
 * Climb from the device directory dev_link resolves to until a numa_node
 * file is found, staying below sysfs_root/devices. Writes the node (or -1)
 * and the directory's name; -ENOENT if the link is missing or no ancestor
 * has the file.
 */
static int numa_of_device(const char *sysfs_root, const char *dev_link, int *node_out,
			  char *name_out, size_t name_len)
{
	char path[PATH_MAX], top[PATH_MAX], file[PATH_MAX + 16], val[32];

	snprintf(file, sizeof(file), "%s/devices", sysfs_root);
	if (!realpath(file, top) || !realpath(dev_link, path))
		return -ENOENT;
	while (strlen(path) > strlen(top) && strncmp(path, top, strlen(top)) == 0) {
		snprintf(file, sizeof(file), "%s/numa_node", path);
		if (read_line(file, val, sizeof(val)) == 0) {
			*node_out = atoi(val) < 0 ? -1 : atoi(val);
			snprintf(name_out, name_len, "%s", strrchr(path, '/') + 1);
			return 0;
		}
		*strrchr(path, '/') = '\0';
	}
	return -ENOENT;
}

static void set_result(struct topo_locality *out, int node, const char *how, const char *dev)
{
	out->numa_node = node;
	if (node >= 0)
		snprintf(out->rule, sizeof(out->rule), "%s%s", how, dev);
	else
		snprintf(out->rule, sizeof(out->rule), "unknown: %s%s reports no NUMA node", how,
			 dev);
}

int topo_ibdev_locality(const char *sysfs_root, const char *ibdev, struct topo_locality *out)
{
	char link[PATH_MAX], netdev[32], devname[64], how[112];
	int node;

	snprintf(link, sizeof(link), "%s/class/infiniband/%s", sysfs_root, ibdev);
	if (access(link, F_OK) != 0)
		return -ENOENT;

	snprintf(link, sizeof(link), "%s/class/infiniband/%s/device", sysfs_root, ibdev);
	if (numa_of_device(sysfs_root, link, &node, devname, sizeof(devname)) == 0) {
		set_result(out, node, "device ", devname);
		return 0;
	}

	snprintf(link, sizeof(link), "%s/class/infiniband/%s/parent", sysfs_root, ibdev);
	if (read_line(link, netdev, sizeof(netdev)) == 0 && netdev[0] != '\0') {
		snprintf(link, sizeof(link), "%s/class/net/%s/device", sysfs_root, netdev);
		if (numa_of_device(sysfs_root, link, &node, devname, sizeof(devname)) == 0) {
			snprintf(how, sizeof(how), "parent netdev %s on device ", netdev);
			set_result(out, node, how, devname);
			return 0;
		}
		out->numa_node = TOPO_NUMA_UNKNOWN;
		snprintf(out->rule, sizeof(out->rule),
			 "unknown: parent netdev %s has no device with a NUMA node", netdev);
		return 0;
	}

	out->numa_node = TOPO_NUMA_UNKNOWN;
	snprintf(out->rule, sizeof(out->rule), "unknown: no device link and no parent netdev");
	return 0;
}

int topo_netdev_locality(const char *sysfs_root, const char *ifname, struct topo_locality *out)
{
	char link[PATH_MAX], devname[64];
	int node;

	snprintf(link, sizeof(link), "%s/class/net/%s", sysfs_root, ifname);
	if (access(link, F_OK) != 0)
		return -ENOENT;
	snprintf(link, sizeof(link), "%s/class/net/%s/device", sysfs_root, ifname);
	if (numa_of_device(sysfs_root, link, &node, devname, sizeof(devname)) == 0) {
		set_result(out, node, "device ", devname);
		return 0;
	}
	out->numa_node = TOPO_NUMA_UNKNOWN;
	snprintf(out->rule, sizeof(out->rule), "unknown: %s is a virtual interface (no device)",
		 ifname);
	return 0;
}
