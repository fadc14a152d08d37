/*
 * test_session_stranger.c - what a stranger who has not proven the key can
 * cost a server, over the loopback transport (session_harness.h): nothing
 * that depends on the key, small frames, one deadline for hello and proof,
 * a share of the pending slots per address (idle floods from one address
 * or many lock out no one else), a peer that stops reading named; and a
 * server out of descriptors waits rather than spins.
 *
 * Design: raw TCP peers speak the framing by hand so they test it rather
 * than reuse it; deadlines are watched with poll on the raw socket, CPU
 * spent with the thread's CPU clock.
 *
 * Threading: besides the server, one test runs a spinner thread.
 */
#include "session_harness.h"

#include <sys/resource.h>
#include <time.h>
/* ---- before authentication: what a stranger can cost the server ---- */

/* 32 bytes of hex: a challenge or a proof (a wrong one). */
#define ZEROS_32 "0000000000000000000000000000000000000000000000000000000000000000"

/* On fd, a hello that offers a challenge; the server's answer. */
static json_t *raw_keyed_hello_reply(int fd)
{
	json_t *h = hello_bench(1, 4096);

	json_object_set_new(h, "challenge", json_string(ZEROS_32));
	raw_json(fd, h);
	return raw_recv(fd);
}

/* The same; the answer must be the server's "challenge". */
static void raw_keyed_hello(int fd)
{
	json_t *m = raw_keyed_hello_reply(fd);

	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "type")) ?: "?", "challenge");
	json_decref(m);
}

static void keyed_server_start(struct fx *fx, int timeout_ms, char key[4096])
{
	static const unsigned rails[] = {1};

	fx_key(fx, "key", TEST_KEY, key);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	fx->srv.timeout_ms = timeout_ms;
	server_start(&fx->srv, NULL, NULL, key);
}

/*
 * Whatever a stranger sends, the server's answers depend on nothing but
 * fresh randomness until the stranger proved the key: a bare challenge,
 * then (a wrong proof) an error. No HMAC of the key to guess against.
 */
static void test_a_stranger_gets_nothing_that_depends_on_the_key(void **state)
{
	struct fx *fx = *state;
	char key[4096], hex[2 * ENG_AUTH_RESPONSE_LEN + 1];
	const char *name;
	json_t *m, *v;
	int fd;

	keyed_server_start(fx, TIMEOUT_MS, key);
	fd = raw_connect((uint16_t)atomic_load(&fx->srv.port));
	m = raw_keyed_hello_reply(fd);
	assert_non_null(m);
	json_object_foreach(m, name, v)
	{
		if (strcmp(name, "type") && strcmp(name, "challenge"))
			fail_msg("the server's answer to a hello carries \"%s\"", name);
	}
	assert_string_equal(json_string_value(json_object_get(m, "type")), "challenge");
	json_decref(m);
	memset(hex, 'a', sizeof(hex) - 1);
	hex[sizeof(hex) - 1] = 0;
	raw_json(fd, json_pack("{s:s, s:s}", "type", "proof", "proof", hex)); /* takes it */
	m = raw_recv(fd);
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "type")), "error");
	assert_int_equal(json_object_size(m), 2); /* type and message */
	assert_non_null(strstr(json_string_value(json_object_get(m, "message")),
			       "does not know the shared key"));
	json_decref(m);
	assert_true(raw_closed(fd));
	close(fd);
	bench_ok(&fx->srv, key);
}

static void test_a_proof_is_read_with_the_hello_limit(void **state)
{
	struct fx *fx = *state;
	uint32_t be = htonl(100 * KiB); /* within the 1 MiB of a frame after authentication */
	char key[4096];
	int fd;

	/* Were the frame read, the server would wait up to --timeout for the rest of it. */
	keyed_server_start(fx, 5000, key);
	fd = raw_connect((uint16_t)atomic_load(&fx->srv.port));
	raw_keyed_hello(fd);
	raw_write(fd, &be, sizeof(be));
	assert_refused(fd, "it sent a frame of 102400 bytes");
	bench_ok(&fx->srv, key);
}

/* Connections one address makes in the flood below. */
#define IDLE_FLOOD 1000

