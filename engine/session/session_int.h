/*
 * session_int.h - private to engine/session/: one session object for both
 * ends of a session, and what the client and server ends share.
 *
 * A session is a control connection (TCP, JSON frames: proto.h) and one job
 * over RDMA. Its steps are the same at both ends, parameterised by side
 * (client or server) and role (sender or receiver of the data):
 *   eng__session_init     the object, on a connected control socket
 *   eng__session_auth     mutual proof of the shared key (auth.c): the
 *                         client's half or the server's
 *   (the ends' own steps: hello, file list, welcome - client.c, server.c,
 *                         server_setup.c)
 *   eng__session_job      the job (datapath), its source or sink (files or
 *                         bench) and its connections (transport)
 *   eng__session_run      the coordinator runs the job while the session
 *                         watches the peer: its control connection, the
 *                         transport's events, a cancel flag
 *   eng__session_end      the sender's "done" and the receiver's "result"
 *   eng__session_fini     teardown in reverse order
 *
 * Threading: a session belongs to one thread (the caller's on the client, a
 * thread per session on the server) plus its job's workers.
 */
#ifndef RAILCP_ENGINE_SESSION_INT_H
#define RAILCP_ENGINE_SESSION_INT_H

#if !defined(ENG_LAYER_SESSION) && !defined(RAILCP_TESTS)
#error "engine/session/session_int.h is private to engine/session/"
#endif

#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "engine/datapath/datapath.h"
#include "engine/session/auth.h"
#include "engine/session/proto.h"

/* Stripes a session may ask for. */
#define ENG_MAX_STRIPES 256
/* Slots per stripe: at most this many, at least 2 within the server's budget. */
#define ENG_MAX_SLOTS 64
/* Sources a pull may name. */
#define ENG_MAX_PULL_SOURCES 4096
/* The largest bench a server accepts. */
#define ENG_MAX_BENCH_BYTES (1ull << 50)

/*
 * Before a connection has proven the key it costs the server a thread and
 * a descriptor, so strangers get little: at most ENG_MAX_PENDING such
 * connections in all, at most ENG_MAX_PENDING_PER_ADDR from one IPv4
 * address or IPv6 /64 (eng__addr_same_peer), and ENG_PREAUTH_MS (or --timeout, if shorter) from the
 * accept for the hello and the proof together, however large --timeout is.
 */
#define ENG_MAX_PENDING 64
#define ENG_MAX_PENDING_PER_ADDR 8
#define ENG_PREAUTH_MS 10000

/* A connection's time for its hello and proof, and the most a parked one waits. */
static inline int eng__preauth_ms(int timeout_ms)
{
	return timeout_ms < ENG_PREAUTH_MS ? timeout_ms : ENG_PREAUTH_MS;
}

/*
 * A connection past its address's share waits its turn, accepted but
 * parked (a descriptor, no thread, nothing read), and is served in arrival
 * order when a place of its address frees: an honest burst authenticates
 * within milliseconds per connection. At most ENG_MAX_PARKED_PER_ADDR wait
 * per address and ENG_MAX_PARKED in all, each at most ENG_PREAUTH_MS (or
 * --timeout, if shorter); past that a connection is refused with a
 * sentence saying how long the queue was, and the client tries again.
 */
#define ENG_MAX_PARKED 256
/*
 * Proven sessions waiting their turn at a full server (queue.c), at most:
 * each holds a thread, a descriptor and its hello, never slot memory.
 */
#define ENG_MAX_QUEUED 256
/* The longest a waiting session is kept, whatever --timeout its client gave. */
#define ENG_MAX_QUEUE_WAIT_MS (60 * 60 * 1000)
/* A client the server calls busy asks again after this, doubling up to the most. */
#define ENG_RETRY_FIRST_MS 50
#define ENG_RETRY_MAX_MS 1000
#define ENG_MAX_PARKED_PER_ADDR 64
/* accept4 out of descriptors or memory: wait this long before trying again. */
#define ENG_ACCEPT_BACKOFF_MS 100
/*
 * --partial: how often a receiver writes the records of the files it is
 * writing (each that gained chunks since its last: one small write and a
 * sync). A receiver killed outright keeps its logs, up to the last chunk;
 * a record is what outlives a power loss, at most this old.
 */
#define ENG_CHECKPOINT_MS 1000
/* After a failure on the fabric, how long the peer's own reason is waited for. */
#define ENG_PEER_REASON_MS 3000

enum eng_side { ENG_CLIENT, ENG_SERVER };

/* --delete on a session (delete.c): what the receiver does once its files are in. */
struct eng_delete {
	bool on;
	bool root_too;			/* a source was contents: the root is covered too */
	const struct io_filter *filter; /* excluded names are kept; NULL: none */
	struct io_filter *own;		/* a push's server: the client's, received */
	void (*said)(const char *path, void *ctx); /* the client's (eng_copy_opts.deleted) */
	void *ctx;
	uint64_t count; /* removed (dry: would be) */
};

