/*
 * doctor_out.c - `railcp doctor`'s report: for people (each rail, its GID
 * table as show_gids lays it out, memlock, hugepages, the peer's figures,
 * then one line per problem and its fix), and as one JSON object.
 *
 * Threading: not thread-safe (reads the caller's struct).
 */
#include "cli/doctor.h"

#include "cli/cli.h"

#include <string.h>

static void print_rail(FILE *f, const struct doc_rail *r)
{
	size_t i;

	fprintf(f, "%s:%u  %s  %s  port MTU %u%s\n", r->dev, r->port, r->state, r->link_layer,
		r->active_mtu, r->planned ? "  (in the plan)" : "  (not in the plan)");
	if (r->netdev[0]) {
		fprintf(f, "  netdev %s (%s) MTU ", r->netdev, r->operstate);
		fprintf(f, r->netdev_mtu < 0 ? "unknown" : "%d", r->netdev_mtu);
		for (i = 0; i < r->n_addrs; i++)
			fprintf(f, "%s%s", i ? ", " : "  addresses ", r->addr[i].text);
		fprintf(f, "\n  arp_ignore %d, arp_announce %d, rp_filter %d\n", r->sys.arp_ignore,
			r->sys.arp_announce, r->sys.rp_filter);
	}
	if (r->n_gids)
		fprintf(f, "  %-5s %-39s %-8s %-24s %s\n", "INDEX", "GID", "VER", "IPv4/IPv6",
			"NDEV");
	for (i = 0; i < r->n_gids; i++)
		fprintf(f, "  %-5u %-39s %-8s %-24s %s\n", r->gid[i].index, r->gid[i].gid,
			r->gid[i].type, r->gid[i].ip[0] ? r->gid[i].ip : "-",
			r->gid[i].ndev[0] ? r->gid[i].ndev : "-");
}

static void print_host(FILE *f, const struct cli_doctor *d)
{
	char a[32], b[32];
	size_t i;

	cli_size_str(d->memlock_need, b, sizeof(b));
	if (d->memlock_limit == UINT64_MAX)
		snprintf(a, sizeof(a), "unlimited");
	else
		cli_size_str(d->memlock_limit, a, sizeof(a));
	fprintf(f, "memlock: %s%s; %s%s\n", a,
		d->lock_any ? " (CAP_IPC_LOCK: no limit applies)" : "",
		d->memlock_need ? "the plan's buffer pools need " : "no plan to check it against",
		d->memlock_need ? b : "");
	for (i = 0; i < d->n_nodes; i++) {
		const struct doc_node *n = &d->node[i];

		cli_size_str(n->pool_bytes, a, sizeof(a));
		fprintf(f,
			"node %d: 2 MiB hugepages %llu free of %llu, 1 GiB %llu free of %llu; "
			"pool %s\n",
			n->id, (unsigned long long)n->huge_2m_free,
			(unsigned long long)n->huge_2m_total, (unsigned long long)n->huge_1g_free,
			(unsigned long long)n->huge_1g_total, n->pool_bytes ? a : "none");
	}
}

static void print_peer(FILE *f, const struct cli_doctor *d)
{
	size_t i;

	if (d->host)
		fprintf(f, "with %s, a 4 KiB write per rail, 3 times:\n", d->host);
	for (i = 0; i < d->n_peer; i++) {
		const struct doc_peer_rail *p = &d->peer[i];

		if (!p->ok)
			fprintf(f, "  %s: failed\n", p->rail);
		else
			fprintf(f,
				"  %s -> %s: MTU %u here, %u there, path MTU %u; round trip "
				"%.3f ms (median %.3f)\n",
				p->rail, p->peer, p->mtu, p->peer_mtu,
				p->mtu < p->peer_mtu ? p->mtu : p->peer_mtu, p->rtt_ms,
				p->rtt_ms_median);
	}
}

void cli_doctor_print(FILE *f, const struct cli_doctor *d)
{
	size_t i, hurt = 0;

	for (i = 0; i < d->n_rails; i++)
		print_rail(f, &d->rail[i]);
	print_host(f, d);
	print_peer(f, d);
	for (i = 0; i < d->n_probs; i++) {
		const struct doc_problem *p = &d->prob[i];

		hurt += p->hurts;
		fprintf(f, "%s: %s: %s\n", p->hurts ? "problem" : "note", p->what, p->text);
		if (p->fix[0])
			fprintf(f, "  fix: %s\n", p->fix);
	}
	if (d->n_probs_lost)
		fprintf(f, "problem: %zu more problems not shown\n", d->n_probs_lost);
	if (!d->n_probs)
		fprintf(f, "doctor: no problem found\n");
	else
		fprintf(f, "doctor: %zu problem%s that would hurt a copy, %zu note%s\n", hurt,
			hurt == 1 ? "" : "s", d->n_probs - hurt, d->n_probs - hurt == 1 ? "" : "s");
}

static json_t *str_or_null(const char *s)
{
	return cli_json_text(s[0] ? s : NULL);
}

