/*
 * proto.h - private to engine/session/: the control connection.
 *
 * Frames are a 4-byte big-endian length and a JSON object of at most
 * ENG_PROTO_MAX_FRAME bytes. Each side's first frame is a hello carrying
 * "proto": "railcp" and "version"; anything else ends the connection with a
 * sentence saying what the peer is not. Every read has a timeout.
 *
 * A session, in order (C: the client, S: the server; the sender of the
 * job's data may be either):
 *   C -> S  hello     job, chunk, slots (the most per stripe its buffers take),
 *                     stripes (address, prefix, rail each), flags,
 *                     server (the host and port it dialed: identity.c),
 *                     timeout_ms (the client's --timeout: how long it
 *                     waits its turn at a full server),
 *                     transport, transports (--transport auto: what
 *                     else it can run; agree.c),
 *                     the job's own keys, challenge (when keyed)
 *   S -> C  challenge challenge                    (auth.c, when keyed)
 *   C -> S  proof     proof
 *   S -> C  proof     proof
 *   S -> C  queued    place, of                    (a full server: waiting its turn;
 *                                                   place 0 when admitted; queue.c)
 *           (keyed: every frame from here on is sealed, struct eng_ctl)
 *   S -> C  ready                                  (push: the job is accepted)
 *   C -> S  sources   src, filter_bytes            (pull: the names, as hex)
 *   C -> S  filter    part                         (pull with a filter: io_filter_encode)
 *   either  manifest  total (first part), part     (push: C -> S; pull: S -> C)
 *   C -> S  filter    part                         (push --delete with a filter: the
 *                                                   hello's "filter_bytes")
 *   S -> C  dry_run   name; dry_run_why part      (push --dry-run: the session ends here,
 *                                                   or with -c or --partial after the
 *                                                   "hashed" frames)
 *   rcvr    skip      part                         (--update: what it holds already)
 *   rcvr    kept      part                         (--partial, -c: chunks kept from before)
 *   rcvr    kept_digests part                      (--partial: a keyed digest of each, kept.c)
 *   sender  confirmed part                         (--partial: those it read the same)
 *   sender  hashed    bytes, ns                    (--partial, -c: its hashing, for reports)
 *   rcvr    hashed    bytes, ns                    (the same, the receiver's)
 *   S -> C  welcome   token (keyless only), chunks, slots, slot_size,
 *                     stripes (addr, port, stripe, rail each; or unpaired,
 *                     and buffer_full when the server's buffer was why)
 *   ...     RDMA connections, then the data ...
 *   sender  done      chunks, bytes, seconds
 *   S -> C  deleted   count, names_bytes; deleted_names part
 *                                                  (push --delete: what the receiver removed
 *                                                   once its files were in, or, dry, would)
 *   rcvr    result    chunks, bytes, files
 *   either  lost      stripe, message, setup       (during the data: failover; setup:
 *                                                   the stripe never came up at that side)
 *   either  error     message: ends the session with that sentence
 *                     (retry: the server is busy; the client tries again;
 *                     other_transport: a client on auto asks again over tcp)
 * Names travel as hex, so no byte of a file name can break the JSON.
 *
 * Threading: functions use only their arguments (a struct eng_ctl is its
 * connection's); one thread per connection.
 */
#ifndef RAILCP_ENGINE_PROTO_H
#define RAILCP_ENGINE_PROTO_H

#if !defined(ENG_LAYER_SESSION) && !defined(RAILCP_TESTS)
#error "engine/session/proto.h is private to engine/session/"
#endif

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/io.h"

