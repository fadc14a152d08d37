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
 * this harness (test_topo_plan.c's test_xml_*), made from them by hand: a
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

#include <ctype.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/lsan_interface.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>

static char xml_path[4200], profile_path[4200];

/*
 * hwloc 2.9's own bugs, which railcp cannot avoid and this harness must not
 * stop at:
 *  - its XML import leaks what it had set up for an element whose import
 *    fails (a truncated or unknown child; one such path is fixed upstream,
 *    open-mpi/hwloc#781), which nearly every mutated input reaches;
 *  - it dereferences NULL or fails its own assertions on some inputs (an
 *    object without complete_nodeset, fixed upstream in open-mpi/hwloc#783;
 *    a cpuset ",0x1"; a memory object it finds no parent for);
 *  - a PU or NUMA node without os_index (taken as 2^32 - 1) or with a huge
 *    one makes it allocate and clear up to 512 MiB: seconds per input, in a
 *    release build of railcp too;
 *  - its import of the hwloc 1.x format (a root <topology> without a 2.x
 *    version, or <root>) frees memory twice on some inputs, which
 *    AddressSanitizer stops at;
 *  - a root object other than a Machine whose import fails (a Bridge with
 *    a bridge_pci it cannot parse) is freed twice when the topology is
 *    destroyed after the failed load.
 * (The command reads a user's file with topo_machine_read_xml, in a child
 * process, so its crashes end there in one sentence, and its leaks and its
 * 512 MiB with the child; this harness calls topo_machine_create
 * in-process, where libFuzzer sees the coverage.)
 * The definitions below take the place of libhwloc's for machine.c. What
 * hwloc allocates while it reads the file and loads the topology is
 * recorded (a malloc hook); what is left of that once the topology is
 * destroyed is hwloc's leak, freed here, which also spares the leak check
 * libFuzzer runs after every input whose mallocs and frees differ. Not what
 * hwloc_topology_init allocates: the first one also sets up hwloc's global
 * state. A crash inside the load (a signal) makes it fail as if hwloc had
 * refused the file, and the topology is destroyed under the same guard (if
 * that crashes too, the rest of it is left, and the leak check runs).
 * Inputs of the last three kinds are skipped before hwloc sees them. Nothing
 * of railcp's runs inside these, and railcp's own use of hwloc is still
 * checked: a topology it forgot to destroy is a leak (nothing is freed for
 * it), so are distances it did not release (they are not recorded).
 * RAILCP_FUZZ_HWLOC_STRICT=1 turns all of this off, to reproduce hwloc's
 * failures for its maintainers.
 */
static bool hwloc_strict;
static unsigned long hwloc_crashes, hwloc_huge_skipped, hwloc_v1_skipped, hwloc_root_skipped;
static hwloc_topology_t hwloc_broken; /* crashed in load: destroy it guarded */
static sigjmp_buf hwloc_jmp;

/*
 * The chunks hwloc allocated for the topology and has not freed: open
 * addressing, 0 is empty. Stored inverted, so that LeakSanitizer does not
 * take the table for a reference to them: a topology railcp forgot to
 * destroy stays a leak. Its functions run on every malloc and free of the
 * process, and the reclaim scans the whole table: not traced for coverage,
 * which would cost more than the rest of an input and find nothing.
 */
#define HWLOC_CHUNKS (1u << 16)
#define NO_COVERAGE __attribute__((no_sanitize("coverage"), noinline))
static uintptr_t hwloc_chunk[HWLOC_CHUNKS];
static size_t hwloc_n_chunks;
static bool hwloc_recording, hwloc_reclaiming, hwloc_chunks_full;

NO_COVERAGE static size_t chunk_home(uintptr_t p)
{
	return (size_t)(((uint64_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 48) & (HWLOC_CHUNKS - 1);
}

NO_COVERAGE static void chunk_add(uintptr_t p)
{
	size_t i = chunk_home(p);

	if (hwloc_n_chunks >= HWLOC_CHUNKS / 2) {
		hwloc_chunks_full = true; /* checked after the load: no allocation in a hook */
		return;
	}
	while (hwloc_chunk[i])
		i = (i + 1) & (HWLOC_CHUNKS - 1);
	hwloc_chunk[i] = ~p;
	hwloc_n_chunks++;
}

/* Linear probing's deletion: later entries of the run move back into the hole. */
NO_COVERAGE static void chunk_del(uintptr_t p)
{
	size_t i = chunk_home(p), j, k;

	while (hwloc_chunk[i] != ~p) {
		if (!hwloc_chunk[i])
			return;
		i = (i + 1) & (HWLOC_CHUNKS - 1);
	}
	hwloc_chunk[i] = 0;
	hwloc_n_chunks--;
	for (j = (i + 1) & (HWLOC_CHUNKS - 1); hwloc_chunk[j]; j = (j + 1) & (HWLOC_CHUNKS - 1)) {
		k = chunk_home(~hwloc_chunk[j]);
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue; /* its home is after the hole: it stays */
		hwloc_chunk[i] = hwloc_chunk[j];
		hwloc_chunk[j] = 0;
		i = j;
	}
}

NO_COVERAGE static void hwloc_malloc_hook(const volatile void *ptr, size_t size)
{
	(void)size;
	if (hwloc_recording && ptr)
		chunk_add((uintptr_t)ptr);
}

NO_COVERAGE static void hwloc_free_hook(const volatile void *ptr)
{
	if (hwloc_n_chunks && !hwloc_reclaiming && ptr)
		chunk_del((uintptr_t)ptr);
}

/* Free what hwloc's load allocated and its destroy left. */
NO_COVERAGE static void hwloc_reclaim(void)
{
	size_t i;

	hwloc_reclaiming = true;
	for (i = 0; i < HWLOC_CHUNKS && hwloc_n_chunks; i++)
		if (hwloc_chunk[i]) {
			free((void *)~hwloc_chunk[i]);
			hwloc_chunk[i] = 0;
			hwloc_n_chunks--;
		}
	hwloc_reclaiming = false;
}

static void hwloc_crashed(int sig)
{
	siglongjmp(hwloc_jmp, sig);
}

/* fn(topology) with hwloc's crashes caught: its result, or -1 and *sig_out. */
static int hwloc_guarded(int (*fn)(hwloc_topology_t), hwloc_topology_t topology, int *sig_out)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	struct sigaction sa, old[RCP_ARRAY_SIZE(sigs)];
	volatile int r = -1, err = EINVAL;
	size_t i;
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = hwloc_crashed;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < RCP_ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, &old[i]);
	sig = sigsetjmp(hwloc_jmp, 1);
	if (sig == 0) {
		r = fn(topology);
		err = errno;
	}
	for (i = 0; i < RCP_ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &old[i], NULL);
	*sig_out = sig;
	errno = err;
	return r;
}

/* libhwloc's own function name (RTLD_NEXT: the one these definitions hide). */
static void *hwloc_real(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	FUZZ_CHECK(fn != NULL);
	return fn;
}

int hwloc_topology_set_xml(hwloc_topology_t topology, const char *path)
{
	static int (*set_xml)(hwloc_topology_t, const char *);
	int r;

	if (!set_xml)
		set_xml = (int (*)(hwloc_topology_t, const char *))hwloc_real(
			"hwloc_topology_set_xml");
	hwloc_recording = !hwloc_strict;
	r = set_xml(topology, path);
	hwloc_recording = false;
	return r;
}

static int hwloc_real_load(hwloc_topology_t topology)
{
	static int (*load)(hwloc_topology_t);
	int r;

	if (!load)
		load = (int (*)(hwloc_topology_t))hwloc_real("hwloc_topology_load");
	hwloc_recording = !hwloc_strict;
	r = load(topology);
	hwloc_recording = false;
	return r;
}

static int hwloc_real_destroy(hwloc_topology_t topology)
{
	static void (*destroy)(hwloc_topology_t);

	if (!destroy)
		destroy = (void (*)(hwloc_topology_t))hwloc_real("hwloc_topology_destroy");
	destroy(topology);
	return 0;
}

int hwloc_topology_load(hwloc_topology_t topology)
{
	int r, sig;

	if (hwloc_strict)
		return hwloc_real_load(topology);
	r = hwloc_guarded(hwloc_real_load, topology, &sig);
	hwloc_recording = false;
	if (hwloc_chunks_full) {
		fprintf(stderr, "fuzz_topo: hwloc allocated more than %u chunks in one load\n",
			HWLOC_CHUNKS / 2);
		abort();
	}
	if (sig) {
		if (hwloc_crashes++ == 0)
			fprintf(stderr,
				"fuzz_topo: hwloc_topology_load crashed (signal %d), hwloc's bug: "
				"such inputs are taken as refused (RAILCP_FUZZ_HWLOC_STRICT=1 "
				"stops there)\n",
				sig);
		hwloc_broken = topology;
	}
	return r;
}

void hwloc_topology_destroy(hwloc_topology_t topology)
{
	int sig;

	if (hwloc_strict || !topology) {
		hwloc_real_destroy(topology);
		return;
	}
	if (topology == hwloc_broken) {
		hwloc_broken = NULL;
		hwloc_guarded(hwloc_real_destroy, topology, &sig);
		if (sig) /* what is left of it: its loaded part is freed below */
			__lsan_ignore_object(topology);
	} else {
		hwloc_real_destroy(topology);
	}
	hwloc_reclaim();
}

static void hwloc_report(void)
{
	fprintf(stderr,
		"fuzz_topo: %lu inputs crashed hwloc_topology_load; skipped: %lu for a PU or "
		"NUMA node without a usable os_index, %lu in the hwloc 1.x format, %lu with a "
		"root other than a Machine\n",
		hwloc_crashes, hwloc_huge_skipped, hwloc_v1_skipped, hwloc_root_skipped);
}

/* The last kind: the root as hwloc's minimalistic parser finds it (hwloc_nolibxml_look_init). */
static bool hwloc_v1(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *p;
	unsigned major, minor;
	bool v1 = false;

	FUZZ_CHECK(text != NULL);
	memcpy(text, data, size);
	text[size] = '\0';
	p = text;
	while (p && (!strncmp(p, "<?xml ", 6) || !strncmp(p, "<!DOCTYPE ", 10))) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL; /* no root: hwloc refuses the file */
	}
	if (p && sscanf(p, "<topology version=\"%u.%u\">", &major, &minor) == 2)
		v1 = major < 2;
	else if (p)
		v1 = !strncmp(p, "<topology>", 10) || !strncmp(p, "<root>", 6);
	free(text);
	return v1;
}

