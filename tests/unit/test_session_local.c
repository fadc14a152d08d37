/*
 * test_session_local.c - a server without a key serves only the user who runs
 * it, over the loopback transport (session_harness.h): another local user's
 * connection is refused with a sentence and the server keeps serving its own;
 * with a key, the key decides; the lookup names the user that made a
 * connection, and refuses one whose peer has gone; where the kernel cannot
 * say who connected, the server refuses to start, and a connection it cannot
 * trace is refused. A client whose socket is still connected but whose far
 * end sock_diag cannot find hears that who listens cannot be told, not that
 * the server closed. The other way round, a client without a key talks only to
 * a listener of its own user on this host: another user's gets nothing, and a
 * host that is not this one is not even connected to.
 *
 * Design: another local user is played by a helper thread that takes uid
 * OTHER_UID for itself alone (the raw setresuid system call: glibc's
 * wrapper changes every thread) just long enough to create a socket; the
 * kernel counts that socket as the other user's for good, and the test's
 * thread connects it and does the talking. Those tests need root and skip
 * without it. A kernel without sock_diag is played by a forked child under
 * a seccomp filter that refuses netlink sockets; the child reports by its
 * exit status, since a cmocka assertion there would run the parent's
 * teardown a second time.
 *
 * Threading: the server's, the short-lived helper threads, and in the
 * forked child a server of its own.
 */
#include "session_harness.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* The other local user: nobody. */
#define OTHER_UID 65534u

/* ---- sockets of another user ---- */

struct other_socket {
	int fd;
	int err;
};

static void *other_socket_main(void *arg)
{
	struct other_socket *o = arg;

	/* This thread only; its credentials end with it. */
	if (syscall(SYS_setresuid, -1, OTHER_UID, -1) != 0) {
		o->err = errno;
		return NULL;
	}
	o->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	o->err = o->fd < 0 ? errno : 0;
	return NULL;
}

/* A TCP socket that OTHER_UID owns; skips the test where we cannot make one. */
static int other_socket(void)
{
	struct other_socket o = {.fd = -1};
	pthread_t t;

	if (geteuid() != 0) {
		print_message("skipped: playing another user needs root\n");
		skip();
	}
	assert_int_equal(pthread_create(&t, NULL, other_socket_main, &o), 0);
	pthread_join(t, NULL);
	if (o.err)
		fail_msg("cannot create a socket as uid %u: %s", OTHER_UID, strerror(o.err));
	return o.fd;
}

static bool fd_connect(int fd, uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
}

static int our_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	return fd;
}

/* ---- the framing, without assertions (the forked child uses it too) ---- */

/* The message of the peer's next frame if it is an "error" and then closes; else NULL. */
static char *error_then_close(int fd)
{
	json_t *m = raw_recv(fd);
	char *text = NULL;

	if (!strcmp(json_string_value(json_object_get(m, "type")) ?: "?", "error") &&
	    json_string_value(json_object_get(m, "message")) && raw_closed(fd))
		text = strdup(json_string_value(json_object_get(m, "message")));
	json_decref(m);
	return text;
}

#define OTHERS_REFUSED "serves only its own user (uid 0); connections from uid 65534 are refused"

/* ---- the server ---- */

