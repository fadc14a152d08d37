/*
 * session_gate.h - a copy held mid-way for tests of what an interrupted
 * copy leaves (test_session_hostile.c, test_session_partial.c) and of a
 * side whose disk hangs (test_session_held.c). The functions are in
 * session_gate.c, compiled once and linked into each test that includes
 * this.
 *
 * Threading: the gate's state is atomic; one gated copy at a time.
 */
#ifndef RAILCP_TEST_SESSION_GATE_H
#define RAILCP_TEST_SESSION_GATE_H

#include "session_harness.h"

/*
 * The gated transport: the loopback, but a sender job's chunk source holds
 * every chunk from the after-th on until the job stops (where its read
 * completes, on a helper thread), so a copy cannot finish before its cancel
 * is seen (or, armed with gate_arm_until, until the test sets a flag).
 * The gate gives up after 10 s, and the copy then succeeds, which fails
 * the test rather than hanging it. The chunks before the after-th go to
 * the worker as their reads complete and reach the receiver: the tests
 * give the sender a helper thread, since a worker without helpers would be
 * held itself.
 */
struct gate {
	unsigned after;
	_Atomic unsigned filled;
	_Atomic bool hit;
	_Atomic bool gave_up;  /* it held 10 s in vain: open for good */
	_Atomic bool *release; /* set: the held chunks go on (gate_arm_until) */
	bool past_stop;	       /* the job's stop does not open it: a hung disk (gate_arm_held) */
	struct eng_job *job;
	int (*prepare)(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op);
	int (*complete)(void *ctx, struct eng_chunk_hdr *hdr, const void *buf, int64_t got,
			struct io_op *op);
	void *ctx;
};

/* The one gate of the process: tests read hit and gave_up. */
extern struct gate gate;

/* The gated transport, holding every chunk from the after-th on. */
const struct eng_transport *gate_arm(unsigned after);

/* gate_arm, but the held chunks also go on once *release is set. */
const struct eng_transport *gate_arm_until(unsigned after, _Atomic bool *release);

/*
 * gate_arm_until, but the held reads wait for *release alone, as reads from
 * a hung disk would: the sender's job stops, its helper stays held.
 */
const struct eng_transport *gate_arm_held(unsigned after, _Atomic bool *release);

/*
 * Another thread: once the gate holds and dir has a temporary (or what
 * until says of dir, if set), set the flag.
 */
struct canceller {
	_Atomic bool *flag;
	const char *dir;
	bool (*until)(const char *dir);
	pthread_t thread;
	bool held, saw_tmp;
};

/* The thread's function (pthread_create's arg: the canceller). */
void *canceller_main(void *arg);

#endif
