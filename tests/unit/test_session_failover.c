/*
 * test_session_failover.c - rail failover in whole sessions over the
 * loopback transport (session_harness.h, engine/datapath/failover.c): a
 * copy whose rail fails at either end, sending or receiving, still arrives
 * byte for byte on the other rail, each chunk counted once though some
 * arrive twice, and the report names the rail, when and why; a copy whose
 * every rail fails, or one rail without failover (at the client or the
 * server), fails with one sentence and leaves no temporary and no partial
 * file, and the server serves the next session; a bench moves its bytes
 * exactly once over the rail that is left.
 *
 * The failures are injected with eng__loop_inject_error through a copy of
 * the loopback transport (fo_tr) that arms the first endpoint made on a
 * chosen rail: the client's in its connect, the server's in its accept_all,
 * both before the job's workers start. Its conn_create also counts, at the
 * receiver, chunks whose number arrives a second time.
 *
 * Threading: one session at a time; what the hooks share is atomic.
 */
#include "session_harness.h"

#include "engine/transport/loopback.h"

/* ---- a loopback transport that breaks the endpoints a test names ---- */

#define FO_RAILS 4     /* rails loop0 .. loop3 */
#define SEEN_MAX 4096u /* chunk numbers the receiver's count follows */

typedef int (*write_prepare_fn)(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
				struct io_op *op);

/* By rail number N of "loopN": the post, on the next endpoint made on it, that fails (0: none). */
static _Atomic unsigned inject_client[FO_RAILS], inject_server[FO_RAILS];
static _Atomic unsigned injected; /* endpoints armed so far */
static _Atomic unsigned char seen[SEEN_MAX];
static _Atomic unsigned copies_again; /* chunks the receiver prepared a second time */
static _Atomic write_prepare_fn real_write_prepare;
static struct eng_transport fo_tr;

/* The server's accept_all sees only its connection: which links it has. */
static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct eng_conn *conn;
	const struct eng_conn_cfg *cfg;
} conns[8];

static void fo_reset(void)
{
	unsigned i;

	for (i = 0; i < FO_RAILS; i++) {
		atomic_store(&inject_client[i], 0);
		atomic_store(&inject_server[i], 0);
	}
	for (i = 0; i < SEEN_MAX; i++)
		atomic_store(&seen[i], 0);
	atomic_store(&injected, 0);
	atomic_store(&copies_again, 0);
}

static int counting_prepare(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
			    struct io_op *op)
{
	if (hdr->seq < SEEN_MAX && atomic_fetch_add(&seen[hdr->seq], 1) > 0)
		atomic_fetch_add(&copies_again, 1);
	return atomic_load(&real_write_prepare)(ctx, hdr, data, op);
}

/* Arm l's endpoint if a test asked for it on l's rail (once). */
static void arm_link(_Atomic unsigned *table, struct eng_link *l)
{
	unsigned n, after;

	if (sscanf(l->rail_dev, "loop%u", &n) != 1 || n >= FO_RAILS)
		return;
	after = atomic_exchange(&table[n], 0);
	if (!after)
		return;
	eng__loop_inject_error(l->ep, after);
	atomic_fetch_add(&injected, 1);
}

static int fo_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_job *job = ((struct eng_stripe *)cfg->link[0])->job; /* datapath_int.h */
	unsigned i;
	int err;

	if (job->role == ENG_RECEIVER && job->rcv.sink.prepare != counting_prepare) {
		atomic_store(&real_write_prepare, job->rcv.sink.prepare);
		job->rcv.sink.prepare = counting_prepare;
	}
	err = eng__transport_loopback()->conn_create(cfg, conn_out);
	if (err)
		return err;
	pthread_mutex_lock(&conns_lock);
	for (i = 0; i < RCP_ARRAY_SIZE(conns) && conns[i].conn; i++)
		;
	assert_true(i < RCP_ARRAY_SIZE(conns));
	conns[i].conn = *conn_out;
	conns[i].cfg = cfg;
	pthread_mutex_unlock(&conns_lock);
	return 0;
}

static void fo_conn_destroy(struct eng_conn *conn)
{
	unsigned i;

	pthread_mutex_lock(&conns_lock);
	for (i = 0; i < RCP_ARRAY_SIZE(conns); i++)
		if (conn && conns[i].conn == conn)
			conns[i].conn = NULL;
	pthread_mutex_unlock(&conns_lock);
	eng__transport_loopback()->conn_destroy(conn);
}

