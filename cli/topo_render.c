/*
 * topo_render.c - `railcp topo` output: the machine and the plan for a
 * person (one screen, in the spirit of lstopo) and as JSON for scripts.
 *
 * JSON keys are stable: tests/integration/testbed/topo_*.sh read them.
 */
#include "cli/session.h"
#include "cli/topo.h"

#include <inttypes.h>
#include <string.h>

static void size_str(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= (1ull << 30))
		snprintf(buf, len, "%.1f GiB", (double)bytes / (double)(1ull << 30));
	else
		snprintf(buf, len, "%" PRIu64 " MiB", (uint64_t)(bytes >> 20));
}

static json_t *cpus_json(const struct topo_bitmap *b)
{
	json_t *a = json_array();
	int c;

	for (c = topo_bitmap_next(b, 0); c >= 0; c = topo_bitmap_next(b, (unsigned)c + 1))
		json_array_append_new(a, json_integer(c));
	return a;
}

static json_t *node_json(const struct topo_node *n)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", json_integer(n->id));
	json_object_set_new(o, "cpus", cpus_json(&n->cpus));
	json_object_set_new(o, "cpus_total", json_integer(n->n_cpus_all));
	json_object_set_new(o, "memory_bytes", json_integer((json_int_t)n->mem_bytes));
	json_object_set_new(o, "hugepages_2m", json_integer((json_int_t)n->huge_2m));
	json_object_set_new(o, "hugepages_1g", json_integer((json_int_t)n->huge_1g));
	json_object_set_new(o, "usable", json_boolean(n->usable));
	json_object_set_new(o, "why_not", n->why[0] ? json_string(n->why) : json_null());
	return o;
}

static json_t *rail_json(const struct topo_rail *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "device", json_string(r->dev));
	json_object_set_new(o, "port", json_integer(r->port));
	json_object_set_new(o, "state", json_string(r->state));
	json_object_set_new(o, "active", json_boolean(r->active));
	json_object_set_new(o, "link_layer", json_string(r->link_layer));
	json_object_set_new(o, "speed_gbps", r->gbps > 0 ? json_real(r->gbps) : json_null());
	json_object_set_new(o, "numa_node",
			    r->numa_node >= 0 ? json_integer(r->numa_node) : json_null());
	json_object_set_new(o, "numa_rule", json_string(r->rule));
	return o;
}

json_t *cli_topo_machine_json(const struct topo_machine *m)
{
	json_t *o = json_object(), *nodes = json_array(), *rails = json_array();
	json_t *dist = json_array();
	size_t i, j;

	json_object_set_new(o, "source", json_string(m->source));
	json_object_set_new(o, "host", json_string(m->host));
	json_object_set_new(o, "thp", json_boolean(m->thp));
	for (i = 0; i < m->n_nodes; i++) {
		json_t *row = json_array();

		json_array_append_new(nodes, node_json(&m->node[i]));
		for (j = 0; j < m->n_nodes; j++)
			json_array_append_new(row, json_integer(m->dist[i][j]));
		json_array_append_new(dist, row);
	}
	for (i = 0; i < m->n_rails; i++)
		json_array_append_new(rails, rail_json(&m->rail[i]));
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "distances", dist);
	json_object_set_new(o, "distances_known", json_boolean(m->dist_known));
	json_object_set_new(o, "rails", rails);
	return o;
}

static json_t *plan_rail_json(const struct topo_plan_rail *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "device", json_string(r->dev));
	json_object_set_new(o, "port", json_integer(r->port));
	json_object_set_new(o, "qps", json_integer(r->qps));
	json_object_set_new(o, "speed_gbps", r->gbps > 0 ? json_real(r->gbps) : json_null());
	json_object_set_new(o, "numa_node",
			    r->numa_node >= 0 ? json_integer(r->numa_node) : json_null());
	json_object_set_new(o, "placement", json_string(r->placement));
	return o;
}

