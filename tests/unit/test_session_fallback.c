/*
 * test_session_fallback.c - when every RDMA rail fails mid-copy, the copy
 * goes on over tcp (engine/session/fallback.c): whole sessions, the real
 * client and server code in one process, the loopback fabric playing the
 * RDMA end (every client endpoint made to fail after some posts, through a
 * copy of the loopback transport) and real TCP on 127.0.0.1 (rail "lo")
 * the fallback. A push and a pull of a tree with files of many chunks
 * arrive whole, the tcp session sending less than the whole (what landed
 * was kept and confirmed), one notice line, the report naming the
 * fallback; a server serving once waits for the second session; without
 * failover, or at a server with no TCP plan, the copy fails with the
 * sentence; a copy that fails for another reason leaves no partial file
 * and no temporary, and leaves alone what an earlier --partial copy kept.
 *
 * Threading: the server's threads; what the hooks share is atomic.
 */
#include "session_harness.h"

#include "engine/session/fallback.h"
#include "engine/transport/loopback.h"

#include <inttypes.h>

#define FB_CHUNK (4 * KiB)
#define FB_BUDGET (2ull * 8 * FB_CHUNK) /* 8 slots of 4 KiB per stripe */
#define FB_AFTER 20			/* the post of each client endpoint that fails */
#define FB_HOLD_AT 20			/* the chunk at which a receiver stops for a cancel */
#define FB_ONCE_MS 2000			/* a server serving once: its --timeout */

static const struct {
	const char *rel;
	size_t len;
} fb_file[] = {
	{"top/big.bin", 256 * KiB + 17},
	{"top/sub/mid.bin", 96 * KiB},
	{"top/small.txt", 3000},
	{"top/empty", 0},
};

typedef int (*prepare_fn)(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
			  struct io_op *op);

static _Atomic unsigned fb_after;   /* arm each client endpoint with this (0: none) */
static _Atomic unsigned fb_armed;   /* endpoints armed */
static _Atomic bool fb_hold;	    /* the receiver cancels the copy at FB_HOLD_AT */
static _Atomic unsigned fb_landed;  /* chunks the receiver prepared */
static _Atomic bool fb_cancel;	    /* the client's cancel flag */
static _Atomic unsigned fb_slow_ms; /* the receiver stops this long at FB_HOLD_AT */
static _Atomic prepare_fn fb_real;  /* the receiver's own prepare */
static _Atomic unsigned fb_notices; /* "going on over tcp" lines */
static struct eng_transport fb_tr;

static int holding_prepare(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
			   struct io_op *op)
{
	unsigned n = atomic_fetch_add(&fb_landed, 1) + 1;

	if (n == FB_HOLD_AT && atomic_load(&fb_hold)) {
		atomic_store(&fb_cancel, true);
		usleep(300 * 1000); /* the client sees it and fails the copy meanwhile */
	} else if (n == FB_HOLD_AT && atomic_load(&fb_slow_ms)) {
		usleep(atomic_load(&fb_slow_ms) * 1000u);
	}
	return atomic_load(&fb_real)(ctx, hdr, data, op);
}

static _Atomic unsigned fb_teardown_ms;	     /* the receiver's connections take this to go */
static struct eng_conn *_Atomic fb_rcv_conn; /* the receiver's, last made */

static int fb_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_job *job = ((struct eng_stripe *)cfg->link[0])->job; /* datapath_int.h */
	int err;

	if (job->role == ENG_RECEIVER && job->rcv.sink.prepare != holding_prepare) {
		atomic_store(&fb_real, job->rcv.sink.prepare);
		job->rcv.sink.prepare = holding_prepare;
	}
	err = eng__transport_loopback()->conn_create(cfg, conn_out);
	if (!err && job->role == ENG_RECEIVER)
		atomic_store(&fb_rcv_conn, *conn_out);
	return err;
}

/* A receiver's connections going slowly, as RDMA's deregistrations and disconnects can. */
static void fb_conn_destroy(struct eng_conn *c)
{
	if (c && c == atomic_load(&fb_rcv_conn) && atomic_load(&fb_teardown_ms))
		usleep(atomic_load(&fb_teardown_ms) * 1000u);
	eng__transport_loopback()->conn_destroy(c);
}

