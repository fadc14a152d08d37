/*
 * engine.h - the RDMA engine's public interface: device discovery
 * (eng_device_list_create), the client side of sessions (eng_bench_run,
 * eng_copy_run) and the server side (eng_serve). Inside, three layers:
 * engine/transport/ (verbs and loopback: moving bytes, connecting), then
 * engine/datapath/ (workers, stripes, credits, the coordinator, the bench
 * and file sources and sinks), then engine/session/ (the control protocol,
 * authentication, the client and server ends, rail pairing).
 *
 * Threading: not thread-safe unless a function says so.
 */
#ifndef RAILCP_ENGINE_H
#define RAILCP_ENGINE_H

#include <net/if.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/steps.h"
#include "topology/topology.h"

/* TCP port of the control connection when none is given. */
#define ENG_DEFAULT_PORT 7470
/* Chunk sizes both ends accept: multiples of ENG_CHUNK_MIN up to ENG_CHUNK_MAX. */
#define ENG_CHUNK_MIN 4096u
#define ENG_CHUNK_MAX (64u << 20)
#define ENG_CHUNK_DEFAULT (1u << 20)
/* Each control and connection step's limit when the user gives none. */
#define ENG_TIMEOUT_MS_DEFAULT 30000
/*
 * With failover, a sender's stripe that has chunks out and no credit back
 * for this long, while another rail moves, is failed as "stalled" and its
 * chunks go to the other rails (a rail that drops everything while its
 * ports stay up). rail_stall_ms: 0 this default, < 0 never.
 */
#define ENG_RAIL_STALL_MS 5000
/*
 * Each stripe's connection at set-up (address, route, the peer's answer)
 * when the user gives no --connect-timeout: a rail that does not connect
 * within it is left out (with failover), so a dead rail costs at most this.
 */
#define ENG_CONNECT_TIMEOUT_MS_DEFAULT 10000

enum eng_gid_type {
	ENG_GID_IB,
	ENG_GID_ROCE_V1,
	ENG_GID_ROCE_V2,
};

struct eng_gid {
	uint32_t index;
	enum eng_gid_type type;
	uint8_t raw[16];
	char addr[46];		  /* text form (IPv6 notation, IPv4-mapped for RoCE v2 over IPv4) */
	char netdev[IF_NAMESIZE]; /* "" when the GID has no netdev */
};

struct eng_port {
	unsigned num;	   /* 1-based, as verbs numbers ports */
	const char *state; /* "ACTIVE", "DOWN", ... */
	bool active;
	const char *link_layer;	  /* "InfiniBand", "Ethernet" */
	unsigned active_mtu;	  /* bytes */
	unsigned width;		  /* lanes; 0 when verbs reports an unknown width */
	double lane_gbps;	  /* data rate of one lane; 0 when unknown */
	double gbps;		  /* width x lane rate */
	char netdev[IF_NAMESIZE]; /* RoCE: its GIDs' netdev; InfiniBand: its IPoIB one; or "" */
	size_t n_gids;
	struct eng_gid *gids;
};

struct eng_device {
	char name[64];
	char node_guid[20];  /* "xxxx:xxxx:xxxx:xxxx" */
	int numa_node;	     /* -1 when unknown */
	char numa_rule[256]; /* how numa_node was found */
	unsigned n_ports;
	struct eng_port *ports;
};

struct eng_device_list {
	size_t n;
	struct eng_device *dev;
};

/*
 * Open every RDMA device, read its ports and GID tables, close it again.
 * sysfs_root is "/sys" on a live machine. Returns -ENODEV, with a sentence,
 * when the host has no RDMA device.
 */
int eng_device_list_create(const char *sysfs_root, struct eng_device_list **list_out);

/* Accepts NULL. */
void eng_device_list_destroy(struct eng_device_list *list);

const char *eng_gid_type_str(enum eng_gid_type type);

struct in6_addr;
/*
 * Whether a rail may take IPv6 address a (where it has no IPv4 one): a
 * global address, not unspecified, loopback, link-local, IPv4-mapped or
 * multicast (engine/transport/railaddr.c; doctor asks the same).
 */
