/*
 * test_topo_plan.c - the placement plan on hwloc XML fixtures of real
 * machine shapes (tests/fixtures/topo_*.xml, see gen_topo_fixtures.py),
 * each whole and under a CPU/node restriction, as numactl or taskset would
 * set one. Every test asserts the whole plan through a one-line signature:
 *
 *   "n0 c0-7 64M 2M [mlx5_0:1x4 mlx5_1:1x4] | n1 ..."
 *
 * (worker node, its CPUs, pool size, expected page kind, its rails with QPs).
 * The XML files railcp must refuse or read right are in test_topo_xml.c.
 * Each test runs on one thread.
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

static const char *page_tag(enum topo_page p)
{
	static const char *const tags[] = {"1G", "2M", "THP", "4K"};

	return tags[p];
}

/* The whole plan in one comparable line. */
static const char *sig(const struct topo_plan *p)
{
	static char buf[4096];
	char cpus[256];
	size_t w, r, used = 0;

	buf[0] = '\0';
	for (w = 0; w < p->n_workers; w++) {
		const struct topo_worker *wk = &p->worker[w];

		topo_bitmap_format(&wk->cpus, cpus, sizeof(cpus));
		used += (size_t)snprintf(buf + used, sizeof(buf) - used,
					 "%sn%d c%s %" PRIu64 "M %s [", w ? " | " : "", wk->node,
					 cpus, (uint64_t)(wk->buffer_bytes >> 20),
					 page_tag(wk->page));
		for (r = wk->first_rail; r < wk->first_rail + wk->n_rails; r++) {
			assert_int_equal(p->rail[r].worker, w);
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s:%ux%u",
						 r > wk->first_rail ? " " : "", p->rail[r].dev,
						 p->rail[r].port, p->rail[r].qps);
		}
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "]");
	}
	return buf;
}

static struct topo_machine *load(const char *fixture, const char *cpus, const char *nodes)
{
	struct topo_binding b;
	struct topo_machine *m = NULL;
	char path[512];

	memset(&b, 0, sizeof(b));
	if (cpus) {
		assert_int_equal(topo_bitmap_parse(cpus, &b.cpus), 0);
		b.cpus_set = true;
	}
	if (nodes) {
		assert_int_equal(topo_bitmap_parse(nodes, &b.nodes), 0);
		b.nodes_set = true;
	}
	snprintf(path, sizeof(path), "%s/%s", RAILCP_FIXTURES, fixture);
	assert_int_equal(topo_machine_create(path, cpus || nodes ? &b : NULL, &m), 0);
	assert_non_null(m);
	return m;
}

#include "topo_fixture.h"

/* Build the plan and return its signature (and notes). */
static const char *plan_sig(const struct topo_machine *m, const struct topo_opts *o, char *notes,
			    size_t notes_len)
{
	struct topo_plan *p = NULL;
	const char *s;

	assert_int_equal(topo_plan_build(m, o, &p), 0);
	s = sig(p);
	if (notes)
		snprintf(notes, notes_len, "%s", p->notes);
	else
		assert_string_equal(p->notes, "");
	topo_plan_destroy(p);
	return s;
}

static int plan_fails(const struct topo_machine *m, const struct topo_opts *o, const char *needle)
{
	struct topo_plan *p = NULL;
	int err = topo_plan_build(m, o, &p);

	assert_null(p);
	assert_true(err < 0);
	if (!strstr(rcp_err_msg(err), needle))
		fail_msg("error '%s' does not mention '%s'", rcp_err_msg(err), needle);
	return err;
}

/* ---- two sockets, four 200 Gb/s NICs, two per socket ------------------- */

