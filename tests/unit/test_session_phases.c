/*
 * test_session_phases.c - no wait without an end: one peer goes silent,
 * stopping without closing, at each phase of a session (hello, auth,
 * manifest, connect, data, finish), in both directions, and the other side
 * must end within its documented limit plus a margin, with one sentence
 * naming what it waited for. A server that ended so serves the next session
 * and leaves no temporary in its root.
 *
 * Design: the client talks to the server through a relay, a thread that
 * forwards whole control frames. For a control phase the relay makes one
 * side silent: it swallows that side's frames from the first of a given
 * type on, and its close too, while the other side's connection stays
 * open; to the other side that is a peer that stopped (as under SIGSTOP,
 * whose kernel still holds the connection). For connect and data the silent
 * side's transport holds instead: its rdma_cm step (the loopback's connect
 * or accept_all) or, mid-job, its worker (the CQ poll frozen), while its
 * session thread goes on. The relay also keeps the server's own error
 * frame and when the server closed: that is how a server that ended is
 * heard and timed. Both sides run the real engine; sessions are keyed, so
 * the relay reads sealed frames (JSON, then the tag).
 *
 * Threading: the server and its sessions, the relay, the client on a thread
 * of its own; the test's thread waits and asserts, after it has released
 * whatever it held and joined its threads.
 */
#include "session_harness.h"

/* The waiting side's --timeout, in whole seconds (the sentences round down). */
#define SHORT_MS 2000
/* The silent side's: far beyond every limit below, so it cannot end first. */
#define LONG_MS 30000
/* The stall limit in the data phase (the job's stall_ms; ENG_STALL_MS otherwise). */
#define STALL_MS 2000
/* What a loaded two-core host may add to a limit: generous, still below LONG_MS. */
#define MARGIN_MS 5000
/* A hold gives up after this, so a broken test fails rather than hangs. */
#define HOLD_MAX_NS 40000000000ull
/* The data phase freezes the silent side once it has done this many chunks. */
#define FREEZE_AFTER 8
#define BIG_SIZE (2 * MiB + 100)

enum job_kind { J_BENCH, J_PUSH, J_PULL };
enum hold { H_NONE, H_CONNECT, H_DATA };

struct phase {
	enum job_kind job;
	bool server_silent; /* else the client is */
	const char *cut;    /* the relay: silent from the first frame of this type ("": any) */
	enum hold hold;	    /* or the transport holds the silent side */
	int limit_ms;	    /* the waiting side's documented limit */
	const char *said;   /* what its sentence says */
};

static uint64_t ns_since(uint64_t t0, uint64_t t1)
{
	return t1 > t0 ? t1 - t0 : 0;
}

/* ---- the relay ---- */

struct relay_dir {
	uint8_t *buf;
	size_t len, cap;
	bool silent, closed;
};

struct relay {
	int lfd, cfd, sfd;
	uint16_t port, server_port;
	int silent_dir; /* 0: client to server, 1: server to client, -1: none */
	const char *cut;
	pthread_t thread;
	_Atomic bool quit;
	_Atomic uint64_t t_cut;		  /* when the first frame was swallowed */
	_Atomic uint64_t t_server_error;  /* when the server's first "error" passed */
	_Atomic uint64_t t_server_closed; /* when the server closed its end */
	char server_said[512];		  /* that error's message, set before t_server_error */
	struct relay_dir d[2];
};

static int relay_fd(const struct relay *r, int dir, bool src)
{
	return (dir == 0) == src ? r->cfd : r->sfd;
}

/* One whole frame from dir's source: note it, then forward or swallow it. */
static void relay_frame(struct relay *r, int dir, const uint8_t *frame, size_t len)
{
	struct relay_dir *d = &r->d[dir];
	json_t *m = json_loadb((const char *)frame + 4, len - 4, JSON_DISABLE_EOF_CHECK, NULL);
	const char *type = json_string_value(json_object_get(m, "type"));

	if (!d->silent && dir == r->silent_dir && r->cut &&
	    (!r->cut[0] || (type && !strcmp(type, r->cut)))) {
		d->silent = true;
		atomic_store(&r->t_cut, rcp_now_ns());
	}
	if (dir == 1 && type && !strcmp(type, "error") && !atomic_load(&r->t_server_error)) {
		snprintf(r->server_said, sizeof(r->server_said), "%s",
			 json_string_value(json_object_get(m, "message")) ?: "?");
		atomic_store(&r->t_server_error, rcp_now_ns());
	}
	json_decref(m);
	if (!d->silent)
		(void)!send(relay_fd(r, dir, false), frame, len, MSG_NOSIGNAL);
}

