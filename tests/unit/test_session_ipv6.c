/*
 * test_session_ipv6.c - the control connection over IPv6 (engine/session/:
 * ctladdr.c, dial.c, peercred.c, identity.c): addresses said and compared
 * as the user knows them (an IPv4 peer of a dual-stack listener is its
 * IPv4 address), the user that made a connection to ::1 and to a
 * dual-stack listener told by sock_diag, a keyless client that dials ::1
 * and no other IPv6 host, --bind's family kept, and a hello naming
 * 127.0.0.1 or ::1 served on the connection that arrived there.
 *
 * Design: real TCP connections on ::1 and on "::" with IPV6_V6ONLY off, as
 * railcp serve listens by default. Where this host has no IPv6 loopback,
 * the tests that need it skip, saying so.
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

#define TIMEOUT_MS 5000

/* A socket listening on addr (IPv6 with V6ONLY off) at a port of the kernel's choice; -1: none. */
static int listen_at(const char *addr, uint16_t *port_out)
{
	struct sockaddr_storage a;
	socklen_t len;
	int off = 0, fd;

	assert_int_equal(eng__addr_parse(addr, 0, &a, &len), 0);
	fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (a.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (bind(fd, (struct sockaddr *)&a, len) || listen(fd, 4)) {
		close(fd);
		return -1;
	}
	len = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port_out = eng__addr_port((struct sockaddr *)&a);
	return fd;
}

/* Skip unless this host listens on ::1. */
static void need_ipv6_loopback(void)
{
	uint16_t port;
	int fd = listen_at("::1", &port);

	if (fd < 0)
		skip(); /* cmocka prints the test as skipped: no IPv6 loopback here */
	close(fd);
}

/* A connection from a socket of to's family to to:port; the accepted end in *server_out. */
static int connect_to(int lfd, const char *to, uint16_t port, int *server_out)
{
	struct sockaddr_storage a;
	socklen_t len;
	int c;

	assert_int_equal(eng__addr_parse(to, port, &a, &len), 0);
	c = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(c >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, len), 0);
	*server_out = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*server_out >= 0);
	return c;
}

