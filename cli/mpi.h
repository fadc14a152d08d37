/*
 * mpi.h - private to cli/: what railcp-mpi (cli/mpi_main.c, built with
 * mpicc) does without MPI, so that unit tests reach it: the balance of one
 * walk's files over the ranks, each rank's share as a manifest, and that
 * share as bytes for MPI_Scatterv.
 */
#ifndef RAILCP_CLI_MPI_H
#define RAILCP_CLI_MPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "io/io.h"

struct cli_mpi_dirs; /* below: the directories a share carries */
struct cli_mpi_caps; /* below: what one session's list may hold */

/*
 * Greedy largest first: the items (bytes[i]) in decreasing size, each to
 * the rank with the fewest bytes so far (the fewest items on a tie, then
 * the lowest rank), so many empty files spread too. owner[i] gets item i's
 * rank, load[r] (n_ranks long) rank r's bytes. The largest rank is at most
 * the mean plus the largest item. -ENOMEM with a sentence, else 0.
 */
int cli_mpi_balance(const uint64_t *bytes, size_t n, unsigned n_ranks, unsigned *owner,
		    uint64_t *load);

/*
 * The balance's two steps, shared by cli_mpi_balance and cli_mpi_split
 * (mpi_ranges.c): items ordered by bytes, largest first (then by index), for
 * qsort; and the rank with the fewest bytes, then the fewest items or
 * pieces, then the lowest.
 */
struct cli_mpi_order {
	uint64_t bytes;
	size_t i;
};
int cli__mpi_by_bytes_down(const void *a, const void *b);
unsigned cli__mpi_lightest(const uint64_t *load, const size_t *count, unsigned n_ranks);

/*
 * Every rank's share of m: owner_out[i] (m->n long) is the rank of each
 * file and symlink (directories: cli_mpi_dirs_keep places them, each
 * session creating what its list holds), load (n_ranks long) each rank's
 * bytes. 0, or -ENOMEM.
 */
int cli_mpi_assign(const struct io_manifest *m, unsigned n_ranks, unsigned *owner_out,
		   uint64_t *load);

/*
 * ---- byte ranges (cli/mpi_ranges.c) ----
 *
 * A piece of an item: all of it (off 0, len its bytes), or a byte range
 * of a file cut at multiples of the chunk from its start.
 */
struct cli_mpi_piece {
	size_t item;	   /* the item's index (cli_mpi_assign_ranges: the entry's) */
	uint64_t off, len; /* its bytes within the item */
	unsigned owner;	   /* its rank */
};

/*
 * Items (bytes[i], n of them) balanced over n_ranks by bytes, largest
 * first, each to the lightest rank; an item that cuttable allows (NULL:
 * none) and that is larger than the room left in that rank's share (the
 * items' bytes over n_ranks, rounded up) is cut at a multiple of chunk
 * from its start, the rest going on to the next lightest. Every rank ends
 * within one chunk of the share when every item larger than a chunk may
 * be cut; at most about two cuts per rank. *pieces_out (malloc'd, *n_out
 * long, each item's pieces in order of offset) and load (n_ranks long:
 * each rank's bytes) are written on success; -EINVAL (no ranks, no chunk)
 * or -ENOMEM with a sentence.
 */
int cli_mpi_split(const uint64_t *bytes, const bool *cuttable, size_t n, unsigned n_ranks,
		  uint32_t chunk, struct cli_mpi_piece **pieces_out, size_t *n_out,
		  uint64_t *load_out);

/*
 * cli_mpi_split over m's files and symlinks (directories: cli_mpi_dirs_keep),
 * each piece's item an index into m->entry; a file of one extent from 0 to
 * its size may be cut (a sparse one travels whole, as its chunks start at
 * each extent). railcp-mpi's push uses it unless -u, -c, --partial or -n
 * (cli/mpi_land.c; see doc/design.md, railcp-mpi).
 */
int cli_mpi_assign_ranges(const struct io_manifest *m, unsigned n_ranks, uint32_t chunk,
			  struct cli_mpi_piece **pieces_out, size_t *n_out, uint64_t *load_out);

/* Whether e may be cut: a file of one extent from offset 0 to its end (its chunks start at 0). */
bool cli__mpi_dense(const struct io_entry *e);

