/*
 * fuzz_topo.c - an hwloc XML export as `railcp topo --topology FILE.xml`
 * reads it (topology/machine.c, rails.c): a file anyone can hand to railcp,
 * from which it takes NUMA nodes, their CPUs, memory, hugepages and
 * distances, and rails from OpenFabrics OS devices (port state, speed, link
 * layer from the netdev beside them, locality from the PCI ancestor), then
 * a plan (plan.c) and a profile of it (profile.c).
 *
 * Design: the input is written to a file in the harness's temporary
 * directory and loaded with topo_machine_create and no binding, as the CLI
 * does for an XML file. hwloc parses it: railcp links the system libhwloc
 * and loads none of its plugins (topology/machine.c), so the reader is
 * always hwloc's own minimalistic parser, with or without Debian's
 * libhwloc-plugins and whatever HWLOC_LIBXML asks: the libxml2 reader is
 * code railcp never runs, and is not fuzzed here. hwloc is not built with
 * the sanitizers: its own memory errors are seen only where it calls into
 * libc.
 * hwloc's messages about bad XML are silenced (HWLOC_HIDE_ERRORS=2,
 * HWLOC_XML_VERBOSE=0 unless set: set them to see why an input is refused).
 * hwloc's own bugs (leaks, crashes, inputs that cost it 512 MiB) are kept
 * from stopping the run by topo_hwloc.c, linked into this harness alone.
 *
 * Checked, on a machine that loads: what topology.h says of it (node count,
 * nodes in id order, allowed CPUs among the node's CPUs, why a node is not
 * usable, default distances, rails in name/port order without duplicates,
 * port from 1, state and link layer from their known words, every string
 * ended inside its array). Then plans with the default options, more QPs and
 * a buffer size, --numa naming every usable node, --rails naming the first
 * active rail, and names the machine does not have: a plan that is built
 * must be sound (workers on distinct usable nodes with their CPUs, rails
 * grouped by worker, every active rail placed, a local rail on its own
 * node's worker, QPs and pools as asked), a refusal must be an error code
 * that leaves the output alone. The default plan, saved as a profile and
 * loaded again, must come back the same.
 *
 * Seeds: tests/fuzz/corpus/topo/ holds plain copies of the machine fixtures
 * tests/fixtures/topo_*.xml, and the files that found the bugs fixed with
 * this harness (test_topo_xml.c's tests), made from them by hand: a
 * node listed twice, infinite CPU sets, node 100, every other CPU of 1024,
 * 64 ports of a 63-character name, a device name with a comma, a host name
 * with a newline. fuzz_topo.dict has hwloc's XML words.
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "topology/topology.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_plan.h"
#include "tests/fuzz/topo_hwloc.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char xml_path[4200], profile_path[4200];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Not overwritten: whoever reproduces an input may want hwloc's reasons. */
	setenv("HWLOC_HIDE_ERRORS", "2", 0);
	setenv("HWLOC_XML_VERBOSE", "0", 0);
	fuzz_hwloc_init();
	snprintf(xml_path, sizeof(xml_path), "%s/topo.xml", fuzz_tmpdir());
	snprintf(profile_path, sizeof(profile_path), "%s/profile", fuzz_tmpdir());
	return 0;
}

#define ENDED(s) (memchr((s), '\0', sizeof(s)) != NULL)

static void sound_node(const struct topo_node *n)
{
	FUZZ_CHECK(ENDED(n->why));
	FUZZ_CHECK(topo_bitmap_count(&n->cpus) <= n->n_cpus_all);
	if (n->usable)
		FUZZ_CHECK(!n->excluded && n->why[0] == '\0' && topo_bitmap_count(&n->cpus) > 0 &&
			   n->id >= 0 && n->id < TOPO_MAX_CPUS);
	else
		FUZZ_CHECK(n->why[0] != '\0');
}

/* A name --rails and a profile can give back (rails.c). */
static bool plain_name(const char *s)
{
	const char *c;

	for (c = s; *c; c++)
		if (!isgraph((unsigned char)*c) || *c == ',' || *c == '#')
			return false;
	return c != s;
}

