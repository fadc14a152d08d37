/*
 * test_session_seal.c - what a proven key protects after authentication
 * (seal.c): every control frame is sealed, so one altered byte in either
 * direction ends the session with a sentence; the tokens that admit RDMA
 * connections are derived on both sides, never sent, and differ per link.
 *
 * Before the seal, the proofs cover the frames that crossed the wire (the
 * hello and the challenge): one rewritten there fails the proofs.
 *
 * Design: a relay thread sits between client and server on the control
 * connection, forwarding whole frames and altering one chosen frame, as an
 * on-path attacker would: one byte flipped, or (before the seal, where the
 * JSON is all the frame holds) a well-formed frame with one key set.
 */
#include "session_harness.h"

#include <limits.h>

/* The relay: the client connects to it; it connects to the server. */
struct relay {
	uint16_t server_port, port;
	int lfd;
	int flip_dir;	      /* the direction of the frame to alter: 0 client to server, 1 back */
	unsigned flip_frame;  /* its number in that direction, from 0; UINT_MAX: none */
	unsigned keep_frame;  /* the server's frame to keep in seen; UINT_MAX: none */
	const char *set_key;  /* instead of flipping a byte: set this key of the JSON... */
	json_int_t set_value; /* ...to this */
	bool redial;	      /* instead: the hello's server, to the one the relay reaches */
	unsigned frames[2];   /* forwarded in each direction */
	json_t *seen;	      /* that frame's JSON */
	pthread_t thread;
};

static bool write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* One frame from one side to the other, altered or recorded when it is the chosen one. */
static bool relay_frame(struct relay *r, int dir, int from, int to)
{
	bool chosen = dir == r->flip_dir && r->frames[dir] == r->flip_frame;
	bool keep = dir == 1 && r->frames[dir] == r->keep_frame;
	uint32_t be, n;
	char *buf;
	bool ok;

	if (!raw_read(from, &be, sizeof(be)))
		return false;
	n = ntohl(be);
	if (n == 0 || n > ENG_PROTO_MAX_FRAME + ENG_SEAL_TAG_LEN || !(buf = malloc(n)))
		return false;
	ok = raw_read(from, buf, n);
	if (ok && keep) /* the JSON is in clear, the tag (if any) after it */
		r->seen = json_loadb(buf, n, JSON_DISABLE_EOF_CHECK, NULL);
	if (ok && chosen && (r->set_key || r->redial)) {
		json_t *m = json_loadb(buf, n, 0, NULL);
		char *text = NULL;

		ok = m &&
		     !(r->redial
			       ? json_object_set_new(json_object_get(m, ENG_KEY_SERVER),
						     ENG_KEY_PORT, json_integer(r->server_port))
			       : json_object_set_new(m, r->set_key, json_integer(r->set_value))) &&
		     (text = json_dumps(m, JSON_COMPACT)) != NULL;
		json_decref(m);
		if (ok) {
			free(buf);
			buf = text;
			n = (uint32_t)strlen(text);
			be = htonl(n);
		}
	} else if (ok && chosen) {
		buf[1] ^= 0x20; /* '"' becomes '\x02' in the JSON: any one byte would do */
	}
	ok = ok && write_full(to, &be, sizeof(be)) && write_full(to, buf, n);
	r->frames[dir]++;
	free(buf);
	return ok;
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(r->server_port)};
	struct pollfd pfd[2];
	int c, s = -1;

	c = accept(r->lfd, NULL, NULL);
	if (c >= 0 && (s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(s);
			s = -1;
		}
	}
	pfd[0] = (struct pollfd){.fd = c, .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = s, .events = POLLIN};
	while (c >= 0 && s >= 0 && poll(pfd, 2, TIMEOUT_MS) > 0) {
		if (pfd[0].revents && !relay_frame(r, 0, c, s))
			break;
		if (pfd[1].revents && !relay_frame(r, 1, s, c))
			break;
	}
	if (c >= 0)
		close(c);
	if (s >= 0)
		close(s);
	return NULL;
}

/* The relay listening on a port of its own, altering nothing, not yet bound to a server. */
static void relay_listen(struct relay *r)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	*r = (struct relay){.flip_frame = UINT_MAX, .keep_frame = UINT_MAX};
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(r->lfd >= 0);
	assert_int_equal(bind(r->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(r->lfd, 1), 0);
	assert_int_equal(getsockname(r->lfd, (struct sockaddr *)&a, &len), 0);
	r->port = ntohs(a.sin_port);
}

