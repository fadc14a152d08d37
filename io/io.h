/*
 * io.h - files and datasets: the manifest of what travels, the chunk plan,
 * the sender's reader and the receiver's confined, atomic writer.
 *
 * The flow of one copy:
 *   sender:   io_manifest_walk -> io_manifest_encode -> (control connection)
 *             io_plan_create; per chunk io_rfile_open/io_chunk_read
 *   receiver: io_manifest_decode -> io_root_open; in manifest order
 *             io_root_mkdir / io_root_symlink / io_wfile_open; per chunk
 *             io_chunk_write; per complete file io_wfile_finalize; at the
 *             end io_root_dirs_finish (directory metadata, deepest first).
 * Both sides call io_plan_create on the same manifest with the same chunk
 * size and get the same chunks, so a chunk is named by (file, offset, len).
 *
 * Naming (rsync's rule for SRC... DIR with DIR an existing directory):
 * every SRC lands beneath the destination root under its own last name:
 * `a/b/file` -> `file`, `a/dir` -> `dir`, `dir/sub/x` -> `dir/sub/x`. A SRC
 * ending in "/", or whose last name is "." or "..", has no name of its own:
 * its contents land directly at the root (as `rsync -r dir/ DIR` does). To
 * have the single SRC called NEW, pass as_name = NEW's last name (a
 * directory's contents land under as_name).
 *
 * Every path is bytes (no encoding assumed, no NUL), relative, with no empty,
 * "." or ".." component, at most IO_PATH_MAX - 1 bytes and IO_NAME_MAX per
 * component, and no component that starts with ".railcp-tmp-" (the
 * receiver's temporary files: walks skip them, a peer's are refused).
 * Symlinks are recorded as links and never followed, also at the top level
 * (cp -r does the same). Other file types (fifos, sockets, devices) are
 * skipped with a notice. Hard links arrive as separate files.
 *
 * Errors: every function returns 0 or a negative errno and records one
 * sentence with rcp_err where the error is first seen.
 *
 * Threading: manifests and plans are immutable once built and may be read
 * from any thread. io_chunk_read and io_chunk_write are thread-safe on one
 * handle (pread/pwrite at offsets, atomic accounting); everything else on a
 * handle is single-threaded.
 */
#ifndef RAILCP_IO_H
#define RAILCP_IO_H

#include <linux/openat2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IO_PATH_MAX 4096	/* PATH_MAX: a path, with its NUL */
#define IO_NAME_MAX 255		/* NAME_MAX: one component */
#define IO_CHUNK_MAX (1u << 30) /* largest chunk io_plan_create accepts */
#define IO_DIRECT_ALIGN 4096u	/* O_DIRECT offsets, lengths and buffers */

/* ---- the manifest ---- */

enum io_type {
	IO_FILE = 1,
	IO_DIR = 2,
	IO_SYMLINK = 3,
};

struct io_extent {
	uint64_t off;
	uint64_t len;
};

struct io_entry {
	char *path; /* relative to the destination root, NUL-terminated */
	char *src;  /* sender only: where to read it, relative to the walk's root
		     * if it had one (NULL after decode) */
	char *link; /* symlink target, else NULL */
	enum io_type type;
	uint32_t mode;	       /* permission bits, & 07777 */
	int64_t mtime_ns;      /* since the epoch */
	uint64_t size;	       /* file: bytes; symlink: target length; dir: 0 */
	struct io_extent *ext; /* file: data extents, sorted, disjoint, inside size */
	uint32_t n_ext;
	/*
	 * Local to each side, never encoded: the receiver holds it already
	 * (io_root_holds), so it gets no chunks and is left alone.
	 */
	bool skip;
	uint64_t data_bytes; /* file: sum of the extents' lengths */
	/*
	 * File: the extents are byte ranges of a file of size bytes that other
	 * entries (other sessions' manifests) carry the rest of, received into
	 * the job's temporary (io_wfile_range) and put in place once
	 * (io_root_range_place). Encoded (the entry's flag IO_ENTRY_RANGE).
	 */
	bool range;
	/*
	 * Sender only, never encoded (0 after decode): the walk's device and
	 * inode, so a file replaced by another of the same size and time
	 * between the walk and its read is not taken for it.
	 */
	uint64_t dev, ino;
};

struct io_manifest {
	struct io_entry *entry; /* directories before their contents */
	size_t n;
	size_t cap;
	uint64_t data_bytes; /* over all files */
	uint64_t n_files;    /* regular files */
};

enum {
	/* descend into directory SRCs (cp -r); else they are an error */
	IO_WALK_RECURSIVE = 1u << 0,
	/*
	 * more entries than one session's list may hold, up to
	 * IO_WALK_LARGE_MAX_ENTRIES: railcp-mpi's rank 0, which cuts the walk
	 * into lists of at most IO_MANIFEST_MAX_ENTRIES before any session
	 */
	IO_WALK_LARGE = 1u << 1,
};
#define IO_WALK_LARGE_MAX_ENTRIES ((size_t)1 << 31)

struct io_root;

