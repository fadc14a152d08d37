/*
 * wfile.c - the receiver's side of a file: chunks checked, written at their
 * offsets, counted, and the file put in place atomically.
 *
 * Temporary file: a named one, ".railcp-tmp-<16 hex>", created with O_EXCL
 * in the target directory (held open as an fd from openat2, so the final
 * rename lands in the directory that passed the check even if the path is
 * changed meanwhile), renamed over the final name by renameat. Chosen over
 * O_TMPFILE + linkat because linkat cannot replace an existing file (an
 * update would need a second name and a second rename anyway), because
 * linkat of an O_TMPFILE needs /proc or CAP_DAC_READ_SEARCH, and because
 * O_TMPFILE is missing on some file systems (NFS, FUSE, 9p). The price, a
 * temporary left behind by a receiver that is killed (not by a failure:
 * those remove it), is bounded by the name: it is clearly marked as ours
 * and never a final name (IO_TMP_PREFIX is refused in a peer's names and
 * skipped by walks, so no peer can name, replace or fetch a temporary).
 *
 * Finalize, in this order: size, mode and mtime; with IO_ROOT_FSYNC fsync
 * (after the metadata, so it covers it); close, with its result checked;
 * only then rename; with IO_ROOT_FSYNC fsync of the directory. A failure at
 * any step before the rename removes the temporary, so a final name only
 * ever holds data the kernel accepted without an error. Without
 * IO_ROOT_FSYNC that data may still be in the page cache: a power loss or
 * kernel crash can leave the renamed file empty, short or with zeros.
 *
 * Partial files: with IO_ROOT_PARTIAL a file of several chunks is written
 * in a data file of a fixed name instead of a random temporary, and kept
 * with its record when the copy fails (wfile_partial.c, partial.c).
 *
 * Holes: only the data extents are preallocated (FALLOC_FL_KEEP_SIZE) and
 * written; the size is set with ftruncate at finalize, so a hole is never
 * written as zeros (a file written with O_DIRECT gets it at its open, which
 * writes nothing either: direct_open).
 *
 * Chunks: the file knows the plan's cut (io_plan_create), so a chunk must be
 * exactly one planned chunk: a chunk of a stranger's choosing (outside the
 * file, straddling a hole, misaligned) is refused. Arrival is a bitmap with
 * one bit per planned chunk, set with atomic_fetch_or after the data is
 * written, and an atomic count of chunks whose bit this call set: repeated
 * chunks count once, and exactly one writer sees the count reach the total.
 *
 * Steps: the calls that may block on a disk (the open of the directory,
 * the creation of the temporary, each write, the fsync, the rename, the
 * directory's fsync) can each be done by a ring elsewhere
 * (engine/datapath/ioring.c): io_wfile_open_start and _step,
 * io_chunk_write_start and _end, io_wfile_finalize_start and _step say in a
 * struct io_op what to call and judge what it returned. io_wfile_open,
 * io_chunk_write and io_wfile_finalize do it all at once (steps_run).
 *
 * Threading: io_chunk_write, io__wfile_complete and io__wfile_received are
 * thread-safe on one handle; open, finalize and abort are not, and finalize
 * must follow every write. The manifest entry must outlive the handle.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *name_of(const struct io_wfile *f, char esc[IO_ESC_MAX])
{
	return io__path_escape(f->e->path, strlen(f->e->path), esc);
}

static int chunk_map_init(struct io_wfile *f)
{
	uint32_t x;

	f->first = malloc(((size_t)f->e->n_ext + 1) * sizeof(*f->first));
	if (!f->first)
		return rcp_err(-ENOMEM, "out of memory for the chunk map of %s", f->e->path);
	f->first[0] = 0;
	for (x = 0; x < f->e->n_ext; x++)
		f->first[x + 1] = f->first[x] + io__chunks_of(f->e->ext[x].len, f->chunk);
	f->n_chunks = f->first[f->e->n_ext];
	f->bits = calloc((size_t)(f->n_chunks / 64 + 1), sizeof(*f->bits));
	if (!f->bits)
		return rcp_err(-ENOMEM, "out of memory for the chunk map of %s", f->e->path);
	return 0;
}

/*
 * Preallocate the data extents only (the holes stay holes); no support is no
 * error. Not on a memory-backed filesystem (tmpfs, ramfs): there it buys no
 * contiguity and only zeroes every page once more before the data arrives,
 * in the worker that received the file's first chunk.
 */