/*
 * ---- the pool of batches (cli/mpi_pool.c) ----
 *
 * A job that may cut files keeps part of its bytes back from the ranks'
 * shares as a pool of batches, which rank 0 hands out, one at a time, to
 * whichever rank has finished what it holds (cli/mpi_steal.c). The job is
 * split over the ranks as without a pool (cli_mpi_assign_ranges), then
 * each rank's share again, as items of their own, over CLI_MPI_SLOTS
 * slots: the first CLI_MPI_SLOTS_KEPT stay the rank's, each of the others
 * is one batch. So a rank keeps 3/4 of its share (within a chunk a slot,
 * when what it holds may be cut; a large file that may not be stays with
 * it) and the pool holds a quarter of the job, in two batches per rank.
 */
#define CLI_MPI_SLOTS 8
#define CLI_MPI_SLOTS_KEPT 6

/* The pool's batches in a job of n_ranks ranks. */
unsigned cli_mpi_pool_batches(unsigned n_ranks);

/* Who holds rank's slot: the rank, or batch b as n_ranks + b. */
unsigned cli_mpi_slot_owner(unsigned rank, unsigned slot, unsigned n_ranks);

/*
 * The job's pieces as above, each piece's owner a rank or a batch
 * (cli_mpi_slot_owner), in order of item and offset, and the pieces of one
 * item that meet under one owner merged into one. load_out is n_ranks +
 * cli_mpi_pool_batches(n_ranks) long. The shares and batches are then
 * cli_mpi_share_pieces's with the owner's number, the cut files
 * cli_mpi_split_list's, as without a pool.
 */
int cli_mpi_pool_ranges(const struct io_manifest *m, unsigned n_ranks, uint32_t chunk,
			struct cli_mpi_piece **pieces_out, size_t *n_out, uint64_t *load_out);

/*
 * Rank 0's handing out of the n batches it kept (empty ones left out) to
 * the n_ranks ranks, every rank asking until it is told none is left:
 * take gives the next batch (each once, in order), or -1 (none left: that
 * rank asks no more); done says every rank has been told so.
 */
struct cli_mpi_pool {
	size_t n, next;
	unsigned n_ranks, told_none;
};
long cli_mpi_pool_take(struct cli_mpi_pool *p);
bool cli_mpi_pool_done(const struct cli_mpi_pool *p);

/*
 * Rank 0's batches packed: the pool's (owners n_ranks and up of pc, as
 * cli_mpi_pool_ranges gave them), each as cli_mpi_share_pieces cuts it with
 * d's directories, cut into lists within caps at chunk bytes a chunk
 * (cli_mpi_parts), each list a batch of its own (a batch of directories
 * only is left out): out->n batches, batch k cli_mpi_pack's bytes at
 * out->all + out->off[k], out->len[k] long. -EFBIG past 2 GiB in all (a
 * batch is one MPI message counted in an int), -ENOMEM, each with a
 * sentence; out is written on success only.
 */
struct cli_mpi_batches {
	char *all;
	int *off, *len;
	size_t n;
};
int cli_mpi_batches_pack(const struct io_manifest *m, const struct cli_mpi_piece *pc, size_t n_pc,
			 unsigned n_ranks, const struct cli_mpi_dirs *d,
			 const struct cli_mpi_caps *caps, uint32_t chunk,
			 struct cli_mpi_batches *out);

/* Accepts NULL; b is left empty. */
void cli_mpi_batches_fini(struct cli_mpi_batches *b);

/*
 * ---- landing the ranges (cli/mpi_land.c) ----
 *
 * Rank's share of cli_mpi_assign_ranges's pieces (pc, n_pc long) of m: the
 * items it holds a piece of, with the directories d gives it
 * (cli_mpi_dirs_keep; NULL: every directory of m); a cut item (in more than one
 * piece) as an entry flagged as ranges (io_entry's range), its extents the
 * rank's pieces of it (merged where they meet), its size the file's; the
 * directories first, then the ranges, then the rest (so the ranges are
 * sent first). 0, or -ENOMEM with a sentence.
 */
