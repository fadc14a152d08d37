/*
 * netrails.c - this host's IP interfaces as rails, for the TCP transport:
 * each interface with an IPv4 address, up or not, named as the kernel
 * names it, with the speed and NUMA node its device reports in sysfs.
 *
 * Threading: thread-safe (no shared state).
 */
#include "topology/topology.h"

#include "common/common.h"

#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The speed sysfs gives in Mb/s, as Gb/s; 0 when unknown (virtual interfaces say -1 or nothing). */
static double netdev_gbps(const char *sysfs_root, const char *ifname)
{
	char path[PATH_MAX];
	long mbps = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/class/net/%s/speed", sysfs_root, ifname);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &mbps) != 1)
		mbps = -1;
	fclose(f);
	return mbps > 0 ? (double)mbps / 1000.0 : 0;
}

static void ip_rail(const char *sysfs_root, const struct ifaddrs *i, struct topo_rail *r)
{
	struct topo_locality loc = {TOPO_NUMA_UNKNOWN, ""};
	bool up = (i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING);

	memset(r, 0, sizeof(*r));
	snprintf(r->dev, sizeof(r->dev), "%s", i->ifa_name);
	r->port = 1;
	snprintf(r->state, sizeof(r->state), "%s", up ? "UP" : "DOWN");
	r->active = up;
	snprintf(r->link_layer, sizeof(r->link_layer), "IP");
	r->gbps = netdev_gbps(sysfs_root, i->ifa_name);
	if (topo_netdev_locality(sysfs_root, i->ifa_name, &loc) != 0)
		snprintf(loc.rule, sizeof(loc.rule), "unknown: sysfs has no %s", i->ifa_name);
	r->numa_node = loc.numa_node;
	snprintf(r->rule, sizeof(r->rule), "%s", loc.rule);
}

int topo_machine_add_ip_rails(struct topo_machine *m, const char *sysfs_root, bool loopback)
{
	struct ifaddrs *all, *i;
	int err = 0;

	if (getifaddrs(&all) != 0)
		return rcp_err(-errno, "listing the IP interfaces (getifaddrs): %s",
			       strerror(errno));
	for (i = all; i && (!err || err == -EEXIST); i = i->ifa_next) {
		struct topo_rail r;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    (!loopback && (i->ifa_flags & IFF_LOOPBACK)))
			continue;
		ip_rail(sysfs_root, i, &r);
		err = topo_machine_add_rail(m, &r); /* -EEXIST: a second address of it */
	}
	freeifaddrs(all);
	return err == -EEXIST ? 0 : err;
}
