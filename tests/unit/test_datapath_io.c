/*
 * test_datapath_io.c - the data path's file I/O
 * (engine/datapath/iothreads.c and ioring.c) in whole sessions over the
 * loopback transport: every way a worker can read and write its files
 * (helpers with io_uring, helpers with pread and pwrite, no helpers) copies
 * a tree identically and says which ran; a kernel without io_uring falls
 * back; a ring that refuses work, at either end, fails the copy with one
 * sentence and leaves no file half-written.
 *
 * A helper thread that cannot start fails the session with one sentence; a
 * source file cut short while its chunks are read fails it too.
 *
 * io_uring_queue_init, io_uring_submit and pthread_create are wrapped
 * (-Wl,--wrap, see tests/SConscript) so a test can make them fail, in the
 * threads of one end only (by the thread names the data path gives:
 * rcp-snd-*, rcp-rcv-*).
 */
#include "session_harness.h"

#include <liburing.h>

/* ---- the wrapped calls ---- */

static _Atomic bool init_fails;		    /* io_uring_queue_init: -ENOSYS */
static const char *_Atomic submit_fails_in; /* io_uring_submit in threads named so: -EIO ... */
static _Atomic unsigned submit_left;	    /* ... after this many more succeed */
static const char *_Atomic create_fails_in; /* pthread_create in threads named so: EAGAIN */

int __real_io_uring_queue_init(unsigned entries, struct io_uring *ring, unsigned flags);
int __wrap_io_uring_queue_init(unsigned entries, struct io_uring *ring, unsigned flags);
int __real_io_uring_submit(struct io_uring *ring);
int __wrap_io_uring_submit(struct io_uring *ring);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);

/* Whether the calling thread's name starts with prefix (NULL: no). */
static bool named(const char *prefix)
{
	char name[16] = "";

	pthread_getname_np(pthread_self(), name, sizeof(name));
	return prefix && strncmp(name, prefix, strlen(prefix)) == 0;
}

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	if (named(atomic_load(&create_fails_in)))
		return EAGAIN;
	return __real_pthread_create(t, a, fn, arg);
}

int __wrap_io_uring_queue_init(unsigned entries, struct io_uring *ring, unsigned flags)
{
	if (atomic_load(&init_fails))
		return -ENOSYS;
	return __real_io_uring_queue_init(entries, ring, flags);
}

int __wrap_io_uring_submit(struct io_uring *ring)
{
	if (named(atomic_load(&submit_fails_in))) {
		unsigned left = atomic_load(&submit_left);

		while (left > 0 && !atomic_compare_exchange_weak(&submit_left, &left, left - 1))
			;
		if (left == 0)
			return -EIO;
	}
	return __real_io_uring_submit(ring);
}

static void faults_clear(void)
{
	atomic_store(&init_fails, false);
	atomic_store(&submit_fails_in, NULL);
	atomic_store(&submit_left, 0);
	atomic_store(&create_fails_in, NULL);
}

/* ---- each way of doing the file I/O ---- */

