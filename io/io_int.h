/*
 * io_int.h - private to io/: name rules, printable escaping, chunk
 * arithmetic and confined path resolution shared by the io/ files, and the
 * handles two files of it share (a root, a partial file, a received file).
 * io/ is compiled with IO_INTERNAL (io/SConscript), tests with RAILCP_TESTS;
 * anything else that includes it fails to compile.
 *
 * Threading: the helpers are pure or work only on their arguments, unless
 * they say otherwise; a handle's own rules are in its file.
 */
#ifndef RAILCP_IO_INT_H
#define RAILCP_IO_INT_H

#if !defined(IO_INTERNAL) && !defined(RAILCP_TESTS)
#error "io/io_int.h is private to io/"
#endif

#include "io/io.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

/* A directory by identity, not by name: a name can be swapped, an inode cannot. */
struct io_dir_id {
	dev_t dev;
	ino_t ino;
};

struct io_root {
	int fd; /* O_PATH directory */
	unsigned flags;
	mode_t umask; /* applied to modes when metadata is not kept */
	bool memfs;   /* tmpfs or ramfs: nothing to gain from preallocation */
	/* the directories io_root_mkdir made with IO_ROOT_KEEP_META, under lock */
	pthread_mutex_t lock;
	struct io_dir_id *made;
	size_t n_made, cap_made;
	/* the job's directories, kept open (dircache.c), under dir_lock */
	pthread_mutex_t dir_lock;
	struct io_dir **dirs; /* open addressing by path, dirs_cap a power of 2 */
	size_t dirs_cap, n_dirs;
	struct io_dir *dirs_retired; /* found moved and replaced: open until io__dirs_close */
	bool root_dirty;	     /* an entry was renamed into the root itself since its sync */
	dev_t dev; /* the root's identity: where each kept directory's chain ends */
	ino_t ino;
	uint64_t job; /* a railcp-mpi job's session (io_root_set_job), or 0 */
	/* the directories whose job marker this session made, under lock */
	struct io_dir_id *jmade;
	size_t n_jmade, cap_jmade;
};

/* Orders directory ids (by device, then inode), for qsort and bsearch (root.c). */
int io__dir_id_cmp(const void *a, const void *b);
/*
 * Room for one more id in *v (*n held, *cap room), grown under root->lock:
 * 0, or -ENOMEM saying "out of memory <doing> the directory <path>".
 */
int io__dir_ids_reserve(struct io_root *root, struct io_dir_id **v, const size_t *n, size_t *cap,
			const char *doing, const char *path);
/*
 * st's id appended to *v under root->lock (all read there), after an
 * io__dir_ids_reserve: grown if another thread's add took the room reserved.
 */
void io__dir_ids_add(struct io_root *root, struct io_dir_id **v, size_t *n, size_t *cap,
		     const struct stat *st);

/* ---- the job's directories (dircache.c) ---- */

struct io_dir;

/*
 * The directory path (beneath the root, "." the root itself) as an O_PATH
 * fd: the one kept for the job (*kept_out true: never closed by the
 * caller), checked to still sit where it was opened, or, for one too deep
 * to keep, one of the caller's own to close. Errors as io__sub_open's.
 */
int io__dir_get(struct io_root *root, const char *path, int *fd_out, bool *kept_out);

/* A kept directory path had an entry renamed into it: io__dirs_sync syncs it. */
void io__dir_dirty(struct io_root *root, const char *path);

/* fsync of each kept directory marked dirty, once; the first failure's sentence. */
int io__dirs_sync(struct io_root *root);

/* Close every kept directory (the root's close). */
void io__dirs_close(struct io_root *root);

/* Whether the directory fd lives on a memory filesystem (tmpfs, ramfs). */
bool io__is_memfs(int fd);

/* ---- O_DIRECT: when, and how aligned (direct.c) ---- */

/*
 * Whether entry e, open as fd, gets an O_DIRECT descriptor too for its reads
 * under flags (IO_DIRECT: yes; IO_DIRECT_AUTO: io_direct_pays of its data
 * bytes on fd's file system, unless the file is mostly in the page cache,
 * where a buffered read copies from memory and a direct one would go to the
 * disk; neither: no).
 */
bool io__direct_wanted(unsigned flags, const struct io_entry *e, int fd);

