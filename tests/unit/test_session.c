/*
 * test_session.c - whole sessions over the loopback transport
 * (session_harness.h): bench and copies move every byte and report it; keys
 * must match; stripes pair with the server rail on their subnet, else the
 * least loaded; the slot budget (a buffer that holds fewer stripes than
 * asked: test_session_buffer.c); pushes outside the root are refused.
 * Hostile peers and cancelled copies: test_session_hostile.c.
 */
#include "session_harness.h"

/* ---- bench ---- */

static void test_bench_moves_every_byte_and_reports_it(void **state)
{
	static const unsigned rails[] = {1, 2};
	const uint64_t bytes = 3 * MiB + 12345; /* the last chunk is short and odd */
	const uint32_t chunk = 64 * KiB;
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;
	uint64_t sum = 0;
	unsigned i, want_slots;

	plan_make(&fx->srv.plan, rails, 2, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, rails, 2, 2, 2, BUDGET);
	assert_int_equal(bench(&fx->srv, &plan, bytes, chunk, NULL, &r), 0);
	assert_int_equal(r.bytes, bytes);
	assert_int_equal(r.bytes_total, bytes);
	assert_int_equal(r.chunks, (bytes + chunk - 1) / chunk);
	assert_int_equal(r.chunk, chunk);
	assert_int_equal(r.n_rails, plan.n_rails);
	assert_int_equal(r.n_stripes, 4);
	/* The server's one worker carries all four stripes within its budget. */
	want_slots = (unsigned)(BUDGET / (4ull * chunk));
	assert_int_equal(r.n_slots, want_slots < ENG_MAX_SLOTS ? want_slots : ENG_MAX_SLOTS);
	for (i = 0; i < r.n_rails; i++) {
		assert_string_equal(r.rail[i].name, i == 0 ? "loop1:1" : "loop2:1");
		sum += r.rail[i].bytes;
	}
	assert_int_equal(sum, bytes);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_bench_with_the_same_key_on_both_ends_succeeds(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char key[4096];

	fx_key(fx, "key", TEST_KEY, key);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, key);
	bench_ok(&fx->srv, key);
	bench_ok(&fx->srv, key);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_wrong_or_missing_key_is_refused_and_the_server_keeps_serving(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char key[4096], wrong[4096];
	struct topo_plan plan;
	struct eng_report r = {.bytes = 77};
	int err;

	fx_key(fx, "key", TEST_KEY, key);
	fx_key(fx, "wrong", TEST_KEY_OTHER, wrong);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, key);
	/* The client proves first: the server finds its proof wrong and says so. */
	err = bench(&fx->srv, &plan, MiB, 64 * KiB, wrong, &r);
	assert_int_equal(err, -ECONNABORTED);
	assert_non_null(strstr(rcp_err_msg(err), "does not know the shared key"));
	assert_int_equal(r.bytes, 77); /* the report is written only on success */
	bench_ok(&fx->srv, key);
	/* No key at all (none in the environment either): the server says it needs one. */
	err = bench(&fx->srv, &plan, MiB, 64 * KiB, NULL, &r);
	assert_int_equal(err, -ECONNABORTED);
	assert_non_null(strstr(rcp_err_msg(err), "this server requires a key"));
	bench_ok(&fx->srv, key);
	assert_int_equal(server_stop(&fx->srv), 0);
	/* A keyed client refuses a server that cannot prove the key. */
	server_start(&fx->srv, NULL, NULL, NULL);
	err = bench(&fx->srv, &plan, MiB, 64 * KiB, key, &r);
	assert_int_equal(err, -ECONNABORTED);
	assert_non_null(strstr(rcp_err_msg(err), "has no key"));
	bench_ok(&fx->srv, NULL);
}

/* ---- pairing ---- */

/* The number N of a rail named "loopN:1". */
static unsigned rail_num(const char *name)
{
	unsigned n;

	assert_int_equal(sscanf(name, "loop%u:", &n), 1);
	return n;
}