struct eng_session {
	enum eng_side side;
	enum eng_role role; /* this side's, in the job */
	const struct eng_transport *tr;
	const char *peer_name;	/* "the server" or "the client", for sentences */
	struct eng_ctl ctl;	/* the control connection (fd -1 when none) */
	int timeout_ms;		/* each control and connection step */
	int connect_timeout_ms; /* each stripe's connection (its rail left out after it) */
	struct eng_qp_knobs qp; /* this side's QPs' ACK timeout and retries */
	int stall_ms;		/* the data phase without a completion (0: the job's default) */
	int rail_stall_ms;	/* a stalled rail (0: ENG_RAIL_STALL_MS, < 0: never) */
	/* authentication */
	uint64_t auth_end_ns;			   /* server: hello and proof are due by then */
	const struct eng_auth_key *key;		   /* NULL: no key configured */
	uint8_t challenge[ENG_AUTH_CHALLENGE_LEN]; /* the client's, sent in its hello */
	uint8_t tokens[ENG_SEAL_KEY_LEN];    /* what the job's and links' tokens derive from */
	uint8_t chunk_key[ENG_SEAL_KEY_LEN]; /* keyed: what seals chunks on TCP (conn_cfg's) */
	/* the job */
	uint32_t chunk;
	uint64_t bench_bytes;			   /* bench; 0 for copies */
	struct eng_files *files;		   /* copies; NULL for bench */
	struct eng_rail_addr addr[TOPO_MAX_RAILS]; /* this side's rails */
	struct eng_job *job;
	struct eng_conn_cfg conn_cfg;
	struct eng_conn *conn;
	json_t *done;	    /* the receiver's: the sender's "done" */
	uint64_t all_in_ns; /* the receiver's: when every chunk had arrived (0: not yet) */
	bool no_failover;   /* a failed rail fails the job (else its chunks go to the others) */
	/*
	 * Failover: each of the job's stripes by the server's number (what a
	 * "lost" frame names), and whether the peer knows it went down.
	 */
	unsigned peer_link[ENG_MAX_STRIPES];
	bool link_told[ENG_MAX_STRIPES];
	/* --partial at the receiver: the records of the files being written, every so often */
	bool partial;
	/* kept chunks (--partial, -c): how many were compared; the peer's hashing (kept.c) */
	uint64_t compared, peer_hashed_bytes, peer_hash_ns;
	uint64_t peer_files_direct; /* the peer's done or result said (0: an older peer) */
	bool checksum; /* -c: the kept chunks are the receiver's old files' (io/checksum.c) */
	uint64_t checkpoint_ns; /* the last */
	/* the peer's own error, read while the job was already failing on the fabric */
	int peer_err;
	char peer_why[512];
	bool err_sent; /* this side's error frame went (eng__session_send_error) */
	/* the client goes on over tcp if every rail fails (fallback.c); no stripe came up */
	bool fallback, setup_down;
	int setup_err; /* a "lost" frame at set-up could not be sent (setup_failed) */
	/* while the job runs */
	const _Atomic bool *cancel; /* when set, the job fails with cancel_err */
	int cancel_err;
	const char *cancel_why;
	void (*progress)(struct eng_session *s, void *ctx);
	void *ctx;
	struct rcp_steps steps; /* this side's time by step, from eng__session_init */
	struct eng_delete del;	/* --delete */
};

/* A session of this side on the connected control socket fd (taken over; -1: none yet). */
void eng__session_init(struct eng_session *s, enum eng_side side, const struct eng_transport *tr,
		       int fd, int timeout_ms);

/*
 * This side's half of the mutual authentication (auth.c). The client sends
 * s->challenge in its hello (when s->key is set) and calls this after it;
 * the server calls it with the client's hello. Nothing but the proof is
 * exchanged before it succeeds.
 */
int eng__session_auth(struct eng_session *s, const json_t *hello);

/*
 * Each stripe's connect timeout: given_ms (0: ENG_CONNECT_TIMEOUT_MS_DEFAULT),
 * never more than the step limit timeout_ms, which bounds every connection step.
 */
static inline int eng__connect_timeout(int given_ms, int timeout_ms)
{
	int ms = given_ms > 0 ? given_ms : ENG_CONNECT_TIMEOUT_MS_DEFAULT;

	return timeout_ms > 0 && ms > timeout_ms ? timeout_ms : ms;
}

/* This side's rail addresses for plan, into s->addr. */
int eng__session_rails(struct eng_session *s, const struct topo_plan *plan);

/*
 * The job for plan (its QPs per rail are this session's stripes), n_slots
 * per stripe of s->chunk bytes, its tokens from s->tokens; its source and
 * sink (s->files, else the bench pattern of s->bench_bytes) and its
 * connections.
 */
int eng__session_job(struct eng_session *s, const struct topo_plan *plan, unsigned n_slots);

/*
 * The sender of a copy: with update, the receiver's map of what it holds;
 * with partial, then its map of the chunks kept from before; each applied
 * to s->files.
 */
int eng__session_maps_recv(struct eng_session *s, bool update, bool partial);