bool eng_ipv6_rail_usable(const struct in6_addr *a);

/* ---- transfers ---- */

/*
 * How the RC queue pairs of a session retry, as perftest and NCCL expose
 * it (NCCL_IB_TIMEOUT, NCCL_IB_RETRY_CNT): what a rail that drops
 * everything costs before its QPs fail, (retry_count + 1) x 4.096 us x
 * 2^ack_timeout. Each side's apply to the QPs it sends on.
 */
struct eng_qp_knobs {
	unsigned ack_timeout; /* the local ACK timeout exponent, 1 to 31; 0: rdma_cm's */
	unsigned retry_count; /* transport retries, 1 to 7; 0: 7 */
	/*
	 * --tos: the traffic class of this side's connections (RoCE v2: the IP
	 * header's DSCP and ECN bits; InfiniBand: the SL through the path
	 * query; TCP: IP_TOS), as NCCL_IB_TC; unset: the system's.
	 */
	bool tos_set;
	uint8_t tos;
};

/* What carries the data: RDMA (verbs, rdma_cm) or TCP between IP interfaces. */
enum eng_transport_kind {
	ENG_TRANSPORT_RDMA,
	ENG_TRANSPORT_TCP,
};

/* "rdma" or "tcp", as the summary, the JSON and --transport say it. */
const char *eng_transport_str(enum eng_transport_kind kind);

/*
 * 0 when RAILCP_TCP_ZEROCOPY (how a TCP sender sends: auto, on or off) is
 * unset or one of those, else -EINVAL with the sentence (rcp_err).
 */
int eng_tcp_zerocopy_check(void);

struct eng_rail_report {
	char name[80]; /* "rxe0:1" */
	char addr[46]; /* the client's: its IP address, IPv4 or IPv6 ("" if not known) */
	int node;      /* NUMA node of the worker that drove it */
	char peer[80]; /* the receiver rail(s) it was paired with */
	uint64_t bytes;
	uint64_t chunks;
	unsigned stripes;      /* QPs on it */
	unsigned stripes_lost; /* of them, failed on the fabric */
	bool failed;	       /* every stripe of it failed: it carried nothing after failed_at */
	double failed_at;      /* seconds from the job's start to its last stripe's failure */
	char why[256];	       /* why its first stripe failed ("" if none did) */
	/* stripes left out at set-up (never connected), and why; all of them: left_out */
	unsigned stripes_left_out;
	bool left_out;
	char left_out_why[256];
	/* the active MTU in bytes of this end's port and of the peer's; both use the smaller */
	unsigned mtu, peer_mtu;
};