static void test_stripes_pair_with_the_server_rail_on_their_subnet(void **state)
{
	static const unsigned client[] = {1, 2}, server[] = {3, 2, 1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;
	unsigned i;

	/*
	 * The server's rails in another order, on a worker each, one of them unused;
	 * 4 slots per stripe, so the first round of posts gives every stripe chunks.
	 */
	plan_make(&fx->srv.plan, server, 3, 1, 3, 2 * 4 * 64 * KiB);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, client, 2, 2, 1, BUDGET);
	assert_int_equal(bench(&fx->srv, &plan, 2 * MiB, 64 * KiB, NULL, &r), 0);
	assert_int_equal(r.n_rails, 2);
	for (i = 0; i < r.n_rails; i++) {
		/* loopN is 198.18.N.1/24: the peer must be the server's rail on that subnet. */
		assert_int_equal(rail_num(r.rail[i].name), client[i]);
		assert_string_equal(r.rail[i].peer, r.rail[i].name);
		assert_true(r.rail[i].bytes > 0);
	}
}

static void test_stripes_without_a_subnet_match_go_to_the_least_loaded_rail(void **state)
{
	static const unsigned client[] = {1, 2}, routed[] = {5, 6}, half[] = {1, 3};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_report r;
	unsigned i;

	/* No subnet matches: the four stripes alternate between the two rails. */
	plan_make(&fx->srv.plan, routed, 2, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, client, 2, 2, 1, BUDGET);
	assert_int_equal(bench(&fx->srv, &plan, MiB, 64 * KiB, NULL, &r), 0);
	for (i = 0; i < r.n_rails; i++) {
		assert_non_null(strstr(r.rail[i].peer, "loop5:1"));
		assert_non_null(strstr(r.rail[i].peer, "loop6:1"));
	}
	assert_int_equal(server_stop(&fx->srv), 0);
	/* loop1 finds its subnet; loop2 has none and takes the rail loop1 left empty. */
	plan_make(&fx->srv.plan, half, 2, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, client, 2, 1, 1, BUDGET);
	assert_int_equal(bench(&fx->srv, &plan, MiB, 64 * KiB, NULL, &r), 0);
	assert_string_equal(r.rail[0].peer, "loop1:1");
	assert_string_equal(r.rail[1].peer, "loop3:1");
}

static void rail_addr(struct eng_rail_addr *a, const char *ip, unsigned prefix)
{
	memset(a, 0, sizeof(*a));
	a->addr.in.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, ip, &a->addr.in.sin_addr), 1);
	a->prefix = prefix;
	snprintf(a->text, sizeof(a->text), "%s", ip);
}

static void load_set(unsigned load[3], unsigned a, unsigned b, unsigned c)
{
	load[0] = a;
	load[1] = b;
	load[2] = c;
}

static void test_rail_pair_prefers_the_least_loaded_rail_on_the_same_subnet(void **state)
{
	struct eng_rail_addr from, to[3];
	unsigned load[3];

	(void)state;
	rail_addr(&to[0], "10.0.0.1", 8);
	rail_addr(&to[1], "198.18.2.1", 24);
	rail_addr(&to[2], "198.18.2.2", 24);
	rail_addr(&from, "198.18.2.9", 24);
	/* On the subnet, the less loaded of the two wins, even over an idle rail elsewhere. */
	load_set(load, 0, 5, 3);
	assert_int_equal(eng__rail_pair(&from, to, 3, load), 2);
	assert_memory_equal(load, ((unsigned[]){0, 5, 4}), sizeof(load));
	/* A tie goes to the first. */
	load_set(load, 0, 3, 3);
	assert_int_equal(eng__rail_pair(&from, to, 3, load), 1);
	/* No subnet matches: the least loaded of all. */
	rail_addr(&from, "192.168.7.1", 24);
	load_set(load, 4, 1, 2);
	assert_int_equal(eng__rail_pair(&from, to, 3, load), 1);
	assert_int_equal(load[1], 2);
	/* The stripe's prefix decides: /16 takes in both 198.18 rails, not 10.0.0.1. */
	rail_addr(&from, "198.18.9.9", 16);
	load_set(load, 0, 2, 1);
	assert_int_equal(eng__rail_pair(&from, to, 3, load), 2);
	/* /0 matches everything: the least loaded overall. */
	rail_addr(&from, "172.16.0.1", 0);
	load_set(load, 1, 0, 1);
	assert_int_equal(eng__rail_pair(&from, to, 3, load), 1);
	/* Spreading: six stripes from one subnet over its two rails, three each. */
	rail_addr(&from, "198.18.2.9", 24);
	memset(load, 0, sizeof(load));
	for (unsigned i = 0; i < 6; i++)
		eng__rail_pair(&from, to, 3, load);
	assert_memory_equal(load, ((unsigned[]){0, 3, 3}), sizeof(load));
}

