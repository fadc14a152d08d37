/*
 * test_rsh.c - copies over ssh (cli/rsh.h): the far side's greeting is
 * read strictly, and remote paths map to names beneath its root '/' as scp
 * reads them (relative to the home, or absolute). What the far side says
 * reaches the terminal escaped (scp's CVE-2019-6109), and no host becomes
 * one of ssh's options: "--" comes before it, and one that begins with '-'
 * is refused before anything starts. The far side gets the session options
 * the copy was given and its transport. A remote shell here is printf or a
 * script, never ssh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/rsh.h"
#include "cli/session.h"
#include "common/common.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A copy's session options with nothing given but --timeout 10. */
static const struct cli_session plain = {.timeout_ms = 10000};

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
	path_is(&r, "", "home/ann/");		  /* HOST: is the home, as a source its contents */
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

/* Fail unless text is printable ASCII alone (and newlines, when lines is true). */
static void assert_printable(const char *text, bool lines)
{
	const unsigned char *c;

	for (c = (const unsigned char *)text; *c; c++)
		if ((*c < 0x20 && !(lines && *c == '\n')) || *c >= 0x7f)
			fail_msg("byte 0x%02x at %zu of \"%s\"", *c,
				 (size_t)(c - (const unsigned char *)text), text);
}

static void test_a_greeting_that_is_not_one_is_quoted_escaped(void **state)
{
	struct cli_rsh r;
	const char *msg;

	(void)state;
	/* sets the title, clears the screen, and an 8-bit CSI (0x9b) */
	assert_int_equal(cli_rsh_start(&r, "printf 'hi \\033]0;pwned\\007 \\033[2J \\2332J\\n' #",
				       "h", "railcp", &plain, NULL),
			 -EPROTO);
	msg = rcp_err_msg(-EPROTO);
	assert_printable(msg, false);
	if (!strstr(msg, "(it said 'hi \\x1b]0;pwned\\x07 \\x1b[2J \\x9b2J')"))
		fail_msg("\"%s\"", msg);
	cli_rsh_finish(&r, 1000);
}

static void test_the_last_error_line_is_quoted_escaped(void **state)
{
	struct cli_rsh r;
	const char *msg;

	(void)state;
	/* on stderr, after another line: the title, a clear screen, an 8-bit CSI (0x9b) */
	assert_int_equal(cli_rsh_start(&r,
				       "printf 'first\\nhi \\033]0;pwned\\007 \\033[2J "
				       "\\2332J\\n' >&2 #",
				       "h", "railcp", &plain, NULL),
			 -EPROTO);
	msg = rcp_err_msg(-EPROTO);
	assert_printable(msg, false);
	if (!strstr(msg, "did not start a session: hi \\x1b]0;pwned\\x07 \\x1b[2J \\x9b2J"))
		fail_msg("\"%s\"", msg);
	cli_rsh_finish(&r, 1000);
}

static void test_a_home_with_a_control_byte_is_refused(void **state)
{
	static const char *const bad[] = {"/home/\x1b[2J", "/home/a\x7f", "/home/a\rb", "/\x07"};
	char line[256];
	struct cli_rsh r = {0};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "railcp-ssh 1 1.2.3.4 40123 " KEY " %s", bad[i]);
		assert_int_equal(cli_rsh_greeting_parse(&r, line), -EPROTO);
	}
	assert_int_equal(r.port, 0);
	assert_int_equal(
		cli_rsh_greeting_parse(&r, "railcp-ssh 1 1.2.3.4 40123 " KEY " /home/jos\xc3\xa9"),
		0); /* UTF-8 is no control */
	assert_string_equal(r.home, "/home/jos\xc3\xa9");
}

static void test_the_home_is_logged_escaped(void **state)
{
	FILE *f = tmpfile();
	char text[4096];
	struct cli_rsh r;
	int saved, err;
	size_t n;

	(void)state;
	assert_non_null(f);
	fflush(stderr);
	saved = dup(2);
	assert_true(saved >= 0 && dup2(fileno(f), 2) == 2);
	rcp_log_set_level(RCP_LOG_INFO);
	/* a home with an 8-bit CSI (0x9b) that clears the screen */
	err = cli_rsh_start(&r, "printf 'railcp-ssh 1 127.0.0.1 40123 " KEY " /home/\\2332J\\n' #",
			    "h", "railcp", &plain, NULL);
	rcp_log_set_level(RCP_LOG_NOTICE);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	assert_int_equal(err, 0);
	cli_rsh_finish(&r, 1000);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	assert_printable(text, true);
	if (!strstr(text, "its home is /home/\\x9b2J\n"))
		fail_msg("\"%s\"", text);
}