/* The huge indexes: found the way hwloc reads an <object>, its type through hwloc_type_sscanf. */
#define FUZZ_TOPO_MAX_OS_INDEX (1ul << 24)

/* The next name="value" of a tag at *p, as hwloc's own parser splits them. */
static bool tag_attr(const char **p, const char *end, const char **name, size_t *name_len,
		     const char **value, size_t *value_len)
{
	const char *s = *p, *n, *q;

	while (s < end && isspace((unsigned char)*s))
		s++;
	for (n = s; s < end && *s != '=' && *s != '>' && *s != '/'; s++)
		if (isspace((unsigned char)*s))
			return false;
	if (s == n || end - s < 2 || s[0] != '=' || s[1] != '"')
		return false;
	q = memchr(s + 2, '"', (size_t)(end - s - 2));
	if (!q)
		return false;
	*name = n;
	*name_len = (size_t)(s - n);
	*value = s + 2;
	*value_len = (size_t)(q - s - 2);
	*p = q + 1;
	return true;
}

/* Whether the object whose attributes start at p is a PU or NUMA node without a usable os_index. */
static bool object_huge_index(const char *p, const char *end)
{
	const char *name, *value;
	size_t name_len, value_len;
	bool pu_or_node = false, indexed = false;
	hwloc_obj_type_t type;
	char buf[64];

	while (tag_attr(&p, end, &name, &name_len, &value, &value_len)) {
		snprintf(buf, sizeof(buf), "%.*s", (int)value_len, value);
		if (name_len == 4 && !memcmp(name, "type", 4))
			pu_or_node = hwloc_type_sscanf(buf, &type, NULL, 0) == 0 &&
				     (type == HWLOC_OBJ_PU || type == HWLOC_OBJ_NUMANODE);
		else if (name_len == 8 && !memcmp(name, "os_index", 8))
			indexed = (unsigned)strtoul(buf, NULL, 10) < FUZZ_TOPO_MAX_OS_INDEX &&
				  value_len < sizeof(buf);
	}
	return pu_or_node && !indexed;
}