static int fb_connect(struct eng_conn *c, struct eng_link *l, const union eng_sockaddr *src,
		      const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	int err = eng__transport_loopback()->connect(c, l, src, dst, peer_link, timeout_ms);

	if (!err && atomic_load(&fb_after)) {
		eng__loop_inject_error(l->ep, atomic_load(&fb_after));
		atomic_fetch_add(&fb_armed, 1);
	}
	return err;
}

static _Atomic unsigned fb_setup_notices; /* "no RDMA rail connected" lines */

static void notice_line(const char *line, void *ctx)
{
	(void)ctx;
	if (strstr(line, "every RDMA rail failed after ") &&
	    strstr(line, "MiB: going on over tcp (--transport auto)"))
		atomic_fetch_add(&fb_notices, 1);
	if (strstr(line, "no RDMA rail connected: going over tcp (--transport auto)"))
		atomic_fetch_add(&fb_setup_notices, 1);
}

/* A plan on rail "lo" of qps stripes: the TCP plan of either end. */
static void plan_lo(struct topo_plan *p, unsigned qps)
{
	static const unsigned num[] = {0};

	plan_make(p, num, 1, qps, 1, BUDGET);
	snprintf(p->rail[0].dev, sizeof(p->rail[0].dev), "lo");
}

struct fb {
	char src[4096], root[4096], back[4096];
	struct topo_plan plan, plan_tcp, srv_tcp;
	unsigned tcp_qps;	 /* the client's TCP plan's stripes; 0: 2 */
	uint64_t srv_tcp_budget; /* the server's TCP plan's buffer; 0: BUDGET */
	bool no_failover, srv_tcp_none, partial;
	int once_ms; /* a server serving once: its --timeout; 0: FB_ONCE_MS */
};

static uint64_t fb_bytes(void)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(fb_file); i++)
		n += fb_file[i].len;
	return n;
}

static void fb_tree(const char *base)
{
	char p[4096];
	size_t i;

	t_path(p, base, "top");
	assert_int_equal(mkdir(p, 0755), 0);
	t_path(p, base, "top/sub");
	assert_int_equal(mkdir(p, 0755), 0);
	for (i = 0; i < RCP_ARRAY_SIZE(fb_file); i++)
		pattern_write(base, fb_file[i].rel, fb_file[i].len, 40 + (uint32_t)i);
}

/* The trees, and a server over fb_tr on loop0 and loop1 that serves tcp on "lo" too. */
static void fb_start(struct fx *fx, struct fb *f, bool once)
{
	static const unsigned rails[] = {0, 1};

	fx_dir(fx, "src", f->src);
	fx_dir(fx, "root", f->root);
	fx_dir(fx, "back", f->back);
	fb_tree(f->src);
	fb_tree(f->root);
	fb_tr = *eng__transport_loopback();
	fb_tr.name = "failing loopback";
	fb_tr.conn_create = fb_conn_create;
	fb_tr.connect = fb_connect;
	fb_tr.conn_destroy = fb_conn_destroy;
	atomic_store(&fb_teardown_ms, 0);
	atomic_store(&fb_rcv_conn, NULL);
	atomic_store(&fb_after, 0);
	atomic_store(&fb_armed, 0);
	atomic_store(&fb_hold, false);
	atomic_store(&fb_landed, 0);
	atomic_store(&fb_cancel, false);
	atomic_store(&fb_notices, 0);
	atomic_store(&fb_setup_notices, 0);
	/* Serving once: the first session outlasts the server's wait for a client. */
	atomic_store(&fb_slow_ms, once ? FB_ONCE_MS + 300 : 0);
	fx->srv.timeout_ms = !once ? 0 : f->once_ms ? f->once_ms : FB_ONCE_MS;
	plan_lo(&f->srv_tcp, 2);
	if (f->srv_tcp_budget)
		f->srv_tcp.worker[0].buffer_bytes = f->srv_tcp_budget;
	plan_lo(&f->plan_tcp, f->tcp_qps ? f->tcp_qps : 2);
	plan_make(&fx->srv.plan, rails, 2, 1, 1, FB_BUDGET);
	fx->srv.plan_tcp = f->srv_tcp_none ? NULL : &f->srv_tcp;
	fx->srv.once = once;
	server_start(&fx->srv, &fb_tr, f->root, NULL);
	plan_make(&f->plan, rails, 2, 1, 2, FB_BUDGET);
}

