/*
 * setup.c - a job's workers, rails, stripes and slot memory, laid out from a
 * topology plan. Transport-neutral: verbs sessions and the loopback unit
 * tests build jobs the same way.
 *
 * Each worker's slots live in one allocation (a node-local hugepage pool in
 * real runs), so a transport registers one region per worker and device:
 * payload slots first, page aligned, then the 64-byte headers.
 */
#include "engine/engine_int.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
		w->mem = w->pool->base;
		w->mem_len = w->pool->len;
		return 0;
	}
	err = posix_memalign(&p, 4096, len ? len : 4096);
	if (err)
		return rcp_err(-err, "cannot allocate %zu bytes of slot memory", len);
	memset(p, 0, len);
	w->mem = p;
	w->mem_len = len;
	return 0;
}

/* Give each of the worker's stripes its payload slots, then its headers. */
static void worker_carve(struct eng_worker *w)
{
	uint8_t *p = w->mem;
	unsigned i;

	for (i = 0; i < w->n_stripes; i++) {
		w->stripe[i]->data = p;
		p += (size_t)w->stripe[i]->n_slots * w->stripe[i]->slot_size;
	}
	for (i = 0; i < w->n_stripes; i++) {
		w->stripe[i]->hdr = (struct eng_chunk_hdr *)p;
		p += (size_t)w->stripe[i]->n_slots * sizeof(struct eng_chunk_hdr);
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
	pthread_mutex_init(&job->err_lock, NULL);
	*job_out = job;
	if (!job->worker || !job->rail || !job->stripe)
		return -ENOMEM;
	return 0;
}

static int job_layout(struct eng_job *job, const struct topo_plan *plan, unsigned n_slots,
		      uint32_t slot_size)
{
	unsigned r, q, k = 0, i;

	for (i = 0; i < job->n_workers; i++) {
		struct eng_worker *w = &job->worker[i];

		*w = (struct eng_worker){.job = job, .index = i, .node = plan->worker[i].node,
					 .cpus = plan->worker[i].cpus, .bind = true};
		w->stripe = calloc(job->n_stripes ? job->n_stripes : 1, sizeof(*w->stripe));
		if (!w->stripe)
			return -ENOMEM;
	}
	for (r = 0; r < job->n_rails; r++) {
		const struct topo_plan_rail *pr = &plan->rail[r];
		struct eng_worker *w = &job->worker[pr->worker];

		snprintf(job->rail[r].name, sizeof(job->rail[r].name), "%s:%u", pr->dev, pr->port);
		job->rail[r].node = w->node;
		for (q = 0; q < pr->qps; q++, k++) {
			struct eng_stripe *s = &job->stripe[k];

			*s = (struct eng_stripe){.job = job, .worker = w, .index = k, .rail = r,
						 .n_slots = n_slots, .slot_size = slot_size};
			w->stripe[w->n_stripes++] = s;
		}
	}
	return 0;
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
	if (!err)
		err = job_layout(job, plan, n_slots, slot_size);
	if (!err && pools) /* registration pins every byte: say so before allocating any */
		err = topo_memlock_check((uint64_t)job->n_stripes * stripe_bytes(n_slots, slot_size));
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
	job->busy_poll_us = 50;
	job->signal_every = n_slots < 16 ? n_slots : 16;
	*job_out = job;
	return 0;
}

void eng__job_destroy(struct eng_job *job)
{
	unsigned i;

	if (!job)
		return;
	for (i = 0; job->stripe && i < job->n_stripes; i++)
		eng__stripe_fini(&job->stripe[i]);
	for (i = 0; job->worker && i < job->n_workers; i++) {
		struct eng_worker *w = &job->worker[i];

		if (w->pool)
			topo_pool_destroy(w->pool);
		else
			free(w->mem);
		free(w->stripe);
	}
	pthread_mutex_destroy(&job->err_lock);
	free(job->worker);
	free(job->rail);
	free(job->stripe);
	free(job);
}
