/*
 * test_session_memory.c - serve --max-memory (engine/session/admit.c): the
 * slot memory of the sessions running at once stays within the budget; a
 * session past it waits its turn (its client asks again), one larger than
 * the budget gets fewer slots, and one that could never fit is refused at
 * once with a sentence. A copy takes slots for its own chunks only
 * (eng__slots_for_job): as many per stripe as it has chunks, at least 2,
 * at most what the budget gives.
 *
 * Design: over the loopback transport (session_harness.h). A session that
 * holds its reservation is a raw push held after "ready" (16 KiB: one
 * stripe, 4 slots of 4 KiB); the others are benches of 64 KiB chunks whose
 * clients offer 64 slots (4 MiB).
 *
 * Threading: the server, a thread that ends the held session, a burst's
 * client threads.
 */
#include "session_harness.h"

#define CHUNK (64 * KiB)

struct closer {
	int fd;
	unsigned after_ms;
};

static void *closer_main(void *arg)
{
	struct closer *c = arg;

	usleep(c->after_ms * 1000u);
	close(c->fd);
	return NULL;
}

static void serve(struct fx *fx, uint64_t max_memory)
{
	static const unsigned one[] = {1};
	char root[4096];

	fx_dir(fx, "root", root);
	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	fx->srv.max_sessions = 16;
	fx->srv.max_memory = max_memory;
	server_start(&fx->srv, NULL, root, NULL);
}

static int bench_of(const struct fx *fx, uint32_t chunk, int timeout_ms, struct eng_report *r)
{
	static const unsigned one[] = {1};
	struct topo_plan plan;
	struct eng_client_opts o;

	plan_make(&plan, one, 1, 1, 1, BUDGET);
	o = client_opts(&fx->srv, &plan, chunk, NULL);
	o.bench_bytes = 512 * KiB;
	o.timeout_ms = timeout_ms;
	return eng__client_run(&o, r);
}

/*
 * A budget of 4 MiB holds the held push's 16 KiB; a bench that may take 4
 * MiB does not fit beside it: it waits its turn until 9/10 of its
 * --timeout, and runs as soon as the push ends.
 */
static void test_a_session_past_the_memory_budget_waits_its_turn(void **state)
{
	struct fx *fx = *state;
	struct closer c = {.after_ms = 400};
	struct eng_report r;
	uint64_t t0;
	pthread_t t;
	int err;

	serve(fx, 4 * MiB);
	c.fd = raw_push_ready((uint16_t)atomic_load(&fx->srv.port), "d");
	err = bench_of(fx, CHUNK, 1000, &r);
	assert_int_equal(err, -ECONNABORTED);
	if (!strstr(rcp_err_msg(err), "no turn came within 0.9 s (9/10 of the client's "
				      "--timeout): this session waited at place 1 of 1 in the "
				      "server's queue, 1 sessions running (--max-sessions 16)"))
		fail_msg("past the budget: %s", rcp_err_msg(err));

	t0 = rcp_now_ns();
	assert_int_equal(pthread_create(&t, NULL, closer_main, &c), 0);
	err = bench_of(fx, CHUNK, TIMEOUT_MS, &r);
	pthread_join(t, NULL);
	if (err)
		fail_msg("the bench after the push: %s", rcp_err_msg(err));
	assert_int_equal(r.bytes, 512 * KiB);
	assert_true(rcp_now_ns() - t0 >= 300 * 1000000ull);
}

/* Alone, a session larger than the budget runs with the slots that fit: 1 MiB of 64 KiB. */
static void test_a_session_larger_than_the_budget_gets_fewer_slots(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	int err;

	serve(fx, 1 * MiB);
	err = bench_of(fx, CHUNK, TIMEOUT_MS, &r);
	if (err)
		fail_msg("a bench under a 1 MiB budget: %s", rcp_err_msg(err));
	assert_int_equal(r.n_slots, 16);
	assert_int_equal(r.bytes, 512 * KiB);
}

