/*
 * datapath.h - engine/datapath/, the layer that moves a job's chunks: the
 * one header the session layer includes.
 *
 * A job moves chunks over stripes. A stripe is one link of the transport
 * (one QP of one rail) with a fixed set of receiver slots; the sender may
 * write only into a slot it holds a credit for, and the receiver returns the
 * credit (a zero-byte send with the slot number as immediate) once the
 * slot's data has been consumed (stripe.c). Each worker thread owns a
 * completion queue per device and the stripes of its rails, and nothing
 * else touches them while it runs (worker.c). The coordinator runs on the
 * session's thread: it starts the workers, merges their completions into
 * the job's state, decides when the job ends, and joins them
 * (coordinator.c). Where the chunks come from and go to is the job's source
 * and sink: the bench pattern (bench.c) or files (files.c).
 *
 * Threading: set-up and teardown on the session's thread; see each function.
 */
#ifndef RAILCP_ENGINE_DATAPATH_H
#define RAILCP_ENGINE_DATAPATH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/transport/transport.h"
#include "io/io.h"
#include "topology/topology.h"

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

enum eng_role { ENG_SENDER, ENG_RECEIVER };

/* Bytes of a job's error sentence, with its NUL (eng__job_error). */
#define ENG_JOB_ERR_LEN 512

struct eng_job;
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
};

struct eng_job {
	enum eng_role role;
	uint64_t token;
	struct eng_source src;	     /* sender; the receiver keeps total and n_chunks */
	struct eng_sink sink;	     /* receiver */
	_Atomic uint64_t next_chunk; /* sender: next chunk to claim */
	_Atomic bool stop;
	_Atomic int err;	 /* first error, 0 if none */
	_Atomic bool fabric_err; /* it came from the fabric: a completion, a post, a stall */
	char err_text[ENG_JOB_ERR_LEN];
	pthread_mutex_t err_lock;
	int wake_fd;	       /* eventfd: a worker has news for the coordinator */
	int stop_fd;	       /* eventfd: readable once the job stops */
	unsigned busy_poll_us; /* spin this long before sleeping on the CQ */
	unsigned stall_ms;     /* ENG_STALL_MS; tests shorten it (no option sets it) */
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
	_Atomic bool draining;	    /* receiver: the sender is done; end once tasks are back */
	pthread_mutex_t retry_lock; /* sender: chunks of failed stripes, to be sent again */
	uint64_t *retry;
	size_t n_retry, retry_cap;
	_Atomic size_t retry_pending; /* n_retry, readable without the lock */
	_Atomic uint64_t *landed;     /* receiver: chunk seq consumed (bit seq % 64 of seq / 64) */
};

/*
 * Workers, rails, stripes and slot memory for plan: plan->rail[r] gets
 * plan->rail[r].qps stripes of n_slots slots of slot_size bytes, in its
 * worker's memory (a node-local pool when pools is true, else the heap).
 * The transport then gives each worker CQs and each stripe an endpoint.
 */
int eng__job_create(enum eng_role role, const struct topo_plan *plan, unsigned n_slots,
		    uint32_t slot_size, bool pools, struct eng_job **job_out);

/* Frees what eng__job_create made; the transport's connections go first. Accepts NULL. */
void eng__job_destroy(struct eng_job *job);

/*
 * The connection set-up the transport needs for this job: the links, the
 * workers, and posting each link's receives as it is made (every slot a
 * credit at the sender). Filled into *cfg, which must outlive the connections.
 */
void eng__job_conn_cfg(struct eng_job *job, struct eng_conn_cfg *cfg);

/* What the session decides of a job it made. */
struct eng_job_opts {
	uint64_t token; /* every chunk header carries it; the session derives it (seal.c) */
	bool failover;	/* a stripe that fails on the fabric goes down alone; else the job fails */
	unsigned stall_ms; /* a worker without a completion this long fails the job; 0: 60 s */
};

/* Apply o to job, before eng__job_conn_cfg. Session thread, while no worker runs. */
void eng__job_configure(struct eng_job *job, const struct eng_job_opts *o);

/* The job's stripes (links), numbered 0 .. n-1. Thread-safe: fixed when the job is made. */
unsigned eng__job_stripes(const struct eng_job *job);

/*
 * Stripe i's link, as the transport sees it: the session sets its token and
 * connects it, and may read its slots. Session thread, before eng__job_run.
 */