struct eng_report {
	uint64_t bytes; /* payload bytes moved (and verified by the receiver) */
	uint64_t bytes_total;
	uint64_t chunks;
	uint64_t files; /* copies: files read to the end (push) or in place (pull) */
	uint64_t files_total;
	uint64_t files_skipped, bytes_skipped; /* copies, --update: held already, not sent */
	uint64_t bytes_kept; /* copies, --partial: kept by an earlier copy, checked, not sent */
	/* copies, --partial and -c: kept chunks compared by digest; bytes read and hashed
	 * for that and the time it took, at this end and at the peer's */
	uint64_t chunks_compared;
	uint64_t hashed_bytes, hash_ns, peer_hashed_bytes, peer_hash_ns;
	uint64_t deleted;    /* copies, --delete: entries the receiver removed (dry: would) */
	double seconds;	     /* first post to last completion, as perftest's BW average */
	double wall_seconds; /* copies: the whole run, from the walk to the last file in place */
	uint32_t chunk;
	unsigned n_slots; /* slots (credits) per stripe */
	unsigned n_stripes;
	unsigned n_rails;
	bool failover;		 /* a failed stripe's chunks went to the others (else: fatal) */
	unsigned rails_failed;	 /* rails whose every stripe failed */
	unsigned rails_left_out; /* rails none of whose stripes connected at set-up */
	struct eng_qp_knobs qp;	 /* what this side's QPs were given (0: the default) */
	int connect_timeout_ms;	 /* in effect for each stripe's connection at set-up */
	struct eng_rail_report rail[TOPO_MAX_RAILS];
	/* copies: files this end and the peer opened with O_DIRECT too (--direct) */
	uint64_t files_direct, peer_files_direct;
	/* copies: how this end read or wrote its files ("" for bench) */
	char file_io[128]; /* e.g. "io_uring, 3 helper threads per worker, 32 deep each" */
	unsigned helpers;  /* per worker; 0: the worker threads themselves */
	unsigned io_depth; /* per helper; 0: pread and pwrite */
	char transport[8]; /* "rdma" or "tcp": the one that finished */
	/*
	 * Copies on --transport auto: every RDMA rail failed mid-copy (or none
	 * connected: fallback_setup) and the copy went on over tcp; bytes,
	 * chunks, seconds and wall_seconds cover both sessions; bytes_kept is
	 * what the tcp one did not send again (part of bytes, mostly the RDMA
	 * session's); files and the rails are the tcp session's.
	 */
	bool fell_back, fallback_setup;
	char fallback_from[8];	 /* "rdma" */
	uint64_t fallback_bytes; /* moved over it before the failure */
	char fallback_why[512];	 /* the failure's sentence */
	/*
	 * This end's time by step (common/steps.h), from the session's start
	 * to its teardown; the caller adds the topology step, which it ran.
	 */
	struct rcp_steps steps;
};

struct eng_bench_opts {
	const char *host; /* the server */
	uint16_t port;	  /* 0: ENG_DEFAULT_PORT */
	uint64_t bytes;
	uint32_t chunk; /* a multiple of ENG_CHUNK_MIN, at most ENG_CHUNK_MAX */
	const struct topo_plan *plan;
	int timeout_ms;	   /* for each control and connection step */
	int stall_ms;	   /* the data phase fails after this long without a completion; 0: 60 s */
	int rail_stall_ms; /* a stalled rail fails over after this (--rail-stall; see
			      ENG_RAIL_STALL_MS) */
	const char *key_file; /* NULL: RAILCP_KEY, then ~/.config/railcp/key */
	bool no_failover; /* a rail that fails fails the run (else its chunks go to the others) */
	int connect_timeout_ms; /* each stripe's connection at set-up; 0: the default (10 s) */
	struct eng_qp_knobs qp; /* --ack-timeout, --retry-count */
	enum eng_transport_kind transport; /* the server must serve the same */
	/* --transport auto that chose rdma: over these rails if the server serves tcp only */
	const struct topo_plan *plan_tcp; /* NULL: no second try */
	/* Called about every 20 ms from the calling thread with the figures so far. */
	void (*progress)(const struct eng_report *so_far, void *ctx);
	void *ctx;
};

/*
 * Move opts->bytes of a verifiable pattern from this host's memory to the
 * server's, over the plan's rails; the server checks every byte. On success
 * fills *report_out. Errors are one sentence (rcp_err_msg).
 */
int eng_bench_run(const struct eng_bench_opts *opts, struct eng_report *report_out);

enum eng_copy_dir {
	ENG_PUSH, /* local SRC... to the server's DST */
	ENG_PULL, /* the server's SRC... to local DST */
};

struct io_manifest;
struct io_filter;

/*
 * A dry run with -c: an entry's chunks, how many of them would travel (all:
 * no old file) and their bytes.
 */
struct eng_dry_chunks {
	uint64_t chunks, differ, differ_bytes;
};

/*
 * O_DIRECT reads and writes (of aligned chunks): none (the engine's default),
 * for the files io_direct_pays picks (large ones, not on tmpfs: railcp's
 * default), or for every file.
 */
enum eng_direct {
	ENG_DIRECT_NEVER = 0,
	ENG_DIRECT_AUTO,
	ENG_DIRECT_ALWAYS,
};

