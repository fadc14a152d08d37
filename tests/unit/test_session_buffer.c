/*
 * test_session_buffer.c - a buffer (--buffer-mib) that cannot give each of
 * the stripes asked for 2 slots: the server pairs as many of the client's
 * stripes as it holds, spread over its rails as evenly as the pairing made
 * them, and leaves the others out (the welcome says why); the client fits
 * its own plan to its own buffer the same way; only a session none of
 * whose stripes fits is refused, in one sentence. Over the loopback
 * transport (session_harness.h).
 */
#include "session_harness.h"

#include "engine/transport/loopback.h"

/* ---- eng__stripes_fit on its own ---- */

/* The hello's stripes: n of them, from the client rails addr[i]. */
static json_t *hello_stripes(const char *const *addr, size_t n)
{
	json_t *st = json_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(st, stripe_json(addr[i], 24));
	return st;
}

static void test_fit_takes_from_the_most_loaded_rail_and_unpairs_its_last_stripes(void **state)
{
	static const unsigned rails[] = {1, 2, 3};
	static const char *const one[6] = {"198.18.9.7", "198.18.9.7", "198.18.9.7",
					   "198.18.9.7", "198.18.9.7", "198.18.9.7"};
	unsigned peer[6] = {0, 0, 1, 2, 0, 2}, dropped = 99;
	const unsigned want[6] = {0, ENG_NO_RAIL, 1, 2, ENG_NO_RAIL, 2}, qps[3] = {1, 1, 2};
	const bool cut[6] = {false, true, false, false, true, false};
	json_t *st = hello_stripes(one, 6);
	bool trimmed[6];
	struct topo_plan plan;
	unsigned i;

	(void)state;
	/* One worker, three rails paired with 3, 1 and 2 stripes; room for 4 of 64 KiB. */
	plan_make(&plan, rails, 3, 0, 1, 4 * 2 * 64 * KiB);
	plan.rail[0].qps = 3;
	plan.rail[1].qps = 1;
	plan.rail[2].qps = 2;
	assert_int_equal(eng__stripes_fit(&plan, 64 * KiB, "the server", &dropped), 0);
	eng__stripes_unpair(&plan, st, peer, trimmed);
	assert_int_equal(dropped, 2);
	/* 3 1 2 -> 2 1 2 -> 1 1 2: a tie goes to the lower index. */
	for (i = 0; i < 3; i++)
		assert_int_equal(plan.rail[i].qps, qps[i]);
	/* From one client rail: the last ones paired with each rail are unpaired. */
	for (i = 0; i < 6; i++) {
		assert_int_equal(peer[i], want[i]);
		assert_int_equal(trimmed[i], cut[i]);
	}
	/* Room for all: nothing changes, nothing is marked. */
	plan.worker[0].buffer_bytes = 1ull << 30;
	assert_int_equal(eng__stripes_fit(&plan, 64 * KiB, "the server", &dropped), 0);
	eng__stripes_unpair(&plan, st, peer, trimmed);
	assert_int_equal(dropped, 0);
	for (i = 0; i < 6; i++)
		assert_false(trimmed[i]);
	json_decref(st);
}

/*
 * A routed 2x2: the client's rails A and B each send a stripe to each of
 * two server rails on one worker that holds 2 (the hello rail by rail, so
 * peer = 0 1 0 1). Each client rail keeps one stripe, not A both.
 */
static void test_unpair_keeps_a_stripe_of_each_client_rail_where_it_can(void **state)
{
	static const unsigned rails[] = {1, 2};
	static const char *const ab[4] = {"198.18.7.1", "198.18.7.1", "198.18.8.1", "198.18.8.1"};
	static const char *const aab[6] = {"198.18.7.1", "198.18.7.1", "198.18.7.1",
					   "198.18.7.1", "198.18.8.1", "198.18.8.1"};
	unsigned peer[6] = {0, 1, 0, 1}, dropped = 99, i, kept_a = 0, kept_b = 0;
	json_t *st = hello_stripes(ab, 4);
	bool trimmed[6];
	struct topo_plan plan;

	(void)state;
	plan_make(&plan, rails, 2, 2, 1, 2 * 2 * 64 * KiB);
	assert_int_equal(eng__stripes_fit(&plan, 64 * KiB, "the server", &dropped), 0);
	assert_int_equal(dropped, 2);
	eng__stripes_unpair(&plan, st, peer, trimmed);
	/* A keeps its stripe on server rail 1, B its on rail 0: the last of each go. */
	assert_memory_equal(peer, ((unsigned[]){ENG_NO_RAIL, 1, 0, ENG_NO_RAIL}),
			    4 * sizeof(*peer));
	assert_memory_equal(trimmed, ((bool[]){true, false, false, true}), 4 * sizeof(*trimmed));
	json_decref(st);

	/* A with 4 stripes, B with 2, over the two rails, room for 3: B keeps 1, A 2. */
	memcpy(peer, ((unsigned[]){0, 1, 0, 1, 0, 1}), sizeof(peer));
	st = hello_stripes(aab, 6);
	plan_make(&plan, rails, 2, 3, 1, 3 * 2 * 64 * KiB);
	assert_int_equal(eng__stripes_fit(&plan, 64 * KiB, "the server", &dropped), 0);
	eng__stripes_unpair(&plan, st, peer, trimmed);
	for (i = 0; i < 6; i++) {
		if (peer[i] == ENG_NO_RAIL)
			continue;
		kept_a += i < 4;
		kept_b += i >= 4;
	}
	assert_int_equal(kept_a, 2);
	assert_int_equal(kept_b, 1);
	json_decref(st);
}

