/*
 * loopback.h - private to engine/transport/ and the engine's tests: the
 * loopback transport's endpoints and CQs, made directly. An in-process
 * transport with the semantics of RC queue pairs (a write lands in the
 * target slot and the receiver gets the immediate; a receive must be posted
 * first), a simulated link speed per endpoint, and injectable errors.
 * Sessions reach it through eng__transport_loopback() (transport.h).
 */
#ifndef RAILCP_ENGINE_LOOPBACK_H
#define RAILCP_ENGINE_LOOPBACK_H

#if !defined(ENG_LAYER_TRANSPORT) && !defined(RAILCP_TESTS)
#error "engine/transport/loopback.h is private to engine/transport/ and the tests"
#endif

#include "engine/transport/transport.h"

int eng__loop_cq_create(struct eng_cq **cq_out);
void eng__loop_cq_destroy(struct eng_cq *cq);

/*
 * Connect two endpoints, a on cq_a and b on cq_b. gbps (0: unlimited) spaces
 * out the completions of each direction as a link of that speed would.
 */
int eng__loop_connect(struct eng_cq *cq_a, struct eng_cq *cq_b, double gbps, struct eng_ep **a_out,
		      struct eng_ep **b_out);

/*
 * Accepts NULL. The peer endpoint stays valid: its posts from now on
 * complete with an error, as when the far end of a QP went away.
 */
void eng__loop_ep_destroy(struct eng_ep *ep);

/* The after-th post from now on ep (1 = the next) completes with an error. */
void eng__loop_inject_error(struct eng_ep *ep, unsigned after);

/*
 * From the after-th post on ep on (1 = the next), every post vanishes:
 * accepted, never delivered, never completed, as on a path that drops
 * everything while both ports stay up.
 */
void eng__loop_inject_mute(struct eng_ep *ep, unsigned after);

/*
 * Model ep's send queue as depth entries (0: not modelled): a post that
 * does not fit fails with -ENOMEM, as on hardware. Each signaled completion
 * comes lag_ns late. Before ep's first post only.
 */
int eng__loop_sq(struct eng_ep *ep, unsigned depth, uint64_t lag_ns);

/* Most writes ever in flight (posted, not yet credited) on ep's direction. */
unsigned eng__loop_max_in_flight(struct eng_ep *ep);

/*
 * Faults at set-up, for the failover of a link that cannot connect: each
 * of the next n connects from the client's rail rail_dev ("loopN") meets f.
 * ENG_LOOP_FAULT_NONE (or n 0) clears the rail's. Process-wide; thread-safe.
 */
enum eng_loop_fault {
	ENG_LOOP_FAULT_NONE,
	ENG_LOOP_FAULT_REFUSE,	    /* the request is refused, as rdma_cm's REJECTED */
	ENG_LOOP_FAULT_SILENT,	    /* never answered (a black hole): connect waits its timeout */
	ENG_LOOP_FAULT_ACCEPT_FAIL, /* the server cannot take it: it gives the link up, refuses */
};
void eng__loop_inject_connect(const char *rail_dev, enum eng_loop_fault f, unsigned n);

/*
 * The address of loopback rail dev:port from loopback_dev.c's device model:
 * "loop<N>" a RoCE port, "loopib<N>" an InfiniBand one, each 198.18.N.1/24
 * through railaddr.c. -ENODEV with a sentence for any other name.
 */
int eng__loop_rail_addr(const char *dev, unsigned port, struct eng_rail_addr *out);

/*
 * Counts of what the loopback has carried, for tests that must show that
 * something did not happen: rather than sleep and hope the engine had its
 * chance, they wait until a count has passed a point that proves it had.
 */

/*
 * How often cq was armed: each arm is its worker going to sleep after a
 * round (pump, poll, post) that found nothing to do. Thread-safe.
 */
uint64_t eng__loop_cq_arms(struct eng_cq *cq);

/* Process-wide, since the process started; thread-safe (eng__loop_counts). */
struct eng_loop_counts {
	uint64_t credits;	 /* credits (sends) delivered: a receiver wrote a chunk */
	uint64_t receiver_looks; /* check_events on a receiver's connections: watch passes */
};

void eng__loop_counts(struct eng_loop_counts *out);

/* loopback_cm.c's: a receiver's session looked at its connections (check_events). */
void eng__loop_count_look(void);

#endif