int cli_mpi_share_pieces(const struct io_manifest *m, const struct cli_mpi_piece *pc, size_t n_pc,
			 unsigned rank, const struct cli_mpi_dirs *d,
			 struct io_manifest **share_out);

/*
 * The job's cut files of m, whole (as walked), with the directories on
 * their way: what the session that puts them in place, or removes their
 * temporaries, names. Empty (n 0) when nothing was cut.
 */
int cli_mpi_split_list(const struct io_manifest *m, const struct cli_mpi_piece *pc, size_t n_pc,
		       struct io_manifest **split_out);

/* How many files split (NULL: none) names. */
size_t cli_mpi_split_files(const struct io_manifest *split);

/*
 * How many of share's cut files it holds no start of (their first range
 * past offset 0): a cut file counts as a file once, on the rank that sends
 * its start.
 */
size_t cli_mpi_ranges_later(const struct io_manifest *share);

/*
 * Rank's share: the entries owner gives it, with the directories d gives
 * it (cli_mpi_dirs_keep; NULL: every directory of m).
 */
int cli_mpi_share(const struct io_manifest *m, const unsigned *owner, unsigned rank,
		  const struct cli_mpi_dirs *d, struct io_manifest **share_out);

/*
 * A share as bytes: its encoding, then each entry's source path (NUL-ended),
 * device and inode (8 bytes each, this host's order); *buf_out is malloc'd.
 */
int cli_mpi_pack(const struct io_manifest *m, void **buf_out, size_t *len_out);

/* The share back from cli_mpi_pack's bytes, sources included; -EBADMSG with a sentence. */
int cli_mpi_unpack(const void *buf, size_t len, struct io_manifest **m_out);

/*
 * The most entries (and chunks) of one rank's session: IO_MANIFEST_MAX_ENTRIES,
 * or a test's lower RAILCP_TEST_SESSION_ENTRIES (doc/testing.md).
 */
size_t cli_mpi_session_max(void);

/* What one session's list may hold: entries, chunks, and memory to decode (io.h). */
struct cli_mpi_caps {
	size_t entries;
	uint64_t chunks;
	uint64_t memory;
};

/*
 * What a server takes in one session's list: IO_MANIFEST_MAX_ENTRIES
 * entries, IO_PLAN_MAX_CHUNKS chunks, IO_MANIFEST_MAX_MEMORY to decode.
 */
struct cli_mpi_caps cli_mpi_server_caps(void);

/*
 * A session's caps: cli_mpi_server_caps with at most cli_mpi_session_max()
 * entries and chunks (a test's lower cap lowers both).
 */
struct cli_mpi_caps cli_mpi_session_caps(void);

/*
 * Share cut into consecutive lists within caps (cli/mpi_parts.c): each at
 * most caps->entries entries and caps->chunks chunks of chunk bytes, and
 * at most caps->memory to decode (io_manifest_decoded_base and _cost,
 * exactly as io_manifest_decode counts it), each with the directories its
 * entries need, every directory of share in one of them; *n_out of them
 * in *parts_out (malloc'd, each for io_manifest_destroy). An entry that
 * with its directories exceeds the caps alone is a part of its own.
 */
int cli_mpi_parts(const struct io_manifest *share, const struct cli_mpi_caps *caps, uint32_t chunk,
		  struct io_manifest ***parts_out, size_t *n_out);

/*
 * ---- the directories a share carries (cli/mpi_dirs.c) ----
 *
 * The job's directories placed once: parent[i], the index of entry i's
 * directory (cli__mpi_parents); home[i], for a directory no file or
 * symlink of the job lies beneath, the rank whose share carries it (the
 * walk's order cut into n_ranks runs), UINT_MAX for every other entry.
 * Only a leaf empty directory is in exactly one share: one holding other
 * empty directories is also on the way to them, so each rank homing one
 * beneath it carries it too (its session makes it again: EEXIST, no harm).
 */
struct cli_mpi_dirs {
	size_t *parent;
	unsigned *home;
};

/* d for job m over n_ranks: 0, or -ENOMEM (-EINVAL: no ranks) with a sentence. */
int cli_mpi_dirs_init(struct cli_mpi_dirs *d, const struct io_manifest *m, unsigned n_ranks);

