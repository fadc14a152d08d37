/*
 * job.c - a job's workers, rails, stripes and slot memory, laid out from a
 * topology plan. Transport-neutral: verbs sessions, loopback sessions and
 * the data path's unit tests build jobs the same way.
 *
 * Each worker's slots live in one allocation (a node-local hugepage pool in
 * real runs), so a transport registers one region per worker and device:
 * payload slots first, page aligned, then the 64-byte headers.
 *
 * Threading: the session's thread, while no worker runs; the job's stripe
 * count and each stripe's rail, fixed when it is made, are readable from
 * any thread.
 */
#include "engine/datapath/datapath_int.h"

#include "common/common.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t stripe_bytes(unsigned n_slots, uint32_t slot_size)
{
	return (size_t)n_slots * slot_size + (size_t)n_slots * sizeof(struct eng_chunk_hdr);
}

static int worker_mem(struct eng_worker *w, size_t len, bool pools)
{
	void *p = NULL;
	int err;

	if (pools) {
		err = topo_pool_create(w->node, len, &w->pool);
		if (err)
			return err;
		w->tr.mem = w->pool->base;
		w->tr.mem_len = w->pool->len;
		return 0;
	}
	/*
	 * A mapping of its own, not the heap: a TCP end closed with zero-copy
	 * sends pending leaves the kernel references to these pages, and after
	 * munmap no later allocation of this process gets them (tcp_zc.c). Its
	 * pages are faulted in as slots are first written, not all at once,
	 * which would cost a short session most of its time.
	 */
	p = mmap(NULL, len ? len : 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (p == MAP_FAILED) {
		err = errno;
		return rcp_err(-err, "cannot allocate %zu bytes of slot memory: %s", len,
			       strerror(err));
	}
	w->tr.mem = p;
	w->tr.mem_len = len;
	return 0;
}

/* Give each of the worker's stripes its payload slots, then its headers. */
static void worker_carve(struct eng_worker *w)
{
	uint8_t *p = w->tr.mem;
	unsigned i;

	for (i = 0; i < w->n_stripes; i++) {
		w->stripe[i]->link.data = p;
		p += (size_t)w->stripe[i]->link.n_slots * w->stripe[i]->link.slot_size;
	}
	for (i = 0; i < w->n_stripes; i++) {
		w->stripe[i]->link.hdr = (struct eng_chunk_hdr *)p;
		p += (size_t)w->stripe[i]->link.n_slots * sizeof(struct eng_chunk_hdr);
	}
}

static int job_alloc(const struct topo_plan *plan, struct eng_job **job_out)
{
	struct eng_job *job = calloc(1, sizeof(*job));
	unsigned r, n = 0;

	if (!job)
		return -ENOMEM;
	for (r = 0; r < plan->n_rails; r++)
		n += plan->rail[r].qps;
	job->n_workers = (unsigned)plan->n_workers;
	job->n_rails = (unsigned)plan->n_rails;
	job->n_stripes = n;
	job->worker = calloc(job->n_workers ? job->n_workers : 1, sizeof(*job->worker));
	job->rail = calloc(job->n_rails ? job->n_rails : 1, sizeof(*job->rail));
	job->stripe = calloc(n ? n : 1, sizeof(*job->stripe));
	job->link = calloc(n ? n : 1, sizeof(*job->link));
	job->tr_worker = calloc(job->n_workers ? job->n_workers : 1, sizeof(*job->tr_worker));
	pthread_mutex_init(&job->err_lock, NULL);
	pthread_mutex_init(&job->snd.retry_lock, NULL);
	job->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	job->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	job->drain_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	job->watch_fd = -1;
	*job_out = job;
	if (job->wake_fd < 0 || job->stop_fd < 0 || job->drain_fd < 0)
		return rcp_err(-errno, "eventfd: %s", strerror(errno));
	if (!job->worker || !job->rail || !job->stripe || !job->link || !job->tr_worker)
		return -ENOMEM;
	return 0;
}

/* Send queue: header and data per chunk, plus the writes between two signaled ones. */
static unsigned send_depth(const struct eng_job *job, unsigned n_slots)
{
	return 2 * (n_slots + job->signal_every) + 8;
}

static void stripe_layout(struct eng_job *job, struct eng_stripe *s, unsigned k, unsigned r,
			  const struct topo_plan_rail *pr, unsigned n_slots, uint32_t slot_size)
{
	struct eng_worker *w = &job->worker[pr->worker];

	*s = (struct eng_stripe){.job = job, .worker = w, .rail = r};
	s->link = (struct eng_link){.index = k,
				    .worker = &w->tr,
				    .rail_dev = pr->dev,
				    .n_slots = n_slots,
				    .slot_size = slot_size,
				    .send_depth = send_depth(job, n_slots)};
	w->stripe[w->n_stripes++] = s;
	job->rail[r].stripes++;
	atomic_fetch_add(&job->stripes_alive, 1);
	w->tr.cq_depth += s->link.send_depth + n_slots + 8;
	job->link[k] = &s->link;
}

static int job_layout(struct eng_job *job, const struct topo_plan *plan, unsigned n_slots,
		      uint32_t slot_size)
{
	unsigned r, q, k = 0, i;

	for (i = 0; i < job->n_workers; i++) {
		struct eng_worker *w = &job->worker[i];

		*w = (struct eng_worker){.tr = {.index = i},
					 .job = job,
					 .node = plan->worker[i].node,
					 .cpus = plan->worker[i].cpus,
					 .bind = true,
					 .done_fd = -1};
		job->tr_worker[i] = &w->tr;
		w->stripe = calloc(job->n_stripes ? job->n_stripes : 1, sizeof(*w->stripe));
		if (!w->stripe)
			return -ENOMEM;
	}
	for (r = 0; r < job->n_rails; r++) {
		const struct topo_plan_rail *pr = &plan->rail[r];

		snprintf(job->rail[r].name, sizeof(job->rail[r].name), "%s:%u", pr->dev, pr->port);
		job->rail[r].node = job->worker[pr->worker].node;
		for (q = 0; q < pr->qps; q++, k++)
			stripe_layout(job, &job->stripe[k], k, r, pr, n_slots, slot_size);
	}
	return 0;
}

/*
 * Helpers per worker: one per CPU of the smallest worker's node but the
 * worker's own, up to ENG_HELPERS_MAX (enough to hash at a 400 Gb/s port's
 * rate and keep several finalizes going); none on a node of one CPU, where
 * a helper could only take turns with its worker (measured in the testbed:
 * 46 % slower for 2000 small files), and the worker drives a ring itself.
 * Ring depth per helper (or worker): the worker's slots shared among its
 * helpers, so every slot can have its I/O in flight at once.
 */
static void helpers_size(struct eng_job *job, const struct topo_plan *plan, unsigned n_slots)
{
	unsigned i, cpus = ~0u, slots = 0, n;

	for (i = 0; i < job->n_workers; i++) {
		n = topo_bitmap_count(&job->worker[i].cpus);
		cpus = n < cpus ? n : cpus;
		n = job->worker[i].n_stripes * n_slots;
		slots = n > slots ? n : slots;
	}
	if (plan->helpers == TOPO_NONE)
		job->helpers = 0;
	else if (plan->helpers)
		job->helpers = plan->helpers;
	else
		job->helpers = cpus > ENG_HELPERS_MAX ? ENG_HELPERS_MAX : cpus > 1 ? cpus - 1 : 0;
	if (plan->io_depth == TOPO_NONE)
		job->io_depth = 0;
	else if (plan->io_depth)
		job->io_depth = plan->io_depth;
	else
		job->io_depth = job->helpers ? (slots + job->helpers - 1) / job->helpers : slots;
	if (job->io_depth > TOPO_MAX_IO_DEPTH)
		job->io_depth = TOPO_MAX_IO_DEPTH;
	/*
	 * A worker spins only on a CPU nobody else of the job needs: with its
	 * helpers holding every other CPU of its node (the default up to
	 * ENG_HELPERS_MAX + 1 CPUs), a spin takes the CPU a helper, or the
	 * kernel's io_uring worker serving it, would run the next file's I/O
	 * on. Measured on 2 CPUs: CPU per small file fell at both ends.
	 */
	job->busy_poll_us = cpus > job->helpers + 1 ? ENG_BUSY_POLL_US : 0;
}

int eng__job_create(enum eng_role role, const struct topo_plan *plan, unsigned n_slots,
		    uint32_t slot_size, bool pools, struct eng_job **job_out)
{
	struct eng_job *job = NULL;
	unsigned i;
	int err;

	if (n_slots == 0 || slot_size == 0 || slot_size % 4096)
		return rcp_err(-EINVAL, "slots must be a positive multiple of 4096 bytes");
	err = job_alloc(plan, &job);
	if (!err) {
		job->signal_every = n_slots < ENG_SIGNAL_EVERY ? n_slots : ENG_SIGNAL_EVERY;
		err = job_layout(job, plan, n_slots, slot_size);
	}
	if (!err && pools) /* registration pins every byte: say so before allocating any */
		err = topo_memlock_check((uint64_t)job->n_stripes *
					 stripe_bytes(n_slots, slot_size));
	for (i = 0; !err && i < job->n_workers; i++) {
		struct eng_worker *w = &job->worker[i];

		if (w->n_stripes == 0)
			continue; /* a worker whose rails this session does not use */
		err = worker_mem(w, w->n_stripes * stripe_bytes(n_slots, slot_size), pools);
		if (!err)
			worker_carve(w);
	}
	if (err) {
		eng__job_destroy(job);
		return err;
	}
	job->role = role;
	job->stall_ms = ENG_STALL_MS;
	job->hold_ms = ENG_HOLD_NOTICE_MS;
	job->failover = true;
	helpers_size(job, plan, n_slots);
	*job_out = job;
	return 0;
}

void eng__job_destroy(struct eng_job *job)
{
	unsigned i;

	if (!job)
		return;
	for (i = 0; job->stripe && i < job->n_stripes; i++) {
		free(job->stripe[i].free_slot);
		free(job->stripe[i].ready);
		free(job->stripe[i].task);
		free(job->stripe[i].sq_mark);
		free(job->stripe[i].credit_wait);
	}
	for (i = 0; job->worker && i < job->n_workers; i++) {
		struct eng_worker *w = &job->worker[i];

		if (w->pool)
			topo_pool_destroy(w->pool);
		else if (w->tr.mem)
			munmap(w->tr.mem, w->tr.mem_len ? w->tr.mem_len : 4096);
		free(w->stripe);
	}
	if (job->wake_fd >= 0)
		close(job->wake_fd);
	if (job->stop_fd >= 0)
		close(job->stop_fd);
	if (job->drain_fd >= 0)
		close(job->drain_fd);
	eng__failover_fini(job);
	pthread_mutex_destroy(&job->snd.retry_lock);
	pthread_mutex_destroy(&job->err_lock);
	free(job->worker);
	free(job->rail);
	free(job->stripe);
	free(job->link);
	free(job->tr_worker);
	free(job);
}

_Static_assert(offsetof(struct eng_stripe, link) == 0, "a link is its stripe's first member");

static int link_ready(void *ctx, struct eng_link *l)
{
	struct eng_stripe *s = (struct eng_stripe *)l; /* the link is the stripe's first member */

	(void)ctx;
	return s->job->role == ENG_SENDER ? eng__stripe_init_sender(s)
					  : eng__stripe_init_receiver(s);
}

void eng__job_conn_cfg(struct eng_job *job, struct eng_conn_cfg *cfg)
{
	*cfg = (struct eng_conn_cfg){.receiver = job->role == ENG_RECEIVER,
				     .link = job->link,
				     .n_links = job->n_stripes,
				     .worker = job->tr_worker,
				     .n_workers = job->n_workers,
				     .link_ready = link_ready,
				     .ctx = job};
}

void eng__job_configure(struct eng_job *job, const struct eng_job_opts *o)
{
	job->token = o->token;
	job->failover = o->failover;
	if (o->stall_ms > 0)
		job->stall_ms = o->stall_ms;
	job->rail_stall_ms = o->rail_stall_ms;
	job->watch_fd = o->watch ? o->watch_fd : -1;
}

unsigned eng__job_stripes(const struct eng_job *job)
{
	return job->n_stripes;
}

struct eng_link *eng__job_link(struct eng_job *job, unsigned i)
{
	return &job->stripe[i].link;
}

unsigned eng__job_link_rail(const struct eng_job *job, unsigned i)
{
	return job->stripe[i].rail;
}

uint64_t eng__job_chunks(const struct eng_job *job)
{
	return job->src.n_chunks;
}
