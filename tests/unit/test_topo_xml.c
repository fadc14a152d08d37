/*
 * test_topo_xml.c - hwloc XML files railcp must refuse or read right (found
 * by fuzz_topo), each a fixture edited on the fly (topo_fixture.h): a node
 * listed twice, XML that crashes hwloc or that hwloc frees twice (one
 * sentence, from the child that reads it), the machine read in a child the
 * same as in this process, infinite sets, names railcp cannot give back,
 * profiles of odd machines that load back, and a child's answer bounded
 * before it is taken. Each test runs on one thread; the reading itself
 * happens in a child process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "topology/topology.h"
#include "topology/topo_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo_fixture.h"

/* The same through topo_machine_read_xml (a child process), as the CLI reads a file. */
static struct topo_machine *read_edited(const char *fixture, int *err_out, ...)
{
	struct topo_machine *m;
	va_list ap;

	va_start(ap, err_out);
	m = edited_machine(true, fixture, err_out, ap);
	va_end(ap);
	return m;
}

/* The default plan of m saved as a profile and loaded back: its one worker's node and CPUs. */
static void profile_round_trip(const struct topo_machine *m, int node, const char *cpus)
{
	char path[] = "/tmp/railcp-profile-XXXXXX", list[4096];
	struct topo_plan *p = NULL, *again = NULL;
	int fd = mkstemp(path), err;
	size_t r;

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	assert_int_equal(topo_profile_save(p, m, path), 0);
	err = topo_profile_load(path, m, NULL, &again);
	unlink(path);
	if (err)
		fail_msg("the saved profile does not load: %s", rcp_err_msg(err));
	assert_int_equal(again->n_workers, 1);
	assert_int_equal(again->worker[0].node, node);
	topo_bitmap_format(&again->worker[0].cpus, list, sizeof(list));
	assert_string_equal(list, cpus);
	assert_true(topo_bitmap_equal(&again->worker[0].cpus, &p->worker[0].cpus));
	assert_int_equal(again->n_rails, p->n_rails);
	for (r = 0; r < p->n_rails; r++) {
		assert_string_equal(again->rail[r].dev, p->rail[r].dev);
		assert_int_equal(again->rail[r].port, p->rail[r].port);
	}
	topo_plan_destroy(again);
	topo_plan_destroy(p);
}

/* ---- XML files railcp must refuse or read right (found by fuzz_topo) ---- */

static void test_xml_with_a_node_twice_is_refused(void **state)
{
	struct topo_machine *m;
	int err;

	(void)state;
	/* Before, node 0 was listed twice and --numa 0 or a rail could find either. */
	m = load_edited("topo_2s_4nic.xml", &err, "type=\"NUMANode\" os_index=\"1\"",
			"type=\"NUMANode\" os_index=\"0\"", NULL);
	assert_null(m);
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(rcp_err_msg(err), "lists NUMA node 0 twice"));
}

/* Every fixture: the machine read in a child is the one read in this process, byte for byte. */
static void test_xml_read_in_a_child_is_the_same_machine(void **state)
{
	static const char *const fixtures[] = {"topo_1node_dualport.xml", "topo_2s_4nic.xml",
					       "topo_gpu8.xml", "topo_no_rdma.xml",
					       "topo_node_without_nic.xml"};
	struct topo_machine *here, *there;
	char path[512];
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(fixtures); i++) {
		snprintf(path, sizeof(path), "%s/%s", RAILCP_FIXTURES, fixtures[i]);
		here = there = NULL;
		assert_int_equal(topo_machine_create(path, NULL, &here), 0);
		assert_int_equal(topo_machine_read_xml(path, &there), 0);
		assert_memory_equal(here, there, sizeof(*here));
		topo_machine_destroy(here);
		topo_machine_destroy(there);
	}
}

