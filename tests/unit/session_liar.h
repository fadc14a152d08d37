/*
 * session_liar.h - the lying transport of test_session_misbehave.c: the
 * loopback with one post of an authenticated peer altered on purpose (a
 * chunk's immediate, its header's bytes, a write into a slot already
 * written, a credit naming another slot), and the held loopback that keeps
 * the victim from seeing completions while the liar posts. The functions
 * are in session_liar.c, compiled once into the tests' harness library.
 *
 * Threading: one lying session at a time. A test arms the liar before the
 * session starts; the hostile end's workers read its state and change only
 * its atomics, which the test reads once the session is over.
 */
#ifndef RAILCP_TEST_SESSION_LIAR_H
#define RAILCP_TEST_SESSION_LIAR_H

#include "session_harness.h"

enum lie {
	LIE_SLOT_UNKNOWN,   /* the immediate names a slot past the last */
	LIE_HDR_SLOT,	    /* the header names another slot than the immediate */
	LIE_FILE,	    /* the header names another file */
	LIE_OFFSET,	    /* the header names another offset */
	LIE_LEN_LONG,	    /* the header is longer than a slot */
	LIE_LEN_SHORT,	    /* the header is a byte shorter than the planned chunk */
	LIE_NO_CREDIT,	    /* a chunk written into the slot of the write before it, no credit */
	LIE_FINISHED,	    /* a chunk of a file already finished, in place of another */
	LIE_CREDIT_UNUSED,  /* a credit for a slot that was never written */
	LIE_CREDIT_UNKNOWN, /* a credit for a slot past the last */
	LIE_CREDIT_HELD,    /* a credit for the next slot, whose chunk is still being read */
};

struct liar {
	enum lie lie;
	uint64_t seq;			     /* the chunk whose write lies (writes) */
	uint64_t finished_seq;		     /* LIE_FINISHED: a chunk of the finished file */
	const struct eng_tr_ops *real;	     /* the loopback's data path */
	const struct eng_conn_cfg *cfg;	     /* the liar's links (its first session's) */
	const struct eng_conn *_Atomic conn; /* that session's connection, NULL once it is gone */
	struct eng_chunk_hdr finished;	     /* LIE_FINISHED: that chunk's header, as it went */
	_Atomic bool have_finished;
	_Atomic bool finished_credited;
	_Atomic bool told;    /* the lie went out */
	_Atomic bool dup_out; /* LIE_NO_CREDIT: the write without a credit is out */
};

/* The liar's state: what it tells, and whether it told it. */
extern struct liar liar;

/* The lying transport, for one session that tells lie about chunk seq. */
const struct eng_transport *liar_tell(enum lie lie, uint64_t seq);
/*
 * The victim's transport for LIE_NO_CREDIT: the loopback, but its workers
 * see no completion while the liar posts the batch with its two writes into
 * one slot, so both arrive in one poll, while the first one's task is
 * surely still out (the victim has a helper). Otherwise a fast victim could
 * have taken the first and returned its credit before the second arrived:
 * a write with a credit, then.
 */
const struct eng_transport *held_arm(void);

#endif