/*
 * Walk n_src source paths (files, directories, symlinks) into a new
 * manifest. root NULL: the paths are this user's own, resolved as usual.
 * root set (a server answering a pull, the paths a peer's): each path must
 * be relative and valid ("." or "" for the root itself) and is resolved
 * beneath root like everything the receiver creates; entries' src are then
 * relative to root, for io_rfile_open with the same root. as_name (NULL
 * normally) renames a single SRC, see "Naming". Two SRCs with the same last
 * name are an error (-EEXIST).
 */
int io_manifest_walk(const struct io_root *root, const char *const *src, size_t n_src,
		     unsigned flags, const char *as_name, struct io_manifest **m_out);

/* Accepts NULL. */
void io_manifest_destroy(struct io_manifest *m);

/*
 * ---- what a walk leaves out (--exclude, --include, --files-from) ----
 *
 * Rules and listed paths are matched against an entry's path beneath the
 * top of its source (a directory source's own name not included); what a
 * source names on the command line is never filtered. Rules, as rsync
 * reads them: a glob (fnmatch(3)) on the entry's last name; a trailing '/'
 * matches directories only; a leading '/' anchors the glob at the source's
 * top; a glob with a '/' inside matches that many trailing components; "**"
 * crosses slashes. The first rule that matches decides; an excluded
 * directory is not entered. With listed paths (--files-from) the one
 * source must be a directory, and an entry travels when it is listed, on
 * the way to one listed, or (recursive) beneath a listed directory. Every
 * pattern and path is UTF-8 without control characters, shorter than
 * IO_PATH_MAX; a listed path is relative (a leading "/" or "./" is taken
 * off) with no "." or ".." component. Threading: built by one thread, then
 * read-only.
 */
struct io_filter;

#define IO_FILTER_MAX_RULES 1024
#define IO_FILTER_MAX_STARS 16 /* per pattern: fnmatch backtracks */
#define IO_FILTER_MAX_PATHS 1000000
#define IO_FILTER_MAX_BYTES (64 << 20) /* encoded, as it travels to a pull's server */

int io_filter_create(struct io_filter **f_out);

/* Accepts NULL. */
void io_filter_destroy(struct io_filter *f);

/* Add a rule (after those before it); -EINVAL or -E2BIG with a sentence. */
int io_filter_rule(struct io_filter *f, bool include, const char *pattern);

/* Add a --files-from path; -EINVAL or -E2BIG with a sentence. */
int io_filter_path(struct io_filter *f, const char *path);

/* Why path (as a walk names it) cannot be listed as it is (not UTF-8, ...); NULL if it can. */
const char *io_filter_path_problem(const char *path);

/* After the last rule and path, before matching: the paths sorted, each once; -ENOMEM. */
int io_filter_finish(struct io_filter *f);

/* Whether f (NULL: none) lists paths, how many, and the i-th (sorted). */
bool io_filter_has_paths(const struct io_filter *f);
size_t io_filter_n_paths(const struct io_filter *f);
const char *io_filter_path_at(const struct io_filter *f, size_t i);

/* Whether the rules leave out the entry at rel (beneath its source's top). */
bool io_filter_excluded(const struct io_filter *f, const char *rel, bool is_dir);

/* The filter as bytes for a pull's server, and back: the peer's is checked as above. */
int io_filter_encode(const struct io_filter *f, void **buf_out, size_t *len_out);
int io_filter_decode(const void *buf, size_t len, struct io_filter **f_out);

/*
 * io_manifest_walk through filter f (NULL: none). With listed paths, one
 * listed that the walk did not find is -ENOENT with a sentence.
 */
int io_manifest_walk_filtered(const struct io_root *root, const char *const *src, size_t n_src,
			      unsigned flags, const char *as_name, const struct io_filter *f,
			      struct io_manifest **m_out);

/*
 * A deep copy of the entries of m with keep[i] set (keep NULL: all of
 * them), in m's order, sources, devices and inodes included: a share of
 * one walk for another session (railcp-mpi). Keep each kept entry's parent
 * directories too, or the receiver refuses the list.
 */
int io_manifest_pick(const struct io_manifest *m, const bool *keep, struct io_manifest **m_out);

/*
 * io_manifest_pick of the n entries at[0..n) of m, in that order (give
 * them in m's order, parents included), in time of n rather than m->n.
 */
int io_manifest_pick_at(const struct io_manifest *m, const size_t *at, size_t n,
			struct io_manifest **m_out);

/*
 * The receiver's half of `cp SRC NEW` when NEW does not exist: give the one
 * top-level entry of m (and so everything beneath it) the name `name`.
 * -EINVAL if m has several top-level entries or name is not one valid
 * component; m is unchanged on failure. Not thread-safe on m.
 */
int io_manifest_rename_top(struct io_manifest *m, const char *name);

/*
 * The manifest as bytes for the control connection (little-endian, length-
 * prefixed fields, versioned; sources are not included). *buf_out is
 * malloc'd, the caller frees it.
 */
int io_manifest_encode(const struct io_manifest *m, void **buf_out, size_t *len_out);

/* The bytes entry e takes in io_manifest_encode's output (a header takes 16 more). Thread-safe. */
size_t io_manifest_entry_len(const struct io_entry *e);