struct eng_copy_opts {
	const char *host;
	uint16_t port; /* 0: ENG_DEFAULT_PORT */
	/* The IPv4 address the control connection leaves from (--bind); NULL: the kernel's choice.
	 */
	const char *bind_addr;
	enum eng_copy_dir dir;
	const char *const *src; /* push: local paths; pull: paths beneath the server's root */
	size_t n_src;
	/* push: this walk's list (io/io.h) instead of walking src; NULL: walk src */
	const struct io_manifest *manifest;
	const char *dst; /* push: beneath the server's root ("" the root); pull: local */
	bool recursive;	 /* directories too (cp -r) */
	bool preserve;	 /* mode and mtime (cp -p); else mode & ~umask, mtime now */
	bool fsync;	 /* each file reaches the disk before its rename */
	bool update;	 /* what the receiver holds already (same size and mtime) is not sent */
	bool partial;	 /* the receiver keeps what a failed copy got, and the next resumes it */
	bool checksum;	 /* -c: chunks of a file at the destination that match are not sent */
	uint32_t chunk;	 /* a multiple of ENG_CHUNK_MIN, at most ENG_CHUNK_MAX */
	/* O_DIRECT at both ends: never, by the rule (io_direct_pays), always */
	enum eng_direct direct;
	/*
	 * chunk is the default, not asked for: a push whose data extents are all
	 * smaller takes the largest one's size (io_plan_chunk_fit), so its slots
	 * are no larger than its chunks.
	 */
	bool chunk_fit;
	const struct topo_plan *plan;
	int timeout_ms;
	int stall_ms;	   /* the data phase fails after this long without a completion; 0: 60 s */
	int rail_stall_ms; /* a stalled rail fails over after this (--rail-stall; see
			      ENG_RAIL_STALL_MS) */
	const char *key_file; /* NULL: RAILCP_KEY, then ~/.config/railcp/key */
	const char *key;      /* the key itself (from railcp serve --ssh); NULL: key_file's */
	bool no_failover; /* a rail that fails fails the copy (else its chunks go to the others) */
	int connect_timeout_ms; /* each stripe's connection at set-up; 0: the default (10 s) */
	struct eng_qp_knobs qp; /* --ack-timeout, --retry-count */
	enum eng_transport_kind transport; /* the server must serve the same */
	/* --transport auto that chose rdma: over these rails if the server serves tcp only */
	const struct topo_plan *plan_tcp; /* NULL: no second try */
	/*
	 * --exclude, --include, --files-from (io/io.h): a push walks through
	 * it, a pull has the server walk through it; NULL: none.
	 */
	const struct io_filter *filter;
	/*
	 * --dry-run: the session ends after the file list, nothing written on
	 * either side; dry_list gets the list as it would land (names beneath
	 * the destination's directory) and, for each entry, how the
	 * destination differs (enum io_diff), before eng_copy_run returns 0.
	 * With checksum, both ends first compare the old files chunk by chunk
	 * as a -c copy does, and c (else NULL) says, for each entry, its
	 * chunks and how many of them would travel.
	 */
	bool dry_run;
	void (*dry_list)(const struct io_manifest *m, const uint8_t *why,
			 const struct eng_dry_chunks *c, void *ctx);
	void *dry_ctx;
	/*
	 * --delete (with recursive): once the copy succeeded, the receiver
	 * removes what the directories the copy covered hold and the list
	 * does not; entries the filter leaves out stay (io_root_delete). The
	 * sources either all have no name of their own or all have one.
	 * deleted (may be NULL) hears each name removed (or, dry_run, that
	 * would be), beneath the destination, a directory's with a trailing
	 * '/', before eng_copy_run returns.
	 */
	bool delete_extra;
	void (*deleted)(const char *path, void *ctx);
	void *deleted_ctx;
	/*
	 * railcp-mpi's files cut into byte ranges (io/io.h, "a file written
	 * in byte ranges"): a push whose manifest has entries with range set
	 * names its job (range_job, not 0), and the server writes those into
	 * the job's temporaries. range_step ENG_RANGES_PLACE: no data travels;
	 * the server puts the job's temporary of each file of manifest (whole
	 * entries, as walked) in place; ENG_RANGES_PLACE_AGAIN: the same after
	 * an earlier place's server was judged gone, so a file that place put
	 * in place already counts as placed (io_root_range_place's again);
	 * ENG_RANGES_REMOVE: it removes them.
	 * dirs_last (with range_job, a push with -p): this session is one of
	 * the job's, so the server marks each directory it makes as the
	 * job's and sets no directory's metadata at its end; the job's last
	 * session, ENG_RANGES_DIRS (its manifest the job's directories), has
	 * it apply them to the directories the job made, deepest first, and
	 * remove the markers; ENG_RANGES_DIRS_REMOVE (a failed job) removes
	 * them only (io_root_job_dirs).
	 */
	uint64_t range_job;
	enum eng_range_step {
		ENG_RANGES_LAND = 0,
		ENG_RANGES_PLACE,
		ENG_RANGES_PLACE_AGAIN,
		ENG_RANGES_REMOVE,
		ENG_RANGES_DIRS,
		ENG_RANGES_DIRS_REMOVE,
	} range_step;
	bool dirs_last;
	/* Set (e.g. from a signal handler) to stop the copy: it fails, its temporaries removed. */
	const _Atomic bool *cancel;
	/* Called about every 20 ms from the calling thread with the figures so far. */
	void (*progress)(const struct eng_report *so_far, void *ctx);
	void *ctx;
};