/* Bytes from dir's source: whole frames go on, the rest waits. */
static void relay_bytes(struct relay *r, int dir, const uint8_t *p, size_t n)
{
	struct relay_dir *d = &r->d[dir];
	uint32_t be;
	size_t len;

	if (d->len + n > d->cap) {
		d->cap = (d->len + n) * 2;
		d->buf = realloc(d->buf, d->cap);
		if (!d->buf)
			abort(); /* not on the test's thread: no cmocka here */
	}
	memcpy(d->buf + d->len, p, n);
	d->len += n;
	while (d->len >= 4) {
		memcpy(&be, d->buf, 4);
		len = 4 + (size_t)ntohl(be);
		if (d->len < len)
			break;
		relay_frame(r, dir, d->buf, len);
		memmove(d->buf, d->buf + len, d->len - len);
		d->len -= len;
	}
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	struct pollfd pfd[2] = {{.fd = r->lfd, .events = POLLIN}};
	static _Thread_local uint8_t tmp[65536];
	int dir;

	while (!atomic_load(&r->quit) && poll(pfd, 1, 50) <= 0)
		;
	if (atomic_load(&r->quit) || (r->cfd = accept(r->lfd, NULL, NULL)) < 0)
		return NULL;
	r->sfd = raw_connect(r->server_port);
	while (!atomic_load(&r->quit)) {
		for (dir = 0; dir < 2; dir++)
			pfd[dir] = (struct pollfd){.fd = r->d[dir].closed ? -1
									  : relay_fd(r, dir, true),
						   .events = POLLIN};
		if (poll(pfd, 2, 50) <= 0)
			continue;
		for (dir = 0; dir < 2; dir++) {
			ssize_t n;

			if (!pfd[dir].revents)
				continue;
			n = recv(pfd[dir].fd, tmp, sizeof(tmp), 0);
			if (n > 0) {
				relay_bytes(r, dir, tmp, (size_t)n);
				continue;
			}
			r->d[dir].closed = true;
			if (dir == 1)
				atomic_store(&r->t_server_closed, rcp_now_ns());
			if (!r->d[dir].silent) /* a silent side's close is swallowed too */
				shutdown(relay_fd(r, dir, false), SHUT_WR);
		}
	}
	return NULL;
}

static void relay_start(struct relay *r, uint16_t server_port, int silent_dir, const char *cut)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);

	*r = (struct relay){.cfd = -1,
			    .sfd = -1,
			    .server_port = server_port,
			    .silent_dir = silent_dir,
			    .cut = cut};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(r->lfd >= 0);
	assert_int_equal(bind(r->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(r->lfd, 4), 0);
	assert_int_equal(getsockname(r->lfd, (struct sockaddr *)&a, &len), 0);
	r->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&r->thread, NULL, relay_main, r), 0);
}

/* Both ends see the connection close. */
static void relay_stop(struct relay *r)
{
	atomic_store(&r->quit, true);
	pthread_join(r->thread, NULL);
	if (r->cfd >= 0)
		close(r->cfd);
	if (r->sfd >= 0)
		close(r->sfd);
	close(r->lfd);
	free(r->d[0].buf);
	free(r->d[1].buf);
}

/* ---- the transports: the loopback, held at one step on the silent side ---- */

static struct {
	enum hold hold;
	unsigned stall_ms; /* every job's, when set */
	_Atomic bool release;
	_Atomic uint64_t t_held; /* when the hold began */
	/* The silent side's (data); atomic: a session's workers read it while the next one's is
	 * set. */
	struct eng_job *_Atomic job;
	const struct eng_tr_ops *cq_ops;
	struct eng_tr_ops frozen;
} hk;

