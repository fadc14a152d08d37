/*
 * steps.c - a session's time by step (steps.h). Thread-safe for distinct
 * structs; one struct belongs to one thread.
 */
#include "common/steps.h"

#include "common/common.h"

#include <stdio.h>
#include <string.h>

static const char *const names[RCP_STEP_N] = {
	[RCP_STEP_TOPOLOGY] = "topology", [RCP_STEP_WALK] = "walk",
	[RCP_STEP_CONTROL] = "control",	  [RCP_STEP_MANIFEST] = "manifest",
	[RCP_STEP_MEMORY] = "memory",	  [RCP_STEP_CONNECT] = "connect",
	[RCP_STEP_DATA] = "data",	  [RCP_STEP_END] = "end",
	[RCP_STEP_FINALIZE] = "finalize", [RCP_STEP_TEARDOWN] = "teardown",
};

void rcp_steps_start(struct rcp_steps *s)
{
	memset(s->ns, 0, sizeof(s->ns));
	s->mark = rcp_now_ns();
}

void rcp_steps_lap(struct rcp_steps *s, enum rcp_step step)
{
	uint64_t now = rcp_now_ns();

	if (s->mark && now > s->mark)
		s->ns[step] += now - s->mark;
	s->mark = now;
}

const char *rcp_step_name(enum rcp_step step)
{
	return step < RCP_STEP_N ? names[step] : "?";
}

uint64_t rcp_steps_setup_ns(const struct rcp_steps *s)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < RCP_STEP_N; i++)
		if (i != RCP_STEP_DATA)
			sum += s->ns[i];
	return sum;
}

const char *rcp_steps_line(const struct rcp_steps *s, char *buf, size_t size)
{
	size_t n = 0;
	unsigned i;

	buf[0] = '\0';
	for (i = 0; i < RCP_STEP_N && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s %.1f ms", i ? ", " : "", names[i],
				      (double)s->ns[i] / 1e6);
	if (n < size)
		snprintf(buf + n, size - n, "; fixed %.1f ms", (double)rcp_steps_setup_ns(s) / 1e6);
	return buf;
}
