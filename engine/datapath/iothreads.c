/*
 * iothreads.c - a worker's helper threads: everything a chunk needs besides
 * the wire. The worker thread only drives RDMA (posts, polls, credits);
 * reading, hashing and writing chunks happens here, so a node keeps many
 * file I/Os in flight and hashes on several cores while its rails stay fed.
 *
 * Each worker starts job->helpers threads, pinned to its node like itself.
 * Each helper has a queue the worker fills (to the helper with the fewest
 * tasks out; one eventfd write per helper and round) and, where the kernel
 * allows, an io_uring of job->io_depth entries, through which it takes each
 * task from its prepare to its complete (ioring.c). When complete says no
 * more, the task goes on the worker's done list; the worker posts the chunk
 * or returns its credit. A worker without helpers drives a ring of its own
 * from its loop, without blocking.
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
 * a stack the helpers push onto and the worker empties at once (ioring.c).
 */
#include "engine/datapath/ioring_int.h"

#include "common/common.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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

/* A task from the queue into the ring (or done at once); completions stay flowing. */
static void ring_start(struct eng_helper *h, struct eng_task *t)
{
	if (eng__ring_begin(h, t))
		eng__done_push(h->w, t);
	eng__ring_reap(h);
}

static void helper_loop_ring(struct eng_helper *h)
{
	struct io_uring_cqe *cqe;
	struct eng_task *t;
	bool quit = false, busy;

	while (!h->ring_dead) {
		busy = false;
		while (!h->ring_dead && eng__ring_room(h) && (t = helper_take(h, &quit)) != NULL) {
			busy = true;
			ring_start(h, t);
		}
		eng__ring_submit(h); /* what a short count or a busy kernel left */
		busy |= eng__ring_reap(h);
		/* checked here, once quit was read: its wake-up may have been drained already */
		if (quit && h->inflight == 0 && h->n_unsub == 0)
			break;
		if (!busy && !h->ring_dead)
			eng__ring_wait(h);
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
			eng__ring_reap(h);
}

static void helper_loop_sync(struct eng_helper *h)
{
	struct pollfd pfd = {.fd = h->efd, .events = POLLIN};
	struct eng_task *t;
	bool quit = false;

	while (!quit) {
		t = helper_take(h, &quit);
		if (t) {
			eng__task_run(t);
			eng__done_push(h->w, t);
		} else if (!quit && poll(&pfd, 1, ENG_SLEEP_MS) > 0) {
			eng__fd_drain(h->efd);
		}
	}
}

static void *helper_main(void *arg)
{
	struct eng_helper *h = arg;
	struct eng_worker *w = h->w;
	struct eng_job *job = w->job;

	eng__thread_name(job, 'h', w->tr.index, h->index);
	if (w->bind)
		topo_thread_bind(&w->cpus, w->node); /* the worker said so if it cannot */
	if (eng__ring_init(h) == 0) {
		helper_loop_ring(h);
		eng__ring_exit(h);
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
	err = eng__ring_init(h);
	if (!err && (err = io_uring_register_eventfd(&h->ring, w->done_fd)) != 0) {
		eng__ring_exit(h);
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
		eng__task_run(t);
		return true;
	}
	if (!eng__ring_room(h)) {
		queue_put(h, t);
		return false;
	}
	return eng__ring_begin(h, t);
}

/*
 * The worker's own ring: its completions to the done list, then queued
 * tasks as room allows. Submitted at the end too: a completion may have put
 * its task's next I/O in the ring, and the worker may sleep next.
 */
static void own_poll(struct eng_helper *h)
{
	struct eng_task *t;

	eng__ring_submit(h); /* what a short count or a busy kernel left */
	eng__ring_reap(h);
	while (h->head && (h->ring_dead || eng__ring_room(h))) {
		t = queue_take(h);
		if (own_submit(h, t))
			eng__done_push(h->w, t);
	}
	eng__ring_submit(h);
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
			eng__ring_reap(h);
	eng__ring_exit(h);
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
	bool cheap = job->role == ENG_SENDER ? job->src.cheap : job->rcv.sink.cheap;
	struct eng_helper *h;

	if (cheap || (w->n_helpers == 0 && !w->own)) {
		eng__task_run(t);
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