/*
 * What one manifest may cost, so that a peer's file list costs a receiving
 * session a bounded amount: at most IO_MANIFEST_MAX_ENTRIES entries (as many
 * as IO_PLAN_MAX_CHUNKS chunks), and at most IO_MANIFEST_MAX_MEMORY bytes of
 * memory to decode, counted as io_manifest_decode allocates: the entries
 * (72 bytes each), every name, symlink target and extent array as glibc's
 * malloc sizes it, and the duplicate check's table (16 to 32 bytes per
 * entry). 4,194,304 files of one extent each fit if their paths average at
 * most about 120 bytes; fewer entries may have longer paths.
 *
 * Worst case per receiving session: while it decodes, the encoded list
 * (at most 1 GiB, the engine's limit on what it receives) and at most
 * IO_MANIFEST_MAX_MEMORY decoded, 2 GiB in all; afterwards the decoded
 * manifest (at most 1 GiB, less its table) and its chunk plan (at most 96
 * MiB, IO_PLAN_MAX_CHUNKS). Before these limits the decoded form of a 1 GiB
 * list of tiny entries could take about 7 GiB.
 */
#define IO_MANIFEST_MAX_ENTRIES ((size_t)1 << 22)
#define IO_MANIFEST_MAX_MEMORY (1ull << 30)

/*
 * What decoding a list costs against IO_MANIFEST_MAX_MEMORY, exactly as
 * io_manifest_decode counts it, so a sender can cut a long list into lists
 * that each fit: a list of n entries costs io_manifest_decoded_base(n) (the
 * manifest, its entry array and the duplicate check's table) plus
 * io_manifest_decoded_cost of each entry (its name, a symlink's target, a
 * file's extent array). Thread-safe.
 */
uint64_t io_manifest_decoded_cost(const struct io_entry *e);
uint64_t io_manifest_decoded_base(size_t n);

/*
 * Parse bytes from a peer, who may be hostile: anything malformed is
 * -EBADMSG (or -EPROTONOSUPPORT for another version) with one sentence
 * naming the entry and, for bad names, the name printably escaped; more
 * than IO_MANIFEST_MAX_ENTRIES entries or IO_MANIFEST_MAX_MEMORY of memory
 * is -EFBIG, refused before it is allocated. Accepted manifests have valid
 * names, each parent a directory entry listed before it, no duplicate path,
 * and extents sorted, disjoint and inside the size. The duplicate check
 * costs O(1) per name whatever names the peer chose (keyed hashing, see
 * io/hash.c). Thread-safe.
 */
int io_manifest_decode(const void *buf, size_t len, struct io_manifest **m_out);

/*
 * ---- names by rsync's rule ----
 *
 * Pure decisions on strings and counts: no file system access, no
 * allocation; the caller tries the file system and passes the outcome in
 * (see io_dest_decide). All thread-safe; an error records its sentence in
 * the calling thread.
 */

/*
 * Whether any of the n_src sources has no name of its own ("", "/", ".",
 * "..", "dir/.", "dir/..", and, as rsync reads it, "dir/"): the copy holds
 * that source's contents, not the source, so a missing destination is made
 * to receive them.
 */
bool io_src_contents_only(const char *const *src, size_t n_src);

/*
 * A pull takes from the server only what was asked for by the n_src
 * requested sources: every top-level entry of m (a peer's, decoded) must be
 * the last name of one of them, exactly, and a directory entry anywhere is
 * refused without recursive (-r). When any source has no name of its own
 * ("HOST:", "HOST:dir/" or "HOST:dir/."), it asks for its contents, whatever their names:
 * then only the -r rule applies. -EPROTO with a sentence naming the entry
 * (escaped by io_path_printable).
 */
int io_pull_names_check(const char *const *src, size_t n_src, bool recursive,
			const struct io_manifest *m);

/* The number of top-level entries of m (paths without a slash). */
size_t io_manifest_top_count(const struct io_manifest *m);

/* m has exactly one top-level entry, and it is not a directory. */
bool io_manifest_one_file(const struct io_manifest *m);

/*
 * The path to try to open as the destination directory: dst without its
 * trailing slashes ("dir/" is "dir", "/" stays "/"), and "" is ".".
 * -ENAMETOOLONG if that is IO_PATH_MAX bytes or more.
 */
int io_dest_path(const char *dst, char path_out[IO_PATH_MAX]);

enum io_dest_kind {
	IO_DEST_INTO = 1, /* dst is a directory: each top-level entry lands in it, named as is */
	IO_DEST_MKDIR =
		2, /* make directory `name` inside `dir`; the top-level entries land in it */
	IO_DEST_RENAME = 3, /* rename the one top-level entry to `name` and land it in `dir` */
};

struct io_dest {
	enum io_dest_kind kind;
	char dir[IO_PATH_MAX];	/* the directory to open as the root (INTO: io_dest_path's) */
	char name[IO_PATH_MAX]; /* MKDIR, RENAME: one name, never "", "." or ".."; INTO: "" */
};

