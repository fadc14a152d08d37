/*
 * ioring.c - a task's steps and the io_uring they go through: a helper's
 * ring, or the worker's own when it has no helpers (iothreads.c starts
 * them and feeds them tasks).
 *
 * For each task the ring's owner runs the source's or sink's prepare (open,
 * name, check, verify), puts the chunk's read or write in its ring straight
 * into or out of the registered slot memory (O_DIRECT where the file side
 * allows: disk to wire with no copy), and when the ring completes it runs
 * complete (hash, count, close, put a file in place). A short count is
 * submitted again for the rest. A task may take several I/Os in turn
 * (datapath_int.h): a file of one chunk is opened by ring entries before its
 * read or write, and every file's fsyncs and rename into place follow its
 * last write, so a tree of small files keeps the ring full of opens, fsyncs
 * and renames instead of a helper blocked in each. When complete says no
 * more, the task goes on the worker's done list.
 *
 * A submission the kernel refuses for good fails the job and the tasks it
 * held; the ring is dead from then on, and its owner does each task's I/O
 * itself (io_op_run). Without a ring at all, a task runs whole on the
 * calling thread (eng__task_run).
 *
 * Threading: a ring, its counts and a task from its prepare to done belong
 * to the ring's owner (a helper thread, or the worker); the done list is a
 * stack any of them pushes onto and the worker empties at once (no lock:
 * one taker, which takes everything, cannot meet a reused node). Rings are
 * set up and torn down under one lock (ring_map_lock says why).
 */
#include "engine/datapath/ioring_int.h"

#include "common/common.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <string.h>
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
		err = job->rcv.sink.prepare(job->rcv.sink.ctx, &t->hdr, slot_data(t), &t->op);
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
	else if (job->role == ENG_RECEIVER && job->rcv.sink.complete)
		err = job->rcv.sink.complete(job->rcv.sink.ctx, &t->hdr, slot_data(t), res, &t->op);
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

void eng__task_run(struct eng_task *t)
{
	if (task_prepare(t))
		task_finish(t, io_op_run(&t->op, slot_data(t)));
}

void eng__done_push(struct eng_worker *w, struct eng_task *t)
{
	struct eng_task *head = atomic_load(&w->done);

	do
		t->next = head;
	while (!atomic_compare_exchange_weak(&w->done, &head, t));
	if (head == NULL && !w->own)
		eng__fd_signal(w->done_fd); /* the worker's own ring signals it itself */
}

/* ---- the ring ---- */

bool eng__ring_room(const struct eng_helper *h)
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

void eng__ring_submit(struct eng_helper *h)
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
			eng__done_push(h->w, h->unsub[i]);
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
		eng__done_push(h->w, t);
}

bool eng__ring_reap(struct eng_helper *h)
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

void eng__ring_wait(struct eng_helper *h)
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

bool eng__ring_begin(struct eng_helper *h, struct eng_task *t)
{
	if (!task_prepare(t))
		return true;
	if (t->op.kind == IO_OP_NONE || (is_rw(&t->op) && t->op.len == 0)) {
		if (task_next(h, t, 0))
			return true;
	} else {
		ring_put(h, t);
	}
	eng__ring_submit(h); /* at once: the next prepare may block (an open) */
	return false;
}

int eng__ring_init(struct eng_helper *h)
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

void eng__ring_exit(struct eng_helper *h)
{
	pthread_mutex_lock(&ring_map_lock);
	io_uring_queue_exit(&h->ring);
	pthread_mutex_unlock(&ring_map_lock);
}
