/*
 * engine_int.h - private to engine/: the transport operations table, the
 * wire header of a chunk, stripes, workers and jobs.
 *
 * A job moves chunks over stripes. A stripe is one connected queue pair
 * (one QP of one rail) with a fixed set of receiver slots; the sender may
 * write only into a slot it holds a credit for, and the receiver returns the
 * credit (a zero-byte SEND with the slot number as immediate) once the slot's
 * data has been consumed. Each worker thread owns a completion queue and the
 * stripes of its rails, and nothing else touches them while it runs.
 *
 * Transports fill a complete const table of operations: verbs for real
 * devices, loopback (in-process, with injectable delays and errors) for
 * unit tests. The data path is written once, against the table.
 */
#ifndef RAILCP_ENGINE_INT_H
#define RAILCP_ENGINE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "topology/topology.h"

/* ---- the chunk header, written by the sender next to each chunk ---- */

#define ENG_HDR_MAGIC 0x72636831u /* "rch1" */

struct eng_chunk_hdr {
	uint32_t magic;
	uint32_t slot;   /* must equal the immediate that announced it */
	uint64_t token;  /* the session's token */
	uint64_t seq;    /* chunk number within the job */
	uint64_t file;   /* file number within the job (0 for bench) */
	uint64_t offset; /* byte offset within the file or stream */
	uint32_t len;    /* payload bytes, at most the slot size */
	uint32_t crc;    /* crc32c of the payload, or 0 when the job has none */
	uint8_t pad[16];
};
_Static_assert(sizeof(struct eng_chunk_hdr) == 64, "chunk header is one cache line");

/* ---- transport operations ---- */

enum eng_wc_op {
	ENG_WC_WRITE,    /* a signaled write of ours completed */
	ENG_WC_SEND,     /* a signaled credit send of ours completed */
	ENG_WC_RECV_IMM, /* the peer's write-with-imm or send-with-imm arrived */
};

struct eng_wc {
	uint64_t wr_id;
	int status;          /* 0, or the transport's error code */
	const char *status_str;
	enum eng_wc_op op;
	uint32_t imm;
	uint32_t qp_num;
};

struct eng_remote {
	uint64_t addr;
	uint32_t rkey;
};

/* One chunk to write: its header (small, may go inline), then its data with an immediate. */
struct eng_write {
	uint64_t wr_id;
	bool signaled;
	const struct eng_chunk_hdr *hdr;
	uint32_t hdr_lkey;
	struct eng_remote hdr_dst;
	const void *data;
	uint32_t data_lkey;
	uint32_t len;
	struct eng_remote data_dst;
	uint32_t imm;
};

struct eng_cq;
struct eng_ep;

struct eng_tr_ops {
	const char *name;
	/* Post n writes as one chain (one doorbell). */
	int (*write_imm)(struct eng_ep *ep, const struct eng_write *w, unsigned n);
	/* A zero-byte send carrying imm. */
	int (*send_imm)(struct eng_ep *ep, uint64_t wr_id, bool signaled, uint32_t imm);
	/* n zero-byte receives, each completing one incoming imm. */
	int (*post_recv)(struct eng_ep *ep, uint64_t wr_id, unsigned n);
	/* Up to max completions; returns the count or -errno. */
	int (*poll)(struct eng_cq *cq, struct eng_wc *wc, int max);
	/* Ask for an event on the next completion. */
	int (*arm)(struct eng_cq *cq);
	/* A file descriptor that turns readable when an event is pending. */
	int (*event_fd)(struct eng_cq *cq);
	/* Consume pending events (after event_fd turned readable). */
	void (*ack_events)(struct eng_cq *cq);
	/* Text naming the endpoint in errors: device, port, QP number, peer. */
	void (*describe)(struct eng_ep *ep, char *buf, size_t len);
};

struct eng_cq {
	const struct eng_tr_ops *ops;
	void *tr;
};

struct eng_ep {
	const struct eng_tr_ops *ops;
	void *tr;
};

/* ---- what a job moves ---- */

/*
 * The sender's chunks, numbered 0 .. n_chunks-1. fill gets a header with seq
 * set, names the chunk (file, offset, len <= chunk), writes its payload into
 * buf and may set crc. For a byte stream (bench), eng__stream_place names
 * chunk seq as [seq * chunk, min(total, ...)). Called from worker threads.
 */
struct eng_source {
	uint64_t total;
	uint32_t chunk;
	uint64_t n_chunks;
	int (*fill)(void *ctx, struct eng_chunk_hdr *hdr, void *buf);
	void *ctx;
};

/*
 * The receiver's consumer of one validated chunk: check it, write it out.
 * Returns 0, or -errno with a sentence (the job fails). Called from workers.
 */
struct eng_sink {
	int (*consume)(void *ctx, const struct eng_chunk_hdr *hdr, const void *data);
	void *ctx;
};

/* ---- stripes, workers, jobs ---- */

enum eng_role { ENG_SENDER, ENG_RECEIVER };

struct eng_job;

struct eng_worker;

