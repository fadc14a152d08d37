/*
 * test_topo_hwloc.c - railcp runs hwloc with its built-in components only,
 * whatever the environment asks for. A binary of its own: the process's
 * first topo_machine_create sets hwloc's plugin path, so main sets the
 * variables that would load libhwloc-plugins and its libxml2 XML reader
 * before any test makes a topology.
 *
 * The two XML readers differ where this test looks: libxml2 turns a newline
 * or a tab inside an attribute value into a space, as XML requires; hwloc's
 * own parser keeps both. A host name read back with its newline shows that
 * hwloc's own parser read the file although HWLOC_LIBXML=1 asked for
 * libxml2 and its plugin was there to be loaded.
 *
 * This host's discovery is lean (machine.c, topology_live_lean): the tests
 * below check that it moves the thread to no CPU (hwloc's x86 component
 * would, to run CPUID on each; sched_setaffinity is counted by a wrapper
 * here that hwloc's calls reach) and that it finds the same machine as a
 * full load of every object type, exported and read back.
 */
#include "topo_fixture.h"

#include <dlfcn.h>
#include <hwloc.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>

/* The directory hwloc loads plugins from: "hwloc" beside libhwloc itself. */
static char plugin_dir[PATH_MAX];

static bool libxml_plugin_installed(void)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/hwloc_xml_libxml.so", plugin_dir);
	return access(path, R_OK) == 0;
}

static void test_xml_is_read_by_hwlocs_own_parser_when_libxml2_is_asked_for(void **state)
{
	struct topo_machine *m;
	int err;

	(void)state;
	if (!libxml_plugin_installed())
		skip(); /* main said why */
	m = load_edited("topo_1node_dualport.xml", &err, "value=\"one-node-dualport\"",
			"value=\"one\nnode\t= 7\"", NULL);
	assert_int_equal(err, 0);
	/* With libxml2: "one node = 7". */
	assert_string_equal(m->host, "one\nnode\t= 7");
	topo_machine_destroy(m);
}

static void test_this_host_loads_with_plugins_asked_for(void **state)
{
	struct topo_machine *m = NULL;

	(void)state;
	if (!libxml_plugin_installed())
		skip();
	assert_int_equal(topo_machine_create(NULL, NULL, &m), 0);
	assert_true(m->n_nodes >= 1);
	assert_int_equal(m->n_rails, 0);
	topo_machine_destroy(m);
	/* What hwloc reads at its next init (each process's first, in railcp). */
	assert_string_equal(getenv("HWLOC_PLUGINS_PATH"), "");
}

static int setaffinity_calls;

/* hwloc's binding calls land here first (the executable's symbol comes before libc's). */
int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	int (*real)(pid_t, size_t, const cpu_set_t *) = dlsym(RTLD_NEXT, "sched_setaffinity");

	setaffinity_calls++;
	return real(pid, size, set);
}

static void test_this_hosts_discovery_binds_the_thread_nowhere(void **state)
{
	struct topo_machine *m = NULL;
	hwloc_topology_t full;

	(void)state;
	/* The wrapper sees what a full load does: the x86 component binds to each CPU. */
	setaffinity_calls = 0;
	assert_int_equal(hwloc_topology_init(&full), 0);
	assert_int_equal(hwloc_topology_load(full), 0);
	hwloc_topology_destroy(full);
	if (setaffinity_calls == 0)
		skip(); /* no x86 component here (another architecture): nothing to leave out */
	setaffinity_calls = 0;
	assert_int_equal(topo_machine_create(NULL, NULL, &m), 0);
	assert_int_equal(setaffinity_calls, 0);
	topo_machine_destroy(m);
}

/* A full load of this host (every object type, every component) written to path. */
static void export_full(const char *path)
{
	hwloc_topology_t t;

	assert_int_equal(hwloc_topology_init(&t), 0);
	hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	hwloc_topology_set_all_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
	assert_int_equal(hwloc_topology_load(t), 0);
	assert_int_equal(hwloc_topology_export_xml(t, path, 0), 0);
	hwloc_topology_destroy(t);
}

static void test_this_hosts_lean_discovery_finds_what_a_full_load_does(void **state)
{
	char path[] = "/tmp/railcp-test-full-XXXXXX.xml";
	struct topo_machine *lean = NULL, *full = NULL;
	size_t i;
	int fd;

	(void)state;
	fd = mkstemps(path, 4);
	assert_true(fd >= 0);
	close(fd);
	export_full(path);
	assert_int_equal(topo_machine_create(path, NULL, &full), 0);
	unlink(path);
	assert_int_equal(topo_machine_create(NULL, NULL, &lean), 0);
	assert_int_equal(lean->n_nodes, full->n_nodes);
	assert_string_equal(lean->host, full->host);
	for (i = 0; i < lean->n_nodes; i++) {
		assert_int_equal(lean->node[i].id, full->node[i].id);
		assert_int_equal(lean->node[i].n_cpus_all, full->node[i].n_cpus_all);
		assert_memory_equal(&lean->node[i].cpus, &full->node[i].cpus,
				    sizeof(lean->node[i].cpus));
		assert_int_equal(lean->node[i].mem_bytes, full->node[i].mem_bytes);
		assert_int_equal(lean->node[i].usable, full->node[i].usable);
	}
	assert_int_equal(lean->dist_known, full->dist_known);
	assert_memory_equal(lean->dist, full->dist, sizeof(lean->dist));
	topo_machine_destroy(lean);
	topo_machine_destroy(full);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xml_is_read_by_hwlocs_own_parser_when_libxml2_is_asked_for),
		cmocka_unit_test(test_this_host_loads_with_plugins_asked_for),
		cmocka_unit_test(test_this_hosts_discovery_binds_the_thread_nowhere),
		cmocka_unit_test(test_this_hosts_lean_discovery_finds_what_a_full_load_does),
	};
	Dl_info info;
	char lib[PATH_MAX];

	if (!dladdr((void *)hwloc_topology_init, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, lib)) {
		fprintf(stderr, "test_topo_hwloc: cannot find libhwloc's path\n");
		return 1;
	}
	snprintf(plugin_dir, sizeof(plugin_dir), "%s/hwloc", dirname(lib));
	if (!libxml_plugin_installed())
		printf("test_topo_hwloc: skipping: libhwloc-plugins is not installed (%s has no "
		       "hwloc_xml_libxml.so; tools/setup installs it)\n",
		       plugin_dir);
	/* Everything that would make hwloc load its plugins and read XML with libxml2. */
	setenv("HWLOC_PLUGINS_PATH", plugin_dir, 1);
	setenv("HWLOC_LIBXML", "1", 1);
	setenv("HWLOC_LIBXML_IMPORT", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
