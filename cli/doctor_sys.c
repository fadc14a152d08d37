/*
 * doctor_sys.c - what `railcp doctor` reads of the host: the ports and GID
 * tables of sysfs (as rdma-core's show_gids reads them: gids/N,
 * gid_attrs/types/N, gid_attrs/ndevs/N), the netdevs' MTUs, the kernel's
 * ARP and reverse-path settings, hugepages per NUMA node, and the memlock
 * limit.
 *
 * Every file is read under a root directory: "" on a live host, a fixture
 * tree standing in for /sys and /proc in the unit tests. What has no file
 * (the port's active MTU, the addresses of a netdev, the limits of this
 * process) is taken live, in cli_doctor_gather only.
 *
 * Threading: not thread-safe (fills the caller's struct).
 */
#include "cli/doctor.h"

#include "cli/cli.h"
#include "common/common.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* The first line of a file, without its newline; -errno (no sentence). */
static int read_line(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int read_line(char *buf, size_t len, const char *fmt, ...)
{
	char path[512];
	va_list ap;
	FILE *f;
	bool got;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	got = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!got)
		return -EIO; /* also what sysfs answers for an unused GID's type */
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A file holding one integer; -1 when missing or not a number. */
static long read_long(const char *path)
{
	char buf[64], *end;
	long v;

	if (read_line(buf, sizeof(buf), "%s", path))
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	return errno || end == buf ? -1 : v;
}

/* "RoCE v2", "IB/RoCE v1" (v1 on Ethernet, IB on InfiniBand) as show_gids names them. */
static void gid_type_name(const char *sysfs, const char *link_layer, char *out, size_t len)
{
	if (!strcmp(sysfs, "RoCE v2"))
		snprintf(out, len, "RoCE v2");
	else if (!strcmp(sysfs, "IB/RoCE v1"))
		snprintf(out, len, "%s", strcmp(link_layer, "Ethernet") ? "IB" : "RoCE v1");
	else
		snprintf(out, len, "%.15s", sysfs);
}

/* The address a GID stands for: IPv4 when v4-mapped, IPv6 for RoCE's others. */
static void gid_ip(struct doc_gid *g)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	uint8_t raw[16];

	g->ipver = 0;
	g->ip[0] = '\0';
	if (inet_pton(AF_INET6, g->gid, raw) != 1 || !strcmp(g->type, "IB"))
		return;
	if (!memcmp(raw, v4mapped, sizeof(v4mapped))) {
		inet_ntop(AF_INET, raw + 12, g->ip, sizeof(g->ip));
		g->ipver = 4;
	} else {
		inet_ntop(AF_INET6, raw, g->ip, sizeof(g->ip));
		g->ipver = 6;
	}
}

/* Entry idx of the port's table, kept when it is in use. */
static void gid_take(const char *port_dir, unsigned idx, struct doc_rail *r)
{
	struct doc_gid *g = &r->gid[r->n_gids];
	char type[32];

	if (read_line(g->gid, sizeof(g->gid), "%s/gids/%u", port_dir, idx) ||
	    !strcmp(g->gid, "0000:0000:0000:0000:0000:0000:0000:0000"))
		return;
	if (read_line(type, sizeof(type), "%s/gid_attrs/types/%u", port_dir, idx))
		return; /* no type: an entry the kernel has not filled */
	g->index = idx;
	gid_type_name(type, r->link_layer, g->type, sizeof(g->type));
	if (read_line(g->ndev, sizeof(g->ndev), "%s/gid_attrs/ndevs/%u", port_dir, idx))
		g->ndev[0] = '\0';
	gid_ip(g);
	r->n_gids++;
}

static int idx_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/*
 * The indexes of the port's gids directory, in order, in *idx_out (the
 * caller frees it). All of them: sysfs lists a directory in the order of its
 * names' hashes, so the used entries may come last of a thousand.
 */
static int gid_indexes(const char *port_dir, unsigned **idx_out, size_t *n_out)
{
	unsigned *idx = NULL, *grown;
	size_t n = 0, cap = 0;
	char path[512];
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/gids", port_dir);
	dir = opendir(path);
	if (!dir)
		return rcp_err(-errno, "cannot read %s: %s", path, strerror(errno));
	while ((e = readdir(dir)) != NULL) {
		char *end;
		unsigned long v = strtoul(e->d_name, &end, 10);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || v >= 1u << 20)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			grown = realloc(idx, cap * sizeof(*idx));
			if (!grown) {
				free(idx);
				closedir(dir);
				return -ENOMEM;
			}
			idx = grown;
		}
		idx[n++] = (unsigned)v;
	}
	closedir(dir);
	if (n)
		qsort(idx, n, sizeof(*idx), idx_cmp);
	*idx_out = idx;
	*n_out = n;
	return 0;
}