static void test_stripes_pair_refuses_stripes_without_an_address_and_sets_qps(void **state)
{
	static const unsigned rails[] = {1, 2};
	unsigned peer[ENG_MAX_STRIPES];
	struct eng_rail_addr ours[TOPO_MAX_RAILS];
	struct topo_plan plan;
	json_t *st = json_array();
	unsigned i;

	(void)state;
	plan_make(&plan, rails, 2, 7, 1, BUDGET);
	assert_int_equal(eng__transport_loopback()->rail_addrs(&plan, ours), 0);
	assert_string_equal(ours[1].text, "198.18.2.1");
	assert_int_equal(eng__stripes_pair(st, ours, &plan, NULL, peer), -EINVAL); /* none */
	json_array_append_new(st, stripe_json("198.18.2.7", 24));
	json_array_append_new(st, stripe_json("198.18.2.8", 24));
	json_array_append_new(st, stripe_json("198.18.1.7", 24));
	assert_int_equal(eng__stripes_pair(st, ours, &plan, NULL, peer), 0);
	assert_int_equal(peer[0], 1);
	assert_int_equal(peer[1], 1);
	assert_int_equal(peer[2], 0);
	/* The plan's QPs per rail become the stripes each rail takes. */
	assert_int_equal(plan.rail[0].qps, 1);
	assert_int_equal(plan.rail[1].qps, 2);
	json_array_append_new(st, stripe_json("not an address", 24));
	assert_int_equal(eng__stripes_pair(st, ours, &plan, NULL, peer), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "stripe 3"));
	json_array_remove(st, 3);
	json_array_append_new(st, stripe_json("198.18.1.7", 33));
	assert_int_equal(eng__stripes_pair(st, ours, &plan, NULL, peer), -EINVAL);
	json_array_remove(st, 3);
	json_array_append_new(st, json_pack("{s:s}", "addr", "198.18.1.7"));
	assert_int_equal(eng__stripes_pair(st, ours, &plan, NULL, peer), -EINVAL);
	json_array_clear(st);
	for (i = 0; i <= ENG_MAX_STRIPES; i++)
		json_array_append_new(st, stripe_json("198.18.1.7", 24));
	assert_int_equal(eng__stripes_pair(st, ours, &plan, NULL, peer), -EINVAL);
	json_decref(st);
}

static void test_stripes_pair_leaves_out_stripes_whose_rail_is_down(void **state)
{
	static const unsigned rails[] = {1, 2};
	unsigned peer[ENG_MAX_STRIPES];
	struct eng_rail_addr ours[TOPO_MAX_RAILS];
	struct topo_plan plan;
	bool usable[2] = {true, false};
	json_t *st = json_array();

	(void)state;
	plan_make(&plan, rails, 2, 7, 1, BUDGET);
	assert_int_equal(eng__transport_loopback()->rail_addrs(&plan, ours), 0);
	json_array_append_new(st, stripe_json("198.18.1.7", 24));
	json_array_append_new(st, stripe_json("198.18.2.7", 24));
	json_array_append_new(st, stripe_json("198.18.2.8", 24));
	/* Rail 1 (198.18.2.1) is down: its subnet's stripes stay out, never sent to 198.18.1.1. */
	assert_int_equal(eng__stripes_pair(st, ours, &plan, usable, peer), 0);
	assert_int_equal(peer[0], 0);
	assert_int_equal(peer[1], ENG_NO_RAIL);
	assert_int_equal(peer[2], ENG_NO_RAIL);
	assert_int_equal(plan.rail[0].qps, 1);
	assert_int_equal(plan.rail[1].qps, 0);
	/* Both down: nothing can pair, and the session says so. */
	usable[0] = false;
	assert_int_equal(eng__stripes_pair(st, ours, &plan, usable, peer), -ENETUNREACH);
	assert_non_null(strstr(rcp_err_msg(-ENETUNREACH), "ACTIVE"));
	/* Subnets we have no rail on (a routed fabric): any usable rail takes them. */
	usable[0] = true;
	json_array_clear(st);
	json_array_append_new(st, stripe_json("192.0.2.7", 24));
	json_array_append_new(st, stripe_json("192.0.3.7", 24));
	assert_int_equal(eng__stripes_pair(st, ours, &plan, usable, peer), 0);
	assert_int_equal(peer[0], 0);
	assert_int_equal(peer[1], 0);
	json_decref(st);
}

