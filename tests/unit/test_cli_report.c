/*
 * test_cli_report.c - the summary and --json of a transfer (cli/report.c)
 * for rails left out at set-up beside rails lost mid-transfer: each is
 * said under its rail, with why, and counted apart in the JSON; a copy
 * that went on over tcp says so in a line and a "fallback" object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHY_OUT "connecting rxe1 (198.18.1.1) to 198.18.1.2 port 4000: no answer within 3 s"
#define WHY_LOST "work completion error 'transport retry counter exceeded' (status 12)"

/* rxe0 carried it all; rxe1 never connected; rxe2 lost one stripe at set-up, one mid-copy. */
static void report_make(struct eng_report *r)
{
	memset(r, 0, sizeof(*r));
	r->n_rails = 3;
	r->rails_left_out = 1;
	r->rails_failed = 1;
	r->failover = true;
	for (unsigned i = 0; i < 3; i++) {
		snprintf(r->rail[i].name, sizeof(r->rail[i].name), "rxe%u:1", i);
		r->rail[i].stripes = 2;
	}
	r->rail[0].bytes = r->bytes = 64 << 20;
	r->rail[1].left_out = true;
	r->rail[1].stripes_left_out = 2;
	snprintf(r->rail[1].left_out_why, sizeof(r->rail[1].left_out_why), "%s", WHY_OUT);
	r->rail[2].stripes_left_out = 1;
	snprintf(r->rail[2].left_out_why, sizeof(r->rail[2].left_out_why), "%s", WHY_OUT);
	r->rail[2].stripes_lost = 1;
	r->rail[2].failed = true;
	r->rail[2].failed_at = 1.5;
	snprintf(r->rail[2].why, sizeof(r->rail[2].why), "%s", WHY_LOST);
}

static void test_the_summary_says_which_rails_were_left_out_at_set_up_and_why(void **state)
{
	struct eng_report r;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	report_make(&r);
	cli_report_print(f, &r, 2.0);
	fclose(f);
	if (!strstr(text, "  rail rxe1:1 ") ||
	    !strstr(text, "    left out at set-up: " WHY_OUT "\n"))
		fail_msg("the summary does not say rxe1:1 was left out:\n%s", text);
	if (!strstr(text, "    1 of its 2 stripes left out at set-up: " WHY_OUT "\n") ||
	    !strstr(text,
		    "    failed after 1.5 s, its chunks sent again on the other rails: " WHY_LOST))
		fail_msg("the summary does not tell rxe2:1's two failures apart:\n%s", text);
	/* No knob given: nothing said of the queue pairs. */
	assert_null(strstr(text, "queue pairs:"));
	/* rxe0:1, which lost nothing, has no note: rxe1:1's line is next. */
	assert_non_null(strstr(text, "  rail rxe0:1 "));
	assert_non_null(strchr(strstr(text, "  rail rxe0:1 "), '\n'));
	assert_int_equal(
		strncmp(strchr(strstr(text, "  rail rxe0:1 "), '\n') + 1, "  rail rxe1:1 ", 14), 0);
	free(text);
}

static void test_the_summary_and_json_say_the_qp_knobs_given(void **state)
{
	json_t *o = json_object();
	struct eng_report r;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	report_make(&r);
	r.qp.ack_timeout = 14;
	r.qp.tos_set = true; /* 0 is a class of its own, said as one */
	cli_report_print(f, &r, 2.0);
	fclose(f);
	if (!strstr(text, "  queue pairs: ACK timeout 4.096 us x 2^14 = 67.1 ms, 7 retries\n"))
		fail_msg("the summary does not say the ACK timeout:\n%s", text);
	if (!strstr(text, "  traffic class (--tos): 0\n"))
		fail_msg("the summary does not say the traffic class:\n%s", text);
	cli_report_json(o, &r, 2.0);
	assert_int_equal(json_integer_value(json_object_get(o, "ack_timeout")), 14);
	assert_int_equal(json_integer_value(json_object_get(o, "retry_count")), 7);
	assert_true(json_is_integer(json_object_get(o, "tos")));
	assert_int_equal(json_integer_value(json_object_get(o, "tos")), 0);
	json_decref(o);
	o = json_object();
	r.qp = (struct eng_qp_knobs){0};
	cli_report_json(o, &r, 2.0);
	assert_true(json_is_null(json_object_get(o, "ack_timeout")));
	assert_true(json_is_null(json_object_get(o, "tos")));
	json_decref(o);
	free(text);
}

/* The connect timeout in whole seconds as such (not 3.6e+03 s), a part of one as a part. */
static void test_the_summary_says_the_connect_timeout_in_seconds(void **state)
{
	static const struct {
		int ms;
		const char *line;
	} cases[] = {
		{3600 * 1000, "  each stripe connects within 3600 s (--connect-timeout, at most "
			      "--timeout)\n"},
		{400,
		 "  each stripe connects within 0.4 s (--connect-timeout, at most --timeout)\n"},
	};
	struct eng_report r;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		assert_non_null(f);
		report_make(&r);
		r.connect_timeout_ms = cases[i].ms;
		cli_report_print(f, &r, 2.0);
		fclose(f);
		if (!strstr(text, cases[i].line))
			fail_msg("the summary of a connect timeout of %d ms:\n%s", cases[i].ms,
				 text);
		free(text);
	}
}