/* The relay listening, its thread not yet started: set what it alters, then relay_go. */
static void relay_prepare(struct relay *r, const struct server *srv, int flip_dir,
			  unsigned flip_frame)
{
	relay_listen(r);
	r->server_port = (uint16_t)atomic_load(&srv->port);
	r->flip_dir = flip_dir;
	r->flip_frame = flip_frame;
}

static void relay_go(struct relay *r)
{
	assert_int_equal(pthread_create(&r->thread, NULL, relay_main, r), 0);
}

static void relay_start(struct relay *r, const struct server *srv, int flip_dir,
			unsigned flip_frame)
{
	relay_prepare(r, srv, flip_dir, flip_frame);
	relay_go(r);
}

static void relay_join(struct relay *r)
{
	pthread_join(r->thread, NULL);
	close(r->lfd);
}

static void relay_free(struct relay *r)
{
	json_decref(r->seen);
	r->seen = NULL;
}

/* A bench through the relay; its result. */
static int bench_via(const struct fx *fx, struct relay *r, const char *key, struct eng_report *rep)
{
	static const unsigned one[] = {1};
	struct topo_plan plan;
	struct eng_client_opts o;

	plan_make(&plan, one, 1, 1, 1, BUDGET);
	o = client_opts(&fx->srv, &plan, 64 * KiB, key);
	o.port = r->port;
	o.bench_bytes = 256 * KiB;
	return eng__client_run(&o, rep);
}

/*
 * A keyed server. The client dials the relay's port, which is not the
 * server's: most tests here let the server take a session dialed to any
 * server (any_name) and test the seal; test_a_session_dialed_to_another_
 * server_is_refused tests that check.
 */
static void keyed_server(struct fx *fx, char key[4096])
{
	static const unsigned one[] = {1};

	fx->srv.any_name = fx->srv.names == NULL;
	fx_key(fx, "key", TEST_KEY, key);
	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, NULL, key);
}

/*
 * A bench through a relay that alters frame number frame of direction dir
 * (set_key: that key set to value; NULL: a byte flipped): it must fail, its
 * sentence holding want, and the server must serve the next one.
 */
static void altered_bench_fails(struct fx *fx, const char *key, int dir, unsigned frame,
				const char *set_key, json_int_t value, const char *what,
				const char *want)
{
	struct eng_report rep;
	struct relay r;
	int err;

	relay_prepare(&r, &fx->srv, dir, frame);
	r.set_key = set_key;
	r.set_value = value;
	relay_go(&r);
	err = bench_via(fx, &r, key, &rep);
	relay_join(&r);
	relay_free(&r);
	if (err == 0)
		fail_msg("a session with %s altered succeeded", what);
	if (!strstr(rcp_err_msg(err), want))
		fail_msg("%s altered: %s", what, rcp_err_msg(err));
	bench_ok(&fx->srv, key);
}

/*
 * Frames of a keyed bench, per direction: client to server hello (0), proof
 * (1), done (2); server to client challenge (0), proof (1), welcome (2),
 * result (3). From number 2 on they are sealed.
 */
static void test_an_altered_frame_after_authentication_ends_the_session(void **state)
{
	static const struct {
		int dir;
		unsigned frame;
		const char *what;
	} cases[] = {
		{1, 2, "the server's welcome"},
		{0, 2, "the client's done"},
		{1, 3, "the server's result"},
	};
	struct fx *fx = *state;
	struct eng_report rep;
	struct relay r;
	char key[4096];
	unsigned i;

	keyed_server(fx, key);
	/* The relay itself changes nothing: an untouched session succeeds through it. */
	relay_start(&r, &fx->srv, 0, UINT_MAX);
	assert_int_equal(bench_via(fx, &r, key, &rep), 0);
	relay_join(&r);
	assert_int_equal(r.frames[0], 3);
	assert_int_equal(r.frames[1], 4);
	for (i = 0; i < RCP_ARRAY_SIZE(cases); i++)
		altered_bench_fails(fx, key, cases[i].dir, cases[i].frame, NULL, 0, cases[i].what,
				    "failed its integrity check");
}

/*
 * The hello and the challenge travel before the proofs; rewritten there, as
 * well-formed frames, they must fail the proofs instead of steering the
 * session (the chunk size here; a destination or the fsync flag alike).
 */
