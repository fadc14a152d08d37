/*
 * fallback.h - private to engine/session/: a copy on --transport auto that
 * chose rdma goes on over tcp when every RDMA rail failed (fallback.c).
 *
 * Threading: the session's thread.
 */
#ifndef RAILCP_ENGINE_FALLBACK_H
#define RAILCP_ENGINE_FALLBACK_H

#if !defined(ENG_LAYER_SESSION) && !defined(RAILCP_TESTS)
#error "engine/session/fallback.h is private to engine/session/"
#endif

#include "engine/session/session_int.h"

/* What a client's session whose every rail failed left (eng_client_opts.fall). */
struct eng_fall {
	bool rails_down;	     /* every rail failed: the copy may go on over tcp */
	bool setup;		     /* none came up at set-up: nothing moved */
	uint64_t bytes, bytes_total; /* moved and verified before it, of the copy's */
	uint64_t chunks;	     /* those bytes' chunks */
	double seconds;		     /* its data phase */
};

/* Every rail of this side failed on the fabric mid-job, or none came up at set-up. */
bool eng__session_own_rails_down(const struct eng_session *s);

/*
 * Whether the copy goes on over tcp, decided once: a client's error frame
 * went saying ENG_KEY_RAILS_DOWN, or the client's frame said it to the
 * server. A server's frame arriving later changes nothing, so both ends
 * agree on keeping what landed.
 */
bool eng__session_falls(const struct eng_session *s);

/*
 * A session that failed with err, before it ends (eng__session_fini): one
 * that could go on over tcp (s->fallback) wrote its unfinished files in
 * partial files; unless its rails all failed (the copy goes on) or
 * --partial or -c keeps them, they go as in any other session, with the
 * markers of the directories it made. err's sentence stays recorded.
 */
void eng__session_fallback_drop(struct eng_session *s, int err);

/* A client's session that failed: what it left, into o->fall, if its rails all failed. */
void eng__fall_record(const struct eng_session *s, const struct eng_client_opts *o);

/*
 * After the first session over o->tr failed with err (a sentence): if its
 * rails all failed (o->fall), the copy again over o->plan_tcp as a resume
 * (-c: what landed is kept and confirmed, the files in place compared),
 * with one notice line; on success the report covers both sessions from
 * t0_ns. Else err.
 */
int eng__client_fall_back(const struct eng_client_opts *o, int err, uint64_t t0_ns,
			  struct eng_report *report_out);

#endif
