/*
 * test_session_steps.c - where a session's time goes (common/steps.h), from
 * real sessions: a tree pushed over the loopback transport and over TCP on
 * 127.0.0.1. Each end's steps are charged where they happen (the sender
 * walks, the receiver finalizes, both connect and move data), the client's
 * add up to its wall time, and the JSON (cli_report_json's "steps",
 * cli_session_json's) and the -v line (rcp_steps_line) carry exactly the
 * documented names with these values. A receiver hears the sender's "done"
 * at once: the sender's end exchange does not wait out a worker's sleep
 * (ENG_SLEEP_MS) or the coordinator's period.
 *
 * Threading: the server's threads write the record under rec_lock; the
 * test's thread reads it after WAIT_FOR.
 */
#include "session_harness.h"

#include "cli/report.h"
#include "common/steps.h"

#include <inttypes.h>
#include <math.h>

/* The documented keys (doc/usage.md), in order: the steps, then their sum but the data. */
static const char *const keys[] = {"topology", "walk", "control",  "manifest", "memory", "connect",
				   "data",     "end",  "finalize", "teardown", "fixed"};

static struct {
	pthread_mutex_t lock;
	struct rcp_steps steps;
	_Atomic unsigned ended;
	json_t *json; /* cli_session_json of the last record */
} rec = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void on_session_end(const struct eng_session_record *r, void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&rec.lock);
	if (r->steps)
		rec.steps = *r->steps;
	json_decref(rec.json);
	rec.json = cli_session_json(r);
	pthread_mutex_unlock(&rec.lock);
	atomic_fetch_add(&rec.ended, 1);
}

/* A plan on rail "lo" (TCP) of one stripe. */
static void plan_lo(struct topo_plan *p)
{
	static const unsigned num[] = {0};

	plan_make(p, num, 1, 1, 1, BUDGET);
	snprintf(p->rail[0].dev, sizeof(p->rail[0].dev), "lo");
}

/*
 * Push the tree beneath <base>/src/top into root/<dst> over tr (NULL:
 * loopback) with the server fx's; the client's report and the wall time
 * around eng's run. The server's record is waited for.
 */
static void push_tree(struct fx *fx, const struct topo_plan *plan, const struct eng_transport *tr,
		      const char *dst, struct eng_report *r, uint64_t *wall_ns)
{
	char dir[4096], top[4096];
	const char *src[] = {top};
	struct eng_copy_opts cp;
	unsigned before = atomic_load(&rec.ended);
	uint64_t t0;

	t_path(dir, fx->base, "src");
	t_path(top, dir, "top");
	cp = copy_opts(ENG_PUSH, src, 1, dst);
	t0 = rcp_now_ns();
	assert_int_equal(copy(&fx->srv, plan, &cp, tr, r), 0);
	*wall_ns = rcp_now_ns() - t0;
	assert_true(WAIT_FOR(atomic_load(&rec.ended) > before));
}

static void server_up(struct fx *fx, const struct eng_transport *tr, char root[4096])
{
	char src[4096];

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	tree_make(src);
	fx->srv.session_end = on_session_end;
	if (tr)
		plan_lo(&fx->srv.plan);
	else
		plan_make(&fx->srv.plan, (const unsigned[]){1}, 1, 1, 1, BUDGET);
	server_start(&fx->srv, tr, root, NULL);
}

static uint64_t sum_of(const struct rcp_steps *s)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < RCP_STEP_N; i++)
		sum += s->ns[i];
	return sum;
}

/* Each end's steps where they happen: what a push's sender and receiver each do. */
static void steps_check(const struct rcp_steps *snd, const struct rcp_steps *rcv, uint64_t wall)
{
	static const enum rcp_step both[] = {RCP_STEP_CONTROL, RCP_STEP_MANIFEST, RCP_STEP_MEMORY,
					     RCP_STEP_CONNECT, RCP_STEP_DATA,	  RCP_STEP_END};
	unsigned i;

	for (i = 0; i < RCP_ARRAY_SIZE(both); i++) {
		if (snd->ns[both[i]] == 0 || rcv->ns[both[i]] == 0)
			fail_msg("step %s: %" PRIu64 " ns at the sender, %" PRIu64
				 " at the receiver",
				 rcp_step_name(both[i]), snd->ns[both[i]], rcv->ns[both[i]]);
	}
	assert_true(snd->ns[RCP_STEP_WALK] > 0);     /* the sender walks the sources */
	assert_int_equal(rcv->ns[RCP_STEP_WALK], 0); /* a push's receiver walks nothing */
	assert_true(rcv->ns[RCP_STEP_FINALIZE] > 0); /* it puts the files in place */
	assert_int_equal(snd->ns[RCP_STEP_FINALIZE], 0);
	assert_true(snd->ns[RCP_STEP_TEARDOWN] > 0);
	assert_int_equal(snd->ns[RCP_STEP_TOPOLOGY], 0); /* the command's, not the engine's */
	/* The client's laps cover its run: nothing counted twice, little left out. */
	if (sum_of(snd) > wall || sum_of(snd) < wall / 2)
		fail_msg("the sender's steps add up to %" PRIu64 " ns of a %" PRIu64 " ns run",
			 sum_of(snd), wall);
}

/* The JSON's "steps" object: exactly the documented keys, in seconds, "fixed" their sum but data.
 */
