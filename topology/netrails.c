/*
 * netrails.c - this host's IP interfaces as rails, for the TCP transport:
 * each interface with an IPv4 address, up or not, named as the kernel
 * names it, with the speed and NUMA node its device reports in sysfs.
 *
 * Threading: thread-safe (no shared state).
 */
#include "topology/topology.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The number in sysfs_root/class/net/IFNAME/FILE; -1 when it cannot be read. */
static long netdev_number(const char *sysfs_root, const char *ifname, const char *file)
{
	char path[PATH_MAX];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/class/net/%s/%s", sysfs_root, ifname, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The speed sysfs gives in Mb/s, as Gb/s; 0 when unknown (virtual interfaces say -1 or nothing). */
static double netdev_gbps(const char *sysfs_root, const char *ifname)
{
	long mbps = netdev_number(sysfs_root, ifname, "speed");

	return mbps > 0 ? (double)mbps / 1000.0 : 0;
}

/* The MTU in bytes; 0 when unknown. */
static unsigned netdev_mtu(const char *sysfs_root, const char *ifname)
{
	long mtu = netdev_number(sysfs_root, ifname, "mtu");

	return mtu > 0 && mtu <= UINT32_MAX ? (unsigned)mtu : 0;
}

static void netif_fill(const char *sysfs_root, const struct ifaddrs *i, struct topo_netif *n)
{
	const struct sockaddr_in *mask = (const struct sockaddr_in *)i->ifa_netmask;
	struct topo_locality loc = {TOPO_NUMA_UNKNOWN, ""};

	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", i->ifa_name);
	inet_ntop(AF_INET, &((const struct sockaddr_in *)i->ifa_addr)->sin_addr, n->addr,
		  sizeof(n->addr));
	n->prefix = mask ? (unsigned)__builtin_popcount(mask->sin_addr.s_addr) : 32;
	n->up = (i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING);
	n->loopback = i->ifa_flags & IFF_LOOPBACK;
	n->mtu = netdev_mtu(sysfs_root, i->ifa_name);
	n->gbps = netdev_gbps(sysfs_root, i->ifa_name);
	if (topo_netdev_locality(sysfs_root, i->ifa_name, &loc) != 0)
		snprintf(loc.rule, sizeof(loc.rule), "unknown: sysfs has no %s", i->ifa_name);
	n->numa_node = loc.numa_node;
	snprintf(n->rule, sizeof(n->rule), "%s", loc.rule);
}

static bool netif_listed(const struct topo_netif_list *l, const char *name)
{
	size_t k;

	for (k = 0; k < l->n; k++)
		if (strcmp(l->nif[k].name, name) == 0)
			return true;
	return false;
}

int topo_netifs_list(const char *sysfs_root, struct topo_netif_list *out)
{
	struct ifaddrs *all, *i;

	if (getifaddrs(&all) != 0)
		return rcp_err(-errno, "listing the IP interfaces (getifaddrs): %s",
			       strerror(errno));
	out->n = 0;
	for (i = all; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    netif_listed(out, i->ifa_name))
			continue; /* a second address: the first is the rail's */
		if (out->n == TOPO_MAX_RAILS) {
			/* The first ones serve; the rest are said once, not a failure of all. */
			rcp_log(RCP_LOG_NOTICE,
				"more than %d IP interfaces: %s and those after it are left out "
				"(railcp's limit)",
				TOPO_MAX_RAILS, i->ifa_name);
			break;
		}
		netif_fill(sysfs_root, i, &out->nif[out->n++]);
	}
	freeifaddrs(all);
	return 0;
}

static void ip_rail(const struct topo_netif *n, struct topo_rail *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dev, sizeof(r->dev), "%s", n->name);
	r->port = 1;
	snprintf(r->state, sizeof(r->state), "%s", n->up ? "UP" : "DOWN");
	r->active = n->up;
	snprintf(r->link_layer, sizeof(r->link_layer), "IP");
	r->gbps = n->gbps;
	r->numa_node = n->numa_node;
	snprintf(r->rule, sizeof(r->rule), "%s", n->rule);
}

int topo_machine_add_ip_rails(struct topo_machine *m, const char *sysfs_root, bool loopback)
{
	struct topo_netif_list *l = malloc(sizeof(*l));
	size_t k;
	int err;

	if (!l)
		return -ENOMEM;
	err = topo_netifs_list(sysfs_root, l);
	for (k = 0; !err && k < l->n; k++) {
		struct topo_rail r;

		if (l->nif[k].loopback && !loopback)
			continue;
		ip_rail(&l->nif[k], &r);
		err = topo_machine_add_rail(m, &r);
		if (err == -EEXIST)
			err = 0; /* added before: the machine has it */
	}
	free(l);
	return err;
}