#define ENG_PROTO_NAME "railcp"
/*
 * 2: the client proves first; frames sealed after the proofs. 3: chunks carry
 * a CRC-64. 4: rail failover (a chunk may arrive twice; "lost" frames; the
 * welcome's "unpaired" stripes). 5: the proofs and the seal's keys cover
 * every frame before them (the hello and the challenge: a transcript). 6: the
 * hello names the server the client dialed, and only that server serves it.
 * 7: each RDMA connection's request and accept say the port's MTU, and both
 * QPs take the smaller (engine/transport/cm.c). 8: "lost" frames during
 * set-up name stripes that will never connect (either side), and the hello
 * names its transport (rdma or tcp); the hello carries the client's
 * --timeout ("timeout_ms") and a full server answers a proven session with
 * "queued" frames while it waits its turn. 9: a pull's sources may carry
 * a filter (--exclude, --files-from: "filter_bytes", then "filter" frames),
 * and the hello's "dry_run" flag ends the session after the file list (a
 * push's server answers with "dry_run" and "dry_run_why" frames) with
 * nothing written: an older server would copy instead. 10: the hello's
 * "checksum" flag (-c): the receiver maps as kept the chunks its old files
 * hold and the "kept", "kept_digests" and "confirmed" frames follow as with
 * --partial, so only the chunks that differ travel (io/checksum.c): an
 * older receiver would send every file whole. 11: the hello's "delete" flag
 * (--delete): once the copy succeeded, the receiver removes what the
 * directories it covered hold and the list does not (engine/session/
 * delete.c, io/delete.c); a push's client sends its filter after the list
 * (the hello's "filter_bytes": excluded names are kept) and its server
 * answers "deleted" before its result (or its dry run's list): an older
 * server would leave the extras. 12: the kept chunks' digests are Poly1305
 * under a one-time key per chunk (eng__seal_kept_digest), not HMAC-SHA256:
 * an older peer's would never match. 13: --transport auto agreed by both
 * ends: the hello's "transports" lists what a client on auto can run, a
 * server on auto that chose rdma serves tcp sessions too, and a server that
 * serves tcp alone answers such a client asking for rdma with an error
 * frame flagged "other_transport": the client asks again over tcp. 14: a
 * dry run with -c goes on after its list (a push's server after its
 * "dry_run" frames and any "deleted" ones) with the "skip" (-u), "kept",
 * "kept_digests", "confirmed" and "hashed" frames of a -c copy, and ends
 * after them: an older server would end after the list; a "lost" frame
 * for a stripe given up while it connected says "setup", so the other side
 * counts it as left out at set-up, not lost mid-copy. 15: the hello's
 * "fallback" flag: a client on --transport auto that chose rdma goes on
 * over tcp when every RDMA rail fails, so the receiver keeps what landed
 * then (as --partial keeps it; engine/session/fallback.c), and an error
 * frame says "rails_down" when every rail failed (a client's: it goes on
 * over tcp, and only then does the server keep what landed): an older
 * receiver would remove it, and an older server serving once would end.
 * 16: a server whose buffer (--buffer-mib) cannot give each of the
 * client's stripes 2 slots leaves out those it cannot hold, unpaired with
 * "buffer_full", instead of refusing the session: an older client would
 * report them as stripes whose subnet has no ACTIVE rail of the server.
 * 17: railcp-mpi's files cut into byte ranges: a manifest entry's range
 * flag (io/codec.c), the hello's "range_job" (the job's id, 8 bytes of
 * hex) and "ranges" ("place" or "remove": a session that puts the job's
 * temporaries of its list's files in place, or removes them, and ends
 * after a "ranges_done" frame; ranges.c): an older server would refuse the
 * flag or copy the list whole. 18: a railcp-mpi push with -p: the hello's
 * "dirs_last" (with "range_job") has the server mark each directory it
 * makes as the job's and set no directory's metadata at the session's end;
 * "ranges" "dirs" (the job's last session, its list the job's directories)
 * has it set the mode and time of those that hold the job's marker and
 * remove the markers, "dirs_remove" (a failed job) remove them only; an
 * older server would set them at each session's end (a later session's
 * file then changes a directory's time, and a read-only one stops it).
 * 19: a dry run with --partial (and no -c) goes on after its list as one
 * with -c does (14), its "kept" chunks those a cut --partial copy's
 * partial files hold (engine/session/dry.c): an older server would end
 * after the list.
 */
#define ENG_PROTO_VERSION 19
#define ENG_PROTO_MAX_FRAME (1u << 20)
/* A hello arrives before authentication: keep what a stranger can make us parse small. */
#define ENG_PROTO_MAX_HELLO (64u << 10)
/* Room for a short word from the peer (a type, a job) quoted by rcp_printable. */
#define ENG_PROTO_ESC_SHORT 64
/* The manifest travels in parts of at most this many bytes... */
#define ENG_MANIFEST_PART (256u << 10)
/* ...adding up to at most this many: about four million entries. */
#define ENG_MANIFEST_MAX (1ull << 30)