/*
 * The receiver's side of that: the maps eng__dest_files made, sent (those
 * not NULL); with kept, the sender's confirmation of each kept chunk
 * (kept.c) settled; then eng__files_prepare.
 */
int eng__session_maps_send(struct eng_session *s, const uint8_t *holds, const uint8_t *kept);

/* ---- kept.c: chunks kept from before (--partial), confirmed by the sender ---- */

/*
 * Receiver: after the kept map, a keyed digest of each kept chunk as it is
 * on this side's disk; then the sender's map of those it confirmed, a
 * subset of kept, settled (eng__files_kept_settle).
 */
int eng__kept_send(struct eng_session *s, const uint8_t *kept);

/*
 * Sender: the receiver's digests of the chunks kept (bits) against this
 * side's own read of them; the map of those that match goes back, and only
 * those leave the plan (eng__files_drop).
 */
int eng__kept_confirm(struct eng_session *s, const uint8_t *kept);

/*
 * Set-up: this side could not connect (or accept) stripe i, for why. With
 * failover it is left out (eng__job_link_unconnected) and the peer told at
 * once in a "lost" frame; 0, or the error of that frame. Without failover
 * the caller fails instead.
 */
int eng__session_link_left_out(struct eng_session *s, unsigned i, const char *why);

/*
 * Set-up: the peer's "lost" for stripe n (the peer's word why) while this
 * side still connects: that stripe is left out, or lost if it connected
 * already (abandon); -ECONNRESET with the peer's sentence without failover.
 */
int eng__session_link_heard(struct eng_session *s, uint64_t n, const char *why);

/*
 * After set-up: -ENETUNREACH, with a sentence naming each rail and why,
 * when no stripe connected; else 0.
 */
int eng__session_any_connected(struct eng_session *s);

/* Run the job to its end while watching the peer. */
int eng__session_run(struct eng_session *s);

/*
 * The end-of-job exchange. The sender sends "done" with the chunks and bytes
 * the receiver consumed and its seconds, then holds the receiver's "result"
 * against that. The receiver takes the "done" (from the watch, or here),
 * holds it against what arrived and what the job announced, puts its files
 * in place, then answers with "result".
 */
int eng__session_end(struct eng_session *s);

/* The figures so far, with the files of a copy. Thread-safe. */
void eng__session_report(const struct eng_session *s, struct eng_report *r);

/*
 * Tell the peer this side failed with err, once: a symptom when the job
 * failed on the fabric or err is the peer's own word (-ECONNABORTED).
 */
void eng__session_send_error(struct eng_session *s, int err);

/* Frees everything in reverse order (a receiver's unfinished temporaries are removed). */
void eng__session_fini(struct eng_session *s);

/* ---- seal.c: what a proven key gives a session ---- */

/*
 * After both proofs: the keys that seal ctl's frames from now on (its
 * sequence numbers restart at 0) and the material tokens derive from, all
 * from key, both challenges (cc the client's, cs the server's) and ctl's
 * transcript of the frames before the seal; me is this side's role.
 */
int eng__seal_keys(const struct eng_auth_key *key, enum eng_auth_role me,
		   const uint8_t cc[ENG_AUTH_CHALLENGE_LEN],
		   const uint8_t cs[ENG_AUTH_CHALLENGE_LEN], struct eng_ctl *ctl,
		   uint8_t tokens_out[ENG_SEAL_KEY_LEN]);

/*
 * The key of the kept chunks' digests (kept.c): derived from tokens as
 * HMAC-SHA256(tokens, "railcp-3 kept digests").
 */
int eng__seal_kept_key(const uint8_t tokens[ENG_SEAL_KEY_LEN], uint8_t key_out[ENG_SEAL_KEY_LEN]);

/*
 * The digest of kept chunk k, len bytes at buf, under key (kept.c):
 * Poly1305 of (len as 4 bytes big-endian || bytes) under a one-time key of
 * chunk k's own, HMAC-SHA256(key, "railcp-11 kept chunk" || k as 8 bytes
 * big-endian). Thread-safe.
 */
int eng__seal_kept_digest(const uint8_t key[ENG_SEAL_KEY_LEN], uint64_t k, const void *buf,
			  uint32_t len, uint8_t out[16]);

/* The key that seals the job's chunks on a transport that needs one (TCP), from the tokens. */
int eng__seal_chunk_key(const uint8_t tokens[ENG_SEAL_KEY_LEN], uint8_t key_out[ENG_SEAL_KEY_LEN]);

/* Token number index of kind label (ENG_TOKEN_*) from tokens: 64 bits of an HMAC. */
uint64_t eng__seal_token(const uint8_t tokens[ENG_SEAL_KEY_LEN], const char *label, uint32_t index);

#define ENG_TOKEN_JOB "railcp-2 job"
#define ENG_TOKEN_LINK "railcp-2 link"

/* ---- the two ends, over a transport of the caller's choice (tests: loopback) ---- */

/* What bench and copies share; a copy's own options are in copy. */
struct eng_fall; /* fallback.h */