/*
 * Where a copy lands at dst, by rsync's rule. open_err is the outcome of
 * opening io_dest_path(dst) as a directory (0 or a negative errno);
 * contents is io_src_contents_only of the copy's sources; one_file is
 * io_manifest_one_file of its manifest. The cases, in order:
 *  - open_err 0: dst is a directory: IO_DEST_INTO, dir = io_dest_path(dst).
 *  - open_err neither -ENOENT nor -ENOTDIR: returned as is.
 *  - dst's last name (trailing slashes stripped) is "", "." or ".." (dst
 *    "", "/", "x/.", "x/.."): open_err returned as is, nothing to name.
 *  - one_file, not contents, dst without a trailing slash (-ENOENT, or
 *    -ENOTDIR: a file dst is replaced): IO_DEST_RENAME of the file to dst's
 *    last name, in its parent.
 *  - -ENOENT otherwise (a directory, several sources, contents, or dst
 *    ending in "/"): IO_DEST_MKDIR of dst's last name inside its parent;
 *    the copy's top-level entries land in it as they are named.
 *  - -ENOTDIR otherwise: -ENOTDIR, "the destination "dst" is not a
 *    directory, which it must be to receive ...".
 * So whether dst existed never changes the name a directory lands under:
 * "railcp -r dir HOST:new" makes new/dir, and so does the same command
 * run again. The parent is the part of dst before its last slash:
 * "a/b/new/" -> "a/b", "/new" -> "/", "new" -> "."; "a//new" -> "a/" (only
 * the last slash is cut). In the two first error cases the opener's
 * sentence stands; on success after a failed open, the calling thread's
 * sentence is cleared (the failure was the expected answer). -ENAMETOOLONG
 * as io_dest_path. *dest_out is written only on success.
 */
int io_dest_decide(const char *dst, bool contents, int open_err, bool one_file,
		   struct io_dest *dest_out);

/* ---- the chunk plan ---- */

struct io_chunk {
	uint64_t file; /* index into the manifest's entries */
	uint64_t offset;
	uint32_t len; /* 1 .. chunk size; never crosses an extent */
};

struct io_plan {
	struct io_chunk *chunk;
	uint64_t n;
	uint32_t chunk_size;
};

/*
 * The most chunks a plan may have (24 bytes each): sizes come from a peer,
 * and a few bytes of manifest must not make us allocate gigabytes. At 1 MiB
 * chunks it is a copy of 4 TiB.
 */
#define IO_PLAN_MAX_CHUNKS (1ull << 22)

/*
 * Cut every file's data extents into chunks of at most chunk bytes (1 ..
 * IO_CHUNK_MAX), leaving out the entries marked skip; -EFBIG beyond
 * IO_PLAN_MAX_CHUNKS.
 */
int io_plan_create(const struct io_manifest *m, uint32_t chunk, struct io_plan **plan_out);

/* The chunks io_plan_create would cut of m (1 <= chunk), counted without allocating. */
uint64_t io_plan_count(const struct io_manifest *m, uint32_t chunk);

/* Accepts NULL. */
void io_plan_destroy(struct io_plan *plan);

/*
 * The smallest multiple of unit (a power of two) that holds m's largest data
 * extent, or chunk if that is smaller: with it every extent is one chunk, as
 * with chunk itself when each is smaller than chunk, so the plan's chunks are
 * the same and only the slots that hold them shrink. At least unit.
 */
uint32_t io_plan_chunk_fit(const struct io_manifest *m, uint32_t chunk, uint32_t unit);

/* Room for a name escaped by io_path_printable (longer names are cut with "..."). */
#define IO_ESC_MAX 160

/*
 * path with every byte outside printable ASCII, and the backslash, as \xNN,
 * in out; returns out. For messages about names that came from anywhere.
 */
const char *io_path_printable(const char *path, char out[IO_ESC_MAX]);

/* ---- integrity ---- */

/*
 * A chunk's integrity hash: CRC-64/XZ (ECMA-182 polynomial, reflected, as xz
 * uses it) of len bytes, with ISA-L. Chosen by tests/bench/bench_hash: it
 * runs as fast as CRC-32C (the same carry-less multiply code) with twice the
 * bits; see doc/benchmarks.md. Thread-safe.
 */
uint64_t io_chunk_hash(const void *buf, size_t len);

/* ---- one step of file I/O ---- */

/*
 * What a chunk's file side asks of the kernel, one system call at a time, so
 * that a ring (engine/datapath/ioring.c) can do it as well as io_op_run:
 * the read or write of a chunk, the opens of a file of one chunk, and the
 * fsyncs and rename that put a received file in place (see
 * io_rfile_open_start, io_wfile_open_start and io_wfile_finalize_start).
 */
enum io_op_kind {
	IO_OP_NONE,   /* nothing to do */
	IO_OP_READ,   /* pread of len bytes at off of fd */
	IO_OP_WRITE,  /* pwrite of len bytes at off of fd */
	IO_OP_OPEN,   /* openat2(fd, path, &how): the new descriptor */
	IO_OP_RENAME, /* renameat(fd, path, fd2, path2): 0 */
	IO_OP_FSYNC,  /* fsync(fd): 0 */
};

struct io_op {
	enum io_op_kind kind;
	int fd; /* READ, WRITE: the file; OPEN, RENAME: the directory path is in */
	uint64_t off;
	uint32_t len;
	const char *path;
	int fd2;	     /* RENAME: the directory of path2 */
	const char *path2;   /* RENAME: the new name */
	struct open_how how; /* OPEN */
};

/*
 * Do op here and now. A read or write moves len bytes into or from buf, again
 * after a short count, until done, the end of the file (a read) or an
 * error: the bytes moved, or -errno. An open is the descriptor or -errno, a
 * rename or fsync 0 or -errno, nothing 0. Thread-safe.
 */