/* A refusal in the child reaches the caller with its code and sentence. */
static void test_xml_read_in_a_child_keeps_the_refusal(void **state)
{
	struct topo_machine *m, *bad = NULL;
	int err;

	(void)state;
	m = read_edited("topo_2s_4nic.xml", &err, "type=\"NUMANode\" os_index=\"1\"",
			"type=\"NUMANode\" os_index=\"0\"", NULL);
	assert_null(m);
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(rcp_err_msg(err), "lists NUMA node 0 twice"));
	err = topo_machine_read_xml(RAILCP_FIXTURES "/no-such.xml", &bad);
	assert_int_equal(err, -ENOENT);
	assert_null(bad);
	assert_non_null(strstr(rcp_err_msg(err), "cannot read hwloc XML file"));
}

/*
 * hwloc 2.9 asserts on a cpuset that starts with a comma (railcp dumped
 * core on `topo --topology` of such a file): now one sentence, and this
 * process goes on.
 */
static void test_xml_that_crashes_hwloc_is_one_sentence(void **state)
{
	struct topo_machine *m;
	int err;

	(void)state;
	m = read_edited("topo_1node_dualport.xml", &err,
			"type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\"",
			"type=\"PU\" os_index=\"0\" cpuset=\",0x1\"", NULL);
	assert_null(m);
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(rcp_err_msg(err), "hwloc crashed reading /tmp/railcp-topo-"));
	assert_non_null(strstr(rcp_err_msg(err), "hwloc 2.x XML export"));
}

/* A caller that ignores SIGCHLD (its children are reaped for it): a machine, or a sentence. */
static void test_xml_read_in_a_child_with_sigchld_ignored(void **state)
{
	struct topo_machine *m = NULL;
	void (*old)(int) = signal(SIGCHLD, SIG_IGN);
	int err;

	(void)state;
	err = topo_machine_read_xml(RAILCP_FIXTURES "/topo_2s_4nic.xml", &m);
	assert_int_equal(err, 0);
	assert_int_equal(m->n_nodes, 2);
	topo_machine_destroy(m);
	m = NULL;
	err = topo_machine_read_xml(RAILCP_FIXTURES "/bad_hwloc_bridge_root.xml", &m);
	signal(SIGCHLD, old);
	assert_null(m);
	assert_true(err < 0);
	assert_non_null(strstr(rcp_err_msg(err), "bad_hwloc_bridge_root.xml"));
}

/*
 * bad_hwloc_bridge_root.xml: a Bridge as the root object, with a bridge_pci
 * hwloc cannot parse. hwloc 2.9 frees it twice as it destroys the topology
 * whose load failed (found by fuzz_topo): glibc or AddressSanitizer stops
 * the child; an allocator that does not notice leaves hwloc's refusal.
 * Either way a sentence here, and this process goes on.
 */
static void test_xml_that_hwloc_frees_twice_is_one_sentence(void **state)
{
	struct topo_machine *m = NULL;
	int err;

	(void)state;
	err = topo_machine_read_xml(RAILCP_FIXTURES "/bad_hwloc_bridge_root.xml", &m);
	assert_null(m);
	assert_true(err < 0);
	assert_non_null(strstr(rcp_err_msg(err), "bad_hwloc_bridge_root.xml"));
}

static void test_xml_with_infinite_sets_reads_them_up_to_the_limit(void **state)
{
	struct topo_machine *m;
	struct topo_plan *p = NULL;
	int err;

	(void)state;
	/* Before, hwloc_bitmap_foreach asserted on "0xf...f" and railcp dumped core. */
	m = load_edited("topo_1node_dualport.xml", &err, "cpuset=\"0x0000000f\"",
			"cpuset=\"0xf...f\"", NULL);
	assert_int_equal(err, 0);
	assert_int_equal(m->node[0].n_cpus_all, TOPO_MAX_CPUS);
	assert_int_equal(topo_bitmap_count(&m->node[0].cpus), TOPO_MAX_CPUS);
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	assert_int_equal(p->n_workers, 1);
	topo_plan_destroy(p);
	topo_machine_destroy(m);
	m = load_edited("topo_1node_dualport.xml", &err, "nodeset=\"0x00000001\"",
			"nodeset=\"0xf...f\"", NULL);
	assert_int_equal(err, 0);
	assert_int_equal(m->n_nodes, 1);
	assert_true(m->node[0].usable);
	assert_int_equal(m->rail[0].numa_node, TOPO_NUMA_UNKNOWN);
	topo_machine_destroy(m);
}