struct eng_client_opts {
	const char *host;
	uint16_t port;
	uint32_t chunk;
	const struct topo_plan *plan;
	int timeout_ms;
	const char *key_file;
	void (*progress)(const struct eng_report *so_far, void *ctx);
	void *ctx;
	const struct eng_transport *tr;
	const struct topo_plan *plan_tcp; /* auto chose rdma: asked again over tcp; NULL: no */
	uint64_t bench_bytes;		  /* bench */
	const struct eng_copy_opts *copy; /* copies; NULL for bench */
	struct eng_fall *fall; /* with plan_tcp: what a session whose every rail failed left */
	bool no_failover;
	int stall_ms;		/* 0: the job's default */
	int rail_stall_ms;	/* 0: ENG_RAIL_STALL_MS, < 0: never */
	int connect_timeout_ms; /* 0: ENG_CONNECT_TIMEOUT_MS_DEFAULT */
	struct eng_qp_knobs qp;
};

/* eng_bench_run and eng_copy_run over o->tr (agree.c: then over tcp, as o->plan_tcp says). */
int eng__client_run(const struct eng_client_opts *o, struct eng_report *report_out);

/* One transport's try, asked again while the server is busy (client.c). */
int eng__client_ask(const struct eng_client_opts *o, struct eng_report *report_out);

/* eng_serve over tr; port_any: listen on a port of the kernel's choice (o->ready names it). */
int eng__serve(const struct eng_serve_opts *o, const struct eng_transport *tr, bool port_any);

/*
 * The server's key (o->key, else the key file or RAILCP_KEY) into *key with
 * *keyed, and the address to listen on into *addr (port 0) and *len:
 * --listen (IPv4 or IPv6), or 127.0.0.1 without a key (where only loopback
 * is allowed); with a key and no --listen, family AF_UNSPEC: every address
 * of both families. Refusals carry a sentence.
 */
int eng__serve_key(const struct eng_serve_opts *o, struct eng_auth_key *key, bool *keyed,
		   struct sockaddr_storage *addr, socklen_t *len);

/* ---- ctladdr.c: the control connection's addresses, IPv4 or IPv6 ---- */

/* eng__addr_parse, eng__addr_port and eng__addr_set_port are transport.h's (sockaddr.c). */

/* sa's address as 16 bytes, an IPv4 one mapped (::ffff:a.b.c.d): one key per peer. */
void eng__addr_key(const struct sockaddr *sa, struct in6_addr *out);

/*
 * Whether keys a and b count as one peer for the limits on strangers: the
 * same IPv4 address, or IPv6 addresses of the same /64 (one host commonly
 * holds a whole /64, and could otherwise take every place by rotating its
 * source address).
 */
bool eng__addr_same_peer(const struct in6_addr *a, const struct in6_addr *b);

/* A key as text: a mapped IPv4 address as IPv4 (buf, or "?"). */
const char *eng__addr_key_text(const struct in6_addr *a, char *buf, size_t len);

/* sa's address as text, an IPv4-mapped one as IPv4 (buf, or "?"). */
const char *eng__addr_text(const struct sockaddr *sa, char *buf, size_t len);

/* Whether sa is a loopback address: 127.0.0.0/8, ::1, or 127/8 mapped into IPv6. */
bool eng__addr_loopback(const struct sockaddr *sa);

/* ---- the server: listener.c accepts, server.c runs each session ---- */

/*
 * identity.c: 0 when the server the client's hello names ("server": host
 * and port) is this one, listening on own_port with names (serve --name,
 * NULL-terminated or NULL) and accepting on fd; else -EACCES with a
 * sentence, or -EPROTO when the hello names none. May wait for DNS.
 */
int eng__identity_check(const char *const *names, uint16_t own_port, int fd, const json_t *hello);

/* The host and port a hello names; -EPROTO with a sentence when it names none. */
int eng__identity_dialed(const json_t *hello, char host_out[256], uint16_t *port_out);

/*
 * A --name, HOST or HOST:PORT (default_port when none), into its parts;
 * -EINVAL with a sentence when it is neither.
 */
int eng__identity_parse(const char *name, uint16_t default_port, char host_out[256],
			uint16_t *port_out);