int64_t io_op_run(const struct io_op *op, void *buf);

/* ---- the sender's files ---- */

enum {
	IO_DIRECT = 1u << 0,	  /* O_DIRECT where offset, length and buffer are aligned */
	IO_DIRECT_AUTO = 1u << 1, /* IO_DIRECT for the files io_direct_pays picks */
};

/*
 * The smallest file --direct's default (auto) reads and writes with O_DIRECT:
 * below it the second descriptor's open costs about what the saved copy
 * does, and a small file is often read again soon (doc/benchmarks.md,
 * "--direct by default").
 */
#define IO_DIRECT_MIN (8u << 20)

/*
 * --direct's default: whether a file of size bytes on a file system of that
 * kind (memfs: tmpfs or ramfs, whose O_DIRECT copies as a buffered call does)
 * is read or written with O_DIRECT. Thread-safe.
 */
bool io_direct_pays(uint64_t size, bool memfs);

struct io_rfile;

/*
 * Open entry e (a regular file, read at e->src: beneath root when root is
 * not NULL, see io_manifest_walk) for io_chunk_read; e must outlive the
 * handle.
 */
int io_rfile_open(const struct io_root *root, const struct io_entry *e, unsigned flags,
		  struct io_rfile **f_out);

/*
 * Read len bytes at off into buf and compute their io_chunk_hash. With IO_DIRECT,
 * buf must be IO_DIRECT_ALIGN-aligned and have room for len rounded up to
 * IO_DIRECT_ALIGN. A file that got shorter since the walk is -EIO with a
 * sentence. Thread-safe.
 */
int io_chunk_read(struct io_rfile *f, uint64_t off, uint32_t len, void *buf, uint64_t *hash_out);

/*
 * io_chunk_read in two halves, for callers that do the read themselves (a
 * ring): _start checks the chunk and says in *op what to read into buf
 * (with IO_DIRECT possibly more than len); _end judges got, the bytes the
 * read returned (or -errno). Thread-safe.
 */
int io_chunk_read_start(struct io_rfile *f, uint64_t off, uint32_t len, const void *buf,
			struct io_op *op);
int io_chunk_read_end(struct io_rfile *f, uint64_t off, uint32_t len, int64_t got);

/*
 * Between the halves: whether got, what op's read returned, is the kernel
 * refusing a direct read (EINVAL: an alignment the file system wants and
 * did not say). Then f reads through the page cache from now on, and the
 * caller redoes the chunk: io_chunk_read_start again. O_DIRECT is never a
 * reason to fail. Thread-safe.
 */
bool io_chunk_read_redo(struct io_rfile *f, const struct io_op *op, int64_t got);

/*
 * io_rfile_open in two halves around its one call that may block, so a ring
 * can do it: _start checks e and says in *op how to open it; _end takes
 * res, what the open returned (a descriptor or -errno), checks that what it
 * opened is still the file the walk saw, and makes the handle (a descriptor
 * it refuses is closed). op must be _start's.
 */
int io_rfile_open_start(const struct io_root *root, const struct io_entry *e, struct io_op *op);
int io_rfile_open_end(const struct io_root *root, const struct io_entry *e, unsigned flags,
		      const struct io_op *op, int64_t res, struct io_rfile **f_out);

/*
 * After the last read of f: whether the file is still as the walk listed it
 * (size, mtime). A write while it was read (grown, rewritten in place, cut
 * short after its last chunk) changes its mtime: -ESTALE with a sentence,
 * and what was read of it must not be put in place.
 */
int io_rfile_unchanged(const struct io_rfile *f);

/* Whether f has an O_DIRECT descriptor (its aligned chunks are read with it). */
bool io_rfile_direct(const struct io_rfile *f);

/* Accepts NULL. */
void io_rfile_close(struct io_rfile *f);

/* ---- a root nothing escapes (the receiver's, or a server's for pulls) ---- */

enum {
	IO_ROOT_KEEP_META = 1u << 0, /* cp -p: apply mode (without setuid/setgid) and mtime
				      * (of directories, only those the copy made) */
	IO_ROOT_FSYNC = 1u << 1,     /* fsync each file (and its directory) when finalized */
	IO_ROOT_DIRECT = 1u << 2,    /* O_DIRECT for aligned chunks */
	IO_ROOT_PARTIAL = 1u << 3,   /* keep what an interrupted copy received (partial.c) */
	IO_ROOT_CHECKSUM =
		1u << 4,	 /* with PARTIAL, -c: a file starts as its old self (checksum.c) */
	IO_ROOT_DRY = 1u << 5,	 /* with PARTIAL, -n: what a cut copy kept (and with CHECKSUM,
				  * the old files) only read, nothing made */
	IO_ROOT_SPARE = 1u << 6, /* with PARTIAL, not asked for (a copy that may go on over
				  * tcp): a partial name already taken is left alone */
	IO_ROOT_DIRECT_AUTO = 1u << 7, /* IO_ROOT_DIRECT for the files io_direct_pays picks */
};

/*
 * Open dir (an existing directory) as the root of everything the receiver
 * creates. Every later path is resolved beneath it with openat2
 * (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so "..", absolute paths and
 * symlinks leading out are refused, races included. Reads the umask (not
 * thread-safe against other umask callers).
 */