/* Message types. */
#define ENG_MSG_HELLO "hello"
#define ENG_MSG_CHALLENGE "challenge"
#define ENG_MSG_PROOF "proof"
#define ENG_MSG_READY "ready"
#define ENG_MSG_MANIFEST "manifest"
#define ENG_MSG_SOURCES "sources"
#define ENG_MSG_WELCOME "welcome"
#define ENG_MSG_DONE "done"
#define ENG_MSG_RESULT "result"
#define ENG_MSG_ERROR "error"
/* --update: the receiver's map of the entries it holds already (eng__map_send). */
#define ENG_MSG_SKIP "skip"
/* --partial: the receiver's map of the planned chunks earlier copies kept (eng__map_send). */
#define ENG_MSG_KEPT "kept"
/* --partial: the receiver's keyed digest of each kept chunk, in plan order (kept.c). */
#define ENG_MSG_KEPT_DIGESTS "kept_digests"
/* --partial: the sender's map of the kept chunks it confirmed (kept.c). */
#define ENG_MSG_CONFIRMED "confirmed"
/* --partial, -c: each side's "bytes" read and hashed for the digests, and "ns" (kept.c). */
#define ENG_MSG_HASHED "hashed"
/*
 * During the transfer, from either side: {"stripe": N, "message": why}, the
 * stripe the server numbers N went down at the side that says so; the other
 * side takes its end down too, and the chunks go to the other stripes. A
 * wait for a frame of another type passes over it.
 */
#define ENG_MSG_LOST "lost"
/* "lost": the stripe never came up at the side that says so (set-up), rather than went down. */
#define ENG_KEY_SETUP "setup"
/* C -> S, pull: the filter's encoding (eng__map_send), "filter_bytes" of the sources long. */
#define ENG_MSG_FILTER "filter"
/* S -> C, push --dry-run: "name", the top's new name when the copy renames it (hex), or none... */
#define ENG_MSG_DRY_RUN "dry_run"
/* ...then a byte per manifest entry (enum io_diff), as eng__map_send sends maps. */
#define ENG_MSG_DRY_RUN_WHY "dry_run_why"
/* S -> C: a proven session waits its turn at a full server (queue.c); place 0: admitted */
#define ENG_MSG_QUEUED "queued"
/*
 * Either way, during --delete's walk, and S -> C while a job's "ranges"
 * step settles its list: the side at work is alive (one every
 * ENG_ALIVE_NS at most, a --timeout being at least 1 s); a wait for any
 * frame passes over it and starts afresh, so a walk of a large tree is not
 * taken for a peer gone.
 */
#define ENG_MSG_ALIVE "alive"
#define ENG_ALIVE_NS 250000000ull
/* S -> C, push --delete: "count" entries removed, "names_bytes" of names to follow... */
#define ENG_MSG_DELETED "deleted"
/* ...each NUL-terminated, a directory's with a trailing '/', as eng__map_send sends maps. */
#define ENG_MSG_DELETED_NAMES "deleted_names"

/* S -> C, a "ranges" session: "count" files put in place (or temporaries removed). */
#define ENG_MSG_RANGES_DONE "ranges_done"

/* Keys. */
#define ENG_KEY_TYPE "type"
#define ENG_KEY_PROTO "proto"
#define ENG_KEY_VERSION "version"
#define ENG_KEY_MESSAGE "message"
/* error: the side failed on the fabric or through the peer; the peer's own reason is better */
#define ENG_KEY_SYMPTOM "symptom"
/* error: every rail of the session failed on the fabric; a client's: it goes on over tcp */
#define ENG_KEY_RAILS_DOWN "rails_down"
/* error: the refusal is temporary (a full server, a queue too long): try again (-EBUSY) */
#define ENG_KEY_RETRY "retry"
#define ENG_KEY_JOB "job" /* ENG_JOB_* */
#define ENG_KEY_CHUNK "chunk"
#define ENG_KEY_STRIPES "stripes"
#define ENG_KEY_ADDR "addr"
#define ENG_KEY_PREFIX "prefix"
#define ENG_KEY_RAIL "rail"
#define ENG_KEY_TRANSPORT "transport" /* the client's hello: "rdma" or "tcp" */
/* the hello of a client on --transport auto: each transport it can run, "rdma" first */
#define ENG_KEY_TRANSPORTS "transports"
/* error: the server serves this client's other transport alone: ask again over it */
#define ENG_KEY_OTHER_TRANSPORT "other_transport"
/*
 * The errno of "ask again over tcp": said only by eng__transport_pick (the
 * error frame then carries ENG_KEY_OTHER_TRANSPORT), and read back from
 * that flag alone. Nothing else here returns it, so no other failure (a
 * list of another version is -EPROTONOSUPPORT) makes a client start over.
 */
