/*
 * transport.h - engine/transport/, the layer that moves bytes: the one
 * header the data path and the session layers include.
 *
 * A transport is two complete const tables:
 * - struct eng_tr_ops, the data path: post chained writes-with-immediate,
 *   zero-byte sends, receives; poll, arm and wait on a completion queue.
 *   Workers call it on their own CQs and endpoints only.
 * - struct eng_transport, the set-up: the address of a rail (IPv4 or
 *   IPv6), and
 *   connection management (a job's connections, connect, listen, accept,
 *   events such as a peer's disconnect). Sessions call it on their thread.
 * Two transports fill both: verbs (RC QPs connected with rdma_cm, real
 *   devices) and loopback (in-process, with simulated link speeds and
 *   injectable errors; the engine's unit tests run the data path and whole
 *   sessions over it).
 *
 * The transport knows nothing of jobs or files. It sees a worker as slot
 * memory to register and CQs to own (struct eng_tr_worker) and a stripe as
 * a link: one endpoint between the slots of both ends (struct eng_link).
 * The data path embeds both in its own structs.
 *
 * A stripe's slots: n_slots payload slots of slot_size bytes (page aligned,
 * so O_DIRECT can fill them) and n_slots 64-byte chunk headers. The sender
 * writes a chunk's header, then its payload with an immediate naming the
 * slot; the receiver checks the header before it uses the payload.
 *
 * Threading: see each table.
 */
#ifndef RAILCP_ENGINE_TRANSPORT_H
#define RAILCP_ENGINE_TRANSPORT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "topology/topology.h"

/* ---- the chunk header, written by the sender next to each chunk ---- */

#define ENG_HDR_MAGIC 0x72636831u /* "rch1" */

struct eng_chunk_hdr {
	uint32_t magic;
	uint32_t slot;	 /* must equal the immediate that announced it */
	uint64_t token;	 /* the session's token */
	uint64_t seq;	 /* chunk number within the job */
	uint64_t file;	 /* file number within the job (0 for bench) */
	uint64_t offset; /* byte offset within the file or stream */
	uint32_t len;	 /* payload bytes, at most the slot size */
	uint32_t flags;	 /* 0 */
	uint64_t hash;	 /* io_chunk_hash of the payload, or 0 when the job has none */
	uint8_t pad[8];
};
_Static_assert(sizeof(struct eng_chunk_hdr) == 64, "chunk header is one cache line");

/* Writes posted under one doorbell: a transport takes at most this many per call. */
#define ENG_WRITE_BATCH 16
/* Completions taken from a CQ per poll. */
#define ENG_POLL_BATCH 32
/* CQs of one worker: one per device its rails are on. */
#define ENG_MAX_CQS 8

/* ---- the data path's operations ---- */

enum eng_wc_op {
	ENG_WC_WRITE,	 /* a signaled write of ours completed */
	ENG_WC_SEND,	 /* a signaled credit send of ours completed */
	ENG_WC_RECV_IMM, /* the peer's write-with-imm or send-with-imm arrived */
};

