/*
 * test_cli_addr.c - hosts as the command line names them (cli/addr.h):
 * a copy's [USER@]HOST:PATH and [USER@][ADDR]:PATH as scp reads them,
 * local paths left local, and every host that cannot be one (empty, a
 * leading '-', brackets that do not close, bytes no host has) refused in
 * one sentence; bench's and doctor's HOST[:PORT] with IPv6 addresses,
 * bracketed or bare; railcp-mpi's HOSTS with [ADDR] and [ADDR]:PORT.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/addr.h"
#include "cli/cli.h"
#include "cli/mpi.h"
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

static void remote_is(const char *arg, const char *login, const char *host, const char *path)
{
	struct cli_remote r;

	if (cli_remote_parse(arg, &r) != 1)
		fail_msg("'%s' is not remote: %s", arg, cli_last_error());
	assert_string_equal(r.login, login);
	assert_string_equal(r.host, host);
	assert_string_equal(r.path, path);
}

static void test_remote_arguments_as_scp_reads_them(void **state)
{
	(void)state;
	remote_is("h:p", "h", "h", "p");
	remote_is("h:", "h", "h", "");
	remote_is("ann@h:/abs/p", "ann@h", "h", "/abs/p");
	remote_is("a@b@h:p", "a@b@h", "h", "p"); /* ssh splits at the last '@' too */
	remote_is("10.0.0.2:d/e", "10.0.0.2", "10.0.0.2", "d/e");
	remote_is("[::1]:p", "::1", "::1", "p");
	remote_is("[::1]:", "::1", "::1", "");
	remote_is("ann@[fd00::2]:dir/f", "ann@fd00::2", "fd00::2", "dir/f");
	remote_is("[fe80::1%eth0]:p", "fe80::1%eth0", "fe80::1%eth0", "p");
	remote_is("[2001:db8::7]:a:b", "2001:db8::7", "2001:db8::7", "a:b");
	remote_is("h:a[1]:b", "h", "h", "a[1]:b"); /* brackets in the path are the path's */
}

static void test_local_arguments_stay_local(void **state)
{
	static const char *const local[] = {
		"file", "./a:b",   "dir/x:y", "/abs:p",	       "[2024]", "[a]/b",   "",
		"a@b",	"[::1]/x", "[a/b]:p", "ann@[::1]/x:y", "::1",	 "fd00::2", "fe80::1%eth0"};
	struct cli_remote r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		if (cli_remote_parse(local[i], &r) != 0)
			fail_msg("'%s' is taken for remote: %s", local[i], cli_last_error());
}

static void refused(const char *arg, const char *words)
{
	struct cli_remote r;

	if (cli_remote_parse(arg, &r) != CLI_EXIT_USAGE)
		fail_msg("'%s' is not refused", arg);
	if (!strstr(cli_last_error(), words))
		fail_msg("'%s': \"%s\" does not say \"%s\"", arg, cli_last_error(), words);
	assert_null(strchr(cli_last_error(), '\n'));
}

static void test_hosts_that_cannot_be_are_refused_in_one_sentence(void **state)
{
	char long_host[400];

	(void)state;
	refused(":p", "names no host before its ':'");
	refused("ann@:p", "names no host before its ':'");
	refused("[]:p", "names no host");
	refused("ann@[]:p", "names no host");
	refused("@h:p", "names no user before its '@'");
	refused("-oProxyCommand=x:p", "the host '-oProxyCommand=x' begins with '-'");
	refused("ann@-oProxyCommand=x:p", "the host '-oProxyCommand=x' begins with '-'");
	refused("[-oProxyCommand=x]:p", "the host '-oProxyCommand=x' begins with '-'");
	refused("ann@[-x]:p", "the host '-x' begins with '-'");
	refused("-l@h:p", "the user '-l' begins with '-'");
	refused("[::1:p", "no ']:' closes");
	refused("ann@[::1]p:x", "no ']:' closes");
	refused("[::1]", "no ']:' closes"); /* no ':' after it, but one inside */
	refused("a[b:p", "cannot be one");
	refused("a]b:p", "cannot be one");
	refused("[ann@::1]:p", "cannot be one"); /* the user goes before the '[' */
	refused("h h:p", "cannot be one");
	refused("h\tx:p", "cannot be one");
	refused("h\x1b[2J:p", "cannot be one");
	refused("a\x7f:p", "cannot be one");
	refused("an n@h:p", "the user in");
	memset(long_host, 'h', sizeof(long_host) - 3);
	memcpy(long_host + sizeof(long_host) - 3, ":p", 3);
	refused(long_host, "longer than 255 bytes");
}

