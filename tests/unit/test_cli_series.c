/*
 * test_cli_series.c - the --json time series (cli/series.c), fed reports as
 * the engine's progress callback would (every 20 ms, bytes growing) with a
 * clock the test owns: gaps of at least an interval, the final sample always
 * there, each rail's bytes never falling, the cap thinning the samples, and
 * the JSON shape tools/plot reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/report.h"

#include "common/common.h"

#include <string.h>

#define MS 1000000ull
#define T0 (1000 * MS) /* the monotonic clock does not start at 0 */

/* Two rails; rail 1 carries half what rail 0 does, as an uneven pair might. */
static void report_at(struct eng_report *r, uint64_t ms)
{
	memset(r, 0, sizeof(*r));
	r->n_rails = 2;
	snprintf(r->rail[0].name, sizeof(r->rail[0].name), "rxe0:1");
	snprintf(r->rail[1].name, sizeof(r->rail[1].name), "rxe1:1");
	r->rail[0].bytes = ms * 1000;
	r->rail[1].bytes = ms * 500;
	r->bytes = r->rail[0].bytes + r->rail[1].bytes;
}

/* Progress every 20 ms from 300 ms (after connecting) to end_ms, then the end. */
static void run(struct cli_series *s, size_t max, uint64_t end_ms, uint64_t final_ms)
{
	struct eng_report r;
	uint64_t ms;

	cli_series_init(s, T0, max);
	for (ms = 300; ms <= end_ms; ms += 20) {
		report_at(&r, ms);
		assert_int_equal(cli_series_add(s, T0 + ms * MS, &r), 0);
	}
	report_at(&r, final_ms);
	assert_int_equal(cli_series_end(s, T0 + final_ms * MS, &r), 0);
}

static void assert_well_formed(const struct cli_series *s)
{
	size_t k;

	assert_true(s->n >= 2);
	assert_true(s->n <= s->max);
	assert_int_equal(s->t_ns[0], 0);
	assert_int_equal(s->bytes[0], 0);
	assert_int_equal(s->bytes[1], 0);
	for (k = 1; k < s->n; k++) {
		assert_true(s->t_ns[k] >= s->t_ns[k - 1] + s->interval_ns);
		assert_true(s->bytes[k * 2] >= s->bytes[(k - 1) * 2]);
		assert_true(s->bytes[k * 2 + 1] >= s->bytes[(k - 1) * 2 + 1]);
	}
}

static void test_samples_are_an_interval_apart_from_a_zero_start(void **state)
{
	struct cli_series s;

	(void)state;
	run(&s, CLI_SERIES_MAX, 3000, 3010);
	assert_int_equal(s.interval_ns, CLI_SERIES_MS * MS);
	assert_int_equal(s.n_rails, 2);
	assert_string_equal(s.rail[0], "rxe0:1");
	assert_string_equal(s.rail[1], "rxe1:1");
	assert_well_formed(&s);
	/* 0, then from 300 ms every 260 (the first 20 ms tick 250 ms on) to 2900, then the end
	 * in place of 2900: 12 in all */
	assert_int_equal(s.n, 12);
	assert_int_equal(s.t_ns[1], 300 * MS);
	cli_series_fini(&s);
}

static void test_final_sample_is_the_end_report(void **state)
{
	struct cli_series s;

	(void)state;
	/* 170 ms after the last sample: it replaces that one, the gaps stay 250 ms */
	run(&s, CLI_SERIES_MAX, 2800, 2810);
	assert_well_formed(&s);
	assert_int_equal(s.t_ns[s.n - 1], 2810 * MS);
	assert_int_equal(s.bytes[(s.n - 1) * 2], 2810 * 1000);
	assert_int_equal(s.bytes[(s.n - 1) * 2 + 1], 2810 * 500);
	cli_series_fini(&s);
	/* long after the last sample (300 + 9 x 260 ms: on the 20 ms grid), added after it */
	run(&s, CLI_SERIES_MAX, 2800, 5000);
	assert_well_formed(&s);
	assert_int_equal(s.t_ns[s.n - 2], 2640 * MS);
	assert_int_equal(s.t_ns[s.n - 1], 5000 * MS);
	cli_series_fini(&s);
}

