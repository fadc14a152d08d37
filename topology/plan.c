/*
 * plan.c - where workers run and which rails they drive: a pure function of
 * a machine (plain data) and the user's options, so every rule below is
 * pinned by unit tests on machine shapes we do not have.
 *
 * Policy:
 *  1. Rails: every ACTIVE port, except those local to a node the process
 *     binding excludes (numactl, taskset, cgroup: the operator asked railcp
 *     to stay off that node). --rails names the ports instead; a named port
 *     that is missing or not ACTIVE is an error, not a warning: a transfer
 *     planned on it would fail later, after the pools are set up.
 *  2. Workers: one per usable NUMA node that has at least one of those rails
 *     local to it, pinned to the node's allowed CPUs. A node without a local
 *     rail gets no worker unless --numa names it; --numa names the worker
 *     nodes exactly, and each must be usable.
 *  3. A rail whose node has no worker (a CPU-less node, a node --numa left
 *     out, a node excluded by the binding but named in --rails) goes to the
 *     nearest worker by NUMA distance; ties go to the worker with fewer
 *     rails, then to the lower node.
 *  4. A rail of unknown locality goes to the worker with the fewest rails at
 *     that point (ties: lower node), after all rails of known locality, so
 *     unknown rails spread over the workers instead of piling on node 0.
 *  5. If rails exist but no node qualifies by rule 2, one worker is made on
 *     the usable node nearest to the first rail of known locality, or on the
 *     lowest usable node when no locality is known.
 *  6. Each rail carries qps-per-rail stripes (default in topology.h). A
 *     worker's pool is --buffer-mib, else TOPO_STRIPE_BUFFER_MIB per stripe.
 *
 * Threading: pure; thread-safe.
 */
#include "topology/topology.h"
#include "topology/topo_int.h"

#include "common/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct plan_ctx {
	const struct topo_machine *m;
	const struct topo_opts *o;
	struct topo_plan *p;
	bool use[TOPO_MAX_RAILS];   /* machine rails in the plan */
	int worker[TOPO_MAX_RAILS]; /* their worker, -1 until placed */
	char placement[TOPO_MAX_RAILS][192];
	size_t load[TOPO_MAX_NODES]; /* rails per worker so far */
};

