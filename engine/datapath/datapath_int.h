/*
 * datapath_int.h - private to engine/datapath/: what the stripes, the
 * worker loop and the coordinator share. The job, its stripes, workers and
 * tasks are laid out here; the session sees a job only through
 * datapath.h's functions, while the data path reads and writes their
 * fields directly (on the path of a chunk, no call stands between).
 * Tests may include it too (RAILCP_TESTS).
 */
#ifndef RAILCP_ENGINE_DATAPATH_INT_H
#define RAILCP_ENGINE_DATAPATH_INT_H

#if !defined(ENG_LAYER_DATAPATH) && !defined(RAILCP_TESTS)
#error "engine/datapath/datapath_int.h is private to engine/datapath/"
#endif

#include "engine/datapath/datapath.h"

#include <pthread.h>
#include <stdatomic.h>

/* A worker that saw no completion for this long fails the job: the peer or fabric stalled. */
#define ENG_STALL_MS 60000
/*
 * A job that stopped but whose workers are still held by their file I/O
 * after this long says so once (a hung disk: eng__job_run), then waits on.
 */
#define ENG_HOLD_NOTICE_MS 10000
/* A worker sleeping on its CQs wakes at least this often. */
#define ENG_SLEEP_MS 100
/* Spin on the CQs this long after a completion before sleeping, given a spare CPU (job.c). */
#define ENG_BUSY_POLL_US 50
/* Helper threads per worker, when the engine chooses (job.c). */
#define ENG_HELPERS_MAX 8
/* Signal at most one in this many writes and sends. */
#define ENG_SIGNAL_EVERY 16

/* wr_id: the stripe pointer with the operation in its low bits. */
enum { ENG_WR_WRITE = 1, ENG_WR_SEND = 2, ENG_WR_RECV = 3, ENG_WR_MASK = 7 };

/* ---- what a job moves ---- */

/*
 * A chunk's source and sink work in steps around file I/O (struct io_op):
 * prepare names the chunk and says the first I/O, a helper's ring (or
 * io_op_run) does it, complete judges what it returned and either says the
 * next I/O (returns ENG_STEP_MORE) or ends the chunk (0, or -errno). The
 * chunk's read or write is one of those I/Os; for a file of one chunk its
 * opens are too, and for every file the rename that puts it in place, so a
 * tree of small files keeps a ring full of opens and renames instead of a
 * thread blocked in each. Both run on a worker's helper threads
 * (iothreads.c), concurrently, or on the worker itself when the job has no
 * helpers or the source or sink is cheap (the bench pattern). When prepare
 * succeeds, complete is called until it no longer returns ENG_STEP_MORE,
 * with res, what the I/O in *op returned (0 for IO_OP_NONE; the bytes
 * moved, after any short counts, for a read or write; else -errno or the
 * call's result), and *op as it was done. Errors are -errno with a sentence
 * (rcp_err), recorded on the calling thread.
 */
#define ENG_STEP_MORE 1

/*
 * The sender's chunks, numbered 0 .. n_chunks-1. prepare gets a header with
 * seq set and names the chunk (file, offset, len <= chunk); it either fills
 * buf itself (op->kind IO_OP_NONE) or says in *op the first I/O towards
 * reading into buf. complete checks the read and sets hash.
 */
struct eng_source {
	uint64_t total;
	uint32_t chunk;
	uint64_t n_chunks;
	int (*prepare)(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op);
	int (*complete)(void *ctx, struct eng_chunk_hdr *hdr, const void *buf, int64_t res,
			struct io_op *op);
	bool cheap; /* never blocks and costs little: run on the worker thread */
	void *ctx;
};

/*
 * The receiver's consumer of one chunk whose header the stripe validated:
 * prepare checks it (its place, its hash) and says in *op the first I/O
 * towards writing it (IO_OP_NONE: nothing to write); complete records the
 * write, and may put a finished file in place.
 */
struct eng_sink {
	int (*prepare)(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
		       struct io_op *op);
	int (*complete)(void *ctx, const struct eng_chunk_hdr *hdr, const void *data, int64_t res,
			struct io_op *op);
	bool cheap;
	void *ctx;
};

/*
 * One slot's chunk on its way through prepare, I/O and complete: owned by
 * the worker while it waits for a helper or the wire, by one helper from
 * its queue to the worker's done list. hdr is the worker's copy (the
 * sender's header to be, the receiver's validated one).
 */