int io_root_open(const char *dir, unsigned flags, struct io_root **root_out);

/*
 * Open rel (a peer's destination, e.g. DST of `railcp SRC HOST:DST`) beneath
 * parent as a root of its own with the same flags; "" and "." are parent
 * itself. Symlinks are followed only while they stay beneath parent.
 */
int io_root_open_beneath(const struct io_root *parent, const char *rel, struct io_root **root_out);

/* Replace the IO_ROOT_* flags of root (e.g. one session's options on a server's root). */
void io_root_set_flags(struct io_root *root, unsigned flags);

/* Accepts NULL. */
void io_root_close(struct io_root *root);

/*
 * Create directory e->path (owner rwx added while it is filled; an existing
 * directory is reused, and left as it is). Its metadata waits for
 * io_root_dirs_finish; with IO_ROOT_KEEP_META the root remembers that it
 * made it.
 */
int io_root_mkdir(struct io_root *root, const struct io_entry *e);

/*
 * Whether root already holds entry e as the copy would leave it, so that it
 * need not travel (the quick check of --update): a regular file of e's size
 * and e's mtime to the nanosecond, or a symlink to e's target. Never for a
 * directory; false when anything is in the way (a name that leads out of
 * the root, a missing parent): the copy then tells. Thread-safe.
 */
bool io_root_holds(const struct io_root *root, const struct io_entry *e);

/* How what root holds at e->path differs from entry e (--dry-run says why it would travel). */
enum io_diff {
	IO_DIFF_SAME = 0,  /* a file of e's size and mtime, a symlink to e's target, a directory */
	IO_DIFF_NEW = 1,   /* nothing there (or no way to it) */
	IO_DIFF_TYPE = 2,  /* something of another type */
	IO_DIFF_SIZE = 3,  /* a file of another size */
	IO_DIFF_MTIME = 4, /* a file of e's size, modified at another time */
	IO_DIFF_LINK = 5,  /* a symlink to another target */
};
#define IO_DIFF_MAX IO_DIFF_LINK

/* root NULL: IO_DIFF_NEW. Thread-safe. */
enum io_diff io_root_compare(const struct io_root *root, const struct io_entry *e);

/* "new", "size differs", ... */
const char *io_diff_str(enum io_diff d);

/* Create symlink e->path -> e->link, atomically replacing a non-directory there. */
int io_root_symlink(struct io_root *root, const struct io_entry *e);

/*
 * With IO_ROOT_KEEP_META: the mode and mtime of each directory of m that
 * io_root_mkdir made on this root (still the same directory, by device and
 * inode), deepest first. A directory that existed before is never changed:
 * a peer must not chmod what it did not create.
 */
int io_root_dirs_finish(struct io_root *root, const struct io_manifest *m);

/*
 * Make root a session of railcp-mpi job job (not 0): each directory
 * io_root_mkdir makes gets the job's marker (a file of the receiver's own,
 * IO_TMP_PREFIX "dir-j" and the id in hex), and so does one that holds a
 * --partial copy's marker (an interrupted copy made it); io_root_dirs_finish
 * then leaves every directory's metadata, and the markers, to
 * io_root_job_dirs at the job's end. Call before the first mkdir.
 */
void io_root_set_job(struct io_root *root, uint64_t job);

/*
 * The end of job job (not 0) for the directories of m (other entries are
 * passed over), deepest first: each that holds the job's marker (the
 * receiver's own, naming that directory by inode: another is
 * removed and counts for nothing) loses it and, with apply, --partial's
 * marker too and, with IO_ROOT_KEEP_META, gets its entry's mode (without
 * setuid/setgid) and mtime. Without apply (a failed job) only the markers
 * go, --partial's kept under IO_ROOT_PARTIAL for a re-run, and every
 * directory is tried past an error. A directory without the marker is left
 * alone: the job did not make it. *count_out: how many held it, written
 * only on success. visited (if not NULL) is called with
 * ctx once the directories are sorted and after each directory, so a caller
 * can tell its peer it is alive on a long list. 0 or the first error.
 */
int io_root_job_dirs(struct io_root *root, const struct io_manifest *m, uint64_t job, bool apply,
		     void (*visited)(void *ctx), void *ctx, uint64_t *count_out);

/*
 * A job's session (io_root_set_job) that failed or was cut: the job's
 * markers it made itself in the directories of m go (best effort, no
 * error: the failed job's removal tries again); others' stay. root and m
 * may be NULL. Not thread-safe: after every mkdir.
 */
void io_root_job_abandon(struct io_root *root, const struct io_manifest *m);

/*
 * ---- --delete: what the destination holds and the copy does not ----
 *
 * After a copy of m into root succeeded: in each directory the copy covered
 * (m's directories, and the root itself with root_too: a source was
 * contents), remove every entry m does not list, unless filter leaves it out
 * (protected) or it is a temporary (".railcp-tmp-"). Directories go with
 * their contents, deepest first; symlinks go as links; nothing is followed
 * or crosses into another file system, and every removal is made through a
 * descriptor beneath the root (delete.c). said (may be NULL) hears each
 * entry removed, or, with dry, each that would be, while nothing is.
 * Returns 0, or the first failure with a sentence counting the others;
 * *out is filled either way. Not thread-safe on root.
 */
