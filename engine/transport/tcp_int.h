/*
 * tcp_int.h - private to engine/transport/ and the engine's tests: the TCP
 * transport's frames, endpoints and CQs (tcp.c), shared with its set-up
 * (tcp_cm.c). Sessions reach it through eng__transport_tcp() (transport.h).
 *
 * The wire: after the set-up exchange (tcp_cm.c), each direction of a
 * stripe's TCP connection is a sequence of frames, each a 16-byte struct
 * tcp_frame, then for a chunk its 64-byte header and len payload bytes.
 * Fields are in the host's byte order, as the chunk header is on RDMA:
 * both ends of a session are little-endian Linux hosts in practice, and a
 * peer of the other order fails the set-up's magic check.
 */
#ifndef RAILCP_ENGINE_TCP_INT_H
#define RAILCP_ENGINE_TCP_INT_H

#if !defined(ENG_LAYER_TRANSPORT) && !defined(RAILCP_TESTS)
#error "engine/transport/tcp_int.h is private to engine/transport/ and the tests"
#endif

#include "engine/transport/transport.h"

#include <pthread.h>
#include <stdatomic.h>

#define TCP_FRAME_MAGIC 0x72746631u /* "rtf1" */
/* A send that finds the peer taking nothing for this long fails its endpoint. */
#define TCP_SEND_STALL_S 30

enum tcp_frame_type {
	TCP_FRAME_CHUNK = 1,  /* a chunk: header and payload into slot imm */
	TCP_FRAME_CREDIT = 2, /* a credit: slot imm is the sender's again */
};

struct tcp_frame {
	uint32_t magic;
	uint32_t type;
	uint32_t imm; /* the slot */
	uint32_t len; /* payload bytes after the chunk header (0 for a credit) */
};
_Static_assert(sizeof(struct tcp_frame) == 16, "a frame header is 16 bytes");

struct tcp_cq;

/* ---- tcp_seal.c: chunks under AES-256-GCM when the session has a key ---- */

#define TCP_SEAL_KEY_LEN 32
#define TCP_SEAL_TAG_LEN 16

struct tcp_seal;

/* A seal for the sending or the receiving end of the server's stripe number stripe. */
int eng__tcp_seal_create(const uint8_t key[TCP_SEAL_KEY_LEN], uint32_t stripe, bool sender,
			 struct tcp_seal **seal_out);
void eng__tcp_seal_destroy(struct tcp_seal *seal);

/* The sender: chunk frame f's header h encrypted into h_out, data (f->len bytes) in place. */
int eng__tcp_seal_chunk(struct tcp_seal *seal, const struct tcp_frame *f,
			const struct eng_chunk_hdr *h, struct eng_chunk_hdr *h_out, uint8_t *data,
			uint8_t tag_out[TCP_SEAL_TAG_LEN]);

/*
 * The receiver: the next chunk, frame f; then its header and its payload
 * decrypted in place, in that order; then whether the tag holds. Nothing
 * decrypted may be used, beyond bounds checks, before the tag held.
 */
int eng__tcp_open_begin(struct tcp_seal *seal, const struct tcp_frame *f);
int eng__tcp_open_update(struct tcp_seal *seal, void *buf, uint32_t len);
bool eng__tcp_open_end(struct tcp_seal *seal, const uint8_t tag[TCP_SEAL_TAG_LEN]);

/* ---- tcp_zc.c: zero-copy sends (MSG_ZEROCOPY) ---- */

/* RAILCP_TCP_ZEROCOPY: auto (unset), on or off. */
#define TCP_ZC_ENV "RAILCP_TCP_ZEROCOPY"
/* Zero-copy sends in flight at most (ids not yet notified); more go plain. */
#define TCP_ZC_RING 4096
/* auto: zero-copy sends the kernel refuses (ENOBUFS) in a row before an end sends plain */
#define TCP_ZC_NOBUFS_MAX 8
/* Closing with zero-copy sends pending: their notifications awaited this long, then a reset. */
#define TCP_ZC_CLOSE_WAIT_MS 100

enum tcp_zc_mode {
	TCP_ZC_AUTO, /* zero-copy where it measured faster (tcp_zc.c: zc_worth) */
	TCP_ZC_ON,   /* always, even where the kernel says it copied */
	TCP_ZC_OFF,
};

/* What a chunk's write sends beside its payload, kept until its slot's credit is back. */
struct tcp_chunk_out {
	struct tcp_frame f;
	struct eng_chunk_hdr hc; /* the header (sealed: encrypted) */
	uint8_t tag[TCP_SEAL_TAG_LEN];
};

/* A signaled completion waiting until every zero-copy send id below need is notified. */
struct tcp_zc_wait {
	struct eng_wc wc;
	uint32_t need;
};

/*
 * A sending end's zero-copy state. The owner (its worker) sends and counts
 * next; the reader reads the kernel's notifications; lock guards the rest.
 */