/*
 * Whether half or more of fd's data_bytes are in the page cache
 * (cachestat; where it is missing or refused, most of a few pages spread
 * over its size bytes read with RWF_NOWAIT; neither: no).
 */
bool io__mostly_cached(int fd, uint64_t data_bytes, uint64_t size);

/* What a direct I/O of a file needs aligned: its file offset and length, its buffer. */
struct io__dio {
	uint32_t off, mem;
};

/*
 * The alignment direct I/O on fd needs (statx STATX_DIOALIGN; not said:
 * IO_DIRECT_ALIGN); false when the file takes no direct I/O, or needs
 * buffers aligned more strictly than IO_DIRECT_ALIGN (a slot's).
 */
bool io__dio_align(int fd, struct io__dio *out);

/*
 * Whether an I/O of len bytes at off into (or from) buf can go direct: off
 * and buf aligned; whole (a write): len too; else (a read, rounded up) the
 * rounded length within len rounded up to IO_DIRECT_ALIGN.
 */
bool io__dio_fits(const struct io__dio *dio, uint64_t off, uint32_t len, const void *buf,
		  bool whole);

/* Tests: io__dio_align answers dio (NULL: asks statx again). Not thread-safe. */
void io__dio_override(const struct io__dio *dio);

/*
 * The prefix of every temporary name. It is reserved: a peer's name with a
 * component that starts with it is refused (io__path_problem), and walks
 * skip such entries, so no session can name, replace or send another's
 * temporary. Reserved in any case of its ASCII letters: beneath a root on a
 * case-insensitive file system (ext4 casefold, CIFS, vfat) ".RAILCP-TMP-x"
 * is the same file as railcp's ".railcp-tmp-x". railcp's own names are
 * always made in lower case.
 */
#define IO_TMP_PREFIX ".railcp-tmp-"
#define IO_TMP_PREFIX_LEN (sizeof(IO_TMP_PREFIX) - 1)
/* In a directory a --partial copy made, until its metadata is applied (root.c). */
#define IO_DIR_MARKER IO_TMP_PREFIX "dir"
/*
 * In a directory a railcp-mpi job's session made, until the job's last
 * session applies its metadata (root.c): IO_DIR_MARKER, "-j" and the job id
 * in 16 hex digits. It holds its directory's inode (IO_JOB_MARKER_ID), so a
 * marker moved into another directory marks nothing. Not the device: the
 * servers of one job serve one shared file system (NFS, Lustre, 9p), which
 * each host numbers as its own device, and the last session's server need
 * not be the one that made the directory.
 */
#define IO_JOB_MARKER_LEN 40
#define IO_JOB_MARKER_ID "%llu\n"

/*
 * Directory fd (open on e's directory) given e's mode, without setuid and
 * setgid, and e's mtime (root.c): io_root_dirs_finish's and
 * io_root_job_dirs's one way to set a directory's metadata. 0 or -errno
 * with its sentence.
 */
int io__dir_meta_set(int fd, const struct io_entry *e);

/* A directory of a manifest and its depth, to order directories deepest first (root.c). */
struct io_depth_idx {
	size_t depth;
	size_t idx;
};

/* The directories of m, deepest first: *order_out (free it) and their count (root.c). */
int io__dirs_order(const struct io_manifest *m, struct io_depth_idx **order_out, size_t *n_out);

/*
 * The job's marker in directory last (beneath pfd), path, which is made (st)
 * if it is still that directory (jobdirs.c): 0 or -errno with its sentence.
 */
int io__job_mark(struct io_root *root, int pfd, const char *last, const char *path,
		 const struct stat *made);

/*
 * Whether the component c of n bytes starts with IO_TMP_PREFIX, in any case
 * (ASCII: railcp never calls setlocale, and glibc folds these letters alike
 * in every locale, Turkish ones too).
 */
static inline bool io__is_tmp_name(const char *c, size_t n)
{
	return n >= IO_TMP_PREFIX_LEN && !strncasecmp(c, IO_TMP_PREFIX, IO_TMP_PREFIX_LEN);
}

/* A fresh temporary name, IO_TMP_PREFIX and 16 hex digits: clearly ours, never a peer's. */
#define IO_TMP_NAME_LEN 32
void io__tmp_name(char out[IO_TMP_NAME_LEN]);