static void test_fit_leaves_out_a_workers_rails_and_refuses_only_when_none_is_left(void **state)
{
	static const unsigned rails[] = {1, 2};
	struct topo_plan plan;
	unsigned dropped = 99;
	int err;

	(void)state;
	/* Worker 0 (loop1) holds 1 of its 4 stripes; worker 1 (loop2) none of its 4. */
	plan_make(&plan, rails, 2, 4, 2, 2 * MiB);
	plan.worker[1].buffer_bytes = MiB;
	assert_int_equal(eng__stripes_fit(&plan, MiB, "this side", &dropped), 0);
	assert_int_equal(dropped, 7);
	assert_int_equal(plan.rail[0].qps, 1);
	assert_int_equal(plan.rail[1].qps, 0);
	/* Not one stripe fits anywhere: the one sentence, naming a worker and what to change. */
	plan_make(&plan, rails, 2, 4, 2, MiB + 512 * KiB);
	dropped = 99;
	err = eng__stripes_fit(&plan, MiB, "the server", &dropped);
	assert_int_equal(err, -ENOMEM);
	assert_int_equal(dropped, 99);	       /* written only on success */
	assert_int_equal(plan.rail[0].qps, 4); /* and the plan as it came */
	assert_int_equal(plan.rail[1].qps, 4);
	assert_string_equal(
		rcp_err_msg(err),
		"1 stripe of 1024 KiB chunks needs 2 MiB of slots on the node 0 worker, "
		"which may use 1536 KiB: use a smaller --chunk, or give the server a "
		"larger --buffer-mib");
}

/*
 * Only the workers with stripes share a cap: a stripe's 2 slots each in
 * turn while their buffers and stripes take them, the rest in proportion.
 */
static void test_buffers_cap_shares_the_cap_among_the_workers_with_stripes(void **state)
{
	static const unsigned rails[] = {1, 2, 3};
	struct topo_plan plan;

	(void)state;
	/* 2 stripes on each of three workers of 4, 12 and 4 MiB; worker 2's rail unpaired. */
	plan_make(&plan, rails, 3, 2, 3, 4 * MiB);
	plan.worker[1].buffer_bytes = 12 * MiB;
	plan.rail[2].qps = 0;
	eng__plan_buffers_cap(&plan, MiB, 9 * MiB);
	assert_int_equal(plan.worker[0].buffer_bytes, 4 * MiB); /* 2 stripes: all it has */
	assert_int_equal(plan.worker[1].buffer_bytes, 4 * MiB + 512 * KiB);
	assert_int_equal(plan.worker[2].buffer_bytes, 4 * MiB); /* no stripe: its own */
	/* Room for one stripe: the first worker's, with the rest; the other holds none. */
	plan.worker[0].buffer_bytes = 4 * MiB;
	plan.worker[1].buffer_bytes = 12 * MiB;
	eng__plan_buffers_cap(&plan, MiB, 3 * MiB);
	assert_int_equal(plan.worker[0].buffer_bytes, 3 * MiB);
	assert_int_equal(plan.worker[1].buffer_bytes, 0);
	/* Within the cap: nothing changes. */
	plan.worker[0].buffer_bytes = 4 * MiB;
	plan.worker[1].buffer_bytes = 4 * MiB;
	eng__plan_buffers_cap(&plan, MiB, 8 * MiB);
	assert_int_equal(plan.worker[0].buffer_bytes, 4 * MiB);
	assert_int_equal(plan.worker[1].buffer_bytes, 4 * MiB);
}

/* ---- whole sessions ---- */