/* Push the tree into the root and pull it back, with the client's plan as given. */
static void push_and_pull(struct fx *fx, const struct topo_plan *plan, const char *src,
			  const char *root, const char *back, const char *want_io)
{
	char top[4096];
	const char *push_src[] = {top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp;
	struct eng_report r;

	t_path(top, src, "top");
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	cp.fsync = true; /* each file's fsyncs and rename: I/Os of its task (files.c) */
	assert_int_equal(copy(&fx->srv, plan, &cp, NULL, &r), 0);
	if (!strstr(r.file_io, want_io))
		fail_msg("the push read its files with \"%s\", not \"%s\"", r.file_io, want_io);
	assert_int_equal(r.files, TREE_FILES);
	assert_int_equal(r.bytes, TREE_BYTES);
	tree_same(src, root);
	cp = copy_opts(ENG_PULL, pull_src, 1, back);
	cp.fsync = true;
	assert_int_equal(copy(&fx->srv, plan, &cp, NULL, &r), 0);
	if (!strstr(r.file_io, want_io))
		fail_msg("the pull wrote its files with \"%s\", not \"%s\"", r.file_io, want_io);
	assert_int_equal(r.files, TREE_FILES);
	tree_same(src, back);
	assert_int_equal(t_count_tmp(root), 0);
	assert_int_equal(t_count_tmp(back), 0);
}

/*
 * A server on root (one QP per rail) over srv_tr (NULL: loopback) and the
 * client's plan (qps per rail), both ends with these helpers and ring depth.
 */
static void start_both(struct fx *fx, const unsigned *rails, unsigned n_rails, unsigned qps,
		       unsigned helpers, unsigned io_depth, const char *root,
		       const struct eng_transport *srv_tr, struct topo_plan *plan)
{
	plan_make(&fx->srv.plan, rails, n_rails, 1, 1, BUDGET);
	fx->srv.plan.helpers = helpers;
	fx->srv.plan.io_depth = io_depth;
	server_start(&fx->srv, srv_tr, root, NULL);
	plan_make(plan, rails, n_rails, qps, 1, BUDGET);
	plan->helpers = helpers;
	plan->io_depth = io_depth;
}

/* Way number i of a test: the tree pushed into root<i> and pulled back into back<i>. */
static void one_way(struct fx *fx, const unsigned *rails, unsigned n_rails, unsigned qps,
		    unsigned helpers, unsigned io_depth, size_t i, const char *src, const char *io)
{
	char root[4096], back[4096], name[32];
	struct topo_plan plan;

	snprintf(name, sizeof(name), "root%zu", i);
	fx_dir(fx, name, root);
	snprintf(name, sizeof(name), "back%zu", i);
	fx_dir(fx, name, back);
	start_both(fx, rails, n_rails, qps, helpers, io_depth, root, NULL, &plan);
	push_and_pull(fx, &plan, src, root, back, io);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_every_way_of_file_io_copies_a_tree_identically(void **state)
{
	static const unsigned rails[] = {1, 2};
	static const struct {
		unsigned helpers, io_depth;
		const char *io;
	} ways[] = {
		{0, 0, "io_uring on the worker threads, "}, /* one CPU per worker: no helpers */
		{1, 0, "io_uring, 1 helper thread per worker"},
		{3, 2, "io_uring, 3 helper threads per worker, 2 deep each"},
		{2, TOPO_NONE, "pread and pwrite on 2 helper threads per worker (io_uring: off)"},
		{TOPO_NONE, 0, "io_uring on the worker threads, "},
		{TOPO_NONE, TOPO_NONE,
		 "pread and pwrite on the worker threads (no helpers; io_uring: off)"},
	};
	struct fx *fx = *state;
	char src[4096];
	size_t i;

	fx_dir(fx, "src", src);
	tree_make(src);
	/* The server's end does its I/O the same way: both ends' paths are covered. */
	for (i = 0; i < RCP_ARRAY_SIZE(ways); i++)
		one_way(fx, rails, 2, 2, ways[i].helpers, ways[i].io_depth, i, src, ways[i].io);
}

static void test_without_io_uring_helpers_and_workers_use_pread_and_pwrite(void **state)
{
	static const unsigned rails[] = {1};
	static const struct {
		unsigned helpers;
		const char *io;
	} ways[] = {
		{1, "pread and pwrite on 1 helper thread per worker (io_uring: Function not "
		    "implemented)"},
		{0, "pread and pwrite on the worker threads (no helpers; io_uring: Function not "
		    "implemented)"},
	};
	struct fx *fx = *state;
	char src[4096];
	size_t i;

	fx_dir(fx, "src", src);
	tree_make(src);
	atomic_store(&init_fails, true);
	for (i = 0; i < RCP_ARRAY_SIZE(ways); i++)
		one_way(fx, rails, 1, 1, ways[i].helpers, 0, i, src, ways[i].io);
	faults_clear();
}

/*
 * A ring that refuses its fifth submission in the threads of one end: the
 * copy fails with the ring's sentence at the client, the big file is not in
 * place, no temporary is left, and the server serves the next session.
 */
static void ring_refuses(struct fx *fx, enum eng_copy_dir dir, const char *end, unsigned helpers)
{
	static const unsigned rails[] = {1, 2};
	char src[4096], root[4096], back[4096], big[4096], name[64];
	const char *push_src[] = {big}, *pull_src[] = {"big"};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	snprintf(name, sizeof(name), "src-%d-%s-%u", dir, end, helpers);
	fx_dir(fx, name, src);
	snprintf(name, sizeof(name), "root-%d-%s-%u", dir, end, helpers);
	fx_dir(fx, name, root);
	snprintf(name, sizeof(name), "back-%d-%s-%u", dir, end, helpers);
	fx_dir(fx, name, back);
	pattern_write(dir == ENG_PUSH ? src : root, "big", 300 * KiB + 1234, 9);
	t_path(big, src, "big");
	start_both(fx, rails, 2, 1, helpers, 0, root, NULL, &plan);
	atomic_store(&submit_left, 4);
	atomic_store(&submit_fails_in, end);
	cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
			     : copy_opts(ENG_PULL, pull_src, 1, back);
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	faults_clear();
	assert_int_not_equal(err, 0);
	if (!strstr(rcp_err_msg(err), "refused work"))
		fail_msg("the copy failed with \"%s\"", rcp_err_msg(err));
	assert_null(strchr(rcp_err_msg(err), '\n'));
	assert_int_equal(server_stop(&fx->srv), 0); /* the server has ended the session */
	assert_false(t_exists(dir == ENG_PUSH ? root : back, "big"));
	assert_int_equal(t_count_tmp(root), 0);
	assert_int_equal(t_count_tmp(back), 0);
	server_start(&fx->srv, NULL, root, NULL);
	bench_ok(&fx->srv, NULL);
	assert_int_equal(server_stop(&fx->srv), 0); /* the next call starts another */
}

static void test_a_ring_that_refuses_work_fails_the_copy_cleanly_at_either_end(void **state)
{
	unsigned helpers;

	/* The worker's own ring (no helpers: 0 on a plan of one CPU per worker), then a helper's.
	 */
	for (helpers = 0; helpers <= 1; helpers++) {
		ring_refuses(*state, ENG_PUSH, "rcp-snd", helpers);
		ring_refuses(*state, ENG_PUSH, "rcp-rcv", helpers);
		ring_refuses(*state, ENG_PULL, "rcp-snd", helpers);
		ring_refuses(*state, ENG_PULL, "rcp-rcv", helpers);
	}
}

/* A push whose receiving end cannot start its helpers: one sentence, nothing left behind. */
static void test_a_helper_that_cannot_start_fails_the_session_cleanly(void **state)
{
	static const unsigned rails[] = {1};
	struct fx *fx = *state;
	char src[4096], root[4096], top[4096];
	const char *push_src[] = {top};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	fx_dir(fx, "src", src);
	fx_dir(fx, "root", root);
	tree_make(src);
	t_path(top, src, "top");
	plan_make(&fx->srv.plan, rails, 1, 1, 1, BUDGET);
	fx->srv.plan.helpers = 2; /* a plan of one CPU per worker would have none */
	server_start(&fx->srv, NULL, root, NULL);
	plan_make(&plan, rails, 1, 1, 1, BUDGET);
	atomic_store(&create_fails_in, "rcp-rcv-w");
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	err = copy(&fx->srv, &plan, &cp, NULL, &r);
	faults_clear();
	assert_int_not_equal(err, 0);
	if (!strstr(rcp_err_msg(err), "cannot start a helper thread"))
		fail_msg("the copy failed with \"%s\"", rcp_err_msg(err));
	assert_int_equal(server_stop(&fx->srv), 0);
	assert_false(t_exists(root, "top/sub/big.bin"));
	assert_int_equal(t_count_tmp(root), 0);
	fx->srv.plan.helpers = 0;
	server_start(&fx->srv, NULL, root, NULL);
	bench_ok(&fx->srv, NULL);
}

/* ---- a source cut short while it is read ---- */

static struct eng_source real_src;
static const char *cut_path; /* the file pushed */
static _Atomic bool cut_done;
static struct eng_transport cut_tr;

/* The first chunk's prepare opens the file; then it loses its second half. */
static int cut_prepare(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op)
{
	int err = real_src.prepare(ctx, hdr, buf, op);

	if (!err && !atomic_exchange(&cut_done, true))
		assert_int_equal(truncate(cut_path, 100 * KiB), 0);
	return err;
}

static int cut_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_job *job = ((struct eng_stripe *)cfg->link[0])->job; /* datapath_int.h */

	if (job->role == ENG_SENDER) {
		real_src = job->src;
		job->src.prepare = cut_prepare;
	}
	return eng__transport_loopback()->conn_create(cfg, conn_out);
}

static void test_a_source_cut_short_while_read_fails_the_push_cleanly(void **state)
{
	static const unsigned rails[] = {1, 2};
	struct fx *fx = *state;
	struct push1 p = {
		.bytes = 300 * KiB + 1234, .seed = 11, .rails = rails, .n_rails = 2, .tr = &cut_tr};
	int err;

	cut_tr = *eng__transport_loopback();
	cut_tr.name = "cutting loopback";
	cut_tr.conn_create = cut_conn_create;
	atomic_store(&cut_done, false);
	cut_path = p.file; /* named by push_one before its push reads it */
	err = push_one(fx, &p);
	assert_true(atomic_load(&cut_done));
	assert_int_equal(err, -EIO);
	if (!strstr(rcp_err_msg(err), "got shorter while it was being sent"))
		fail_msg("the copy failed with \"%s\"", rcp_err_msg(err));
	assert_int_equal(server_stop(&fx->srv), 0);
	assert_false(t_exists(p.root, "big"));
	assert_int_equal(t_count_tmp(p.root), 0);
}

/* ---- a file of one chunk: its opens and its rename are I/Os of its task ---- */

/* The three ways such a task's I/Os run: a helper's ring, the worker's own ring, here. */
static const struct {
	unsigned helpers, io_depth;
} step_ways[] = {{1, 0}, {0, 0}, {TOPO_NONE, TOPO_NONE}};

static struct eng_sink real_sink;
static struct eng_transport hook_tr;
static _Atomic bool hook_done;
static char hook_path[4096]; /* what the hook did it to */
static char hook_root[4096]; /* the receiver's root */
static char hook_away[4096]; /* where the symlink leads */

/* The first open that is a task's I/O: its file is gone before the ring opens it. */
static int unlink_prepare(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op)
{
	int err = real_src.prepare(ctx, hdr, buf, op);

	if (!err && op->kind == IO_OP_OPEN && !atomic_exchange(&hook_done, true)) {
		snprintf(hook_path, sizeof(hook_path), "%s", op->path);
		assert_int_equal(unlink(op->path), 0);
	}
	return err;
}

/*
 * The directory of the first temporary a task will create, resolved by the
 * receiver already (it keeps its directories open for the job): moved aside
 * within the root and a symlink leading out of the root put in its place.
 */
static int escape_prepare(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
			  struct io_op *op)
{
	int err = real_sink.prepare(ctx, hdr, data, op);
	char fdpath[64], dir[4096], moved[4200];
	ssize_t n;

	if (!err && op->kind == IO_OP_OPEN && (op->how.flags & O_CREAT) &&
	    !atomic_exchange(&hook_done, true)) {
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", op->fd);
		n = readlink(fdpath, dir, sizeof(dir) - 1);
		assert_true(n > 0);
		dir[n] = '\0';
		assert_true(strlen(dir) > strlen(hook_root)); /* beneath the root, not the root */
		snprintf(moved, sizeof(moved), "%s.moved", dir);
		snprintf(hook_path, sizeof(hook_path), "%s", dir + strlen(hook_root) + 1);
		assert_int_equal(rename(dir, moved), 0);
		assert_int_equal(symlink(hook_away, dir), 0);
	}
	return err;
}

static int hook_conn_create(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out)
{
	struct eng_job *job = ((struct eng_stripe *)cfg->link[0])->job; /* datapath_int.h */

	if (job->role == ENG_SENDER && job->src.prepare != unlink_prepare) {
		real_src = job->src;
		job->src.prepare = unlink_prepare;
	} else if (job->role == ENG_RECEIVER && job->rcv.sink.prepare != escape_prepare) {
		real_sink = job->rcv.sink;
		job->rcv.sink.prepare = escape_prepare;
	}
	return eng__transport_loopback()->conn_create(cfg, conn_out);
}

/*
 * Push src/top into a fresh root<i>, both ends over a transport whose jobs
 * are hooked (the sender's by unlink_prepare, the receiver's by
 * escape_prepare, as the test arms them), their file I/O done the way i.
 */
static int hooked_push(struct fx *fx, const char *src, size_t i, bool snd, bool rcv,
		       char root[4096])
{
	static const unsigned rails[] = {1, 2};
	char top[4096], name[32];
	const char *push_src[] = {top};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	int err;

	snprintf(name, sizeof(name), "root%zu", i);
	fx_dir(fx, name, root);
	snprintf(hook_root, sizeof(hook_root), "%s", root);
	t_path(top, src, "top");
	atomic_store(&hook_done, false);
	hook_tr = *eng__transport_loopback();
	hook_tr.name = "hooked loopback";
	hook_tr.conn_create = hook_conn_create;
	start_both(fx, rails, 2, 2, step_ways[i].helpers, step_ways[i].io_depth, root,
		   rcv ? &hook_tr : NULL, &plan);
	cp = copy_opts(ENG_PUSH, push_src, 1, "");
	err = copy(&fx->srv, &plan, &cp, snd ? &hook_tr : NULL, &r);
	assert_true(atomic_load(&hook_done));
	assert_int_equal(server_stop(&fx->srv), 0);
	assert_int_equal(t_count_tmp(root), 0);
	return err;
}

static void test_a_small_file_gone_before_its_open_fails_the_push_cleanly(void **state)
{
	struct fx *fx = *state;
	char src[4096], root[4096], rel[4096], name[32];
	size_t i;
	int err;

	for (i = 0; i < RCP_ARRAY_SIZE(step_ways); i++) {
		snprintf(name, sizeof(name), "src%zu", i); /* a tree each: each push loses a file */
		fx_dir(fx, name, src);
		tree_make(src);
		err = hooked_push(fx, src, i, true, false, root);
		assert_int_equal(err, -ENOENT);
		if (!strstr(rcp_err_msg(err), "cannot open") ||
		    !strstr(rcp_err_msg(err), hook_path))
			fail_msg("way %zu: the push failed with \"%s\"", i, rcp_err_msg(err));
		snprintf(rel, sizeof(rel), "%s", hook_path + strlen(src) + 1);
		assert_false(t_exists(root, rel));
	}
}

/*
 * A directory swapped for a symlink leading out of the root after the
 * receiver opened it: the file goes where the directory went (still beneath
 * the root), never through the symlink; a directory beneath it that the
 * receiver has yet to open is refused as leading outside. Nothing lands
 * outside either way.
 */
static void test_a_directory_swapped_for_a_symlink_leading_out_leads_nothing_out(void **state)
{
	struct fx *fx = *state;
	char src[4096], root[4096], rel[4200], moved[4096];
	size_t i;
	int err;

	fx_dir(fx, "src", src);
	fx_dir(fx, "away", hook_away);
	tree_make(src);
	for (i = 0; i < RCP_ARRAY_SIZE(step_ways); i++) {
		err = hooked_push(fx, src, i, false, true, root);
		/* the client hears the server's sentence, if there was one */
		if (err && !strstr(rcp_err_msg(err), "leads outside the root"))
			fail_msg("way %zu: the push failed with \"%s\" (%d)", i, rcp_err_msg(err),
				 err);
		assert_true(dir_empty(hook_away));
		snprintf(rel, sizeof(rel), "%s.moved", hook_path);
		t_path(moved, root, rel);
		assert_false(dir_empty(moved)); /* the opened directory got its file */
	}
}

static void test_a_rename_the_kernel_refuses_leaves_the_old_entry_and_no_temporary(void **state)
{
	static const unsigned rails[] = {1, 2};
	struct fx *fx = *state;
	char src[4096], top[4096], root[4096], name[32];
	const char *push_src[] = {top};
	struct eng_copy_opts cp;
	struct topo_plan plan;
	struct eng_report r;
	size_t i;
	int err;

	fx_dir(fx, "src", src);
	tree_make(src);
	t_path(top, src, "top");
	for (i = 0; i < RCP_ARRAY_SIZE(step_ways); i++) {
		/* a directory where the file of one chunk "top/a.txt" is to go: EISDIR */
		snprintf(name, sizeof(name), "root%zu", i);
		fx_dir(fx, name, root);
		t_path(top, root, "top");
		assert_int_equal(mkdir(top, 0755), 0);
		t_path(top, root, "top/a.txt");
		assert_int_equal(mkdir(top, 0755), 0);
		pattern_write(root, "top/a.txt/keep", 10, 9);
		t_path(top, src, "top");
		start_both(fx, rails, 2, 2, step_ways[i].helpers, step_ways[i].io_depth, root, NULL,
			   &plan);
		cp = copy_opts(ENG_PUSH, push_src, 1, "");
		err = copy(&fx->srv, &plan, &cp, NULL, &r);
		assert_int_equal(server_stop(&fx->srv), 0);
		if (!err ||
		    !strstr(rcp_err_msg(err), "cannot put \"top/a.txt\" in place: Is a directory"))
			fail_msg("way %zu: the push failed with \"%s\" (%d)", i, rcp_err_msg(err),
				 err);
		assert_true(t_exists(root, "top/a.txt/keep"));
		assert_int_equal(t_count_tmp(root), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_every_way_of_file_io_copies_a_tree_identically),
		T(test_without_io_uring_helpers_and_workers_use_pread_and_pwrite),
		T(test_a_ring_that_refuses_work_fails_the_copy_cleanly_at_either_end),
		T(test_a_helper_that_cannot_start_fails_the_session_cleanly),
		T(test_a_source_cut_short_while_read_fails_the_push_cleanly),
		T(test_a_small_file_gone_before_its_open_fails_the_push_cleanly),
		T(test_a_directory_swapped_for_a_symlink_leading_out_leads_nothing_out),
		T(test_a_rename_the_kernel_refuses_leaves_the_old_entry_and_no_temporary),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