static void test_run_without_progress_has_start_and_end(void **state)
{
	struct cli_series s;
	struct eng_report r;

	(void)state;
	cli_series_init(&s, T0, CLI_SERIES_MAX);
	report_at(&r, 40);
	assert_int_equal(cli_series_end(&s, T0 + 40 * MS, &r), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.t_ns[0], 0);
	assert_int_equal(s.t_ns[1], 40 * MS);
	assert_int_equal(s.bytes[2] + s.bytes[3], r.bytes);
	cli_series_fini(&s);
}

static void test_cap_thins_samples_and_doubles_interval(void **state)
{
	struct cli_series s;

	(void)state;
	/* 60 s would take 240 samples; 16 hold it at 250 ms x 16 = 4 s apart */
	run(&s, 16, 60000, 60005);
	assert_well_formed(&s);
	assert_true(s.n <= 16);
	assert_true(s.n >= 8);
	assert_int_equal(s.interval_ns, 4000 * MS);
	assert_int_equal(s.t_ns[s.n - 1], 60005 * MS);
	assert_int_equal(s.bytes[(s.n - 1) * 2], 60005 * 1000);
	cli_series_fini(&s);
	/* the least cap still keeps the start and the end */
	run(&s, 1, 5000, 5000);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.t_ns[0], 0);
	assert_int_equal(s.t_ns[1], 5000 * MS);
	cli_series_fini(&s);
}

static void test_json_shape_is_what_tools_plot_reads(void **state)
{
	struct cli_series s;
	json_t *o = json_object(), *x, *row = NULL;
	size_t k;

	(void)state;
	run(&s, CLI_SERIES_MAX, 1000, 1100);
	assert_int_equal(cli_series_json(o, &s), 0);
	x = json_object_get(o, "series");
	assert_non_null(x);
	assert_int_equal(json_integer_value(json_object_get(x, "interval_ms")), 250);
	assert_int_equal(json_array_size(json_object_get(x, "rails")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(x, "rails"), 1)),
			    "rxe1:1");
	assert_int_equal(json_array_size(json_object_get(x, "t_ms")), s.n);
	assert_int_equal(json_array_size(json_object_get(x, "bytes")), s.n);
	for (k = 0; k < s.n; k++) {
		assert_int_equal(json_integer_value(json_array_get(json_object_get(x, "t_ms"), k)),
				 s.t_ns[k] / MS);
		row = json_array_get(json_object_get(x, "bytes"), k);
		assert_int_equal(json_array_size(row), 2);
		assert_int_equal(json_integer_value(json_array_get(row, 0)), s.bytes[k * 2]);
	}
	/* the last row sums to the run's bytes, as the summary's "bytes" */
	assert_int_equal(json_integer_value(json_array_get(row, 0)) +
				 json_integer_value(json_array_get(row, 1)),
			 1100 * 1500);
	json_decref(o);
	cli_series_fini(&s);
}

/* A run that fails: its --json error keeps the figures of the last progress report. */
static void test_failure_keeps_what_was_measured(void **state)
{
	struct cli_series s;
	struct eng_report r;
	json_t *o;

	(void)state;
	cli_series_init(&s, rcp_now_ns(), CLI_SERIES_MAX);
	o = cli_series_failure(&s); /* failed before any progress: nothing measured */
	assert_non_null(o);
	assert_null(json_object_get(o, "bytes"));
	assert_null(json_object_get(o, "series"));
	json_decref(o);
	report_at(&r, 300);
	cli_series_progress(&r, &s);
	report_at(&r, 700);
	r.seconds = 0.7;
	cli_series_progress(&r, &s);
	o = cli_series_failure(&s);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "bytes")), 700 * 1500);
	assert_int_equal(json_array_size(json_object_get(o, "rails")), 2);
	assert_non_null(json_object_get(json_object_get(o, "series"), "t_ms"));
	json_decref(o);
	cli_series_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples_are_an_interval_apart_from_a_zero_start),
		cmocka_unit_test(test_final_sample_is_the_end_report),
		cmocka_unit_test(test_run_without_progress_has_start_and_end),
		cmocka_unit_test(test_cap_thins_samples_and_doubles_interval),
		cmocka_unit_test(test_json_shape_is_what_tools_plot_reads),
		cmocka_unit_test(test_failure_keeps_what_was_measured),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