struct eng_server {
	const struct eng_serve_opts *o;
	const struct eng_transport *tr;
	const struct eng_transport *tr_tcp; /* o->plan_tcp's: tcp sessions too; NULL: none */
	struct eng_auth_key key;
	bool keyed;
	struct eng_rail_addr addr[TOPO_MAX_RAILS];     /* the plan's rails */
	struct eng_rail_addr addr_tcp[TOPO_MAX_RAILS]; /* o->plan_tcp's rails */
	struct io_root *root; /* --root, NULL when the server runs bench only */
	int lfd;
	uint16_t port;		 /* the one it listens on */
	_Atomic unsigned active; /* session threads, authenticated or not */
	/*
	 * Of those, the ones not yet authenticated: a slot each, holding the
	 * peer's address (eng__addr_key; no TCP peer is ::), :: when free,
	 * with the socket, when it was taken and a generation. Only the
	 * listener fills a slot, or takes a full table's oldest for a newcomer
	 * (its socket shut down: that session then ends, and its generation
	 * no longer matches); the session empties its own if still its own
	 * (eng__server_pending_release), before it closes the socket. Under
	 * pending_lock.
	 */
	pthread_mutex_t pending_lock;
	struct in6_addr pending[ENG_MAX_PENDING];
	int pending_fd[ENG_MAX_PENDING];
	uint64_t pending_ns[ENG_MAX_PENDING];
	uint32_t pending_gen[ENG_MAX_PENDING];
	/*
	 * Connections waiting for a place of their address, oldest first (a
	 * ring of park_n from park_head): the listener's alone. A session
	 * that gives up its place writes wake_fd (an eventfd) so the listener
	 * serves the next.
	 */
	struct eng_parked {
		int fd;
		struct in6_addr addr;
		uint64_t since_ns;
	} park[ENG_MAX_PARKED];
	unsigned park_head, park_n;
	_Atomic unsigned parked; /* park_n, for the sessions' log lines */
	int wake_fd;
	/*
	 * Proven sessions waiting for a place, oldest first (queue.c): a list
	 * of waiters on their own threads' stacks, under queue_lock.
	 */
	pthread_mutex_t queue_lock;
	pthread_cond_t queue_cond; /* on CLOCK_MONOTONIC */
	struct eng_waiter *queue_head;
	unsigned queue_n;
	uint64_t queue_gen;	   /* wake-ups so far */
	_Atomic unsigned sessions; /* authenticated: what --max-sessions limits */
	_Atomic uint64_t mem_held; /* slot memory the sessions reserved: what --max-memory limits */
	_Atomic unsigned served;   /* authenticated sessions that ended (once: stop at the first) */
	_Atomic int served_err;	   /* the first of those's status (once: eng__serve returns it) */
	/* serving once: when a session whose rails all failed ended, its client due back */
	_Atomic uint64_t again_ns;
	_Atomic bool stopping;
	_Atomic unsigned next_id;
};

/*
 * The thread of one session on the control socket fd from the address
 * who (counted in srv->active and holding srv->pending[slot] of generation
 * gen, both of which the caller gives up with fd to it): hello,
 * authentication, the job, one log line.
 */
int eng__server_session_start(struct eng_server *srv, int fd, const char *who, unsigned slot,
			      uint32_t gen);

/* queue.c: one proven session waiting its turn. */
struct eng_waiter {
	struct eng_waiter *next;
	int fd;	     /* its control connection */
	int wait_ms; /* at most this long */
	uint64_t end_ns;
};

/*
 * Admit a proven session: try_admit(arg) takes its places (0), says the
 * server is full (-EBUSY) or refuses it (another error). When full and
 * the client gave its --timeout (client_timeout_ms, 0: not given), the
 * session waits its turn in the server's queue, telling the client its
 * place on ctl, and is admitted in arrival order or refused with a
 * sentence (id and peer: the session's, for the log and the server's
 * session_queue events).
 */
int eng__queue_admit(struct eng_server *srv, struct eng_ctl *ctl, uint64_t client_timeout_ms,
		     unsigned id, const char *peer, int (*try_admit)(void *arg), void *arg);

/* The wall clock (CLOCK_REALTIME), seconds since the epoch. */
double eng__wall_now(void);

/* A place may have freed: the session first in line tries again. */
void eng__queue_wake(struct eng_server *srv);

/* Sessions waiting their turn, for the log. */
unsigned eng__queue_length(struct eng_server *srv);

/* admit.c: a proven session's share of --max-memory. */
struct eng_admit {
	uint64_t bytes;	    /* reserved; 0: none */
	unsigned max_slots; /* slots per stripe the session may have (ENG_MAX_SLOTS: no cap) */
};

/*
 * Reserve for the session whose (checked) hello is hello, of chunk bytes
 * over plan (the server's plan of its transport), the most its pools may
 * take within srv's --max-memory (none set: nothing reserved): into *out,
 * with the slots per stripe it may then have.
 * -EBUSY with a sentence (the client asks again) when it does not fit
 * beside the sessions running, -ENOMEM when not even one stripe with 2
 * slots could ever fit (more stripes are trimmed to the share, server_setup.c).
 * Thread-safe.
 */
int eng__admit_memory(struct eng_server *srv, const struct topo_plan *plan, const json_t *hello,
		      uint32_t chunk, struct eng_admit *out);

/* Give a's reservation back (none: nothing done). Thread-safe. */
void eng__admit_release(struct eng_server *srv, struct eng_admit *a);

/* Empty pending slot slot if it still holds generation gen (listener.c). Thread-safe. */
void eng__server_pending_release(struct eng_server *srv, unsigned slot, uint32_t gen);

/* ---- TCP ---- */