static struct eng_transport silent_tr, waiting_tr;

/* Hold the calling thread until released (or, in vain, HOLD_MAX_NS). */
static void hold(void)
{
	uint64_t none = 0, end = rcp_now_ns() + HOLD_MAX_NS;

	atomic_compare_exchange_strong(&hk.t_held, &none, rcp_now_ns());
	while (!atomic_load(&hk.release) && rcp_now_ns() < end)
		usleep(1000);
}

/* The silent side's worker, frozen mid-job: it neither reaps nor posts, as if stopped. */
static int frozen_poll(struct eng_cq *cq, struct eng_wc *wc, int max)
{
	if (eng__job_done_chunks(atomic_load(&hk.job)) >= FREEZE_AFTER)
		hold();
	return hk.cq_ops->poll(cq, wc, max);
}

static int any_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_job *job = ((struct eng_stripe *)cfg->link[0])->job; /* as session_gate.h */

	if (hk.stall_ms)
		job->stall_ms = hk.stall_ms;
	return eng__transport_loopback()->conn_create(cfg, conn_out);
}

static int silent_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	unsigned i, k;
	int err = any_conn_create(cfg, conn_out);

	if (err || hk.hold != H_DATA)
		return err;
	atomic_store(&hk.job, ((struct eng_stripe *)cfg->link[0])->job);
	for (i = 0; i < cfg->n_workers; i++)
		for (k = 0; k < cfg->worker[i]->n_cqs; k++) {
			hk.cq_ops = cfg->worker[i]->cq[k]->ops;
			hk.frozen = *hk.cq_ops;
			hk.frozen.poll = frozen_poll;
			cfg->worker[i]->cq[k]->ops = &hk.frozen;
		}
	return 0;
}

static int silent_connect(struct eng_conn *conn, struct eng_link *l, const union eng_sockaddr *src,
			  const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	if (hk.hold == H_CONNECT)
		hold();
	return eng__transport_loopback()->connect(conn, l, src, dst, peer_link, timeout_ms);
}

static int silent_accept_all(struct eng_conn *conn, int ctl_fd, int timeout_ms)
{
	if (hk.hold == H_CONNECT)
		hold();
	return eng__transport_loopback()->accept_all(conn, ctl_fd, timeout_ms);
}

static void transports_arm(const struct phase *ph)
{
	hk.hold = ph->hold;
	hk.stall_ms = ph->hold == H_DATA ? STALL_MS : 0;
	atomic_store(&hk.job, NULL);
	atomic_store(&hk.release, false);
	atomic_store(&hk.t_held, 0);
	waiting_tr = *eng__transport_loopback();
	waiting_tr.conn_create = any_conn_create;
	silent_tr = waiting_tr;
	silent_tr.name = "held loopback";
	silent_tr.conn_create = silent_conn_create;
	silent_tr.connect = silent_connect;
	silent_tr.accept_all = silent_accept_all;
}

/* ---- the client, on a thread of its own ---- */

struct client {
	struct eng_client_opts o;
	struct eng_copy_opts cp;
	const char *src[1];
	struct topo_plan plan;
	pthread_t thread;
	int err;
	char said[512];
	_Atomic uint64_t t_end;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct eng_report r;

	c->err = eng__client_run(&c->o, &r);
	snprintf(c->said, sizeof(c->said), "%s", c->err ? rcp_err_msg(c->err) : "");
	atomic_store(&c->t_end, rcp_now_ns());
	return NULL;
}

static void client_start(struct client *c, const struct phase *ph, uint16_t port, const char *key,
			 const char *big, const char *dst)
{
	static const unsigned rails[] = {1};

	memset(c, 0, sizeof(*c));
	plan_make(&c->plan, rails, 1, 1, 1, BUDGET);
	c->o = (struct eng_client_opts){.host = "127.0.0.1",
					.port = port,
					.chunk = 4 * KiB,
					.plan = &c->plan,
					.timeout_ms = ph->server_silent ? SHORT_MS : LONG_MS,
					.key_file = key,
					.tr = ph->server_silent ? &waiting_tr : &silent_tr};
	if (ph->job == J_BENCH) {
		c->o.bench_bytes = BIG_SIZE;
	} else {
		c->src[0] = ph->job == J_PUSH ? big : "big";
		c->cp = copy_opts(ph->job == J_PUSH ? ENG_PUSH : ENG_PULL, c->src, 1,
				  ph->job == J_PUSH ? "" : dst);
		c->cp.timeout_ms = c->o.timeout_ms;
		c->o.copy = &c->cp;
	}
	assert_int_equal(pthread_create(&c->thread, NULL, client_main, c), 0);
}

