/*
 * topo_check.c - `railcp topo --check-buffers`: build the plan's pools the
 * way the engine will, and report where their pages and threads really are.
 *
 * The order is the engine's: the memlock limit is checked against the sum of
 * the pools before anything is allocated (registration would pin them), the
 * pools are mapped and bound to their nodes here, then one thread per worker
 * pins itself per the plan and first-touches its own pool, and records the
 * CPU it ran on and the node and page size of the pages it faulted.
 *
 * Threading: each worker thread writes only its own check slot; the caller
 * reads them after pthread_join.
 */
#include "cli/topo.h"

#include "common/common.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

struct check_job {
	const struct topo_worker *worker;
	struct topo_pool *pool;
	struct cli_topo_check *out;
	pthread_t thread;
	bool started;
};

static void *check_worker(void *arg)
{
	struct check_job *job = arg;
	struct cli_topo_check *c = job->out;
	int err;

	err = topo_thread_bind(&job->worker->cpus, job->worker->node);
	if (!err) {
		topo_pool_touch(job->pool);
		c->cpu = sched_getcpu();
		c->cpu_ok = c->cpu >= 0 && topo_bitmap_isset(&job->worker->cpus, (unsigned)c->cpu);
		err = topo_pool_probe(job->pool, &c->probe);
	}
	if (err) {
		c->err = err;
		snprintf(c->error, sizeof(c->error), "%s", rcp_err_msg(err));
	}
	return NULL;
}

bool cli_topo_check_ok(const struct cli_topo_check *c)
{
	return c->err == 0 && c->cpu_ok && c->probe.node_first == c->node &&
	       c->probe.node_last == c->node;
}

/* One line for all pools that did not get hugepages: reported once, not per pool. */
static void report_fallback(const struct cli_topo_check *c, size_t n)
{
	char line[1024] = "";
	size_t i, used = 0;

	for (i = 0; i < n && used < sizeof(line); i++)
		if (c[i].fallback[0])
			used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s",
						 used ? "; " : "", c[i].fallback);
	if (used)
		fprintf(stderr, "railcp: note: buffer pools are not on hugetlb pages: %s\n", line);
}

static int check_run(struct check_job *jobs, size_t n)
{
	size_t i;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		err = pthread_create(&jobs[i].thread, NULL, check_worker, &jobs[i]);
		if (err)
			err = rcp_err(-err, "cannot start the node %d worker thread: %s",
				      jobs[i].worker->node, strerror(err));
		jobs[i].started = !err;
	}
	for (i = 0; i < n; i++)
		if (jobs[i].started)
			pthread_join(jobs[i].thread, NULL);
	for (i = 0; i < n && !err; i++)
		if (jobs[i].out->err)
			err = rcp_err(jobs[i].out->err, "%s", jobs[i].out->error);
	return err;
}

int cli_topo_check_buffers(const struct topo_plan *plan, struct cli_topo_check *checks_out)
{
	struct check_job *jobs;
	size_t i, n = plan->n_workers;
	int err;

	err = topo_memlock_check(plan->buffer_total);
	if (err)
		return err;
	jobs = calloc(n ? n : 1, sizeof(*jobs));
	if (!jobs)
		return -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		struct cli_topo_check *c = &checks_out[i];

		memset(c, 0, sizeof(*c));
		c->node = plan->worker[i].node;
		c->cpu = -1;
		jobs[i].worker = &plan->worker[i];
		jobs[i].out = c;
		err = topo_pool_create(c->node, plan->worker[i].buffer_bytes, &jobs[i].pool);
		if (!err) {
			c->page = jobs[i].pool->page;
			c->bytes = jobs[i].pool->len;
			memcpy(c->fallback, jobs[i].pool->fallback, sizeof(c->fallback));
		}
	}
	if (!err) {
		report_fallback(checks_out, n);
		err = check_run(jobs, n);
	}
	for (i = 0; i < n; i++)
		topo_pool_destroy(jobs[i].pool);
	free(jobs);
	return err;
}
