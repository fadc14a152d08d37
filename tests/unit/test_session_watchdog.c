/*
 * test_session_watchdog.c - a rail that goes silent is a failed rail
 * (engine/datapath/failover.c, eng__worker_watch): its writes vanish, no
 * error completes, both ports stay up; with failover the sender fails it
 * as "stalled" after the rail stall limit and its chunks arrive over the
 * other rail, and without failover the job waits for its stall limit and
 * fails with that sentence; every rail silent at once blames no rail.
 *
 * Design: a copy of the loopback transport whose client connect mutes the
 * first endpoint made on rail loop1 after a few posts
 * (eng__loop_inject_mute). A bench is the client sending: the server
 * checks every byte it receives.
 *
 * Threading: one session at a time; the hook's state is atomic.
 */
#include "session_harness.h"

#include "engine/transport/loopback.h"

#define WD_CHUNK (64 * KiB)
#define WD_BYTES (8 * MiB)
#define WD_LIMIT_MS 300 /* the rail stall limit of these tests */

/* By rail N of "loopN": the post from which its next endpoint goes silent; 0: none. */
static _Atomic unsigned mute_after[2];
static struct eng_transport wd_tr;

static int wd_connect(struct eng_conn *c, struct eng_link *l, const union eng_sockaddr *src,
		      const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	int err = eng__transport_loopback()->connect(c, l, src, dst, peer_link, timeout_ms);
	unsigned n, after;

	if (!err && sscanf(l->rail_dev, "loop%u", &n) == 1 && n < 2 &&
	    (after = atomic_exchange(&mute_after[n], 0)))
		eng__loop_inject_mute(l->ep, after);
	return err;
}

static int wd_setup(void **state)
{
	static const unsigned rails[] = {0, 1};
	struct fx *fx;
	int err = fx_setup(state);

	if (err)
		return err;
	fx = *state;
	wd_tr = *eng__transport_loopback();
	wd_tr.name = "muting loopback";
	wd_tr.connect = wd_connect;
	plan_make(&fx->srv.plan, rails, 2, 1, 1, 2ull * 8 * WD_CHUNK);
	return 0;
}

/* A bench over both rails with rail loop1 (both: and loop0) silent from its 4th post. */
static int muted_bench(const struct fx *fx, bool no_failover, bool both, struct eng_report *r)
{
	static const unsigned rails[] = {0, 1};
	struct topo_plan plan;
	struct eng_client_opts o;

	plan_make(&plan, rails, 2, 1, 1, 2ull * 8 * WD_CHUNK);
	o = client_opts(&fx->srv, &plan, WD_CHUNK, NULL);
	o.tr = &wd_tr;
	o.bench_bytes = WD_BYTES;
	o.rail_stall_ms = WD_LIMIT_MS;
	o.stall_ms = 3000;
	o.no_failover = no_failover;
	atomic_store(&mute_after[0], both ? 4 : 0);
	atomic_store(&mute_after[1], 4);
	return eng__client_run(&o, r);
}

static void test_a_silent_rail_fails_over_as_stalled(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	uint64_t t0;
	int err;

	server_start(&fx->srv, NULL, NULL, NULL);
	t0 = rcp_now_ns();
	err = muted_bench(fx, false, false, &r);
	if (err)
		fail_msg("a bench with a silent rail failed: %s", rcp_err_msg(err));
	/* Every byte arrived once (the server checked them), the silent rail's over the other. */
	assert_int_equal(r.bytes, WD_BYTES);
	assert_int_equal(r.rails_failed, 1);
	assert_true(r.rail[1].failed);
	if (!strstr(r.rail[1].why, "stalled: ") || !strstr(r.rail[1].why, "while other rails"))
		fail_msg("the silent rail's report: '%s'", r.rail[1].why);
	assert_false(r.rail[0].failed);
	/* Within the rail limit and some slack, far below the job's 3 s stall limit. */
	assert_true(rcp_now_ns() - t0 < 2500 * 1000000ull);
	assert_int_equal(atomic_load(&mute_after[1]), 0); /* the hook did mute the rail */
	bench_ok(&fx->srv, NULL);
}

static void test_without_failover_a_silent_rail_fails_at_the_stall_limit(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	int err;

	server_start(&fx->srv, NULL, NULL, NULL);
	err = muted_bench(fx, true, false, &r);
	assert_int_not_equal(err, 0);
	if (!strstr(rcp_err_msg(err), "no completion for 3 s"))
		fail_msg("without failover: %s", rcp_err_msg(err));
	bench_ok(&fx->srv, NULL);
}

/*
 * Every rail silent at once (a peer or a path that stopped as a whole): no
 * rail is to blame, none is failed as stalled, and the job fails at its
 * stall limit with that sentence.
 */
static void test_all_rails_silent_fail_none_as_stalled(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	int err;

	server_start(&fx->srv, NULL, NULL, NULL);
	err = muted_bench(fx, false, true, &r);
	assert_int_not_equal(err, 0);
	if (!strstr(rcp_err_msg(err), "no completion for 3 s") ||
	    strstr(rcp_err_msg(err), "stalled:"))
		fail_msg("every rail silent: %s", rcp_err_msg(err));
	bench_ok(&fx->srv, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_silent_rail_fails_over_as_stalled, wd_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(
			test_without_failover_a_silent_rail_fails_at_the_stall_limit, wd_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(test_all_rails_silent_fail_none_as_stalled,
						wd_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