/* ---- the slot budget ---- */

static void test_slots_per_stripe_stay_within_the_budget(void **state)
{
	static const unsigned rails[] = {1, 2};
	const uint32_t chunk = 64 * KiB;
	struct topo_plan plan;
	unsigned n = 99;

	(void)state;
	/* Worker 0: loop1 with 2 stripes; worker 1: loop2 with 1. */
	plan_make(&plan, rails, 2, 2, 2, 0);
	plan.rail[1].qps = 1;
	plan.worker[0].buffer_bytes = 16ull * chunk; /* 8 slots each */
	plan.worker[1].buffer_bytes = 64ull * chunk; /* 64 */
	assert_int_equal(eng__slots_per_stripe(&plan, chunk, "the server", &n), 0);
	assert_int_equal(n, 8); /* the smallest share */
	/* A large budget is capped; the smallest worker still decides. */
	plan.worker[0].buffer_bytes = plan.worker[1].buffer_bytes = 1ull << 40;
	assert_int_equal(eng__slots_per_stripe(&plan, chunk, "the server", &n), 0);
	assert_int_equal(n, ENG_MAX_SLOTS);
	/* Exactly two slots per stripe is enough. */
	plan.worker[0].buffer_bytes = 2ull * 2 * chunk;
	assert_int_equal(eng__slots_per_stripe(&plan, chunk, "the server", &n), 0);
	assert_int_equal(n, 2);
	/* One byte less is not, and the sentence says what to change. */
	plan.worker[0].buffer_bytes--;
	n = 99;
	assert_int_equal(eng__slots_per_stripe(&plan, chunk, "the server", &n), -ENOMEM);
	assert_int_equal(n, 99); /* written only on success */
	assert_non_null(strstr(rcp_err_msg(-ENOMEM), "node 0 worker"));
	assert_non_null(strstr(rcp_err_msg(-ENOMEM), "--buffer-mib"));
	/* A worker that carries no stripe of this session needs no budget. */
	plan.rail[0].qps = 0;
	plan.worker[0].buffer_bytes = 0;
	assert_int_equal(eng__slots_per_stripe(&plan, chunk, "the server", &n), 0);
	assert_int_equal(n, ENG_MAX_SLOTS);
	/* A chunk larger than the whole budget. */
	plan.worker[1].buffer_bytes = 64ull * chunk;
	assert_int_equal(eng__slots_per_stripe(&plan, ENG_CHUNK_MAX, "the server", &n), -ENOMEM);
	assert_non_null(strstr(rcp_err_msg(-ENOMEM), "node 1 worker"));
}

static void test_push_and_pull_of_a_tree_arrive_identical(void **state)
{
	static const unsigned rails[] = {1, 2};
	struct fx *fx = *state;
	char src[4096], root[4096], back[4096], top[4096], a[4096], b[4096];
	const char *push_src[] = {top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	fx_dir(fx, "back", back);
	tree_make(src);
	t_path(top, src, "top");
	plan_make(&fx->srv.plan, rails, 2, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 2, 2, 1, BUDGET);
	/* Push into the root itself: root/top. */
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	assert_int_equal(r.files, TREE_FILES);
	assert_int_equal(r.files_total, TREE_FILES);
	assert_int_equal(r.bytes, TREE_BYTES);
	assert_int_equal(r.chunks, 1 + 2 + (300 * KiB + 1234 + 4095) / 4096);
	tree_same(src, root);
	assert_int_equal(t_count_tmp(root), 0);
	/* Pull it back into an existing directory: back/top. */
	cp = copy_opts(ENG_PULL, pull_src, 1, back);
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	assert_int_equal(r.files, TREE_FILES);
	assert_int_equal(r.files_total, TREE_FILES);
	assert_int_equal(r.bytes, TREE_BYTES);
	tree_same(src, back);
	/* Push one file under a new name in a subdirectory, as cp names it. */
	t_path(a, src, "top/sub/big.bin");
	push_src[0] = a;
	cp = copy_opts(ENG_PUSH, push_src, 1, "top/void/renamed");
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	assert_int_equal(r.files, 1);
	t_path(b, root, "top/void/renamed");
	file_same(a, b, 300 * KiB + 1234);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_push_outside_the_root_is_refused_and_creates_nothing(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char src[4096], root[4096], top[4096];
	const char *push_src[] = {top};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	tree_make(src);
	t_path(top, src, "top");
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PUSH, push_src, 1, "../escaped");
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	assert_int_equal(err, -ECONNABORTED);
	assert_non_null(strstr(rcp_err_msg(err), "refused the destination"));
	cp = copy_opts(ENG_PUSH, push_src, 1, "/tmp/escaped");
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), -ECONNABORTED);
	assert_false(t_exists(fx->base, "escaped"));
	assert_true(dir_empty(root));
	bench_ok(&fx->srv, NULL);
}

