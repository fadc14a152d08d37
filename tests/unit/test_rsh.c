/*
 * test_rsh.c - copies over ssh (cli/rsh.h): the far side's greeting is
 * read strictly, and remote paths map to names beneath its root '/' as scp
 * reads them (relative to the home, or absolute).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/rsh.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_a_greeting_gives_address_port_key_and_home(void **state)
{
	struct cli_rsh r = {0};

	(void)state;
	assert_int_equal(
		cli_rsh_greeting_parse(&r, "railcp-ssh 1 198.19.0.2 40123 " KEY " /home/a user"),
		0);
	assert_string_equal(r.addr, "198.19.0.2");
	assert_int_equal(r.port, 40123);
	assert_string_equal(r.key, KEY);
	assert_string_equal(r.home, "/home/a user"); /* the rest of the line, spaces and all */
}

static void test_anything_else_is_not_a_greeting(void **state)
{
	static const char *const bad[] = {
		"",
		"hello",
		"railcp-ssh 2 1.2.3.4 40123 " KEY " /root",  /* another version */
		"railcp-ssh 1 1.2.3.4 0 " KEY " /root",	     /* no port */
		"railcp-ssh 1 1.2.3.4 65536 " KEY " /root",  /* no port */
		"railcp-ssh 1 1.2.3.4 40123 0123 /root",     /* a short key */
		"railcp-ssh 1 1.2.3.4 40123 " KEY "f /root", /* a long key */
		"railcp-ssh 1 1.2.3.4 40123 " KEY " home",   /* a home that is not absolute */
		"railcp-ssh 1 1.2.3.4 40123 " KEY,	     /* no home */
		"Welcome to host b! railcp-ssh 1 1.2.3.4 1 " KEY " /", /* a banner */
	};
	struct cli_rsh r = {0};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (cli_rsh_greeting_parse(&r, bad[i]) != -EPROTO)
			fail_msg("taken for a greeting: '%s'", bad[i]);
	assert_int_equal(r.port, 0); /* nothing written on a refusal */
}

static void path_is(const struct cli_rsh *r, const char *path, const char *want)
{
	char *got = NULL;

	assert_int_equal(cli_rsh_path(r, path, &got), 0);
	if (strcmp(got, want) != 0)
		fail_msg("'%s' with home '%s' maps to '%s', not '%s'", path, r->home, got, want);
	free(got);
}

static void test_remote_paths_are_read_as_scp_reads_them(void **state)
{
	struct cli_rsh r = {0};

	(void)state;
	strcpy(r.home, "/home/ann");
	path_is(&r, "", "home/ann");		  /* HOST: is the home */
	path_is(&r, ".", "home/ann/.");		  /* its contents (a pull of HOST:) */
	path_is(&r, "data/x", "home/ann/data/x"); /* relative to the home */
	path_is(&r, "data/.", "home/ann/data/."); /* contents stay contents */
	path_is(&r, "/srv/data", "srv/data");	  /* absolute */
	path_is(&r, "//srv//data", "srv//data");  /* leading slashes, however many */
	path_is(&r, "/", "");			  /* the root itself */
	strcpy(r.home, "/");
	path_is(&r, "", "");
	path_is(&r, "x", "x");
}

static void test_the_user_is_for_ssh_alone(void **state)
{
	(void)state;
	assert_string_equal(cli_rsh_hostname("ann@b"), "b");
	assert_string_equal(cli_rsh_hostname("b"), "b");
	assert_string_equal(cli_rsh_hostname("a@b@c"), "c");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_greeting_gives_address_port_key_and_home),
		cmocka_unit_test(test_anything_else_is_not_a_greeting),
		cmocka_unit_test(test_remote_paths_are_read_as_scp_reads_them),
		cmocka_unit_test(test_the_user_is_for_ssh_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
