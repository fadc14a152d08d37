/*
 * doctor_check.c - the checks of `railcp doctor`: each a pure function of
 * what doctor_sys.c (or a unit test) put in a struct cli_doctor, each
 * finding one sentence and, where there is one, the command that fixes it.
 *
 * A finding "hurts" when a copy would fail, or run on fewer rails or at a
 * smaller MTU than the host has, because of it: the exit status is then 1.
 * The others are notes (a DOWN port when others are ACTIVE: copies go
 * without it as the user may intend; pools that will not get hugepages:
 * they fall back to smaller pages and work).
 *
 * The kernel settings follow rdma-core's librdmacm documentation: when
 * several rail interfaces share a subnet, Linux answers ARP for any local
 * address on any interface unless arp_ignore says otherwise, so the peer
 * maps a rail's address to another rail's MAC and rdma_cm's connection
 * lands on the wrong device; arp_announce and a strict rp_filter do the
 * same to requests and replies. With separate subnets they do not matter.
 *
 * Threading: not thread-safe (fills the caller's struct).
 */
#include "cli/doctor.h"

#include "cli/cli.h"
#include "common/common.h"

#include <stdarg.h>
#include <string.h>

void cli_doctor_problem(struct cli_doctor *d, bool hurts, const char *what, const char *fix,
			const char *fmt, ...)
{
	struct doc_problem *p;
	va_list ap;

	if (d->n_probs == DOC_MAX_PROBS) {
		d->n_probs_lost++;
		return;
	}
	p = &d->prob[d->n_probs++];
	p->hurts = hurts;
	snprintf(p->what, sizeof(p->what), "%s", what);
	snprintf(p->fix, sizeof(p->fix), "%s", fix ? fix : "");
	va_start(ap, fmt);
	vsnprintf(p->text, sizeof(p->text), fmt, ap);
	va_end(ap);
}

bool cli_doctor_hurts(const struct cli_doctor *d)
{
	size_t i;

	for (i = 0; i < d->n_probs; i++)
		if (d->prob[i].hurts)
			return true;
	return d->n_probs_lost > 0;
}

static void rail_name(const struct doc_rail *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%u", r->dev, r->port);
}

static size_t n_active(const struct cli_doctor *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->n_rails; i++)
		n += d->rail[i].active;
	return n;
}

static bool is_ib(const struct doc_rail *r)
{
	return !strcmp(r->link_layer, "InfiniBand");
}

/*
 * An InfiniBand port in INIT or ARMED has its link up but no subnet manager
 * has configured it (no LID); its IPoIB netdev's state is not the cause.
 */
static void check_port(struct cli_doctor *d, const struct doc_rail *r)
{
	bool no_sm = is_ib(r) && (!strcmp(r->state, "INIT") || !strcmp(r->state, "ARMED"));
	char name[80], fix[64] = "";

	if (r->active)
		return;
	rail_name(r, name, sizeof(name));
	if (no_sm)
		snprintf(fix, sizeof(fix), "systemctl start opensm");
	else if (r->netdev[0] && !is_ib(r) && !strcmp(r->operstate, "down"))
		snprintf(fix, sizeof(fix), "ip link set dev %s up", r->netdev);
	cli_doctor_problem(d, n_active(d) == 0, name, fix,
			   "port %s%s%s: copies go without this rail%s", r->state,
			   no_sm    ? ", no subnet manager has configured it (run one on a host or "
				      "switch of the fabric)"
			   : fix[0] ? ", its netdev is down"
				    : "",
			   fix[0] ? "" : " (check its cable and switch port: rdma link show)",
			   n_active(d) ? "" : ", and no other rail is ACTIVE");
}

/* rdma_cm finds an InfiniBand rail by its IPoIB interface's address, IPv4 or IPv6. */
static void check_ipoib(struct cli_doctor *d, const struct doc_rail *r)
{
	char name[80], fix[96];

	if (!r->active || r->n_addrs || r->ipv6)
		return;
	rail_name(r, name, sizeof(name));
	if (!r->netdev[0]) {
		cli_doctor_problem(d, r->planned, name, "modprobe ib_ipoib",
				   "no IPoIB interface: rdma_cm finds an InfiniBand rail by its "
				   "IPoIB interface's IP address");
		return;
	}
	snprintf(fix, sizeof(fix), "ip addr add ADDRESS/PREFIX dev %s", r->netdev);
	cli_doctor_problem(d, r->planned, name, fix,
			   "its IPoIB interface %s has no IPv4 or global IPv6 address, which "
			   "rdma_cm needs to find the rail",
			   r->netdev);
}