/* Push src/top into the root, or pull root/top into back, on auto that chose rdma. */
static int fb_copy(struct fx *fx, struct fb *f, enum eng_copy_dir dir, struct eng_report *r)
{
	char top[4096];
	const char *push_src[] = {top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp;
	struct eng_client_opts o;
	struct log_tap tap;
	int err;

	t_path(top, f->src, "top");
	cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "sent")
			     : copy_opts(ENG_PULL, pull_src, 1, f->back);
	cp.chunk = FB_CHUNK;
	cp.no_failover = f->no_failover;
	cp.partial = f->partial;
	cp.cancel = &fb_cancel;
	o = client_opts(&fx->srv, &f->plan, cp.chunk, NULL);
	o.copy = &cp;
	o.tr = &fb_tr;
	o.plan_tcp = &f->plan_tcp;
	o.no_failover = f->no_failover;
	memset(r, 0, sizeof(*r));
	log_tap_start(&tap, notice_line, NULL);
	err = eng__client_run(&o, r);
	log_tap_stop(&tap);
	return err;
}

/* The copy's destination: the server's root/sent for a push, back for a pull. */
static void fb_dst(const struct fb *f, enum eng_copy_dir dir, char out[4096])
{
	if (dir == ENG_PUSH)
		t_path(out, f->root, "sent");
	else
		snprintf(out, 4096, "%s", f->back);
}

/*
 * Every client rail fails mid-copy: the copy goes on over tcp and arrives
 * whole, the tcp session sending less than the whole, the report saying so
 * (teardown_ms: the receiver's connections take that long to go).
 */
static void fell_back_slow(struct fx *fx, enum eng_copy_dir dir, bool once, unsigned teardown_ms)
{
	const uint64_t total = fb_bytes();
	struct eng_report r;
	struct fb f = {0};
	char dst[4096], got[4096], want[4096];
	int err;

	fb_start(fx, &f, once);
	atomic_store(&fb_teardown_ms, teardown_ms);
	atomic_store(&fb_after, FB_AFTER);
	err = fb_copy(fx, &f, dir, &r);
	if (err)
		fail_msg("the copy failed: %s", rcp_err_msg(err));
	assert_int_equal(atomic_load(&fb_armed), 2);
	assert_int_equal(atomic_load(&fb_notices), 1);
	fb_dst(&f, dir, dst);
	t_path(got, dst, "top");
	t_path(want, dir == ENG_PUSH ? f.src : f.root, "top");
	tree_same(want, got);
	assert_int_equal(t_count_tmp(dst), 0);
	assert_true(r.fell_back);
	assert_string_equal(r.fallback_from, "rdma");
	assert_string_equal(r.transport, "tcp");
	if (!strstr(r.fallback_why, "every rail failed"))
		fail_msg("the fallback's sentence: \"%s\"", r.fallback_why);
	assert_true(r.fallback_bytes > 0 && r.fallback_bytes < total);
	/* Over tcp: less than the whole, what landed kept and confirmed, not sent again. */
	assert_true(r.bytes_kept >= r.fallback_bytes / 2);
	assert_true(r.bytes - r.fallback_bytes < total);
	assert_int_equal(r.bytes - r.fallback_bytes + r.bytes_kept, total);
	/* chunks cover both sessions, as bytes do: none holds more than a chunk */
	assert_true(r.chunks * FB_CHUNK >= r.bytes);
	assert_false(r.fallback_setup);
	assert_int_equal(r.files_total, 4);
	assert_int_equal(server_stop(&fx->srv), 0); /* once: the second session's status */
}

static void fell_back(struct fx *fx, enum eng_copy_dir dir, bool once)
{
	fell_back_slow(fx, dir, once, 0);
}

/*
 * The push server's connections of the failed session take longer to go
 * than the continuation waits for a partial file's lock: what landed is
 * kept all the same (the files let go of before the teardown).
 */
static void test_a_slow_teardown_still_leaves_what_landed_to_the_continuation(void **state)
{
	fell_back_slow(*state, ENG_PUSH, false, 3000);
}

static void test_a_push_whose_every_rdma_rail_fails_goes_on_over_tcp(void **state)
{
	fell_back(*state, ENG_PUSH, false);
}

/* A pull, at a server serving once (serve --ssh): it waits for the second session. */
static void test_a_pull_goes_on_over_tcp_at_a_server_serving_once(void **state)
{
	fell_back(*state, ENG_PULL, true);
}