/* Accepts NULL and a d already finished. */
void cli_mpi_dirs_fini(struct cli_mpi_dirs *d);

/*
 * keep (m->n long) gains what owner's list carries besides its entries:
 * the directories homed at owner (a rank's number; a batch's has none),
 * then every directory on the way to a kept entry. d NULL: every
 * directory of m.
 */
void cli_mpi_dirs_keep(const struct cli_mpi_dirs *d, const struct io_manifest *m, unsigned owner,
		       bool *keep);

/*
 * Whether the entries of m that keep (m->n long) marks fit one session's
 * list within caps: their count, their memory to decode
 * (io_manifest_decoded_base and _cost) and their encoded bytes
 * (io_manifest_entry_len, within caps->memory too: the engine takes a list
 * of at most 1 GiB, as IO_MANIFEST_MAX_MEMORY). The job's last session
 * carries its directories so (cli__mpi_land_dirs_pick).
 */
bool cli_mpi_list_fits(const struct io_manifest *m, const bool *keep,
		       const struct cli_mpi_caps *caps);

/*
 * Each entry's directory in m: parent[i] (m->n long) its index, SIZE_MAX
 * for an entry at the top (or whose directory m does not hold). -ENOMEM
 * without a sentence.
 */
int cli__mpi_parents(const struct io_manifest *m, size_t *parent);

/*
 * Share's parts (cli_mpi_parts) packed one after another, each behind its
 * 8-byte length, each packed as it is cut (one part decoded at a time).
 */
int cli_mpi_pack_parts(const struct io_manifest *share, const struct cli_mpi_caps *caps,
		       uint32_t chunk, void **buf_out, size_t *len_out);

/*
 * The next part of cli_mpi_pack_parts's bytes from *at (to end), *at moved
 * past it; *part_out NULL at the end. -EBADMSG with a sentence.
 */
int cli_mpi_unpack_next(const char **at, const char *end, struct io_manifest **part_out);

/* A server of the job: HOST, or HOST:PORT (port 0: the copy's --port). */
struct cli_mpi_server {
	char host[256];
	uint16_t port;
};

/*
 * The destination argument HOSTS:DST: HOSTS is h1,h2,... (each HOST or
 * HOST:PORT) or @FILE (a file of such servers, separated by commas,
 * spaces or lines; # starts a comment). *servers_out (malloc'd, *n_out
 * long) and *dst_out (points into arg). CLI_EXIT_USAGE after one line.
 */
int cli_mpi_servers(const char *arg, struct cli_mpi_server **servers_out, size_t *n_out,
		    const char **dst_out);

/*
 * ---- failover (cli/mpi_move.c) ----
 *
 * What a session's error (a negative errno from eng_copy_run) says of its
 * server: gone (its connection refused, reset or closed), not gone (a
 * refusal for a reason of the copy's own), or either (-EIO: the fabric's
 * "every rail failed" or a local disk; -ECONNABORTED: the server's refusal
 * or its shutdown; -ETIMEDOUT: a dead host, a slow server or a stalled
 * local disk; an unreachable host or network, or a socket no longer
 * connected: the server's host or this rank's own interface), which
 * cli_mpi_probe settles.
 */
enum cli_mpi_gone {
	CLI_MPI_NOT_GONE,
	CLI_MPI_GONE,
	CLI_MPI_GONE_ASK,
};
enum cli_mpi_gone cli_mpi_server_gone(int err);

/*
 * The server (an index below n_srv) rank takes after its moves-th move (0:
 * its home, rank mod n_srv; 1 to n_srv - 1: every other server once, the
 * ranks of one home spread evenly over the others).
 */
size_t cli_mpi_next_server(unsigned rank, size_t n_srv, unsigned moves);

/*
 * Whether something accepts a TCP connection at host:port and keeps it
 * open: 0, else -errno (-ETIMEDOUT: no answer within budget_ms, which
 * bounds the whole probe, every address of host and every wait).
 */
int cli_mpi_probe(const char *host, uint16_t port, int budget_ms);