struct io_delete_opts {
	const struct io_filter *filter; /* the copy's rules; NULL: none */
	bool root_too;
	bool dry;
	void (*said)(const char *path, bool is_dir, void *ctx);
	void (*visit)(void *ctx); /* each entry looked at (NULL: none): a long walk's pulse */
	void *ctx;
};

struct io_delete_result {
	uint64_t removed; /* entries (files, links, directories; dry: that would be) */
	uint64_t failed;
};

int io_root_delete(const struct io_root *root, const struct io_manifest *m,
		   const struct io_delete_opts *o, struct io_delete_result *out);

struct io_wfile;

/*
 * Start receiving regular file e: a temporary file beside its final name,
 * its data extents preallocated. chunk is the plan's chunk size: chunks must
 * arrive exactly as io_plan_create cuts them. The handle lives until
 * io_wfile_finalize or io_wfile_abort; root and e must outlive it. Each
 * open handle holds two or three descriptors.
 */
int io_wfile_open(struct io_root *root, const struct io_entry *e, uint32_t chunk,
		  struct io_wfile **f_out);

/*
 * io_wfile_open in steps, one blocking call each, so a ring can do them:
 * _start checks e, makes the handle and says in *op the first call (the
 * open of the directory); each _step takes what the call in *op returned
 * (a descriptor or -errno) and either says the next one in *op (1) or ends
 * the open (0, op->kind IO_OP_NONE), or fails (-errno with a sentence). A
 * handle whose step failed is still ended with io_wfile_abort.
 */
int io_wfile_open_start(struct io_root *root, const struct io_entry *e, uint32_t chunk,
			struct io_wfile **f_out, struct io_op *op);
int io_wfile_open_step(struct io_wfile *f, struct io_op *op, int64_t res);

/*
 * Write one chunk: it must be one of the file's planned chunks, and its
 * io_chunk_hash must equal hash (checked before anything is written: -EBADMSG, the
 * caller may ask for it again). A repeated chunk is written again but
 * counted once. *complete_out is true for exactly one call: the one that
 * brought the last missing chunk. Thread-safe.
 */
int io_chunk_write(struct io_wfile *f, uint64_t off, const void *data, uint32_t len, uint64_t hash,
		   bool *complete_out);

/*
 * io_chunk_write in parts, for callers that hash and write elsewhere (helper
 * threads, a ring): _start checks the chunk is planned and the file has not
 * failed, and says in *op where data goes; io_chunk_verify checks its
 * io_chunk_hash (-EBADMSG with a sentence); _end takes put, the bytes the write
 * returned (or -errno): short or failed fails the file, else the chunk
 * counts as io_chunk_write counts it. Thread-safe.
 */
int io_chunk_write_start(struct io_wfile *f, uint64_t off, const void *data, uint32_t len,
			 struct io_op *op);
int io_chunk_verify(struct io_wfile *f, uint64_t off, const void *data, uint32_t len,
		    uint64_t hash);
int io_chunk_write_end(struct io_wfile *f, uint64_t off, uint32_t len, int64_t put,
		       bool *complete_out);

/*
 * Between the halves: whether put, what op's write returned, is the kernel
 * refusing a direct write (EINVAL). Then f writes through the page cache
 * from now on, and the caller redoes the chunk: io_chunk_write_start again
 * (io_chunk_read_redo's twin). Thread-safe.
 */
bool io_chunk_write_redo(struct io_wfile *f, const struct io_op *op, int64_t put);

/*
 * Put the file in place: refuses (-EIO) a file with a missing or failed
 * chunk; sets the size (holes stay holes), applies the mode (with
 * IO_ROOT_KEEP_META: e's mode without setuid/setgid, and e's mtime; else e's
 * mode & 0777 & ~umask, as cp does), fsyncs with IO_ROOT_FSYNC, closes the
 * file (a failed close fails it: NFS reports write-back errors there), and
 * only then renames it over the final name (then, with IO_ROOT_FSYNC, fsyncs
 * the directory). Ends the handle either way: on a failure before the
 * rename the temporary file is removed and the final name is untouched.
 */
int io_wfile_finalize(struct io_wfile *f);

/*
 * io_wfile_finalize in steps around its calls that may block on a disk (the
 * fsync, the rename, the directory's fsync), so a ring can do them: _start
 * does what comes before the first and says it in *op; each _step takes
 * what the call in *op returned and says the next (1), or ends the handle
 * (0, op->kind IO_OP_NONE, the file in place; or -errno with a sentence).
 * On a failure either ends the handle as finalize does.
 */
int io_wfile_finalize_start(struct io_wfile *f, struct io_op *op);
int io_wfile_finalize_step(struct io_wfile *f, struct io_op *op, int64_t res);

/* Remove the temporary file and end the handle. Accepts NULL. */
void io_wfile_abort(struct io_wfile *f);

/* Whether f, open, has an O_DIRECT descriptor (its aligned chunks are written with it). */
bool io_wfile_direct(const struct io_wfile *f);