static void test_a_host_that_begins_with_a_dash_is_refused(void **state)
{
	static const char *const fine[] = {"b", "ann@b", "b-1", "::1", "a-n@b"};
	struct cli_rsh r;
	size_t i;

	(void)state;
	assert_int_equal(cli_rsh_host_check("-oProxyCommand=touch x"), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL),
			       "the host '-oProxyCommand=touch x' begins with '-': ssh would read "
			       "it as an option"));
	assert_int_equal(cli_rsh_host_check("ann@-oProxyCommand=x"), -EINVAL);
	assert_non_null(
		strstr(rcp_err_msg(-EINVAL), "the host '-oProxyCommand=x' begins with '-'"));
	assert_int_equal(cli_rsh_host_check("-o\x1b]0;pwned\x07"), -EINVAL); /* quoted escaped */
	assert_printable(rcp_err_msg(-EINVAL), false);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "the host '-o\\x1b]0;pwned\\x07' begins"));
	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
		if (cli_rsh_host_check(fine[i]) != 0)
			fail_msg("'%s' refused: %s", fine[i], rcp_err_msg(-EINVAL));
	/* before anything starts: no remote shell, whatever it is */
	rcp_err_clear();
	assert_int_equal(cli_rsh_start(&r, "false", "-oProxyCommand=x", "railcp", &plain, NULL),
			 -EINVAL);
	assert_int_equal(r.pid, -1);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "the host '-oProxyCommand=x' begins"));
}

/* Fail unless cli_rsh_argv gives want for rsh: its words, each followed by '|'. */
static void argv_is(const char *rsh, const char *want)
{
	const char *argv[CLI_RSH_ARGV_MAX];
	char cmd[CLI_RSH_CMD_MAX], got[CLI_RSH_CMD_MAX + 256];
	size_t n = 0, i;

	assert_int_equal(cli_rsh_argv(rsh, "ann@b", "REMOTE", cmd, argv), 0);
	for (i = 0; argv[i]; i++)
		n += (size_t)snprintf(got + n, sizeof(got) - n, "%s|", argv[i]);
	if (strcmp(got, want) != 0)
		fail_msg("'%s' runs '%s', not '%s'", rsh, got, want);
}

static void test_ssh_reads_the_host_after_dashes(void **state)
{
	(void)state;
	argv_is("ssh", "/bin/sh|-c|exec ssh \"$@\"|railcp-rsh|--|ann@b|REMOTE|");
	argv_is("/usr/bin/ssh -p 2222 -o BatchMode=yes",
		"/bin/sh|-c|exec /usr/bin/ssh -p 2222 -o BatchMode=yes \"$@\"|railcp-rsh|--|ann@b|"
		"REMOTE|");
	argv_is(" ssh -i k -- ", "/bin/sh|-c|exec  ssh -i k --  \"$@\"|railcp-rsh|ann@b|REMOTE|");
	/* another program gets the host and the command as its last two words, as rsync's -e */
	argv_is("tests/integration/local_rsh",
		"/bin/sh|-c|exec tests/integration/local_rsh \"$@\"|railcp-rsh|ann@b|REMOTE|");
	argv_is("sshd", "/bin/sh|-c|exec sshd \"$@\"|railcp-rsh|ann@b|REMOTE|");
}

/* What an "ssh" that prints its arguments as its greeting receives. */
static void test_ssh_receives_dashes_before_the_host(void **state)
{
	char dir[] = "/tmp/test_rsh.XXXXXX", ssh[64];
	struct cli_rsh r;
	const char *msg;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(ssh, sizeof(ssh), "%s/ssh", dir);
	f = fopen(ssh, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nprintf '%s|' \"$@\"; echo\n", f);
	fclose(f);
	assert_int_equal(chmod(ssh, 0755), 0);
	assert_int_equal(cli_rsh_start(&r, ssh, "ann@b", "railcp", &plain, NULL), -EPROTO);
	msg = rcp_err_msg(-EPROTO);
	if (!strstr(msg, "(it said '--|ann@b|'railcp' serve --ssh --timeout 10|')"))
		fail_msg("\"%s\"", msg);
	cli_rsh_finish(&r, 1000);
	unlink(ssh);
	rmdir(dir);
}

/* Fail unless the far side's command for s and transport is want. */
static void remote_is(const struct cli_session *s, const char *transport, const char *want)
{
	char buf[4400];

	assert_int_equal(cli_rsh_remote("railcp", s, transport, buf, sizeof(buf)), 0);
	if (strcmp(buf, want) != 0)
		fail_msg("the far side would run \"%s\", not \"%s\"", buf, want);
}

/*
 * The far side's session runs as this side's: each session option the
 * user gave goes to it, in the units it was given in, and none that was
 * not (the far side's defaults are the same).
 */
static void test_the_far_side_gets_the_session_options_given(void **state)
{
	struct cli_session s = {.timeout_ms = 30000};

	(void)state;
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30");
	s.stall_ms = 90000;
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30 --stall 90");
	s = (struct cli_session){.timeout_ms = 30000, .rail_stall_ms = 2000};
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30 --rail-stall 2");
	s = (struct cli_session){.timeout_ms = 30000, .connect_timeout_ms = 4000};
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30 --connect-timeout 4");
	s = (struct cli_session){.timeout_ms = 30000, .no_failover = true};
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30 --no-failover");
	s = (struct cli_session){.timeout_ms = 30000, .qp = {.ack_timeout = 15}};
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30 --ack-timeout 15");
	s = (struct cli_session){.timeout_ms = 30000, .qp = {.retry_count = 2}};
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30 --retry-count 2");
	s = (struct cli_session){.timeout_ms = 30000, .qp = {.tos_set = true, .tos = 0}};
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30 --tos 0"); /* 0 is a class */
	s = (struct cli_session){.timeout_ms = 30000};
	remote_is(&s, "tcp", "'railcp' serve --ssh --timeout 30 --transport tcp");
	/* the key file stays here: the far side makes the session's key */
	s = (struct cli_session){.timeout_ms = 30000, .key_file = "/k"};
	remote_is(&s, "rdma", "'railcp' serve --ssh --timeout 30 --transport rdma");
}

