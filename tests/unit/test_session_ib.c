/*
 * test_session_ib.c - whole sessions whose rails are InfiniBand ports of
 * the loopback's device model ("loopib<N>": GIDs that are no addresses,
 * each rail's address its IPoIB interface's, an Ethernet interface with
 * another address beside it): a tree pushed and pulled back arrives
 * identical over two such rails, the server serves a bench after it, and
 * a bench's stripes pair with the
 * server's rail on their IPoIB subnet. The link layer is the plan's: each
 * test names its rails.
 */
#include "session_harness.h"

/* plan's rails as InfiniBand ports: "loopN" becomes "loopibN". */
static void plan_ib(struct topo_plan *plan)
{
	unsigned r, n;

	for (r = 0; r < plan->n_rails; r++) {
		assert_int_equal(sscanf(plan->rail[r].dev, "loop%u", &n), 1);
		snprintf(plan->rail[r].dev, sizeof(plan->rail[r].dev), "loopib%u", n);
	}
}

static void test_push_and_pull_over_infiniband_rails_arrive_identical(void **state)
{
	static const unsigned rails[] = {1, 2};
	struct fx *fx = *state;
	char src[4096], root[4096], back[4096], top[4096];
	const char *push_src[] = {top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	unsigned i;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	fx_dir(fx, "back", back);
	tree_make(src);
	t_path(top, src, "top");
	plan_make(&fx->srv.plan, rails, 2, 1, 1, BUDGET);
	plan_ib(&fx->srv.plan);
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 2, 2, 1, BUDGET);
	plan_ib(&plan);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	assert_int_equal(r.files, TREE_FILES);
	assert_int_equal(r.bytes, TREE_BYTES);
	assert_int_equal(r.n_rails, 2);
	for (i = 0; i < r.n_rails; i++) {
		assert_string_equal(r.rail[i].name, i == 0 ? "loopib1:1" : "loopib2:1");
		assert_string_equal(r.rail[i].peer, r.rail[i].name);
	}
	tree_same(src, root);
	cp = copy_opts(ENG_PULL, pull_src, 1, back);
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	assert_int_equal(r.bytes, TREE_BYTES);
	tree_same(src, back);
	/* the server still serves over them (and its pull's session has ended before the stop) */
	assert_int_equal(bench(&fx->srv, &plan, 256 * KiB, 64 * KiB, NULL, &r), 0);
	assert_int_equal(r.bytes, 256 * KiB);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_bench_stripes_pair_by_the_ipoib_subnet(void **state)
{
	static const unsigned client[] = {2}, server[] = {3, 2, 1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;

	plan_make(&fx->srv.plan, server, 3, 1, 1, BUDGET);
	plan_ib(&fx->srv.plan);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, client, 1, 2, 1, BUDGET);
	plan_ib(&plan);
	assert_int_equal(bench(&fx->srv, &plan, 1 * MiB, 64 * KiB, NULL, &r), 0);
	assert_int_equal(r.n_rails, 1);
	/* loopib2's IPoIB address is 198.18.2.1/24 (its Ethernet one 198.19.2.1/16) */
	assert_string_equal(r.rail[0].name, "loopib2:1");
	assert_string_equal(r.rail[0].peer, "loopib2:1");
	assert_int_equal(r.rail[0].bytes, 1 * MiB);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_push_and_pull_over_infiniband_rails_arrive_identical),
		T(test_bench_stripes_pair_by_the_ipoib_subnet),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
