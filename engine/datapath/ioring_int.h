/*
 * ioring_int.h - private to iothreads.c and ioring.c: a helper (a helper
 * thread, or the worker's own ring) and what its ring does with a task.
 *
 * Threading: a helper's ring, its counts and a task from its prepare to
 * done belong to the helper's thread (the worker's, for its own ring);
 * the queue is under the helper's lock.
 */
#ifndef RAILCP_ENGINE_DATAPATH_IORING_INT_H
#define RAILCP_ENGINE_DATAPATH_IORING_INT_H

#if !defined(ENG_LAYER_DATAPATH) && !defined(RAILCP_TESTS)
#error "engine/datapath/ioring_int.h is private to engine/datapath/"
#endif

#include "engine/datapath/datapath_int.h"

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct eng_helper {
	struct eng_worker *w;
	unsigned index;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	struct eng_task *head, *tail; /* the queue */
	bool quit;		      /* under lock */
	bool kick;		      /* worker only: tasks were queued this round */
	unsigned load;		      /* worker only: tasks handed out and not yet back */
	int efd;		      /* eventfd: the queue has news */
	/* the helper thread's own */
	struct io_uring ring;
	bool ring_dead; /* the kernel refused a submission for good: no more */
	bool poll_armed;
	unsigned inflight;	 /* tasks whose I/O the kernel took */
	struct eng_task **unsub; /* tasks whose I/O sits in the ring, not yet taken */
	unsigned n_unsub;
};

/* ---- a task's steps (ioring.c) ---- */

/* All of a task on the calling thread: prepare, its I/Os with io_op_run, and their completes. */
void eng__task_run(struct eng_task *t);

/* Put t on its worker's done list (and wake the worker, unless its own ring does). */
void eng__done_push(struct eng_worker *w, struct eng_task *t);

/* ---- the ring (ioring.c) ---- */

/* h's ring of job->io_depth entries (+1 for a poll); records which I/O the job got. */
int eng__ring_init(struct eng_helper *h);

/* Tear h's ring down (after its last I/O came back). */
void eng__ring_exit(struct eng_helper *h);

/* Whether h's ring can take one more task's I/O (each task has one there at a time). */
bool eng__ring_room(const struct eng_helper *h);

/* Prepare t and put its I/O in h's ring; true if it is done already (failed, or no I/O). */
bool eng__ring_begin(struct eng_helper *h, struct eng_task *t);

/* Submit what h's ring holds; a refusal for good fails those tasks and kills the ring. */
void eng__ring_submit(struct eng_helper *h);

/* Take every completion the ring holds; true if there was one. */
bool eng__ring_reap(struct eng_helper *h);

/* Sleep in the ring until a completion or news in the queue. */
void eng__ring_wait(struct eng_helper *h);

#endif
