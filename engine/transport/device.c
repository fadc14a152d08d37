/*
 * device.c - discovery of RDMA devices, ports and GID tables (railcp devices).
 *
 * Each device is opened, queried and closed again: the listing owns no verbs
 * resources once it returns, so it is cheap to take at start-up and safe to
 * keep. The GID table comes from ibv_query_gid_table, which also gives each
 * entry's type (IB, RoCE v1, RoCE v2) and netdev, so no sysfs parsing is
 * needed for them. An InfiniBand port's netdev, which no GID names, is its
 * IPoIB interface (railaddr.c). NUMA locality comes from topology/.
 *
 * The process keeps a copy of its last listing of this host (/sys): the
 * rails' addresses a session needs (eng__device_list_kept) come from the
 * listing the plan was made from, instead of opening every device again.
 * The copy serves for DEVICE_KEPT_NS only: a client's session follows its
 * plan within it, while a long-running server's sessions list again and so
 * see addresses and GIDs as they are now (a DHCP renewal, a GID table
 * changed), not as they were when it started.
 *
 * Threading: eng_device_list_create is not thread-safe (ibv_get_device_list
 * is, but callers should not need to take the listing from several
 * threads); the kept copy is behind a lock.
 */
#include "engine/engine.h"
#include "engine/transport/device_int.h"

#include "common/common.h"
#include "topology/topology.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned eng__width_lanes(uint8_t active_width)
{
	switch (active_width) {
	case 1:
		return 1;
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	}
	return 0;
}

double eng__lane_gbps(uint8_t active_speed)
{
	/* Data rates per lane, as InfiniBand names them (4 lanes of HDR = 200 Gb/s). */
	switch (active_speed) {
	case 1:
		return 2.5; /* SDR */
	case 2:
		return 5.0; /* DDR */
	case 4:
		return 10.0; /* QDR */
	case 8:
		return 10.0; /* FDR10 */
	case 16:
		return 14.0; /* FDR */
	case 32:
		return 25.0; /* EDR */
	case 64:
		return 50.0; /* HDR */
	case 128:
		return 100.0; /* NDR */
	}
	return 0.0;
}

unsigned eng__mtu_bytes(int mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 0;
}

const char *eng_gid_type_str(enum eng_gid_type type)
{
	switch (type) {
	case ENG_GID_IB:
		return "IB";
	case ENG_GID_ROCE_V1:
		return "RoCE v1";
	case ENG_GID_ROCE_V2:
		return "RoCE v2";
	}
	return "unknown";
}

static enum eng_gid_type gid_type_from_verbs(uint32_t t)
{
	if (t == IBV_GID_TYPE_ROCE_V2)
		return ENG_GID_ROCE_V2;
	return t == IBV_GID_TYPE_ROCE_V1 ? ENG_GID_ROCE_V1 : ENG_GID_IB;
}

static const char *port_state_str(enum ibv_port_state st)
{
	switch (st) {
	case IBV_PORT_NOP:
		return "NOP";
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER";
	}
	return "UNKNOWN";
}

static const char *link_layer_str(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet";
	}
	return "unspecified";
}

/* Copy this port's entries out of the device's GID table. */
static int port_take_gids(struct eng_port *port, const struct ibv_gid_entry *tab, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += tab[i].port_num == port->num;
	port->gids = calloc(k ? k : 1, sizeof(*port->gids));
	if (!port->gids)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct ibv_gid_entry *e = &tab[i];
		struct eng_gid *g;

		if (e->port_num != port->num)
			continue;
		g = &port->gids[port->n_gids++];
		g->index = e->gid_index;
		g->type = gid_type_from_verbs(e->gid_type);
		memcpy(g->raw, e->gid.raw, sizeof(g->raw));
		inet_ntop(AF_INET6, e->gid.raw, g->addr, sizeof(g->addr));
		if (e->ndev_ifindex && if_indextoname(e->ndev_ifindex, g->netdev) &&
		    !port->netdev[0])
			memcpy(port->netdev, g->netdev, sizeof(port->netdev));
	}
	return 0;
}

static void port_fill(struct eng_port *port, unsigned num, const struct ibv_port_attr *pa)
{
	port->num = num;
	port->state = port_state_str(pa->state);
	port->active = pa->state == IBV_PORT_ACTIVE;
	port->link_layer = link_layer_str(pa->link_layer);
	port->active_mtu = eng__mtu_bytes(pa->active_mtu);
	port->width = eng__width_lanes(pa->active_width);
	port->lane_gbps = eng__lane_gbps(pa->active_speed);
	port->gbps = port->width * port->lane_gbps;
}