static void test_a_login_that_does_not_fit_is_refused(void **state)
{
	char arg[300];
	struct cli_remote r;

	(void)state;
	memset(arg, 'u', 200);
	arg[200] = '@';
	memset(arg + 201, 'h', 90); /* each fits, not both */
	memcpy(arg + 291, ":p", 3);
	assert_int_equal(cli_remote_parse(arg, &r), CLI_EXIT_USAGE);
	assert_non_null(strstr(cli_last_error(), "user and host"));
}

static void host_port_is(const char *arg, const char *host, uint16_t port)
{
	char h[256];
	uint16_t p = 0;

	if (cli_host_port_parse("bench", arg, h, sizeof(h), &p))
		fail_msg("'%s' refused: %s", arg, cli_last_error());
	assert_string_equal(h, host);
	assert_int_equal(p, port);
}

static void test_host_and_port_with_ipv6(void **state)
{
	static const char *const bad[] = {
		"",   ":7000", "[]:7000", "[::1", "[::1]x", "[::1]:",  "[::1]:0", "h:70000",
		"-h", "-h:1",  "h:x",	  "a@h",  "h h",    "[a]b]:1", "h:1:",	  "a:b:c"};
	char h[256];
	uint16_t p = 42;
	size_t i;

	(void)state;
	host_port_is("h", "h", 0);
	host_port_is("h:7001", "h", 7001);
	host_port_is("10.0.0.2:9", "10.0.0.2", 9);
	host_port_is("[::1]:7001", "::1", 7001);
	host_port_is("[::1]", "::1", 0);
	host_port_is("::1", "::1", 0); /* bare: all of it is the address */
	host_port_is("fd00::2:7001", "fd00::2:7001", 0);
	host_port_is("[fe80::1%eth0]:7", "fe80::1%eth0", 7);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (cli_host_port_parse("bench", bad[i], h, sizeof(h), &p) != CLI_EXIT_USAGE)
			fail_msg("'%s' is taken: host '%s'", bad[i], h);
		assert_int_equal(p, 42); /* nothing written */
	}
	assert_int_equal(cli_host_port_parse("bench", "abcdef", h, 4, &p), CLI_EXIT_USAGE);
}

static void test_mpi_hosts_take_bracketed_addresses(void **state)
{
	static const char *const bad[] = {"[::1:x", "[::1]x,b:y", "[]:x", "-h:x",
					  "a,-b:x", "a[1],b:x",	  "[::1]"};
	struct cli_mpi_server *s = NULL;
	const char *dst = NULL;
	size_t n = 0, i;

	(void)state;
	assert_int_equal(cli_mpi_servers("[::1]:7001,[fd00::2],h:3:d/e", &s, &n, &dst), 0);
	assert_int_equal(n, 3);
	assert_string_equal(s[0].host, "::1");
	assert_int_equal(s[0].port, 7001);
	assert_string_equal(s[1].host, "fd00::2");
	assert_int_equal(s[1].port, 0);
	assert_string_equal(s[2].host, "h");
	assert_int_equal(s[2].port, 3);
	assert_string_equal(dst, "d/e");
	free(s);
	s = NULL;
	assert_int_equal(cli_mpi_servers("[::1]:x", &s, &n, &dst), 0);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].host, "::1");
	assert_string_equal(dst, "x");
	free(s);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = NULL;
		if (cli_mpi_servers(bad[i], &s, &n, &dst) != CLI_EXIT_USAGE)
			fail_msg("'%s' is taken", bad[i]);
		assert_null(s);
	}
}

static void test_a_host_is_shown_as_a_copy_names_it(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(cli_host_shown("h", buf, sizeof(buf)), "h");
	assert_string_equal(cli_host_shown("::1", buf, sizeof(buf)), "[::1]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remote_arguments_as_scp_reads_them),
		cmocka_unit_test(test_local_arguments_stay_local),
		cmocka_unit_test(test_hosts_that_cannot_be_are_refused_in_one_sentence),
		cmocka_unit_test(test_a_login_that_does_not_fit_is_refused),
		cmocka_unit_test(test_host_and_port_with_ipv6),
		cmocka_unit_test(test_mpi_hosts_take_bracketed_addresses),
		cmocka_unit_test(test_a_host_is_shown_as_a_copy_names_it),
	};

	cli_set_prog("railcp");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