#define ENG_ERR_OTHER_TRANSPORT (-ESOCKTNOSUPPORT)
#define ENG_KEY_PORT "port"
#define ENG_KEY_STRIPE "stripe"
#define ENG_KEY_UNPAIRED "unpaired" /* welcome: no rail of the server can take this stripe */
/* welcome, beside "unpaired": the server's buffer holds no more stripes (pairing.c) */
#define ENG_KEY_BUFFER_FULL "buffer_full"
#define ENG_KEY_FLAGS "flags" /* ENG_FLAG_* */
#define ENG_KEY_BYTES "bytes"
#define ENG_KEY_CHUNKS "chunks"
#define ENG_KEY_FILES "files"
#define ENG_KEY_SECONDS "seconds"
#define ENG_KEY_NS "ns"
#define ENG_KEY_DIRECT "direct" /* done and result (optional): files that end opened O_DIRECT */
#define ENG_KEY_DST "dst"
#define ENG_KEY_SRC "src"
#define ENG_KEY_CHALLENGE "challenge"
#define ENG_KEY_PROOF "proof"
#define ENG_KEY_TOTAL "total"
#define ENG_KEY_PART "part"
#define ENG_KEY_TOKEN "token"
#define ENG_KEY_SLOTS "slots"
#define ENG_KEY_SLOT_SIZE "slot_size"
#define ENG_KEY_SERVER "server" /* hello: the server the client dialed (identity.c) */
#define ENG_KEY_HOST "host"
#define ENG_KEY_TIMEOUT_MS "timeout_ms"	    /* hello: the client's --timeout, how long it waits */
#define ENG_KEY_PLACE "place"		    /* queued: this session's place in line, 1 first */
#define ENG_KEY_OF "of"			    /* queued: sessions in line */
#define ENG_KEY_FILTER_BYTES "filter_bytes" /* sources: the filter frames' total */
#define ENG_KEY_NAME "name"
#define ENG_KEY_COUNT "count"		  /* deleted: entries removed */
#define ENG_KEY_NAMES_BYTES "names_bytes" /* deleted: the names' frames' total */
#define ENG_KEY_RANGE_JOB "range_job"	  /* hello: the railcp-mpi job's id, 8 bytes of hex */
#define ENG_KEY_RANGES "ranges"		  /* hello: ENG_RANGES_* */
#define ENG_RANGES_PLACE_WORD "place"
#define ENG_RANGES_PLACE_AGAIN_WORD "place_again"
#define ENG_RANGES_REMOVE_WORD "remove"
#define ENG_RANGES_DIRS_WORD "dirs"		  /* the job's directories: their metadata */
#define ENG_RANGES_DIRS_REMOVE_WORD "dirs_remove" /* the job's directories: their markers */
#define ENG_KEY_DIRS_LAST "dirs_last" /* hello, true: a job's session; its directories last */

/* Jobs. */
#define ENG_JOB_BENCH "bench"
#define ENG_JOB_PUSH "push"
#define ENG_JOB_PULL "pull"

/* Copy flags. */
#define ENG_FLAG_PRESERVE "preserve"
#define ENG_FLAG_FSYNC "fsync"
#define ENG_FLAG_DIRECT "direct" /* --direct: O_DIRECT for every file */
/*
 * --direct's default: O_DIRECT for the files io_direct_pays picks; with
 * "direct" in one hello too, "direct" wins. An older server reads neither
 * it nor the done's and result's ENG_KEY_DIRECT and copies through the page
 * cache, as an older client would ask: no new version.
 */