static json_t *notes_json(const char *notes)
{
	json_t *a = json_array();
	const char *p = notes;

	while (*p) {
		size_t len = strcspn(p, "\n");

		json_array_append_new(a, json_stringn(p, len));
		p += len + (p[len] == '\n');
	}
	return a;
}

/* A knob of the plan: its number, or null when not set. */
static json_t *knob_json(bool set, unsigned v)
{
	return set ? json_integer(v) : json_null();
}

json_t *cli_topo_plan_json(const struct topo_plan *p)
{
	json_t *o = json_object(), *workers = json_array();
	size_t w, r;

	json_object_set_new(o, "qps_per_rail", json_integer(p->qps_per_rail));
	json_object_set_new(o, "buffer_total_bytes", json_integer((json_int_t)p->buffer_total));
	json_object_set_new(o, "tos", knob_json(p->knobs.tos_set, p->knobs.tos));
	json_object_set_new(o, "ack_timeout",
			    knob_json(p->knobs.ack_timeout, p->knobs.ack_timeout));
	json_object_set_new(o, "retry_count",
			    knob_json(p->knobs.retry_count, p->knobs.retry_count));
	json_object_set_new(o, "connect_timeout",
			    knob_json(p->knobs.connect_timeout, p->knobs.connect_timeout));
	for (w = 0; w < p->n_workers; w++) {
		const struct topo_worker *wk = &p->worker[w];
		json_t *wo = json_object(), *rails = json_array();

		json_object_set_new(wo, "node", json_integer(wk->node));
		json_object_set_new(wo, "cpus", cpus_json(&wk->cpus));
		json_object_set_new(wo, "buffer_bytes", json_integer((json_int_t)wk->buffer_bytes));
		json_object_set_new(wo, "pages", json_string(topo_page_str(wk->page)));
		json_object_set_new(wo, "why", json_string(wk->why));
		for (r = wk->first_rail; r < wk->first_rail + wk->n_rails; r++)
			json_array_append_new(rails, plan_rail_json(&p->rail[r]));
		json_object_set_new(wo, "rails", rails);
		json_array_append_new(workers, wo);
	}
	json_object_set_new(o, "workers", workers);
	json_object_set_new(o, "left_out", notes_json(p->notes));
	return o;
}

json_t *cli_topo_checks_json(const struct cli_topo_check *c, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "node", json_integer(c[i].node));
		json_object_set_new(o, "ok", json_boolean(cli_topo_check_ok(&c[i])));
		json_object_set_new(o, "bytes", json_integer((json_int_t)c[i].bytes));
		json_object_set_new(o, "pages", json_string(topo_page_str(c[i].page)));
		json_object_set_new(o, "page_node_first", json_integer(c[i].probe.node_first));
		json_object_set_new(o, "page_node_last", json_integer(c[i].probe.node_last));
		json_object_set_new(o, "kernel_page_bytes",
				    json_integer((json_int_t)c[i].probe.kernel_page));
		json_object_set_new(o, "thp_bytes", json_integer((json_int_t)c[i].probe.anon_huge));
		json_object_set_new(o, "cpu", json_integer(c[i].cpu));
		json_object_set_new(o, "cpu_ok", json_boolean(c[i].cpu_ok));
		json_object_set_new(o, "fallback",
				    c[i].fallback[0] ? json_string(c[i].fallback) : json_null());
		json_array_append_new(a, o);
	}
	return a;
}

static void node_print(FILE *f, const struct topo_machine *m, size_t i)
{
	const struct topo_node *n = &m->node[i];
	char cpus[256], mem[32];
	size_t j;

	topo_bitmap_format(&n->cpus, cpus, sizeof(cpus));
	size_str(n->mem_bytes, mem, sizeof(mem));
	fprintf(f,
		"  node %-2d cpus %s (%u of %u allowed)  %s  hugepages %" PRIu64 " x 2M, %" PRIu64
		" x 1G  distances",
		n->id, cpus, topo_bitmap_count(&n->cpus), n->n_cpus_all, mem, n->huge_2m,
		n->huge_1g);
	for (j = 0; j < m->n_nodes; j++)
		fprintf(f, " %u", m->dist[i][j]);
	fprintf(f, "%s\n", m->dist_known ? "" : " (assumed)");
	if (!n->usable)
		fprintf(f, "          no worker can run here: %s\n", n->why);
}

