/*
 * test_cli_series_sweep.c - the --json time series when memory runs out:
 * each allocation of a run that grows its arrays three times fails in turn.
 * The sample is lost, the error stays (the end and the JSON report it, no
 * "series" is set), and nothing leaks (ASan). Then the run that fails none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/report.h"

#include "alloc_fail.h"

#include <string.h>

#define MS 1000000ull

/* 100 s of progress every 20 ms: 400 samples wanted, 200 kept; -ENOMEM or 0. */
static int run(struct cli_series *s)
{
	struct eng_report r = {.n_rails = 2};
	uint64_t ms;
	int err = 0, e;

	snprintf(r.rail[0].name, sizeof(r.rail[0].name), "rxe0:1");
	snprintf(r.rail[1].name, sizeof(r.rail[1].name), "rxe1:1");
	cli_series_init(s, 0, 200);
	for (ms = 20; ms <= 100000; ms += 20) {
		r.rail[0].bytes = r.rail[1].bytes = ms;
		if ((e = cli_series_add(s, ms * MS, &r)) != 0 && !err)
			err = e;
	}
	e = cli_series_end(s, 100010 * MS, &r);
	assert_int_equal(e, err); /* the first failure stays */
	return e;
}

static void test_each_failed_allocation_loses_the_series_not_memory(void **state)
{
	struct cli_series s;
	json_t *o;
	unsigned n;
	int err;

	(void)state;
	for (n = 1;; n++) {
		alloc_fail_arm(n);
		err = run(&s);
		alloc_fail_arm(0);
		o = json_object();
		assert_int_equal(cli_series_json(o, &s), err);
		assert_true(err ? json_object_get(o, "series") == NULL
				: json_object_get(o, "series") != NULL);
		json_decref(o);
		cli_series_fini(&s);
		if (!err)
			break;
		assert_int_equal(err, -ENOMEM);
	}
	/* t and bytes at 64, 128 and 200 samples */
	assert_int_equal(n, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_failed_allocation_loses_the_series_not_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