struct eng_stripe {
	struct eng_job *job;
	struct eng_worker *worker; /* the one thread that owns it */
	struct eng_ep *ep;
	unsigned index;            /* within the job */
	unsigned rail;             /* index into job->rail[] */
	unsigned n_slots;
	uint32_t slot_size;
	/* the slots: payloads n_slots x slot_size, headers n_slots x 64 bytes */
	uint8_t *data;
	struct eng_chunk_hdr *hdr;
	uint32_t lkey;
	struct eng_remote peer_data, peer_hdr; /* sender: the receiver's slots */
	/* sender: slots it holds credits for */
	unsigned *free_slot;
	unsigned n_free;
	unsigned unsignaled;       /* writes or sends since the last signaled one */
	unsigned outstanding;      /* sender: slots written and not yet credited back */
	/* counters, written by the owning worker, read by anyone */
	_Atomic uint64_t bytes;
	_Atomic uint64_t chunks;
};

/* A CQ belongs to one device: a worker driving rails on several has one each. */
#define ENG_MAX_CQS 8

struct eng_worker {
	struct eng_job *job;
	unsigned index;
	int node;
	struct topo_bitmap cpus;
	bool bind;                 /* pin the thread (off in unit tests) */
	struct eng_cq *cq[ENG_MAX_CQS];
	unsigned n_cqs;
	struct eng_stripe **stripe;
	unsigned n_stripes;
	struct topo_pool *pool;    /* node-local slot memory (NULL: heap, in unit tests) */
	uint8_t *mem;
	size_t mem_len;
	void *tr;                  /* the transport's per-worker state */
	pthread_t thread;
	bool started;
	/* counters */
	_Atomic uint64_t bytes;
	_Atomic bool finished;
};

struct eng_rail_stat {
	char name[80];             /* "rxe0:1" */
	int node;
	_Atomic uint64_t bytes;
	_Atomic uint64_t chunks;
};

struct eng_job {
	enum eng_role role;
	uint64_t token;
	struct eng_source src;     /* sender */
	struct eng_sink sink;      /* receiver */
	uint64_t expect_chunks;    /* receiver: stop after this many (0: until told) */
	_Atomic uint64_t next_chunk;   /* sender: next chunk to claim */
	_Atomic uint64_t done_chunks;  /* completed: credited (sender) or consumed (receiver) */
	_Atomic bool stop;
	_Atomic int err;               /* first error, 0 if none */
	char err_text[512];
	pthread_mutex_t err_lock;
	unsigned busy_poll_us;     /* spin this long before sleeping on the CQ */
	unsigned signal_every;     /* signal one in this many writes and sends */
	struct eng_worker *worker;
	unsigned n_workers;
	struct eng_stripe *stripe;
	unsigned n_stripes;
	struct eng_rail_stat *rail;
	unsigned n_rails;
	_Atomic uint64_t t_first_post_ns; /* sender: first write posted */
	_Atomic uint64_t t_last_done_ns;  /* last chunk completed */
};

/*
 * Workers, rails, stripes and slot memory for plan: plan->rail[r] gets
 * plan->rail[r].qps stripes of n_slots slots of slot_size bytes, in its
 * worker's memory (a node-local pool when pools is true, else the heap).
 * Transports then give each worker a CQ and each stripe an endpoint.
 */
int eng__job_create(enum eng_role role, const struct topo_plan *plan, unsigned n_slots,
		    uint32_t slot_size, bool pools, struct eng_job **job_out);

/* Frees what eng__job_create made; CQs and endpoints are the transport's. */
void eng__job_destroy(struct eng_job *job);

/* wr_id: the stripe pointer with the operation in its low bits. */
enum { ENG_WR_WRITE = 1, ENG_WR_SEND = 2, ENG_WR_RECV = 3, ENG_WR_MASK = 7 };

uint64_t eng__now_ns(void);

/* Record the job's first error (later ones are dropped) and stop every worker. */
void eng__job_fail(struct eng_job *job, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Start one thread per worker, wait until the job completes or fails, join
 * them. Returns 0 or the job's first error (its sentence recorded with rcp_err).
 * progress (may be NULL) is called about every 100 ms from the calling thread.
 */
int eng__job_run(struct eng_job *job, void (*progress)(const struct eng_job *job, void *ctx),
		 void *ctx);

/* Sender set-up of a stripe after connection: every slot is a credit. */
int eng__stripe_init_sender(struct eng_stripe *s);

/* Receiver set-up of a stripe before connection: one receive per slot. */
int eng__stripe_init_receiver(struct eng_stripe *s);

void eng__stripe_fini(struct eng_stripe *s);

/*
 * The bench pattern of a chunk at offset off: word i is base + i * K, with
 * base a hash of the session token and the offset. Every word of every
 * offset differs, so misplaced, stale or corrupted data fails the check,
 * while filling and checking cost one add per word: under Soft-RoCE the
 * pattern shares the CPUs with the emulated wire, so it must be cheap.
 */
#define ENG_PATTERN_STEP 0x9e3779b97f4a7c15ull

static inline uint64_t eng__pattern_base(uint64_t token, uint64_t off)
{
	uint64_t x = token ^ off;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	return x;
}

void eng__stream_place(const struct eng_source *src, struct eng_chunk_hdr *hdr);
/* A bench job of bytes in chunks of chunk: the pattern's source and checking sink. */
void eng__bench_attach(struct eng_job *job, uint64_t bytes, uint32_t chunk);
int eng__bench_fill(void *ctx, struct eng_chunk_hdr *hdr, void *buf);
int eng__bench_check(void *ctx, const struct eng_chunk_hdr *hdr, const void *data);

#endif