static int preallocate(struct io_wfile *f)
{
	char esc[IO_ESC_MAX];
	uint32_t x;

	if (f->root->memfs)
		return 0;
	for (x = 0; x < f->e->n_ext; x++) {
		if (fallocate(f->fd, FALLOC_FL_KEEP_SIZE, (off_t)f->e->ext[x].off,
			      (off_t)f->e->ext[x].len) == 0)
			continue;
		if (errno == EOPNOTSUPP || errno == ENOSYS)
			return 0;
		return rcp_err(-errno, "cannot reserve %llu bytes for \"%s\": %s",
			       (unsigned long long)f->e->data_bytes, name_of(f, esc),
			       strerror(errno));
	}
	return 0;
}

/* Whether f gets an O_DIRECT descriptor: --direct, or its default's rule (io_direct_pays). */
static bool direct_wanted(const struct io_wfile *f)
{
	if (f->root->flags & IO_ROOT_DIRECT)
		return true;
	return (f->root->flags & IO_ROOT_DIRECT_AUTO) &&
	       io_direct_pays(f->e->data_bytes, f->root->memfs);
}

/*
 * A second descriptor with O_DIRECT, checked to be the same file; none is no
 * error. The file takes its final size now (holes stay holes): a direct
 * write past the end would grow it, which ext4 does under the inode's
 * exclusive lock and waits for, one write of the file at a time.
 */
static void direct_open(struct io_wfile *f)
{
	struct stat a, b;

	if (!io__dio_align(f->fd, &f->dio))
		return; /* a file system without direct I/O, or one the slots cannot meet */
	f->dfd = openat(f->pfd, f->tmp, O_WRONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC);
	if (f->dfd < 0)
		return;
	if (fstat(f->fd, &a) < 0 || fstat(f->dfd, &b) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(f->dfd);
		f->dfd = -1;
		return;
	}
	/* no size: each write grows it, as without O_DIRECT (a range's is sized: range.c) */
	if ((uint64_t)a.st_size < f->e->size && ftruncate(f->fd, (off_t)f->e->size) < 0)
		rcp_log(RCP_LOG_DEBUG, "cannot size a temporary before its direct writes: %s",
			strerror(errno));
}

bool io_wfile_direct(const struct io_wfile *f)
{
	return f->dfd >= 0;
}

bool io_chunk_write_redo(struct io_wfile *f, const struct io_op *op, int64_t put)
{
	char esc[IO_ESC_MAX];

	if (put != -EINVAL || f->dfd < 0 || op->fd != f->dfd)
		return false;
	if (!atomic_exchange(&f->dio_off, true))
		rcp_log(RCP_LOG_INFO,
			"a direct write of \"%s\" was refused (%s): writing it through the page "
			"cache",
			name_of(f, esc), strerror(EINVAL));
	return true;
}

void io__wfile_free(struct io_wfile *f)
{
	io__partial_log_close(&f->log);
	if (f->lockfd >= 0)
		close(f->lockfd);
	free(f->hash);
	if (f->dfd >= 0)
		close(f->dfd);
	if (f->fd >= 0)
		close(f->fd);
	if (f->pfd >= 0 && !f->pfd_kept)
		close(f->pfd);
	free(f->parent);
	free(f->first);
	free((void *)f->bits);
	free(f);
}

int io_wfile_open_start(struct io_root *root, const struct io_entry *e, uint32_t chunk,
			struct io_wfile **f_out, struct io_op *op)
{
	char esc[IO_ESC_MAX], parent[IO_PATH_MAX];
	struct io_wfile *f;
	const char *why = io__path_problem(e->path, strlen(e->path));
	int err;

