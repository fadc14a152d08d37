/*
 * test_cli_copy.c - a copy's command line as cli_cmd_copy would run it:
 * every file is synced to the disk unless --no-fsync says otherwise,
 * --fsync is still accepted, and the two together are a usage error;
 * --stall sets the data phase's stall limit (default: the engine's own)
 * and takes 1 to 3600 seconds only; a host that begins with '-' is refused
 * before anything starts, as ssh would read it as an option.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cli_copy_parse of "railcp <opt...> src h:dst" (opt NULL-terminated). */
static int copy_parse(const char *const *opt, struct cli_copy **cc_out)
{
	char args[16][64], *argv[16];
	int argc = 0, i;

	snprintf(args[argc++], sizeof(args[0]), "railcp");
	for (i = 0; opt[i]; i++) {
		assert_true(argc < 14 && strlen(opt[i]) < sizeof(args[0]));
		snprintf(args[argc++], sizeof(args[0]), "%s", opt[i]);
	}
	snprintf(args[argc++], sizeof(args[0]), "src");
	snprintf(args[argc++], sizeof(args[0]), "h:dst");
	for (i = 0; i < argc; i++)
		argv[i] = args[i];
	*cc_out = NULL;
	return cli_copy_parse(argc, argv, cc_out);
}

static void test_a_copy_syncs_every_file_by_default(void **state)
{
	struct cli_copy *cc;

	(void)state;
	assert_int_equal(copy_parse((const char *[]){"-r", NULL}, &cc), 0);
	assert_true(cli_copy_opts(cc)->fsync);
	assert_int_equal(cli_copy_opts(cc)->dir, ENG_PUSH);
	cli_copy_destroy(cc);
}

static void test_no_fsync_turns_syncing_off(void **state)
{
	struct cli_copy *cc;

	(void)state;
	assert_int_equal(copy_parse((const char *[]){"--no-fsync", NULL}, &cc), 0);
	assert_false(cli_copy_opts(cc)->fsync);
	cli_copy_destroy(cc);
}

static void test_fsync_is_still_accepted(void **state)
{
	struct cli_copy *cc;

	(void)state;
	assert_int_equal(copy_parse((const char *[]){"--fsync", NULL}, &cc), 0);
	assert_true(cli_copy_opts(cc)->fsync);
	cli_copy_destroy(cc);
}

static void test_fsync_and_no_fsync_together_are_a_usage_error(void **state)
{
	struct cli_copy *cc;

	(void)state;
	assert_int_equal(copy_parse((const char *[]){"--fsync", "--no-fsync", NULL}, &cc),
			 CLI_EXIT_USAGE);
	assert_null(cc);
	assert_int_equal(copy_parse((const char *[]){"--no-fsync", "--fsync", NULL}, &cc),
			 CLI_EXIT_USAGE);
	assert_null(cc);
}

static void test_stall_sets_the_data_phases_limit_in_seconds(void **state)
{
	static const char *const bad[] = {"0", "3601", "-1", "x", "1.5", ""};
	struct cli_copy *cc;
	size_t i;

	(void)state;
	assert_int_equal(copy_parse((const char *[]){NULL}, &cc), 0);
	assert_int_equal(cli_copy_opts(cc)->stall_ms, 0);
	cli_copy_destroy(cc);
	assert_int_equal(copy_parse((const char *[]){"--stall", "15", NULL}, &cc), 0);
	assert_int_equal(cli_copy_opts(cc)->stall_ms, 15000);
	cli_copy_destroy(cc);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(copy_parse((const char *[]){"--stall", bad[i], NULL}, &cc),
				 CLI_EXIT_USAGE);
		assert_null(cc);
	}
}

static void test_connect_timeout_and_the_qp_knobs_are_parsed_within_their_bounds(void **state)
{
	static const char *const bad_ack[] = {"0", "32", "-1", "x", ""};
	static const char *const bad_retry[] = {"0", "8", "1.5"};
	struct cli_copy *cc;
	size_t i;

	(void)state;
	assert_int_equal(copy_parse((const char *[]){NULL}, &cc), 0);
	assert_int_equal(cli_copy_opts(cc)->connect_timeout_ms, 0);
	assert_int_equal(cli_copy_opts(cc)->qp.ack_timeout, 0);
	assert_int_equal(cli_copy_opts(cc)->qp.retry_count, 0);
	cli_copy_destroy(cc);
	assert_int_equal(copy_parse((const char *[]){"--connect-timeout", "3", "--ack-timeout",
						     "14", "--retry-count", "2", NULL},
				    &cc),
			 0);
	assert_int_equal(cli_copy_opts(cc)->connect_timeout_ms, 3000);
	assert_int_equal(cli_copy_opts(cc)->qp.ack_timeout, 14);
	assert_int_equal(cli_copy_opts(cc)->qp.retry_count, 2);
	cli_copy_destroy(cc);
	for (i = 0; i < sizeof(bad_ack) / sizeof(bad_ack[0]); i++) {
		assert_int_equal(
			copy_parse((const char *[]){"--ack-timeout", bad_ack[i], NULL}, &cc),
			CLI_EXIT_USAGE);
		assert_null(cc);
	}
	for (i = 0; i < sizeof(bad_retry) / sizeof(bad_retry[0]); i++) {
		assert_int_equal(
			copy_parse((const char *[]){"--retry-count", bad_retry[i], NULL}, &cc),
			CLI_EXIT_USAGE);
		assert_null(cc);
	}
	assert_int_equal(copy_parse((const char *[]){"--connect-timeout", "0", NULL}, &cc),
			 CLI_EXIT_USAGE);
	assert_null(cc);
}