/*
 * An Ethernet port needs a GID with an IP address: rdma_cm resolves rails by
 * address. An InfiniBand port's GIDs are no addresses: its IPoIB interface's.
 */
static void check_gids(struct cli_doctor *d, const struct doc_rail *r)
{
	char name[80], fix[96] = "";
	size_t i;

	if (is_ib(r)) {
		check_ipoib(d, r);
		return;
	}
	if (!r->active || strcmp(r->link_layer, "Ethernet"))
		return;
	for (i = 0; i < r->n_gids; i++)
		if (r->gid[i].ipver && strcmp(r->gid[i].type, "RoCE v1") &&
		    strncmp(r->gid[i].ip, "fe80:", 5))
			return;
	rail_name(r, name, sizeof(name));
	if (r->netdev[0])
		snprintf(fix, sizeof(fix), "ip addr add ADDRESS/PREFIX dev %s", r->netdev);
	cli_doctor_problem(d, r->planned, name, fix,
			   "no RoCE v2 GID with an IP address: %s has no address rdma_cm can "
			   "connect from",
			   r->netdev[0] ? r->netdev : "the port's netdev");
}

/* The port sends frames of active MTU plus RoCE headers: the netdev must carry them. */
static void check_mtu_fits(struct cli_doctor *d, const struct doc_rail *r)
{
	char name[80], fix[96];
	unsigned need = r->active_mtu + DOC_ROCE_HDR_BYTES;

	if (!r->active || r->netdev_mtu < 0 || !r->active_mtu ||
	    strcmp(r->link_layer, "Ethernet") || (unsigned)r->netdev_mtu >= need)
		return;
	rail_name(r, name, sizeof(name));
	snprintf(fix, sizeof(fix), "ip link set dev %s mtu %u", r->netdev, need);
	cli_doctor_problem(d, r->planned, name, fix,
			   "the port's active MTU is %u but its netdev %s carries %d: RoCE frames "
			   "of %u bytes do not fit",
			   r->active_mtu, r->netdev, r->netdev_mtu, need);
}

/*
 * Whether r's netdev MTU bounds its RDMA frames: a RoCE port's does; an
 * InfiniBand port's IPoIB netdev (2044 datagram, 65520 connected) does not,
 * its MTU is the subnet manager's.
 */
static bool mtu_from_netdev(const struct doc_rail *r)
{
	return r->planned && r->netdev_mtu >= 0 && !is_ib(r);
}

/* The MTU most planned rails' netdevs have (on a tie the smaller); -1 when none says. */
static int usual_mtu(const struct cli_doctor *d)
{
	size_t i, k, best_n = 0;
	int best = -1;

	for (i = 0; i < d->n_rails; i++) {
		const struct doc_rail *r = &d->rail[i];
		size_t n = 0;

		if (!mtu_from_netdev(r))
			continue;
		for (k = 0; k < d->n_rails; k++)
			n += mtu_from_netdev(&d->rail[k]) && d->rail[k].netdev_mtu == r->netdev_mtu;
		if (n > best_n || (n == best_n && r->netdev_mtu < best))
			best = r->netdev_mtu, best_n = n;
	}
	return best;
}

/*
 * Rails whose netdevs differ in MTU: at most one MTU matches the fabric's.
 * A rail above it has its frames dropped by a switch or a peer at the
 * smaller one, or (protocol 7) runs at the peer's smaller MTU after all;
 * one below it moves more, smaller packets than its fabric can.
 */
static void check_mtu_alike(struct cli_doctor *d)
{
	int usual = usual_mtu(d);
	char name[80], fix[96];
	size_t i;

	for (i = 0; i < d->n_rails && usual > 0; i++) {
		const struct doc_rail *r = &d->rail[i];

		if (!mtu_from_netdev(r) || r->netdev_mtu == usual)
			continue;
		rail_name(r, name, sizeof(name));
		snprintf(fix, sizeof(fix), "ip link set dev %s mtu %d", r->netdev, usual);
		cli_doctor_problem(d, true, name, fix,
				   "its netdev %s has MTU %d (port MTU %u) but the other rails' "
				   "have %d: both ends of a rail and its switch need the same MTU",
				   r->netdev, r->netdev_mtu, r->active_mtu, usual);
	}
}