static void test_idle_connections_from_one_address_lock_out_no_one_else(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	int idle[ENG_MAX_PENDING_PER_ADDR + ENG_MAX_PARKED_PER_ADDR], i;
	struct pollfd pfd;
	char what[128];
	uint16_t port;

	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	port = (uint16_t)atomic_load(&fx->srv.port);
	/*
	 * Idle for the whole test: each may wait ENG_PREAUTH_MS (TIMEOUT_MS
	 * here) to authenticate, or as long to wait its turn.
	 */
	for (i = 0; i < (int)RCP_ARRAY_SIZE(idle); i++)
		idle[i] = raw_connect_from(port, "127.0.0.2");
	/* Every further one from there, up to a thousand in all, is refused at once, with a
	 * sentence... */
	snprintf(what, sizeof(what),
		 "%d connections from 127.0.0.2 waiting to authenticate and %d more waiting "
		 "their turn; try again later",
		 ENG_MAX_PENDING_PER_ADDR, ENG_MAX_PARKED_PER_ADDR);
	for (i = RCP_ARRAY_SIZE(idle); i < IDLE_FLOOD; i++)
		assert_refused(raw_connect_from(port, "127.0.0.2"), what);
	/* ...while a client from another address is served, and the idle ones still wait. */
	bench_ok(&fx->srv, NULL);
	for (i = 0; i < (int)RCP_ARRAY_SIZE(idle); i++) {
		pfd = (struct pollfd){.fd = idle[i], .events = POLLIN};
		assert_int_equal(poll(&pfd, 1, 0), 0);
		close(idle[i]);
	}
}

/*
 * Eight addresses, each holding its share of idle connections, fill every
 * place before authentication; a client that proves the key still gets in:
 * the connection that waited longest gives its place. Before, every client
 * was refused until an idle one expired (and a flood renews them).
 */
static void test_idle_connections_from_many_addresses_lock_out_no_keyed_client(void **state)
{
	struct fx *fx = *state;
	int idle[ENG_MAX_PENDING], i;
	struct pollfd pfd;
	char key[4096], from[32];
	uint16_t port;

	keyed_server_start(fx, TIMEOUT_MS, key);
	port = (uint16_t)atomic_load(&fx->srv.port);
	/* Accepted in this order (one listener, a FIFO queue), each claims a place. */
	for (i = 0; i < ENG_MAX_PENDING; i++) {
		snprintf(from, sizeof(from), "127.0.0.%d", 2 + i / ENG_MAX_PENDING_PER_ADDR);
		idle[i] = raw_connect_from(port, from);
	}
	bench_ok(&fx->srv, key);
	/* The oldest made room: the server shut it; the newest still waits. */
	assert_true(raw_closed(idle[0]));
	pfd = (struct pollfd){.fd = idle[ENG_MAX_PENDING - 1], .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 0), 0);
	for (i = 0; i < ENG_MAX_PENDING; i++)
		close(idle[i]);
}

/* Wait until the time t (rcp_now_ns) or until fd has something to read; true for the latter. */
static bool raw_wait_until(int fd, uint64_t t)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	uint64_t now;

	while ((now = rcp_now_ns()) < t)
		if (poll(&pfd, 1, (int)((t - now) / 1000000) + 1) > 0)
			return true;
	return false;
}

static void test_hello_and_proof_share_one_deadline(void **state)
{
	struct fx *fx = *state;
	uint16_t port;
	char key[4096];
	uint64_t r;
	json_t *m;
	int fd, probe;

	/*
	 * With --timeout 2 s the pre-auth deadline is 2 s after the accept. The
	 * hello comes 0.6 s after the server has surely accepted, the proof 2.2 s
	 * after that: each within --timeout of the one before, both together
	 * not. Whatever the scheduler does, the accept was before the probe's
	 * answer (one thread accepts, in order), so only the timing of the
	 * server's reads can hold the proof against the deadline.
	 */
	keyed_server_start(fx, 2000, key);
	port = (uint16_t)atomic_load(&fx->srv.port);
	fd = raw_connect(port);
	probe = raw_connect(port);
	raw_frame(probe, "GET / HTTP/1.0", 14);
	assert_refused(probe, "not a JSON object");
	r = rcp_now_ns();
	raw_wait_until(fd, r + 600000000ull);
	m = raw_keyed_hello_reply(fd);
	assert_non_null(m);
	if (strcmp(json_string_value(json_object_get(m, "type")) ?: "", "challenge")) {
		json_decref(m);
		close(fd);
		print_message("the server answered the hello too late to tell\n");
		skip();
	}
	json_decref(m);
	/* Had the server given up already, a proof would only meet its close. */
	if (!raw_wait_until(fd, r + 2200000000ull))
		raw_json(fd, json_pack("{s:s, s:s}", "type", "proof", "proof", ZEROS_32));
	assert_refused(fd, "the client did not answer in time (waiting for its 'proof')");
	bench_ok(&fx->srv, key);
}