static void test_a_rewritten_hello_or_challenge_fails_the_proofs(void **state)
{
	static const struct {
		int dir;
		const char *key;
		json_int_t value;
		const char *what;
	} cases[] = {
		{0, ENG_KEY_CHUNK, 128 * KiB, "the client's hello (its chunk size)"},
		{1, "padding", 1, "the server's challenge (a key added)"},
	};
	struct fx *fx = *state;
	char key[4096];
	unsigned i;

	keyed_server(fx, key);
	for (i = 0; i < RCP_ARRAY_SIZE(cases); i++)
		altered_bench_fails(fx, key, cases[i].dir, 0, cases[i].key, cases[i].value,
				    cases[i].what, "altered on the way");
}

/*
 * A relay that takes a session dialed to one server (here: the relay's own
 * port) to another holding the same key is refused by it, and rewriting
 * the hello to name that other server fails the proofs; the server serves
 * sessions dialed to it, and the names it is given (serve --name).
 */
static void test_a_session_dialed_to_another_server_is_refused(void **state)
{
	struct fx *fx = *state;
	struct eng_report rep;
	struct relay r;
	char key[4096], name[32];
	const char *names[] = {name, NULL};
	int err;

	fx->srv.names = names;
	snprintf(name, sizeof(name), "127.0.0.1:1"); /* a name of no use to the relay */
	keyed_server(fx, key);
	assert_false(fx->srv.any_name);
	relay_start(&r, &fx->srv, 0, UINT_MAX);
	err = bench_via(fx, &r, key, &rep);
	relay_join(&r);
	relay_free(&r);
	if (err == 0 || !strstr(rcp_err_msg(err), "which is not this server"))
		fail_msg("a session moved to another server: %s",
			 err ? rcp_err_msg(err) : "served");
	relay_prepare(&r, &fx->srv, 0, 0);
	r.redial = true;
	relay_go(&r);
	err = bench_via(fx, &r, key, &rep);
	relay_join(&r);
	relay_free(&r);
	if (err == 0 || !strstr(rcp_err_msg(err), "altered on the way"))
		fail_msg("the hello's server rewritten: %s", err ? rcp_err_msg(err) : "served");
	bench_ok(&fx->srv, key);
	assert_int_equal(server_stop(&fx->srv), 0);

	/* Given the relay's address as a name of its own, the server takes the session. */
	relay_listen(&r);
	snprintf(name, sizeof(name), "127.0.0.1:%u", r.port);
	keyed_server(fx, key);
	r.server_port = (uint16_t)atomic_load(&fx->srv.port);
	relay_go(&r);
	assert_int_equal(bench_via(fx, &r, key, &rep), 0);
	relay_join(&r);
	relay_free(&r);
	fx->srv.names = NULL;
}

/*
 * Keyless, the tokens travel in the welcome (there is no secret to derive
 * them from; the server serves its own user on loopback only). Keyed, both
 * sides derive them and the welcome carries none.
 */
static void test_a_keyed_welcome_carries_no_token(void **state)
{
	static const unsigned one[] = {1};
	struct fx *fx = *state;
	struct eng_report rep;
	struct relay r;
	char key[4096];
	const char *hex;

	plan_make(&fx->srv.plan, one, 1, 1, 1, BUDGET);
	fx->srv.any_name = true; /* the client dials the relay */
	server_start(&fx->srv, NULL, NULL, NULL);
	relay_start(&r, &fx->srv, 0, UINT_MAX);
	r.keep_frame = 0; /* keyless, the welcome is the server's first frame */
	assert_int_equal(bench_via(fx, &r, NULL, &rep), 0);
	relay_join(&r);
	assert_non_null(r.seen);
	assert_string_equal(json_string_value(json_object_get(r.seen, "type")), "welcome");
	hex = json_string_value(json_object_get(r.seen, "token"));
	assert_non_null(hex);
	assert_int_equal(strlen(hex), 2 * ENG_SEAL_KEY_LEN);
	relay_free(&r);
	assert_int_equal(server_stop(&fx->srv), 0);

	keyed_server(fx, key);
	relay_start(&r, &fx->srv, 0, UINT_MAX);
	r.keep_frame = 2; /* after the challenge and the proof */
	assert_int_equal(bench_via(fx, &r, key, &rep), 0);
	relay_join(&r);
	assert_non_null(r.seen);
	assert_string_equal(json_string_value(json_object_get(r.seen, "type")), "welcome");
	assert_null(json_object_get(r.seen, "token"));
	relay_free(&r);
}

/*
 * The sniffing transport: the loopback, but the client's second connection
 * request carries the token its first one carried, as someone who saw the
 * first request on the wire would send it for another stripe.
 */
static struct {
	struct eng_transport tr;
	unsigned calls;
	uint64_t seen;
} sniff;

