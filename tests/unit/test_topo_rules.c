/*
 * test_topo_rules.c - the planner's rules on machines built by hand as plain
 * data (no hwloc): CPU-less nodes, rails of unknown locality, distance ties,
 * engine-style rails added by the caller, and the CPU/node list notation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "topology/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* n nodes of 4 CPUs each (node k: CPUs 4k..4k+3), unless cpus[k] == 0. */
static struct topo_machine *machine(size_t n, const unsigned *cpus)
{
	struct topo_machine *m = calloc(1, sizeof(*m));
	size_t i, j;

	assert_non_null(m);
	snprintf(m->source, sizeof(m->source), "test machine");
	m->n_nodes = n;
	m->thp = true;
	for (i = 0; i < n; i++) {
		struct topo_node *nd = &m->node[i];

		nd->id = (int)i;
		nd->n_cpus_all = cpus ? cpus[i] : 4;
		for (j = 0; j < nd->n_cpus_all; j++)
			topo_bitmap_set(&nd->cpus, (unsigned)(4 * i + j));
		nd->usable = nd->n_cpus_all > 0;
		if (!nd->usable)
			snprintf(nd->why, sizeof(nd->why), "it has no CPUs");
		for (j = 0; j < n; j++)
			m->dist[i][j] = i == j ? 10 : 20;
	}
	return m;
}

static void rail(struct topo_machine *m, const char *dev, int node, bool active)
{
	struct topo_rail r;

	memset(&r, 0, sizeof(r));
	snprintf(r.dev, sizeof(r.dev), "%s", dev);
	r.port = 1;
	r.active = active;
	snprintf(r.state, sizeof(r.state), active ? "ACTIVE" : "DOWN");
	r.numa_node = node;
	snprintf(r.rule, sizeof(r.rule), node < 0 ? "unknown: test" : "test");
	assert_int_equal(topo_machine_add_rail(m, &r), 0);
}

/* "node:dev,dev node:dev" */
static const char *sig(const struct topo_plan *p)
{
	static char buf[1024];
	size_t w, r, used = 0;

	buf[0] = '\0';
	for (w = 0; w < p->n_workers; w++) {
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%d:", w ? " " : "",
					 p->worker[w].node);
		for (r = 0; r < p->worker[w].n_rails; r++)
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s",
						 r ? "," : "",
						 p->rail[p->worker[w].first_rail + r].dev);
	}
	return buf;
}