/*
 * The temporary of a file written in ranges by one railcp-mpi job (range.c):
 * IO_TMP_PREFIX, 'j', the job id and the first 128 bits of the SHA-256 of
 * last (its final name), in hex. A hash no one can make collide: two names
 * in one directory never share a temporary.
 */
#define IO_RANGE_NAME_LEN 64
void io__range_name(uint64_t job, const char *last, char out[IO_RANGE_NAME_LEN]);

/* mtime in ns as the timespec pair futimens wants (atime left alone). */
void io__mtime_times(int64_t mtime_ns, struct timespec ts_out[2]);

/*
 * Copy len bytes of p into out (IO_ESC_MAX bytes) with every byte outside
 * printable ASCII, and the backslash, as \xNN; returns out.
 */
const char *io__path_escape(const char *p, size_t len, char out[IO_ESC_MAX]);

/*
 * Check a relative path from a peer: NULL if it is acceptable, else a short
 * reason ("is absolute", "has a \"..\" component", ...). A component that
 * starts with IO_TMP_PREFIX is refused too.
 */
const char *io__path_problem(const char *p, size_t len);

/* Chunks of at most chunk bytes that cover len bytes. */
static inline uint64_t io__chunks_of(uint64_t len, uint32_t chunk)
{
	return len / chunk + (len % chunk != 0);
}

/* The chunks the plan cuts e's data extents into. */
static inline uint64_t io__entry_chunks(const struct io_entry *e, uint32_t chunk)
{
	uint64_t n = 0;
	uint32_t x;

	for (x = 0; x < e->n_ext; x++)
		n += io__chunks_of(e->ext[x].len, chunk);
	return n;
}

/*
 * Open the directory holding path's last component beneath root_fd
 * (openat2, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) as O_PATH, and point
 * *last_out at that component inside path. Refusals name the path.
 * The path is not checked lexically here: openat2 alone must refuse escapes.
 */
int io__parent_open(int root_fd, const char *path, int *fd_out, const char **last_out);

/*
 * Split path into the directory holding its last component (into parent;
 * "." for a bare name) and that component (*last_out, inside path).
 */
int io__parent_split(const char *path, char parent[IO_PATH_MAX], const char **last_out);

/* How io__parent_open opens a parent: a handle for *at calls, nothing to read. */
#define IO_PARENT_FLAGS (O_PATH | O_DIRECTORY)

/*
 * The sentence for err, a failed confined open of path ("refused ...: its
 * <what> leads outside the root", "cannot open the <what> of ..."); returns err.
 */
int io__resolve_err(int err, const char *path, const char *what);

/*
 * An IO_OP_OPEN of path in dirfd with flags (O_CLOEXEC added; mode 0600 with
 * O_CREAT), confined beneath dirfd (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
 * when beneath is set.
 */
void io__open_op(int dirfd, const char *path, uint64_t flags, bool beneath, struct io_op *op);

/*
 * res, the result of the open op, after up to 8 more tries here while it is
 * -EAGAIN (the kernel's answer when a rename raced a confined ".." step).
 */
int64_t io__open_retry(const struct io_op *op, int64_t res);

/* Open directory path itself beneath root_fd, not following a final symlink (O_RDONLY). */
int io__dir_open(int root_fd, const char *path, int *fd_out);

/* Open directory path beneath root_fd as O_PATH, following symlinks that stay beneath. */
int io__sub_open(int root_fd, const char *path, int *fd_out);

/* ---- partial files (partial.c, partial_record.c) ---- */

/* What a partial file still holds (io_root_partial). */
/* An io_partial of n_chunks holding nothing (fd -1), or NULL. */
struct io_partial *io__partial_new(uint64_t n_chunks);

/* -c: e's partial file made from the file at its name; its chunks held (checksum.c). */
struct io_partial *io__root_checksum(const struct io_root *root, const struct io_entry *e,
				     uint32_t chunk);

struct io_partial {
	uint64_t n_chunks;
	uint64_t *bits; /* chunk k held: bit k % 64 of word k / 64 */
	uint64_t *hash; /* chunk k's CRC-64, where held */
	uint64_t held, held_bytes;
	int fd;		/* the data file, flock-ed from the check of its chunks to the end */
	uint64_t *late; /* -c: chunk k from the old file, its CRC-64 with its read (io_partial_read)
			 */
	char *old_path; /* -c: the old file's name beneath root_fd, each late chunk read from it */
	int root_fd;	/* -c: the root's, not owned */
	bool no_clone;	/* -c: the old file's file system cannot clone a range into fd */
	bool look;	/* -n: what a cut copy kept, only read: nothing removed, fd read-only */
};