static void test_a_keyless_server_serves_only_its_own_user(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	int fd;

	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	bench_ok(&fx->srv, NULL);
	fd = other_socket();
	assert_true(fd_connect(fd, (uint16_t)atomic_load(&fx->srv.port)));
	assert_refused(fd, OTHERS_REFUSED);
	bench_ok(&fx->srv, NULL);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* Without a key the uid decides; with one, the key: another user reaches the hello. */
static void test_with_a_key_other_users_reach_the_hello(void **state)
{
	static const unsigned rails[] = {1};
	static const char not_railcp[] = "{\"type\":\"hello\",\"proto\":\"http\"}";
	struct fx *fx = *state;
	char key[4096];
	int fd;

	fx_key(fx, "key", TEST_KEY, key);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	fd = other_socket();
	assert_true(fd_connect(fd, (uint16_t)atomic_load(&fx->srv.port)));
	assert_refused(fd, OTHERS_REFUSED);
	assert_int_equal(server_stop(&fx->srv), 0);

	server_start(&fx->srv, NULL, NULL, key);
	fd = other_socket();
	assert_true(fd_connect(fd, (uint16_t)atomic_load(&fx->srv.port)));
	raw_frame(fd, not_railcp, (uint32_t)strlen(not_railcp));
	assert_refused(fd, "does not speak the railcp protocol");
	bench_ok(&fx->srv, key);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* ---- the lookup ---- */

/* A socket listening on 127.0.0.1 at a port of the kernel's choice. */
static int listener(uint16_t *port_out)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = our_socket();

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port_out = ntohs(a.sin_port);
	return fd;
}

/* c connected to lfd: our end of the connection. */
static int accepted(int lfd, int c, uint16_t port)
{
	int fd;

	assert_true(fd_connect(c, port));
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void test_peer_uid_names_the_user_that_made_the_connection(void **state)
{
	uint16_t port;
	int other = other_socket(), lfd = listener(&port), c = our_socket(), a;
	uid_t uid = 12345;

	(void)state;
	assert_int_equal(eng__tcp_peer_uid_probe(lfd), 0);
	a = accepted(lfd, c, port);
	assert_int_equal(eng__tcp_peer_uid(a, &uid), 0);
	assert_int_equal(uid, geteuid());
	uid = 12345;
	assert_int_equal(eng__tcp_peer_uid(c, &uid), 0); /* its peer: accepted by our listener */
	assert_int_equal(uid, geteuid());
	close(c);
	close(a);

	a = accepted(lfd, other, port);
	assert_int_equal(eng__tcp_peer_uid(a, &uid), 0);
	assert_int_equal(uid, OTHER_UID);
	/* Once closed, the kernel may call the peer's end uid 0's: no answer counts then. */
	close(other);
	uid = 12345;
	assert_int_equal(eng__tcp_peer_uid(a, &uid), -ECONNRESET);
	assert_int_equal(uid, 12345);
	assert_non_null(strstr(rcp_err_msg(-ECONNRESET), "closed before the server could tell"));
	close(a);
	close(lfd);
}

/*
 * A keyless client whose server resets the connection before the look at
 * its listener's user hears that the server went away (a railcp-mpi rank
 * then moves on to another server), not that no key could be checked
 * (which ended the job: host/mpi_steal, a server killed as a batch began).
 */
static void test_a_keyless_client_whose_server_went_away_hears_so(void **state)
{
	struct linger now = {.l_onoff = 1, .l_linger = 0};
	struct pollfd p;
	uint16_t port;
	int lfd = listener(&port), c = our_socket(), a = accepted(lfd, c, port), err;

	(void)state;
	assert_int_equal(setsockopt(a, SOL_SOCKET, SO_LINGER, &now, sizeof(now)), 0);
	close(a); /* a reset */
	p = (struct pollfd){.fd = c, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 10000), 1);
	err = eng__ctl_peer_own(c, "127.0.0.1", port);
	assert_true(err == -ECONNRESET || err == -ENOTCONN);
	assert_non_null(strstr(rcp_err_msg(err), "closed the connection at once"));
	close(c);
	close(lfd);
}

/*
 * Our socket still connected, but sock_diag cannot find the far end (here:
 * asked from a network namespace of the child's own, as a loopback DNAT or
 * a server still finishing its handshake would look): who listens cannot
 * be told (-ENOKEY), not "closed the connection at once" (which railcp-mpi
 * takes for a gone server, leaving a live one unprobed). Run in a forked
 * child, c connected by the parent; its exit status is the verdict.
 */
static int child_far_end_unseen(int c, uint16_t port)
{
	int err;

	if (unshare(CLONE_NEWNET) && unshare(CLONE_NEWUSER | CLONE_NEWNET))
		return 77;
	err = eng__ctl_peer_own(c, "127.0.0.1", port);
	if (err != -ENOKEY || !strstr(rcp_err_msg(err), "cannot be told")) {
		fprintf(stderr, "child: %d: %s\n", err, rcp_err_msg(err));
		return 1;
	}
	return 0;
}

static void test_a_keyless_client_still_connected_to_an_unseen_far_end_hears_no_close(void **state)
{
	uint16_t port;
	int lfd = listener(&port), c = our_socket(), a = accepted(lfd, c, port), status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_far_end_unseen(c, port)); /* no cmocka in the child */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(a);
	close(c);
	close(lfd);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		print_message("skipped: cannot enter a network namespace of its own here\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- no sock_diag: a forked child whose netlink sockets are refused ---- */

/* From now on socket(AF_NETLINK, ...) fails with EPERM, in every thread of this process. */
static bool netlink_deny(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = RCP_ARRAY_SIZE(f), .filter = f};

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	       syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0;
}

/* What a child reports: passed, skipped (no seccomp), or the line of the check that failed. */
#define CHILD_SKIP 77
#define CHILD_CHECK(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

/* A keyless server's options for a child: loopback, port of the kernel's choice. */
static void child_server(struct server *s)
{
	static const unsigned rails[] = {1};

	plan_make(&s->plan, rails, 1, 1, 1, BUDGET);
	s->tr = eng__transport_loopback();
	s->stop_fd = eventfd(0, EFD_CLOEXEC);
	s->o = (struct eng_serve_opts){.listen_addr = "127.0.0.1",
				       .plan = &s->plan,
				       .timeout_ms = TIMEOUT_MS,
				       .max_sessions = 4,
				       .stop_fd = s->stop_fd,
				       .ready = server_ready,
				       .ctx = s};
}

static int child_start_refused(void)
{
	struct server s = {0};
	uint64_t one = 1;
	int err;

	child_server(&s);
	/* Stopped before it starts: a server that does start returns at once. */
	CHILD_CHECK(s.stop_fd >= 0 && write(s.stop_fd, &one, sizeof(one)) == sizeof(one));
	if (!netlink_deny())
		return CHILD_SKIP;
	err = eng__serve(&s.o, s.tr, true);
	CHILD_CHECK(err != 0);
	CHILD_CHECK(strstr(rcp_err_msg(err), "cannot tell which user makes a connection"));
	CHILD_CHECK(strstr(rcp_err_msg(err), "--key-file"));
	return 0;
}

static int child_connection_refused(void)
{
	struct server s = {0};
	uint64_t one = 1;
	char *text;
	int fd;

	child_server(&s);
	CHILD_CHECK(s.stop_fd >= 0 && pthread_create(&s.thread, NULL, server_main, &s) == 0);
	CHILD_CHECK(WAIT_FOR(atomic_load(&s.port) != 0 || atomic_load(&s.ended)));
	CHILD_CHECK(atomic_load(&s.port) != 0);
	if (!netlink_deny())
		return CHILD_SKIP; /* the server thread dies with the child */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHILD_CHECK(fd >= 0 && fd_connect(fd, (uint16_t)atomic_load(&s.port)));
	text = error_then_close(fd);
	CHILD_CHECK(text);
	if (!strstr(text, "refuses a connection it cannot trace: the kernel's sock_diag")) {
		fprintf(stderr, "child: the server said \"%s\"\n", text);
		return 1;
	}
	free(text);
	CHILD_CHECK(write(s.stop_fd, &one, sizeof(one)) == sizeof(one));
	pthread_join(s.thread, NULL);
	CHILD_CHECK(s.err == 0);
	return 0;
}

/* Run fn in a forked child; its exit status is the verdict. */
static void child_run(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn()); /* no atexit handlers, no cmocka: the parent reports */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == CHILD_SKIP) {
		print_message("skipped: cannot install a seccomp filter here\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_without_sock_diag_a_keyless_server_refuses_to_start(void **state)
{
	(void)state;
	child_run(child_start_refused);
}

static void test_a_connection_the_server_cannot_trace_is_refused(void **state)
{
	(void)state;
	child_run(child_connection_refused);
}

/* ---- the client ---- */

/* A bench without a key to 127.0.0.1 port; its error. */
static int keyless_bench_to(const char *host, uint16_t port)
{
	static const unsigned one[] = {1};
	struct topo_plan plan;
	struct eng_client_opts o;
	struct eng_report r;

	plan_make(&plan, one, 1, 1, 1, BUDGET);
	o = (struct eng_client_opts){.host = host,
				     .port = port,
				     .chunk = 64 * KiB,
				     .plan = &plan,
				     .timeout_ms = TIMEOUT_MS,
				     .bench_bytes = 256 * KiB,
				     .tr = eng__transport_loopback()};
	return eng__client_run(&o, &r);
}

static void test_a_keyless_client_sends_nothing_to_another_users_listener(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int lfd = other_socket(), fd, err;
	char byte;

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	/* Any user may listen on a port above 1024, the railcp port included. */
	err = keyless_bench_to("127.0.0.1", ntohs(a.sin_port));
	assert_int_equal(err, -ENOKEY);
	assert_non_null(strstr(rcp_err_msg(err), "belongs to uid 65534, not to this user"));
	/* The connection was made (the owner is asked of it) but nothing went over it. */
	fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	assert_int_equal(recv(fd, &byte, 1, 0), 0);
	close(fd);
	close(lfd);
}

static void test_a_keyless_client_connects_to_no_other_host(void **state)
{
	int err;

	(void)state;
	/* Not even a connection is tried: the address need not exist. */
	err = keyless_bench_to("198.18.0.1", 7470);
	assert_int_equal(err, -ENOKEY);
	assert_non_null(strstr(rcp_err_msg(err), "198.18.0.1 is not this host"));
}

/* ---- main ---- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First, while this process has no other thread: they fork. */
		cmocka_unit_test(test_without_sock_diag_a_keyless_server_refuses_to_start),
		cmocka_unit_test(test_a_connection_the_server_cannot_trace_is_refused),
		T(test_a_keyless_server_serves_only_its_own_user),
		T(test_with_a_key_other_users_reach_the_hello),
		cmocka_unit_test(test_peer_uid_names_the_user_that_made_the_connection),
		cmocka_unit_test(test_a_keyless_client_whose_server_went_away_hears_so),
		cmocka_unit_test(
			test_a_keyless_client_still_connected_to_an_unseen_far_end_hears_no_close),
		cmocka_unit_test(test_a_keyless_client_sends_nothing_to_another_users_listener),
		cmocka_unit_test(test_a_keyless_client_connects_to_no_other_host),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