/*
 * 4 stripes of 64 KiB need 512 KiB for 2 slots each; a budget of 256 KiB
 * holds 2 of them: the session takes those 2 rather than being refused.
 */
static void test_a_session_of_more_stripes_than_the_budget_holds_takes_fewer(void **state)
{
	static const unsigned one[] = {1};
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_client_opts o;
	struct eng_report r;
	int err;

	serve(fx, 256 * KiB);
	plan_make(&plan, one, 1, 4, 1, BUDGET);
	o = client_opts(&fx->srv, &plan, CHUNK, NULL);
	o.bench_bytes = 512 * KiB;
	err = eng__client_run(&o, &r);
	if (err)
		fail_msg("4 stripes under a budget of 2: %s", rcp_err_msg(err));
	assert_int_equal(r.n_stripes, 2);
	assert_int_equal(r.n_slots, 2);
	assert_int_equal(r.bytes, 512 * KiB);
}

/* Two slots of 64 KiB do not fit in 100 KiB: refused at once, asked once; the server serves on. */
static void test_a_session_that_could_never_fit_is_refused_at_once(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	uint64_t t0 = rcp_now_ns();
	int err;

	serve(fx, 100 * KiB);
	err = bench_of(fx, CHUNK, TIMEOUT_MS, &r);
	assert_int_equal(err, -ECONNABORTED); /* the server's own sentence */
	if (!strstr(rcp_err_msg(err), "one stripe of 64 KiB chunks needs at least 128 KiB of "
				      "slots, more than this server's --max-memory of 100 KiB") ||
	    strstr(rcp_err_msg(err), "asked"))
		fail_msg("a session that cannot fit: %s", rcp_err_msg(err));
	assert_true(rcp_now_ns() - t0 < 2000 * 1000000ull);
	err = bench_of(fx, 4 * KiB, TIMEOUT_MS, &r); /* 4 KiB chunks: 25 slots fit */
	if (err)
		fail_msg("a bench of 4 KiB chunks: %s", rcp_err_msg(err));
	assert_int_equal(r.n_slots, 25);
}

#define BURST 8

struct burst_client {
	const struct fx *fx;
	pthread_t thread;
	int err;
	char msg[256];
	struct eng_report r;
};

static void *burst_main(void *arg)
{
	struct burst_client *b = arg;

	b->err = bench_of(b->fx, CHUNK, TIMEOUT_MS, &b->r);
	snprintf(b->msg, sizeof(b->msg), "%s", b->err ? rcp_err_msg(b->err) : "");
	return NULL;
}

/* What the running sessions' log lines said they had reserved. */
struct reserved {
	unsigned lines;
	uint64_t least, most; /* MiB */
};

static void reserved_line(const char *line, void *ctx)
{
	struct reserved *rs = ctx;
	const char *p = strstr(line, " connections waiting their turn, ");
	unsigned long long mib;

	if (!p ||
	    sscanf(p, " connections waiting their turn, %llu MiB of slots reserved", &mib) != 1)
		return;
	rs->least = rs->lines == 0 || mib < rs->least ? mib : rs->least;
	rs->most = mib > rs->most ? mib : rs->most;
	rs->lines++;
}

/*
 * BURST benches of 4 MiB each at once under a budget of two: each waits its
 * turn and runs, and every running session's log line shows at least its
 * own 4 MiB and at most the 8 MiB reserved.
 */
static void test_a_burst_under_the_memory_budget_is_served_whole(void **state)
{
	struct fx *fx = *state;
	struct burst_client b[BURST];
	struct reserved rs = {0};
	struct log_tap tap;
	unsigned i;

	serve(fx, 8 * MiB);
	log_tap_start(&tap, reserved_line, &rs);
	for (i = 0; i < BURST; i++) {
		b[i] = (struct burst_client){.fx = fx};
		assert_int_equal(pthread_create(&b[i].thread, NULL, burst_main, &b[i]), 0);
	}
	for (i = 0; i < BURST; i++)
		pthread_join(b[i].thread, NULL);
	log_tap_stop(&tap);
	for (i = 0; i < BURST; i++) {
		if (b[i].err)
			fail_msg("client %u of the burst failed: %s", i, b[i].msg);
		assert_int_equal(b[i].r.bytes, 512 * KiB);
		assert_int_equal(b[i].r.n_slots, 64);
	}
	assert_int_equal(rs.lines, BURST);
	if (rs.least < 4 || rs.most > 8)
		fail_msg("the sessions' lines said %llu to %llu MiB reserved, not 4 to 8",
			 (unsigned long long)rs.least, (unsigned long long)rs.most);
}