/*
 * Copy files and trees between this host and a server, named by rsync's
 * rule (io_dest_decide): a SRC ending in '/' is its contents; any other
 * lands in DST under its own name, DST made if missing; one file alone to a
 * DST that is no directory is created as DST. Every file is written under a
 * temporary name and renamed into place once all its chunks arrived with
 * the right CRC-64; a failed copy leaves no partial file under a final name.
 * On success fills *report_out. Errors are one sentence (rcp_err_msg).
 */
int eng_copy_run(const struct eng_copy_opts *opts, struct eng_report *report_out);

/* One session of a server, as it ended (eng_serve_opts.session_end). */
struct eng_session_record {
	unsigned id;	   /* the server's count, as its log lines say it */
	const char *peer;  /* the client's address */
	const char *job;   /* "push", "pull" or "bench"; NULL when it ended before its hello */
	const char *what;  /* "push of 12 files into \"dst\"", as the log line says; "" */
	double start, end; /* the wall clock (CLOCK_REALTIME), seconds since the epoch */
	uint64_t bytes;	   /* payload bytes moved and verified (so far, for a failure) */
	double seconds;	   /* the transfer's span, by the sender's clock when it ended well */
	int err;	   /* 0, or the failure */
	const char *error; /* the failure's sentence; NULL */
	/* the server's time by step, up to its end exchange (no teardown yet) */
	const struct rcp_steps *steps;
};

/*
 * A session waiting its turn at a full server (eng_serve_opts.session_queue):
 * once when it joins the queue, once when it leaves it, admitted or refused.
 */
enum eng_queue_event_kind { ENG_QUEUE_JOINED, ENG_QUEUE_ADMITTED, ENG_QUEUE_REFUSED };

struct eng_queue_event {
	enum eng_queue_event_kind kind;
	unsigned id;	    /* the session, as its log lines and its end record say it */
	const char *peer;   /* the client's address */
	double time;	    /* the wall clock (CLOCK_REALTIME), seconds since the epoch */
	unsigned place, of; /* its place (1: first) and the queue's length, then or last seen */
	uint64_t waited_ms; /* admitted or refused: how long it waited */
	/*
	 * joined: why it waits ("the server is busy with 16 sessions"); refused:
	 * the sentence its client is told; admitted: NULL
	 */
	const char *reason;
};

