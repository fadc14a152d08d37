/*
 * failover.c - what a job does when one of its stripes fails on the fabric:
 * a work completion error, a post the device refused, or a port, device or
 * connection event the session saw.
 *
 * With failover on (the default), the stripe goes down alone: its endpoint
 * is moved to the error state, and the session tells the peer on the
 * control connection (eng__job_link_down), because a peer with nothing to
 * post on its side would otherwise wait for credits that cannot come (a
 * QP in error sends nothing, and the rail that would carry a disconnect is
 * the one that failed); every chunk its slots held and
 * the receiver had not credited back goes on the job's retry list, which
 * every sender stripe claims from before the job's cursor. So each chunk is
 * in exactly one place at any time - unclaimed, on the retry list, in one
 * live slot, or credited - and the job ends when every chunk is credited
 * once. A chunk whose first copy did land (its credit was lost with the
 * rail) arrives twice: the receiver counts a chunk once, by a bit per chunk
 * (landed), and its sink accepts the second copy without writing it again
 * (files.c). Once the sender says it is done, a receiver drains: it ends
 * when every task under way is back, so a first copy still being written
 * finishes before the files are checked. Only when every stripe has failed
 * does the job fail, with one sentence naming the last rail and why.
 *
 * Without failover the first such failure fails the job, as any other
 * error does.
 *
 * A stripe that never connected at set-up (eng__job_link_unconnected) is
 * down before the workers start, with no chunk to give back; its rail
 * counts it apart (stripes_out), so the report tells rails left out at
 * set-up from rails lost mid-job.
 *
 * A rail's record (when its last stripe failed, why its first did) is kept
 * under the job's err_lock; the report and the summary name it.
 *
 * Threading: eng__stripe_lost and eng__worker_check_lost on the stripe's
 * worker; eng__job_claim and eng__job_requeue on any sender worker (the
 * retry lock); eng__job_link_lost, eng__job_link_down and eng__job_drain
 * from any thread.
 */
#include "engine/datapath/datapath_int.h"

#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eng__failover_init(struct eng_job *job)
{
	if (job->role == ENG_SENDER) {
		/* A chunk is on the list only while no slot holds it: every slot at most once. */
		job->snd.retry_cap =
			(size_t)job->n_stripes * (job->n_stripes ? job->stripe[0].link.n_slots : 0);
		job->snd.retry = calloc(job->snd.retry_cap ? job->snd.retry_cap : 1,
					sizeof(*job->snd.retry));
		if (!job->snd.retry)
			return rcp_err(-ENOMEM, "out of memory for the job's retry list");
	} else {
		job->rcv.landed = calloc(job->src.n_chunks / 64 + 1, sizeof(*job->rcv.landed));
		if (!job->rcv.landed)
			return rcp_err(-ENOMEM, "out of memory for a map of %llu chunks",
				       (unsigned long long)job->src.n_chunks);
	}
	return 0;
}

void eng__failover_fini(struct eng_job *job)
{
	free(job->snd.retry);
	free((void *)job->rcv.landed);
	job->snd.retry = NULL;
	job->rcv.landed = NULL;
}

bool eng__job_claim(struct eng_job *job, uint64_t *seq_out)
{
	uint64_t seq;

	if (atomic_load_explicit(&job->snd.retry_pending, memory_order_acquire) > 0) {
		bool got = false;

		pthread_mutex_lock(&job->snd.retry_lock);
		if (job->snd.n_retry > 0) {
			*seq_out = job->snd.retry[--job->snd.n_retry];
			atomic_store_explicit(&job->snd.retry_pending, job->snd.n_retry,
					      memory_order_release);
			got = true;
		}
		pthread_mutex_unlock(&job->snd.retry_lock);
		if (got)
			return true;
	}
	seq = atomic_fetch_add(&job->snd.next_chunk, 1);
	if (seq >= job->src.n_chunks)
		return false;
	*seq_out = seq;
	return true;
}