static void test_2s4nic_machine_facts(void **state)
{
	struct topo_machine *m = load("topo_2s_4nic.xml", NULL, NULL);

	(void)state;
	assert_int_equal(m->n_nodes, 2);
	assert_int_equal(m->node[1].id, 1);
	assert_int_equal(topo_bitmap_count(&m->node[1].cpus), 8);
	assert_int_equal(m->node[0].mem_bytes, 64ull << 30);
	assert_int_equal(m->node[0].huge_2m, 512);
	assert_true(m->dist_known);
	assert_int_equal(m->dist[0][1], 21);
	assert_int_equal(m->n_rails, 4);
	assert_string_equal(m->rail[2].dev, "mlx5_2");
	assert_int_equal(m->rail[2].numa_node, 1);
	assert_string_equal(m->rail[2].state, "ACTIVE");
	assert_string_equal(m->rail[2].link_layer, "InfiniBand");
	assert_true(m->rail[2].gbps == 200.0);
	assert_string_equal(m->rail[2].rule, "hwloc: PCI 0000:31:00.0 under Package L#1");
	topo_machine_destroy(m);
}

static void test_2s4nic_one_worker_per_socket(void **state)
{
	struct topo_machine *m = load("topo_2s_4nic.xml", NULL, NULL);

	(void)state;
	assert_string_equal(plan_sig(m, NULL, NULL, 0), "n0 c0-7 64M 2M [mlx5_0:1x4 mlx5_1:1x4] | "
							"n1 c8-15 64M 2M [mlx5_2:1x4 mlx5_3:1x4]");
	topo_machine_destroy(m);
}

static void test_2s4nic_bound_to_node1_uses_node1_only(void **state)
{
	/* numactl --cpunodebind=1 --membind=1 */
	struct topo_machine *m = load("topo_2s_4nic.xml", "8-15", "1");
	char notes[1024];

	(void)state;
	assert_false(m->node[0].usable);
	assert_true(m->node[0].excluded);
	assert_string_equal(plan_sig(m, NULL, notes, sizeof(notes)),
			    "n1 c8-15 64M 2M [mlx5_2:1x4 mlx5_3:1x4]");
	assert_non_null(strstr(notes, "mlx5_0:1: it is local to node 0, which the process may "
				      "not use (its memory is outside the allowed nodes"));
	assert_non_null(strstr(notes, "mlx5_1:1: it is local to node 0"));
	topo_machine_destroy(m);
}

static void test_2s4nic_taskset_half_of_each_socket(void **state)
{
	struct topo_machine *m = load("topo_2s_4nic.xml", "0-3,8-11", NULL);

	(void)state;
	assert_string_equal(plan_sig(m, NULL, NULL, 0), "n0 c0-3 64M 2M [mlx5_0:1x4 mlx5_1:1x4] | "
							"n1 c8-11 64M 2M [mlx5_2:1x4 mlx5_3:1x4]");
	topo_machine_destroy(m);
}

static void test_2s4nic_xml_allowed_sets_are_honoured(void **state)
{
	/* An export taken inside a cgroup cpuset carries restricted allowed_* sets. */
	char src[512], dst[] = "/tmp/railcp-topo-XXXXXX.xml", *text, *at;
	struct topo_machine *m = NULL;
	FILE *f;
	long len;
	int fd;

	(void)state;
	snprintf(src, sizeof(src), "%s/topo_2s_4nic.xml", RAILCP_FIXTURES);
	f = fopen(src, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	at = strstr(text, "allowed_cpuset=\"0x0000ffff\"");
	assert_non_null(at);
	memcpy(at, "allowed_cpuset=\"0x0000ff00\"", 27);
	at = strstr(text, "allowed_nodeset=\"0x00000003\"");
	assert_non_null(at);
	memcpy(at, "allowed_nodeset=\"0x00000002\"", 28);
	fd = mkstemps(dst, 4);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, (size_t)len), len);
	close(fd);
	free(text);

	assert_int_equal(topo_machine_create(dst, NULL, &m), 0);
	unlink(dst);
	assert_false(m->node[0].usable);
	assert_true(m->node[1].usable);
	assert_string_equal(plan_sig(m, NULL, text = calloc(1, 1024), 1024),
			    "n1 c8-15 64M 2M [mlx5_2:1x4 mlx5_3:1x4]");
	free(text);
	topo_machine_destroy(m);
}