/*
 * What a partial file of final name last in pfd still holds of e, as its
 * record and log claim and its data file confirms (each chunk read back and
 * its CRC-64 checked), into p (new): those chunks held, the data file
 * locked into p->fd. A reason when nothing can be taken (the claims' or
 * the data file's; p may then hold claims unchecked), NULL when none is
 * there at all or what is there was checked.
 */
const char *io__partial_claims(int pfd, const char *last, const struct io_entry *e, uint32_t chunk,
			       struct io_partial *p);

/* -c: held chunk (len bytes at off) from the old file into buf and p->fd (checksum.c). */
int io__checksum_fill(struct io_partial *p, uint64_t off, uint32_t len, void *buf);

/*
 * Open name in directory pfd, one of the partial objects (data file,
 * record, log, directory marker) or a range's temporary (range.c), only if
 * it is the receiver's own: opened without following a symlink (O_NOFOLLOW,
 * and O_NONBLOCK so a FIFO or a device cannot hold the open), then checked
 * on the descriptor to be a regular file of the effective user, of one name
 * (st_nlink 1), that no group or other may write. Anything else is another
 * user's or a link to one: it is removed (with a notice naming path, the
 * entry's) and, with O_CREAT in flags, made again with O_CREAT | O_EXCL,
 * mode 0600. flags: O_RDONLY, O_WRONLY or O_RDWR, and O_CREAT. The
 * descriptor (blocking); -ENOENT when there is none and no O_CREAT; else
 * -errno without a sentence (the unlink's when what is there cannot be
 * removed: a sticky directory).
 */
int io__partial_open(int pfd, const char *name, int flags, const char *path);

/*
 * name in pfd opened with acc's access mode if it is the receiver's own
 * (as io__partial_open takes it), else -errno: -ENOENT for one not its
 * own, which a copy would remove. A dry run's look: it removes and makes
 * nothing, and opens with the copy's access mode only so as to fail where
 * the copy's open would.
 */
int io__partial_look(int pfd, const char *name, int acc);

/*
 * name in pfd opened with flags' access mode (and O_APPEND) if it is the receiver's own,
 * else -errno: -EPERM with *why_out its reason not to be. Nothing is
 * removed nor made.
 */
int io__partial_own(int pfd, const char *name, int flags, const char **why_out);

/* The names of the data file, the record and the log a partial file of final name last has. */
void io__partial_names(const char *last, char data[IO_TMP_NAME_LEN], char rec[IO_TMP_NAME_LEN],
		       char log[IO_TMP_NAME_LEN]);

/* What a record says of one file, as its handle has it. */
struct io__partial_what {
	const char *path; /* the entry's, for sentences */
	const char *last; /* its final name, in directory pfd */
	uint32_t chunk;
	uint64_t size;
	int64_t mtime_ns;
	uint64_t n_chunks;
	const _Atomic uint64_t *bits; /* chunk k landed: bit k % 64 of word k / 64 */
	const uint64_t *hash;	      /* the CRC-64 each landed chunk arrived with */
};

/* The data bytes p holds. */
uint64_t io__partial_bytes(const struct io_partial *p);

/* The CRC-64 chunk k was held with (io_partial_has), else 0. */
uint64_t io__partial_hash(const struct io_partial *p, uint64_t k);

/* p's data file, open and flock-ed (-1 for NULL). */
int io__partial_fd(const struct io_partial *p);

/* Write w's record in directory pfd, atomically (a temporary, fsync, rename). */
int io__partial_record_write(int pfd, const struct io__partial_what *w);

/* A partial file's log, mapped shared: a slot per chunk, written as each lands. */
struct io__partial_log {
	void *map; /* NULL: no log */
	size_t len;
	uint8_t *slots;
};

/*
 * Open (create, or with keep take on if its head is w's) and map the log of
 * w in directory pfd, its blocks reserved: 0, or -errno without a sentence
 * (then there is no log, and none is left).
 */
