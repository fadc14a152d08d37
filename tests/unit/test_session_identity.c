/*
 * test_session_identity.c - which servers a hello's "server" names
 * (engine/session/identity.c): this host's addresses and names, a loopback
 * address only on a loopback connection, the port it listens on, and the
 * names serve --name adds; anything else is refused with a sentence that
 * escapes what the client sent.
 *
 * Design: each case is a hello made here and a real TCP connection accepted
 * on a loopback address (127.0.0.1, or 127.0.0.2 as a stand-in for an
 * address the connection did not arrive on); no DNS is needed (names are
 * this host's own, "localhost" from /etc/hosts, or given).
 */
#include "engine/session/proto.h"
#include "engine/session/session_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define PORT 7470

/* The server's end of a TCP connection made to addr (a loopback address). */
static int accepted_on(const char *addr)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c, s;

	assert_int_equal(inet_pton(AF_INET, addr, &a.sin_addr), 1);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	s = accept(lfd, NULL, NULL);
	assert_true(s >= 0);
	close(c);
	close(lfd);
	return s;
}

/* eng__identity_check of a hello naming host:port, on a connection that arrived at addr. */
static int check(const char *const *names, const char *addr, const char *host, int port)
{
	json_t *hello =
		json_pack("{s:{s:s,s:i}}", ENG_KEY_SERVER, ENG_KEY_HOST, host, ENG_KEY_PORT, port);
	int fd = accepted_on(addr), err;

	assert_non_null(hello);
	err = eng__identity_check(names, PORT, fd, hello);
	close(fd);
	json_decref(hello);
	return err;
}

static void test_this_hosts_names_and_addresses_are_served(void **state)
{
	char own[256] = "", label[256];

	(void)state;
	assert_int_equal(gethostname(own, sizeof(own) - 1), 0);
	snprintf(label, sizeof(label), "%.*s", (int)strcspn(own, "."), own);
	assert_int_equal(check(NULL, "127.0.0.1", own, PORT), 0);
	assert_int_equal(check(NULL, "127.0.0.1", label, PORT), 0);
	assert_int_equal(check(NULL, "127.0.0.1", "127.0.0.1", PORT), 0);
	assert_int_equal(check(NULL, "127.0.0.1", "localhost", PORT), 0);
	assert_int_equal(check(NULL, "127.0.0.2", "127.0.0.2", PORT), 0);
}

static void test_another_port_or_host_is_refused(void **state)
{
	(void)state;
	assert_int_equal(check(NULL, "127.0.0.1", "127.0.0.1", PORT + 1), -EACCES);
	assert_non_null(strstr(rcp_err_msg(-EACCES), "which is not this server"));
	assert_non_null(strstr(rcp_err_msg(-EACCES), "--name 127.0.0.1:7471"));
	/* TEST-NET-1 (RFC 5737) is no host's address, nor 2001:db8::/32 (RFC 3849). */
	assert_int_equal(check(NULL, "127.0.0.1", "192.0.2.1", PORT), -EACCES);
	assert_int_equal(check(NULL, "127.0.0.1", "2001:db8::9", PORT), -EACCES);
	assert_non_null(strstr(rcp_err_msg(-EACCES), "--name [2001:db8::9]:7470"));
	/* Every host has a loopback: it names this one only on a loopback connection to it. */
	assert_int_equal(check(NULL, "127.0.0.2", "127.0.0.1", PORT), -EACCES);
	assert_int_equal(check(NULL, "127.0.0.2", "localhost", PORT), -EACCES);
}

static void test_given_names_are_served_at_their_port(void **state)
{
	static const char *const names[] = {"192.0.2.1:9", "Alias.Example", "[2001:db8::9]:9",
					    NULL};

	(void)state;
	assert_int_equal(check(names, "127.0.0.1", "192.0.2.1", 9), 0);
	assert_int_equal(check(names, "127.0.0.1", "2001:db8::9", 9), 0);
	assert_int_equal(check(names, "127.0.0.1", "2001:db8::9", PORT), -EACCES);
	assert_int_equal(check(names, "127.0.0.1", "192.0.2.1", PORT), -EACCES);
	assert_int_equal(check(names, "127.0.0.1", "alias.example", PORT), 0);
	assert_int_equal(check(names, "127.0.0.1", "alias.example", 9), -EACCES);
}

static void test_a_hello_without_a_server_or_with_a_hostile_one(void **state)
{
	json_t *hello = json_pack("{s:s}", ENG_KEY_TYPE, ENG_MSG_HELLO);
	int fd = accepted_on("127.0.0.1");

	(void)state;
	assert_int_equal(eng__identity_check(NULL, PORT, fd, hello), -EPROTO);
	assert_non_null(strstr(rcp_err_msg(-EPROTO), "which server it dialed"));
	json_decref(hello);
	close(fd);
	assert_int_equal(check(NULL, "127.0.0.1", "127.0.0.1", 0), -EPROTO);
	assert_int_equal(check(NULL, "127.0.0.1", "127.0.0.1", 65536), -EPROTO);
	assert_int_equal(check(NULL, "127.0.0.1", "", PORT), -EPROTO);
	/* What the client sent reaches the log escaped: no terminal escape gets through. */
	assert_int_equal(check(NULL, "127.0.0.1", "x\033[2Jy", PORT), -EACCES);
	assert_null(strchr(rcp_err_msg(-EACCES), '\033'));
	assert_non_null(strstr(rcp_err_msg(-EACCES), "x\\x1b[2Jy"));
}

static void test_names_parse_as_host_or_host_and_port_or_ipv6(void **state)
{
	static const char *const bad[] = {"",	  ":1",	   "h:",      "h:0",	"h:65536",
					  "h:1x", "a:b:c", "[::1",    "[::1]x", "[::1]:0",
					  "[]:1", "[]",	   "fd00::x", "[::1]:"};
	char host[256];
	uint16_t port = 0;
	size_t i;

	(void)state;
	assert_int_equal(eng__identity_parse("mover1", PORT, host, &port), 0);
	assert_string_equal(host, "mover1");
	assert_int_equal(port, PORT);
	assert_int_equal(eng__identity_parse("gw.example:17470", PORT, host, &port), 0);
	assert_string_equal(host, "gw.example");
	assert_int_equal(port, 17470);
	assert_int_equal(eng__identity_parse("::1", PORT, host, &port), 0);
	assert_string_equal(host, "::1"); /* an IPv6 address alone: the default port */
	assert_int_equal(port, PORT);
	assert_int_equal(eng__identity_parse("[fd00::2]:9", PORT, host, &port), 0);
	assert_string_equal(host, "fd00::2");
	assert_int_equal(port, 9);
	assert_int_equal(eng__identity_parse("[fd00::2]", PORT, host, &port), 0);
	assert_string_equal(host, "fd00::2");
	assert_int_equal(port, PORT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (eng__identity_parse(bad[i], PORT, host, &port) != -EINVAL)
			fail_msg("--name '%s' was taken", bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_this_hosts_names_and_addresses_are_served),
		cmocka_unit_test(test_another_port_or_host_is_refused),
		cmocka_unit_test(test_given_names_are_served_at_their_port),
		cmocka_unit_test(test_a_hello_without_a_server_or_with_a_hostile_one),
		cmocka_unit_test(test_names_parse_as_host_or_host_and_port_or_ipv6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