struct eng_task {
	struct eng_task *next; /* in a helper's queue or the worker's done list */
	struct eng_stripe *stripe;
	unsigned slot;
	bool queued;	 /* handed out and not yet back (worker only) */
	bool held;	 /* sender: the slot holds chunk hdr.seq until its credit comes back */
	bool posted;	 /* sender: its write is out and its credit not yet back */
	bool owed;	 /* receiver: its credit waits in credit_wait, not yet sent */
	unsigned helper; /* the helper it went to */
	int err;	 /* 0, or the error already recorded with eng__job_fail */
	uint32_t moved;	 /* bytes of op done so far */
	struct io_op op; /* the I/O under way (IO_OP_NONE: none) */
	struct eng_chunk_hdr hdr;
};

/* ---- stripes, workers, jobs ---- */

struct eng_worker;

struct eng_stripe {
	struct eng_link link; /* the transport's view: slots, endpoint, the peer's slots */
	struct eng_job *job;
	struct eng_worker *worker; /* the one thread that owns it */
	unsigned rail;		   /* index into job->rail[] */
	/* sender: slots it holds credits for */
	unsigned *free_slot;
	unsigned n_free;
	unsigned unsignaled;   /* writes or sends since the last signaled one */
	unsigned outstanding;  /* sender: slots written and not yet credited back */
	uint64_t moved_ns;     /* sender: its last credit back, or its first chunk out since */
	unsigned busy;	       /* slots whose task is being prepared, read or written */
	struct eng_task *task; /* one per slot */
	unsigned *ready;       /* sender: slots whose chunk is ready to post */
	unsigned n_ready;
	/*
	 * The send queue's entries (stripe.c): posted and freed counts of work
	 * requests, and for each signaled one not yet completed the posted count
	 * its completion frees up to (a ring of link.send_depth).
	 */
	uint64_t sq_posted, sq_freed;
	uint64_t *sq_mark;
	unsigned sq_head, sq_marks;
	unsigned *credit_wait; /* receiver: slots whose credit waits for the send queue */
	unsigned n_credit_wait;
	/* written by the owning worker only, read by the coordinator */
	_Atomic uint64_t bytes;
	_Atomic uint64_t chunks;
	/*
	 * failover.c: the stripe failed on the fabric and carries nothing more.
	 * Written by the owning worker; the session reads it to tell the peer.
	 */
	_Atomic bool dead;
	_Atomic bool lost_req; /* another thread asks the worker to take it down */
	bool lost_setup;       /* with lost_req: the peer gave it up at set-up (under err_lock) */
	bool counted_dead;     /* down, and counted as failed (under err_lock) */
	char lost_why[200];    /* why, written before lost_req under the job's err_lock */
	char down_why[200];    /* why it went down, written before dead under the err_lock */
};

struct eng_helper;

struct eng_worker {
	struct eng_tr_worker tr; /* the transport's view: slot memory and CQs */
	struct eng_job *job;
	int node;
	struct topo_bitmap cpus;
	bool bind; /* pin the thread (off in unit tests) */
	struct eng_stripe **stripe;
	unsigned n_stripes;
	struct topo_pool *pool; /* node-local slot memory (NULL: heap, in unit tests) */
	pthread_t thread;
	bool started;
	/* helper threads (iothreads.c), started and joined by the worker */
	struct eng_helper *helper;
	unsigned n_helpers;
	struct eng_helper *own; /* without helpers: the worker's own ring, or NULL */
	unsigned next_helper;	/* where the search for the least loaded starts */
	/* tasks back from the helpers: pushed by any thread, taken all at once by the worker */
	struct eng_task *_Atomic done;
	int done_fd; /* eventfd: done went from empty to not */
	/* written by this worker only, read by the coordinator */
	_Atomic uint64_t done_chunks; /* credited (sender) or consumed (receiver) */
	_Atomic uint64_t t_first_ns;  /* first post (sender) or first chunk in (receiver) */
	_Atomic uint64_t t_last_ns;   /* last chunk completed */
	_Atomic bool finished;
};

struct eng_rail_stat {
	char name[80]; /* "rxe0:1" */
	int node;
	/* failover.c, under the job's err_lock: */
	unsigned stripes, stripes_dead;
	uint64_t failed_ns; /* when its last stripe failed; 0: alive */
	char why[256];	    /* why its first stripe failed */
	/* left out at set-up: its stripes that never connected, and why the first did not */
	unsigned stripes_out;
	char out_why[256];
	/*
	 * sender, for the other rails' watchdog (stripe.c, failover.c): its
	 * last credit back on any stripe, and its chunks out (written by the
	 * rail's worker only)
	 */
	_Atomic uint64_t moved_ns;
	_Atomic unsigned out;
};