/*
 * A peer that stops reading the control connection: once its buffers are
 * full a send gives up after the timeout (SO_SNDTIMEO, eng__tcp_tune) with
 * a sentence naming the peer, rather than wait for ever.
 */
static void test_a_peer_that_stops_reading_is_named(void **state)
{
	static char big[60000];
	struct eng_ctl c;
	uint64_t t0;
	int sv[2], err = 0, i;
	json_t *m;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	eng__tcp_tune(sv[0], 300); /* the TCP options do not apply here; the send timeout does */
	c = ENG_CTL_PLAIN(sv[0]);
	c.peer = "the server";
	m = json_pack("{s:s, s:s}", "type", "error", "message", big);
	t0 = rcp_now_ns();
	for (i = 0; i < 1000 && !err; i++) /* 60 MB: far more than the socket holds */
		err = eng__proto_send(&c, m);
	json_decref(m);
	assert_int_equal(err, -ETIMEDOUT);
	assert_non_null(strstr(rcp_err_msg(err), "the server stopped reading"));
	assert_true(rcp_now_ns() - t0 < 10000000000ull);
	close(sv[0]);
	close(sv[1]);
}

/* The CPU time thread t has used, in nanoseconds. */
static uint64_t thread_cpu_ns(pthread_t t)
{
	struct timespec ts;
	clockid_t c;

	assert_int_equal(pthread_getcpuclockid(t, &c), 0);
	assert_int_equal(clock_gettime(c, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A yardstick: a thread that spins until it has had 200 ms of CPU or 3 s
 * have passed, whichever is first. A thread of this process that spins
 * beside it gets about as much CPU, however loaded the host is.
 */
static void *spinner_main(void *arg)
{
	uint64_t *cpu_ns = arg, end = rcp_now_ns() + 3000000000ull;
	uint64_t t0 = thread_cpu_ns(pthread_self());
	volatile unsigned x = 0;
	unsigned i;

	while (rcp_now_ns() < end && thread_cpu_ns(pthread_self()) - t0 < 200000000ull)
		for (i = 0; i < 10000; i++)
			x++;
	*cpu_ns = thread_cpu_ns(pthread_self()) - t0;
	return NULL;
}

static void test_accept_out_of_descriptors_backs_off_and_recovers(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	struct sockaddr_in a = {.sin_family = AF_INET};
	uint64_t spun = 0, before, listener;
	int fill[1024], n = 0, cfd, connected, started, dup_errno;
	struct rlimit saved, low;
	pthread_t t;

	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, NULL);
	a.sin_port = htons((uint16_t)atomic_load(&fx->srv.port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(cfd >= 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	low = saved;
	if (low.rlim_cur > 512)
		low.rlim_cur = 512;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	/* Every descriptor of the process taken, then a connection the server cannot accept. */
	while (n < (int)RCP_ARRAY_SIZE(fill) && (fill[n] = dup(cfd)) >= 0)
		n++;
	dup_errno = errno;
	connected = connect(cfd, (struct sockaddr *)&a, sizeof(a));
	before = thread_cpu_ns(fx->srv.thread);
	started = pthread_create(&t, NULL, spinner_main, &spun);
	if (started == 0)
		pthread_join(t, NULL);
	listener = thread_cpu_ns(fx->srv.thread) - before;
	/* Descriptors back before any assertion: a failure must not starve the tests after it. */
	while (n > 0)
		close(fill[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	assert_int_equal(dup_errno, EMFILE);
	assert_int_equal(connected, 0);
	assert_int_equal(started, 0);
	print_message("the listener had %.1f ms of CPU while a spinning thread had %.1f ms\n",
		      listener / 1e6, spun / 1e6);
	if (spun < 20000000ull)
		skip(); /* the host gave this process too little CPU to tell */
	assert_true(listener * 4 < spun);
	/* Once descriptors are free it accepts the connection that waited, and serves on. */
	raw_frame(cfd, "GET / HTTP/1.0", 14);
	assert_refused(cfd, "not a JSON object");
	bench_ok(&fx->srv, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_stranger_gets_nothing_that_depends_on_the_key),
		T(test_a_proof_is_read_with_the_hello_limit),
		T(test_idle_connections_from_one_address_lock_out_no_one_else),
		T(test_idle_connections_from_many_addresses_lock_out_no_keyed_client),
		T(test_hello_and_proof_share_one_deadline),
		T(test_a_peer_that_stops_reading_is_named),
		T(test_accept_out_of_descriptors_backs_off_and_recovers),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