static int fo_connect(struct eng_conn *c, struct eng_link *l, const union eng_sockaddr *src,
		      const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms)
{
	int err = eng__transport_loopback()->connect(c, l, src, dst, peer_link, timeout_ms);

	if (!err)
		arm_link(inject_client, l);
	return err;
}

static int fo_accept_all(struct eng_conn *c, int ctl_fd, int timeout_ms)
{
	const struct eng_conn_cfg *cfg = NULL;
	unsigned i;
	int err = eng__transport_loopback()->accept_all(c, ctl_fd, timeout_ms);

	if (err)
		return err;
	pthread_mutex_lock(&conns_lock);
	for (i = 0; i < RCP_ARRAY_SIZE(conns); i++)
		if (conns[i].conn == c)
			cfg = conns[i].cfg;
	pthread_mutex_unlock(&conns_lock);
	assert_non_null(cfg);
	for (i = 0; i < cfg->n_links; i++)
		arm_link(inject_server, cfg->link[i]);
	return 0;
}

static void fo_tr_init(void)
{
	fo_tr = *eng__transport_loopback();
	fo_tr.name = "failing loopback";
	fo_tr.conn_create = fo_conn_create;
	fo_tr.conn_destroy = fo_conn_destroy;
	fo_tr.connect = fo_connect;
	fo_tr.accept_all = fo_accept_all;
}

/* ---- the tree: files of many chunks, small files, an empty one ---- */

#define FO_CHUNK (4 * KiB)
/* 8 slots of 4 KiB for each of a worker's two stripes: a window the tree fills many times. */
#define FO_BUDGET (2ull * 8 * FO_CHUNK)

struct fo_file {
	const char *rel;
	size_t len;
};

/* Files of many chunks (more than the windows hold) and small ones: 158 chunks. */
static const struct fo_file fo_big[] = {
	{"top/f0.bin", 256 * KiB + 17},
	{"top/f1.bin", 192 * KiB},
	{"top/sub/f2.bin", 160 * KiB + 4095},
	{"top/sub/s.txt", 5000},
	{"top/a.txt", 100},
	{"top/one", 1},
	{"top/empty", 0},
};

/* 12 chunks: fewer than the two windows of 8 hold, so every chunk is claimed at once. */
static const struct fo_file fo_small[] = {
	{"top/f0.bin", 40 * KiB},
	{"top/sub/s.txt", 5000},
	{"top/empty", 0},
};

/* Every file under dst is whole (its namesake under src, byte for byte); no temporary. */
static void fo_no_partial(const char *src, const char *dst)
{
	char ps[4096], pd[4096];
	struct stat ss, sd;
	struct dirent *d;
	DIR *dh = opendir(dst);

	assert_non_null(dh);
	while ((d = readdir(dh))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (!strncmp(d->d_name, ".railcp-tmp-", 12))
			fail_msg("a temporary is left: %s/%s", dst, d->d_name);
		t_path(ps, src, d->d_name);
		t_path(pd, dst, d->d_name);
		assert_int_equal(lstat(pd, &sd), 0);
		if (lstat(ps, &ss) != 0)
			fail_msg("%s is not in the source", pd);
		if (S_ISDIR(sd.st_mode)) {
			fo_no_partial(ps, pd);
			continue;
		}
		if (sd.st_size != ss.st_size)
			fail_msg("%s is there with %lld of its %lld bytes", pd,
				 (long long)sd.st_size, (long long)ss.st_size);
		file_same(ps, pd, ss.st_size);
	}
	closedir(dh);
}

/* ---- sessions ---- */

struct fo {
	const struct fo_file *file; /* the tree */
	size_t n_files;
	char src[4096];	 /* src/top: what a push sends */
	char root[4096]; /* the server's root; root/top: what a pull takes */
	char back[4096]; /* where a pull puts it */
	struct topo_plan plan;
};

static uint64_t fo_bytes(const struct fo *f)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < f->n_files; i++)
		n += f->file[i].len;
	return n;
}

static uint64_t fo_chunks(const struct fo *f)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < f->n_files; i++)
		n += (f->file[i].len + FO_CHUNK - 1) / FO_CHUNK;
	return n;
}

static void fo_tree_make(const struct fo *f, const char *base)
{
	char p[4096];
	size_t i;

	t_path(p, base, "top");
	assert_int_equal(mkdir(p, 0755), 0);
	t_path(p, base, "top/sub");
	assert_int_equal(mkdir(p, 0755), 0);
	for (i = 0; i < f->n_files; i++)
		pattern_write(base, f->file[i].rel, f->file[i].len, 20 + (uint32_t)i);
}