/* --tos: none by default; 0 to 255, 0 included (a class, not "none"); nothing else. */
static void test_tos_is_a_traffic_class_from_0_to_255(void **state)
{
	static const char *const bad[] = {"256", "-1", "+3", "x", "", "1.5", "0x28"};
	static const char *const good[] = {"0", "106", "255"};
	static const unsigned value[] = {0, 106, 255};
	struct cli_copy *cc;
	size_t i;

	(void)state;
	assert_int_equal(copy_parse((const char *[]){NULL}, &cc), 0);
	assert_false(cli_copy_opts(cc)->qp.tos_set);
	cli_copy_destroy(cc);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(copy_parse((const char *[]){"--tos", good[i], NULL}, &cc), 0);
		assert_true(cli_copy_opts(cc)->qp.tos_set);
		assert_int_equal(cli_copy_opts(cc)->qp.tos, value[i]);
		cli_copy_destroy(cc);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(copy_parse((const char *[]){"--tos", bad[i], NULL}, &cc),
				 CLI_EXIT_USAGE);
		assert_null(cc);
		if (!strstr(cli_last_error(), "--tos needs a traffic class from 0 to 255"))
			fail_msg("--tos %s was told: %s", bad[i], cli_last_error());
	}
}

/* cli_copy_parse of "railcp -- <arg...>" (arg NULL-terminated). */
static int copy_parse_args(const char *const *arg, struct cli_copy **cc_out)
{
	char args[8][64], *argv[8];
	int argc = 0, i;

	snprintf(args[argc++], sizeof(args[0]), "railcp");
	snprintf(args[argc++], sizeof(args[0]), "--"); /* so that "-o..." is no option of ours */
	for (i = 0; arg[i]; i++) {
		assert_true(argc < 8 && strlen(arg[i]) < sizeof(args[0]));
		snprintf(args[argc++], sizeof(args[0]), "%s", arg[i]);
	}
	for (i = 0; i < argc; i++)
		argv[i] = args[i];
	*cc_out = NULL;
	return cli_copy_parse(argc, argv, cc_out);
}

static void test_a_host_that_begins_with_a_dash_is_refused(void **state)
{
	static const struct {
		const char *src, *dst, *words;
	} bad[] = {
		{"src", "-oProxyCommand=touch x:dst", "the host '-oProxyCommand=touch x' begins"},
		{"-oProxyCommand=touch x:f", "dst", "the host '-oProxyCommand=touch x' begins"},
		{"ann@-oProxyCommand=x:f", "dst", "the host '-oProxyCommand=x' begins with '-'"},
		{"src", "[-oProxyCommand=x]:dst", "the host '-oProxyCommand=x' begins with '-'"},
	};
	struct cli_copy *cc;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rcp_err_clear();
		assert_int_equal(
			copy_parse_args((const char *[]){bad[i].src, bad[i].dst, NULL}, &cc),
			CLI_EXIT_USAGE);
		assert_null(cc);
		if (!strstr(cli_last_error(), bad[i].words))
			fail_msg("'%s' '%s': \"%s\"", bad[i].src, bad[i].dst, cli_last_error());
	}
	/* a host with a dash elsewhere is a host, and ./ makes a local name of anything */
	assert_int_equal(copy_parse_args((const char *[]){"src", "b-1:dst", NULL}, &cc), 0);
	cli_copy_destroy(cc);
	assert_int_equal(copy_parse_args((const char *[]){"./-o:x", "b:dst", NULL}, &cc), 0);
	cli_copy_destroy(cc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_copy_syncs_every_file_by_default),
		cmocka_unit_test(test_no_fsync_turns_syncing_off),
		cmocka_unit_test(test_fsync_is_still_accepted),
		cmocka_unit_test(test_fsync_and_no_fsync_together_are_a_usage_error),
		cmocka_unit_test(test_stall_sets_the_data_phases_limit_in_seconds),
		cmocka_unit_test(
			test_connect_timeout_and_the_qp_knobs_are_parsed_within_their_bounds),
		cmocka_unit_test(test_a_host_that_begins_with_a_dash_is_refused),
		cmocka_unit_test(test_tos_is_a_traffic_class_from_0_to_255),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