static void json_check(const json_t *steps, const struct rcp_steps *s)
{
	double fixed = 0;
	unsigned i;

	assert_true(json_is_object(steps));
	assert_int_equal(json_object_size(steps), RCP_ARRAY_SIZE(keys));
	for (i = 0; i < RCP_STEP_N; i++) {
		const json_t *v = json_object_get(steps, rcp_step_name(i));

		assert_non_null(v);
		assert_true(fabs(json_real_value(v) - (double)s->ns[i] / 1e9) < 1e-9);
		fixed += i == RCP_STEP_DATA ? 0 : json_real_value(v);
	}
	for (i = 0; i < RCP_ARRAY_SIZE(keys); i++)
		if (!json_object_get(steps, keys[i]))
			fail_msg("no \"%s\" in the JSON's steps", keys[i]);
	assert_true(fabs(json_real_value(json_object_get(steps, "fixed")) - fixed) < 1e-6);
}

/* The -v line: "name N.N ms" for each step in order, then "; fixed N.N ms", values as measured. */
static void line_check(const struct rcp_steps *s)
{
	char line[512], name[32];
	const char *p;
	double ms;
	unsigned i;
	int used;

	p = rcp_steps_line(s, line, sizeof(line));
	for (i = 0; i < RCP_STEP_N; i++) {
		if (sscanf(p, "%31[a-z] %lf ms%n", name, &ms, &used) != 2)
			fail_msg("step %u unreadable in \"%s\"", i, line);
		assert_string_equal(name, rcp_step_name(i));
		assert_true(fabs(ms - (double)s->ns[i] / 1e6) <= 0.05 + 1e-9);
		p += used;
		if (i + 1 < RCP_STEP_N) {
			assert_int_equal(strncmp(p, ", ", 2), 0);
			p += 2;
		}
	}
	if (sscanf(p, "; fixed %lf ms", &ms) != 1)
		fail_msg("no fixed sum at the end of \"%s\"", line);
	assert_true(fabs(ms - (double)rcp_steps_setup_ns(s) / 1e6) <= 0.05 + 1e-9);
}

/* The first line the log tap sees, its newline cut. */
static void first_line(const char *line, void *ctx)
{
	char *out = ctx;

	if (!out[0])
		snprintf(out, 512, "%.*s", (int)strcspn(line, "\n"), line);
}

/* What -v prints: "railcp: steps: " and the steps' line, once. */
static void log_check(const struct rcp_steps *s)
{
	char got[512] = "", want[512], line[512];
	struct log_tap tap;

	rcp_log_set_level(RCP_LOG_INFO);
	log_tap_start(&tap, first_line, got);
	cli_steps_log(s);
	log_tap_stop(&tap);
	rcp_log_set_level(RCP_LOG_SILENT);
	snprintf(want, sizeof(want), "railcp: steps: %s", rcp_steps_line(s, line, sizeof(line)));
	assert_string_equal(got, want);
}

static void steps_test(void **state, const struct eng_transport *tr)
{
	struct fx *fx = *state;
	char root[4096];
	struct topo_plan plan;
	struct rcp_steps srv;
	struct eng_report r;
	json_t *o = json_object(), *sj;
	uint64_t wall;

	server_up(fx, tr, root);
	if (tr)
		plan_lo(&plan);
	else
		plan_make(&plan, (const unsigned[]){1}, 1, 1, 1, BUDGET);
	push_tree(fx, &plan, tr, "", &r, &wall);
	pthread_mutex_lock(&rec.lock);
	srv = rec.steps;
	sj = json_incref(json_object_get(rec.json, "steps"));
	pthread_mutex_unlock(&rec.lock);
	steps_check(&r.steps, &srv, wall);
	cli_report_json(o, &r, r.wall_seconds);
	json_check(json_object_get(o, "steps"), &r.steps);
	json_check(sj, &srv);
	line_check(&r.steps);
	line_check(&srv);
	json_decref(sj);
	json_decref(o);
	assert_int_equal(server_stop(&fx->srv), 0);
	log_check(&r.steps); /* the server's session done: no line of its own in the tap */
}

static void test_a_loopback_push_charges_each_step_where_it_happens(void **state)
{
	steps_test(state, NULL);
}

static void test_a_tcp_push_charges_each_step_where_it_happens(void **state)
{
	steps_test(state, eng__transport_tcp());
}

/*
 * The sender's end exchange is the receiver's drain and finalize, not a
 * wait: before the receiver's workers and coordinator woke on the "done",
 * it took a worker's sleep (ENG_SLEEP_MS, 100 ms) every time. The best of
 * three pushes must be well under it (a loaded host may slow one).
 */
static void test_the_receiver_hears_done_at_once(void **state)
{
	struct fx *fx = *state;
	char root[4096], dst[16];
	struct topo_plan plan;
	struct eng_report r;
	uint64_t wall, best = UINT64_MAX;
	unsigned i;

	server_up(fx, NULL, root);
	plan_make(&plan, (const unsigned[]){1}, 1, 1, 1, BUDGET);
	for (i = 0; i < 3; i++) {
		snprintf(dst, sizeof(dst), "d%u", i);
		push_tree(fx, &plan, NULL, dst, &r, &wall);
		if (r.steps.ns[RCP_STEP_END] < best)
			best = r.steps.ns[RCP_STEP_END];
	}
	if (best >= 50000000ull)
		fail_msg("the sender's end exchange took %.1f ms at best: the receiver slept on "
			 "the done",
			 (double)best / 1e6);
	assert_int_equal(server_stop(&fx->srv), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_loopback_push_charges_each_step_where_it_happens),
		T(test_a_tcp_push_charges_each_step_where_it_happens),
		T(test_the_receiver_hears_done_at_once),
	};

	rcp_log_set_level(RCP_LOG_SILENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