struct eng_wc {
	uint64_t wr_id;
	int status; /* 0, or the transport's error code */
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

/* Called only by the worker that owns the CQ or endpoint. */
struct eng_tr_ops {
	const char *name;
	/* Post n <= ENG_WRITE_BATCH writes as one chain (one doorbell). */
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
	/*
	 * Give up on the endpoint: move it to the error state, so its queued work
	 * flushes and the peer's next post to it fails instead of waiting.
	 */
	void (*shutdown)(struct eng_ep *ep);
};

struct eng_cq {
	const struct eng_tr_ops *ops;
	void *tr;
};

struct eng_ep {
	const struct eng_tr_ops *ops;
	void *tr;
};

/* ---- what the transport sees of workers and stripes ---- */

/* A worker: its slot memory (registered once per device) and the CQs it owns. */
struct eng_tr_worker {
	unsigned index;
	uint8_t *mem;
	size_t mem_len;
	unsigned cq_depth; /* completions its links may have outstanding */
	struct eng_cq *cq[ENG_MAX_CQS];
	unsigned n_cqs; /* the transport's: made on first use per device */
};

/* A stripe: one endpoint joining its slots to the peer's. */
struct eng_link {
	unsigned index; /* within the job: the peer names it so */
	struct eng_tr_worker *worker;
	const char *rail_dev;	   /* the device the plan chose; the endpoint must land there */
	uint8_t *data;		   /* n_slots x slot_size payload slots */
	struct eng_chunk_hdr *hdr; /* n_slots headers */
	unsigned n_slots;
	uint32_t slot_size;
	unsigned send_depth; /* work requests the data path may have posted at once */
	/*
	 * The connection request for this link carries it (the client's link:
	 * the token of the server's link it asks for). One per link, so a
	 * request seen on the wire admits no other link.
	 */
	uint64_t token;
	/* Set by the transport when the link is made: */
	struct eng_ep *ep;
	uint32_t lkey;
	struct eng_remote peer_data, peer_hdr; /* a sender's: the receiver's slots */
	/* the active MTU in bytes of this end's port and of the peer's (0: not known) */
	unsigned mtu, peer_mtu;
};

/* ---- set-up: addresses and connections ---- */

/* A socket address of either family (sa.sa_family says which). */
union eng_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
	struct sockaddr_storage ss;
};

struct eng_rail_addr {
	union eng_sockaddr addr; /* IPv4 or IPv6, port 0 */
	unsigned prefix;	 /* bits of the subnet: up to 32 or 128 */
	char text[INET6_ADDRSTRLEN];
};

/*
 * text, an IPv4 or IPv6 address, with port into *ss and its length into
 * *len; -EINVAL (no sentence) when it is neither.
 */
int eng__addr_parse(const char *text, uint16_t port, struct sockaddr_storage *ss, socklen_t *len);
/* sa's port (0 when it is neither IPv4 nor IPv6). */
uint16_t eng__addr_port(const struct sockaddr *sa);
/* ss's port set to port (IPv4 or IPv6). */
void eng__addr_set_port(struct sockaddr_storage *ss, uint16_t port);
/* The length of sa's family's sockaddr (0 when it is neither IPv4 nor IPv6). */
socklen_t eng__addr_len(const struct sockaddr *sa);
/*
 * Whether a and b are of one family and share their first prefix bits (an
 * IPv4 and an IPv6 address never do).
 */
bool eng__addr_same_subnet(const union eng_sockaddr *a, const union eng_sockaddr *b,
			   unsigned prefix);
/* The address's text (no port) into buf, "?" when it has none; returns buf. */
const char *eng__addr_ntop(const struct sockaddr *sa, char *buf, size_t len);

/* check_events: link (its eng_link index) cannot carry anything any more, for reason why. */
typedef void (*eng_link_lost_fn)(void *ctx, unsigned link, const char *why);

/* What a job asks of the transport when its connections are made. */
struct eng_conn_cfg {
	bool receiver; /* this side's slots are written by the peer */
	struct eng_link *const *link;
	unsigned n_links;
	struct eng_tr_worker *const *worker;
	unsigned n_workers;
	/*
	 * Once a link's endpoint exists and before anything can arrive on it:
	 * post its receives. Called on the thread that makes the connection.
	 */
	int (*link_ready)(void *ctx, struct eng_link *l);
	void *ctx;
	/*
	 * Server, during accept_all: a link that failed before it connected (its
	 * request could not be taken, or rdma_cm gave up on it) is passed here,
	 * link index and a sentence, its endpoint freed, and set-up goes on
	 * without it. NULL: such a failure fails accept_all (--no-failover).
	 */
	eng_link_lost_fn link_failed;
	void *link_failed_ctx;
	/*
	 * Server: how long a link whose request was answered may take to be
	 * established before it counts as failed (0: the accept's own timeout).
	 */
	int connect_timeout_ms;
	/* The QPs' local ACK timeout and retries (0: rdma_cm's and 7). */
	struct eng_qp_knobs qp;
	/*
	 * A key of 32 bytes that only this session knows, for a transport whose
	 * wire needs one (TCP seals each chunk with it); NULL: none.
	 */
	const uint8_t *chunk_key;
};

