/*
 * test_session_setupfail.c - failover at set-up, in whole sessions over the
 * loopback transport (session_harness.h): a rail whose connection is
 * refused, never answered (a path that drops everything) or cannot be
 * accepted by the server is left out with its cause, the peer is told at
 * once, and the push, pull or bench goes on over the other rail, byte for
 * byte; a dead rail costs at most the connect timeout; no rail connecting
 * fails with one sentence naming each rail; --no-failover at either end
 * keeps the old strictness; the server serves the next session each time.
 *
 * The faults are the loopback's own (eng__loop_inject_connect), met by the
 * client's connect of a stripe on the rail named.
 *
 * Threading: one session at a time (the loopback fabric is process-wide).
 */
#include "session_harness.h"

#include "engine/transport/loopback.h"

#define SF_CHUNK (4 * KiB)
/* Connect timeout of these tests: short, so a dead rail's cost shows against it. */
#define SF_CONNECT_MS 400

struct sf {
	char src[4096], root[4096], back[4096];
	struct topo_plan plan; /* the client's: loop0 and loop1, 2 QPs each, a worker each */
};

static void sf_clear(void)
{
	eng__loop_inject_connect("loop0", ENG_LOOP_FAULT_NONE, 0);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_NONE, 0);
}

/* Trees in src (and root, for a pull), a server on loop0 and loop1, and the client's plan. */
static void sf_start(struct fx *fx, struct sf *f, bool server_no_failover)
{
	static const unsigned rails[] = {0, 1};

	sf_clear();
	fx_dir(fx, "src", f->src);
	fx_dir(fx, "root", f->root);
	fx_dir(fx, "back", f->back);
	tree_make(f->src);
	fx->srv.no_failover = server_no_failover;
	plan_make(&fx->srv.plan, rails, 2, 2, 1, BUDGET);
	server_start(&fx->srv, NULL, f->root, NULL);
	plan_make(&f->plan, rails, 2, 2, 2, BUDGET);
}