void eng__job_requeue(struct eng_job *job, uint64_t seq)
{
	pthread_mutex_lock(&job->snd.retry_lock);
	/* Cannot overflow: each entry came out of a slot, and slots are retry_cap. */
	job->snd.retry[job->snd.n_retry++] = seq;
	atomic_store_explicit(&job->snd.retry_pending, job->snd.n_retry, memory_order_release);
	pthread_mutex_unlock(&job->snd.retry_lock);
}

bool eng__job_landed(struct eng_job *job, uint64_t seq)
{
	uint64_t bit = 1ull << (seq % 64);

	if (!job->rcv.landed || seq >= job->src.n_chunks)
		return true; /* no map (a job without failover state): count every chunk */
	return !(atomic_fetch_or(&job->rcv.landed[seq / 64], bit) & bit);
}

/* One more stripe of rs left out at set-up; the first says why. Under the job's err_lock. */
static void rail_out(struct eng_rail_stat *rs, const char *why)
{
	if (rs->stripes_out++ == 0)
		snprintf(rs->out_why, sizeof(rs->out_why), "%s", why);
}

/* A short list of the failed rails and why, for the job's last sentence. */
static void rails_why(const struct eng_job *job, char *buf, size_t len)
{
	size_t used = 0;
	unsigned r;

	buf[0] = '\0';
	for (r = 0; r < job->n_rails && used < len; r++) {
		const struct eng_rail_stat *rs = &job->rail[r];

		if (!rs->stripes_dead && !rs->stripes_out)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s: %s", used ? "; " : "",
					 rs->name, rs->stripes_dead ? rs->why : rs->out_why);
	}
}

/* The stripe's rail loses one stripe; the job fails when no stripe is left. */
static void rail_record(struct eng_stripe *s, const char *why)
{
	struct eng_job *job = s->job;
	struct eng_rail_stat *rs = &job->rail[s->rail];
	char all[480];
	bool last;

	pthread_mutex_lock(&job->err_lock);
	/* one the peer gave up at set-up that never carried anything: left out, not failed */
	s->counted_dead =
		!s->lost_setup || atomic_load_explicit(&s->chunks, memory_order_relaxed) != 0;
	if (!s->counted_dead)
		rail_out(rs, why);
	else if (rs->stripes_dead++ == 0)
		snprintf(rs->why, sizeof(rs->why), "%s", why);
	if (rs->stripes_dead + rs->stripes_out == rs->stripes)
		rs->failed_ns = rcp_now_ns();
	pthread_mutex_unlock(&job->err_lock);
	last = atomic_fetch_sub(&job->stripes_alive, 1) == 1;
	rcp_log(RCP_LOG_INFO, "stripe %u on %s failed (%s); %s", s->link.index, rs->name, why,
		last ? "no stripe is left" : "its chunks go to the other stripes");
	if (!last)
		return;
	pthread_mutex_lock(&job->err_lock);
	rails_why(job, all, sizeof(all));
	pthread_mutex_unlock(&job->err_lock);
	eng__job_fail_fabric(job, -EIO, "every rail failed (%s)", all);
}

/*
 * Take s down: nothing more is posted on it, completions still queued for it
 * are ignored, and a sender's held chunks go back to the job. A task still
 * out comes back to eng__stripe_task_done, which requeues its chunk then.
 */
static void stripe_down(struct eng_stripe *s, const char *why)
{
	unsigned i;

	pthread_mutex_lock(&s->job->err_lock);
	snprintf(s->down_why, sizeof(s->down_why), "%s", why);
	pthread_mutex_unlock(&s->job->err_lock);
	atomic_store_explicit(&s->dead, true, memory_order_release);
	s->link.ep->ops->shutdown(s->link.ep);
	if (s->job->role == ENG_SENDER) {
		for (i = 0; i < s->link.n_slots; i++) {
			struct eng_task *t = &s->task[i];

			if (t->held && !t->queued) {
				t->held = false;
				eng__job_requeue(s->job, t->hdr.seq);
			}
		}
		s->n_free = 0;
		s->n_ready = 0;
		atomic_fetch_sub_explicit(&s->job->rail[s->rail].out, s->outstanding,
					  memory_order_relaxed);
		s->outstanding = 0;
	}
	rail_record(s, why);
	eng__job_wake(s->job);
}