/*
 * The trees, and a server over fo_tr with one worker for rails loop0 and
 * loop1, one QP each; the client's plan has a worker per rail, so a failed
 * stripe's chunks are claimed by another thread.
 */
static void fo_start(struct fx *fx, struct fo *f, bool pull)
{
	static const unsigned rails[] = {0, 1};

	if (!f->file) {
		f->file = fo_big;
		f->n_files = RCP_ARRAY_SIZE(fo_big);
	}
	fx_dir(fx, "src", f->src);
	fx_dir(fx, "root", f->root);
	fx_dir(fx, "back", f->back);
	fo_tree_make(f, f->src);
	if (pull)
		fo_tree_make(f, f->root);
	fo_tr_init();
	fo_reset();
	plan_make(&fx->srv.plan, rails, 2, 1, 1, FO_BUDGET);
	server_start(&fx->srv, &fo_tr, f->root, NULL);
	plan_make(&f->plan, rails, 2, 1, 2, FO_BUDGET);
}

/* Push src/top into the root, or pull root/top into back, as the client over fo_tr. */
static int fo_copy(struct fx *fx, struct fo *f, enum eng_copy_dir dir, bool no_failover,
		   struct eng_report *r)
{
	char top[4096];
	const char *push_src[] = {top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp;
	struct eng_client_opts o;
	int err;

	t_path(top, f->src, "top");
	cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
			     : copy_opts(ENG_PULL, pull_src, 1, f->back);
	cp.chunk = FO_CHUNK;
	cp.no_failover = no_failover;
	o = client_opts(&fx->srv, &f->plan, cp.chunk, NULL);
	o.copy = &cp;
	o.tr = &fo_tr;
	o.no_failover = no_failover; /* what eng_copy_run takes from cp */
	memset(r, 0, sizeof(*r));
	err = eng__client_run(&o, r);
	if (err)
		print_message("the copy failed: %s\n", rcp_err_msg(err));
	return err;
}

/* The copy arrived whole: identical files, no temporary, each chunk counted once. */
static void fo_arrived(const struct fo *f, enum eng_copy_dir dir, const struct eng_report *r)
{
	const char *dst = dir == ENG_PUSH ? f->root : f->back;

	tree_same(dir == ENG_PUSH ? f->src : f->root, dst);
	assert_int_equal(t_count_tmp(dst), 0);
	assert_int_equal(r->files, f->n_files);
	assert_int_equal(r->bytes, fo_bytes(f)); /* not more: second copies count once */
	assert_int_equal(r->chunks, fo_chunks(f));
	assert_int_equal(r->rail[0].bytes + r->rail[1].bytes, fo_bytes(f));
	assert_int_equal(r->rail[0].chunks + r->rail[1].chunks, fo_chunks(f));
}

/* The report names loop1 failed, when and why, and loop0 carrying the rest. */
static void fo_rail1_failed(const struct eng_report *r)
{
	assert_true(r->failover);
	assert_int_equal(r->n_rails, 2);
	assert_string_equal(r->rail[1].name, "loop1:1");
	assert_int_equal(r->rails_failed, 1);
	assert_true(r->rail[1].failed);
	assert_int_equal(r->rail[1].stripes, 1);
	assert_int_equal(r->rail[1].stripes_lost, 1);
	if (!strstr(r->rail[1].why, "work completion error 'injected error'"))
		fail_msg("rail loop1 failed for \"%s\"", r->rail[1].why);
	assert_true(r->rail[1].failed_at > 0);
	assert_false(r->rail[0].failed);
	assert_int_equal(r->rail[0].stripes_lost, 0);
	assert_string_equal(r->rail[0].why, "");
	assert_true(r->rail[0].bytes > 0);
}

/* The server serves a clean push after whatever happened: the tree arrives, no rail fails. */
static void fo_serves_a_clean_push(struct fx *fx, struct fo *f)
{
	struct eng_report r;

	fo_reset();
	assert_int_equal(fo_copy(fx, f, ENG_PUSH, false, &r), 0);
	fo_arrived(f, ENG_PUSH, &r);
	assert_int_equal(r.rails_failed, 0);
	assert_int_equal(atomic_load(&copies_again), 0);
}

/* The copy failed with one sentence that says what. */
static void fo_failed_with(int err, const char *what)
{
	assert_int_not_equal(err, 0);
	if (!strstr(rcp_err_msg(err), what))
		fail_msg("the copy failed with \"%s\", not \"%s\"", rcp_err_msg(err), what);
	assert_null(strchr(rcp_err_msg(err), '\n'));
}

/* ---- one rail fails: the other carries its chunks ---- */

static void test_a_push_survives_the_senders_rail_failing_and_counts_each_chunk_once(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct fo f = {0};

	fo_start(fx, &f, false);
	atomic_store(&inject_client[1], 5); /* the client's 5th write on loop1 fails */
	assert_int_equal(fo_copy(fx, &f, ENG_PUSH, false, &r), 0);
	assert_int_equal(atomic_load(&injected), 1);
	fo_arrived(&f, ENG_PUSH, &r);
	fo_rail1_failed(&r);
	/* Credits count at the sender: loop1 had four writes before its fifth failed. */
	assert_true(r.rail[1].chunks <= 4);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_survives_the_senders_rail_failing_and_counts_each_chunk_once(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct fo f = {0};

	fo_start(fx, &f, true);
	atomic_store(&inject_server[1], 5); /* the server's 5th write on loop1 fails */
	assert_int_equal(fo_copy(fx, &f, ENG_PULL, false, &r), 0);
	assert_int_equal(atomic_load(&injected), 1);
	fo_arrived(&f, ENG_PULL, &r);
	/*
	 * The client learns of the failure only if a credit of its own fails,
	 * which depends on timing; what it received shows the sender's side:
	 * loop1 carried at most the four chunks before its fifth write failed.
	 */
	assert_true(r.rail[1].chunks <= 4);
	assert_true(r.rail[0].chunks >= fo_chunks(&f) - 4);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * The receiver's 5th credit on loop1 fails: that chunk is in, but the sender
 * never hears so and sends it again on loop0; it is counted once and the
 * file is the same.
 */
static void receivers_credit_fails(struct fx *fx, enum eng_copy_dir dir)
{
	struct eng_report r;
	struct fo f = {0};

	fo_start(fx, &f, dir == ENG_PULL);
	atomic_store(dir == ENG_PULL ? &inject_client[1] : &inject_server[1], 5);
	assert_int_equal(fo_copy(fx, &f, dir, false, &r), 0);
	assert_int_equal(atomic_load(&injected), 1);
	fo_arrived(&f, dir, &r);
	if (atomic_load(&copies_again) == 0)
		fail_msg("no chunk arrived twice: the failover path was not taken");
	if (dir == ENG_PULL) { /* the client is the receiver whose credit failed */
		fo_rail1_failed(&r);
		/* The first window, and a chunk for each of the four credits that went back. */
		assert_true(r.rail[1].chunks <= r.n_slots + 4);
	}
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_survives_the_receivers_credit_failing_with_chunks_sent_twice(void **state)
{
	receivers_credit_fails(*state, ENG_PULL);
}

static void test_a_push_survives_the_receivers_credit_failing_with_chunks_sent_twice(void **state)
{
	receivers_credit_fails(*state, ENG_PUSH);
}

/*
 * The same when nothing is left to claim: the server's one worker claims
 * chunks 0-7 for loop0's window of 8 and 8-11 for loop1's, all at once;
 * the client's first credit on loop1 fails. The server's loop1 stripe then
 * holds four chunks whose credits never come and has nothing more to post,
 * so only a word from the receiver (or its connection's loss) can take it
 * down and send them on loop0.
 */
static void
test_a_pull_survives_the_receivers_credit_failing_after_every_chunk_is_claimed(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct fo f = {.file = fo_small, .n_files = RCP_ARRAY_SIZE(fo_small)};

	fo_start(fx, &f, true);
	assert_int_equal(fo_chunks(&f), 12);
	atomic_store(&inject_client[1], 1);
	assert_int_equal(fo_copy(fx, &f, ENG_PULL, false, &r), 0);
	assert_int_equal(atomic_load(&injected), 1);
	fo_arrived(&f, ENG_PULL, &r);
	fo_rail1_failed(&r);
	assert_true(atomic_load(&copies_again) >= 1); /* chunk 8 landed, its credit did not */
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* ---- every rail fails, or one without failover: one sentence, nothing half-written ---- */

static void test_every_rail_failing_fails_the_push_cleanly_and_the_server_serves_on(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct fo f = {0};
	int err;

	fo_start(fx, &f, false);
	atomic_store(&inject_client[0], 7);
	atomic_store(&inject_client[1], 5);
	err = fo_copy(fx, &f, ENG_PUSH, false, &r);
	assert_int_equal(atomic_load(&injected), 2);
	fo_failed_with(err, "every rail failed");
	/* The server's session removes its temporaries as it ends. */
	assert_true(WAIT_FOR(t_count_tmp(f.root) == 0));
	fo_no_partial(f.src, f.root);
	fo_serves_a_clean_push(fx, &f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_without_failover_one_rail_failing_fails_the_push_cleanly(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct fo f = {0};
	int err;

	fo_start(fx, &f, false);
	atomic_store(&inject_client[1], 5);
	err = fo_copy(fx, &f, ENG_PUSH, true, &r);
	assert_int_equal(atomic_load(&injected), 1);
	fo_failed_with(err, "work completion error 'injected error'");
	assert_true(WAIT_FOR(t_count_tmp(f.root) == 0));
	fo_no_partial(f.src, f.root);
	fo_serves_a_clean_push(fx, &f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* The server without failover, its endpoint on loop1 failing, receiving then sending. */
static void test_a_server_without_failover_fails_the_session_on_its_rail_failing(void **state)
{
	static const enum eng_copy_dir dirs[] = {ENG_PUSH, ENG_PULL};
	struct fx *fx = *state;
	struct eng_report r;
	struct fo f = {0};
	size_t i;
	int err;

	fx->srv.no_failover = true;
	fo_start(fx, &f, true);
	for (i = 0; i < RCP_ARRAY_SIZE(dirs); i++) {
		const char *dst = dirs[i] == ENG_PUSH ? f.root : f.back;

		fo_reset();
		atomic_store(&inject_server[1], 5);
		err = fo_copy(fx, &f, dirs[i], false, &r);
		assert_int_equal(atomic_load(&injected), 1);
		fo_failed_with(err, "work completion error 'injected error'");
		assert_true(WAIT_FOR(t_count_tmp(dst) == 0));
		fo_no_partial(dirs[i] == ENG_PUSH ? f.src : f.root, dst);
	}
	fo_serves_a_clean_push(fx, &f);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* ---- bench ---- */

static void test_a_bench_survives_a_rail_failing_and_counts_each_byte_once(void **state)
{
	static const unsigned rails[] = {0, 1};
	/* 513 chunks: enough that loop1's worker, however late it starts, writes five. */
	const uint64_t bytes = 32 * MiB + 12345;
	const uint32_t chunk = 64 * KiB;
	struct fx *fx = *state;
	struct topo_plan plan;
	struct eng_client_opts o;
	struct eng_report r;
	int err;

	fo_tr_init();
	fo_reset();
	plan_make(&fx->srv.plan, rails, 2, 1, 1, 2ull * 8 * chunk);
	server_start(&fx->srv, &fo_tr, NULL, NULL);
	plan_make(&plan, rails, 2, 1, 2, 2ull * 8 * chunk);
	atomic_store(&inject_client[1], 5);
	o = client_opts(&fx->srv, &plan, chunk, NULL);
	o.tr = &fo_tr;
	o.bench_bytes = bytes;
	err = eng__client_run(&o, &r);
	if (err)
		fail_msg("the bench failed: %s", rcp_err_msg(err));
	assert_int_equal(atomic_load(&injected), 1);
	assert_int_equal(r.bytes, bytes);
	assert_int_equal(r.chunks, (bytes + chunk - 1) / chunk);
	assert_int_equal(r.rail[0].bytes + r.rail[1].bytes, bytes);
	fo_rail1_failed(&r);
	assert_true(r.rail[1].chunks <= 4);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_push_survives_the_senders_rail_failing_and_counts_each_chunk_once),
		T(test_a_pull_survives_the_senders_rail_failing_and_counts_each_chunk_once),
		T(test_a_pull_survives_the_receivers_credit_failing_with_chunks_sent_twice),
		T(test_a_push_survives_the_receivers_credit_failing_with_chunks_sent_twice),
		T(test_a_pull_survives_the_receivers_credit_failing_after_every_chunk_is_claimed),
		T(test_every_rail_failing_fails_the_push_cleanly_and_the_server_serves_on),
		T(test_without_failover_one_rail_failing_fails_the_push_cleanly),
		T(test_a_server_without_failover_fails_the_session_on_its_rail_failing),
		T(test_a_bench_survives_a_rail_failing_and_counts_each_byte_once),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
