/*
 * topo.h - private to cli/: the pieces of `railcp topo` (cmd_topo.c
 * parses and runs, topo_render.c prints, topo_check.c exercises the pools).
 */
#ifndef RAILCP_CLI_TOPO_H
#define RAILCP_CLI_TOPO_H

#include <jansson.h>
#include <stdio.h>

#include "topology/topology.h"

/* What --check-buffers saw for one worker. */
struct cli_topo_check {
	int node;    /* the worker's node */
	int cpu;     /* sched_getcpu() in the worker after the touch */
	bool cpu_ok; /* cpu is one of the worker's CPUs */
	struct topo_pool_probe probe;
	enum topo_page page; /* what backs the pool */
	uint64_t bytes;
	char fallback[192];
	int err;	 /* the worker's error, 0 when it ran */
	char error[256]; /* its sentence */
};

/*
 * Check the memlock limit, allocate each worker's pool on its node, and
 * first-touch it from a thread pinned per the plan. checks_out has
 * plan->n_workers entries; unlike the house rule it is filled as far as the
 * check got even on failure, so the caller can show which worker failed.
 * Reports a page-size fallback once on stderr.
 */
int cli_topo_check_buffers(const struct topo_plan *plan, struct cli_topo_check *checks_out);

/* Whether a check shows pages on the worker's node and the thread on its CPUs. */
bool cli_topo_check_ok(const struct cli_topo_check *c);

json_t *cli_topo_machine_json(const struct topo_machine *m);
json_t *cli_topo_plan_json(const struct topo_plan *p);
json_t *cli_topo_checks_json(const struct cli_topo_check *c, size_t n);

void cli_topo_machine_print(FILE *f, const struct topo_machine *m);
void cli_topo_plan_print(FILE *f, const struct topo_plan *p);
void cli_topo_checks_print(FILE *f, const struct cli_topo_check *c, size_t n);

#endif