/* More sources than a hello could hold: they travel after the hello, in a frame of their own. */
#define MANY_SOURCES 300
#define LONG_NAME 240

static void test_a_pull_of_many_long_names_is_not_held_to_the_hellos_size(void **state)
{
	static const unsigned rails[] = {1};
	static char names[MANY_SOURCES][LONG_NAME + 1];
	const char *src[MANY_SOURCES];
	char root[4096], back[4096], p[4096];
	struct fx *fx = *state;
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	unsigned i;

	fx_dir(fx, "root", root);
	fx_dir(fx, "back", back);
	for (i = 0; i < MANY_SOURCES; i++) {
		memset(names[i], 'n', LONG_NAME);
		snprintf(names[i] + LONG_NAME - 4, 5, "%04u", i);
		t_write(root, names[i], names[i], LONG_NAME, 0644);
		src[i] = names[i];
	}
	/* As hex in one hello these names alone would be more than its limit. */
	assert_true(2 * MANY_SOURCES * LONG_NAME > ENG_PROTO_MAX_HELLO);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PULL, src, MANY_SOURCES, back);
	cp.recursive = false;
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	assert_int_equal(r.files, MANY_SOURCES);
	for (i = 0; i < MANY_SOURCES; i += 37) {
		char a[4096];

		t_path(a, root, names[i]);
		t_path(p, back, names[i]);
		file_same(a, p, LONG_NAME);
	}
}

/* HOST:dir/. NEW: NEW is made and receives dir's contents, as rsync names it. */
static void test_a_pull_of_a_subdirectorys_contents(void **state)
{
	static const unsigned rails[] = {1};
	const char *src[] = {"top/sub/."};
	char root[4096], dst[4096], a[4096], b[4096];
	struct fx *fx = *state;
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;

	fx_dir(fx, "root", root);
	tree_make(root);
	t_path(dst, fx->base, "new");
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PULL, src, 1, dst);
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	t_path(a, root, "top/sub/big.bin");
	t_path(b, dst, "big.bin");
	file_same(a, b, 300 * KiB + 1234);
}

static void test_a_server_without_root_serves_bench_only(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char src[4096], top[4096], back[4096];
	const char *push_src[] = {top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	fx_dir(fx, "src", src);
	fx_dir(fx, "back", back);
	tree_make(src);
	t_path(top, src, "top");
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	assert_int_equal(err, -ECONNABORTED);
	assert_non_null(strstr(rcp_err_msg(err), "without --root"));
	cp = copy_opts(ENG_PULL, pull_src, 1, back);
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), -ECONNABORTED);
	assert_true(dir_empty(back));
	bench_ok(&fx->srv, NULL);
}

/* ---- main ---- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_bench_moves_every_byte_and_reports_it),
		T(test_bench_with_the_same_key_on_both_ends_succeeds),
		T(test_wrong_or_missing_key_is_refused_and_the_server_keeps_serving),
		T(test_stripes_pair_with_the_server_rail_on_their_subnet),
		T(test_stripes_without_a_subnet_match_go_to_the_least_loaded_rail),
		cmocka_unit_test(test_rail_pair_prefers_the_least_loaded_rail_on_the_same_subnet),
		cmocka_unit_test(test_stripes_pair_refuses_stripes_without_an_address_and_sets_qps),
		cmocka_unit_test(test_stripes_pair_leaves_out_stripes_whose_rail_is_down),
		cmocka_unit_test(test_slots_per_stripe_stay_within_the_budget),
		T(test_push_and_pull_of_a_tree_arrive_identical),
		T(test_push_outside_the_root_is_refused_and_creates_nothing),
		T(test_a_pull_of_many_long_names_is_not_held_to_the_hellos_size),
		T(test_a_pull_of_a_subdirectorys_contents),
		T(test_a_server_without_root_serves_bench_only),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
