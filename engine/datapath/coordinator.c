/*
 * coordinator.c - the one place that knows a job's state.
 *
 * How work and completions flow: workers take work themselves - a sender
 * stripe claims the next chunk from the job's cursor whenever a credit
 * frees one of its slots - and count what completes in counters that only
 * they write (per stripe: bytes and chunks; per worker: chunks done, first
 * and last completion times). The coordinator, on the session's thread,
 * reads and merges those counters; nobody else adds them up. It wakes every
 * ENG_PROGRESS_MS for the progress callback (which also watches the peer),
 * and at once when a worker writes the job's wake eventfd: a worker that ran
 * out of work, one that failed, one that ended. It ends the job when every
 * chunk of a sender's job is credited back, when the job is stopped (the
 * receiver, once the session hears the sender is done) or failed, or when
 * every worker has ended; then it stops the workers and, calling the
 * progress callback still, waits for them to finish and joins them. A failed
 * stripe's chunks go back to the job (failover.c), so "every chunk credited"
 * still means every chunk arrived once; the report names the rails that
 * failed, when and why.
 *
 * Threading: eng__job_run on the session's thread; eng__job_fail,
 * eng__job_stop, eng__job_wake, the readers of the job's error and state
 * and those of the merged figures are thread-safe (the first error is kept
 * under a lock, the rest are atomics).
 */
#include "engine/datapath/datapath_int.h"

#include "common/common.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void eng__fd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		return; /* the counter is saturated: it is readable anyway */
}

void eng__fd_drain(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0)
		return; /* drained already by another wake: nothing to do */
}

void eng__job_wake(struct eng_job *job)
{
	eng__fd_signal(job->wake_fd);
}

void eng__job_stop(struct eng_job *job)
{
	if (!atomic_exchange(&job->stop, true))
		eng__fd_signal(job->stop_fd);
	eng__job_wake(job);
}

/* fabric is set with the error, under the same lock: a reader of both sees them together. */
static __attribute__((format(printf, 4, 0))) bool
job_fail_v(struct eng_job *job, int err, bool fabric, const char *fmt, va_list ap)
{
	bool first;

	pthread_mutex_lock(&job->err_lock);
	first = atomic_load(&job->err) == 0;
	if (first) {
		vsnprintf(job->err_text, sizeof(job->err_text), fmt, ap);
		atomic_store(&job->fabric_err, fabric);
		atomic_store(&job->err, err ? err : -EIO);
	}
	pthread_mutex_unlock(&job->err_lock);
	eng__job_stop(job);
	return first;
}

bool eng__job_fail(struct eng_job *job, int err, const char *fmt, ...)
{
	va_list ap;
	bool first;

	va_start(ap, fmt);
	first = job_fail_v(job, err, false, fmt, ap);
	va_end(ap);
	return first;
}

bool eng__job_fail_fabric(struct eng_job *job, int err, const char *fmt, ...)
{
	va_list ap;
	bool first;

	va_start(ap, fmt);
	first = job_fail_v(job, err, true, fmt, ap);
	va_end(ap);
	return first;
}

bool eng__job_stopped(const struct eng_job *job)
{
	return atomic_load(&job->stop);
}

int eng__job_error(struct eng_job *job, char *text, size_t len)
{
	int err;

	pthread_mutex_lock(&job->err_lock);
	err = atomic_load(&job->err);
	if (len > 0)
		snprintf(text, len, "%s", job->err_text);
	pthread_mutex_unlock(&job->err_lock);
	return err;
}

bool eng__job_fabric_err(const struct eng_job *job)
{
	return atomic_load(&job->fabric_err);
}

uint64_t eng__job_done_chunks(const struct eng_job *job)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < job->n_workers; i++)
		n += atomic_load_explicit(&job->worker[i].done_chunks, memory_order_acquire);
	return n;
}

/* The job has nothing left to wait for. */
static bool job_over(const struct eng_job *job)
{
	unsigned i, finished = 0;

	if (atomic_load(&job->stop))
		return true;
	if (job->role == ENG_SENDER && eng__job_done_chunks(job) >= job->src.n_chunks)
		return true; /* every chunk is credited back: the receiver holds it */
	for (i = 0; i < job->n_workers; i++)
		finished += atomic_load(&job->worker[i].finished);
	return finished == job->n_workers;
}