static bool hwloc_huge_index(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *at;

	while ((at = memmem(p, (size_t)(end - p), "<object", 7)) != NULL) {
		p = at + 7;
		if (object_huge_index(p, end))
			return true;
	}
	return false;
}

/*
 * hwloc's root, the first <object> tag, is odd: not a whole tag of
 * name="value" pairs ended by > or />, or without a type, or with a type
 * other than Machine (as hwloc reads it: hwloc_type_sscanf takes a prefix).
 * Skipped whether or not hwloc's import of it would fail, which only hwloc
 * could tell. (A first "<object" inside a comment is taken as the root
 * too; a skip is all it costs.)
 */
static bool hwloc_odd_root(const uint8_t *data, size_t size)
{
	const char *p = memmem(data, size, "<object", 7), *end = (const char *)data + size;
	const char *name, *value;
	size_t name_len, value_len;
	hwloc_obj_type_t type;
	bool machine = false;
	char buf[64];

	if (!p)
		return false; /* no object at all: hwloc refuses the file before it has a root */
	p += 7;
	if (p == end || !isspace((unsigned char)*p))
		return true;
	while (tag_attr(&p, end, &name, &name_len, &value, &value_len)) {
		if (name_len != 4 || memcmp(name, "type", 4))
			continue;
		snprintf(buf, sizeof(buf), "%.*s", (int)value_len, value);
		if (value_len >= sizeof(buf) || hwloc_type_sscanf(buf, &type, NULL, 0) != 0 ||
		    type != HWLOC_OBJ_MACHINE)
			return true;
		machine = true;
	}
	while (p < end && isspace((unsigned char)*p))
		p++;
	return !machine || p == end || (*p != '>' && (*p != '/' || p + 1 == end || p[1] != '>'));
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Not overwritten: whoever reproduces an input may want hwloc's reasons. */
	setenv("HWLOC_HIDE_ERRORS", "2", 0);
	setenv("HWLOC_XML_VERBOSE", "0", 0);
	hwloc_strict = getenv("RAILCP_FUZZ_HWLOC_STRICT") != NULL;
	if (!hwloc_strict)
		FUZZ_CHECK(__sanitizer_install_malloc_and_free_hooks(hwloc_malloc_hook,
								     hwloc_free_hook) != 0);
	atexit(hwloc_report);
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
	unsigned long crashes = hwloc_crashes;
	struct topo_opts *o;
	int err;

	if (!hwloc_strict && hwloc_v1(data, size)) {
		hwloc_v1_skipped++;
		return -1; /* not into the corpus */
	}
	if (!hwloc_strict && hwloc_huge_index(data, size)) {
		hwloc_huge_skipped++;
		return -1;
	}
	if (!hwloc_strict && hwloc_odd_root(data, size)) {
		hwloc_root_skipped++;
		return -1;
	}
	fuzz_write_file(xml_path, data, size);
	err = topo_machine_create(xml_path, NULL, &m);
	if (err) {
		FUZZ_CHECK(err < 0 && m == NULL);
		return hwloc_crashes != crashes ? -1 : 0;
	}
	sound_machine(m);
	o = calloc(1, sizeof(*o));
	FUZZ_CHECK(o != NULL);
	plans(m, o);
	free(o);
	topo_machine_destroy(m);
	return 0;
}
