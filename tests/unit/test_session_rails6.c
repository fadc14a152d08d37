/*
 * test_session_rails6.c - whole sessions whose rails are on IPv6 alone, RoCE
 * ports of the loopback's device model ("loopv6<N>": link-local GIDs, which
 * a rail never takes, and 2001:2:0:N::1/64): a file pushed and pulled back
 * over two such rails arrives identical, every byte over them, and the
 * server serves a bench after it; a stripe pairs only with a server rail of
 * its own family, even when one of the other family carries less; a client
 * whose rails are IPv6 and a server whose rails are IPv4 alone get one
 * sentence naming both families; a stripe left out for its family, beside
 * one that pairs, is said to be.
 */
#include "session_harness.h"

#include <stdatomic.h>
#include <string.h>

static void test_push_and_pull_over_ipv6_rails_arrive_identical(void **state)
{
	push_pull_bench_over(*state, "loopv6", 6);
}

static void test_stripes_pair_only_within_their_family(void **state)
{
	static const unsigned client[] = {3}, server[] = {1, 2};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;

	plan_make(&fx->srv.plan, server, 2, 1, 1, BUDGET);
	snprintf(fx->srv.plan.rail[1].dev, sizeof(fx->srv.plan.rail[1].dev), "loopv62");
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, client, 1, 2, 1, BUDGET);
	plan_rails_as(&plan, "loopv6");
	assert_int_equal(bench(&fx->srv, &plan, 1 * MiB, 64 * KiB, NULL, &r), 0);
	assert_int_equal(r.n_rails, 1);
	assert_string_equal(r.rail[0].name, "loopv63:1");
	assert_string_equal(r.rail[0].peer, "loopv62:1");
	assert_int_equal(r.rail[0].bytes, 1 * MiB);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_ipv6_client_and_ipv4_server_name_both_families(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	plan_rails_as(&plan, "loopv6");
	err = bench(&fx->srv, &plan, 256 * KiB, 64 * KiB, NULL, &r);
	assert_int_not_equal(err, 0);
	assert_non_null(strstr(rcp_err_msg(err),
			       "the client's rails are IPv6 and none of this server's is"));
	/* and the server still serves a client of its own family */
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	assert_int_equal(bench(&fx->srv, &plan, 256 * KiB, 64 * KiB, NULL, &r), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

struct seen {
	_Atomic bool family; /* the client's notice named the family, not a subnet */
};

static void family_line(const char *line, void *ctx)
{
	struct seen *s = ctx;

	if (strstr(line, "loopv62:1: the server has no rail on IPv6 that is ACTIVE (its rails "
			 "that are: IPv4): 1 of its 1 stripes left out"))
		atomic_store(&s->family, true);
}

/*
 * A client with an IPv4 rail (loop1) and an IPv6 one (loopv62), a server
 * with loop1 alone: the IPv6 stripe is left out, and the client's notice
 * says it is for its family, not for a subnet; the bench runs over loop1.
 */
static void test_a_stripe_left_out_for_its_family_is_said_so(void **state)
{
	static const unsigned client[] = {1, 2}, server[] = {1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;
	struct log_tap tap;
	struct seen seen = {false};
	int err;

	plan_make(&fx->srv.plan, server, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, client, 2, 1, 1, BUDGET);
	snprintf(plan.rail[1].dev, sizeof(plan.rail[1].dev), "loopv62");
	log_tap_start(&tap, family_line, &seen);
	err = bench(&fx->srv, &plan, 256 * KiB, 64 * KiB, NULL, &r);
	log_tap_stop(&tap);
	assert_int_equal(err, 0);
	assert_true(atomic_load(&seen.family));
	assert_int_equal(r.rail[0].bytes, 256 * KiB);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_push_and_pull_over_ipv6_rails_arrive_identical),
		T(test_stripes_pair_only_within_their_family),
		T(test_ipv6_client_and_ipv4_server_name_both_families),
		T(test_a_stripe_left_out_for_its_family_is_said_so),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