/* A job's connections: every id, endpoint, CQ and registration the transport made. */
struct eng_conn;

/*
 * Called on the session's thread, before the job's workers start and after
 * they stopped; a transport's own state is thread-safe where sessions of one
 * process share it (the loopback fabric).
 */
struct eng_transport {
	const char *name;
	/* Slot memory must be node-local pools the device can register (else the heap will do). */
	bool pinned;
	/* The address of each rail of plan (out[r] for plan->rail[r]). */
	int (*rail_addrs)(const struct topo_plan *plan, struct eng_rail_addr *out);
	/* Connections for cfg's links (cfg and what it points to must outlive them). */
	int (*conn_create)(const struct eng_conn_cfg *cfg, struct eng_conn **conn_out);
	/* Disconnects and frees everything, the CQs of cfg's workers too. Accepts NULL. */
	void (*conn_destroy)(struct eng_conn *conn);
	/*
	 * Client: connect l from src to dst, where the server's link peer_link
	 * waits, within timeout_ms for the whole of it (address, route, the
	 * server's answer). On failure nothing is left of l's endpoint.
	 */
	int (*connect)(struct eng_conn *conn, struct eng_link *l, const union eng_sockaddr *src,
		       const union eng_sockaddr *dst, uint32_t peer_link, int timeout_ms);
	/* Server: listen on addr (port 0: any); the port is written to *port_out. */
	int (*listen)(struct eng_conn *conn, const union eng_sockaddr *addr, uint16_t *port_out);
	/*
	 * Server: accept one connection per link (or give it up: cfg's
	 * link_failed, abandon), then stop listening. Returns
	 * -EPIPE, without a sentence, when ctl_fd (the control connection) turns
	 * readable meanwhile: the caller reads why.
	 */
	int (*accept_all)(struct eng_conn *conn, int ctl_fd, int timeout_ms);
	/*
	 * Server: the client gave up on link (it could not connect it): accept_all
	 * no longer waits for it, and a request for it is refused from now on.
	 * Returns true when the link was connected already (it stays; the caller
	 * treats the word as a loss), false when what was made for it is freed.
	 */
	bool (*abandon)(struct eng_conn *conn, unsigned link);
	/*
	 * Consume pending events. A link that lost its peer, its port or its
	 * device (a disconnect, a port or device event, its QP failing) is passed
	 * to lost (link index and a sentence), or without lost, fails the call:
	 * -ECONNRESET with a sentence.
	 */
	int (*check_events)(struct eng_conn *conn, eng_link_lost_fn lost, void *ctx);
};

/* RC queue pairs on real devices, connected with rdma_cm. */
const struct eng_transport *eng__transport_verbs(void);

/* TCP connections between IP interfaces (rails named as the kernel names them). */
const struct eng_transport *eng__transport_tcp(void);

/* The transport of a kind (engine.h's enum eng_transport_kind, as an int). */
const struct eng_transport *eng__transport_of(int kind);

/* What users call tr: "tcp" for TCP, "rdma" for the others (loopback stands in for verbs). */
const char *eng__transport_word(const struct eng_transport *tr);

/*
 * In-process: rails named "loop<N>" (RoCE) or "loopib<N>" (InfiniBand)
 * have the address 198.18.<N>.1/24; a connection joins two jobs of this
 * process. For unit tests.
 */
const struct eng_transport *eng__transport_loopback(void);

#endif
