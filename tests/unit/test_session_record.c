/*
 * test_session_record.c - a server's record of each session as it ends
 * (eng_serve_opts.session_end, what railcp serve --json prints a line of):
 * a push that went well, with its bytes and times; a push the server
 * refused, with its sentence; a client that could not prove the key, before
 * any job; and each as cli_session_json writes it.
 */
#include "session_harness.h"

#include "cli/report.h"

#define RECORDS_MAX 8

/* What the callback was given, copied: its strings live only for the call. */
static struct kept {
	struct eng_session_record rec;
	char peer[64], job[16], what[256], error[512];
	json_t *json;
} kept[RECORDS_MAX];
static _Atomic unsigned n_taken; /* slots taken */
static _Atomic unsigned n_kept;	 /* records whole: what the test waits for */

static void on_end(const struct eng_session_record *rec, void *ctx)
{
	unsigned i = atomic_fetch_add(&n_taken, 1);
	struct kept *k = &kept[i];

	(void)ctx;
	assert_true(i < RECORDS_MAX);
	k->rec = *rec;
	snprintf(k->peer, sizeof(k->peer), "%s", rec->peer);
	snprintf(k->job, sizeof(k->job), "%s", rec->job ? rec->job : "(null)");
	snprintf(k->what, sizeof(k->what), "%s", rec->what);
	snprintf(k->error, sizeof(k->error), "%s", rec->error ? rec->error : "(null)");
	k->json = cli_session_json(rec);
	atomic_fetch_add(&n_kept, 1); /* after the copy: the test reads it once this counts */
}

static int records_reset(void **state)
{
	memset(kept, 0, sizeof(kept));
	atomic_store(&n_taken, 0);
	atomic_store(&n_kept, 0);
	return fx_setup(state);
}

/* After the server stopped: no session adds a record any more. */
static int records_free(void **state)
{
	int r = fx_teardown(state);
	unsigned i;

	for (i = 0; i < RECORDS_MAX; i++)
		json_decref(kept[i].json);
	return r;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void test_a_push_and_a_refused_push_each_end_with_a_record(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char src[4096], root[4096], top[4096];
	const char *push_src[] = {top};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	double before = wall();

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	tree_make(src);
	t_path(top, src, "top");
	fx->srv.session_end = on_end;
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), 0);
	assert_true(WAIT_FOR(atomic_load(&n_kept) == 1));
	assert_int_equal(kept[0].rec.err, 0);
	assert_int_equal(kept[0].rec.id, 1);
	assert_string_equal(kept[0].peer, "127.0.0.1");
	assert_string_equal(kept[0].job, "push");
	assert_non_null(strstr(kept[0].what, "push of 4 files"));
	assert_int_equal(kept[0].rec.bytes, TREE_BYTES);
	assert_true(kept[0].rec.seconds > 0);
	assert_true(kept[0].rec.start >= before - 1);
	assert_true(kept[0].rec.end >= kept[0].rec.start);
	assert_string_equal(kept[0].error, "(null)");
	assert_string_equal(jstr(kept[0].json, "result"), "ok");
	assert_true(json_is_null(json_object_get(kept[0].json, "error")));
	assert_int_equal(json_integer_value(json_object_get(kept[0].json, "bytes")), TREE_BYTES);
	assert_int_equal(strlen(jstr(kept[0].json, "start")), strlen("2026-11-26T12:58:48.123Z"));
	assert_int_equal(jstr(kept[0].json, "end")[23], 'Z');

	cp = copy_opts(ENG_PUSH, push_src, 1, "../escaped");
	assert_int_equal(copy(&fx->srv, &plan, &cp, NULL, &r), -ECONNABORTED);
	assert_true(WAIT_FOR(atomic_load(&n_kept) == 2));
	assert_int_not_equal(kept[1].rec.err, 0);
	assert_int_equal(kept[1].rec.id, 2);
	assert_non_null(strstr(kept[1].error, "refused the destination"));
	assert_int_equal(kept[1].rec.bytes, 0);
	assert_string_equal(kept[1].job, "push");
	assert_string_equal(kept[1].what, "push"); /* refused before its file list */
	assert_string_equal(jstr(kept[1].json, "result"), "failed");
	assert_non_null(strstr(jstr(kept[1].json, "error"), "refused the destination"));
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_client_without_the_key_ends_with_a_record_and_no_job(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char key[4096], wrong[4096];
	struct topo_plan plan;
	struct eng_report r;

	fx_key(fx, "key", TEST_KEY, key);
	fx_key(fx, "wrong", TEST_KEY_OTHER, wrong);
	fx->srv.session_end = on_end;
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, key);
	assert_int_equal(bench(&fx->srv, &plan, MiB, 64 * KiB, wrong, &r), -ECONNABORTED);
	assert_true(WAIT_FOR(atomic_load(&n_kept) == 1));
	assert_int_not_equal(kept[0].rec.err, 0);
	assert_string_equal(kept[0].job, "(null)");
	assert_true(json_is_null(json_object_get(kept[0].json, "job")));
	assert_string_equal(jstr(kept[0].json, "result"), "failed");
	bench_ok(&fx->srv, key);
	assert_true(WAIT_FOR(atomic_load(&n_kept) == 2));
	assert_string_equal(kept[1].job, "bench");
	assert_int_equal(kept[1].rec.bytes, 256 * KiB); /* bench_ok's */
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_a_push_and_a_refused_push_each_end_with_a_record, records_reset,
			records_free),
		cmocka_unit_test_setup_teardown(
			test_a_client_without_the_key_ends_with_a_record_and_no_job, records_reset,
			records_free),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