int cli_doctor_read_gids(const char *root, struct doc_rail *r)
{
	char dir[320], buf[64];
	unsigned *idx = NULL;
	size_t n = 0, i;
	int err;

	snprintf(dir, sizeof(dir), "%s/sys/class/infiniband/%s/ports/%u", root, r->dev, r->port);
	if (!r->state[0] && !read_line(buf, sizeof(buf), "%s/state", dir)) /* "4: ACTIVE" */
		snprintf(r->state, sizeof(r->state), "%.15s",
			 strchr(buf, ' ') ? strchr(buf, ' ') + 1 : buf);
	if (!r->link_layer[0] &&
	    read_line(r->link_layer, sizeof(r->link_layer), "%s/link_layer", dir))
		r->link_layer[0] = '\0';
	r->active = r->active || !strcmp(r->state, "ACTIVE");
	r->n_gids = 0;
	err = gid_indexes(dir, &idx, &n);
	for (i = 0; !err && i < n && r->n_gids < DOC_MAX_GIDS; i++)
		gid_take(dir, idx[i], r);
	free(idx);
	return err;
}

int cli_doctor_read_netdev(const char *root, struct doc_rail *r)
{
	char path[320];
	long mtu;

	snprintf(path, sizeof(path), "%s/sys/class/net/%s/mtu", root, r->netdev);
	mtu = read_long(path);
	if (mtu <= 0) {
		r->netdev_mtu = -1;
		return rcp_err(-ENOENT, "cannot read %s", path);
	}
	r->netdev_mtu = (int)mtu;
	if (read_line(r->operstate, sizeof(r->operstate), "%s/sys/class/net/%s/operstate", root,
		      r->netdev))
		snprintf(r->operstate, sizeof(r->operstate), "unknown");
	return 0;
}

/* max(all, IF), as the kernel applies arp_ignore, arp_announce and rp_filter. */
static int sysctl_eff(const char *root, const char *ifname, const char *name)
{
	char path[320];
	long all, one;

	snprintf(path, sizeof(path), "%s/proc/sys/net/ipv4/conf/all/%s", root, name);
	all = read_long(path);
	snprintf(path, sizeof(path), "%s/proc/sys/net/ipv4/conf/%s/%s", root, ifname, name);
	one = read_long(path);
	if (all < 0 && one < 0)
		return -1;
	return (int)(all > one ? all : one);
}

void cli_doctor_read_sysctl(const char *root, const char *ifname, struct doc_sysctl *out)
{
	out->arp_ignore = sysctl_eff(root, ifname, "arp_ignore");
	out->arp_announce = sysctl_eff(root, ifname, "arp_announce");
	out->rp_filter = sysctl_eff(root, ifname, "rp_filter");
}

static void node_read(const char *dir, struct doc_node *n)
{
	char path[700];
	long v;

	snprintf(path, sizeof(path), "%s/hugepages/hugepages-2048kB/nr_hugepages", dir);
	n->huge_2m_total = (v = read_long(path)) > 0 ? (uint64_t)v : 0;
	snprintf(path, sizeof(path), "%s/hugepages/hugepages-2048kB/free_hugepages", dir);
	n->huge_2m_free = (v = read_long(path)) > 0 ? (uint64_t)v : 0;
	snprintf(path, sizeof(path), "%s/hugepages/hugepages-1048576kB/nr_hugepages", dir);
	n->huge_1g_total = (v = read_long(path)) > 0 ? (uint64_t)v : 0;
	snprintf(path, sizeof(path), "%s/hugepages/hugepages-1048576kB/free_hugepages", dir);
	n->huge_1g_free = (v = read_long(path)) > 0 ? (uint64_t)v : 0;
}

static int node_cmp(const void *a, const void *b)
{
	return ((const struct doc_node *)a)->id - ((const struct doc_node *)b)->id;
}

int cli_doctor_read_nodes(const char *root, struct cli_doctor *d)
{
	char path[320], dir[600];
	struct dirent *e;
	DIR *nodes;

	d->n_nodes = 0;
	snprintf(path, sizeof(path), "%s/sys/devices/system/node", root);
	nodes = opendir(path);
	if (!nodes)
		return 0;
	while ((e = readdir(nodes)) != NULL && d->n_nodes < TOPO_MAX_NODES) {
		char *end;
		long id;

		if (strncmp(e->d_name, "node", 4) || !e->d_name[4])
			continue;
		id = strtol(e->d_name + 4, &end, 10);
		if (*end || id < 0 || id >= TOPO_MAX_NODES)
			continue;
		memset(&d->node[d->n_nodes], 0, sizeof(d->node[0]));
		d->node[d->n_nodes].id = (int)id;
		snprintf(dir, sizeof(dir), "%s/%s", path, e->d_name);
		node_read(dir, &d->node[d->n_nodes++]);
	}
	closedir(nodes);
	qsort(d->node, d->n_nodes, sizeof(d->node[0]), node_cmp);
	return 0;
}

/* ---- the live host ---- */

static unsigned prefix_of(const struct sockaddr *mask)
{
	return mask ? (unsigned)__builtin_popcount(
			      ((const struct sockaddr_in *)(const void *)mask)->sin_addr.s_addr)
		    : 32;
}

/* Whether a is an IPv6 address a rail can take (the engine's rule). */
static bool ipv6_global(const struct ifaddrs *a)
{
	return a->ifa_addr && a->ifa_addr->sa_family == AF_INET6 &&
	       eng_ipv6_rail_usable(
		       &((const struct sockaddr_in6 *)(const void *)a->ifa_addr)->sin6_addr);
}