void eng__stripe_lost(struct eng_stripe *s, int err, const char *what)
{
	char why[200], where[160];

	if (s->dead)
		return; /* the rest of its queue flushing out */
	s->link.ep->ops->describe(s->link.ep, where, sizeof(where));
	snprintf(why, sizeof(why), "%s on %s", what, where);
	if (!s->job->failover) {
		eng__job_fail_fabric(s->job, err, "%s", why);
		return;
	}
	stripe_down(s, why);
}

void eng__job_link_unconnected(struct eng_job *job, unsigned link, const char *why)
{
	struct eng_stripe *s = link < job->n_stripes ? &job->stripe[link] : NULL;
	struct eng_rail_stat *rs;

	if (!s || atomic_load(&s->dead))
		return;
	rs = &job->rail[s->rail];
	pthread_mutex_lock(&job->err_lock);
	snprintf(s->down_why, sizeof(s->down_why), "%s", why);
	rail_out(rs, why);
	pthread_mutex_unlock(&job->err_lock);
	/* No worker runs yet: nothing holds a slot of it, and nothing may claim one. */
	s->n_free = 0;
	s->n_ready = 0;
	atomic_store_explicit(&s->dead, true, memory_order_release);
	atomic_fetch_sub(&job->stripes_alive, 1);
}

void eng__job_rail_left_out(struct eng_job *job, unsigned r, const char *why)
{
	if (r >= job->n_rails || job->rail[r].stripes)
		return;
	pthread_mutex_lock(&job->err_lock);
	snprintf(job->rail[r].out_why, sizeof(job->rail[r].out_why), "%s", why);
	pthread_mutex_unlock(&job->err_lock);
}

unsigned eng__job_stripes_alive(const struct eng_job *job)
{
	return atomic_load(&((struct eng_job *)job)->stripes_alive);
}

unsigned eng__job_stripes_up(struct eng_job *job)
{
	unsigned i, gone = 0;

	pthread_mutex_lock(&job->err_lock);
	for (i = 0; i < job->n_stripes; i++)
		gone += job->stripe[i].lost_setup && !atomic_load(&job->stripe[i].dead);
	pthread_mutex_unlock(&job->err_lock);
	return eng__job_stripes_alive(job) - gone;
}

/*
 * The peer's word that s never came up there arrived after s was asked down
 * for another reason (its disconnect, an error of a write that could not
 * land): still pending, it takes the set-up's accounting; down already
 * with nothing carried, it moves from the rail's failed stripes to those
 * left out. Under the job's err_lock.
 */
static void setup_late(struct eng_job *job, struct eng_stripe *s, const char *why)
{
	struct eng_rail_stat *rs = &job->rail[s->rail];

	s->lost_setup = true;
	if (!s->counted_dead || atomic_load_explicit(&s->chunks, memory_order_relaxed) != 0)
		return; /* rail_record will count it as left out, or it carried chunks */
	s->counted_dead = false;
	if (--rs->stripes_dead == 0)
		rs->why[0] = '\0';
	rail_out(rs, why);
}

static void link_lost(struct eng_job *job, unsigned link, const char *why, bool setup)
{
	struct eng_stripe *s;

	if (link >= job->n_stripes)
		return;
	s = &job->stripe[link];
	pthread_mutex_lock(&job->err_lock);
	if (!atomic_load(&s->lost_req)) {
		snprintf(s->lost_why, sizeof(s->lost_why), "%s", why);
		s->lost_setup = setup;
		atomic_store_explicit(&s->lost_req, true, memory_order_release);
	} else if (setup && !s->lost_setup) {
		setup_late(job, s, why); /* a disconnect or an error came first */
	}
	pthread_mutex_unlock(&job->err_lock);
	/* The worker looks at least every ENG_SLEEP_MS; the stop fd would make it spin. */
}

void eng__job_link_lost(struct eng_job *job, unsigned link, const char *why)
{
	link_lost(job, link, why, false);
}

void eng__job_link_gone_at_setup(struct eng_job *job, unsigned link, const char *why)
{
	link_lost(job, link, why, true);
}

