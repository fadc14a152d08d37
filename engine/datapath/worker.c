/*
 * worker.c - the worker loop: one thread per NUMA node, pinned to it,
 * driving the stripes of that node's rails.
 *
 * The loop: a sender pumps chunks into every stripe with credits (each
 * chunk's task goes to a helper thread, iothreads.c); then the worker polls
 * its CQs, takes back the tasks its helpers finished, hands each to its
 * stripe, and posts the chunks that are ready. After busy_poll_us without a
 * completion or a task back it sleeps on the CQs' event fds, the helpers'
 * done fd and the job's stop fd, at most ENG_SLEEP_MS, so every wait ends
 * on a completion, a task, a stop, or the stall limit. A sender worker that has nothing left to
 * claim and every credit back tells the coordinator once (eng__job_wake); the coordinator, not the
 * worker, decides that the job is complete.
 *
 * Threading: a worker's CQs, stripes and counters belong to its thread.
 */
#include "engine/datapath/datapath_int.h"

#include "common/common.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

void eng__thread_name(const struct eng_job *job, char kind, unsigned i, unsigned k)
{
	char name[16]; /* the kernel keeps 15 bytes */
	const char *end = job->role == ENG_SENDER ? "snd" : "rcv";

	if (kind == 'w')
		snprintf(name, sizeof(name), "rcp-%s-w%u", end, i);
	else
		snprintf(name, sizeof(name), "rcp-%s-%c%u.%u", end, kind, i, k);
	pthread_setname_np(pthread_self(), name);
}

bool eng__worker_idle(const struct eng_worker *w)
{
	const struct eng_job *job = w->job;
	unsigned i;

	if (job->role == ENG_RECEIVER)
		return false; /* runs until the session stops or drains it */
	if (atomic_load(&job->snd.next_chunk) < job->src.n_chunks ||
	    atomic_load(&job->snd.retry_pending) > 0)
		return false;
	for (i = 0; i < w->n_stripes; i++)
		if (w->stripe[i]->outstanding || w->stripe[i]->busy || w->stripe[i]->n_ready)
			return false;
	return true;
}

/* Poll every CQ of the worker once; returns the count or -errno. */
static int worker_poll(struct eng_worker *w, struct eng_wc *wc)
{
	unsigned i;
	int n = 0, k;

	for (i = 0; i < w->tr.n_cqs && n < ENG_POLL_BATCH; i++) {
		struct eng_cq *cq = w->tr.cq[i];

		k = cq->ops->poll(cq, wc + n, ENG_POLL_BATCH - n);
		if (k < 0)
			return k;
		n += k;
	}
	return n;
}

/*
 * Sleep on the CQs' event fds, the helpers' done fd, the job's stop fd and,
 * in a receiver not yet draining, its drain fd, at most ENG_SLEEP_MS: the
 * sender's "done" ends the wait at once, not a sleep later (which cost every
 * copy 100 ms: the steps showed it). The drain fd stays readable, so once
 * draining the worker no longer polls it. A completion may have arrived
 * between the last poll and the arm, so poll once more after arming.
 */
static int worker_sleep(struct eng_worker *w, struct eng_wc *wc, int *n)
{
	struct pollfd pfd[ENG_MAX_CQS + 3];
	bool drain = w->job->role == ENG_RECEIVER && !atomic_load(&w->job->rcv.draining);
	unsigned i, k = w->tr.n_cqs;
	int err;

	for (i = 0; i < k; i++) {
		struct eng_cq *cq = w->tr.cq[i];

		if ((err = cq->ops->arm(cq)) != 0)
			return err;
		pfd[i] = (struct pollfd){.fd = cq->ops->event_fd(cq), .events = POLLIN};
	}
	pfd[k] = (struct pollfd){.fd = w->job->stop_fd, .events = POLLIN};
	pfd[k + 1] = (struct pollfd){.fd = eng__helpers_fd(w), .events = POLLIN};
	pfd[k + 2] = (struct pollfd){.fd = drain ? w->job->drain_fd : -1, .events = POLLIN};
	*n = worker_poll(w, wc);
	if (*n != 0)
		return *n < 0 ? *n : 0;
	if (poll(pfd, k + 3, ENG_SLEEP_MS) > 0) {
		for (i = 0; i < k; i++)
			if (pfd[i].revents & POLLIN)
				w->tr.cq[i]->ops->ack_events(w->tr.cq[i]);
		if (pfd[k + 1].revents & POLLIN)
			eng__fd_drain(pfd[k + 1].fd);
	}
	return 0;
}