static void test_addresses_are_said_as_the_user_knows_them(void **state)
{
	struct sockaddr_storage a;
	struct in6_addr k4, k6;
	socklen_t len;
	char buf[INET6_ADDRSTRLEN];

	(void)state;
	assert_int_equal(eng__addr_parse("::ffff:10.1.2.3", 7, &a, &len), 0);
	assert_string_equal(eng__addr_text((struct sockaddr *)&a, buf, sizeof(buf)), "10.1.2.3");
	eng__addr_key((struct sockaddr *)&a, &k6);
	assert_int_equal(eng__addr_parse("10.1.2.3", 9, &a, &len), 0);
	eng__addr_key((struct sockaddr *)&a, &k4);
	assert_true(IN6_ARE_ADDR_EQUAL(&k4, &k6)); /* one peer, whichever socket it reached */
	assert_true(eng__addr_same_peer(&k4, &k6));
	/* For the limits on strangers, an IPv6 /64 is one peer; IPv4 addresses are each their own.
	 */
	{
		static const char *const same[][2] = {{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"},
						      {"fd00::2", "fd00::3"}};
		static const char *const other[][2] = {{"2001:db8:1:2::1", "2001:db8:1:3::1"},
						       {"10.1.2.3", "10.1.2.4"},
						       {"10.1.2.3", "::ffff:10.1.2.4"},
						       {"::ffff:10.1.2.3", "::"}};
		struct sockaddr_storage b;
		struct in6_addr x, y;
		size_t i;

		for (i = 0; i < 2; i++) {
			assert_int_equal(eng__addr_parse(same[i][0], 0, &b, &len), 0);
			eng__addr_key((struct sockaddr *)&b, &x);
			assert_int_equal(eng__addr_parse(same[i][1], 0, &b, &len), 0);
			eng__addr_key((struct sockaddr *)&b, &y);
			assert_true(eng__addr_same_peer(&x, &y));
		}
		for (i = 0; i < 4; i++) {
			assert_int_equal(eng__addr_parse(other[i][0], 0, &b, &len), 0);
			eng__addr_key((struct sockaddr *)&b, &x);
			assert_int_equal(eng__addr_parse(other[i][1], 0, &b, &len), 0);
			eng__addr_key((struct sockaddr *)&b, &y);
			assert_false(eng__addr_same_peer(&x, &y));
		}
	}
	assert_int_equal(eng__addr_port((struct sockaddr *)&a), 9);
	assert_int_equal(eng__addr_parse("fd00::2", 0, &a, &len), 0);
	assert_string_equal(eng__addr_text((struct sockaddr *)&a, buf, sizeof(buf)), "fd00::2");
	assert_false(eng__addr_loopback((struct sockaddr *)&a));
	assert_int_equal(eng__addr_parse("::1", 0, &a, &len), 0);
	assert_true(eng__addr_loopback((struct sockaddr *)&a));
	assert_int_equal(eng__addr_parse("::ffff:127.0.0.9", 0, &a, &len), 0);
	assert_true(eng__addr_loopback((struct sockaddr *)&a));
	assert_int_equal(eng__addr_parse("127.0.0.9", 0, &a, &len), 0);
	assert_true(eng__addr_loopback((struct sockaddr *)&a));
	assert_int_equal(eng__addr_parse("[::1]", 0, &a, &len), -EINVAL);
	assert_int_equal(eng__addr_parse("localhost", 0, &a, &len), -EINVAL);
}

static void test_sock_diag_names_the_user_over_ipv6(void **state)
{
	uint16_t port;
	uid_t uid = 12345;
	int lfd, c, s;

	(void)state;
	need_ipv6_loopback();
	lfd = listen_at("::1", &port);
	assert_int_equal(eng__tcp_peer_uid_probe(lfd), 0);
	c = connect_to(lfd, "::1", port, &s);
	assert_int_equal(eng__tcp_peer_uid(s, &uid), 0);
	assert_int_equal(uid, geteuid());
	uid = 12345;
	assert_int_equal(eng__tcp_peer_uid(c, &uid), 0); /* the listener's end, ours too */
	assert_int_equal(uid, geteuid());
	close(c);
	uid = 12345;
	assert_int_equal(eng__tcp_peer_uid(s, &uid), -ECONNRESET);
	assert_int_equal(uid, 12345);
	close(s);
	close(lfd);
}

static void test_sock_diag_names_the_ipv4_peer_of_a_dual_stack_listener(void **state)
{
	uint16_t port;
	uid_t uid = 12345;
	int lfd, c, s;

	(void)state;
	need_ipv6_loopback();
	lfd = listen_at("::", &port);
	assert_true(lfd >= 0);
	assert_int_equal(eng__tcp_peer_uid_probe(lfd), 0);
	c = connect_to(lfd, "127.0.0.1", port, &s); /* s's peer is ::ffff:127.0.0.1 */
	assert_int_equal(eng__tcp_peer_uid(s, &uid), 0);
	assert_int_equal(uid, geteuid());
	/* The other way: a keyless client's check of a dual-stack listener's (IPv6) socket. */
	uid = 12345;
	assert_int_equal(eng__tcp_peer_uid(c, &uid), 0);
	assert_int_equal(uid, geteuid());
	close(c);
	close(s);
	close(lfd);
}

static void test_a_keyless_client_dials_ipv6_loopback_only(void **state)
{
	uint16_t port;
	int lfd, fd = -1, s, err;

	(void)state;
	need_ipv6_loopback();
	lfd = listen_at("::1", &port);
	assert_int_equal(eng__ctl_dial("::1", port, NULL, TIMEOUT_MS, true, &fd), 0);
	s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(s >= 0);
	assert_int_equal(eng__ctl_peer_own(fd, "::1", port), 0);
	close(fd);
	close(s);
	/* From ::1 (--bind) it goes; from 127.0.0.1 there is no IPv4 address of ::1 to go to. */
	assert_int_equal(eng__ctl_dial("::1", port, "::1", TIMEOUT_MS, true, &fd), 0);
	close(fd);
	s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(s);
	err = eng__ctl_dial("::1", port, "127.0.0.1", TIMEOUT_MS, false, &fd);
	assert_int_equal(err, -EAFNOSUPPORT);
	assert_non_null(
		strstr(rcp_err_msg(err), "::1 has no IPv4 address to reach from 127.0.0.1"));
	close(lfd);
	/* Not even a connection is tried: the address need not exist. */
	err = eng__ctl_dial("2001:db8::1", 7470, NULL, TIMEOUT_MS, true, &fd);
	assert_int_equal(err, -ENOKEY);
	assert_non_null(strstr(rcp_err_msg(err), "2001:db8::1 is not this host"));
	err = eng__ctl_dial("::1", 7470, "::1:x", TIMEOUT_MS, true, &fd);
	assert_int_equal(err, -EINVAL);
}

/* eng__identity_check of a hello naming host at port, on the server's end s. */
static int identity(int s, const char *host, uint16_t port)
{
	json_t *hello =
		json_pack("{s:{s:s,s:i}}", ENG_KEY_SERVER, ENG_KEY_HOST, host, ENG_KEY_PORT, port);
	int err;

	assert_non_null(hello);
	err = eng__identity_check(NULL, port, s, hello);
	json_decref(hello);
	return err;
}

static void test_a_hello_naming_the_loopback_it_arrived_on_is_served(void **state)
{
	uint16_t port;
	int lfd, c, s;

	(void)state;
	need_ipv6_loopback();
	lfd = listen_at("::", &port);
	c = connect_to(lfd, "127.0.0.1", port, &s); /* arrived on ::ffff:127.0.0.1 */
	assert_int_equal(identity(s, "127.0.0.1", port), 0);
	assert_int_equal(identity(s, "::1", port), -EACCES); /* not where it arrived */
	close(c);
	close(s);
	c = connect_to(lfd, "::1", port, &s);
	assert_int_equal(identity(s, "::1", port), 0);
	assert_int_equal(identity(s, "127.0.0.1", port), -EACCES);
	close(c);
	close(s);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addresses_are_said_as_the_user_knows_them),
		cmocka_unit_test(test_sock_diag_names_the_user_over_ipv6),
		cmocka_unit_test(test_sock_diag_names_the_ipv4_peer_of_a_dual_stack_listener),
		cmocka_unit_test(test_a_keyless_client_dials_ipv6_loopback_only),
		cmocka_unit_test(test_a_hello_naming_the_loopback_it_arrived_on_is_served),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