#define ENG_FLAG_DIRECT_AUTO "direct_auto"
#define ENG_FLAG_RECURSIVE "recursive"
#define ENG_FLAG_CONTENTS "contents"
#define ENG_FLAG_UPDATE "update"     /* the quick check: what the receiver holds does not travel */
#define ENG_FLAG_PARTIAL "partial"   /* the receiver keeps what a failed copy got, and resumes it */
#define ENG_FLAG_DRY_RUN "dry_run"   /* the session ends after the file list: nothing written */
#define ENG_FLAG_CHECKSUM "checksum" /* -c: the receiver's old files kept where they match */
#define ENG_FLAG_DELETE "delete"     /* what the covered directories hold and the list not goes */
/* the client goes on over tcp if every RDMA rail fails: the receiver keeps what landed then */
#define ENG_FLAG_FALLBACK "fallback"

/* A sealing key (seal.c) and a frame's tag. */
#define ENG_SEAL_KEY_LEN 32
#define ENG_SEAL_TAG_LEN 32
#define ENG_TRANSCRIPT_LEN 32 /* SHA-256 */

/*
 * The control connection: its socket and, once both sides proved the key,
 * what seals every frame from then on (seal.c): a sealed frame's length
 * counts its JSON and the tag that follows it, HMAC-SHA256 under the
 * direction's key over the frame's number in that direction, the JSON's
 * length and the JSON. A frame that fails its tag ends the session.
 *
 * Until then every frame sent or received, as its exact bytes, is folded
 * into transcript (eng__seal_fold): both proofs and the seal's keys cover
 * it, so a hello or a challenge altered on the way fails the proofs, as
 * TLS 1.3 and SSH bind their handshakes.
 */
struct eng_ctl {
	int fd;			  /* -1 when none */
	const _Atomic bool *stop; /* when set, a read waiting for the peer gives up */
	const char *stop_why;	  /* then -EINTR with this; NULL: the server is shutting down */
	bool sealed;
	const char *peer; /* who its sentences name: "the server", "the client"; NULL: "the peer" */
	bool rails_down;  /* this side's error frame says ENG_KEY_RAILS_DOWN */
	bool peer_rails_down; /* the peer's said it (read by any wait for a frame) */
	bool trusted;	      /* past the proofs (keyless: the hello): peer_rails_down heeded */
	uint64_t seq_out, seq_in;
	uint8_t key_out[ENG_SEAL_KEY_LEN], key_in[ENG_SEAL_KEY_LEN];
	uint8_t transcript[ENG_TRANSCRIPT_LEN]; /* SHA-256 chain of the frames before the seal */
};

/* An unsealed control connection on fd. */
#define ENG_CTL_PLAIN(fd_) ((struct eng_ctl){.fd = (fd_)})

/*
 * Fold a frame's body of len bytes, as sent or received before the seal,
 * into c->transcript: SHA-256(transcript || len as 4 bytes big-endian ||
 * body) (seal.c).
 */
int eng__seal_fold(struct eng_ctl *c, const void *body, uint32_t len);

/* The tag of frame number seq of len bytes under key (seal.c). */
int eng__seal_tag(const uint8_t key[ENG_SEAL_KEY_LEN], uint64_t seq, const void *body, uint32_t len,
		  uint8_t tag_out[ENG_SEAL_TAG_LEN]);

/* Send msg (not consumed). */
int eng__proto_send(struct eng_ctl *c, const json_t *msg);

/*
 * Receive one frame within timeout_ms. If want_type is not NULL the frame
 * must have that "type" ("lost" frames before it are passed over); a frame
 * of type "error" becomes -ECONNABORTED with the peer's message as the
 * sentence.
 */
int eng__proto_recv(struct eng_ctl *c, int timeout_ms, const char *want_type, json_t **msg_out);

/* eng__proto_recv with a smaller frame limit than ENG_PROTO_MAX_FRAME. */
int eng__proto_recv_max(struct eng_ctl *c, int timeout_ms, const char *want_type, uint32_t max,
			json_t **msg_out);

/*
 * Wait up to timeout_ms for the peer's "error" frame: -ECONNABORTED with
 * "<peer_name> failed: <its sentence>", or 0 (this thread's recorded
 * sentence then lost) when none came or the peer's was only a symptom.
 */