static json_t *int_or_null(long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static json_t *gid_json(const struct doc_gid *g)
{
	return json_pack("{s:i, s:s, s:s, s:o, s:o, s:o}", "index", (int)g->index, "gid", g->gid,
			 "type", g->type, "ip", str_or_null(g->ip), "ip_version",
			 g->ipver ? json_integer(g->ipver) : json_null(), "netdev",
			 str_or_null(g->ndev));
}

static json_t *rail_json(const struct doc_rail *r)
{
	json_t *gids = json_array(), *addrs = json_array(), *o;
	char name[80];
	size_t i;

	for (i = 0; i < r->n_gids; i++)
		json_array_append_new(gids, gid_json(&r->gid[i]));
	for (i = 0; i < r->n_addrs; i++)
		json_array_append_new(addrs, cli_json_text(r->addr[i].text));
	snprintf(name, sizeof(name), "%s:%u", r->dev, r->port);
	o = json_pack("{s:s, s:s, s:i, s:b, s:s, s:s, s:i, s:o, s:o, s:o, s:o}", "name", name,
		      "device", r->dev, "port", (int)r->port, "planned", r->planned, "state",
		      r->state, "link_layer", r->link_layer, "active_mtu", (int)r->active_mtu,
		      "netdev", str_or_null(r->netdev), "netdev_mtu", int_or_null(r->netdev_mtu),
		      "operstate", str_or_null(r->operstate), "addresses", addrs);
	json_object_set_new(o, "sysctl",
			    json_pack("{s:o, s:o, s:o}", "arp_ignore",
				      int_or_null(r->sys.arp_ignore), "arp_announce",
				      int_or_null(r->sys.arp_announce), "rp_filter",
				      int_or_null(r->sys.rp_filter)));
	json_object_set_new(o, "gids", gids);
	return o;
}

static json_t *node_json(const struct doc_node *n)
{
	return json_pack("{s:i, s:I, s:I, s:I, s:I, s:I}", "node", n->id, "hugepages_2m_total",
			 (json_int_t)n->huge_2m_total, "hugepages_2m_free",
			 (json_int_t)n->huge_2m_free, "hugepages_1g_total",
			 (json_int_t)n->huge_1g_total, "hugepages_1g_free",
			 (json_int_t)n->huge_1g_free, "pool_bytes", (json_int_t)n->pool_bytes);
}

static json_t *peer_json(const struct doc_peer_rail *p)
{
	if (!p->ok)
		return json_pack("{s:s, s:b, s:s}", "rail", p->rail, "ok", 0, "error", p->error);
	return json_pack("{s:s, s:b, s:s, s:i, s:i, s:i, s:f, s:f}", "rail", p->rail, "ok", 1,
			 "peer", p->peer, "mtu", (int)p->mtu, "peer_mtu", (int)p->peer_mtu,
			 "path_mtu", (int)(p->mtu < p->peer_mtu ? p->mtu : p->peer_mtu), "rtt_ms",
			 p->rtt_ms, "rtt_ms_median", p->rtt_ms_median);
}

static json_t *host_json(const struct cli_doctor *d)
{
	json_t *nodes = json_array();
	size_t i;

	for (i = 0; i < d->n_nodes; i++)
		json_array_append_new(nodes, node_json(&d->node[i]));
	return json_pack("{s:{s:o, s:b, s:I}, s:o}", "memlock", "limit_bytes",
			 d->memlock_limit == UINT64_MAX
				 ? json_null()
				 : json_integer((json_int_t)d->memlock_limit),
			 "cap_ipc_lock", d->lock_any, "need_bytes", (json_int_t)d->memlock_need,
			 "nodes", nodes);
}

json_t *cli_doctor_json(const struct cli_doctor *d)
{
	json_t *o = host_json(d), *rails = json_array(), *probs = json_array(), *peer;
	size_t i;

	if (!o || !rails || !probs) {
		json_decref(o);
		json_decref(rails);
		json_decref(probs);
		return NULL;
	}
	for (i = 0; i < d->n_rails; i++)
		json_array_append_new(rails, rail_json(&d->rail[i]));
	for (i = 0; i < d->n_probs; i++)
		json_array_append_new(probs, json_pack("{s:s, s:b, s:s, s:o}", "what",
						       d->prob[i].what, "hurts", d->prob[i].hurts,
						       "problem", d->prob[i].text, "fix",
						       str_or_null(d->prob[i].fix)));
	json_object_set_new(o, "devices", json_boolean(!d->no_device));
	json_object_set_new(o, "rails", rails);
	peer = d->host ? json_array() : json_null();
	for (i = 0; d->host && i < d->n_peer; i++)
		json_array_append_new(peer, peer_json(&d->peer[i]));
	json_object_set_new(o, "peer_host", cli_json_text(d->host));
	json_object_set_new(o, "peer", peer);
	json_object_set_new(o, "problems", probs);
	json_object_set_new(o, "problems_not_shown", json_integer((json_int_t)d->n_probs_lost));
	json_object_set_new(o, "ok", json_boolean(!cli_doctor_hurts(d)));
	return o;
}