/* ---- eight-NIC, two-socket GPU server (NPS2: four nodes) -------------- */

static void test_gpu8_one_worker_per_node_down_port_left_out(void **state)
{
	struct topo_machine *m = load("topo_gpu8.xml", NULL, NULL);
	char notes[1024];

	(void)state;
	assert_int_equal(m->n_rails, 9);
	assert_true(m->rail[0].gbps == 0.0); /* plain export: speed unknown */
	assert_string_equal(plan_sig(m, NULL, notes, sizeof(notes)),
			    "n0 c0-3 64M THP [mlx5_0:1x4 mlx5_1:1x4] | "
			    "n1 c4-7 64M THP [mlx5_2:1x4 mlx5_3:1x4] | "
			    "n2 c8-11 64M THP [mlx5_4:1x4 mlx5_5:1x4] | "
			    "n3 c12-15 64M THP [mlx5_6:1x4 mlx5_7:1x4]");
	assert_string_equal(notes, "mlx5_8:1: the port is DOWN\n");
	topo_machine_destroy(m);
}

static void test_gpu8_bound_to_second_socket(void **state)
{
	struct topo_machine *m = load("topo_gpu8.xml", "8-15", "2,3");
	char notes[1024];

	(void)state;
	assert_string_equal(plan_sig(m, NULL, notes, sizeof(notes)),
			    "n2 c8-11 64M THP [mlx5_4:1x4 mlx5_5:1x4] | "
			    "n3 c12-15 64M THP [mlx5_6:1x4 mlx5_7:1x4]");
	topo_machine_destroy(m);
}

