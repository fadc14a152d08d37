/*
 * test_session_ib.c - whole sessions whose rails are InfiniBand ports of
 * the loopback's device model ("loopib<N>": GIDs that are no addresses,
 * each rail's address its IPoIB interface's, an Ethernet interface with
 * another address beside it): a file pushed and pulled back over two such
 * rails arrives identical, every byte over them, and the server serves a
 * bench after it; a bench's stripes pair with the server's rail on their
 * IPoIB subnet. The link layer is the plan's (plan_rails_as), per test.
 */
#include "session_harness.h"

static void test_push_and_pull_over_infiniband_rails_arrive_identical(void **state)
{
	push_pull_bench_over(*state, "loopib", 5);
}

static void test_bench_stripes_pair_by_the_ipoib_subnet(void **state)
{
	static const unsigned client[] = {2}, server[] = {3, 2, 1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;

	plan_make(&fx->srv.plan, server, 3, 1, 1, BUDGET);
	plan_rails_as(&fx->srv.plan, "loopib");
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, client, 1, 2, 1, BUDGET);
	plan_rails_as(&plan, "loopib");
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