static void plan_note(struct topo_plan *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void plan_note(struct topo_plan *p, const char *fmt, ...)
{
	size_t used = strlen(p->notes);
	va_list ap;

	if (used + 2 >= sizeof(p->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(p->notes + used, sizeof(p->notes) - used - 1, fmt, ap);
	va_end(ap);
	strcat(p->notes, "\n");
}

/* The machine's node of a rail, or NULL when unknown or not in the machine. */
static const struct topo_node *rail_node(const struct topo_machine *m, const struct topo_rail *r)
{
	int i = r->numa_node >= 0 ? topo_machine_node_index(m, r->numa_node) : -1;

	return i >= 0 ? &m->node[i] : NULL;
}

static void rail_list(const struct topo_machine *m, char *buf, size_t len)
{
	size_t i, used = 0;

	snprintf(buf, len, "none");
	for (i = 0; i < m->n_rails && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s:%u", i ? ", " : "",
					 m->rail[i].dev, m->rail[i].port);
}

static int select_named_rails(struct plan_ctx *c)
{
	const struct topo_machine *m = c->m;
	char have[512];
	size_t s, i;

	for (s = 0; s < c->o->n_rails; s++) {
		const struct topo_rail_sel *sel = &c->o->rails[s];
		size_t hits = 0;

		for (i = 0; i < m->n_rails; i++) {
			if (strcmp(m->rail[i].dev, sel->dev) ||
			    (sel->port && sel->port != m->rail[i].port))
				continue;
			if (!m->rail[i].active)
				return rcp_err(-EINVAL,
					       "--rails names %s:%u, which is %s; only ACTIVE "
					       "ports carry traffic",
					       m->rail[i].dev, m->rail[i].port, m->rail[i].state);
			c->use[i] = true;
			hits++;
		}
		if (hits == 0) {
			char name[80];

			if (sel->port)
				snprintf(name, sizeof(name), "%s:%u", sel->dev, sel->port);
			else
				snprintf(name, sizeof(name), "%s", sel->dev);
			rail_list(m, have, sizeof(have));
			return rcp_err(-EINVAL,
				       "--rails names %s, which %s does not have "
				       "(its ports: %s)",
				       name, m->source, have);
		}
	}
	return 0;
}

static void select_rails(struct plan_ctx *c)
{
	const struct topo_machine *m = c->m;
	size_t i;

	for (i = 0; i < m->n_rails; i++) {
		const struct topo_rail *r = &m->rail[i];
		const struct topo_node *n = rail_node(m, r);

		if (!r->active)
			plan_note(c->p, "%s:%u: the port is %s", r->dev, r->port, r->state);
		else if (n && n->excluded)
			plan_note(c->p,
				  "%s:%u: it is local to node %d, which the process "
				  "may not use (%s)",
				  r->dev, r->port, n->id, n->why);
		else
			c->use[i] = true;
	}
}

static void worker_add(struct plan_ctx *c, const struct topo_node *n, const char *why)
{
	struct topo_worker *w = &c->p->worker[c->p->n_workers++];

	w->node = n->id;
	w->cpus = n->cpus;
	snprintf(w->why, sizeof(w->why), "%s", why);
}

static int worker_index(const struct topo_plan *p, int node)
{
	size_t i;

	for (i = 0; i < p->n_workers; i++)
		if (p->worker[i].node == node)
			return (int)i;
	return -1;
}

static int workers_from_numa(struct plan_ctx *c)
{
	const struct topo_machine *m = c->m;
	char nodes[128];
	int id, i;

	for (id = topo_bitmap_next(&c->o->nodes, 0); id >= 0;
	     id = topo_bitmap_next(&c->o->nodes, (unsigned)id + 1)) {
		i = topo_machine_node_index(m, id);
		if (i < 0) {
			struct topo_bitmap all;
			size_t k;

			topo_bitmap_zero(&all);
			for (k = 0; k < m->n_nodes; k++)
				topo_bitmap_set(&all, (unsigned)m->node[k].id);
			topo_bitmap_format(&all, nodes, sizeof(nodes));
			return rcp_err(-EINVAL,
				       "--numa names node %d, which %s does not have "
				       "(its nodes: %s)",
				       id, m->source, nodes);
		}
		if (!m->node[i].usable)
			return rcp_err(-EINVAL,
				       "--numa names node %d, which this process cannot use: "
				       "%s",
				       id, m->node[i].why);
		worker_add(c, &m->node[i], "asked by --numa");
	}
	return 0;
}

/* Rule 5: the usable node nearest to the first rail of known locality. */
static int worker_fallback(struct plan_ctx *c)
{
	const struct topo_machine *m = c->m;
	int from = -1, best = -1;
	size_t i;

	for (i = 0; i < m->n_rails && from < 0; i++)
		if (c->use[i] && rail_node(m, &m->rail[i]))
			from = topo_machine_node_index(m, m->rail[i].numa_node);
	for (i = 0; i < m->n_nodes; i++) {
		if (!m->node[i].usable)
			continue;
		if (best < 0 || (from >= 0 && m->dist[from][i] < m->dist[from][best]))
			best = (int)i;
	}
	if (best < 0)
		return rcp_err(-EINVAL, "no NUMA node of %s can host a worker: %s", m->source,
			       m->n_nodes ? m->node[0].why : "it has none");
	worker_add(c, &m->node[best],
		   from >= 0 ? "nearest usable node to its rails"
			     : "lowest usable node (rail locality unknown)");
	return 0;
}

static int select_workers(struct plan_ctx *c)
{
	const struct topo_machine *m = c->m;
	bool any_rail = false;
	size_t i, r;

	if (c->o->nodes_set)
		return workers_from_numa(c);
	for (r = 0; r < m->n_rails; r++)
		any_rail |= c->use[r];
	for (i = 0; i < m->n_nodes; i++) {
		bool local = false;

		for (r = 0; r < m->n_rails; r++)
			local |= c->use[r] && m->rail[r].numa_node == m->node[i].id;
		if (local && m->node[i].usable)
			worker_add(c, &m->node[i], "node-local rails");
	}
	if (c->p->n_workers == 0 && any_rail)
		return worker_fallback(c);
	return 0;
}

/* Worker with the smallest distance from node position x (ties: load, then order). */
static int nearest_worker(const struct plan_ctx *c, int x)
{
	const struct topo_machine *m = c->m;
	int best = -1;
	size_t w;

	for (w = 0; w < c->p->n_workers; w++) {
		int y = topo_machine_node_index(m, c->p->worker[w].node);
		unsigned d = x >= 0 ? m->dist[x][y] : 0;
		unsigned bd =
			best >= 0 && x >= 0
				? m->dist[x][topo_machine_node_index(m, c->p->worker[best].node)]
				: 0;

		if (best < 0 || d < bd || (d == bd && c->load[w] < c->load[best]))
			best = (int)w;
	}
	return best;
}

static void place(struct plan_ctx *c, size_t r, int w)
{
	c->worker[r] = w;
	c->load[w]++;
}

static void assign_rails(struct plan_ctx *c)
{
	const struct topo_machine *m = c->m;
	size_t r;

	for (r = 0; r < m->n_rails; r++) { /* rule 2: local */
		const struct topo_node *n = rail_node(m, &m->rail[r]);
		int w = n ? worker_index(c->p, n->id) : -1;

		if (c->use[r] && w >= 0) {
			place(c, r, w);
			snprintf(c->placement[r], sizeof(c->placement[r]), "local to node %d",
				 n->id);
		}
	}
	for (r = 0; r < m->n_rails; r++) { /* rule 3: nearest */
		const struct topo_node *n = rail_node(m, &m->rail[r]);
		int w;

		if (!c->use[r] || c->worker[r] >= 0 || !n)
			continue;
		w = nearest_worker(c, topo_machine_node_index(m, n->id));
		place(c, r, w);
		snprintf(c->placement[r], sizeof(c->placement[r]),
			 "node %d has no worker (%s); nearest worker is node %d, distance %u",
			 n->id, n->why[0] ? n->why : "not chosen by --numa", c->p->worker[w].node,
			 m->dist[topo_machine_node_index(m, n->id)]
				[topo_machine_node_index(m, c->p->worker[w].node)]);
	}
	for (r = 0; r < m->n_rails; r++) { /* rule 4: unknown */
		int w;

		if (!c->use[r] || c->worker[r] >= 0)
			continue;
		w = nearest_worker(c, -1);
		place(c, r, w);
		snprintf(c->placement[r], sizeof(c->placement[r]),
			 "locality unknown (%s); given to the least loaded worker, node %d",
			 m->rail[r].rule, c->p->worker[w].node);
	}
}

/* Copy placed rails into the plan grouped by worker; size the pools. */
static void plan_finish(struct plan_ctx *c, unsigned qps)
{
	const struct topo_machine *m = c->m;
	struct topo_plan *p = c->p;
	size_t w, r;

	p->qps_per_rail = qps;
	for (w = 0; w < p->n_workers; w++) {
		struct topo_worker *wk = &p->worker[w];
		const struct topo_node *n = &m->node[topo_machine_node_index(m, wk->node)];

		wk->first_rail = p->n_rails;
		for (r = 0; r < m->n_rails; r++) {
			struct topo_plan_rail *pr = &p->rail[p->n_rails];

			if (!c->use[r] || c->worker[r] != (int)w)
				continue;
			snprintf(pr->dev, sizeof(pr->dev), "%s", m->rail[r].dev);
			pr->port = m->rail[r].port;
			pr->gbps = m->rail[r].gbps;
			pr->numa_node = m->rail[r].numa_node;
			pr->worker = (unsigned)w;
			pr->qps = qps;
			memcpy(pr->placement, c->placement[r], sizeof(pr->placement));
			p->n_rails++;
		}
		wk->n_rails = p->n_rails - wk->first_rail;
		wk->buffer_bytes = c->o->buffer_mib ? (uint64_t)c->o->buffer_mib << 20
						    : topo__buffer_default(wk->n_rails, qps);
		wk->page = topo__page_expect(m, n, wk->buffer_bytes);
		p->buffer_total += wk->buffer_bytes;
	}
}

static int plan_check_opts(const struct topo_opts *o, unsigned *qps_out)
{
	unsigned qps = o->qps_per_rail ? o->qps_per_rail : TOPO_DEFAULT_QPS_PER_RAIL;

	if (qps > TOPO_MAX_QPS_PER_RAIL)
		return rcp_err(-EINVAL, "--qps-per-rail %u is more than %d", qps,
			       TOPO_MAX_QPS_PER_RAIL);
	if (o->buffer_mib > TOPO_MAX_BUFFER_MIB)
		return rcp_err(-EINVAL, "--buffer-mib %u is more than %d", o->buffer_mib,
			       TOPO_MAX_BUFFER_MIB);
	*qps_out = qps;
	return 0;
}

static int no_rail_error(const struct plan_ctx *c)
{
	const char *first = c->p->notes;
	int len = (int)strcspn(first, "\n");

	if (c->m->n_rails == 0)
		return rcp_err(-ENODEV, "no RDMA rail on %s: it has no RDMA device", c->m->source);
	return rcp_err(-ENODEV, "no usable RDMA rail on %s: %.*s", c->m->source, len, first);
}

int topo_plan_build(const struct topo_machine *m, const struct topo_opts *opts,
		    struct topo_plan **plan_out)
{
	static const struct topo_opts none;
	struct plan_ctx *c;
	unsigned qps = 0;
	size_t r;
	int err;

	opts = opts ? opts : &none;
	err = plan_check_opts(opts, &qps);
	if (err)
		return err;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->p = calloc(1, sizeof(*c->p));
	if (!c->p) {
		err = -ENOMEM;
		goto out_free_ctx;
	}
	c->m = m;
	c->o = opts;
	for (r = 0; r < TOPO_MAX_RAILS; r++)
		c->worker[r] = -1;
	if (opts->n_rails)
		err = select_named_rails(c);
	else
		select_rails(c);
	err = err ? err : select_workers(c);
	if (!err && c->p->n_workers == 0)
		err = no_rail_error(c);
	if (err)
		goto out_free_plan;
	assign_rails(c);
	plan_finish(c, qps);
	*plan_out = c->p;
	free(c);
	return 0;

out_free_plan:
	free(c->p);
out_free_ctx:
	free(c);
	return err;
}

void topo_plan_destroy(struct topo_plan *plan)
{
	free(plan);
}

uint64_t topo__buffer_default(size_t n_rails, unsigned qps)
{
	return (uint64_t)(n_rails ? n_rails : 1) * qps * ((uint64_t)TOPO_STRIPE_BUFFER_MIB << 20);
}

static uint64_t round_up(uint64_t v, uint64_t unit)
{
	return (v + unit - 1) / unit * unit;
}

enum topo_page topo__page_expect(const struct topo_machine *m, const struct topo_node *n,
				 uint64_t bytes)
{
	/* A 1 GiB page only for pools of at least 1 GiB: smaller ones would waste most of it. */
	if (bytes >= (1ull << 30) && n->huge_1g << 30 >= round_up(bytes, 1ull << 30))
		return TOPO_PAGE_1G;
	if (n->huge_2m << 21 >= round_up(bytes, 2ull << 20))
		return TOPO_PAGE_2M;
	return m->thp ? TOPO_PAGE_THP : TOPO_PAGE_4K;
}

const char *topo_page_str(enum topo_page page)
{
	switch (page) {
	case TOPO_PAGE_1G:
		return "1 GiB hugepages";
	case TOPO_PAGE_2M:
		return "2 MiB hugepages";
	case TOPO_PAGE_THP:
		return "transparent hugepages";
	case TOPO_PAGE_4K:
		return "4 KiB pages";
	}
	return "unknown";
}
