/*
 * datapath_int.h - private to engine/datapath/: what the stripes, the
 * worker loop and the coordinator share.
 */
#ifndef RAILCP_ENGINE_DATAPATH_INT_H
#define RAILCP_ENGINE_DATAPATH_INT_H

#if !defined(ENG_LAYER_DATAPATH) && !defined(RAILCP_TESTS)
#error "engine/datapath/datapath_int.h is private to engine/datapath/"
#endif

#include "engine/datapath/datapath.h"

/* A worker that saw no completion for this long fails the job: the peer or fabric stalled. */
#define ENG_STALL_MS 60000
/*
 * A job that stopped but whose workers are still held by their file I/O
 * after this long says so once (a hung disk: eng__job_run), then waits on.
 */
#define ENG_HOLD_NOTICE_MS 10000
/* A worker sleeping on its CQs wakes at least this often. */
#define ENG_SLEEP_MS 100
/* Spin on the CQs this long after the last completion before sleeping (real runs). */
#define ENG_BUSY_POLL_US 50
/* Helper threads per worker, when the engine chooses (job.c). */
#define ENG_HELPERS_MAX 8
/* Signal at most one in this many writes and sends. */
#define ENG_SIGNAL_EVERY 16

/* wr_id: the stripe pointer with the operation in its low bits. */
enum { ENG_WR_WRITE = 1, ENG_WR_SEND = 2, ENG_WR_RECV = 3, ENG_WR_MASK = 7 };

/* Sender: claim chunks for the stripe's free slots and post them under one doorbell. */
void eng__stripe_pump(struct eng_stripe *s);

/* Handle one completion of the worker's CQs. */
void eng__stripe_complete(const struct eng_wc *wc);

/* Sender: nothing left to claim and every slot of w's stripes credited back. */
bool eng__worker_idle(const struct eng_worker *w);

/* The thread of one worker: drive its stripes until the job stops. */
void *eng__worker_main(void *arg);

/*
 * Name the calling thread "rcp-snd-w<i>" (worker i of a sender), or
 * "rcp-rcv-h<i>.<k>" (helper k of a receiver's worker i): what top and perf
 * show, and how tests/bench/bench_datapath.c tells each end's CPU time apart.
 */
void eng__thread_name(const struct eng_job *job, char kind, unsigned i, unsigned k);

/* ---- helper threads (iothreads.c) ---- */

/* Start the job's helpers for w (on w's thread); -errno with a sentence. */
int eng__helpers_start(struct eng_worker *w);

/* Stop and join w's helpers: queued tasks are dropped, submitted I/O is waited for. */
void eng__helpers_stop(struct eng_worker *w);

/*
 * Hand t (stripe, slot and hdr set) to a helper, or run it here when w has
 * no helpers or the job's source or sink is cheap: true if it is done
 * already (t->err says how).
 */
bool eng__task_submit(struct eng_worker *w, struct eng_task *t);

/* Wake the helpers given tasks since the last call. */
void eng__helpers_kick(struct eng_worker *w);

/* The tasks the helpers finished since the last call (a list through next), or NULL. */
struct eng_task *eng__helpers_done(struct eng_worker *w);

/* Readable when helpers finished tasks; -1 without helpers. */
int eng__helpers_fd(const struct eng_worker *w);

/* A task is back on its worker's thread: post the chunk (sender) or return the credit. */
void eng__stripe_task_done(struct eng_task *t);

/* Sender: post the chunks whose tasks are done, under as few doorbells as they allow. */
void eng__stripe_flush(struct eng_stripe *s);

/* An eventfd's counter up by one (readable), or read back to zero; errors are moot. */
void eng__fd_signal(int fd);
void eng__fd_drain(int fd);

/* Tell the coordinator to look at the job now (a worker went idle or failed). Thread-safe. */
void eng__job_wake(struct eng_job *job);

/* ---- failover (failover.c) ---- */

/* The job's retry list (sender) or chunk map (receiver), before the workers start. */
int eng__failover_init(struct eng_job *job);
void eng__failover_fini(struct eng_job *job);

/* Sender: the next chunk to send, a failed stripe's first; false when none is left. */
bool eng__job_claim(struct eng_job *job, uint64_t *seq_out);

/* Sender: chunk seq goes back to the job (its stripe failed before its credit came). */
void eng__job_requeue(struct eng_job *job, uint64_t seq);

/* Receiver: true the first time chunk seq is consumed, false for a second copy. */
bool eng__job_landed(struct eng_job *job, uint64_t seq);

/*
 * s failed on the fabric (what: the error; the endpoint is named here): with
 * failover it goes down and its chunks go to the other stripes, else the job
 * fails. Later failures of a stripe already down are ignored.
 */
void eng__stripe_lost(struct eng_stripe *s, int err, const char *what);

/*
 * The watchdog, on w's thread each round: a sender's stripe of w that has
 * chunks out and no credit back for job->rail_stall_ms, while another rail
 * got credits well after its last one, goes down as a failed one does
 * ("stalled"): a rail that drops everything while its ports stay up (a
 * switch port, an ACL, an MTU the ends disagree on) fails over instead of
 * holding the copy until the job's stall limit.
 */
void eng__worker_watch(struct eng_worker *w);

/* Take down w's stripes that another thread asked for (eng__job_link_lost). */
void eng__worker_check_lost(struct eng_worker *w);

/* w still has a stripe that carries chunks. */
bool eng__worker_alive(const struct eng_worker *w);

/* Receiver: the job drains and none of w's tasks is out. */
bool eng__worker_drained(const struct eng_worker *w);

#endif
