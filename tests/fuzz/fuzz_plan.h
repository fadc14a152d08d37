/*
 * fuzz_plan.h - what fuzz_topo and fuzz_profile both check of a plan that
 * went through a profile file and back: it is the same plan, field by field
 * (workers with their node, CPUs, rails, buffer and page size; rails with
 * their device, port, worker and QPs; the fabric knobs).
 *
 * Header-only, beside fuzz.h. Threading: one thread.
 */
#ifndef RAILCP_TEST_FUZZ_PLAN_H
#define RAILCP_TEST_FUZZ_PLAN_H

#include "topology/topology.h"
#include "tests/fuzz/fuzz.h"

#include <string.h>

static inline void fuzz_same_plan(const struct topo_plan *a, const struct topo_plan *b)
{
	size_t w, r;

	FUZZ_CHECK(a->n_workers == b->n_workers && a->n_rails == b->n_rails);
	FUZZ_CHECK(a->qps_per_rail == b->qps_per_rail && a->buffer_total == b->buffer_total);
	FUZZ_CHECK(a->knobs.tos_set == b->knobs.tos_set && a->knobs.tos == b->knobs.tos &&
		   a->knobs.ack_timeout == b->knobs.ack_timeout &&
		   a->knobs.retry_count == b->knobs.retry_count &&
		   a->knobs.connect_timeout == b->knobs.connect_timeout);
	for (w = 0; w < a->n_workers; w++)
		FUZZ_CHECK(a->worker[w].node == b->worker[w].node &&
			   topo_bitmap_equal(&a->worker[w].cpus, &b->worker[w].cpus) &&
			   a->worker[w].first_rail == b->worker[w].first_rail &&
			   a->worker[w].n_rails == b->worker[w].n_rails &&
			   a->worker[w].buffer_bytes == b->worker[w].buffer_bytes &&
			   a->worker[w].page == b->worker[w].page);
	for (r = 0; r < a->n_rails; r++)
		FUZZ_CHECK(!strcmp(a->rail[r].dev, b->rail[r].dev) &&
			   a->rail[r].port == b->rail[r].port &&
			   a->rail[r].worker == b->rail[r].worker &&
			   a->rail[r].qps == b->rail[r].qps);
}

#endif