/*
 * ---- a file written in byte ranges by several sessions (range.c) ----
 *
 * A railcp-mpi job may cut a large file into chunk-aligned ranges that
 * different sessions carry, to one server or to several serving one shared
 * root. A range is received as a regular file's entry of the file's whole
 * size whose extents are the ranges, into one temporary per file and job
 * (named from job, never by a peer), which the range's finalize syncs and
 * leaves unnamed; once every range of the job landed, one session puts each
 * such file in place.
 */

/*
 * Between io_wfile_open_start and the open's first step: receive f's entry
 * as a range of its file into job's temporary (created if missing, else
 * taken if it is the receiver's own; sized to the entry's size, never
 * truncated). Refuses (-EINVAL, one sentence) an entry whose extents do
 * not each start on a chunk (from the file's start) and end on one or at
 * the file's end, inside its size, and (-EPROTO) job 0: ranges no job
 * gathers would never be put in place (a pull's, from a hostile server). Its
 * io_wfile_finalize syncs and closes the temporary, no more; its
 * io_wfile_abort leaves it (io_root_range_remove removes it). Not with
 * io_wfile_partial.
 */
int io_wfile_range(struct io_wfile *f, uint64_t job);

/*
 * After every range of e's file landed in job's temporary: put it in
 * place as io_wfile_finalize puts a whole file (e: the whole file): the
 * job's record of landed ranges must cover its whole size, of the
 * temporary's inode, and its size be the temporary's, else -EIO and the
 * temporary and record are removed; mode, mtime, sync, rename, the
 * directory's sync. again: an earlier place of the job may have put it
 * there before its server was judged gone, so a missing temporary whose
 * final name is what that place put there (its record's inode, or
 * without the record a regular file of e's size and, with -p, its mtime)
 * counts as put in place. Thread-safe on distinct paths.
 */
int io_root_range_place(struct io_root *root, const struct io_entry *e, uint64_t job, bool again);

/* Remove job's temporary of path, if there is one (0 then too). Thread-safe on distinct paths. */
int io_root_range_remove(struct io_root *root, const char *path, uint64_t job);

/*
 * ---- what an interrupted copy keeps (--partial) ----
 *
 * A file of several chunks received beneath a root with IO_ROOT_PARTIAL
 * lands in a data file of a fixed name beside its final name, with a log of
 * each chunk as it lands; when the copy fails, io_wfile_keep keeps them and
 * writes a record of the chunks it holds and their CRC-64s. The next copy
 * finds them with io_root_partial, trusts only a record or log that
 * describes the same source, and holds only the chunks it reads back with
 * the same CRC-64 (partial.c has the details).
 */
struct io_partial;

/*
 * What the partial file of e (beneath root, cut into chunk bytes) still
 * holds, or NULL: none, none held, or a record and log that are ignored
 * (with a notice saying why: damaged, another source, another chunk size).
 * Reads back and hashes every chunk they claim. With IO_ROOT_CHECKSUM, what
 * the file at e's name holds instead (checksum.c). Thread-safe.
 */
struct io_partial *io_root_partial(const struct io_root *root, const struct io_entry *e,
				   uint32_t chunk);

/* Accepts NULL. */
void io_partial_destroy(struct io_partial *p);

/* Whether p holds chunk k of its file (chunks numbered as the plan cuts the file). */
bool io_partial_has(const struct io_partial *p, uint64_t k);

/*
 * Whether p's chunk k (held) is read for the first time by io_partial_read,
 * from the old file (-c), not before: a chunk a cut copy received was.
 */
bool io_partial_late(const struct io_partial *p, uint64_t k);

/*
 * Read chunk k, len bytes at off of p's data file (a chunk it holds), into
 * buf: 0, or -errno with a sentence (-EIO for a short read). With -c a
 * late chunk (io_partial_late) is first taken from the old file into the
 * data file and its CRC-64 from this read (checksum.c), once per chunk.
 * Thread-safe on distinct chunks.
 */
int io_partial_read(struct io_partial *p, uint64_t k, uint64_t off, uint32_t len, void *buf);

/*
 * p no longer holds chunk k, of len bytes (the sender did not confirm it):
 * the file written from p receives it again. Before io_wfile_partial takes p
 * on; not thread-safe.
 */
void io_partial_forget(struct io_partial *p, uint64_t k, uint32_t len);

/*
 * Between io_wfile_open_start and the open's first step: with the root's
 * IO_ROOT_PARTIAL, write f (if it has several chunks) in its partial file,
 * taking on what resume holds (NULL: nothing; the file starts empty).
 * -ENOMEM with a sentence.
 */
int io_wfile_partial(struct io_wfile *f, const struct io_partial *resume);

/* The open's remaining steps here and now, from op; on a failure the handle is ended. */
int io_wfile_open_rest(struct io_wfile *f, struct io_op *op);

/*
 * With a partial file that gained chunks since its last record, write its
 * record as it stands now (the chunks landed so far), so that even a
 * receiver killed outright leaves one behind; else nothing. Not thread-safe
 * against the handle's open, finalize or end, nor against itself.
 */
int io_wfile_checkpoint(struct io_wfile *f);

/*
 * End the handle of an unfinished file: with a partial file, keep it and
 * write its record (on a failure to, remove both); else as io_wfile_abort.
 * Accepts NULL.
 */
void io_wfile_keep(struct io_wfile *f);

#endif