static void test_xml_device_name_railcp_cannot_give_back_is_refused(void **state)
{
	struct topo_machine *m;
	int err;

	(void)state;
	/* Before, a plan on "m,x5_0" was saved as a profile that named rails "m" and "x5_0:1". */
	m = load_edited("topo_1node_dualport.xml", &err, "name=\"mlx5_0\"", "name=\"m,x5_0\"",
			NULL);
	assert_null(m);
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(rcp_err_msg(err), "OpenFabrics device 'm,x5_0' has a name"));
	m = load_edited("topo_1node_dualport.xml", &err, "name=\"mlx5_0\"", "name=\"mlx5 0\"",
			NULL);
	assert_null(m);
	assert_non_null(strstr(rcp_err_msg(err), "device 'mlx5?0'"));
}

static void test_xml_profile_of_node_100_loads_back(void **state)
{
	struct topo_machine *m;
	int err;

	(void)state;
	/* Before, the profile said "node = 100" and loading it refused any node past 63. */
	m = load_edited("topo_1node_dualport.xml", &err, "type=\"NUMANode\" os_index=\"0\"",
			"type=\"NUMANode\" os_index=\"100\"", "nodeset=\"0x00000001\"",
			"nodeset=\"0x00000010,0x00000000,0x00000000,0x00000000\"", NULL);
	assert_int_equal(err, 0);
	assert_int_equal(m->node[0].id, 100);
	profile_round_trip(m, 100, "0-3");
	topo_machine_destroy(m);
}

static void test_xml_profile_of_every_other_cpu_loads_back(void **state)
{
	char attr[420] = "cpuset=\"", even[2100];
	struct topo_machine *m;
	size_t i, used = 0;
	int err;

	(void)state;
	/* CPUs 0,2,...,1022 on one node: 2,004 characters, which the profile cut at 1,023. */
	for (i = 0; i < TOPO_MAX_CPUS / 32; i++)
		strcat(attr, i ? ",0x55555555" : "0x55555555");
	strcat(attr, "\"");
	for (i = 0; i < TOPO_MAX_CPUS; i += 2)
		used += (size_t)snprintf(even + used, sizeof(even) - used, "%s%zu", i ? "," : "",
					 i);
	assert_int_equal(used, 2004);
	m = load_edited("topo_1node_dualport.xml", &err, "cpuset=\"0x0000000f\"", attr, NULL);
	assert_int_equal(err, 0);
	assert_int_equal(topo_bitmap_count(&m->node[0].cpus), TOPO_MAX_CPUS / 2);
	profile_round_trip(m, 0, even);
	topo_machine_destroy(m);
}

static void test_xml_profile_of_64_ports_with_long_names_loads_back(void **state)
{
	char osdev[4096];
	struct topo_machine *m;
	size_t used;
	unsigned port;
	int err;

	(void)state;
	/* Before, its rails line (4,286 characters) was longer than a profile line may be. */
	used = (size_t)snprintf(osdev, sizeof(osdev), "name=\"%.63s\" osdev_type=\"3\">",
				"d123456789d123456789d123456789d123456789d123456789d123456789xyz");
	for (port = 3; port <= TOPO_MAX_RAILS; port++)
		used += (size_t)snprintf(osdev + used, sizeof(osdev) - used,
					 "<info name=\"Port%uState\" value=\"4\"/>", port);
	assert_true(used < sizeof(osdev));
	m = load_edited("topo_1node_dualport.xml", &err, "name=\"mlx5_0\" osdev_type=\"3\">", osdev,
			NULL);
	assert_int_equal(err, 0);
	assert_int_equal(m->n_rails, TOPO_MAX_RAILS);
	profile_round_trip(m, 0, "0-3");
	topo_machine_destroy(m);
}

