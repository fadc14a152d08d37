/*
 * files_int.h - private to files.c and files_maps.c: the state of a file
 * job, which both work on, and its plan, which both remake.
 *
 * Threading: see files.c.
 */
#ifndef RAILCP_ENGINE_DATAPATH_FILES_INT_H
#define RAILCP_ENGINE_DATAPATH_FILES_INT_H

#if !defined(ENG_LAYER_DATAPATH) && !defined(RAILCP_TESTS)
#error "engine/datapath/files_int.h is private to engine/datapath/"
#endif

#include "engine/datapath/datapath_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define FILES_LOCKS 64

struct file_state {
	struct io_rfile *r;	   /* sender: open while chunks are in flight */
	struct io_wfile *w;	   /* receiver: open from the first chunk to the last */
	uint64_t left;		   /* sender: chunks not yet read */
	unsigned writers;	   /* receiver: chunks between write prepare and complete */
	bool complete;		   /* receiver: every chunk is in */
	bool done;		   /* receiver: being or already put in place */
	bool single;		   /* one chunk: its opens are I/Os of that chunk's task */
	struct io_partial *resume; /* receiver, --partial: what an earlier copy kept of it */
};

struct eng_files {
	enum eng_role role;
	struct io_manifest *m;
	struct io_plan *plan;
	struct io_root *root;
	unsigned io_flags;
	struct file_state *st; /* one per manifest entry */
	pthread_mutex_t lock[FILES_LOCKS];
	_Atomic uint64_t files_done;
	_Atomic uint64_t files_direct;	  /* opened with an O_DIRECT descriptor too */
	uint64_t chunks_all;		  /* the plan's chunks before any skip */
	uint64_t skip_files, skip_bytes;  /* files (and their data) the receiver held already */
	uint64_t kept_bytes, kept_chunks; /* what earlier copies kept (--partial), not sent */
	uint64_t hashed_bytes, hash_ns;	  /* kept chunks read and hashed before the job (-c too) */
	_Atomic unsigned open_files;	  /* receiver: files being written */
	unsigned max_open;		  /* receiver: what an honest sender can have in flight */
	bool drop;	    /* unfinished files go, partial or not (eng__files_unkept) */
	bool finished;	    /* receiver: eng__files_finish succeeded */
	uint64_t range_job; /* receiver: the job of entries flagged as ranges (io_wfile_range) */
};

/* What each file counts from f's plan. */
void eng__files_plan_counts(struct eng_files *f);

/* f's chunk plan for its manifest as it is marked now, and what each file counts from it. */
int eng__files_plan_make(struct eng_files *f, uint32_t chunk);

/* Whether bit k of a map (chunk or entry k at bit k % 8 of byte k / 8) is set. */
static inline bool eng__bit_set(const uint8_t *bits, uint64_t k)
{
	return bits[k / 8] >> (k % 8) & 1;
}

#endif
