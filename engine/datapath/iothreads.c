/*
 * iothreads.c - a worker's helper threads: everything a chunk needs besides
 * the wire. The worker thread only drives RDMA (posts, polls, credits);
 * reading, hashing and writing chunks happens here, so a node keeps many
 * file I/Os in flight and hashes on several cores while its rails stay fed.
 *
 * Each worker starts job->helpers threads, pinned to its node like itself.
 * Each helper has a queue the worker fills (to the helper with the fewest
 * tasks out; one eventfd write per helper and round) and, where the kernel allows, an io_uring of
 * job->io_depth entries. For each task it runs the source's or sink's
 * prepare (open, name, check, verify), puts the chunk's read or write in its
 * ring straight into or out of the registered slot memory (O_DIRECT where
 * the file side allows: disk to wire with no copy), and when the ring
 * completes it runs complete (hash, count, close, put a file in place). A
 * short count is submitted again for the rest. A task may take several I/Os
 * in turn (datapath.h): a file of one chunk is opened by ring entries
 * before its read or write, and every file's fsyncs and rename into place
 * follow its last write, so a tree of small files keeps the ring full of
 * opens, fsyncs and renames instead of a helper blocked in each. When complete
 * says no more, the task goes on the worker's done list; the worker posts
 * the chunk or returns its credit.
 *
 * One wait per helper: with a ring, a poll on the queue's eventfd sits in
 * the ring beside the I/O, so io_uring_submit_and_wait wakes on either.
 * Without io_uring (an old kernel, seccomp, io_uring_disabled) each helper
 * does its tasks one at a time with pread and pwrite: job->helpers I/Os in
 * flight per worker instead of helpers * io_depth. Which one ran is in
 * job->io_ring, reported once per session.
 *
 * Stopping: the worker sets quit and joins. A helper drops the tasks still
 * queued and waits for every read and write it submitted: the ring writes
 * into slot memory that is freed after the join. A submission the kernel
 * refuses for good fails the job and its tasks, and the helper goes on
 * without a ring.
 *
 * Threading: the queue is under the helper's lock; the ring, its counts and
 * a task from dequeue to done belong to the helper thread; the done list is
 * a stack the helpers push onto and the worker empties at once (no lock:
 * one taker, which takes everything, cannot meet a reused node).
 */
#include "engine/datapath/datapath_int.h"

#include "common/common.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* user_data of the poll on the queue's eventfd; tasks are pointers, never this. */
#define POLL_TAG 1ull

/*
 * Held around ring set-up and teardown. liburing maps a ring's memory with
 * its own system calls, which ThreadSanitizer does not see, so a ring mapped
 * where another thread's ring was unmapped looks like a race with that
 * thread's writes; ordering the two through this lock states what the
 * kernel guarantees. Taken twice per helper and job: it costs nothing.
 */
static pthread_mutex_t ring_map_lock = PTHREAD_MUTEX_INITIALIZER;

struct eng_helper {
	struct eng_worker *w;
	unsigned index;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	struct eng_task *head, *tail; /* the queue */
	bool quit;		      /* under lock */
	bool kick;		      /* worker only: tasks were queued this round */
	unsigned load;		      /* worker only: tasks handed out and not yet back */
	int efd;		      /* eventfd: the queue has news */
	/* the helper thread's own */
	struct io_uring ring;
	bool ring_dead; /* the kernel refused a submission for good: no more */
	bool poll_armed;
	unsigned inflight;	 /* tasks whose I/O the kernel took */
	struct eng_task **unsub; /* tasks whose I/O sits in the ring, not yet taken */
	unsigned n_unsub;
};

static uint8_t *slot_data(const struct eng_task *t)
{
	return t->stripe->link.data + (size_t)t->slot * t->stripe->link.slot_size;
}

static bool is_rw(const struct io_op *op)
{
	return op->kind == IO_OP_READ || op->kind == IO_OP_WRITE;
}

/* ---- the steps of a task, on whichever thread runs it ---- */

static void task_fail(struct eng_task *t, int err)
{
	t->err = err;
	eng__job_fail(t->stripe->job, err, "%s", rcp_err_msg(err));
}

static bool task_prepare(struct eng_task *t)
{
	struct eng_job *job = t->stripe->job;
	int err;

	t->op = (struct io_op){.kind = IO_OP_NONE};
	t->moved = 0;
	t->err = 0;
	if (job->role == ENG_SENDER)
		err = job->src.prepare(job->src.ctx, &t->hdr, slot_data(t), &t->op);
	else
		err = job->sink.prepare(job->sink.ctx, &t->hdr, slot_data(t), &t->op);
	if (err)
		task_fail(t, err);
	return !err;
}