/*
 * What one role alone uses of a job, beside what both share (struct
 * eng_job). The sender's: the cursor its stripes claim chunks from, and the
 * retry list of chunks a failed stripe held (failover.c).
 */
struct eng_job_send {
	_Atomic uint64_t next_chunk; /* next chunk to claim */
	pthread_mutex_t retry_lock;  /* chunks of failed stripes, to be sent again */
	uint64_t *retry;
	size_t n_retry, retry_cap;
	_Atomic size_t retry_pending; /* n_retry, readable without the lock */
};

/* The receiver's: where a chunk goes, the drain, and which chunks landed (failover.c). */
struct eng_job_recv {
	struct eng_sink sink;
	_Atomic bool draining;	  /* the sender is done; end once tasks are back */
	_Atomic uint64_t *landed; /* chunk seq consumed (bit seq % 64 of seq / 64) */
};

/* A job: what both roles share, then what one role alone uses (snd or rcv). */
struct eng_job {
	enum eng_role role;
	uint64_t token;
	/*
	 * Both ends read total, chunk and n_chunks (they plan alike); prepare,
	 * complete and ctx are the sender's source of chunks.
	 */
	struct eng_source src;
	_Atomic bool stop;
	_Atomic int err;	 /* first error, 0 if none */
	_Atomic bool fabric_err; /* it came from the fabric: a completion, a post, a stall */
	char err_text[ENG_JOB_ERR_LEN];
	pthread_mutex_t err_lock;
	int wake_fd;	       /* eventfd: a worker has news for the coordinator */
	int stop_fd;	       /* eventfd: readable once the job stops */
	int drain_fd;	       /* eventfd: readable once a receiver drains (eng__job_drain) */
	int watch_fd;	       /* eng_job_opts.watch_fd, or -1 (not owned) */
	unsigned busy_poll_us; /* spin this long before sleeping on the CQ */
	unsigned stall_ms;     /* ENG_STALL_MS; tests shorten it (no option sets it) */
	/*
	 * With failover, a sender's stripe that has chunks out and no credit
	 * back for this long, while another rail moved, is failed as
	 * "stalled" (failover.c, eng__worker_watch); 0: never.
	 */
	unsigned rail_stall_ms;
	unsigned hold_ms;      /* ENG_HOLD_NOTICE_MS; tests shorten it */
	_Atomic bool held;     /* the job stopped, its file I/O had not: the notice went */
	unsigned helpers;      /* per worker; 0: prepare, I/O and complete on the worker */
	unsigned io_depth;     /* per helper (or worker): ring entries; 0: pread and pwrite */
	_Atomic int io_ring;   /* 1: the helpers' I/O goes through io_uring, -errno: it could not */
	unsigned signal_every; /* signal one in this many writes and sends */
	struct eng_worker *worker;
	unsigned n_workers;
	struct eng_stripe *stripe;
	unsigned n_stripes;
	struct eng_rail_stat *rail;
	unsigned n_rails;
	/* the transport's view of the job, for eng_transport.conn_create */
	struct eng_link **link;
	struct eng_tr_worker **tr_worker;
	/* failover.c */
	bool failover;	     /* a stripe that fails on the fabric goes down alone */
	uint64_t t_start_ns; /* when the workers started */
	_Atomic unsigned stripes_alive;
	/* one role's alone (the other role leaves it idle) */
	struct eng_job_send snd; /* ENG_SENDER */
	struct eng_job_recv rcv; /* ENG_RECEIVER */
};

/* ---- set-up and stopping, within the data path ---- */

/* Sender set-up of a stripe after its endpoint exists: every slot is a credit. */
int eng__stripe_init_sender(struct eng_stripe *s);

/* Receiver set-up of a stripe after its endpoint exists: one receive per slot. */
int eng__stripe_init_receiver(struct eng_stripe *s);

/*
 * The same for a failure on the fabric (a completion, a post, a stall):
 * job->fabric_err is set with the error, under err_lock. Thread-safe.
 */
bool eng__job_fail_fabric(struct eng_job *job, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Stop the job without an error. Thread-safe. */
void eng__job_stop(struct eng_job *job);

/* ---- the bench pattern's source and sink (bench.c) ---- */

/* ctx: the job's eng_source, to place the chunk in the stream. */
int eng__bench_fill(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op);
/* ctx: the receiving job's chunk size (uint32_t *), to pin each chunk's place; may be NULL. */
int eng__bench_check(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
		     struct io_op *op);

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
 * show, and how tests/bench/datapath_sampler.c tells each end's CPU time apart.
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