bool eng__job_link_down(struct eng_job *job, unsigned link, char *why, size_t len)
{
	struct eng_stripe *s = link < job->n_stripes ? &job->stripe[link] : NULL;

	if (!s || !atomic_load_explicit(&s->dead, memory_order_acquire))
		return false;
	pthread_mutex_lock(&job->err_lock);
	snprintf(why, len, "%s", s->down_why);
	pthread_mutex_unlock(&job->err_lock);
	return true;
}

void eng__worker_check_lost(struct eng_worker *w)
{
	char why[sizeof(w->stripe[0]->lost_why)];
	unsigned i;

	for (i = 0; i < w->n_stripes; i++) {
		struct eng_stripe *s = w->stripe[i];

		if (s->dead || !atomic_load_explicit(&s->lost_req, memory_order_acquire))
			continue;
		pthread_mutex_lock(&s->job->err_lock);
		memcpy(why, s->lost_why, sizeof(why));
		pthread_mutex_unlock(&s->job->err_lock);
		if (!s->job->failover) {
			eng__job_fail_fabric(s->job, -ECONNRESET, "%s", why);
			continue;
		}
		stripe_down(s, why);
	}
}

/*
 * Whether s alone holds the job up while the fabric works: another rail,
 * still alive, got a credit more than half the limit after s's last one,
 * or every other rail has nothing out and nothing is left to claim (the
 * end of a job that the other rails finished). A peer or disk that stalls
 * stops every rail within moments with chunks out, and fails no one.
 */
static bool others_moved(const struct eng_stripe *s, uint64_t limit_ns)
{
	struct eng_job *job = s->job;
	bool moved = false, idle = true, others = false;
	unsigned r;

	pthread_mutex_lock(&job->err_lock); /* failed_ns; only a stripe already silent asks */
	for (r = 0; r < job->n_rails; r++) {
		if (r == s->rail || job->rail[r].failed_ns)
			continue;
		others = true;
		moved |= atomic_load_explicit(&job->rail[r].moved_ns, memory_order_relaxed) >
			 s->moved_ns + limit_ns / 2;
		idle &= atomic_load_explicit(&job->rail[r].out, memory_order_relaxed) == 0;
	}
	pthread_mutex_unlock(&job->err_lock);
	return others &&
	       (moved || (idle && atomic_load(&job->snd.next_chunk) >= job->src.n_chunks &&
			  atomic_load(&job->snd.retry_pending) == 0));
}

void eng__worker_watch(struct eng_worker *w)
{
	struct eng_job *job = w->job;
	uint64_t now, limit_ns = (uint64_t)job->rail_stall_ms * 1000000u;
	char what[160];
	unsigned i;

	if (job->role != ENG_SENDER || !job->failover || !limit_ns)
		return;
	now = rcp_now_ns();
	for (i = 0; i < w->n_stripes; i++) {
		struct eng_stripe *s = w->stripe[i];

		if (s->dead || !s->outstanding || now - s->moved_ns < limit_ns ||
		    !others_moved(s, limit_ns))
			continue;
		snprintf(what, sizeof(what),
			 "stalled: %u chunks out and no credit back for %.1f s while other rails "
			 "moved",
			 s->outstanding, (double)(now - s->moved_ns) / 1e9);
		eng__stripe_lost(s, -ETIMEDOUT, what);
	}
}

bool eng__worker_alive(const struct eng_worker *w)
{
	unsigned i;

	for (i = 0; i < w->n_stripes; i++)
		if (!w->stripe[i]->dead)
			return true;
	return false;
}

bool eng__worker_drained(const struct eng_worker *w)
{
	unsigned i;

	if (!atomic_load(&w->job->rcv.draining))
		return false;
	for (i = 0; i < w->n_stripes; i++)
		if (w->stripe[i]->busy)
			return false;
	return true;
}

void eng__job_drain(struct eng_job *job)
{
	atomic_store(&job->rcv.draining, true);
	eng__job_wake(job);
	/* The workers too: one asleep on its CQs would see it only after ENG_SLEEP_MS. */
	eng__fd_signal(job->drain_fd);
}
