/*
 * server.h - private to engine/session/: one session of railcp serve, as
 * server.c (admission, the file list, the job's end and its log line) and
 * server_setup.c (its stripes: pairing, the job, the welcome, the accepts)
 * share it.
 *
 * Threading: a session belongs to its own thread (and its job's workers).
 */
#ifndef RAILCP_ENGINE_SERVER_H
#define RAILCP_ENGINE_SERVER_H

#if !defined(ENG_LAYER_SESSION) && !defined(RAILCP_TESTS)
#error "engine/session/server.h is private to engine/session/"
#endif

#include "engine/session/session_int.h"

struct srv_session {
	struct eng_session s;
	struct eng_server *srv;
	unsigned id;
	unsigned slot;	   /* in srv->pending until authenticated */
	uint32_t slot_gen; /* the slot's generation while it is this session's */
	char peer[64];
	json_t *hello;
	const char *kind;		     /* ENG_JOB_* */
	uint64_t bytes;			     /* announced, for the log */
	unsigned root_flags;		     /* IO_ROOT_* from the client's flags */
	enum eng_direct direct;		     /* the client's --direct, under serve --no-direct */
	uint64_t range_job;		     /* a railcp-mpi job's ranges (ranges.c), or 0 */
	enum eng_range_step range_step;	     /* a "ranges" session: no data, its step */
	char where[IO_ESC_MAX];		     /* push: the destination; pull: the first source */
	struct topo_plan plan;		     /* the server's plan, with this session's stripes */
	const struct topo_plan *base;	     /* the plan of its transport: o->plan or plan_tcp */
	const struct eng_rail_addr *addr;    /* that plan's rails: srv->addr or addr_tcp */
	struct eng_admit admit;		     /* its share of --max-memory */
	bool *counted;			     /* while admitted: holds a place of --max-sessions */
	double start;			     /* the wall clock at the connection */
	double seconds;			     /* the transfer, by the sender's clock, once done */
	unsigned peer_rail[ENG_MAX_STRIPES]; /* our rail for each client stripe */
	bool trimmed[ENG_MAX_STRIPES];	     /* unpaired: our buffer holds no more */
};

/*
 * Pairing, slots, the job, listening, the welcome, and every stripe
 * connected or left out (server_setup.c); 0 while one stripe is up.
 */
int eng__server_setup(struct srv_session *ss);

#endif
