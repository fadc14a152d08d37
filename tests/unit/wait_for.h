/*
 * wait_for.h - WAIT_FOR, the one way a unit test waits for a condition
 * another thread makes true: it looks every millisecond, up to 10 s of the
 * clock, so a loaded host only makes a test slower, never wrong. A test
 * that must show that something did not happen waits this way for a
 * counter to pass a point that proves the chance was there (the loopback
 * transport's counters, engine/transport/loopback.h), not for a time.
 *
 * Threading: cond is read from the calling thread; it must read atomics or
 * what a lock guards.
 */
#ifndef RAILCP_TEST_WAIT_FOR_H
#define RAILCP_TEST_WAIT_FOR_H

#include "common/common.h"

#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

/* Wait up to 10 s for cond; true if it held. */
#define WAIT_FOR(cond)                                                                             \
	({                                                                                         \
		uint64_t end_ = rcp_now_ns() + 10000000000ull;                                     \
		while (!(cond) && rcp_now_ns() < end_)                                             \
			usleep(1000);                                                              \
		(bool)(cond);                                                                      \
	})

#endif