/* Complete the I/O in t->op with res; true if the task has a next I/O (in t->op). */
static bool task_complete(struct eng_task *t, int64_t res)
{
	struct eng_job *job = t->stripe->job;
	int err = 0;

	if (job->role == ENG_SENDER && job->src.complete)
		err = job->src.complete(job->src.ctx, &t->hdr, slot_data(t), res, &t->op);
	else if (job->role == ENG_RECEIVER && job->sink.complete)
		err = job->sink.complete(job->sink.ctx, &t->hdr, slot_data(t), res, &t->op);
	if (err < 0)
		task_fail(t, err);
	t->moved = 0;
	return err == ENG_STEP_MORE && t->op.kind != IO_OP_NONE;
}

/* The rest of a task on the calling thread: its I/Os with io_op_run, and their completes. */
static void task_finish(struct eng_task *t, int64_t res)
{
	while (task_complete(t, res))
		res = io_op_run(&t->op, slot_data(t));
}

/* All of a task on the calling thread. */
static void task_run(struct eng_task *t)
{
	if (task_prepare(t))
		task_finish(t, io_op_run(&t->op, slot_data(t)));
}

static void done_push(struct eng_worker *w, struct eng_task *t)
{
	struct eng_task *head = atomic_load(&w->done);

	do
		t->next = head;
	while (!atomic_compare_exchange_weak(&w->done, &head, t));
	if (head == NULL && !w->own)
		eng__fd_signal(w->done_fd); /* the worker's own ring signals it itself */
}

/* ---- the ring ---- */

/* Whether h's ring can take one more task's I/O (each task has one there at a time). */
static bool ring_room(const struct eng_helper *h)
{
	return h->inflight + h->n_unsub < h->w->job->io_depth;
}

static void ring_put(struct eng_helper *h, struct eng_task *t)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&h->ring); /* room: see helper_take */
	const struct io_op *op = &t->op;
	uint8_t *buf = slot_data(t) + t->moved;
	uint64_t off = op->off + t->moved;

	switch (op->kind) {
	case IO_OP_READ:
		io_uring_prep_read(sqe, op->fd, buf, op->len - t->moved, off);
		break;
	case IO_OP_WRITE:
		io_uring_prep_write(sqe, op->fd, buf, op->len - t->moved, off);
		break;
	case IO_OP_OPEN:
		/* the kernel copies path and how when it takes the entry */
		io_uring_prep_openat2(sqe, op->fd, op->path, (struct open_how *)&op->how);
		break;
	case IO_OP_RENAME:
		io_uring_prep_renameat(sqe, op->fd, op->path, op->fd2, op->path2, 0);
		break;
	case IO_OP_FSYNC:
		io_uring_prep_fsync(sqe, op->fd, 0);
		break;
	case IO_OP_NONE:
		io_uring_prep_nop(sqe); /* never put: see task_next */
		break;
	}
	io_uring_sqe_set_data(sqe, t);
	h->unsub[h->n_unsub++] = t;
}

static void ring_submit(struct eng_helper *h)
{
	int n;
	unsigned i;

	if (h->n_unsub == 0)
		return;
	do
		n = io_uring_submit(&h->ring);
	while (n == -EINTR);
	if (n == -EAGAIN || n == -EBUSY)
		return; /* the kernel is short of something: again after the next completion */
	if (n < 0) {
		/* The entries the kernel did not take never run once it is not entered again. */
		rcp_err(n, "the I/O ring of worker %u refused work: %s", h->w->tr.index,
			strerror(-n));
		h->ring_dead = true;
		for (i = 0; i < h->n_unsub; i++) {
			task_fail(h->unsub[i], n);
			task_finish(h->unsub[i], n);
			done_push(h->w, h->unsub[i]);
		}
		h->n_unsub = 0;
		return;
	}
	h->inflight += (unsigned)n;
	h->n_unsub -= (unsigned)n;
	memmove(h->unsub, h->unsub + n, h->n_unsub * sizeof(*h->unsub));
}

/*
 * Complete t's I/O with res and put its next one in the ring (with the ring
 * gone, do the rest here); true if the task is done.
 */
static bool task_next(struct eng_helper *h, struct eng_task *t, int64_t res)
{
	if (!task_complete(t, res))
		return true;
	if (h->ring_dead) {
		task_finish(t, io_op_run(&t->op, slot_data(t)));
		return true;
	}
	ring_put(h, t); /* room: its last I/O just left the ring */
	return false;
}