/* Take the tasks the helpers finished into *done, if it is empty; true if it is not. */
static bool worker_reap(struct eng_worker *w, struct eng_task **done)
{
	if (!*done)
		*done = eng__helpers_done(w);
	return *done != NULL;
}

static void worker_stalled(struct eng_worker *w)
{
	unsigned i, busy = 0;

	for (i = 0; i < w->n_stripes; i++)
		busy += w->stripe[i]->busy;
	if (busy)
		eng__job_fail(w->job, -ETIMEDOUT,
			      "no chunk's file I/O finished for %u s: the disk or file system "
			      "stalled",
			      w->job->stall_ms / 1000);
	else
		eng__job_fail_fabric(w->job, -ETIMEDOUT,
				     "no completion for %u s: the peer or the fabric stalled",
				     w->job->stall_ms / 1000);
}

/* One round: pump, poll (or sleep), handle, post. False when the worker must stop. */
static bool worker_round(struct eng_worker *w, uint64_t *idle_since, bool *told_idle)
{
	struct eng_job *job = w->job;
	struct eng_wc wc[ENG_POLL_BATCH];
	struct eng_task *done = NULL, *next;
	unsigned i;
	bool m;
	int n, k, err;

	eng__worker_check_lost(
		w); /* stripes the session saw fail go down before anything is posted */
	/* Chunks ready at once (the bench pattern) go out now: the worker may sleep next. */
	if (job->role == ENG_SENDER)
		for (i = 0; i < w->n_stripes; i++) {
			eng__stripe_pump(w->stripe[i]);
			eng__stripe_flush(w->stripe[i]);
		}
	eng__helpers_kick(w);
	n = worker_poll(w, wc);
	m = worker_reap(w, &done);
	if (n == 0 && !m && rcp_now_ns() - *idle_since > job->busy_poll_us * 1000ull) {
		if ((err = worker_sleep(w, wc, &n)) != 0) {
			eng__job_fail(job, err, "waiting for completions failed: %s",
				      strerror(-err));
			return false;
		}
		m = worker_reap(w, &done);
	}
	if (n < 0) {
		eng__job_fail(job, n, "polling the completion queue failed: %s", strerror(-n));
		return false;
	}
	/* A worker whose stripes all went down waits for the others: nothing of its own can stall.
	 */
	if (n > 0 || m || !eng__worker_alive(w))
		*idle_since = rcp_now_ns();
	else if (!*told_idle && rcp_now_ns() - *idle_since > job->stall_ms * 1000000ull)
		worker_stalled(w);
	for (k = 0; k < n; k++)
		eng__stripe_complete(&wc[k]);
	eng__worker_watch(w);
	for (; done; done = next) {
		next = done->next;
		eng__stripe_task_done(done);
	}
	if (job->role == ENG_SENDER)
		for (i = 0; i < w->n_stripes; i++)
			eng__stripe_flush(w->stripe[i]);
	eng__helpers_kick(w);
	if (!*told_idle && eng__worker_idle(w)) {
		*told_idle = true; /* nothing more to do here: the coordinator decides */
		eng__job_wake(job);
	}
	return !eng__worker_drained(w);
}

void *eng__worker_main(void *arg)
{
	struct eng_worker *w = arg;
	struct eng_job *job = w->job;
	uint64_t idle_since = rcp_now_ns();
	bool told_idle = false, cheap;
	int err;

	if (w->n_stripes == 0) {
		atomic_store(&w->finished, true);
		eng__job_wake(job);
		return NULL;
	}
	eng__thread_name(job, 'w', w->tr.index, 0);
	if (w->bind && (err = topo_thread_bind(&w->cpus, w->node)) != 0)
		rcp_log(RCP_LOG_INFO, "worker %u: cannot bind to node %d: %s", w->tr.index, w->node,
			rcp_err_msg(err));
	cheap = job->role == ENG_SENDER ? job->src.cheap : job->rcv.sink.cheap;
	err = (job->helpers || job->io_depth) && !cheap ? eng__helpers_start(w) : 0;
	if (err)
		eng__job_fail(job, err, "%s", rcp_err_msg(err));
	while (!atomic_load_explicit(&job->stop, memory_order_relaxed) &&
	       worker_round(w, &idle_since, &told_idle))
		;
	eng__helpers_stop(w);
	atomic_store(&w->finished, true);
	eng__job_wake(job);
	return NULL;
}