void cli_topo_machine_print(FILE *f, const struct topo_machine *m)
{
	size_t i;

	fprintf(f, "machine: %s (host %s), %zu NUMA node%s, %zu rail%s\n", m->source, m->host,
		m->n_nodes, m->n_nodes == 1 ? "" : "s", m->n_rails, m->n_rails == 1 ? "" : "s");
	for (i = 0; i < m->n_nodes; i++)
		node_print(f, m, i);
	for (i = 0; i < m->n_rails; i++) {
		const struct topo_rail *r = &m->rail[i];
		char name[80], speed[32] = "speed ?";

		snprintf(name, sizeof(name), "%s:%u", r->dev, r->port);
		if (r->gbps > 0)
			snprintf(speed, sizeof(speed), "%g Gb/s", r->gbps);
		fprintf(f, "  rail %-12s %-7s %-10s %-10s ", name, r->state, r->link_layer, speed);
		if (r->numa_node >= 0)
			fprintf(f, "node %d (%s)\n", r->numa_node, r->rule);
		else
			fprintf(f, "node ? (%s)\n", r->rule);
	}
}

void cli_topo_plan_print(FILE *f, const struct topo_plan *p)
{
	char cpus[256], total[32], buf[32], knobs[128];
	const char *n;
	size_t w, r;

	size_str(p->buffer_total, total, sizeof(total));
	fprintf(f, "plan: %zu worker%s, %zu rail%s, %u QPs per rail, %s of buffers\n", p->n_workers,
		p->n_workers == 1 ? "" : "s", p->n_rails, p->n_rails == 1 ? "" : "s",
		p->qps_per_rail, total);
	cli_knobs_str(&p->knobs, knobs, sizeof(knobs));
	if (knobs[0]) /* set by options or the profile */
		fprintf(f, "  fabric knobs: %s\n", knobs);
	for (w = 0; w < p->n_workers; w++) {
		const struct topo_worker *wk = &p->worker[w];

		topo_bitmap_format(&wk->cpus, cpus, sizeof(cpus));
		size_str(wk->buffer_bytes, buf, sizeof(buf));
		fprintf(f, "  worker %zu: node %d, cpus %s, %s on %s (%s)\n", w, wk->node, cpus,
			buf, topo_page_str(wk->page), wk->why);
		for (r = wk->first_rail; r < wk->first_rail + wk->n_rails; r++)
			fprintf(f, "    %s:%u  %u QPs  %s\n", p->rail[r].dev, p->rail[r].port,
				p->rail[r].qps, p->rail[r].placement);
	}
	for (n = p->notes; *n;) {
		size_t len = strcspn(n, "\n");

		fprintf(f, "  left out: %.*s\n", (int)len, n);
		n += len + (n[len] == '\n');
	}
}

void cli_topo_checks_print(FILE *f, const struct cli_topo_check *c, size_t n)
{
	size_t i;

	fprintf(f, "buffers:\n");
	for (i = 0; i < n; i++)
		fprintf(f,
			"  worker %zu: node %d, %" PRIu64 " MiB of %s, pages on node %d..%d, "
			"kernel page %" PRIu64 " KiB, %" PRIu64 " KiB THP, ran on cpu %d: %s\n",
			i, c[i].node, (uint64_t)(c[i].bytes >> 20), topo_page_str(c[i].page),
			c[i].probe.node_first, c[i].probe.node_last,
			(uint64_t)(c[i].probe.kernel_page >> 10),
			(uint64_t)(c[i].probe.anon_huge >> 10), c[i].cpu,
			cli_topo_check_ok(&c[i]) ? "ok" : "WRONG");
}
