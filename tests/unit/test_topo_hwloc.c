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
 */
#include "topo_fixture.h"

#include <dlfcn.h>
#include <hwloc.h>
#include <libgen.h>
#include <limits.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xml_is_read_by_hwlocs_own_parser_when_libxml2_is_asked_for),
		cmocka_unit_test(test_this_host_loads_with_plugins_asked_for),
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