/* Push a file of bytes over rails (NULL: one) and return the slots per stripe it took. */
static unsigned slots_of_push(struct fx *fx, size_t bytes, const unsigned *rails, unsigned n)
{
	struct push1 p = {.bytes = bytes, .seed = 31, .rails = rails, .n_rails = n};
	char got[4096];

	assert_int_equal(push_one(fx, &p), 0);
	t_path(got, p.root, "big");
	file_same(p.file, got, (off_t)bytes);
	assert_int_equal(server_stop(&fx->srv), 0);
	return p.r.n_slots;
}

static void test_a_one_chunk_copy_takes_two_slots(void **state)
{
	assert_int_equal(slots_of_push(*state, 100, NULL, 0), 2);
}

static void test_a_small_copy_takes_a_slot_per_chunk_on_each_stripe(void **state)
{
	static const unsigned two[] = {1, 2};

	/* 5 chunks of 4 KiB over 2 stripes: 5 each (either may take them all), not the budget's 64
	 */
	assert_int_equal(slots_of_push(*state, 5 * 4 * KiB - 1, two, 2), 5);
}

static void test_a_copy_of_more_chunks_than_the_budget_takes_the_budget(void **state)
{
	assert_int_equal(slots_of_push(*state, 100 * 4 * KiB, NULL, 0), ENG_MAX_SLOTS);
}

/* The default chunk fitted to a push of small files: slots of its largest file, same bytes. */
static void test_a_push_of_small_files_takes_slots_of_its_largest(void **state)
{
	struct fx *fx = *state;
	struct push1 p = {.bytes = 5000, .seed = 7};
	char src[4096], got[4096];
	const char *srcs[] = {src};
	struct eng_copy_opts cp;

	assert_int_equal(push_one(fx, &p), 0);
	assert_int_equal(p.r.chunk, 4 * KiB); /* copy_opts' chunk, asked for: not fitted */
	pattern_write(p.src, "small", 100, 8);
	t_path(src, p.src, "small");
	cp = copy_opts(ENG_PUSH, srcs, 1, "");
	cp.chunk = MiB;
	cp.chunk_fit = true;
	assert_int_equal(copy(&fx->srv, &p.plan, &cp, NULL, &p.r), 0);
	assert_int_equal(p.r.chunk, 4 * KiB);
	t_path(got, p.root, "small");
	file_same(src, got, 100);
	srcs[0] = p.file; /* 5000 bytes: two pages */
	assert_int_equal(copy(&fx->srv, &p.plan, &cp, NULL, &p.r), 0);
	assert_int_equal(p.r.chunk, 8 * KiB);
	assert_int_equal(p.r.chunks, 1);
	cp.chunk_fit = false; /* --chunk given */
	assert_int_equal(copy(&fx->srv, &p.plan, &cp, NULL, &p.r), 0);
	assert_int_equal(p.r.chunk, MiB);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_session_past_the_memory_budget_waits_its_turn),
		T(test_a_session_larger_than_the_budget_gets_fewer_slots),
		T(test_a_session_of_more_stripes_than_the_budget_holds_takes_fewer),
		T(test_a_session_that_could_never_fit_is_refused_at_once),
		T(test_a_burst_under_the_memory_budget_is_served_whole),
		T(test_a_one_chunk_copy_takes_two_slots),
		T(test_a_small_copy_takes_a_slot_per_chunk_on_each_stripe),
		T(test_a_copy_of_more_chunks_than_the_budget_takes_the_budget),
		T(test_a_push_of_small_files_takes_slots_of_its_largest),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