int io__partial_log_open(int pfd, const struct io__partial_what *w, bool keep,
			 struct io__partial_log *log);

/* Chunk k landed with hash: one store into the mapping. Thread-safe on distinct k. */
void io__partial_log_put(const struct io__partial_log *log, uint64_t k, uint64_t hash);

/* Unmap it (the file stays). Accepts a log that is none. */
void io__partial_log_close(struct io__partial_log *log);

/*
 * The claims of record name (io__partial_record_claims) or log name
 * (io__partial_log_claims) in directory pfd into p, if it is whole and
 * describes e (final name last) as cut by chunk: NULL (none there counts as
 * none), or the reason it is ignored.
 */
const char *io__partial_record_claims(int pfd, const char *name, const char *last,
				      const struct io_entry *e, uint32_t chunk,
				      struct io_partial *p);
const char *io__partial_log_claims(int pfd, const char *name, const char *last,
				   const struct io_entry *e, uint32_t chunk, struct io_partial *p);

/*
 * The last name of source path src: returns its length and points
 * *name_out at it inside src ("a/b" gives "b"). 0 when src has no name of
 * its own, as rsync reads a source: "", ".", "..", "dir/.", "dir/..", and
 * every path ending in "/" ("dir/", "/"), which stands for its contents.
 * *name_out is set in every case. Thread-safe.
 */
size_t io__src_name(const char *src, const char **name_out);

/* Free the members of one entry (not the entry itself). */
void io__entry_fini(struct io_entry *e);

/* Append a zeroed entry to m; *e_out points at it (valid until the next append). */
int io__manifest_add(struct io_manifest *m, struct io_entry **e_out);

/*
 * io_manifest_decode with its limits lowered and its work counted, for
 * tests and benchmarks. NULL ctl: io_manifest_decode itself.
 */
struct io__decode_ctl {
	/* in: lower limits than IO_MANIFEST_MAX_ENTRIES and _MEMORY (0: those) */
	size_t max_entries;
	uint64_t max_memory;
	/* in: a walk's IO_WALK_LARGE: IO_WALK_LARGE_MAX_ENTRIES, not the above */
	bool large;
	/* out, written on success: the duplicate check's name look-ups, the
	 * table slots they examined, the most one examined, and the memory
	 * the decode counted against max_memory */
	uint64_t lookups;
	uint64_t probes;
	uint64_t longest;
	uint64_t memory;
};
int io__manifest_decode(const void *buf, size_t len, struct io__decode_ctl *ctl,
			struct io_manifest **m_out);

/*
 * The structure rules of a manifest: every parent is a directory entry
 * listed earlier, no path twice. -EBADMSG with a sentence naming the entry,
 * -EFBIG beyond the entry limit (ctl's, IO_WALK_LARGE_MAX_ENTRIES with
 * ctl->large, else IO_MANIFEST_MAX_ENTRIES),
 * -EOVERFLOW if one look-up would examine more than IO__PROBE_MAX slots
 * (see codec.c), or -ENOMEM. ctl may be NULL.
 */
int io__manifest_check(const struct io_manifest *m, struct io__decode_ctl *ctl);

/* ---- the receiver's files (wfile.c, wfile_partial.c) ---- */

struct io_wfile {
	const struct io_entry *e;
	struct io_root *root;
	int pfd;       /* the target directory, O_PATH */
	bool pfd_kept; /* pfd is the job's (dircache.c): not closed here */
	char *parent;  /* its path beneath the root */
	bool created;  /* the temporary exists: abort removes it */
	enum { FIN_SYNC, FIN_RENAME, FIN_DIR_SYNC } fin; /* finalize's I/O under way */
	int fd;
	int dfd;		     /* O_DIRECT, or -1 */
	struct io__dio dio;	     /* what dfd's writes need aligned */
	atomic_bool dio_off;	     /* the kernel refused a direct write: buffered from now on */
	const char *last;	     /* final name, inside e->path */
	char tmp[IO_RANGE_NAME_LEN]; /* a random name, a partial file's or a range's */
	bool range;		     /* a range of a file (range.c): never renamed or removed */
	uint32_t chunk;
	uint64_t *first; /* extent x holds chunks first[x] .. first[x + 1] - 1 */
	uint64_t n_chunks;
	_Atomic uint64_t *bits; /* chunk k arrived: bit k % 64 of word k / 64 */
	_Atomic uint64_t done;	/* chunks arrived */
	_Atomic uint64_t received;
	_Atomic bool failed;  /* a write failed: never finalize */
	_Atomic int fail_err; /* the first failed write's -errno, for the later ones' sentence */
	/* IO_ROOT_PARTIAL (partial.c): the data file of a fixed name, locked by lockfd */
	bool partial;
	int lockfd;		    /* a second descriptor of it, holding the flock to the end */
	uint64_t *hash;		    /* the CRC-64 each chunk arrived with */
	uint64_t recorded;	    /* done, as the last record written saw it */
	struct io__partial_log log; /* a slot per chunk, stored as it lands */
	const struct io_partial *resume; /* what it held from before, until the open takes it on */
};