static bool same_subnet(const struct doc_addr *a, const struct doc_addr *b)
{
	uint32_t mask;

	if (a->prefix != b->prefix || a->prefix == 0)
		return a->prefix == 0 && b->prefix == 0;
	mask = a->prefix >= 32 ? ~0u : ~(~0u >> a->prefix);
	return (a->addr & mask) == (b->addr & mask);
}

/* Whether planned rail r shares an IPv4 subnet with another planned rail. */
static bool shares_subnet(const struct cli_doctor *d, size_t r)
{
	size_t k, i, j;

	for (k = 0; k < d->n_rails; k++) {
		if (k == r || !d->rail[k].planned || !strcmp(d->rail[k].netdev, d->rail[r].netdev))
			continue;
		for (i = 0; i < d->rail[r].n_addrs; i++)
			for (j = 0; j < d->rail[k].n_addrs; j++)
				if (same_subnet(&d->rail[r].addr[i], &d->rail[k].addr[j]))
					return true;
	}
	return false;
}

struct sysctl_rule {
	const char *name;
	size_t off;	    /* of the effective value in struct doc_sysctl */
	bool (*bad)(int v); /* what breaks rails that share a subnet */
	int want;	    /* what the fix sets */
	const char *why;
};

static bool arp_ignore_bad(int v)
{
	return v == 0 || v == 8; /* 0: any interface answers; 8: none does */
}

static bool arp_announce_bad(int v)
{
	return v == 0;
}

static bool rp_filter_bad(int v)
{
	return v == 1;
}

static const struct sysctl_rule sysctl_rules[] = {
	{"arp_ignore", offsetof(struct doc_sysctl, arp_ignore), arp_ignore_bad, 2,
	 "ARP answers for one rail's address come from another rail, and the peer's "
	 "connections land on the wrong device (rdma-core's librdmacm documentation)"},
	{"arp_announce", offsetof(struct doc_sysctl, arp_announce), arp_announce_bad, 2,
	 "ARP requests may carry another rail's address, so the peer learns the wrong MAC for it"},
	{"rp_filter", offsetof(struct doc_sysctl, rp_filter), rp_filter_bad, 2,
	 "strict reverse-path filtering drops a rail's packets the routing table sends out "
	 "of another interface of the subnet"},
};

/* One problem per setting, naming every rail interface it breaks. */
static void check_sysctl_rule(struct cli_doctor *d, const struct sysctl_rule *rule)
{
	char ifs[256] = "", fix[256];
	size_t i, used = 0, n = 0;
	int fix_used;

	fix_used = snprintf(fix, sizeof(fix), "sysctl -w net.ipv4.conf.all.%s=%d", rule->name,
			    rule->want);
	for (i = 0; i < d->n_rails; i++) {
		const struct doc_rail *r = &d->rail[i];
		int v = *(const int *)(const void *)((const char *)&r->sys + rule->off);

		if (!r->planned || v < 0 || !rule->bad(v) || !shares_subnet(d, i) ||
		    strstr(ifs, r->netdev))
			continue;
		used += (size_t)snprintf(ifs + used, sizeof(ifs) - used, "%s%s=%d", n++ ? ", " : "",
					 r->netdev, v);
		if (fix_used > 0 && (size_t)fix_used < sizeof(fix))
			fix_used += snprintf(fix + fix_used, sizeof(fix) - (size_t)fix_used,
					     " net.ipv4.conf.%s.%s=%d", r->netdev, rule->name,
					     rule->want);
		if (used >= sizeof(ifs))
			break;
	}
	if (n)
		cli_doctor_problem(d, true, rule->name, fix,
				   "rail interfaces share a subnet and %s is %s: %s", rule->name,
				   ifs, rule->why);
}

