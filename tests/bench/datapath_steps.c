/*
 * datapath_steps.c - each end's steps for bench_datapath.c (see
 * datapath_steps.h). The server's record arrives on its thread: its steps
 * are copied, then the count goes up (seq_cst), and the main thread reads
 * them only after it saw the count pass.
 */
#include "tests/bench/datapath_steps.h"

#include "common/common.h"

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static struct rcp_steps srv_steps;
static _Atomic unsigned srv_ended;

void steps_session_end(const struct eng_session_record *rec, void *ctx)
{
	(void)ctx;
	if (rec->steps)
		srv_steps = *rec->steps;
	atomic_fetch_add(&srv_ended, 1);
}

unsigned steps_ended(void)
{
	return atomic_load(&srv_ended);
}

void steps_take(struct steps_log *l, unsigned r, const struct rcp_steps *client, unsigned n_ended)
{
	uint64_t end = rcp_now_ns() + 5000000000ull;
	unsigned i;

	while (atomic_load(&srv_ended) == n_ended && rcp_now_ns() < end)
		usleep(200);
	for (i = 0; i < RCP_STEP_N; i++) {
		l->s[END_SND][i][r] = (double)client->ns[i] / 1e9;
		l->s[END_RCV][i][r] = (double)srv_steps.ns[i] / 1e9;
	}
}

void steps_print(const struct steps_log *l, unsigned n,
		 void (*row)(const char *label, const double *v, unsigned n))
{
	static const char *const end_name[N_ENDS] = {"sender (client)", "receiver (server)"};
	double ms[MAX_ROUNDS];
	char label[64];
	unsigned e, i, k;

	printf("  steps in ms (common/steps.h):\n");
	for (e = 0; e < N_ENDS; e++)
		for (i = 0; i < RCP_STEP_N; i++) {
			if (i == RCP_STEP_TOPOLOGY)
				continue;
			for (k = 0; k < n; k++)
				ms[k] = l->s[e][i][k] * 1e3;
			snprintf(label, sizeof(label), "%s %s", end_name[e], rcp_step_name(i));
			row(label, ms, n);
		}
}