static void test_the_json_counts_rails_left_out_apart_from_rails_lost(void **state)
{
	json_t *o = json_object(), *rails, *x;
	struct eng_report r;

	(void)state;
	report_make(&r);
	cli_report_json(o, &r, 2.0);
	assert_int_equal(json_integer_value(json_object_get(o, "rails_left_out")), 1);
	assert_int_equal(json_integer_value(json_object_get(o, "rails_failed")), 1);
	rails = json_object_get(o, "rails");
	assert_int_equal(json_array_size(rails), 3);
	x = json_array_get(rails, 0);
	assert_true(json_is_false(json_object_get(x, "left_out")));
	assert_int_equal(json_integer_value(json_object_get(x, "stripes_left_out")), 0);
	assert_null(json_object_get(x, "left_out_error"));
	x = json_array_get(rails, 1);
	assert_true(json_is_true(json_object_get(x, "left_out")));
	assert_true(json_is_false(json_object_get(x, "failed")));
	assert_int_equal(json_integer_value(json_object_get(x, "stripes_left_out")), 2);
	assert_string_equal(json_string_value(json_object_get(x, "left_out_error")), WHY_OUT);
	x = json_array_get(rails, 2);
	assert_true(json_is_false(json_object_get(x, "left_out")));
	assert_true(json_is_true(json_object_get(x, "failed")));
	assert_int_equal(json_integer_value(json_object_get(x, "stripes_left_out")), 1);
	assert_int_equal(json_integer_value(json_object_get(x, "stripes_failed")), 1);
	assert_string_equal(json_string_value(json_object_get(x, "error")), WHY_LOST);
	json_decref(o);
}

/* What cli_fallback_print says of r (to be freed). */
static char *fallback_said(const struct eng_report *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	cli_fallback_print(f, r);
	fclose(f);
	return text;
}

/* Every RDMA rail failed, the copy went on over tcp: one line, and "fallback" in the JSON. */
static void test_a_copy_that_went_on_over_tcp_says_so(void **state)
{
	json_t *o = json_object(), *fb;
	struct eng_report r;
	char *text;

	(void)state;
	report_make(&r);
	text = fallback_said(&r); /* no fallback: nothing */
	assert_string_equal(text, "");
	free(text);
	cli_fallback_json(o, &r);
	assert_null(json_object_get(o, "fallback"));
	r.fell_back = true;
	snprintf(r.transport, sizeof(r.transport), "tcp");
	snprintf(r.fallback_from, sizeof(r.fallback_from), "rdma");
	snprintf(r.fallback_why, sizeof(r.fallback_why), "every rail failed (rxe0:1: %s)",
		 WHY_LOST);
	r.fallback_bytes = 40 << 20;
	r.bytes_kept = 40 << 20;
	text = fallback_said(&r);
	if (strcmp(text,
		   "railcp: every rdma rail failed after 40.0 MiB (every rail failed "
		   "(rxe0:1: " WHY_LOST
		   ")): the copy went on over tcp; 40.0 MiB kept were confirmed by the sender (a "
		   "keyed digest of each chunk) and not sent again\n"))
		fail_msg("the summary's line: %s", text);
	cli_fallback_json(o, &r);
	fb = json_object_get(o, "fallback");
	assert_string_equal(json_string_value(json_object_get(fb, "from")), "rdma");
	assert_int_equal(json_integer_value(json_object_get(fb, "bytes")), 40 << 20);
	assert_string_equal(json_string_value(json_object_get(fb, "error")), r.fallback_why);
	assert_false(json_is_true(json_object_get(fb, "setup")));
	json_decref(o);
	free(text);
}

/* No RDMA rail connected at set-up: a line of its own, not "failed after 0 B". */
static void test_a_copy_that_went_over_tcp_from_the_start_says_so(void **state)
{
	json_t *o = json_object();
	struct eng_report r;
	char *text;

	(void)state;
	report_make(&r);
	r.fell_back = r.fallback_setup = true;
	snprintf(r.transport, sizeof(r.transport), "tcp");
	snprintf(r.fallback_from, sizeof(r.fallback_from), "rdma");
	snprintf(r.fallback_why, sizeof(r.fallback_why), "no rail connected to the server");
	text = fallback_said(&r);
	if (strcmp(text, "railcp: no rdma rail connected (no rail connected to the server): the "
			 "copy went over tcp\n"))
		fail_msg("the summary's line: %s", text);
	cli_fallback_json(o, &r);
	assert_true(json_is_true(json_object_get(json_object_get(o, "fallback"), "setup")));
	json_decref(o);
	free(text);
}

/* A refused session's sentence that is not UTF-8 still fills its queue line's "error". */
static void test_a_queue_line_keeps_a_sentence_that_is_not_utf8(void **state)
{
	struct eng_queue_event ev = {.kind = ENG_QUEUE_REFUSED,
				     .id = 7,
				     .peer = "198.18.0.1",
				     .place = 2,
				     .of = 3,
				     .waited_ms = 40,
				     .reason = "no room for /data/\xfe"};
	json_t *o = cli_queue_json(&ev);

	(void)state;
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "event")), "refused");
	assert_string_equal(json_string_value(json_object_get(o, "error")),
			    "no room for /data/\\xfe");
	json_decref(o);
	ev.kind = ENG_QUEUE_ADMITTED;
	ev.reason = NULL;
	o = cli_queue_json(&ev);
	assert_true(json_is_null(json_object_get(o, "error")));
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_summary_says_which_rails_were_left_out_at_set_up_and_why),
		cmocka_unit_test(test_the_json_counts_rails_left_out_apart_from_rails_lost),
		cmocka_unit_test(test_the_summary_and_json_say_the_qp_knobs_given),
		cmocka_unit_test(test_the_summary_says_the_connect_timeout_in_seconds),
		cmocka_unit_test(test_a_queue_line_keeps_a_sentence_that_is_not_utf8),
		cmocka_unit_test(test_a_copy_that_went_on_over_tcp_says_so),
		cmocka_unit_test(test_a_copy_that_went_over_tcp_from_the_start_says_so),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