/*
 * ---- pulls (cli/mpi_pull.c) ----
 *
 * Rank 0 lists each source with a dry-run pull; the sources' files,
 * symlinks and empty directories are the items (a source that is no
 * directory is one item, pulled whole: rel ""), balanced by bytes with
 * cli_mpi_balance; each rank pulls its items of each source with them as
 * --files-from. Directories on the way are made by each rank's session
 * (mkdir of an existing directory succeeds), so ranks need no order.
 */
struct cli_mpi_item {
	uint32_t src; /* the source's index */
	char *rel;    /* beneath the source's top; "": the source whole */
	uint64_t bytes;
};

/* One source of a pull, as rank 0's dry run listed it. */
struct cli_mpi_source {
	struct io_manifest *m; /* the list as it would land */
	uint8_t *why;	       /* m->n long: how the destination differed (enum io_diff) */
	bool has_top;	       /* the source lands under a name of its own */
	const char *name;      /* as the command line gave it */
};

struct cli_mpi_pull {
	struct cli_mpi_item *item;
	size_t n, cap;
	struct cli_mpi_source *src;
	size_t n_src;
};

/* Accepts NULL; p is left empty. */
void cli_mpi_pull_free(struct cli_mpi_pull *p);

/*
 * Append source src's items from its dry run's list m (has_top: m's first
 * component is its name). A path a --files-from cannot hold (not UTF-8, a
 * control character) gives its nearest directory that it can, whole (the
 * source whole if there is none).
 */
int cli_mpi_pull_items(struct cli_mpi_pull *p, uint32_t src, const struct io_manifest *m,
		       bool has_top);

/* Whether each rank's share of each source fits in one --files-from; -E2BIG with a sentence. */
int cli_mpi_pull_fits(const struct cli_mpi_pull *p, const unsigned *owner, unsigned n_ranks);

/*
 * Rank 0: each of o's sources listed by a dry-run pull into o's dst, one
 * session each (o->dry_run and its callback are replaced), into p.
 */
int cli_mpi_pull_list(const struct eng_copy_opts *o, struct cli_mpi_pull *p);

/* Rank's items (owner[i] == rank) as bytes: per item, its source (4 bytes) and rel, NUL-ended. */
int cli_mpi_pull_pack(const struct cli_mpi_pull *p, const unsigned *owner, unsigned rank,
		      void **buf_out, size_t *len_out);

/* What one rank pulls of one source: the source whole, or the paths its filter lists. */
struct cli_mpi_task {
	bool whole;
	struct io_filter *filter; /* NULL: nothing listed */
};

/* A share's bytes back as n_src tasks (t, n_src long); -EBADMSG or the filter's error. */
int cli_mpi_pull_unpack(const void *buf, size_t len, size_t n_src, struct cli_mpi_task *t);

/* Accepts NULL. */
void cli_mpi_tasks_free(struct cli_mpi_task *t, size_t n_src);

/*
 * Rank 0, after every rank's pull (-p): the mode and mtime of each
 * directory the job made (not there before it), deepest first, as one
 * session sets those it made. Every listed directory lands beneath dst
 * under its listed path: a directory or contents is only ever pulled into
 * a DST that is a directory (rank 0 makes a missing one first).
 */
int cli_mpi_pull_dirs(const struct cli_mpi_pull *p, const char *dst);

/*
 * Rank 0, right after its walk m: whether the packed shares can fit at all,
 * each entry of m being packed in one share at least (or, with the pool,
 * in one batch), 2 GiB in one MPI scatter and as much again in the pool's
 * batches; else -EFBIG with a sentence, before any share is packed.
 */
int cli_mpi_scatter_fits(const struct io_manifest *m, bool pool);

/*
 * railcp-mpi --delete, before any rank moves a byte: whether the pass that
 * deletes after the ranks, one session of the whole job (the n lists it
 * will hold as one, at chunk bytes a chunk), fits caps (a server's:
 * cli_mpi_server_caps): its entries, its chunks, and the memory to decode
 * the one list (io_manifest_decoded_base of all the entries plus each
 * entry's io_manifest_decoded_cost); else -EFBIG with a sentence.
 */
int cli_mpi_delete_fits(const struct io_manifest *const *m, size_t n,
			const struct cli_mpi_caps *caps, uint32_t chunk);

#endif