static int sf_copy(struct fx *fx, struct sf *f, enum eng_copy_dir dir, bool no_failover,
		   struct eng_report *r)
{
	char top[4096];
	const char *push_src[] = {top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp;
	struct eng_client_opts o;
	int err;

	t_path(top, f->src, "top");
	cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
			     : copy_opts(ENG_PULL, pull_src, 1, f->back);
	cp.chunk = SF_CHUNK;
	cp.no_failover = no_failover;
	o = client_opts(&fx->srv, &f->plan, cp.chunk, NULL);
	o.copy = &cp;
	o.no_failover = no_failover;
	o.connect_timeout_ms = SF_CONNECT_MS;
	memset(r, 0, sizeof(*r));
	err = eng__client_run(&o, r);
	if (err)
		print_message("the copy failed: %s\n", rcp_err_msg(err));
	return err;
}

static double secs_since(uint64_t t0)
{
	return (double)(rcp_now_ns() - t0) / 1e9;
}

/* loop1 was left out at set-up for a reason containing what; loop0 carried everything. */
static void sf_loop1_left_out(const struct eng_report *r, uint64_t bytes, const char *what)
{
	assert_int_equal(r->n_rails, 2);
	assert_int_equal(r->rails_left_out, 1);
	assert_int_equal(r->rails_failed, 0);
	assert_string_equal(r->rail[1].name, "loop1:1");
	assert_true(r->rail[1].left_out);
	assert_false(r->rail[1].failed);
	assert_int_equal(r->rail[1].stripes, 2);
	assert_int_equal(r->rail[1].stripes_left_out, 2);
	assert_int_equal(r->rail[1].stripes_lost, 0);
	if (!strstr(r->rail[1].left_out_why, what))
		fail_msg("loop1 was left out for \"%s\", not \"%s\"", r->rail[1].left_out_why,
			 what);
	assert_int_equal(r->rail[1].bytes, 0);
	assert_false(r->rail[0].left_out);
	assert_int_equal(r->rail[0].stripes_left_out, 0);
	assert_string_equal(r->rail[0].left_out_why, "");
	assert_int_equal(r->rail[0].bytes, bytes);
	assert_int_equal(r->bytes, bytes);
}

/* A failed push left no temporary and put no file in place with data. */
static void sf_nothing_placed(const struct sf *f)
{
	assert_int_equal(t_count_tmp(f->root), 0);
	assert_false(t_exists(f->root, "top/sub/big.bin"));
	assert_false(t_exists(f->root, "top/a.txt"));
}

/* The server then serves a clean push over both rails. */
static void sf_serves_a_clean_push(struct fx *fx, struct sf *f)
{
	struct eng_report r;
	char top[4096];

	sf_clear();
	t_path(top, f->root, "top");
	t_rm_rf(top);
	assert_int_equal(sf_copy(fx, f, ENG_PUSH, false, &r), 0);
	tree_same(f->src, f->root);
	assert_int_equal(r.rails_left_out, 0);
	assert_int_equal(r.rail[1].stripes, 2);
	assert_int_equal(r.rail[1].stripes_left_out, 0);
}

static void test_a_push_goes_on_without_a_rail_whose_connection_is_refused(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct sf f;

	sf_start(fx, &f, false);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_REFUSE, 1);
	assert_int_equal(sf_copy(fx, &f, ENG_PUSH, false, &r), 0);
	tree_same(f.src, f.root);
	assert_int_equal(t_count_tmp(f.root), 0);
	assert_int_equal(r.files, TREE_FILES);
	sf_loop1_left_out(&r, TREE_BYTES, "refused");
	sf_serves_a_clean_push(fx, &f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_goes_on_without_a_rail_that_never_answers_within_the_timeout(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	uint64_t t0;
	struct sf f;

	sf_start(fx, &f, false);
	tree_make(f.root);
	/* Once: the rail's other stripe is not tried, so a dead rail costs one timeout. */
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_SILENT, 1);
	t0 = rcp_now_ns();
	assert_int_equal(sf_copy(fx, &f, ENG_PULL, false, &r), 0);
	print_message("a pull with loop1 silent took %.2f s (connect timeout %.1f s)\n",
		      secs_since(t0), SF_CONNECT_MS / 1000.0);
	assert_true(secs_since(t0) < SF_CONNECT_MS / 1000.0 + 2.0);
	tree_same(f.root, f.back);
	assert_int_equal(t_count_tmp(f.back), 0);
	sf_loop1_left_out(&r, TREE_BYTES, "no answer within 0.4 s");
	sf_serves_a_clean_push(fx, &f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * The server cannot take loop1's request: it gives the stripe up and tells
 * the client, which finds it refused. The bench still moves every byte
 * exactly once, and costs no more than one without loop1 plus the bound.
 */
static void test_a_bench_goes_on_without_a_rail_the_server_cannot_accept(void **state)
{
	static const unsigned rail0[] = {0};
	struct fx *fx = *state;
	struct eng_client_opts o;
	struct topo_plan one;
	struct eng_report r;
	double alone, with;
	uint64_t t0;
	struct sf f;

	sf_start(fx, &f, false);
	plan_make(&one, rail0, 1, 2, 1, BUDGET);
	t0 = rcp_now_ns();
	assert_int_equal(bench(&fx->srv, &one, 8 * MiB, 64 * KiB, NULL, &r), 0);
	alone = secs_since(t0);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_ACCEPT_FAIL, 1);
	o = client_opts(&fx->srv, &f.plan, 64 * KiB, NULL);
	o.bench_bytes = 8 * MiB;
	o.connect_timeout_ms = SF_CONNECT_MS;
	t0 = rcp_now_ns();
	assert_int_equal(eng__client_run(&o, &r), 0);
	with = secs_since(t0);
	print_message("bench: %.2f s on loop0 alone, %.2f s with loop1 not accepted\n", alone,
		      with);
	assert_true(with < alone + SF_CONNECT_MS / 1000.0 + 2.0);
	sf_loop1_left_out(&r, 8 * MiB, "refused");
	bench_ok(&fx->srv, NULL);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_no_rail_connecting_fails_with_one_sentence_naming_each(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	const char *msg;
	uint64_t t0;
	struct sf f;
	int err;

	sf_start(fx, &f, false);
	eng__loop_inject_connect("loop0", ENG_LOOP_FAULT_REFUSE, 1);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_SILENT, 1);
	t0 = rcp_now_ns();
	err = sf_copy(fx, &f, ENG_PUSH, false, &r);
	assert_int_equal(err, -ENETUNREACH);
	msg = rcp_err_msg(err);
	if (!strstr(msg, "no rail connected to the server (loop0:1: ") ||
	    !strstr(msg, "refused; loop1:1: ") || !strstr(msg, "no answer within"))
		fail_msg("the copy failed with \"%s\"", msg);
	assert_null(strchr(msg, '\n'));
	assert_true(secs_since(t0) < 2 * SF_CONNECT_MS / 1000.0 + 1.0);
	sf_nothing_placed(&f);
	/* The server's session ended with the client's: the next one is served at once. */
	t0 = rcp_now_ns();
	sf_serves_a_clean_push(fx, &f);
	assert_true(secs_since(t0) < 2.0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_without_failover_a_rail_refused_at_set_up_fails_the_copy(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct sf f;
	int err;

	sf_start(fx, &f, false);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_REFUSE, 1);
	err = sf_copy(fx, &f, ENG_PUSH, true, &r);
	assert_int_equal(err, -ECONNREFUSED);
	if (!strstr(rcp_err_msg(err), "connecting loop1 to 198.18.1.1 port"))
		fail_msg("the copy failed with \"%s\"", rcp_err_msg(err));
	sf_nothing_placed(&f);
	sf_serves_a_clean_push(fx, &f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The client leaves loop1 out and says so; a server without failover takes that as fatal. */
static void test_a_server_without_failover_fails_on_a_stripe_the_client_left_out(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct sf f;
	int err;

	sf_start(fx, &f, true);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_REFUSE, 1);
	err = sf_copy(fx, &f, ENG_PUSH, false, &r);
	assert_int_not_equal(err, 0);
	if (!strstr(rcp_err_msg(err),
		    "the server says: stripe 2: the client gave it up: connecting loop1"))
		fail_msg("the copy failed with \"%s\"", rcp_err_msg(err));
	sf_nothing_placed(&f);
	sf_serves_a_clean_push(fx, &f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_push_goes_on_without_a_rail_whose_connection_is_refused),
		T(test_a_pull_goes_on_without_a_rail_that_never_answers_within_the_timeout),
		T(test_a_bench_goes_on_without_a_rail_the_server_cannot_accept),
		T(test_no_rail_connecting_fails_with_one_sentence_naming_each),
		T(test_without_failover_a_rail_refused_at_set_up_fails_the_copy),
		T(test_a_server_without_failover_fails_on_a_stripe_the_client_left_out),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