/*
 * The client's control connection to host's port (dial.c), each of its
 * addresses in turn (IPv6 or IPv4), from bind_addr if not NULL (then its
 * family only), within timeout_ms. keyless: to a loopback address only
 * (127.0.0.0/8 or ::1: a keyless server listens on loopback alone), else
 * -ENOKEY without connecting anywhere. 0 and *fd_out, or an error said.
 */
int eng__ctl_dial(const char *host, uint16_t port, const char *bind_addr, int timeout_ms,
		  bool keyless, int *fd_out);

/*
 * Without a key: 0 when what listens at the other end of fd (host's port)
 * is this user's, else -ENOKEY with a sentence (dial.c).
 */
int eng__ctl_peer_own(int fd, const char *host, uint16_t port);

/* connect(2) with a timeout; -1 and errno on failure, like connect. */
int eng__tcp_connect_timeout(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms);

/*
 * No Nagle delay; keepalive probes that notice a dead peer machine in about
 * 16 s (idle 10 s, then 3 probes 2 s apart); sends that give up after
 * timeout_ms on a peer that stops reading (eng__proto_send says so), and
 * after 30 s on data it does not acknowledge.
 */
void eng__tcp_tune(int fd, int timeout_ms);

/*
 * peercred.c: the uid that owns the peer's end of the IPv4 TCP connection
 * fd, which must be on this host (loopback), as the kernel's sock_diag
 * reports it. Fails with a sentence when sock_diag cannot answer or either
 * end is no longer established. Thread-safe.
 */
int eng__tcp_peer_uid(int fd, uid_t *uid_out);

/*
 * Whether eng__tcp_peer_uid works here: sock_diag answers and names this
 * process's euid as the owner of its listening socket lfd. 0, or an error
 * with a sentence. Thread-safe.
 */
int eng__tcp_peer_uid_probe(int lfd);

/* ---- pairing.c: which rails carry a session ---- */

/*
 * The receiver rail (index into to[]) a stripe leaving from should use: the
 * least loaded rail on from's subnet, else the least loaded rail. load[]
 * counts stripes per receiver rail and is updated.
 */
unsigned eng__rail_pair(const struct eng_rail_addr *from, const struct eng_rail_addr *to,
			unsigned n_to, unsigned *load);

/*
 * Pair each of the client's stripes (the hello's "stripes") with one of
 * plan's rails at ours[] that is usable[] (NULL: all are): peer_rail[i] for
 * stripe i, ENG_NO_RAIL for a stripe left out (pairing.c says when); plan's
 * QPs per rail become the stripes each rail takes. -ENETUNREACH when no
 * stripe pairs.
 */
#define ENG_NO_RAIL (~0u)
int eng__stripes_pair(const json_t *stripes, const struct eng_rail_addr *ours,
		      struct topo_plan *plan, const bool *usable,
		      unsigned peer_rail[ENG_MAX_STRIPES]);

/*
 * Cap the buffers (--buffer-mib) of plan's workers that have stripes (its
 * rails' qps) to cap bytes in all: a server's session so fits its stripes
 * to its share of --max-memory too. Each worker first gets 2 slots of chunk
 * bytes for one stripe at a time in turn (while its buffer and stripes take
 * them), the rest in proportion to those. Where no buffer holds one
 * stripe's 2 slots nothing changes (eng__stripes_fit then refuses).
 * Whether it changed any buffer.
 */
bool eng__plan_buffers_cap(struct topo_plan *plan, uint32_t chunk, uint64_t cap);

/*
 * Fit plan's stripes (its rails' qps) to its workers' buffers: a worker that
 * cannot give each of its stripes 2 slots of chunk bytes keeps as many as
 * it can, the most loaded of its rails giving one up at a time (the lower
 * index on a tie). The stripes given up in *dropped_out; -ENOMEM with a
 * sentence (whose: "the server", "this side"), plan and *dropped_out as
 * they were, when not one is left.
 */
int eng__stripes_fit(struct topo_plan *plan, uint32_t chunk, const char *whose,
		     unsigned *dropped_out);

/*
 * After eng__stripes_fit: unpair (ENG_NO_RAIL) the client's stripes
 * (the hello's, paired in peer_rail by eng__stripes_pair) past what each of
 * plan's rails keeps, each time the last stripe of the client rail that
 * keeps the most, so that the client keeps as many of its own rails as it
 * can; trimmed_out[i] says stripe i was unpaired here (every other false).
 */
void eng__stripes_unpair(const struct topo_plan *plan, const json_t *stripes, unsigned *peer_rail,
			 bool *trimmed_out);

/*
 * Slots per stripe: the smallest share of a worker's buffer budget, at most
 * ENG_MAX_SLOTS. -ENOMEM with a sentence (whose names the side, "the
 * server" or "this side") when a worker cannot give each of its stripes 2
 * slots of chunk bytes (which eng__stripes_fit, called first at both ends,
 * leaves no worker short of; a plan not fitted can be). Each side holds the other to its own: the
 * client says how many it can take in its hello, the server offers the smaller.
 */
int eng__slots_per_stripe(const struct topo_plan *plan, uint32_t chunk, const char *whose,
			  unsigned *n_out);