static int workers_start(struct eng_job *job)
{
	unsigned i;
	int err;

	for (i = 0; i < job->n_workers; i++) {
		err = pthread_create(&job->worker[i].thread, NULL, eng__worker_main,
				     &job->worker[i]);
		if (err) {
			eng__job_fail(job, -err, "cannot start worker thread %u: %s", i,
				      strerror(err));
			return -err;
		}
		job->worker[i].started = true;
	}
	return 0;
}

static bool workers_finished(const struct eng_job *job)
{
	unsigned i;

	for (i = 0; i < job->n_workers; i++)
		if (job->worker[i].started && !atomic_load(&job->worker[i].finished))
			return false;
	return true;
}

/*
 * The stopped job's workers, each until it has finished (its helpers joined),
 * before they are joined. Bounded against the peer and the fabric by
 * construction: a worker reads job->stop every round, and nothing in a round
 * waits for them (posts and polls return at once, its sleep is ENG_SLEEP_MS).
 * Only local file I/O can hold it: its own pread, pwrite, open or fsync when
 * it has no helpers, and eng__helpers_stop's joins (iothreads.c). A disk that
 * never answers (a dead hard NFS mount, a suspended device) holds it as long:
 * no user-space code can cancel that system call, and the I/O lands in slot
 * memory freed after the join, so waiting is the safe choice. What it can do
 * is say so: after job->hold_ms, one notice names the wait, so a side held by
 * its disk is not silent. The caller's progress still runs each period, so
 * its session can tell the peer why at once instead of after the join (the
 * peer then ends with this side's reason, not at its own stall limit).
 */
static void workers_wait(struct eng_job *job, void (*progress)(struct eng_job *job, void *ctx),
			 void *ctx)
{
	struct pollfd pfd = {.fd = job->wake_fd, .events = POLLIN};
	uint64_t since = rcp_now_ns(), held_ns = (uint64_t)job->hold_ms * 1000000u;

	while (!workers_finished(job)) {
		if (poll(&pfd, 1, ENG_PROGRESS_MS) > 0)
			eng__fd_drain(job->wake_fd);
		if (!atomic_load(&job->held) && rcp_now_ns() - since >= held_ns) {
			rcp_log(RCP_LOG_NOTICE,
				"the %s has stopped, but its file I/O has not returned for %g s: "
				"waiting for the disk (a hung device or file system holds this "
				"side until it answers)",
				job->role == ENG_SENDER ? "sender" : "receiver",
				job->hold_ms / 1000.0);
			atomic_store(&job->held, true);
		}
		if (progress)
			progress(job, ctx);
	}
}

/* The fd the progress watches, while a receiver waits for its peer's word to drain; else -1. */
static int watched_fd(const struct eng_job *job)
{
	if (job->role != ENG_RECEIVER || atomic_load(&job->rcv.draining))
		return -1;
	return job->watch_fd;
}

int eng__job_run(struct eng_job *job, void (*progress)(struct eng_job *job, void *ctx), void *ctx)
{
	struct pollfd pfd[2] = {{.fd = job->wake_fd, .events = POLLIN}, {.events = POLLIN}};
	unsigned i;
	int err;

	if ((err = eng__failover_init(job)) != 0)
		return err;
	job->t_start_ns = rcp_now_ns();
	workers_start(job);
	while (!job_over(job)) {
		pfd[1].fd = progress ? watched_fd(job) : -1;
		if (poll(pfd, 2, ENG_PROGRESS_MS) > 0 && (pfd[0].revents & POLLIN))
			eng__fd_drain(job->wake_fd);
		if (progress)
			progress(job, ctx);
	}
	eng__job_stop(job);
	workers_wait(job, progress, ctx);
	for (i = 0; i < job->n_workers; i++)
		if (job->worker[i].started)
			pthread_join(job->worker[i].thread, NULL);
	err = atomic_load(&job->err);
	if (err)
		return rcp_err(err, "%s", job->err_text);
	return 0;
}