static void test_rail_on_cpuless_node_goes_to_nearest_worker(void **state)
{
	static const unsigned cpus[] = {4, 4, 0};
	struct topo_machine *m = machine(3, cpus);
	struct topo_plan *p = NULL;

	(void)state;
	m->dist[2][0] = m->dist[0][2] = 30;
	m->dist[2][1] = m->dist[1][2] = 17;
	rail(m, "a", 0, true);
	rail(m, "b", 1, true);
	rail(m, "c", 2, true);
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	assert_string_equal(sig(p), "0:a 1:b,c");
	assert_string_equal(p->rail[2].placement, "node 2 has no worker (it has no CPUs); nearest "
						  "worker is node 1, distance 17");
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_distance_tie_goes_to_less_loaded_worker(void **state)
{
	static const unsigned cpus[] = {4, 4, 0};
	struct topo_machine *m = machine(3, cpus);
	struct topo_plan *p = NULL;

	(void)state;
	rail(m, "a0", 0, true);
	rail(m, "a1", 0, true);
	rail(m, "b", 1, true);
	rail(m, "c", 2, true);
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	assert_string_equal(sig(p), "0:a0,a1 1:b,c");
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_unknown_locality_rails_spread_over_workers(void **state)
{
	struct topo_machine *m = machine(2, NULL);
	struct topo_plan *p = NULL;

	(void)state;
	rail(m, "a", 0, true);
	rail(m, "b", 1, true);
	rail(m, "u1", -1, true);
	rail(m, "u2", -1, true);
	rail(m, "u3", -1, true);
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	assert_string_equal(sig(p), "0:a,u1,u3 1:b,u2");
	assert_string_equal(p->rail[1].placement, "locality unknown (unknown: test); given to the "
						  "least loaded worker, node 0");
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_all_unknown_rails_use_lowest_usable_node(void **state)
{
	static const unsigned cpus[] = {0, 4, 4};
	struct topo_machine *m = machine(3, cpus);
	struct topo_plan *p = NULL;

	(void)state;
	rail(m, "u1", -1, true);
	rail(m, "u2", -1, true);
	rail(m, "down", 2, false);
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	assert_string_equal(sig(p), "1:u1,u2");
	assert_string_equal(p->worker[0].why, "lowest usable node (rail locality unknown)");
	assert_string_equal(p->notes, "down:1: the port is DOWN\n");
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_only_cpuless_rails_make_worker_on_nearest_node(void **state)
{
	static const unsigned cpus[] = {4, 4, 0};
	struct topo_machine *m = machine(3, cpus);
	struct topo_plan *p = NULL;

	(void)state;
	m->dist[2][1] = m->dist[1][2] = 15;
	rail(m, "c", 2, true);
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	assert_string_equal(sig(p), "1:c");
	assert_string_equal(p->worker[0].why, "nearest usable node to its rails");
	assert_int_equal(p->worker[0].buffer_bytes, 4ull * TOPO_STRIPE_BUFFER_MIB << 20);
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_no_usable_node_is_an_error(void **state)
{
	static const unsigned cpus[] = {0};
	struct topo_machine *m = machine(1, cpus);
	struct topo_plan *p = NULL;

	(void)state;
	rail(m, "a", 0, true);
	assert_int_equal(topo_plan_build(m, NULL, &p), -EINVAL);
	assert_string_equal(rcp_err_msg(-EINVAL), "no NUMA node of test machine can host a "
						  "worker: it has no CPUs");
	topo_machine_destroy(m);
}

static void test_add_rail_keeps_order_and_refuses_duplicates(void **state)
{
	struct topo_machine *m = machine(1, NULL);

	(void)state;
	rail(m, "mlx5_10", 0, true);
	rail(m, "mlx5_2", 0, true);
	rail(m, "mlx5_1", 0, true);
	assert_string_equal(m->rail[0].dev, "mlx5_1");
	assert_string_equal(m->rail[1].dev, "mlx5_2");
	assert_string_equal(m->rail[2].dev, "mlx5_10");
	assert_int_equal(topo_machine_add_rail(m, &m->rail[0]), -EEXIST);
	assert_int_equal(topo_machine_rail_index(m, "mlx5_10", 1), 2);
	assert_int_equal(topo_machine_rail_index(m, "mlx5_10", 2), -1);
	topo_machine_destroy(m);
}

static void test_rails_option_parsing(void **state)
{
	struct topo_opts o = {0};

	(void)state;
	assert_int_equal(topo_opts_parse_rails("mlx5_0:1, mlx5_2,rxe0:2", &o), 0);
	assert_int_equal(o.n_rails, 3);
	assert_string_equal(o.rails[1].dev, "mlx5_2");
	assert_int_equal(o.rails[1].port, 0);
	assert_int_equal(o.rails[2].port, 2);
	assert_int_equal(topo_opts_parse_rails("mlx5_0:0", &o), -EINVAL);
	assert_int_equal(topo_opts_parse_rails(":1", &o), -EINVAL);
	assert_int_equal(topo_opts_parse_rails(",", &o), -EINVAL);
	assert_int_equal(o.n_rails, 3); /* untouched on error */
}

static void test_bitmap_list_round_trip(void **state)
{
	struct topo_bitmap b, c;
	char text[64];

	(void)state;
	assert_int_equal(topo_bitmap_parse("0-3,8,10-11,1023", &b), 0);
	assert_int_equal(topo_bitmap_count(&b), 8);
	topo_bitmap_format(&b, text, sizeof(text));
	assert_string_equal(text, "0-3,8,10-11,1023");
	assert_int_equal(topo_bitmap_parse(text, &c), 0);
	assert_true(topo_bitmap_equal(&b, &c));
	assert_int_equal(topo_bitmap_parse("3-1", &c), -EINVAL);
	assert_int_equal(topo_bitmap_parse("1024", &c), -EINVAL);
	assert_int_equal(topo_bitmap_parse("1,,2", &c), -EINVAL);
	assert_int_equal(topo_bitmap_parse("", &c), -EINVAL);
	topo_bitmap_zero(&c);
	topo_bitmap_format(&c, text, sizeof(text));
	assert_string_equal(text, "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rail_on_cpuless_node_goes_to_nearest_worker),
		cmocka_unit_test(test_distance_tie_goes_to_less_loaded_worker),
		cmocka_unit_test(test_unknown_locality_rails_spread_over_workers),
		cmocka_unit_test(test_all_unknown_rails_use_lowest_usable_node),
		cmocka_unit_test(test_only_cpuless_rails_make_worker_on_nearest_node),
		cmocka_unit_test(test_no_usable_node_is_an_error),
		cmocka_unit_test(test_add_rail_keeps_order_and_refuses_duplicates),
		cmocka_unit_test(test_rails_option_parsing),
		cmocka_unit_test(test_bitmap_list_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