	if (why || e->type != IO_FILE)
		return rcp_err(-EINVAL, "refused \"%s\": %s",
			       io__path_escape(e->path, strlen(e->path), esc),
			       why ? why : "it is not a regular file");
	if (chunk == 0 || chunk > IO_CHUNK_MAX)
		return rcp_err(-EINVAL, "a chunk of %u bytes is not between 1 byte and 1 GiB",
			       chunk);
	f = calloc(1, sizeof(*f));
	if (!f)
		return rcp_err(-ENOMEM, "out of memory receiving \"%s\"",
			       io__path_escape(e->path, strlen(e->path), esc));
	*f = (struct io_wfile){
		.e = e, .root = root, .pfd = -1, .fd = -1, .dfd = -1, .lockfd = -1, .chunk = chunk};
	err = chunk_map_init(f);
	err = err ? err : io__parent_split(e->path, parent, &f->last);
	if (!err && !(f->parent = strdup(parent)))
		err = rcp_err(-ENOMEM, "out of memory receiving \"%s\"", name_of(f, esc));
	/* The job's descriptor of the directory (dircache.c): no openat2 per file. */
	if (!err && (err = io__dir_get(root, f->parent, &f->pfd, &f->pfd_kept)) != 0)
		err = io__resolve_err(err, e->path, "directory");
	if (err) {
		io__wfile_free(f);
		return err;
	}
	/*
	 * O_EXCL for a partial file too: one there already is judged by
	 * partial_take. The op names f->tmp, which io_wfile_partial renames
	 * before the op runs.
	 */
	io__tmp_name(f->tmp);
	io__open_op(f->pfd, f->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, false, op);
	*f_out = f;
	return 0;
}

int io_wfile_open_step(struct io_wfile *f, struct io_op *op, int64_t res)
{
	char esc[IO_ESC_MAX];
	int err;

	*op = (struct io_op){.kind = IO_OP_NONE};
	if (f->partial && (res >= 0 || res == -EEXIST))
		res = io__wfile_partial_take(f, (int)res);
	else if (f->range && (res >= 0 || res == -EEXIST)) {
		res = io__range_take(f, (int)res);
		if (res < 0)
			return (int)res; /* its sentence says why, in the temporary's words */
	}
	if (res < 0)
		return rcp_err((int)res, "cannot create a temporary file for \"%s\": %s",
			       name_of(f, esc), strerror((int)-res));
	f->fd = (int)res;
	f->created = true;
	err = preallocate(f);
	if (!err && direct_wanted(f))
		direct_open(f);
	return err;
}

/*
 * The calls of op and of each step after it here and now, until step says
 * no more (0) or fails; the first call's err (from _start) goes through.
 */
static int steps_run(struct io_wfile *f, struct io_op *op, int err,
		     int (*step)(struct io_wfile *f, struct io_op *op, int64_t res))
{
	while (!err && op->kind != IO_OP_NONE)
		if ((err = step(f, op, io_op_run(op, NULL))) > 0)
			err = 0; /* one more step */
	return err;
}

int io_wfile_open_rest(struct io_wfile *f, struct io_op *op)
{
	int err = steps_run(f, op, 0, io_wfile_open_step);

	if (err)
		io_wfile_abort(f);
	return err;
}

int io_wfile_open(struct io_root *root, const struct io_entry *e, uint32_t chunk,
		  struct io_wfile **f_out)
{
	struct io_wfile *f = NULL;
	struct io_op op;
	int err = io_wfile_open_start(root, e, chunk, &f, &op);

	err = steps_run(f, &op, err, io_wfile_open_step);
	if (err && f)
		io_wfile_abort(f);
	else if (!err)
		*f_out = f;
	return err;
}