static void sound_rail(const struct topo_machine *m, size_t i)
{
	const struct topo_rail *r = &m->rail[i];

	FUZZ_CHECK(ENDED(r->dev) && ENDED(r->state) && ENDED(r->link_layer) && ENDED(r->rule));
	FUZZ_CHECK(plain_name(r->dev));
	FUZZ_CHECK(r->port >= 1 && r->port <= TOPO_MAX_RAILS);
	FUZZ_CHECK(r->numa_node >= TOPO_NUMA_UNKNOWN);
	FUZZ_CHECK(!strcmp(r->link_layer, "InfiniBand") || !strcmp(r->link_layer, "Ethernet") ||
		   !strcmp(r->link_layer, "unknown"));
	if (r->active)
		FUZZ_CHECK(!strcmp(r->state, "ACTIVE") || !strcmp(r->state, "unknown"));
	if (i > 0) {
		const struct topo_rail *q = &m->rail[i - 1];
		int c = strverscmp(q->dev, r->dev);

		FUZZ_CHECK(c < 0 || (c == 0 && q->port < r->port));
	}
	FUZZ_CHECK(topo_machine_rail_index(m, r->dev, r->port) == (int)i);
}

static void sound_machine(const struct topo_machine *m)
{
	size_t a, b;

	FUZZ_CHECK(ENDED(m->source) && ENDED(m->host) && !strcmp(m->source, xml_path));
	FUZZ_CHECK(m->n_nodes >= 1 && m->n_nodes <= TOPO_MAX_NODES);
	FUZZ_CHECK(m->n_rails <= TOPO_MAX_RAILS);
	for (a = 0; a < m->n_nodes; a++) {
		sound_node(&m->node[a]);
		if (a > 0)
			FUZZ_CHECK(m->node[a - 1].id < m->node[a].id);
		for (b = 0; b < m->n_nodes && !m->dist_known; b++)
			FUZZ_CHECK(m->dist[a][b] == (a == b ? 10u : 20u));
	}
	for (a = 0; a < m->n_rails; a++)
		sound_rail(m, a);
}

static bool plan_has(const struct topo_plan *p, const struct topo_rail *r)
{
	size_t k;

	for (k = 0; k < p->n_rails; k++)
		if (p->rail[k].port == r->port && !strcmp(p->rail[k].dev, r->dev))
			return true;
	return false;
}

static void sound_worker(const struct topo_plan *p, const struct topo_machine *m,
			 const struct topo_opts *o, size_t w, size_t *next_rail)
{
	const struct topo_worker *wk = &p->worker[w];
	int i = topo_machine_node_index(m, wk->node);
	size_t k;

	FUZZ_CHECK(i >= 0 && m->node[i].usable);
	FUZZ_CHECK(topo_bitmap_equal(&wk->cpus, &m->node[i].cpus));
	FUZZ_CHECK(ENDED(wk->why));
	FUZZ_CHECK(wk->first_rail == *next_rail && wk->n_rails <= p->n_rails - wk->first_rail);
	*next_rail += wk->n_rails;
	FUZZ_CHECK(wk->buffer_bytes > 0);
	if (o->buffer_mib)
		FUZZ_CHECK(wk->buffer_bytes == (uint64_t)o->buffer_mib << 20);
	FUZZ_CHECK(wk->page >= TOPO_PAGE_1G && wk->page <= TOPO_PAGE_4K);
	for (k = 0; k < w; k++)
		FUZZ_CHECK(p->worker[k].node != wk->node);
	if (o->nodes_set)
		FUZZ_CHECK(topo_bitmap_isset(&o->nodes, (unsigned)wk->node));
}

static void sound_plan_rail(const struct topo_plan *p, const struct topo_machine *m, size_t k)
{
	const struct topo_plan_rail *pr = &p->rail[k];
	const struct topo_worker *wk;
	int i = topo_machine_rail_index(m, pr->dev, pr->port);
	size_t w;

	FUZZ_CHECK(ENDED(pr->dev) && ENDED(pr->placement));
	FUZZ_CHECK(i >= 0 && m->rail[i].active);
	FUZZ_CHECK(pr->qps == p->qps_per_rail && pr->numa_node == m->rail[i].numa_node);
	FUZZ_CHECK(pr->worker < p->n_workers);
	wk = &p->worker[pr->worker];
	FUZZ_CHECK(k >= wk->first_rail && k < wk->first_rail + wk->n_rails);
	/* Rule 2: a rail local to a worker's node is that worker's. */
	for (w = 0; w < p->n_workers; w++)
		if (pr->numa_node >= 0 && p->worker[w].node == pr->numa_node)
			FUZZ_CHECK(pr->worker == w);
}

