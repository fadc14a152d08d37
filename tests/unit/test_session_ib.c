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
	static const unsigned rails[] = {1, 2};
	const size_t bytes = 1 * MiB + 4321;
	struct fx *fx = *state;
	struct push1 p = {
		.bytes = bytes, .seed = 5, .rails = rails, .n_rails = 2, .rails_as = "loopib"};
	char got[4096], back[4096];
	const char *pull_src[] = {"big"};
	struct eng_copy_opts cp;
	uint64_t sum = 0;
	unsigned i;

	assert_int_equal(push_one(fx, &p), 0);
	t_path(got, p.root, "big");
	file_same(p.file, got, (off_t)bytes);
	assert_int_equal(p.r.n_rails, 2);
	for (i = 0; i < p.r.n_rails; i++) {
		assert_string_equal(p.r.rail[i].name, i == 0 ? "loopib1:1" : "loopib2:1");
		assert_string_equal(p.r.rail[i].peer, p.r.rail[i].name);
		sum += p.r.rail[i].bytes;
	}
	assert_int_equal(sum, bytes);
	fx_dir(fx, "back", back);
	cp = copy_opts(ENG_PULL, pull_src, 1, back);
	assert_int_equal(copy(&fx->srv, &p.plan, &cp, NULL, &p.r), 0);
	t_path(got, back, "big");
	file_same(p.file, got, (off_t)bytes);
	/* the server still serves over them (and its pull's session has ended before the stop) */
	assert_int_equal(bench(&fx->srv, &p.plan, 256 * KiB, 64 * KiB, NULL, &p.r), 0);
	assert_int_equal(p.r.bytes, 256 * KiB);
	assert_int_equal(server_stop(&fx->srv), 0);
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