/* ---- one phase ---- */

/* Wait until *t is set, up to limit + margin and 10 s more: what it took from t0, or 0. */
static uint64_t end_wait(const _Atomic uint64_t *t, const _Atomic uint64_t *t0, int limit_ms)
{
	uint64_t give_up = rcp_now_ns() + (uint64_t)(limit_ms + MARGIN_MS + 10000) * 1000000ull;

	while (!atomic_load(t) && rcp_now_ns() < give_up)
		usleep(1000);
	if (!atomic_load(t) || !atomic_load(t0))
		return 0;
	return ns_since(atomic_load(t0), atomic_load(t));
}

static void phase_run(struct fx *fx, const struct phase *ph)
{
	static const unsigned rails[] = {1};
	static struct relay rl;
	static struct client cl;
	const char *who = ph->server_silent ? "the client" : "the server";
	char src[4096], root[4096], dst[4096], big[4096], key[4096], said[512];
	uint64_t took;
	int limit_ms = ph->limit_ms;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	fx_dir(fx, "dst", dst);
	pattern_write(src, "big", BIG_SIZE, 1);
	t_path(big, src, "big");
	if (ph->job == J_PULL)
		pattern_write(root, "big", BIG_SIZE, 2);
	fx_key(fx, "key", TEST_KEY, key);
	transports_arm(ph);
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	fx->srv.timeout_ms = ph->server_silent ? LONG_MS : SHORT_MS;
	fx->srv.any_name = true; /* the client dials the relay */
	server_start(&fx->srv, ph->server_silent ? &silent_tr : &waiting_tr, root, key);
	relay_start(&rl, (uint16_t)atomic_load(&fx->srv.port),
		    ph->hold		? -1
		    : ph->server_silent ? 1
					: 0,
		    ph->cut);
	client_start(&cl, ph, rl.port, key, big, dst);
	/* The waiting side's end: the client's return, or the server's close. */
	if (ph->server_silent)
		took = end_wait(&cl.t_end, ph->hold ? &hk.t_held : &rl.t_cut, limit_ms);
	else
		took = end_wait(&rl.t_server_closed, ph->hold ? &hk.t_held : &rl.t_cut, limit_ms);
	/* Everything let go before any assertion: the silent side ends on the close. */
	atomic_store(&hk.release, true);
	relay_stop(&rl);
	pthread_join(cl.thread, NULL);
	snprintf(said, sizeof(said), "%s", ph->server_silent ? cl.said : rl.server_said);
	print_message("%s ended %.2f s after its peer went silent (limit %.1f s): %s\n", who,
		      took / 1e9, limit_ms / 1e3, said);
	if (!took)
		fail_msg("%s did not end within %d ms", who, limit_ms + MARGIN_MS + 10000);
	if (took > (uint64_t)(limit_ms + MARGIN_MS) * 1000000ull)
		fail_msg("%s took %.2f s, beyond its limit of %.1f s and a margin of %d s", who,
			 took / 1e9, limit_ms / 1e3, MARGIN_MS / 1000);
	/* Its own deadline ended it, not something sooner. */
	if (took < (uint64_t)limit_ms * 1000000ull / 2)
		fail_msg("%s ended after %.2f s, well before its limit", who, took / 1e9);
	if (!strstr(said, ph->said))
		fail_msg("%s said \"%s\", not \"%s\"", who, said, ph->said);
	assert_null(strchr(said, '\n')); /* one sentence */
	/* The server serves on; once its sessions ended, nothing temporary is left. */
	bench_ok(&fx->srv, key);
	assert_int_equal(server_stop(&fx->srv), 0);
	assert_int_equal(t_count_tmp(root), 0);
}