static void test_gpu8_numa_subset_sends_rails_to_nearest_worker(void **state)
{
	struct topo_machine *m = load("topo_gpu8.xml", NULL, NULL);
	struct topo_opts o = {.nodes_set = true};
	struct topo_plan *p = NULL;

	(void)state;
	assert_int_equal(topo_bitmap_parse("0,2", &o.nodes), 0);
	assert_int_equal(topo_plan_build(m, &o, &p), 0);
	/* node 1 is 12 from node 0 and 32 from node 2; node 3 is 12 from node 2. */
	assert_string_equal(sig(p),
			    "n0 c0-3 128M THP [mlx5_0:1x4 mlx5_1:1x4 mlx5_2:1x4 mlx5_3:1x4]"
			    " | n2 c8-11 128M THP [mlx5_4:1x4 mlx5_5:1x4 mlx5_6:1x4 mlx5_7:1x4]");
	assert_string_equal(p->rail[2].placement, "node 1 has no worker (not chosen by --numa); "
						  "nearest worker is node 0, distance 12");
	assert_string_equal(p->worker[0].why, "asked by --numa");
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_gpu8_named_down_port_is_an_error(void **state)
{
	struct topo_machine *m = load("topo_gpu8.xml", NULL, NULL);
	struct topo_opts o = {0};

	(void)state;
	assert_int_equal(topo_opts_parse_rails("mlx5_0:1,mlx5_8:1", &o), 0);
	assert_int_equal(plan_fails(m, &o, "--rails names mlx5_8:1, which is DOWN"), -EINVAL);
	topo_machine_destroy(m);
}

/* ---- one node, one dual-port NIC -------------------------------------- */

static void test_dualport_both_ports_on_one_worker(void **state)
{
	struct topo_machine *m = load("topo_1node_dualport.xml", NULL, NULL);

	(void)state;
	assert_string_equal(m->rail[1].link_layer, "Ethernet");
	assert_string_equal(plan_sig(m, NULL, NULL, 0), "n0 c0-3 64M 2M [mlx5_0:1x4 mlx5_0:2x4]");
	topo_machine_destroy(m);
}

static void test_dualport_taskset_two_cpus(void **state)
{
	struct topo_machine *m = load("topo_1node_dualport.xml", "1-2", NULL);

	(void)state;
	assert_string_equal(plan_sig(m, NULL, NULL, 0), "n0 c1-2 64M 2M [mlx5_0:1x4 mlx5_0:2x4]");
	topo_machine_destroy(m);
}

static void test_dualport_options_pick_port_qps_and_buffer(void **state)
{
	struct topo_machine *m = load("topo_1node_dualport.xml", NULL, NULL);
	struct topo_opts o = {.qps_per_rail = 8};

	(void)state;
	assert_int_equal(topo_opts_parse_rails("mlx5_0:2", &o), 0);
	assert_string_equal(plan_sig(m, &o, NULL, 0), "n0 c0-3 64M 2M [mlx5_0:2x8]");
	o.buffer_mib = 512; /* more than the 64 reserved 2 MiB pages hold */
	assert_string_equal(plan_sig(m, &o, NULL, 0), "n0 c0-3 512M THP [mlx5_0:2x8]");
	topo_machine_destroy(m);
}

/* ---- a NUMA node without NIC ------------------------------------------ */

static void test_node_without_nic_gets_no_worker(void **state)
{
	struct topo_machine *m = load("topo_node_without_nic.xml", NULL, NULL);

	(void)state;
	assert_string_equal(plan_sig(m, NULL, NULL, 0), "n0 c0-3 64M THP [mlx5_0:1x4 mlx5_1:1x4]");
	topo_machine_destroy(m);
}

static void test_node_without_nic_worker_when_asked(void **state)
{
	struct topo_machine *m = load("topo_node_without_nic.xml", NULL, NULL);
	struct topo_opts o = {.nodes_set = true};

	(void)state;
	assert_int_equal(topo_bitmap_parse("0-1", &o.nodes), 0);
	assert_string_equal(plan_sig(m, &o, NULL, 0),
			    "n0 c0-3 64M THP [mlx5_0:1x4 mlx5_1:1x4] | n1 c4-7 32M THP []");
	topo_machine_destroy(m);
}

static void test_node_without_nic_bound_there_has_no_rail(void **state)
{
	struct topo_machine *m = load("topo_node_without_nic.xml", "4-7", "1");

	(void)state;
	assert_int_equal(plan_fails(m, NULL, "no usable RDMA rail on"), -ENODEV);
	plan_fails(m, NULL, "mlx5_0:1: it is local to node 0, which the process may not use");
	topo_machine_destroy(m);
}

static void test_node_without_nic_bound_there_named_rail_goes_remote(void **state)
{
	struct topo_machine *m = load("topo_node_without_nic.xml", "4-7", "1");
	struct topo_opts o = {0};
	struct topo_plan *p = NULL;

	(void)state;
	assert_int_equal(topo_opts_parse_rails("mlx5_1", &o), 0);
	assert_int_equal(topo_plan_build(m, &o, &p), 0);
	assert_string_equal(sig(p), "n1 c4-7 32M THP [mlx5_1:1x4]");
	assert_string_equal(p->worker[0].why, "nearest usable node to its rails");
	assert_non_null(strstr(p->rail[0].placement, "node 0 has no worker (its memory is "
						     "outside the allowed nodes"));
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

/* ---- no RDMA device at all -------------------------------------------- */

static void test_no_rdma_is_enodev(void **state)
{
	struct topo_machine *m = load("topo_no_rdma.xml", NULL, NULL);

	(void)state;
	assert_int_equal(m->n_rails, 0); /* the Ethernet NIC and the NVMe disk are no rails */
	assert_int_equal(plan_fails(m, NULL, "it has no RDMA device"), -ENODEV);
	topo_machine_destroy(m);
}

static void test_no_rdma_numa_gives_railless_workers(void **state)
{
	struct topo_machine *m = load("topo_no_rdma.xml", "0-5", NULL);
	struct topo_opts o = {.nodes_set = true, .buffer_mib = 16};

	(void)state;
	assert_int_equal(topo_bitmap_parse("0,1", &o.nodes), 0);
	assert_string_equal(plan_sig(m, &o, NULL, 0), "n0 c0-3 16M THP [] | n1 c4-5 16M THP []");
	topo_machine_destroy(m);
}

static void test_no_rdma_bound_numa_outside_binding_is_an_error(void **state)
{
	struct topo_machine *m = load("topo_no_rdma.xml", "0-3", "0");
	struct topo_opts o = {.nodes_set = true};

	(void)state;
	assert_int_equal(topo_bitmap_parse("1", &o.nodes), 0);
	assert_int_equal(plan_fails(m, &o,
				    "--numa names node 1, which this process cannot use: "
				    "its memory is outside the allowed nodes"),
			 -EINVAL);
	assert_int_equal(topo_bitmap_parse("5", &o.nodes), 0);
	plan_fails(m, &o, "--numa names node 5, which");
	plan_fails(m, &o, "does not have (its nodes: 0-1)");
	topo_machine_destroy(m);
}

static void test_missing_rail_and_bad_xml_errors(void **state)
{
	struct topo_machine *m = load("topo_2s_4nic.xml", NULL, NULL), *bad = NULL;
	struct topo_opts o = {0};

	(void)state;
	assert_int_equal(topo_opts_parse_rails("mlx5_9:1", &o), 0);
	plan_fails(m, &o, "--rails names mlx5_9:1, which");
	plan_fails(m, &o, "(its ports: mlx5_0:1, mlx5_1:1, mlx5_2:1, mlx5_3:1)");
	assert_int_equal(topo_opts_parse_rails("mlx5_0:x", &o), -EINVAL);
	o.qps_per_rail = TOPO_MAX_QPS_PER_RAIL + 1;
	plan_fails(m, &o, "--qps-per-rail 65 is more than 64");
	assert_true(topo_machine_create(RAILCP_FIXTURES "/no-such.xml", NULL, &bad) < 0);
	assert_null(bad);
	topo_machine_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_2s4nic_machine_facts),
		cmocka_unit_test(test_2s4nic_one_worker_per_socket),
		cmocka_unit_test(test_2s4nic_bound_to_node1_uses_node1_only),
		cmocka_unit_test(test_2s4nic_taskset_half_of_each_socket),
		cmocka_unit_test(test_2s4nic_xml_allowed_sets_are_honoured),
		cmocka_unit_test(test_gpu8_one_worker_per_node_down_port_left_out),
		cmocka_unit_test(test_gpu8_bound_to_second_socket),
		cmocka_unit_test(test_gpu8_numa_subset_sends_rails_to_nearest_worker),
		cmocka_unit_test(test_gpu8_named_down_port_is_an_error),
		cmocka_unit_test(test_dualport_both_ports_on_one_worker),
		cmocka_unit_test(test_dualport_taskset_two_cpus),
		cmocka_unit_test(test_dualport_options_pick_port_qps_and_buffer),
		cmocka_unit_test(test_node_without_nic_gets_no_worker),
		cmocka_unit_test(test_node_without_nic_worker_when_asked),
		cmocka_unit_test(test_node_without_nic_bound_there_has_no_rail),
		cmocka_unit_test(test_node_without_nic_bound_there_named_rail_goes_remote),
		cmocka_unit_test(test_no_rdma_is_enodev),
		cmocka_unit_test(test_no_rdma_numa_gives_railless_workers),
		cmocka_unit_test(test_no_rdma_bound_numa_outside_binding_is_an_error),
		cmocka_unit_test(test_missing_rail_and_bad_xml_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