static void test_xml_profile_of_host_name_with_newline_loads_back(void **state)
{
	struct topo_machine *m;
	int err;

	(void)state;
	/*
	 * Before, the profile's comment ended at the newline and "node = 7)." was read as a key.
	 * The newline is read as one because railcp reads XML with hwloc's own parser only
	 * (libxml2 would make it a space): test_topo_hwloc.c holds that.
	 */
	m = load_edited("topo_1node_dualport.xml", &err, "value=\"one-node-dualport\"",
			"value=\"one\nnode = 7\"", NULL);
	assert_int_equal(err, 0);
	assert_string_equal(m->host, "one\nnode = 7");
	profile_round_trip(m, 0, "0-3");
	topo_machine_destroy(m);
}

/* What the hwloc child sends is bounded before the caller takes it: counts, and strings ended. */
static void test_a_machine_past_its_arrays_is_not_taken(void **state)
{
	struct topo_machine *m = NULL;
	int err;

	(void)state;
	m = load_edited("topo_1node_dualport.xml", &err, NULL);
	assert_non_null(m);
	assert_true(topo__machine_bounded(m));
	m->n_nodes = TOPO_MAX_NODES + 1;
	assert_false(topo__machine_bounded(m));
	m->n_nodes = 1;
	m->n_rails = TOPO_MAX_RAILS + 1;
	assert_false(topo__machine_bounded(m));
	m->n_rails = 0;
	memset(m->host, 'h', sizeof(m->host));
	assert_false(topo__machine_bounded(m));
	m->host[0] = '\0';
	memset(m->rail[TOPO_MAX_RAILS - 1].rule, 'r', sizeof(m->rail[0].rule));
	assert_false(topo__machine_bounded(m));
	topo_machine_destroy(m);
}

static void test_nodes_sort_by_id_past_int_max(void **state)
{
	/* OS indexes 2^31 and 2^32 - 2 of an XML file, as railcp's int ids. */
	static const int ids[] = {1, INT_MIN, -2, 0, INT_MAX};
	static const int sorted[] = {INT_MIN, -2, 0, 1, INT_MAX};
	struct topo_machine *m = calloc(1, sizeof(*m));
	size_t i;

	(void)state;
	assert_non_null(m);
	m->n_nodes = RCP_ARRAY_SIZE(ids);
	for (i = 0; i < m->n_nodes; i++)
		m->node[i].id = ids[i];
	/* Before, node_cmp returned INT_MIN - 1 (overflow) and sorted 2^31 after node 1. */
	topo__sort_nodes(m);
	for (i = 0; i < m->n_nodes; i++)
		assert_int_equal(m->node[i].id, sorted[i]);
	topo_machine_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xml_with_a_node_twice_is_refused),
		cmocka_unit_test(test_xml_read_in_a_child_is_the_same_machine),
		cmocka_unit_test(test_xml_read_in_a_child_keeps_the_refusal),
		cmocka_unit_test(test_xml_that_crashes_hwloc_is_one_sentence),
		cmocka_unit_test(test_xml_that_hwloc_frees_twice_is_one_sentence),
		cmocka_unit_test(test_xml_read_in_a_child_with_sigchld_ignored),
		cmocka_unit_test(test_xml_with_infinite_sets_reads_them_up_to_the_limit),
		cmocka_unit_test(test_xml_device_name_railcp_cannot_give_back_is_refused),
		cmocka_unit_test(test_xml_profile_of_node_100_loads_back),
		cmocka_unit_test(test_xml_profile_of_every_other_cpu_loads_back),
		cmocka_unit_test(test_xml_profile_of_64_ports_with_long_names_loads_back),
		cmocka_unit_test(test_xml_profile_of_host_name_with_newline_loads_back),
		cmocka_unit_test(test_nodes_sort_by_id_past_int_max),
		cmocka_unit_test(test_a_machine_past_its_arrays_is_not_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