static int device_read_ports(struct ibv_context *ctx, struct eng_device *dev, unsigned n_ports)
{
	struct ibv_port_attr pa[n_ports];
	struct ibv_gid_entry *tab;
	size_t max = 0;
	ssize_t got;
	unsigned p;
	int err = 0;

	for (p = 0; p < n_ports; p++) {
		int r = ibv_query_port(ctx, (uint8_t)(p + 1), &pa[p]);

		if (r)
			return rcp_err(-r, "ibv_query_port(%s, port %u): %s", dev->name, p + 1,
				       strerror(r));
		max += (size_t)pa[p].gid_tbl_len;
	}
	tab = calloc(max ? max : 1, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	got = max ? ibv_query_gid_table(ctx, tab, max, 0) : 0;
	if (got < 0) {
		err = rcp_err((int)got, "ibv_query_gid_table(%s): %s", dev->name,
			      strerror((int)-got));
		goto out_free_tab;
	}
	dev->ports = calloc(n_ports ? n_ports : 1, sizeof(*dev->ports));
	if (!dev->ports) {
		err = -ENOMEM;
		goto out_free_tab;
	}
	for (p = 0; p < n_ports && !err; p++) {
		port_fill(&dev->ports[p], p + 1, &pa[p]);
		dev->n_ports++;
		err = port_take_gids(&dev->ports[p], tab, (size_t)got);
	}
out_free_tab:
	free(tab);
	return err;
}

static int device_read(struct ibv_device *ibdev, const char *sysfs_root, struct eng_device *dev)
{
	struct ibv_device_attr attr;
	struct topo_locality loc;
	struct ibv_context *ctx;
	uint64_t guid;
	int err;

	snprintf(dev->name, sizeof(dev->name), "%s", ibv_get_device_name(ibdev));
	guid = be64toh(ibv_get_device_guid(ibdev));
	snprintf(dev->node_guid, sizeof(dev->node_guid), "%04x:%04x:%04x:%04x",
		 (unsigned)(guid >> 48) & 0xffff, (unsigned)(guid >> 32) & 0xffff,
		 (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);

	ctx = ibv_open_device(ibdev);
	if (!ctx)
		return rcp_err(-errno, "cannot open RDMA device %s: %s", dev->name,
			       strerror(errno));
	err = ibv_query_device(ctx, &attr);
	if (err) {
		err = rcp_err(-err, "ibv_query_device(%s): %s", dev->name, strerror(err));
		goto out_close;
	}
	err = device_read_ports(ctx, dev, attr.phys_port_cnt);
	if (err)
		goto out_close;

	if (topo_ibdev_locality(sysfs_root, dev->name, &loc) == 0) {
		dev->numa_node = loc.numa_node;
		memcpy(dev->numa_rule, loc.rule, sizeof(dev->numa_rule));
	} else {
		dev->numa_node = TOPO_NUMA_UNKNOWN;
		snprintf(dev->numa_rule, sizeof(dev->numa_rule),
			 "unknown: not in %s/class/infiniband", sysfs_root);
	}
out_close:
	ibv_close_device(ctx);
	return err;
}

/* An InfiniBand port's netdev is its IPoIB interface (railaddr.c), which no GID names. */
static void list_take_ipoib(struct eng_device_list *list)
{
	struct ifaddrs *ifa;
	const char *name;
	size_t d;
	unsigned p;

	if (getifaddrs(&ifa) != 0)
		return; /* the listing goes without them; a session's rail address says why */
	for (d = 0; d < list->n; d++)
		for (p = 0; p < list->dev[d].n_ports; p++) {
			struct eng_port *port = &list->dev[d].ports[p];

			if (eng__port_is_ib(port) && !port->netdev[0] &&
			    (name = eng__ipoib_netdev(port, ifa)) != NULL)
				snprintf(port->netdev, sizeof(port->netdev), "%s", name);
		}
	freeifaddrs(ifa);
}

static int device_cmp(const void *a, const void *b)
{
	return strverscmp(((const struct eng_device *)a)->name,
			  ((const struct eng_device *)b)->name);
}

/* The last listing of /sys this process took, as a copy (NULL: none yet). */
#define DEVICE_KEPT_NS (10ull * 1000000000ull)

static struct eng_device_list *kept;
static uint64_t kept_ns; /* when it was listed */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* A deep copy of list, or NULL when out of memory. */
static struct eng_device_list *list_dup(const struct eng_device_list *list)
{
	struct eng_device_list *c = calloc(1, sizeof(*c));
	size_t d, n;
	unsigned p;

	if (!c || !(c->dev = calloc(list->n ? list->n : 1, sizeof(*c->dev))))
		goto err;
	for (d = 0; d < list->n; d++, c->n++) {
		const struct eng_device *from = &list->dev[d];
		struct eng_device *to = &c->dev[d];

		*to = *from;
		to->n_ports = 0;
		to->ports = calloc(from->n_ports ? from->n_ports : 1, sizeof(*to->ports));
		if (!to->ports)
			goto err;
		for (p = 0; p < from->n_ports; p++, to->n_ports++) {
			to->ports[p] = from->ports[p];
			n = from->ports[p].n_gids;
			to->ports[p].gids = malloc((n ? n : 1) * sizeof(*to->ports[p].gids));
			if (!to->ports[p].gids) {
				to->ports[p].n_gids = 0;
				goto err;
			}
			memcpy(to->ports[p].gids, from->ports[p].gids,
			       n * sizeof(*to->ports[p].gids));
		}
	}
	return c;
err:
	eng_device_list_destroy(c);
	return NULL;
}

/* Keep a copy of a listing of this host; without memory for it, the next asker lists again. */
static void list_keep(const struct eng_device_list *list)
{
	struct eng_device_list *c = list_dup(list), *old;

	pthread_mutex_lock(&kept_lock);
	old = kept;
	kept = c;
	kept_ns = rcp_now_ns();
	pthread_mutex_unlock(&kept_lock);
	eng_device_list_destroy(old);
}

int eng__device_list_kept(struct eng_device_list **list_out)
{
	struct eng_device_list *c = NULL;

	pthread_mutex_lock(&kept_lock);
	if (kept && rcp_now_ns() - kept_ns < DEVICE_KEPT_NS)
		c = list_dup(kept);
	pthread_mutex_unlock(&kept_lock);
	if (c) {
		*list_out = c;
		return 0;
	}
	return eng_device_list_create("/sys", list_out);
}

int eng_device_list_create(const char *sysfs_root, struct eng_device_list **list_out)
{
	struct eng_device_list *list;
	struct ibv_device **devs;
	int n = 0, i, err = 0;

	errno = 0;
	devs = ibv_get_device_list(&n);
	/*
	 * ENOSYS: a kernel without RDMA, as no device. Any other failure is
	 * said: --transport auto must not take a broken RDMA host for one
	 * without RDMA and go over TCP.
	 */
	if (!devs && errno && errno != ENOSYS)
		return rcp_err(-errno, "cannot list the RDMA devices: %s", strerror(errno));
	if (!devs || n == 0) {
		if (devs)
			ibv_free_device_list(devs);
		return rcp_err(-ENODEV,
			       "no RDMA device found: this host has no RDMA NIC and no Soft-RoCE "
			       "device (to make one on an Ethernet interface IF, as root: rdma "
			       "link add rxe0 type rxe netdev IF)");
	}
	list = calloc(1, sizeof(*list));
	if (list)
		list->dev = calloc((size_t)n, sizeof(*list->dev));
	if (!list || !list->dev) {
		err = -ENOMEM;
		goto err_free_list;
	}
	for (i = 0; i < n && !err; i++) {
		err = device_read(devs[i], sysfs_root, &list->dev[i]);
		list->n++;
	}
	if (err)
		goto err_free_list;
	ibv_free_device_list(devs);
	list_take_ipoib(list);
	qsort(list->dev, list->n, sizeof(*list->dev), device_cmp);
	if (!strcmp(sysfs_root, "/sys"))
		list_keep(list);
	*list_out = list;
	return 0;

err_free_list:
	eng_device_list_destroy(list);
	ibv_free_device_list(devs);
	return err;
}

void eng_device_list_destroy(struct eng_device_list *list)
{
	size_t d;
	unsigned p;

	if (!list)
		return;
	for (d = 0; d < list->n; d++) {
		for (p = 0; p < list->dev[d].n_ports; p++)
			free(list->dev[d].ports[p].gids);
		free(list->dev[d].ports);
	}
	free(list->dev);
	free(list);
}