/* How this end moves its files' bytes, in words, once the workers ran. */
static void file_io_describe(const struct eng_job *job, struct eng_report *r)
{
	int ring = atomic_load(&job->io_ring);
	bool cheap = job->role == ENG_SENDER ? job->src.cheap : job->rcv.sink.cheap;

	if (cheap || (job->role == ENG_SENDER ? !job->src.prepare : !job->rcv.sink.prepare))
		return; /* bench: no files */
	r->helpers = job->helpers;
	r->io_depth = ring > 0 ? job->io_depth : 0;
	if (job->helpers == 0 && ring > 0)
		snprintf(r->file_io, sizeof(r->file_io),
			 "io_uring on the worker threads, %u deep each (no helpers)",
			 job->io_depth);
	else if (job->helpers == 0)
		snprintf(r->file_io, sizeof(r->file_io),
			 "pread and pwrite on the worker threads (no helpers; io_uring: %s)",
			 ring < 0 ? strerror(-ring) : "off");
	else if (ring > 0)
		snprintf(r->file_io, sizeof(r->file_io),
			 "io_uring, %u helper thread%s per worker, %u deep each", job->helpers,
			 job->helpers == 1 ? "" : "s", job->io_depth);
	else
		snprintf(r->file_io, sizeof(r->file_io),
			 "pread and pwrite on %u helper thread%s per worker (io_uring: %s)",
			 job->helpers, job->helpers == 1 ? "" : "s",
			 ring < 0 ? strerror(-ring) : "off");
}

/* Each rail's name, node and, if its stripes failed, when and why. */
static void rails_report(const struct eng_job *job, struct eng_report *r)
{
	unsigned i;

	pthread_mutex_lock((pthread_mutex_t *)&job->err_lock);
	for (i = 0; i < job->n_rails && i < TOPO_MAX_RAILS; i++) {
		const struct eng_rail_stat *rs = &job->rail[i];
		struct eng_rail_report *rr = &r->rail[i];

		snprintf(rr->name, sizeof(rr->name), "%s", rs->name);
		rr->node = rs->node;
		rr->stripes = rs->stripes;
		rr->stripes_lost = rs->stripes_dead;
		snprintf(rr->why, sizeof(rr->why), "%s", rs->stripes_dead ? rs->why : "");
		rr->stripes_left_out = rs->stripes_out;
		snprintf(rr->left_out_why, sizeof(rr->left_out_why), "%s", rs->out_why);
		rr->left_out = rs->out_why[0] && rs->stripes_out == rs->stripes;
		r->rails_left_out += rr->left_out;
		rr->failed = rs->failed_ns != 0 && !rr->left_out;
		rr->failed_at = rr->failed && rs->failed_ns > job->t_start_ns
					? (double)(rs->failed_ns - job->t_start_ns) / 1e9
					: 0.0;
		r->rails_failed += rr->failed;
	}
	pthread_mutex_unlock((pthread_mutex_t *)&job->err_lock);
}

void eng__job_report(const struct eng_job *job, struct eng_report *r)
{
	uint64_t t0 = 0, t1 = 0;
	unsigned i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < job->n_workers; i++) {
		uint64_t a = atomic_load(&job->worker[i].t_first_ns);
		uint64_t b = atomic_load(&job->worker[i].t_last_ns);

		if (a && (!t0 || a < t0))
			t0 = a;
		if (b > t1)
			t1 = b;
	}
	r->bytes_total = job->src.total;
	r->chunks = eng__job_done_chunks(job);
	r->seconds = t0 && t1 > t0 ? (double)(t1 - t0) / 1e9 : 0.0;
	r->chunk = job->n_stripes ? job->stripe[0].link.slot_size : 0;
	r->n_slots = job->n_stripes ? job->stripe[0].link.n_slots : 0;
	r->n_stripes = job->n_stripes;
	r->n_rails = job->n_rails;
	r->failover = job->failover;
	rails_report(job, r);
	for (i = 0; i < job->n_stripes; i++) {
		const struct eng_stripe *s = &job->stripe[i];

		if (s->rail >= TOPO_MAX_RAILS)
			continue;
		r->rail[s->rail].bytes += atomic_load_explicit(&s->bytes, memory_order_relaxed);
		r->rail[s->rail].chunks += atomic_load_explicit(&s->chunks, memory_order_relaxed);
		if (s->link.mtu && !r->rail[s->rail].mtu) { /* every link of a rail agreed alike */
			r->rail[s->rail].mtu = s->link.mtu;
			r->rail[s->rail].peer_mtu = s->link.peer_mtu;
		}
	}
	for (i = 0; i < job->n_rails && i < TOPO_MAX_RAILS; i++)
		r->bytes += r->rail[i].bytes;
	file_io_describe(job, r);
}