/* The planned chunk at off of len bytes, or -1. */
static int64_t chunk_index(const struct io_wfile *f, uint64_t off, uint32_t len)
{
	const struct io_extent *ext = f->e->ext;
	uint32_t lo = 0, hi = f->e->n_ext, mid;
	uint64_t in, left;

	while (lo < hi) { /* the last extent that starts at or before off */
		mid = lo + (hi - lo) / 2;
		if (ext[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	in = off - ext[lo - 1].off;
	if (in >= ext[lo - 1].len || in % f->chunk)
		return -1;
	left = ext[lo - 1].len - in;
	if (len != (left < f->chunk ? left : f->chunk))
		return -1;
	return (int64_t)(f->first[lo - 1] + in / f->chunk);
}

int io_chunk_verify(struct io_wfile *f, uint64_t off, const void *data, uint32_t len, uint64_t hash)
{
	char esc[IO_ESC_MAX];
	uint64_t got = io_chunk_hash(data, len);
	int64_t k;

	if (got == hash) {
		/* What the record says it arrived with, if the file is kept (a repeat: the same).
		 */
		if (f->hash && (k = chunk_index(f, off, len)) >= 0)
			f->hash[k] = hash;
		return 0;
	}
	return rcp_err(-EBADMSG,
		       "the chunk at offset %llu of \"%s\" arrived damaged "
		       "(CRC-64 %016llx, expected %016llx)",
		       (unsigned long long)off, name_of(f, esc), (unsigned long long)got,
		       (unsigned long long)hash);
}

int io_chunk_write_start(struct io_wfile *f, uint64_t off, const void *data, uint32_t len,
			 struct io_op *op)
{
	bool direct = f->dfd >= 0 && !atomic_load(&f->dio_off) &&
		      io__dio_fits(&f->dio, off, len, data, true);
	char esc[IO_ESC_MAX];

	if (chunk_index(f, off, len) < 0)
		return rcp_err(-EBADMSG,
			       "a chunk at offset %llu of %u bytes is not one of the "
			       "planned chunks of \"%s\"",
			       (unsigned long long)off, len, name_of(f, esc));
	if (atomic_load(&f->failed)) {
		/* The first failure's cause, whichever chunk's error is said first. */
		int first = atomic_load(&f->fail_err);

		return rcp_err(first ? first : -EIO,
			       "cannot write \"%s\": an earlier write failed: %s", name_of(f, esc),
			       strerror(first ? -first : EIO));
	}
	*op = (struct io_op){
		.kind = IO_OP_WRITE, .fd = direct ? f->dfd : f->fd, .off = off, .len = len};
	return 0;
}

int io_chunk_write_end(struct io_wfile *f, uint64_t off, uint32_t len, int64_t put,
		       bool *complete_out)
{
	int64_t k = chunk_index(f, off, len);
	char esc[IO_ESC_MAX];
	uint64_t bit, prev;

	*complete_out = false;
	if (k < 0) /* io_chunk_write_start refused it: nothing was written */
		return rcp_err(-EBADMSG, "a chunk that is not one of \"%s\"'s was written",
			       name_of(f, esc));
	if (put < (int64_t)len) {
		int none = 0;

		atomic_compare_exchange_strong(&f->fail_err, &none, put < 0 ? (int)put : -EIO);
		atomic_store(&f->failed, true);
		return rcp_err(put < 0 ? (int)put : -EIO, "cannot write \"%s\" at offset %llu: %s",
			       name_of(f, esc), (unsigned long long)(off + (put > 0 ? put : 0)),
			       put < 0 ? strerror((int)-put) : "no progress");
	}
	bit = 1ull << (k % 64);
	prev = atomic_fetch_or(&f->bits[k / 64], bit);
	if (prev & bit)
		return 0; /* a repeat: counted the first time */
	if (f->log.map)	  /* written and checked: from now on a killed receiver keeps it */
		io__partial_log_put(&f->log, (uint64_t)k, f->hash[k]);
	atomic_fetch_add(&f->received, len);
	*complete_out = atomic_fetch_add(&f->done, 1) + 1 == f->n_chunks;
	return 0;
}

int io_chunk_write(struct io_wfile *f, uint64_t off, const void *data, uint32_t len, uint64_t hash,
		   bool *complete_out)
{
	struct io_op op;
	int err = io_chunk_write_start(f, off, data, len, &op);
	int64_t put;

	*complete_out = false;
	err = err ? err : io_chunk_verify(f, off, data, len, hash);
	if (err)
		return err;
	put = io_op_run(&op, (void *)data);
	/* a direct write the kernel refused: again through the page cache */
	if (io_chunk_write_redo(f, &op, put)) {
		if ((err = io_chunk_write_start(f, off, data, len, &op)) != 0)
			return err;
		put = io_op_run(&op, (void *)data);
	}
	return io_chunk_write_end(f, off, len, put, complete_out);
}

bool io__wfile_complete(const struct io_wfile *f)
{
	return atomic_load(&f->done) == f->n_chunks;
}

uint64_t io__wfile_received(const struct io_wfile *f)
{
	return atomic_load(&f->received);
}

void io_wfile_abort(struct io_wfile *f)
{
	if (!f)
		return;
	if (f->created && !f->range) { /* a range's other ranges may be landing there */
		unlinkat(f->pfd, f->tmp, 0);
		io__wfile_record_remove(f);
	}
	io__wfile_free(f);
}

/* The sentence for a failed sync of the target directory (err: -errno). */
static int dir_sync_err(const struct io_wfile *f, int err)
{
	char esc[IO_ESC_MAX];

	return rcp_err(err, "cannot sync the directory of \"%s\": %s", name_of(f, esc),
		       strerror(-err));
}

static uint64_t data_end(const struct io_entry *e)
{
	return e->n_ext ? e->ext[e->n_ext - 1].off + e->ext[e->n_ext - 1].len : 0;
}

/* One sentence for a failed call of finalize (errno as the call left it). */
static int settle_err(const struct io_wfile *f, const char *what)
{
	char esc[IO_ESC_MAX];
	int err = -errno;

	return rcp_err(err, "cannot %s \"%s\": %s", what, name_of(f, esc), strerror(-err));
}

/*
 * What the file needs before it may have its final name: its size, mode
 * and mtime; with IO_ROOT_FSYNC all of it goes to the disk next (finalize's
 * first I/O), so the fsync covers the metadata set here, not only the data.
 */
static int wfile_settle(struct io_wfile *f)
{
	bool keep = f->root->flags & IO_ROOT_KEEP_META;
	mode_t mode = keep ? (f->e->mode & 01777) : (f->e->mode & 0777 & ~f->root->umask);
	struct timespec ts[2];

	io__mtime_times(f->e->mtime_ns, ts);
	/* The writes set the size unless the file ends in a hole. */
	if (data_end(f->e) != f->e->size && ftruncate(f->fd, (off_t)f->e->size) < 0)
		return settle_err(f, "set the size of");
	/* setuid/setgid never survive: the peer does not choose what runs as us */
	if (fchmod(f->fd, mode) < 0)
		return settle_err(f, "set the mode of");
	if (keep && futimens(f->fd, ts) < 0)
		return settle_err(f, "set the time of");
	return 0;
}

/*
 * Close the file's descriptors and check each close: it may be the first
 * to report that data did not make it (NFS writes back on close and reports
 * EIO, ENOSPC or EDQUOT there). Linux releases a descriptor even when close
 * fails (EINTR included), so none is closed twice; any failure fails the
 * file, since nothing says its data was accepted.
 */
static int wfile_close(struct io_wfile *f)
{
	int fds[2] = {f->dfd, f->fd}, err = 0, i;
	char esc[IO_ESC_MAX];

	f->dfd = -1;
	f->fd = -1;
	for (i = 0; i < 2; i++) {
		if (fds[i] < 0 || close(fds[i]) == 0 || err)
			continue;
		err = -errno;
		rcp_err(err,
			"closing \"%s\" failed (%s): its data is in doubt, so it is not put "
			"in place",
			name_of(f, esc), strerror(-err));
	}
	return err;
}

/* The rename over the final name, the step after a clean close. */
static void rename_op(struct io_wfile *f, struct io_op *op)
{
	*op = (struct io_op){.kind = IO_OP_RENAME,
			     .fd = f->pfd,
			     .path = f->tmp,
			     .fd2 = f->pfd,
			     .path2 = f->last};
	f->fin = FIN_RENAME;
}

/*
 * Whether finalize syncs: with IO_ROOT_FSYNC, but not on a memory file
 * system (tmpfs, ramfs), whose fsync does nothing and would only cost a
 * ring's round trip per file.
 */
static bool syncs(const struct io_wfile *f)
{
	return (f->root->flags & IO_ROOT_FSYNC) && !f->root->memfs;
}

int io_wfile_finalize_start(struct io_wfile *f, struct io_op *op)
{
	char esc[IO_ESC_MAX];
	int err;

	if (atomic_load(&f->failed) || !io__wfile_complete(f)) {
		err = rcp_err(-EIO, "\"%s\" is not finished: %llu of %llu chunks arrived%s",
			      name_of(f, esc), (unsigned long long)atomic_load(&f->done),
			      (unsigned long long)f->n_chunks,
			      atomic_load(&f->failed) ? " and a write failed" : "");
		goto err_abort;
	}
	if (f->range) { /* synced always, never settled nor renamed (range.c) */
		*op = (struct io_op){.kind = IO_OP_FSYNC, .fd = f->fd};
		f->fin = FIN_SYNC;
		return 0;
	}
	/*
	 * Settled, synced and closed without an error before it has a name:
	 * nothing is renamed into place that the kernel did not accept in full.
	 */
	err = wfile_settle(f);
	if (err)
		goto err_abort;
	if (syncs(f)) {
		*op = (struct io_op){.kind = IO_OP_FSYNC, .fd = f->fd};
		f->fin = FIN_SYNC;
		return 0;
	}
	err = wfile_close(f);
	if (err)
		goto err_abort;
	rename_op(f, op);
	return 0;
err_abort:
	io_wfile_abort(f);
	return err;
}

int io_wfile_finalize_step(struct io_wfile *f, struct io_op *op, int64_t res)
{
	char esc[IO_ESC_MAX];
	int err = 0, dfd;

	switch (f->fin) {
	case FIN_SYNC:
		if (res < 0) {
			errno = (int)-res;
			err = settle_err(f, "sync");
		}
		if (!err && f->range) /* synced: now it counts as landed */
			err = io__range_record(f);
		err = err ? err : wfile_close(f);
		if (err || f->range) /* a range is done once synced, recorded and closed */
			break;
		rename_op(f, op);
		return 1;
	case FIN_RENAME:
		if (res < 0) {
			err = rcp_err((int)res, "cannot put \"%s\" in place: %s", name_of(f, esc),
				      strerror((int)-res));
			break;
		}
		f->created = false; /* the temporary is the final name now */
		io__wfile_record_remove(f);
		if (!syncs(f))
			break;
		if (f->pfd_kept) { /* synced once for all its files: io_root_dirs_finish */
			io__dir_dirty(f->root, f->parent);
			break;
		}
		/* The directory too, so the rename itself survives a crash. */
		dfd = openat(f->pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			err = dir_sync_err(f, -errno);
			break;
		}
		f->fd = dfd; /* read-only: its close has nothing to write back */
		*op = (struct io_op){.kind = IO_OP_FSYNC, .fd = dfd};
		f->fin = FIN_DIR_SYNC;
		return 1;
	case FIN_DIR_SYNC:
		if (res < 0)
			err = dir_sync_err(f, (int)res);
		break;
	}
	*op = (struct io_op){.kind = IO_OP_NONE};
	io_wfile_abort(f); /* removes the temporary only if it was not renamed */
	return err;
}

int io_wfile_finalize(struct io_wfile *f)
{
	struct io_op op;
	int err = io_wfile_finalize_start(f, &op);

	return steps_run(f, &op, err, io_wfile_finalize_step);
}