struct eng_link *eng__job_link(struct eng_job *job, unsigned i);

/* The plan's rail (its index) stripe i runs on. Thread-safe: fixed when the job is made. */
unsigned eng__job_link_rail(const struct eng_job *job, unsigned i);

/*
 * The chunks the job moves (both sides plan them alike), once its source or
 * sink is attached; thread-safe from then on, when it no longer changes.
 */
uint64_t eng__job_chunks(const struct eng_job *job);

/* Sender set-up of a stripe after its endpoint exists: every slot is a credit. */
int eng__stripe_init_sender(struct eng_stripe *s);

/* Receiver set-up of a stripe after its endpoint exists: one receive per slot. */
int eng__stripe_init_receiver(struct eng_stripe *s);

/* ---- the coordinator ---- */

/*
 * Start one thread per worker, merge their completions until the job is
 * complete (sender: every chunk credited back), stopped or failed, then
 * stop and join them. Returns 0 or the job's first error (its sentence
 * recorded with rcp_err). progress (may be NULL) is called about every
 * ENG_PROGRESS_MS from the calling thread; it may stop or fail the job. It
 * is also called, with job->stop set, while the stopped job waits for its
 * workers to finish (which file I/O can hold for long: a hung disk).
 */
#define ENG_PROGRESS_MS 20
int eng__job_run(struct eng_job *job, void (*progress)(struct eng_job *job, void *ctx), void *ctx);

/*
 * Record the job's first error (later ones are dropped) and stop it; true if
 * this was the first. Thread-safe.
 */