static void sound_plan(const struct topo_plan *p, const struct topo_machine *m,
		       const struct topo_opts *o)
{
	unsigned qps = o->qps_per_rail ? o->qps_per_rail : TOPO_DEFAULT_QPS_PER_RAIL;
	uint64_t total = 0;
	size_t w, k, next = 0;

	FUZZ_CHECK(p->n_workers >= 1 && p->n_workers <= m->n_nodes);
	FUZZ_CHECK(p->n_rails <= m->n_rails && p->qps_per_rail == qps);
	FUZZ_CHECK(ENDED(p->notes));
	for (w = 0; w < p->n_workers; w++) {
		sound_worker(p, m, o, w, &next);
		total += p->worker[w].buffer_bytes;
	}
	FUZZ_CHECK(next == p->n_rails && total == p->buffer_total);
	for (k = 0; k < p->n_rails; k++)
		sound_plan_rail(p, m, k);
}

/* Rule 1 without --rails: every active port not local to an excluded node is placed. */
static void all_rails_placed(const struct topo_plan *p, const struct topo_machine *m)
{
	size_t i;

	for (i = 0; i < m->n_rails; i++) {
		const struct topo_rail *r = &m->rail[i];
		int n = r->numa_node >= 0 ? topo_machine_node_index(m, r->numa_node) : -1;
		bool want = r->active && !(n >= 0 && m->node[n].excluded);

		FUZZ_CHECK(plan_has(p, r) == want);
	}
}

/* A plan for opts: sound if built, else an error and no plan. Returns the error. */
static int plan(const struct topo_machine *m, const struct topo_opts *o, bool profile)
{
	struct topo_plan *p = NULL, *again = NULL;
	int err = topo_plan_build(m, o, &p);

	if (err) {
		FUZZ_CHECK(err == -EINVAL || err == -ENODEV || err == -ENOMEM);
		FUZZ_CHECK(p == NULL);
		return err;
	}
	sound_plan(p, m, o);
	if (!o->n_rails)
		all_rails_placed(p, m);
	if (profile) {
		FUZZ_CHECK(topo_profile_save(p, m, profile_path) == 0);
		FUZZ_CHECK(topo_profile_load(profile_path, m, NULL, &again) == 0);
		fuzz_same_plan(p, again);
		topo_plan_destroy(again);
	}
	topo_plan_destroy(p);
	return 0;
}

/* The option variations; o is the caller's zeroed scratch (4.4 KiB: not on the stack). */
static void plans(const struct topo_machine *m, struct topo_opts *o)
{
	size_t i, usable = 0;
	int first = -1;

	plan(m, o, true);
	o->qps_per_rail = TOPO_MAX_QPS_PER_RAIL;
	o->buffer_mib = 3;
	plan(m, o, false);
	o->qps_per_rail = TOPO_MAX_QPS_PER_RAIL + 1;
	FUZZ_CHECK(plan(m, o, false) == -EINVAL);
	memset(o, 0, sizeof(*o));

	o->nodes_set = true; /* --numa: every usable node, then none */
	for (i = 0; i < m->n_nodes; i++)
		if (m->node[i].usable) {
			topo_bitmap_set(&o->nodes, (unsigned)m->node[i].id);
			usable++;
		}
	if (usable)
		FUZZ_CHECK(plan(m, o, false) == 0);
	topo_bitmap_zero(&o->nodes);
	FUZZ_CHECK(plan(m, o, false) != 0);
	memset(o, 0, sizeof(*o));

	o->n_rails = 1; /* --rails: the first active rail, then one the machine lacks */
	for (i = 0; i < m->n_rails && first < 0; i++)
		if (m->rail[i].active)
			first = (int)i;
	if (first >= 0) {
		snprintf(o->rails[0].dev, sizeof(o->rails[0].dev), "%s", m->rail[first].dev);
		o->rails[0].port = m->rail[first].port;
		FUZZ_CHECK((plan(m, o, false) == 0) == (usable > 0));
	}
	snprintf(o->rails[0].dev, sizeof(o->rails[0].dev), "%s", "no-such-device");
	o->rails[0].port = 0;
	for (i = 0; i < m->n_rails && strcmp(m->rail[i].dev, o->rails[0].dev); i++)
		;
	if (i == m->n_rails)
		FUZZ_CHECK(plan(m, o, false) == -EINVAL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct topo_machine *m = NULL;
	unsigned long crashes = fuzz_hwloc_crashes();
	struct topo_opts *o;
	int err;

	if (fuzz_hwloc_skip(data, size))
		return -1; /* not into the corpus */
	fuzz_write_file(xml_path, data, size);
	err = topo_machine_create(xml_path, NULL, &m);
	if (err) {
		FUZZ_CHECK(err < 0 && m == NULL);
		return fuzz_hwloc_crashes() != crashes ? -1 : 0;
	}
	sound_machine(m);
	o = calloc(1, sizeof(*o));
	FUZZ_CHECK(o != NULL);
	plans(m, o);
	free(o);
	topo_machine_destroy(m);
	return 0;
}