/* Close what f holds and free it (the files stay as they are). */
void io__wfile_free(struct io_wfile *f);

/*
 * With --partial, the data file of a fixed name as the open with O_EXCL
 * answered (res: a new file's descriptor, or -EEXIST), judged and taken on
 * with what f's resume held (see wfile_partial.c): the descriptor to write,
 * or -errno.
 */
int io__wfile_partial_take(struct io_wfile *f, int res);

/*
 * A range's temporary, as the open with O_EXCL of its name answered (res: a
 * new file, or -EEXIST): one there already is taken if it is the
 * receiver's own and of size 0 or the whole file's, else refused (never
 * removed nor made anew: other ranges may have landed in it); sized to the
 * whole file.
 * The descriptor to write, or -errno with a sentence.
 */
int io__range_take(struct io_wfile *f, int res);

/*
 * A range of f synced in its temporary: its extents, with the temporary's
 * inode, appended to the job's record of the file's landed ranges (made
 * when missing, taken only if the receiver's own, under flock, synced),
 * which io_root_range_place checks covers the whole file. 0 or -errno
 * with a sentence.
 */
int io__range_record(struct io_wfile *f);

/* A partial file's record and log go when its data file does (put in place, or removed). */
void io__wfile_record_remove(struct io_wfile *f);

/* Every planned chunk of f is in (true at once for a file without data). Thread-safe. */
bool io__wfile_complete(const struct io_wfile *f);

/* f's data bytes received so far. Thread-safe. */
uint64_t io__wfile_received(const struct io_wfile *f);

/* ---- keyed hashing (hash.c) ---- */

/* SipHash-2-4 of n bytes at p under the 16-byte key. */
uint64_t io__siphash24(const uint8_t key[16], const void *p, size_t n);

/*
 * This process's random 16-byte key for tables indexed by a peer's names,
 * drawn once (getrandom) by the first caller; -errno with a sentence if the
 * kernel gave no random bytes. Thread-safe.
 */
int io__hash_key(const uint8_t **key_out);

/* ---- a walk's filter (filter.c: the rules and the encoding; filter_paths.c: --files-from) ---- */

struct io__filter_rule; /* one --exclude or --include, filter.c's own */

struct io_filter {
	struct io__filter_rule *rule;
	size_t n_rules;
	/*
	 * By the last byte of what they match (every subject ends where the
	 * entry's path ends): the rules that can match, in order. A rule whose
	 * glob ends in a wildcard is in every list. Built by io_filter_finish.
	 */
	uint16_t *by_last[2][256]; /* [is_dir]: a directory-only rule is in [1] alone */
	uint16_t n_by_last[2][256];
	char **path; /* --files-from, sorted and unique after io_filter_finish */
	size_t n_paths, cap_paths;
	size_t bytes; /* what the encoding takes */
};

/* Whether p (len bytes) is UTF-8 without control characters; else why not. */
const char *io__text_problem(const char *p, size_t len);

/* Sort f's listed paths bytewise and free the repeated ones (io_filter_finish). */
void io__filter_paths_sort(struct io_filter *f);

/*
 * filter_paths.c, for the walk: whether an entry at rel (beneath its source's
 * top) is wanted by the filter's listed paths; a listed path it is sets
 * its found[] (one per listed path, sorted as io_filter_path_at).
 */
bool io__filter_wanted(const struct io_filter *f, const char *rel, bool is_dir, bool recursive,
		       bool *found);

#endif