/*
 * A --profile's knobs are in effect where the command line gave none, and
 * go to the far side as options as if given; one given wins over the
 * profile's. The same merge saves them (railcp topo --save-profile).
 */
static void test_a_profiles_knobs_go_as_options_unless_given(void **state)
{
	struct topo_plan *plan = calloc(1, sizeof(*plan));
	struct cli_session s = {.timeout_ms = 30000, .qp = {.retry_count = 5}};
	struct topo_knobs saved;

	(void)state;
	assert_non_null(plan);
	cli_session_knobs(&s, NULL);
	remote_is(&s, NULL, "'railcp' serve --ssh --timeout 30 --retry-count 5");
	plan->knobs = (struct topo_knobs){.tos_set = true,
					  .tos = 0,
					  .ack_timeout = 14,
					  .retry_count = 3,
					  .connect_timeout = 6};
	cli_session_knobs(&s, plan);
	remote_is(&s, NULL,
		  "'railcp' serve --ssh --timeout 30 --connect-timeout 6 --ack-timeout 14 "
		  "--retry-count 5 --tos 0");
	s = (struct cli_session){.timeout_ms = 30000,
				 .connect_timeout_ms = 2000,
				 .qp = {.ack_timeout = 9, .tos_set = true, .tos = 40}};
	cli_session_knobs(&s, plan);
	remote_is(&s, NULL,
		  "'railcp' serve --ssh --timeout 30 --connect-timeout 2 --ack-timeout 9 "
		  "--retry-count 3 --tos 40");
	cli_session_knobs_save(&s, &saved);
	assert_true(saved.tos_set);
	assert_int_equal(saved.tos, 40);
	assert_int_equal(saved.ack_timeout, 9);
	assert_int_equal(saved.retry_count, 3);
	assert_int_equal(saved.connect_timeout, 2);
	free(plan);
}

/* All of them at once, as ssh receives them after "--" and the host (an "ssh" that keeps its
 * words). */
static void test_ssh_receives_every_session_option(void **state)
{
	const struct cli_session s = {
		.timeout_ms = 5000,
		.stall_ms = 20000,
		.no_failover = true,
		.rail_stall_ms = 3000,
		.connect_timeout_ms = 4000,
		.qp = {.ack_timeout = 14, .retry_count = 3, .tos_set = true, .tos = 106}};
	char dir[] = "/tmp/test_rsh.XXXXXX", ssh[64], args[64], got[1024] = "";
	struct cli_rsh r;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(ssh, sizeof(ssh), "%s/ssh", dir);
	snprintf(args, sizeof(args), "%s/args", dir);
	f = fopen(ssh, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\nprintf '%%s|' \"$@\" >'%s'\n", args);
	fclose(f);
	assert_int_equal(chmod(ssh, 0755), 0);
	assert_int_equal(cli_rsh_start(&r, ssh, "ann@b", "/opt/rail cp", &s, "tcp"), -EPROTO);
	cli_rsh_finish(&r, 1000);
	f = fopen(args, "r");
	assert_non_null(f);
	assert_non_null(fgets(got, sizeof(got), f));
	fclose(f);
	assert_string_equal(got,
			    "--|ann@b|'/opt/rail cp' serve --ssh --timeout 5 --stall 20 "
			    "--rail-stall 3 --connect-timeout 4 --no-failover --ack-timeout 14 "
			    "--retry-count 3 --tos 106 --transport tcp|");
	unlink(args);
	unlink(ssh);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_greeting_gives_address_port_key_and_home),
		cmocka_unit_test(test_anything_else_is_not_a_greeting),
		cmocka_unit_test(test_remote_paths_are_read_as_scp_reads_them),
		cmocka_unit_test(test_a_profiles_knobs_go_as_options_unless_given),
		cmocka_unit_test(test_the_user_is_for_ssh_alone),
		cmocka_unit_test(test_a_greeting_that_is_not_one_is_quoted_escaped),
		cmocka_unit_test(test_the_last_error_line_is_quoted_escaped),
		cmocka_unit_test(test_a_home_with_a_control_byte_is_refused),
		cmocka_unit_test(test_the_home_is_logged_escaped),
		cmocka_unit_test(test_a_host_that_begins_with_a_dash_is_refused),
		cmocka_unit_test(test_ssh_reads_the_host_after_dashes),
		cmocka_unit_test(test_ssh_receives_dashes_before_the_host),
		cmocka_unit_test(test_the_far_side_gets_the_session_options_given),
		cmocka_unit_test(test_ssh_receives_every_session_option),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