int eng__proto_peer_failed(struct eng_ctl *c, int timeout_ms, const char *peer_name);

/* The milliseconds left until end_ns (rcp_now_ns's clock), 0 once it has passed. */
int eng__proto_ms_left(uint64_t end_ns);

/*
 * Without blocking: 0 when nothing arrived on c, 1 with *msg_out when a
 * frame of type want arrived, or -errno with a sentence when the peer closed
 * the connection, reported an error or sent something else.
 */
int eng__proto_poll(struct eng_ctl *c, const char *want, json_t **msg_out);

/* A new message {"type": type}; with proto and version when hello is true. */
json_t *eng__proto_msg(const char *type, bool hello);

/* Send a message with no keys but its type. */
int eng__proto_send_type(struct eng_ctl *c, const char *type);

/*
 * "alive" frames on ctl while a side works through a long list (--delete's
 * walk, a job's "ranges" step settling its list): eng__alive_tick after
 * each entry sends one if ENG_ALIVE_NS have passed since the last, or since
 * eng__alive_init. It reads the clock each time (some 30 ns, against an
 * entry's microseconds), so an entry that takes long, or a sort of the
 * list before the first, is followed by a frame at once. A failed send is
 * left to the frame that ends the work.
 */
struct eng_alive {
	struct eng_ctl *ctl;
	uint64_t sent_ns;
};
void eng__alive_init(struct eng_alive *a, struct eng_ctl *ctl);
/* a: a struct eng_alive, so that it can be io's per-entry callback as it is. */
void eng__alive_tick(void *a);

/* Check a hello frame's proto and version; -EPROTO with a sentence. */
int eng__proto_check_hello(const json_t *msg);

/*
 * Send {"type": "error", "message": <err's sentence>}, with "symptom" when
 * this side failed only through the fabric or the peer (so the peer keeps
 * its own sentence), ignoring failures (the peer may be gone); err's
 * sentence stays recorded for the caller.
 */
void eng__proto_send_error(struct eng_ctl *c, int err, bool symptom);

/* Fetch an integer member (>= 0); -EPROTO with a sentence when missing or wrong. */
int eng__proto_get_u64(const json_t *msg, const char *key, uint64_t *v_out);

/* The hex text of len bytes as a JSON string; NULL when out of memory. */
json_t *eng__proto_hex(const void *bytes, size_t len);

/* Set key to the hex text of len bytes; -ENOMEM. */
int eng__proto_set_hex(json_t *msg, const char *key, const void *bytes, size_t len);

/* Read key as exactly len bytes of hex; -EPROTO with a sentence otherwise. */
int eng__proto_get_hex(const json_t *msg, const char *key, void *bytes_out, size_t len);

/*
 * Decode v, hex of at most max bytes, into a new buffer with a NUL after the
 * bytes (*len_out may be NULL); what names v in the sentence of an error.
 */
int eng__proto_hex_value(const json_t *v, const char *what, size_t max, char **bytes_out,
			 size_t *len_out);

/* A name from the peer, as hex of at most IO_PATH_MAX - 1 bytes with no NUL in it. */
int eng__proto_name(const json_t *v, const char *what, char **name_out);

/* Send m's encoding on c as "manifest" frames. */
int eng__manifest_send(struct eng_ctl *c, const struct io_manifest *m);

/*
 * Receive a manifest from a peer, who may be hostile: the first frame
 * announces the total (at most ENG_MANIFEST_MAX), the parts must add up to
 * it, and io_manifest_decode checks every entry.
 */
int eng__manifest_recv(struct eng_ctl *c, int timeout_ms, struct io_manifest **m_out);

/*
 * A receiver's map for the sender (a bit per manifest entry for "skip", per
 * planned chunk for "kept"; len bytes) as frames of that type of at most
 * ENG_MANIFEST_PART bytes each, and its receipt: exactly len bytes in as
 * many frames, no bit set beyond item n - 1 (n items).
 */
int eng__map_send(struct eng_ctl *c, const char *type, const uint8_t *bits, size_t len);
int eng__map_recv(struct eng_ctl *c, int timeout_ms, const char *type, size_t n, uint8_t *bits,
		  size_t len);

#endif