/*
 * Of n_slots per stripe, what a job of chunks can use: no stripe ever holds
 * more than all of them, and never fewer than 2. A small copy so takes (and
 * registers, and faults in) slot memory for its own chunks, not for the
 * whole budget, and its stripes take chunks as they did (a stripe takes
 * what its free slots allow, so fewer slots than chunks would spread a
 * file's chunks over more stripes).
 */
unsigned eng__slots_for_job(unsigned n_slots, uint64_t chunks);

/*
 * What a server takes from a proven client's hello: the job (kind points
 * into the hello), the server's role in it and the copy's flags. Bounds
 * are checked here (chunk, bench bytes, 1 to ENG_MAX_STRIPES stripes);
 * serves_files false (no --root): only bench. -EPROTO, -EPERM or -EINVAL
 * with a sentence; out is zeroed first and filled only on success.
 */
struct eng_hello_terms {
	const char *kind;
	enum eng_role role;
	uint32_t chunk;
	uint64_t bench_bytes; /* bench; 0 for copies */
	bool partial;
	bool checksum;
	bool delete_extra;	/* --delete, with recursive only */
	unsigned root_flags;	/* IO_ROOT_* */
	enum eng_direct direct; /* the client's --direct */
};
int eng__hello_terms(const json_t *hello, bool serves_files, struct eng_hello_terms *out);

/* ---- agree.c: the transport both ends agree on (--transport auto) ---- */

/* The hello's "transport", tr's word, and with tcp_too (auto chose rdma) its "transports". */
void eng__transport_hello(json_t *hello, const struct eng_transport *tr, bool tcp_too);

/*
 * The transport a proven client's hello gets from a server that serves
 * have ("rdma" or "tcp"), and tcp too when tcp_too: *tcp_out true for tcp.
 * ENG_ERR_OTHER_TRANSPORT when the client on auto asks for rdma and can go
 * over the tcp this server serves alone (its error frame says so); -EPROTO
 * with a sentence naming both for any other mismatch.
 */
int eng__transport_pick(const json_t *hello, const char *have, bool tcp_too, bool *tcp_out);

/* Whether the hello's flags hold name (ENG_FLAG_*) as true. */
bool eng__hello_flag(const json_t *hello, const char *name);

/* A copy's flags for its hello (ENG_FLAG_*), "fallback" too when fallback (fallback.c). */
json_t *eng__hello_flags(const struct eng_copy_opts *cp, bool fallback);

/*
 * What a client takes from the server's welcome before it connects: the
 * slots per stripe (2 to max_slots, this side's own budget), the tokens
 * unless keyed (then the seal derived them), and, for a copy
 * (want_chunks not NULL), the chunk count both sides planned. -EPROTO with
 * a sentence; *n_slots_out is set only on success.
 */
int eng__welcome_terms(const json_t *welcome, unsigned max_slots, bool keyed,
		       const uint64_t *want_chunks, uint64_t *n_slots_out,
		       uint8_t tokens[ENG_SEAL_KEY_LEN]);

/* ---- dest.c: where a copy lands ---- */

/* The IO_ROOT_* flags of a copy's options (cp -p, --fsync, --direct, --partial, -c). */
unsigned eng__dest_flags(bool preserve, bool fsync, enum eng_direct direct, bool partial,
			 bool checksum, bool fallback);

/* The sender's IO_DIRECT* flags of a copy's --direct. */
unsigned eng__direct_io_flags(enum eng_direct direct);

/*
 * Where a copy lands, by rsync's rule (io_dest_decide): dst, when it is an
 * existing directory, receives each top-level entry of m under its own
 * name; a missing dst is made and receives them, unless m is one file alone
 * (not contents, dst without a trailing slash): then it is renamed to dst's
 * last name and lands in dst's parent (replacing a file dst). contents: a
 * source has no name of its own (trailing slash, "dir/."). parent NULL:
 * dst is a local path; else dst is resolved beneath parent. The new root
 * gets root_flags (IO_ROOT_*).
 */
int eng__dest_open(const struct io_root *parent, const char *dst, bool contents,
		   unsigned root_flags, struct io_manifest *m, struct io_root **root_out);

/*
 * eng__dest_open for a session that lands nothing (a job's "ranges" steps):
 * a missing dst is not made, and *root_out is NULL.
 */
int eng__dest_find(const struct io_root *parent, const char *dst, bool contents,
		   unsigned root_flags, struct io_manifest *m, struct io_root **root_out);

/*
 * A receiving side for manifest m (taken over, also on failure): its root as
 * eng__dest_open names it, then eng__files_create. With holds_out
 * (--update): eng__files_holds, its map of what the root holds already in
 * *holds_out (eng__files_map_len bytes, malloc'd) for the sender; with
 * kept_out (--partial), then eng__files_kept, its map of the chunks kept
 * from before likewise. eng__session_maps_send then sends them, settles
 * what the sender confirmed and prepares the files. dir_job (not 0): the
 * root is a session of that railcp-mpi job (io_root_set_job).
 */