/* An I/O came back with res: a read or write again for the rest after a short count. */
static void ring_done(struct eng_helper *h, struct eng_task *t, int64_t res)
{
	h->inflight--;
	if (is_rw(&t->op) && res >= 0) {
		t->moved += (uint32_t)res;
		if (res > 0 && t->moved < t->op.len && !h->ring_dead) {
			ring_put(h, t);
			return;
		}
		res = t->moved;
	}
	if (task_next(h, t, res))
		done_push(h->w, t);
}

/* Take every completion the ring holds; true if there was one. */
static bool ring_reap(struct eng_helper *h)
{
	struct io_uring_cqe *cqe;
	bool any = false;

	while (io_uring_peek_cqe(&h->ring, &cqe) == 0) {
		uint64_t tag = cqe->user_data;
		int res = cqe->res;

		io_uring_cqe_seen(&h->ring, cqe);
		any = true;
		if (tag == POLL_TAG) {
			h->poll_armed = false;
			eng__fd_drain(h->efd);
		} else {
			ring_done(h, (struct eng_task *)(uintptr_t)tag, res);
		}
	}
	return any;
}

/* Sleep in the ring until a completion or news in the queue. */
static void ring_wait(struct eng_helper *h)
{
	struct io_uring_sqe *sqe;

	if (h->n_unsub) {
		/*
		 * The kernel left some entries (busy): waiting here would submit them
		 * uncounted. Again shortly instead.
		 */
		usleep(1000);
		return;
	}
	if (!h->poll_armed) {
		sqe = io_uring_get_sqe(&h->ring); /* one entry is kept for it */
		io_uring_prep_poll_add(sqe, h->efd, POLLIN);
		io_uring_sqe_set_data64(sqe, POLL_TAG);
		h->poll_armed = true;
	}
	if (io_uring_submit_and_wait(&h->ring, 1) < 0)
		usleep(1000); /* EINTR, or short of memory: look again */
}

/* ---- the helper thread ---- */

/* h's queue of tasks (a helper's under its lock; the worker's own ring's is the worker's). */
static void queue_put(struct eng_helper *h, struct eng_task *t)
{
	t->next = NULL;
	if (h->tail)
		h->tail->next = t;
	else
		h->head = t;
	h->tail = t;
}

static struct eng_task *queue_take(struct eng_helper *h)
{
	struct eng_task *t = h->head;

	if (t) {
		h->head = t->next;
		if (!h->head)
			h->tail = NULL;
	}
	return t;
}

/* The next task of the queue, or NULL; *quit as the worker set it. */
static struct eng_task *helper_take(struct eng_helper *h, bool *quit)
{
	struct eng_task *t = NULL;

	pthread_mutex_lock(&h->lock);
	*quit = h->quit;
	if (!*quit)
		t = queue_take(h);
	pthread_mutex_unlock(&h->lock);
	return t;
}

/* Prepare t and put its I/O in h's ring; true if it is done already (failed, or no I/O). */
static bool ring_begin(struct eng_helper *h, struct eng_task *t)
{
	if (!task_prepare(t))
		return true;
	if (t->op.kind == IO_OP_NONE || (is_rw(&t->op) && t->op.len == 0)) {
		if (task_next(h, t, 0))
			return true;
	} else {
		ring_put(h, t);
	}
	ring_submit(h); /* at once: the next prepare may block (an open) */
	return false;
}

/* A task from the queue into the ring (or done at once); completions stay flowing. */
static void ring_start(struct eng_helper *h, struct eng_task *t)
{
	if (ring_begin(h, t))
		done_push(h->w, t);
	ring_reap(h);
}

static void helper_loop_ring(struct eng_helper *h)
{
	struct io_uring_cqe *cqe;
	struct eng_task *t;
	bool quit = false, busy;

	while (!h->ring_dead) {
		busy = false;
		while (!h->ring_dead && ring_room(h) && (t = helper_take(h, &quit)) != NULL) {
			busy = true;
			ring_start(h, t);
		}
		ring_submit(h); /* what a short count or a busy kernel left */
		busy |= ring_reap(h);
		/* checked here, once quit was read: its wake-up may have been drained already */
		if (quit && h->inflight == 0 && h->n_unsub == 0)
			break;
		if (!busy && !h->ring_dead)
			ring_wait(h);
	}
	/*
	 * What the kernel took still lands in slot memory, freed after the join:
	 * wait for it. Bounded as the disk is: inflight counts file I/O only (the
	 * poll on efd is not counted, so no peer and no missing wake-up can hold
	 * it), and a task's later steps (a short count, fsync, rename) are few.
	 * A disk that never answers holds it, and must: returning would free
	 * memory the kernel still writes. An error (EINTR) just waits again.
	 */
	while (h->inflight > 0)
		if (io_uring_wait_cqe(&h->ring, &cqe) == 0)
			ring_reap(h);
}