static int sniff_connect(struct eng_conn *c, struct eng_link *l, const union eng_sockaddr *src,
			 const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	if (sniff.calls++ == 0)
		sniff.seen = l->token;
	else
		l->token = sniff.seen;
	return eng__transport_loopback()->connect(c, l, src, dst, peer_link, timeout_ms);
}

static void test_a_sniffed_token_admits_no_other_stripe(void **state)
{
	static const unsigned one[] = {1};
	struct fx *fx = *state;
	struct eng_client_opts o;
	struct topo_plan plan;
	struct eng_report rep;
	char key[4096];
	int err;

	keyed_server(fx, key);
	plan_make(&plan, one, 1, 2, 1, BUDGET); /* two stripes on one rail */
	sniff.tr = *eng__transport_loopback();
	sniff.tr.connect = sniff_connect;
	sniff.calls = 0;
	o = client_opts(&fx->srv, &plan, 64 * KiB, key);
	o.tr = &sniff.tr;
	o.bench_bytes = 256 * KiB;
	/* Without failover the refusal ends the session (with it, the stripe is left out). */
	o.no_failover = true;
	err = eng__client_run(&o, &rep);
	assert_int_equal(sniff.calls, 2);
	/* The server refuses the request (the loopback's refusal is -EPERM). */
	if (err != -EPERM)
		fail_msg("a stripe with another's token: %d, %s", err, rcp_err_msg(err));
	/* The same client, its own tokens: served. */
	o.tr = eng__transport_loopback();
	o.no_failover = false;
	assert_int_equal(eng__client_run(&o, &rep), 0);
}

static void test_tokens_differ_per_link_and_both_sides_derive_the_same_keys(void **state)
{
	uint8_t cc[ENG_AUTH_CHALLENGE_LEN], cs[ENG_AUTH_CHALLENGE_LEN];
	uint8_t tc[ENG_SEAL_KEY_LEN], ts[ENG_SEAL_KEY_LEN], t2[ENG_SEAL_KEY_LEN];
	struct eng_auth_key k = {.len = sizeof(TEST_KEY) - 1};
	struct eng_ctl c = ENG_CTL_PLAIN(-1), s = ENG_CTL_PLAIN(-1), c2 = ENG_CTL_PLAIN(-1);

	(void)state;
	memcpy(k.bytes, TEST_KEY, k.len);
	assert_int_equal(eng__auth_challenge(cc), 0);
	assert_int_equal(eng__auth_challenge(cs), 0);
	assert_int_equal(eng__seal_keys(&k, ENG_AUTH_CLIENT, cc, cs, &c, tc), 0);
	assert_int_equal(eng__seal_keys(&k, ENG_AUTH_SERVER, cc, cs, &s, ts), 0);
	assert_true(c.sealed && s.sealed);
	/* What one side seals with, the other opens with; the directions differ. */
	assert_memory_equal(c.key_out, s.key_in, ENG_SEAL_KEY_LEN);
	assert_memory_equal(c.key_in, s.key_out, ENG_SEAL_KEY_LEN);
	assert_memory_not_equal(c.key_out, c.key_in, ENG_SEAL_KEY_LEN);
	assert_memory_equal(tc, ts, ENG_SEAL_KEY_LEN);
	/* Another session (a fresh challenge) has other keys and tokens. */
	cs[0] ^= 1;
	assert_int_equal(eng__seal_keys(&k, ENG_AUTH_CLIENT, cc, cs, &c2, t2), 0);
	assert_memory_not_equal(c.key_out, c2.key_out, ENG_SEAL_KEY_LEN);
	assert_memory_not_equal(tc, t2, ENG_SEAL_KEY_LEN);
	/* One token per link and one for the job, none derivable from another. */
	assert_int_not_equal(eng__seal_token(tc, ENG_TOKEN_LINK, 0),
			     eng__seal_token(tc, ENG_TOKEN_LINK, 1));
	assert_int_not_equal(eng__seal_token(tc, ENG_TOKEN_LINK, 0),
			     eng__seal_token(tc, ENG_TOKEN_JOB, 0));
	assert_int_equal(eng__seal_token(tc, ENG_TOKEN_LINK, 1),
			 eng__seal_token(ts, ENG_TOKEN_LINK, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_an_altered_frame_after_authentication_ends_the_session),
		T(test_a_rewritten_hello_or_challenge_fails_the_proofs),
		T(test_a_session_dialed_to_another_server_is_refused),
		T(test_a_keyed_welcome_carries_no_token),
		T(test_a_sniffed_token_admits_no_other_stripe),
		cmocka_unit_test(test_tokens_differ_per_link_and_both_sides_derive_the_same_keys),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