/*
 * The testbed's case: the copy goes on over tcp to a server whose TCP
 * buffer holds 2 of the 4 stripes asked for, over those 2, and whole.
 */
static void test_a_fallback_to_a_server_that_holds_fewer_tcp_stripes_goes_on(void **state)
{
	struct fx *fx = *state;
	struct fb f = {.tcp_qps = 4, .srv_tcp_budget = 2 * 2 * FB_CHUNK};
	struct eng_report r;
	char dst[4096], got[4096], want[4096];
	int err;

	fb_start(fx, &f, false);
	atomic_store(&fb_after, FB_AFTER);
	if ((err = fb_copy(fx, &f, ENG_PUSH, &r)) != 0)
		fail_msg("the copy failed: %s", rcp_err_msg(err));
	assert_true(r.fell_back);
	assert_string_equal(r.transport, "tcp");
	assert_int_equal(r.n_stripes, 2);
	fb_dst(&f, ENG_PUSH, dst);
	t_path(want, f.src, "top");
	t_path(got, dst, "top");
	tree_same(want, got);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* No RDMA rail connects at set-up (each refused): the copy goes over tcp from the start. */
static void test_a_copy_none_of_whose_rdma_rails_connect_goes_over_tcp(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct fb f = {0};
	char got[4096], want[4096];
	int err;

	fb_start(fx, &f, false);
	eng__loop_inject_connect("loop0", ENG_LOOP_FAULT_REFUSE, 1);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_REFUSE, 1);
	err = fb_copy(fx, &f, ENG_PUSH, &r);
	eng__loop_inject_connect("loop0", ENG_LOOP_FAULT_NONE, 0);
	eng__loop_inject_connect("loop1", ENG_LOOP_FAULT_NONE, 0);
	if (err)
		fail_msg("the copy failed: %s", rcp_err_msg(err));
	assert_int_equal(atomic_load(&fb_setup_notices), 1);
	assert_int_equal(atomic_load(&fb_notices), 0);
	t_path(got, f.root, "sent/top");
	t_path(want, f.src, "top");
	tree_same(want, got);
	assert_true(r.fell_back);
	assert_int_equal(r.fallback_bytes, 0);
	assert_true(r.fallback_setup);
	if (!strstr(r.fallback_why, "no rail connected to the server"))
		fail_msg("the fallback's sentence: \"%s\"", r.fallback_why);
	assert_int_equal(r.bytes, fb_bytes());
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The copy fails with a sentence that holds must and then (NULL: nothing) must2. */
static void failed(struct fx *fx, struct fb *f, enum eng_copy_dir dir, const char *must,
		   const char *must2)
{
	struct eng_report r;
	int err = fb_copy(fx, f, dir, &r);
	const char *at;

	assert_int_not_equal(err, 0);
	at = strstr(rcp_err_msg(err), must);
	if (!at || (must2 && !strstr(at, must2)))
		fail_msg("the copy failed with \"%s\"", rcp_err_msg(err));
}

/* Nothing of the failed copy at its destination: no partial file, record or marker. */
static void nothing_kept(const struct fb *f, enum eng_copy_dir dir)
{
	char dst[4096];

	fb_dst(f, dir, dst);
	assert_true(WAIT_FOR(t_count_tmp(dst) == 0));
}

static void test_without_failover_the_copy_fails_with_the_sentence(void **state)
{
	struct fx *fx = *state;
	struct fb f = {.no_failover = true};

	fb_start(fx, &f, false);
	atomic_store(&fb_after, FB_AFTER);
	failed(fx, &f, ENG_PUSH, "work completion error 'injected error'", NULL);
	nothing_kept(&f, ENG_PUSH);
	assert_int_equal(atomic_load(&fb_notices), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* A server with no TCP plan (--transport rdma) refuses the second: both causes said. */
static void test_a_server_without_a_tcp_plan_refuses_the_second_session(void **state)
{
	struct fx *fx = *state;
	struct fb f = {.srv_tcp_none = true};

	fb_start(fx, &f, false);
	atomic_store(&fb_after, FB_AFTER);
	failed(fx, &f, ENG_PUSH, "every rail failed",
	       "; going on over tcp: the server says: the client asks for --transport tcp; "
	       "this server serves rdma");
	assert_int_equal(atomic_load(&fb_notices), 1);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* Interrupted mid-copy (not the fabric): the receiver keeps nothing, either way. */
static void test_a_copy_failing_otherwise_leaves_no_partial_file(void **state)
{
	static const enum eng_copy_dir dirs[] = {ENG_PUSH, ENG_PULL};
	struct fx *fx = *state;
	struct fb f = {0};
	size_t i;

	fb_start(fx, &f, false);
	for (i = 0; i < RCP_ARRAY_SIZE(dirs); i++) {
		atomic_store(&fb_landed, 0);
		atomic_store(&fb_cancel, false);
		atomic_store(&fb_hold, true);
		failed(fx, &f, dirs[i], "interrupted", NULL);
		nothing_kept(&f, dirs[i]);
		assert_true(atomic_load(&fb_landed) >= FB_HOLD_AT);
	}
	assert_int_equal(atomic_load(&fb_notices), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * A server serving once waits for the continuation once: a second session
 * whose rails all failed ends it, not another wait.
 */
static void test_a_server_serving_once_waits_for_a_continuation_once(void **state)
{
	struct fx *fx = *state;
	struct fb f = {.once_ms = 5000};
	int i;

	fb_start(fx, &f, true);
	/* The client's tcp plan on a device it lacks: the continuation never dials. */
	snprintf(f.plan_tcp.rail[0].dev, sizeof(f.plan_tcp.rail[0].dev), "nosuch9");
	atomic_store(&fb_after, FB_AFTER);
	for (i = 0; i < 2; i++) {
		assert_false(atomic_load(&fx->srv.ended));
		failed(fx, &f, ENG_PUSH, "every rail failed", "going on over tcp");
	}
	assert_true(WAIT_FOR(atomic_load(&fx->srv.ended)));
	server_stop(&fx->srv);
	if (strstr(fx->srv.msg, "did not come back over tcp"))
		fail_msg("the server waited again: %s", fx->srv.msg);
}

/*
 * What the partial files, records, logs and directory markers beneath dir hold, appended to out
 * (name, size and a digest of the bytes of each): the same string when left alone.
 */
static void partial_snap(const char *dir, char *out, size_t cap)
{
	struct dirent *d;
	char p[4096], buf[4096];
	DIR *dh = opendir(dir);

	assert_non_null(dh);
	while ((d = readdir(dh))) {
		uint64_t h = 1469598103934665603ull, size = 0;
		ssize_t n, i;
		int fd;

		if (d->d_name[0] == '.' && (!d->d_name[1] || !strcmp(d->d_name, "..")))
			continue;
		t_path(p, dir, d->d_name);
		if (d->d_type == DT_DIR) {
			partial_snap(p, out, cap);
			continue;
		}
		if (strncmp(d->d_name, ".railcp-tmp-", 12))
			continue;
		fd = open(p, O_RDONLY);
		assert_true(fd >= 0);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			for (i = 0, size += (uint64_t)n; i < n; i++)
				h = (h ^ (uint8_t)buf[i]) * 1099511628211ull;
		close(fd);
		snprintf(out + strlen(out), cap - strlen(out), "%s:%" PRIu64 ":%" PRIx64 ";",
			 d->d_name, size, h);
	}
	closedir(dh);
}

/*
 * The server stopped and started again: server_stop returns once every
 * session has ended, so what the last one kept or removed at its end is on
 * disk. The client's failure comes before that: its receiver may still be
 * held (holding_prepare), writing, or keeping its partial files.
 */
static void fb_server_again(struct fx *fx, struct fb *f)
{
	assert_int_equal(server_stop(&fx->srv), 0);
	server_start(&fx->srv, &fb_tr, f->root, NULL);
}

static int semis(const char *s)
{
	int n = 0;

	while ((s = strchr(s, ';')) != NULL && ++n)
		s++;
	return n;
}

/*
 * A --partial copy cut keeps what landed; a plain copy (one that may go on
 * over tcp) then failing otherwise leaves that alone, and a later
 * --partial copy resumes from it.
 */
static void test_a_plain_copy_leaves_an_earlier_partial_copys_files_alone(void **state)
{
	struct fx *fx = *state;
	static char before[16384], after[16384];
	struct eng_report r;
	struct fb f = {.partial = true};
	char dst[4096];
	int err;

	fb_start(fx, &f, false);
	fb_dst(&f, ENG_PUSH, dst);
	atomic_store(&fb_hold, true);
	failed(fx, &f, ENG_PUSH, "interrupted", NULL);
	fb_server_again(fx, &f);
	partial_snap(dst, before, sizeof(before));
	if (!strstr(before, ".railcp-tmp-p") || !strstr(before, ".railcp-tmp-r"))
		fail_msg("the --partial copy kept no partial file and record: \"%s\"", before);
	f.partial = false;
	atomic_store(&fb_landed, 0);
	atomic_store(&fb_cancel, false);
	failed(fx, &f, ENG_PUSH, "interrupted", NULL);
	fb_server_again(fx, &f);
	/* The plain copy's own temporaries gone, the earlier copy's as they were. */
	partial_snap(dst, after, sizeof(after));
	if (t_count_tmp(dst) != semis(before) || strcmp(before, after))
		fail_msg("the plain copy changed what was kept:\nbefore %s\nafter  %s", before,
			 after);
	f.partial = true;
	atomic_store(&fb_hold, false);
	atomic_store(&fb_cancel, false);
	err = fb_copy(fx, &f, ENG_PUSH, &r);
	if (err)
		fail_msg("the resumed copy failed: %s", rcp_err_msg(err));
	assert_true(r.bytes_kept > 0);
	assert_int_equal(t_count_tmp(dst), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * A client's error frame and what the server read of it (proven: past the
 * proofs): whether it heeded "rails_down" (peer_down: the server's word
 * already in when it went).
 */
static bool client_frame_down(struct eng_session *s, bool peer_down, bool proven)
{
	struct eng_ctl srv;
	json_t *msg = NULL;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	*s = (struct eng_session){.side = ENG_CLIENT, .fallback = true};
	s->ctl = ENG_CTL_PLAIN(sv[0]);
	s->ctl.peer_rails_down = peer_down;
	srv = ENG_CTL_PLAIN(sv[1]);
	srv.trusted = proven;
	eng__session_send_error(s, -EIO);
	assert_int_equal(eng__proto_recv(&srv, 1000, ENG_MSG_READY, &msg), -ECONNABORTED);
	close(sv[0]);
	close(sv[1]);
	return srv.peer_rails_down;
}

/*
 * Client and server decide alike: the client falls back only if its error
 * frame said "rails_down"; the server's saying so after it went (a pull
 * whose client failed first, on a stall) changes nothing.
 */
static void test_the_client_falls_back_only_on_the_word_it_sent(void **state)
{
	struct eng_session s;
	struct eng_fall fall = {0};
	struct eng_client_opts o = {.fall = &fall};

	(void)state;
	assert_false(client_frame_down(&s, false, true));
	s.ctl.peer_rails_down = true; /* the server's frame, read later */
	eng__fall_record(&s, &o);
	assert_false(fall.rails_down);
	assert_false(eng__session_falls(&s));
	assert_true(client_frame_down(&s, true, true));
	eng__fall_record(&s, &o);
	assert_true(fall.rails_down);
}

/* A peer not yet proven (or, keyless, before the hello) cannot say "rails_down". */
static void test_an_unproven_peers_rails_down_is_not_heeded(void **state)
{
	struct eng_session s;

	(void)state;
	assert_false(client_frame_down(&s, true, false));
	assert_true(s.ctl.rails_down); /* it was said */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_push_whose_every_rdma_rail_fails_goes_on_over_tcp),
		T(test_a_pull_goes_on_over_tcp_at_a_server_serving_once),
		T(test_a_slow_teardown_still_leaves_what_landed_to_the_continuation),
		T(test_a_fallback_to_a_server_that_holds_fewer_tcp_stripes_goes_on),
		T(test_a_copy_none_of_whose_rdma_rails_connect_goes_over_tcp),
		T(test_without_failover_the_copy_fails_with_the_sentence),
		T(test_a_server_without_a_tcp_plan_refuses_the_second_session),
		T(test_a_copy_failing_otherwise_leaves_no_partial_file),
		T(test_a_plain_copy_leaves_an_earlier_partial_copys_files_alone),
		T(test_the_client_falls_back_only_on_the_word_it_sent),
		T(test_an_unproven_peers_rails_down_is_not_heeded),
		T(test_a_server_serving_once_waits_for_a_continuation_once),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