static void check_memlock(struct cli_doctor *d)
{
	char need[32], have[32];

	if (d->lock_any || d->memlock_limit >= d->memlock_need)
		return;
	cli_size_str(d->memlock_need, need, sizeof(need));
	cli_size_str(d->memlock_limit, have, sizeof(have));
	cli_doctor_problem(d, true, "memlock", "ulimit -l unlimited",
			   "the default plan's buffer pools need %s of locked memory but the "
			   "limit is %s (or set memlock in /etc/security/limits.conf)",
			   need, have);
}

static void check_hugepages(struct cli_doctor *d, const struct doc_node *n)
{
	const uint64_t page = 2ull << 20;
	uint64_t want = (n->pool_bytes + page - 1) / page;
	char what[32], fix[160], sz[32];

	if (!n->pool_bytes || n->huge_2m_free >= want ||
	    n->huge_1g_free * (1ull << 30) >= n->pool_bytes)
		return;
	snprintf(what, sizeof(what), "node %d", n->id);
	cli_size_str(n->pool_bytes, sz, sizeof(sz));
	snprintf(fix, sizeof(fix),
		 "echo %llu > /sys/devices/system/node/node%d/hugepages/hugepages-2048kB/"
		 "nr_hugepages",
		 (unsigned long long)(n->huge_2m_total + want - n->huge_2m_free), n->id);
	cli_doctor_problem(d, false, what, fix,
			   "the worker's %s pool needs %llu free 2 MiB hugepages, the node has "
			   "%llu: it falls back to transparent hugepages",
			   sz, (unsigned long long)want, (unsigned long long)n->huge_2m_free);
}

static void check_no_device(struct cli_doctor *d)
{
	char fix[128];

	snprintf(fix, sizeof(fix), "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev %s",
		 d->suggest_netdev[0] ? d->suggest_netdev : "IF");
	cli_doctor_problem(d, true, "devices", fix,
			   "no RDMA device: this host has no InfiniBand or RoCE NIC (or its driver "
			   "is not loaded) and no Soft-RoCE device; Soft-RoCE over an Ethernet "
			   "netdev gives one");
}

/* Whether the rail named name ("mlx5_0:1") is an InfiniBand port of this host. */
static bool named_ib(const struct cli_doctor *d, const char *name)
{
	char own[80];
	size_t i;

	for (i = 0; i < d->n_rails; i++) {
		rail_name(&d->rail[i], own, sizeof(own));
		if (!strcmp(own, name))
			return is_ib(&d->rail[i]);
	}
	return false;
}

/* With HOST: each rail's session over it. */
static void check_peer(struct cli_doctor *d)
{
	size_t i;

	for (i = 0; i < d->n_peer; i++) {
		const struct doc_peer_rail *p = &d->peer[i];

		if (!p->ok)
			cli_doctor_problem(d, true, p->rail, NULL, "no session with %s over it: %s",
					   d->host, p->error);
		else if (p->mtu && p->peer_mtu && p->mtu != p->peer_mtu)
			cli_doctor_problem(
				d, true, p->rail, NULL,
				"this end's port MTU is %u and the peer's (%s) %u: the "
				"rail runs at %u; %s",
				p->mtu, p->peer, p->peer_mtu,
				p->mtu < p->peer_mtu ? p->mtu : p->peer_mtu,
				named_ib(d, p->rail)
					? "on InfiniBand no netdev sets it: the subnet "
					  "manager gives each port the MTU it and its switch "
					  "port support (ibportstate shows both)"
					: "give both ends' netdevs the same MTU (ip link set "
					  "dev IF mtu N)");
	}
}

void cli_doctor_check(struct cli_doctor *d)
{
	size_t i;

	if (d->no_device) {
		check_no_device(d);
	} else {
		for (i = 0; i < d->n_rails; i++) {
			check_port(d, &d->rail[i]);
			check_gids(d, &d->rail[i]);
			check_mtu_fits(d, &d->rail[i]);
		}
		check_mtu_alike(d);
		for (i = 0; i < RCP_ARRAY_SIZE(sysctl_rules); i++)
			check_sysctl_rule(d, &sysctl_rules[i]);
		if (d->plan_error[0])
			cli_doctor_problem(d, true, "plan", NULL, "no plan for copies: %s",
					   d->plan_error);
	}
	check_memlock(d);
	for (i = 0; i < d->n_nodes; i++)
		check_hugepages(d, &d->node[i]);
	check_peer(d);
}