/* Each rail's netdev's IPv4 addresses, and whether it has a global IPv6 one (getifaddrs). */
static void gather_addrs(struct cli_doctor *d)
{
	struct ifaddrs *ifs, *a;
	size_t i;

	if (getifaddrs(&ifs))
		return;
	for (a = ifs; a; a = a->ifa_next) {
		for (i = 0; ipv6_global(a) && i < d->n_rails; i++)
			d->rail[i].ipv6 |= !strcmp(d->rail[i].netdev, a->ifa_name);
		if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET)
			continue;
		for (i = 0; i < d->n_rails; i++) {
			struct doc_rail *r = &d->rail[i];
			struct doc_addr *x = &r->addr[r->n_addrs];
			char ip[INET_ADDRSTRLEN];

			if (strcmp(r->netdev, a->ifa_name) || r->n_addrs == DOC_MAX_ADDRS)
				continue;
			x->addr =
				ntohl(((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr.s_addr);
			x->prefix = prefix_of(a->ifa_netmask);
			inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr,
				  ip, sizeof(ip));
			snprintf(x->text, sizeof(x->text), "%s/%u", ip, x->prefix);
			r->n_addrs++;
		}
	}
	freeifaddrs(ifs);
}

static void rail_from_port(struct doc_rail *r, const char *dev, const struct eng_port *p)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dev, sizeof(r->dev), "%s", dev);
	r->port = p->num;
	snprintf(r->state, sizeof(r->state), "%s", p->state);
	r->active = p->active;
	snprintf(r->link_layer, sizeof(r->link_layer), "%s", p->link_layer);
	r->active_mtu = p->active_mtu;
	memcpy(r->netdev, p->netdev, sizeof(r->netdev));
	r->netdev_mtu = -1;
	r->sys = (struct doc_sysctl){-1, -1, -1};
	int err = cli_doctor_read_gids("", r);

	if (err) /* the table of verbs is not needed for the checks: say it with -v */
		rcp_log(RCP_LOG_INFO, "%s", rcp_err_msg(err));
	if (r->netdev[0]) {
		if ((err = cli_doctor_read_netdev("", r)) != 0)
			rcp_log(RCP_LOG_INFO, "%s", rcp_err_msg(err));
		cli_doctor_read_sysctl("", r->netdev, &r->sys);
	}
}

static void gather_plan(struct cli_doctor *d, const struct topo_plan *plan)
{
	size_t i, k;

	d->memlock_need = plan->buffer_total;
	for (i = 0; i < plan->n_rails; i++)
		for (k = 0; k < d->n_rails; k++)
			if (!strcmp(d->rail[k].dev, plan->rail[i].dev) &&
			    d->rail[k].port == plan->rail[i].port)
				d->rail[k].planned = true;
	for (i = 0; i < plan->n_workers; i++)
		for (k = 0; k < d->n_nodes; k++)
			if (d->node[k].id == plan->worker[i].node)
				d->node[k].pool_bytes += plan->worker[i].buffer_bytes;
}

/* An Ethernet netdev that is up, not loopback: where Soft-RoCE could go. */
static void suggest_netdev(struct cli_doctor *d)
{
	char state[16], type[16];
	struct dirent *e;
	DIR *net = opendir("/sys/class/net");

	while (net && (e = readdir(net)) != NULL && !d->suggest_netdev[0])
		if (e->d_name[0] != '.' && strlen(e->d_name) < IF_NAMESIZE &&
		    !read_line(state, sizeof(state), "/sys/class/net/%s/operstate", e->d_name) &&
		    !strcmp(state, "up") &&
		    !read_line(type, sizeof(type), "/sys/class/net/%s/type", e->d_name) &&
		    !strcmp(type, "1")) /* ARPHRD_ETHER */
			snprintf(d->suggest_netdev, sizeof(d->suggest_netdev), "%s", e->d_name);
	if (net)
		closedir(net);
}

int cli_doctor_gather(struct cli_doctor *d, const struct topo_plan *plan)
{
	struct eng_device_list *list;
	struct rlimit rl;
	size_t i;
	unsigned p;
	int err = eng_device_list_create("/sys", &list);

	if (err == -ENODEV) {
		rcp_err_clear();
		d->no_device = true;
		suggest_netdev(d);
	} else if (err) {
		return err;
	} else {
		for (i = 0; i < list->n; i++)
			for (p = 0; p < list->dev[i].n_ports && d->n_rails < TOPO_MAX_RAILS; p++)
				rail_from_port(&d->rail[d->n_rails++], list->dev[i].name,
					       &list->dev[i].ports[p]);
		eng_device_list_destroy(list);
		gather_addrs(d);
	}
	cli_doctor_read_nodes("", d);
	d->memlock_limit = UINT64_MAX;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		d->memlock_limit = rl.rlim_cur;
	d->lock_any = topo_can_lock_any();
	if (plan)
		gather_plan(d, plan);
	return 0;
}