struct eng_serve_opts {
	const char *listen_addr; /* NULL: every address with a key, else 127.0.0.1 */
	const char *key_file;	 /* NULL: RAILCP_KEY, then ~/.config/railcp/key */
	const char *key;	 /* the key itself (railcp serve --ssh); NULL: key_file's */
	uint16_t port;	  /* 0: ENG_DEFAULT_PORT (with once: a port of the kernel's choice) */
	const char *root; /* the directory copies read and write beneath; NULL: bench only */
	const struct topo_plan *plan;
	int timeout_ms;
	int stall_ms;	       /* each session's data phase, as for a client; 0: 60 s */
	int rail_stall_ms;     /* as for a client */
	unsigned max_sessions; /* authenticated sessions at once; more are refused with a message */
	/*
	 * The slot memory (bytes) all sessions' pools may reserve together;
	 * a session past it is told the server is busy, one that could never
	 * fit is refused. 0: no limit (railcp serve sets
	 * eng_serve_memory_default()).
	 */
	uint64_t max_memory;
	bool no_failover; /* a rail that fails fails its session (else the others carry on) */
	/* every file through the page cache, whatever a client's --direct asks */
	bool no_direct;
	/* a stripe answered and not established after this is left out; 0: 10 s */
	int connect_timeout_ms;
	struct eng_qp_knobs qp;		   /* its sessions' QPs, as a client's */
	enum eng_transport_kind transport; /* a client asking for the other is refused... */
	/* ...unless transport is rdma, chosen by auto: then TCP sessions go over these rails */
	const struct topo_plan *plan_tcp; /* NULL: transport alone */
	/*
	 * Each client names the server it dialed (the host as its user gave
	 * it, and the port), and a session dialed to another server is
	 * refused: the host must be an address of this host, its name, or a
	 * name that resolves to one, and the port this one. names adds more,
	 * "HOST" (at this port) or "HOST:PORT", for a NAT or an alias only the
	 * clients know; NULL-terminated, or NULL. any_name: take every name,
	 * for a key that is this server's alone (railcp serve --ssh).
	 */
	const char *const *names;
	bool any_name;
	/*
	 * Serve one session: the first client that proves the key; return when
	 * it ends (with its error), or -ETIMEDOUT when none proved the key
	 * within timeout_ms. For railcp serve --ssh.
	 */
	bool once;
	int stop_fd; /* readable (e.g. a signal's self-pipe): stop */
	/* Listening: the address, the port, and how sessions are authenticated. */
	void (*ready)(const char *addr, uint16_t port, const char *auth, void *ctx);
	void *ctx;
	/*
	 * Each session as it ends, succeeded or failed (NULL: none), with ctx;
	 * called from the session's own thread: several at once.
	 */
	void (*session_end)(const struct eng_session_record *rec, void *ctx);
	/* Each session that waits its turn, as it joins and leaves the queue; as session_end. */
	void (*session_queue)(const struct eng_queue_event *ev, void *ctx);
};

/*
 * Serve sessions, several at once, until stop_fd turns readable. Every
 * session must prove knowledge of the shared key (HMAC-SHA256 challenge and
 * response both ways; the client first) before anything is allocated for
 * it, and every control frame after that is sealed; without a key the
 * server listens on loopback only and serves only the user running it. A
 * failed session is reported on stderr and never stops the server. Returns
 * 0 after a stop, or an error if it cannot listen (with once: see there).
 */
int eng_serve(const struct eng_serve_opts *opts);

/*
 * serve --max-memory's default: a quarter of the host's memory, or
 * RLIMIT_MEMLOCK when that is lower and binds (no CAP_IPC_LOCK). Thread-safe.
 */
uint64_t eng_serve_memory_default(void);

/*
 * What the runs above would refuse that this host alone can tell, for a
 * caller to ask before it probes the RDMA devices (the runs check it all
 * again). eng_key_check: the key file, RAILCP_KEY or the default file, if
 * one is configured (none is no error: loopback only). eng_copy_check: a
 * push's sources (there; a directory only with recursive), a pull's local
 * destination (there, or in a directory that is). eng_serve_check: the key,
 * --listen, and the root. 0, or an error with one sentence.
 */
int eng_key_check(const char *key_file);
int eng_copy_check(const struct eng_copy_opts *opts);
int eng_serve_check(const struct eng_serve_opts *opts);

/* 0 when name is a --name eng_serve takes (HOST or HOST:PORT), else -EINVAL with a sentence. */
int eng_serve_name_check(const char *name);

#endif