static void helper_loop_sync(struct eng_helper *h)
{
	struct pollfd pfd = {.fd = h->efd, .events = POLLIN};
	struct eng_task *t;
	bool quit = false;

	while (!quit) {
		t = helper_take(h, &quit);
		if (t) {
			task_run(t);
			done_push(h->w, t);
		} else if (!quit && poll(&pfd, 1, ENG_SLEEP_MS) > 0) {
			eng__fd_drain(h->efd);
		}
	}
}

/* h's ring of job->io_depth entries (+1 for a poll); records which I/O the job got. */
static int ring_init(struct eng_helper *h)
{
	struct eng_job *job = h->w->job;
	int err, expect = 0;

	pthread_mutex_lock(&ring_map_lock);
	err = job->io_depth ? io_uring_queue_init(job->io_depth + 1, &h->ring, 0) : -EOPNOTSUPP;
	pthread_mutex_unlock(&ring_map_lock);
	/* the first to know says which I/O the job got (none asked for: nothing to say) */
	if (job->io_depth)
		atomic_compare_exchange_strong(&job->io_ring, &expect, err ? err : 1);
	return err;
}

static void ring_exit(struct eng_helper *h)
{
	pthread_mutex_lock(&ring_map_lock);
	io_uring_queue_exit(&h->ring);
	pthread_mutex_unlock(&ring_map_lock);
}

static void *helper_main(void *arg)
{
	struct eng_helper *h = arg;
	struct eng_worker *w = h->w;
	struct eng_job *job = w->job;

	eng__thread_name(job, 'h', w->tr.index, h->index);
	if (w->bind)
		topo_thread_bind(&w->cpus, w->node); /* the worker said so if it cannot */
	if (ring_init(h) == 0) {
		helper_loop_ring(h);
		ring_exit(h);
	}
	helper_loop_sync(h); /* without a ring, or after the kernel refused it */
	return NULL;
}

/* ---- the worker's side ---- */

/*
 * No helpers, a ring: the worker's own, driven without blocking from its
 * loop (a node with one CPU has no other core to hand work to, but its I/O
 * can still overlap). Its completions signal the done fd the worker sleeps
 * on. Without io_uring the worker does each chunk's I/O itself.
 */
static int own_start(struct eng_worker *w)
{
	struct eng_helper *h = calloc(1, sizeof(*h));
	int err;

	if (!h || !(h->unsub = calloc(w->job->io_depth + 1, sizeof(*h->unsub)))) {
		free(h);
		return rcp_err(-ENOMEM, "out of memory for the worker's I/O ring");
	}
	h->w = w;
	h->efd = -1;
	err = ring_init(h);
	if (!err && (err = io_uring_register_eventfd(&h->ring, w->done_fd)) != 0) {
		ring_exit(h);
		atomic_store(&w->job->io_ring, err);
	}
	if (err) {
		free(h->unsub);
		free(h);
		return 0; /* pread and pwrite on the worker: the report says why */
	}
	w->own = h;
	return 0;
}

/* Start t in the worker's own ring, or queue it for room; true if it is done already. */
static bool own_submit(struct eng_helper *h, struct eng_task *t)
{
	if (h->ring_dead) {
		task_run(t);
		return true;
	}
	if (!ring_room(h)) {
		queue_put(h, t);
		return false;
	}
	return ring_begin(h, t);
}

/*
 * The worker's own ring: its completions to the done list, then queued
 * tasks as room allows. Submitted at the end too: a completion may have put
 * its task's next I/O in the ring, and the worker may sleep next.
 */
static void own_poll(struct eng_helper *h)
{
	struct eng_task *t;

	ring_submit(h); /* what a short count or a busy kernel left */
	ring_reap(h);
	while (h->head && (h->ring_dead || ring_room(h))) {
		t = queue_take(h);
		if (own_submit(h, t))
			done_push(h->w, t);
	}
	ring_submit(h);
}

static void own_stop(struct eng_worker *w)
{
	struct eng_helper *h = w->own;
	struct io_uring_cqe *cqe;

	if (!h)
		return;
	/*
	 * What the kernel took still lands in slot memory, freed after the worker:
	 * wait for it. Bounded as the disk is, for the reasons helper_loop_ring
	 * gives for its own wait.
	 */
	while (h->inflight > 0)
		if (io_uring_wait_cqe(&h->ring, &cqe) == 0)
			ring_reap(h);
	ring_exit(h);
	free(h->unsub);
	free(h);
	w->own = NULL;
}

