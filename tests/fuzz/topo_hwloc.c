/*
 * topo_hwloc.c - fuzz_topo's guard around hwloc, whose XML import
 * fuzz_topo.c drives through topology/machine.c.
 *
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
 *
 * Threading: one thread, as libFuzzer runs a harness; the malloc hooks run
 * on every thread's mallocs but record only while a load runs.
 */
#include "tests/fuzz/topo_hwloc.h"
#include "common/common.h"
#include "tests/fuzz/fuzz.h"

#include <ctype.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/lsan_interface.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void fuzz_hwloc_init(void)
{
	hwloc_strict = getenv("RAILCP_FUZZ_HWLOC_STRICT") != NULL;
	if (!hwloc_strict)
		FUZZ_CHECK(__sanitizer_install_malloc_and_free_hooks(hwloc_malloc_hook,
								     hwloc_free_hook) != 0);
	atexit(hwloc_report);
}

bool fuzz_hwloc_skip(const uint8_t *data, size_t size)
{
	if (!hwloc_strict && hwloc_v1(data, size)) {
		hwloc_v1_skipped++;
		return true;
	}
	if (!hwloc_strict && hwloc_huge_index(data, size)) {
		hwloc_huge_skipped++;
		return true;
	}
	if (!hwloc_strict && hwloc_odd_root(data, size)) {
		hwloc_root_skipped++;
		return true;
	}
	return false;
}

unsigned long fuzz_hwloc_crashes(void)
{
	return hwloc_crashes;
}
