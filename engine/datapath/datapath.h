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
 * The session holds a job opaque: what it needs of one (its error, its
 * links, its figures) are the functions here, none of them on the path of
 * a chunk. The job's body, its stripes', workers' and tasks', and what only
 * the data path calls are in datapath_int.h.
 *
 * Threading: set-up and teardown on the session's thread; see each function.
 */
#ifndef RAILCP_ENGINE_DATAPATH_H
#define RAILCP_ENGINE_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/transport/transport.h"
#include "io/io.h"
#include "topology/topology.h"

/* ---- a job ---- */

enum eng_role { ENG_SENDER, ENG_RECEIVER };

/* Bytes of a job's error sentence, with its NUL (eng__job_error). */
#define ENG_JOB_ERR_LEN 512

/* Opaque outside engine/datapath/ (datapath_int.h). */
struct eng_job;

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
	unsigned stall_ms; /* no completion for this long fails the job; 0: the default (60 s) */
	/* a sender's stripe with no credit back this long while others move fails; 0: never */
	unsigned rail_stall_ms;
	/*
	 * A receiver's coordinator also wakes (and calls its progress) when
	 * watch_fd is readable, until it drains: the peer's "done" is heard at
	 * once, not at the next ENG_PROGRESS_MS. watch: watch_fd is set.
	 */
	bool watch;
	int watch_fd;
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

/* ---- the coordinator ---- */

/*
 * Start one thread per worker, merge their completions until the job is
 * complete (sender: every chunk credited back), stopped or failed, then
 * stop and join them. Returns 0 or the job's first error (its sentence
 * recorded with rcp_err). progress (may be NULL) is called about every
 * ENG_PROGRESS_MS from the calling thread; it may stop or fail the job. It
 * is also called, with the job stopped (eng__job_stopped), while it waits
 * for its workers to finish (which file I/O can hold for long: a hung disk).
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
 * The same for a link the peer gave up while it connected (its end never
 * came up there): taken down alike, but if it has carried no chunk when its
 * worker takes it down, the report counts it as left out at set-up, not
 * lost mid-job. Thread-safe.
 */
void eng__job_link_gone_at_setup(struct eng_job *job, unsigned link, const char *why);

/*
 * The stripes alive, less those the peer gave up at set-up whose worker has
 * not taken them down yet: what the session starts with. Thread-safe.
 */
unsigned eng__job_stripes_up(struct eng_job *job);

/*
 * Whether link's stripe went down and stays down (failover), and if so why,
 * into why (len bytes). The session tells the peer so. Thread-safe.
 */
bool eng__job_link_down(struct eng_job *job, unsigned link, char *why, size_t len);

/*
 * Set-up, before eng__job_run: link's stripe never connected (why: the
 * transport's sentence) and is left out of the job, as one that failed
 * but with no chunk to give back; the report counts it apart from those
 * lost mid-job. Again for the same link does nothing. Session thread.
 */
void eng__job_link_unconnected(struct eng_job *job, unsigned link, const char *why);

/* Set-up: rail r of the plan, which has no stripe in this job, was left out for why. */
void eng__job_rail_left_out(struct eng_job *job, unsigned r, const char *why);

/* Stripes neither left out at set-up nor failed since. Thread-safe. */
unsigned eng__job_stripes_alive(const struct eng_job *job);

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

/*
 * A receiver's f that failed gives up what --partial would keep (a copy
 * that could go on over tcp failed for another reason:
 * engine/session/fallback.c): the markers of the directories it made go
 * now (a failure to is not said: it records a sentence), and its destroy
 * removes its unfinished files, partial files and records too, as without
 * --partial. After the job; accepts NULL and a sender's.
 */
void eng__files_unkept(struct eng_files *f);

const struct io_manifest *eng__files_manifest(const struct eng_files *f);

/*
 * Receiver: the railcp-mpi job whose temporaries take f's entries flagged
 * as ranges (io_wfile_range); before the data phase.
 */
void eng__files_range_job(struct eng_files *f, uint64_t job);
/* The receiver's root (NULL for a sender's without one). */
const struct io_root *eng__files_root(const struct eng_files *f);
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

/* Kept chunk i (the i-th set bit), plan chunk k, its len bytes in buf: 0 or -errno. */
typedef int (*eng_kept_fn)(void *ctx, uint64_t i, uint64_t k, const void *buf, uint32_t len);

/*
 * For each chunk k of the plan whose bit is set, its bytes given to fn: the
 * receiver's from its partial file (-c: from the old file, io_partial_read),
 * the sender's read from the source. The chunks are cut into parts read on
 * threads of their own (files_kept.c), so fn runs at once on distinct
 * chunks and must be thread-safe so. Stops at the first error (fn's too).
 * Session thread, before the job.
 */
int eng__files_kept_each(struct eng_files *f, const uint8_t *bits, eng_kept_fn fn, void *ctx);

/* The bytes of the chunks whose bit is set in bits (a map of the plan's chunks). */
uint64_t eng__files_bits_bytes(const struct eng_files *f, const uint8_t *bits);

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
 * n[i] and bytes[i] (m->n of each; bytes may be NULL): the chunks entry i
 * has in the plan now and their bytes (a dry run's count, -c).
 */
void eng__files_chunks_each(const struct eng_files *f, uint64_t *n, uint64_t *bytes);

/*
 * The bytes of kept chunks this side read and hashed before the job
 * (eng__files_kept, eng__files_kept_each: with -c the receiver's copy of
 * its old files too), and the time that took, in ns.
 */
void eng__files_hashed(const struct eng_files *f, uint64_t *bytes_out, uint64_t *ns_out);

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

/* Files this side opened with O_DIRECT too (--direct, or its default's rule). Thread-safe. */
uint64_t eng__files_direct(const struct eng_files *f);

#endif