bool eng__job_fail(struct eng_job *job, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The same for a failure on the fabric (a completion, a post, a stall):
 * job->fabric_err is set with the error, under err_lock. Thread-safe.
 */
bool eng__job_fail_fabric(struct eng_job *job, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Stop the job without an error. Thread-safe. */
void eng__job_stop(struct eng_job *job);

/*
 * Receiver, once the sender says every chunk is credited back: end the job
 * as soon as every task under way (a first copy of a chunk whose credit was
 * lost with its rail) is back. Thread-safe.
 */
void eng__job_drain(struct eng_job *job);

/*
 * Ask the worker that owns link's stripe to take it down, as if it had
 * failed on the fabric for the reason why (a port or device event, a
 * disconnect): with failover its chunks go to the other stripes, without it
 * the job fails. Thread-safe.
 */
void eng__job_link_lost(struct eng_job *job, unsigned link, const char *why);

/*
 * Whether link's stripe went down and stays down (failover), and if so why,
 * into why (len bytes). The session tells the peer so. Thread-safe.
 */
bool eng__job_link_down(struct eng_job *job, unsigned link, char *why, size_t len);

/* Chunks completed so far, over all workers. Thread-safe. */
uint64_t eng__job_done_chunks(const struct eng_job *job);

/* The figures of a job so far, or at its end. Thread-safe. */
void eng__job_report(const struct eng_job *job, struct eng_report *r);

/* The job stopped: it failed, was stopped, or ended. Thread-safe. */
bool eng__job_stopped(const struct eng_job *job);

/*
 * The job's first error (0: none) and its sentence, into text (len bytes;
 * ENG_JOB_ERR_LEN hold any). Thread-safe.
 */
int eng__job_error(struct eng_job *job, char *text, size_t len);

/*
 * The job's first error came from the fabric (a completion, a post, a stall:
 * eng__job_fail_fabric): the peer's own sentence may name its cause.
 * Thread-safe.
 */
bool eng__job_fabric_err(const struct eng_job *job);

/* ---- the bench pattern (bench.c) ---- */

/* A bench job of bytes in chunks of chunk: the pattern's source and checking sink. */
void eng__bench_attach(struct eng_job *job, uint64_t bytes, uint32_t chunk);
/* ctx: the job's eng_source, to place the chunk in the stream. */
int eng__bench_fill(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op);
/* ctx: the receiving job's chunk size (uint32_t *), to pin each chunk's place; may be NULL. */
int eng__bench_check(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
		     struct io_op *op);

/* ---- the file side of push and pull (files.c, files_maps.c) ---- */

struct eng_files;

/*
 * A side of a file job over manifest m (taken over: freed with the files)
 * cut into chunks of chunk bytes. Sender: root is where the entries' src
 * paths are read beneath (NULL: as given); io_flags may hold IO_DIRECT.
 * Receiver: root is where the entries land (taken over as well).
 */
int eng__files_create(enum eng_role role, struct io_manifest *m, uint32_t chunk,
		      struct io_root *root, unsigned io_flags, struct eng_files **f_out);

/* Closes what is open; a receiver removes the temporary files of unfinished files. Accepts NULL. */
void eng__files_destroy(struct eng_files *f);

const struct io_manifest *eng__files_manifest(const struct eng_files *f);
uint64_t eng__files_chunks(const struct eng_files *f);
/* The chunks of the whole manifest, before any skip: what both sides must agree on first. */
uint64_t eng__files_chunks_all(const struct eng_files *f);

/*
 * The quick check (--update), receiver, before eng__files_prepare: mark skip
 * every entry its root holds already (io_root_holds) and plan without them;
 * *bits_out (malloc'd, eng__files_map_len bytes) has bit i set for entry i
 * skipped, for the sender.
 */
int eng__files_holds(struct eng_files *f, uint8_t **bits_out);

/* Bytes of a map of f's entries: a bit each, entry i at bit i % 8 of byte i / 8. */
size_t eng__files_map_len(const struct eng_files *f);

/*
 * Mark skip the entries whose bit is set in bits (eng__files_map_len bytes;
 * directories excepted) and plan again without them: the sender, with the
 * receiver's map, before the job is made.
 */
int eng__files_skip(struct eng_files *f, const uint8_t *bits);

/* The files left out as held already, and their data bytes. */
void eng__files_skipped(const struct eng_files *f, uint64_t *files_out, uint64_t *bytes_out);

/*
 * --partial, receiver, after any eng__files_holds: what earlier copies kept
 * of each file (io_root_partial, every chunk read back and hashed);
 * *bits_out (malloc'd, eng__files_kept_map_len bytes, over the plan) has bit
 * k set for chunk k kept, for the sender to confirm. The plan still holds
 * them until eng__files_kept_settle. Once per side.
 */
int eng__files_kept(struct eng_files *f, uint8_t **bits_out);

/*
 * For each chunk k of the plan whose bit is set, in plan order, its bytes
 * given to fn: the receiver's from its partial file, the sender's read from
 * the source (one open per file). Stops at the first error (fn's too).
 * Session thread, before the job.
 */
int eng__files_kept_each(struct eng_files *f, const uint8_t *bits,
			 int (*fn)(void *ctx, uint64_t k, const void *buf, uint32_t len),
			 void *ctx);

/*
 * Receiver, after the sender's answer to eng__files_kept's map: the kept
 * chunks it did not confirm are forgotten (received again), the confirmed
 * ones leave the plan (eng__files_drop). Before eng__files_prepare. Returns
 * how many were forgotten.
 */
uint64_t eng__files_kept_settle(struct eng_files *f, const uint8_t *kept, const uint8_t *confirmed);

/*
 * Bytes of a map of f's planned chunks as the plan was before the kept ones
 * were dropped: chunk k at bit k % 8 of byte k / 8.
 */
size_t eng__files_kept_map_len(const struct eng_files *f);

/* Plan without the chunks whose bit is set (the sender, with the receiver's map). Once. */
void eng__files_drop(struct eng_files *f, const uint8_t *bits);

/* The data bytes kept from earlier copies, not sent (--partial). */
uint64_t eng__files_kept_bytes(const struct eng_files *f);

/*
 * Receiver, --partial, while the job runs: the record of every file being
 * written, as it stands (io_wfile_checkpoint), so a receiver killed
 * outright still leaves what it got. Thread-safe against the job.
 */
void eng__files_checkpoint(struct eng_files *f);

/* Wire the job's source (sender) or sink (receiver) to f. */
void eng__files_attach(struct eng_files *f, struct eng_job *job);

/* Receiver, before any chunk: directories, symlinks and files without data, in manifest order. */
int eng__files_prepare(struct eng_files *f);

/* Receiver, after the last chunk: every file in place, then directory metadata. */
int eng__files_finish(struct eng_files *f);

/* Files done so far: read to the end (sender) or put in place (receiver). Thread-safe. */
uint64_t eng__files_done(const struct eng_files *f);

#endif