struct tcp_zc {
	bool on;		    /* the owner's: sends carry MSG_ZEROCOPY */
	bool keep;		    /* on stays on when the kernel says it copied (on) */
	bool used;		    /* the owner's: completions wait for notifications */
	uint32_t next;		    /* the owner's: the kernel's id of the next zero-copy send */
	struct tcp_chunk_out *outs; /* by slot, mmap'd; NULL: zero-copy never on */
	size_t outs_len;
	unsigned nobufs;	/* the owner's: zero-copy sends refused (ENOBUFS) in a row */
	_Atomic bool copied;	/* the kernel said it copied a zero-copy send */
	_Atomic uint64_t notes; /* zero-copy sends notified (tests count them) */
	pthread_mutex_t lock;	/* guards what follows */
	uint32_t done;		/* every id below it was notified */
	uint64_t seen[TCP_ZC_RING / 64]; /* ids from done on notified, by id mod ring */
	struct tcp_zc_wait *wait;	 /* signaled completions in order, waiting */
	size_t n_wait, cap_wait;
};

/* One end of a stripe: a connected socket, its slots, and the thread that reads it. */
struct tcp_ep {
	struct eng_ep ep;
	struct tcp_cq *cq;
	struct eng_link *link; /* its slots (a receiver's are what the peer writes) */
	int fd;
	bool receiver;
	/* receives posted and not yet used by an arrival (the reader takes them) */
	_Atomic unsigned recvs;
	_Atomic uint64_t recv_wr_id;
	/* receiver: whether the peer holds a credit for each slot (the reader spends them) */
	_Atomic bool *credited;
	bool down;	   /* the owner's: posts fail from now on (a send failed, shutdown) */
	_Atomic bool lost; /* the reader stopped: why says so */
	bool told;	   /* check_events passed it on (the session's thread) */
	bool reader_started;
	struct tcp_seal *seal; /* NULL: chunks in clear (a keyless session) */
	struct tcp_zc zc;
	pthread_t reader;
	char why[192];
	char desc[128];
};

/*
 * The frame checks a receiving end makes before anything of a frame lands:
 * NULL when f may be read on, else the sentence that ends the link. For a
 * chunk, the slot's credit is spent here. Thread: the ep's reader.
 */
const char *eng__tcp_frame_check(struct tcp_ep *e, const struct tcp_frame *f);

/* The header that came with chunk frame f: NULL when it may land in its slot, else why not. */
const char *eng__tcp_hdr_check(const struct tcp_ep *e, const struct tcp_frame *f,
			       const struct eng_chunk_hdr *h);

int eng__tcp_cq_create(struct eng_cq **cq_out);
void eng__tcp_cq_destroy(struct eng_cq *cq);

/*
 * An endpoint on the connected socket fd (taken over) for link l, on cq.
 * Its reader starts with eng__tcp_ep_start, once its receives are posted.
 */
int eng__tcp_ep_create(struct eng_cq *cq, int fd, struct eng_link *l, bool receiver,
		       struct eng_ep **ep_out);
int eng__tcp_ep_start(struct eng_ep *ep);

/* Seal ep's chunks with key as the server's stripe number stripe (before it starts). */
int eng__tcp_ep_seal(struct eng_ep *ep, const uint8_t key[TCP_SEAL_KEY_LEN], uint32_t stripe);

/* Push wc on cq and wake its owner if it sleeps: 0 or -ENOMEM. Thread-safe. */
int eng__tcp_cq_push(struct tcp_cq *c, const struct eng_wc *wc);

/* RAILCP_TCP_ZEROCOPY's mode: 0, or -EINVAL with a sentence when it is none of the three. */
int eng__tcp_zc_mode(enum tcp_zc_mode *mode_out);

/*
 * A sending end's sends zero-copy under mode (before it starts): 0, or
 * -ENOMEM. A socket that refuses SO_ZEROCOPY sends plain, silently.
 */
int eng__tcp_ep_zerocopy(struct eng_ep *ep, enum tcp_zc_mode mode);

/* The owner: the flags of its next sendmsg; after one, whether it went zero-copy (k > 0). */
int eng__tcp_zc_flags(struct tcp_ep *e);
void eng__tcp_zc_sent(struct tcp_ep *e, int flags);
/* The owner: a zero-copy send refused (ENOBUFS); under auto, too many in a row end zero-copy. */
void eng__tcp_zc_nobufs(struct tcp_ep *e);

/* The owner: signaled completion wc, pushed once every zero-copy send so far is notified. */
int eng__tcp_zc_complete(struct tcp_ep *e, const struct eng_wc *wc);

/*
 * The reader of a zero-copy end: waits until a frame can be read, taking
 * the kernel's notifications meanwhile. NULL, or why the link ends.
 */
const char *eng__tcp_zc_wait(struct tcp_ep *e);

/* Before close: with sends still unnotified after a short wait, close will reset. */
void eng__tcp_zc_close(struct tcp_ep *e);
void eng__tcp_zc_fini(struct tcp_zc *z);

/* Stops the reader, closes the socket. Accepts NULL. */
void eng__tcp_ep_destroy(struct eng_ep *ep);

#endif