static void
test_a_server_with_a_small_buffer_takes_fewer_stripes_and_the_copy_succeeds(void **state)
{
	static const unsigned rails[] = {1, 2};
	struct fx *fx = *state;
	char src[4096], root[4096], top[4096];
	const char *push_src[] = {top};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	tree_make(src);
	t_path(top, src, "top");
	/* 4 KiB chunks: worker 0 (loop1) holds 2 stripes, worker 1 (loop2) not one. */
	plan_make(&fx->srv.plan, rails, 2, 1, 2, 2 * 2 * 4 * KiB);
	fx->srv.plan.worker[1].buffer_bytes = 4 * KiB;
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 2, 3, 1, BUDGET); /* 3 stripes on each rail */
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	tree_same(src, root);
	assert_int_equal(r.bytes, TREE_BYTES);
	/* The report says what the session used, and why loop2 carried nothing. */
	assert_int_equal(r.n_stripes, 2);
	assert_int_equal(r.n_slots, 2);
	assert_int_equal(r.rail[0].stripes, 2);
	assert_false(r.rail[0].left_out);
	assert_int_equal(r.rail[1].stripes, 0);
	assert_true(r.rail[1].left_out);
	assert_string_equal(
		r.rail[1].left_out_why,
		"the server's buffer (--buffer-mib, --max-memory) holds no more stripes");
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_server_buffer_too_small_for_one_stripe_refuses_with_a_sentence(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	/* Room for one 64 KiB slot: not even one stripe of two. */
	plan_make(&fx->srv.plan, rails, 1, 1, 1, 64 * KiB);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, rails, 1, 2, 1, BUDGET);
	err = bench(&fx->srv, &plan, MiB, 64 * KiB, NULL, &r);
	assert_int_equal(err, -ECONNABORTED);
	assert_non_null(strstr(rcp_err_msg(err),
			       "1 stripe of 64 KiB chunks needs 128 KiB of slots on the node 0 "
			       "worker, which may use 64 KiB: use a smaller --chunk, or give the "
			       "server a larger --buffer-mib"));
	/* Smaller chunks fit both stripes: the same server serves them. */
	err = bench(&fx->srv, &plan, MiB, 16 * KiB, NULL, &r);
	assert_int_equal(err, 0);
	assert_int_equal(r.n_stripes, 2);
	assert_int_equal(r.n_slots, 64 / (2 * 16));
}

/* The client's memory is the client's: the server offers no more slots than it can take. */
static void left_out_line(const char *line, void *ctx)
{
	atomic_uint *n = ctx;

	if (strstr(line, "of its 2 stripes left out"))
		atomic_fetch_add(n, 1);
}

/*
 * A session the server trims and whose one stripe then cannot connect
 * fails with its one sentence: the client's note of the stripe the
 * server's buffer left out comes only with a copy that succeeds.
 */
static void test_a_trimmed_session_that_fails_says_only_its_sentence(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;
	struct log_tap tap;
	atomic_uint notes = 0;
	int err;

	plan_make(&fx->srv.plan, rails, 1, 1, 1, 2 * 64 * KiB); /* 1 of the 2 stripes */
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, rails, 1, 2, 1, BUDGET);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_REFUSE, 1);
	log_tap_start(&tap, left_out_line, &notes);
	err = bench(&fx->srv, &plan, MiB, 64 * KiB, NULL, &r);
	log_tap_stop(&tap);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_NONE, 0);
	assert_int_not_equal(err, 0);
	assert_int_equal(atomic_load(&notes), 0);
	/* The same, connected: the note comes. */
	log_tap_start(&tap, left_out_line, &notes);
	err = bench(&fx->srv, &plan, MiB, 64 * KiB, NULL, &r);
	log_tap_stop(&tap);
	if (err)
		fail_msg("the bench over 1 of 2 stripes: %s", rcp_err_msg(err));
	assert_int_equal(atomic_load(&notes), 1);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_clients_small_buffer_plans_fewer_stripes(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET); /* 256 slots of 16 KiB */
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, rails, 1, 2, 1, 6 * 16 * KiB); /* 3 per stripe */
	assert_int_equal(bench(&fx->srv, &plan, MiB, 16 * KiB, NULL, &r), 0);
	assert_int_equal(r.n_stripes, 2);
	assert_int_equal(r.n_slots, 3);
	/* Room for 3 slots: one stripe of 3, not two of 1. */
	plan_make(&plan, rails, 1, 2, 1, 3 * 16 * KiB);
	assert_int_equal(bench(&fx->srv, &plan, MiB, 16 * KiB, NULL, &r), 0);
	assert_int_equal(r.n_stripes, 1);
	assert_int_equal(r.n_slots, 3);
	/* Room for not one stripe: this side says so before it connects. */
	plan_make(&plan, rails, 1, 2, 1, 16 * KiB);
	err = bench(&fx->srv, &plan, MiB, 16 * KiB, NULL, &r);
	assert_int_equal(err, -ENOMEM);
	assert_non_null(strstr(rcp_err_msg(err), "give this side a larger --buffer-mib"));
	bench_ok(&fx->srv, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_fit_takes_from_the_most_loaded_rail_and_unpairs_its_last_stripes),
		cmocka_unit_test(test_unpair_keeps_a_stripe_of_each_client_rail_where_it_can),
		cmocka_unit_test(
			test_fit_leaves_out_a_workers_rails_and_refuses_only_when_none_is_left),
		cmocka_unit_test(test_buffers_cap_shares_the_cap_among_the_workers_with_stripes),
		T(test_a_server_with_a_small_buffer_takes_fewer_stripes_and_the_copy_succeeds),
		T(test_a_server_buffer_too_small_for_one_stripe_refuses_with_a_sentence),
		T(test_a_trimmed_session_that_fails_says_only_its_sentence),
		T(test_a_clients_small_buffer_plans_fewer_stripes),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