/* The server's limits: before the proof, min(--timeout, ENG_PREAUTH_MS) from the accept. */
#define PREAUTH_MS (SHORT_MS < ENG_PREAUTH_MS ? SHORT_MS : ENG_PREAUTH_MS)
/* In the data phase: the stall, then a wait for the peer's own reason. */
#define DATA_MS (STALL_MS + ENG_PEER_REASON_MS)

#define PHASE_TEST(name, ...)                                                                      \
	static void name(void **state)                                                             \
	{                                                                                          \
		static const struct phase ph = {__VA_ARGS__};                                      \
                                                                                                   \
		phase_run(*state, &ph);                                                            \
	}

/* hello: the server never answers it; the client never sends it. */
PHASE_TEST(test_hello_server_silent, J_BENCH, true, "", H_NONE, SHORT_MS,
	   "the server did not answer in time (waiting for its 'challenge')")
PHASE_TEST(test_hello_client_silent, J_BENCH, false, "", H_NONE, PREAUTH_MS,
	   "the client did not answer in time (waiting for its 'hello')")
/* auth: each side's proof withheld. */
PHASE_TEST(test_auth_server_silent, J_BENCH, true, "proof", H_NONE, SHORT_MS,
	   "the server did not answer in time (waiting for its 'proof')")
PHASE_TEST(test_auth_client_silent, J_BENCH, false, "proof", H_NONE, PREAUTH_MS,
	   "the client did not answer in time (waiting for its 'proof')")
/* manifest: a push's file list (the server never takes it, the client never sends it)... */
PHASE_TEST(test_push_manifest_server_silent, J_PUSH, true, "ready", H_NONE, SHORT_MS,
	   "the server did not answer in time (waiting for its 'ready')")
PHASE_TEST(test_push_manifest_client_silent, J_PUSH, false, "manifest", H_NONE, SHORT_MS,
	   "the client did not answer in time (waiting for its 'manifest')")
/* ...and a pull's (its sources, then the server's file list). */
PHASE_TEST(test_pull_manifest_server_silent, J_PULL, true, "manifest", H_NONE, SHORT_MS,
	   "the server did not answer in time (waiting for its 'manifest')")
PHASE_TEST(test_pull_manifest_client_silent, J_PULL, false, "sources", H_NONE, SHORT_MS,
	   "the client did not answer in time (waiting for its 'sources')")
/* connect: the server never accepts the stripes; the client never connects them. */
PHASE_TEST(test_connect_server_silent, J_PUSH, true, NULL, H_CONNECT, SHORT_MS,
	   "no answer within 2 s")
PHASE_TEST(test_connect_client_silent, J_PUSH, false, NULL, H_CONNECT, SHORT_MS,
	   "waiting for the client's RDMA connections: no answer within 2 s")
/* data: the receiver's worker frozen mid-push, then the sender's. */
PHASE_TEST(test_data_server_silent, J_PUSH, true, NULL, H_DATA, DATA_MS,
	   "no completion for 2 s: the peer or the fabric stalled")
PHASE_TEST(test_data_client_silent, J_PUSH, false, NULL, H_DATA, DATA_MS,
	   "no completion for 2 s: the peer or the fabric stalled")
/* finish: the receiver's "result" withheld, then the sender's "done". */
PHASE_TEST(test_finish_server_silent, J_PUSH, true, "result", H_NONE, SHORT_MS,
	   "the server did not answer in time (waiting for its 'result')")
PHASE_TEST(test_finish_client_silent, J_PUSH, false, "done", H_NONE, SHORT_MS,
	   "the client did not answer in time (waiting for its 'done')")

/* Optional argument: run only the tests whose names match it (cmocka's filter). */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_hello_server_silent),	     T(test_hello_client_silent),
		T(test_auth_server_silent),	     T(test_auth_client_silent),
		T(test_push_manifest_server_silent), T(test_push_manifest_client_silent),
		T(test_pull_manifest_server_silent), T(test_pull_manifest_client_silent),
		T(test_connect_server_silent),	     T(test_connect_client_silent),
		T(test_data_server_silent),	     T(test_data_client_silent),
		T(test_finish_server_silent),	     T(test_finish_client_silent),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
