/*
 * clock.c - the one clock railcp measures with: CLOCK_MONOTONIC, which
 * never jumps with the wall clock. Thread-safe.
 */
#include "common/common.h"

#include <time.h>

uint64_t rcp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