int eng__helpers_start(struct eng_worker *w)
{
	struct eng_job *job = w->job;
	unsigned i;
	int err;

	w->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->done_fd < 0)
		return rcp_err(-errno, "eventfd: %s", strerror(errno));
	if (job->helpers == 0)
		return own_start(w);
	w->helper = calloc(job->helpers, sizeof(*w->helper));
	if (!w->helper)
		return rcp_err(-ENOMEM, "out of memory for helper threads");
	for (i = 0; i < job->helpers; i++) {
		struct eng_helper *h = &w->helper[i];

		*h = (struct eng_helper){.w = w, .index = i, .efd = -1};
		pthread_mutex_init(&h->lock, NULL);
		h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		h->unsub = calloc(job->io_depth + 1, sizeof(*h->unsub));
		w->n_helpers++;
		if (h->efd < 0 || !h->unsub)
			return rcp_err(-ENOMEM, "cannot set up helper %u of worker %u", i,
				       w->tr.index);
		err = pthread_create(&h->thread, NULL, helper_main, h);
		if (err)
			return rcp_err(-err, "cannot start a helper thread: %s", strerror(err));
		h->started = true;
	}
	return 0;
}

void eng__helpers_stop(struct eng_worker *w)
{
	unsigned i;

	own_stop(w);
	for (i = 0; i < w->n_helpers; i++) {
		struct eng_helper *h = &w->helper[i];

		pthread_mutex_lock(&h->lock);
		h->quit = true;
		pthread_mutex_unlock(&h->lock);
		if (h->efd >= 0)
			eng__fd_signal(h->efd);
	}
	for (i = 0; i < w->n_helpers; i++) {
		struct eng_helper *h = &w->helper[i];

		/*
		 * Bounded as the disk is: quit is set and efd signalled above (the
		 * ring's poll or the sync loop's ENG_SLEEP_MS poll sees it), a helper
		 * drops its queue and waits only for the file I/O it has in flight or
		 * the task it is running (pread, pwrite, open, fsync, rename: local,
		 * never the peer's). A hung disk holds it; the helper uses slot memory
		 * and the task until then, so it is waited for, not abandoned.
		 */
		if (h->started)
			pthread_join(h->thread, NULL);
		if (h->efd >= 0)
			close(h->efd);
		pthread_mutex_destroy(&h->lock);
		free(h->unsub);
	}
	free(w->helper);
	w->helper = NULL;
	w->n_helpers = 0;
	if (w->done_fd >= 0)
		close(w->done_fd);
	w->done_fd = -1;
}

/*
 * The helper with the fewest tasks out, the search starting one further
 * each time so ties rotate: a helper stuck in a slow open or fsync gets no
 * more work while the others have less.
 */
static struct eng_helper *least_loaded(struct eng_worker *w)
{
	unsigned i, k, best = w->next_helper++ % w->n_helpers;

	for (i = 1; i < w->n_helpers; i++) {
		k = (best + i) % w->n_helpers;
		if (w->helper[k].load < w->helper[best].load)
			best = k;
	}
	return &w->helper[best];
}

bool eng__task_submit(struct eng_worker *w, struct eng_task *t)
{
	struct eng_job *job = w->job;
	bool cheap = job->role == ENG_SENDER ? job->src.cheap : job->sink.cheap;
	struct eng_helper *h;

	if (cheap || (w->n_helpers == 0 && !w->own)) {
		task_run(t);
		return true;
	}
	if (w->own)
		return own_submit(w->own, t);
	h = least_loaded(w);
	h->load++;
	t->helper = (unsigned)(h - w->helper);
	pthread_mutex_lock(&h->lock);
	queue_put(h, t);
	pthread_mutex_unlock(&h->lock);
	h->kick = true;
	return false;
}

void eng__helpers_kick(struct eng_worker *w)
{
	unsigned i;

	for (i = 0; i < w->n_helpers; i++)
		if (w->helper[i].kick) {
			w->helper[i].kick = false;
			eng__fd_signal(w->helper[i].efd);
		}
}

struct eng_task *eng__helpers_done(struct eng_worker *w)
{
	struct eng_task *first, *t;

	if (w->n_helpers == 0 && !w->own)
		return NULL;
	if (w->own)
		own_poll(w->own);
	first = atomic_exchange(&w->done, NULL);
	for (t = first; t && !w->own; t = t->next)
		w->helper[t->helper].load--;
	return first;
}

int eng__helpers_fd(const struct eng_worker *w)
{
	return w->n_helpers || w->own ? w->done_fd : -1;
}