int eng__dest_files(const struct io_root *parent, const char *dst, bool contents,
		    unsigned root_flags, uint64_t dir_job, struct io_manifest *m, uint32_t chunk,
		    uint8_t **holds_out, uint8_t **kept_out, struct eng_files **f_out);

/*
 * --dry-run's receiver: where a copy of m would land at dst (as
 * eng__dest_open names it, m's top renamed to *name_out when the copy
 * renames it, else *name_out NULL) and how the destination differs from
 * each entry, a byte each (enum io_diff) in *why_out: nothing is made or
 * written. Both malloc'd; m stays the caller's. root_out (may be NULL):
 * the destination's root when it exists already (else NULL), the caller's.
 */
int eng__dest_dry(const struct io_root *parent, const char *dst, bool contents,
		  struct io_manifest *m, char **name_out, uint8_t **why_out,
		  struct io_root **root_out);

/* ---- dry.c: --dry-run and a pull's filter (protocol 9) ---- */

/*
 * Client, pull --dry-run: the local destination against the server's list m
 * (consumed); with -c its old files compared with the server's chunk by chunk.
 */
int eng__dry_pull(struct eng_session *s, const struct eng_copy_opts *cp, struct io_manifest *m);

/* Client, push --dry-run: the server's answer (-c: and the chunks), to cp->dry_list. */
int eng__dry_push_recv(struct eng_session *s, const struct eng_copy_opts *cp);

/*
 * Server, push --dry-run: how the destination dst beneath root differs
 * from each entry of m (taken over: it becomes s->files, which reads
 * nothing), told to the client. With -c (s->checksum) its old files are
 * then compared with the client's chunk by chunk, as a -c copy with
 * update (-u) would compare them, without writing anything.
 */
int eng__dry_answer(struct eng_session *s, const struct io_root *root, const char *dst,
		    bool contents, bool update, struct io_manifest *m);

/* ---- ranges.c: railcp-mpi's files cut into byte ranges (protocol 17), its directories (18) ----
 */

/* Client, a push: the hello's "range_job", "ranges" and "dirs_last" from cp (none without a job).
 */
int eng__ranges_hello(json_t *hello, const struct eng_copy_opts *cp);

/* Whether m has an entry flagged as a range (a pull's list never has). */
bool eng__ranges_any(const struct io_manifest *m);

/*
 * Server, a push: the job and step the hello names, checked against its
 * list m: ranges need a job, a "ranges" session names whole files, and
 * "dirs_last" (eng__ranges_dirs_last) a job and no "ranges". -EPROTO
 * with a sentence (the outputs then unwritten).
 */
int eng__ranges_terms(const json_t *hello, const struct io_manifest *m, uint64_t *job_out,
		      enum eng_range_step *step_out);

/*
 * Server, a "ranges" session: the job's temporary of each file of m
 * (consumed) beneath dst put in place (or removed, as step says), then the
 * count told to the client in "ranges_done"; the first failure ends it.
 */
int eng__ranges_answer(struct eng_session *s, const struct io_root *parent, const char *dst,
		       bool contents, unsigned root_flags, struct io_manifest *m, uint64_t job,
		       enum eng_range_step step);

/* Server: whether a hello eng__ranges_terms took has the job's directories last. */
bool eng__ranges_dirs_last(const json_t *hello);

/* Client, a "ranges" session: the server's "ranges_done", its count in *count_out. */
int eng__ranges_heard(struct eng_session *s, uint64_t *count_out);

/* Client, pull: its sources (and its filter, in "filter" frames), after the proofs. */
int eng__sources_send(struct eng_session *s, const struct eng_copy_opts *cp);

/*
 * Server: the filter a pull's sources announce (none: *f_out NULL),
 * received and checked (io_filter_decode).
 */
int eng__filter_recv(struct eng_session *s, const json_t *sources, struct io_filter **f_out);

/* ---- delete.c: --delete (protocol 11) ---- */

/*
 * The receiver, its files all in (dry: the list only compared): what the
 * directories of m that the copy covered beneath root hold and m does not
 * goes (io_root_delete with s->del; root NULL: nothing there yet). A
 * server then tells its client ("deleted"); a client tells s->del.said.
 * s->del.count is set; a failure to remove is the first one's sentence.
 */
int eng__delete_run(struct eng_session *s, const struct io_root *root, const struct io_manifest *m,
		    bool dry);

/* A push's client: the server's "deleted" frames, its names to s->del.said. */
int eng__delete_heard(struct eng_session *s);

/* A push's client: the hello's "filter_bytes" for f (NULL: none), then f after the list. */
int eng__delete_filter_set(json_t *hello, const struct io_filter *f);
int eng__delete_filter_send(struct eng_session *s, const struct io_filter *f);

/* A push's server: the client's filter, as the hello announced it (none: s->del.filter NULL). */
int eng__delete_filter_recv(struct eng_session *s, const json_t *hello);

/* What s->del holds, freed (eng__session_fini). */
void eng__delete_fini(struct eng_delete *d);

#endif
