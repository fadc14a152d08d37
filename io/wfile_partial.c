/*
 * wfile_partial.c - a received file written in its partial file
 * (--partial, partial.c): what an earlier copy kept taken on when it is
 * opened, its record written as it goes and kept when the copy fails.
 *
 * A file of several chunks beneath a root with IO_ROOT_PARTIAL is received
 * in the data file of a fixed name beside its final name instead of a
 * random temporary: io_wfile_partial asks for it between the open's start
 * and its first step, and the open creates that name with O_EXCL
 * (wfile.c). What it finds there is judged by io__wfile_partial_take: the
 * file an earlier copy kept and this one checked (io_root_partial, still
 * locked), else one that is the receiver's own, locked and emptied, else a
 * random temporary after all; with IO_ROOT_SPARE (a copy that did not ask
 * for --partial) a name already taken is left alone: a random temporary.
 * Its chunks' log slots are stored as they land
 * (io_chunk_write_end); io_wfile_checkpoint writes its record as it stands;
 * io_wfile_keep keeps data file and record when the copy fails; the record
 * and the log go when the data file is put in place or removed
 * (io__wfile_record_remove). partial_record.c writes both.
 *
 * Threading: the take runs in the open's step. io_wfile_checkpoint may run
 * while chunks are written (it reads the chunk map atomically, the count
 * first), but not against the handle's open, finalize or end, nor against
 * itself; io_wfile_keep ends the handle. The log's slots are stored by the
 * writers, each its own.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* What f's record and log say of it. */
static struct io__partial_what what_of(const struct io_wfile *f)
{
	return (struct io__partial_what){.path = f->e->path,
					 .last = f->last,
					 .chunk = f->chunk,
					 .size = f->e->size,
					 .mtime_ns = f->e->mtime_ns,
					 .n_chunks = f->n_chunks,
					 .bits = f->bits,
					 .hash = f->hash};
}

/*
 * The partial file, as the open with O_EXCL of its name answered (res: a
 * new file, or -EEXIST): one there already is taken only if it is the
 * receiver's own, else removed and made anew (io__partial_open), so nothing
 * another user planted is kept, emptied or written. With what an earlier
 * copy kept, it is the file locked when those chunks were checked, or the
 * file fails (the sender was told they are here). Else ours if we lock it
 * and it is still the file of that name, emptied; else (another copy writes
 * it, or another user's file holds the name and cannot be removed) a random
 * temporary instead, made here: the file is received as without --partial.
 * The descriptor, or -errno.
 */
int io__wfile_partial_take(struct io_wfile *f, int res)
{
	const struct io_partial *resume = f->resume;
	int held = io__partial_fd(resume), lockfd = -1, fd;
	struct io__partial_what what;
	struct stat a, b;
	uint64_t k;

	f->resume = NULL;
	if (res < 0 && held < 0 && (f->root->flags & IO_ROOT_SPARE))
		fd = -EEXIST; /* another copy's, or one it kept: left alone */
	else
		fd = res >= 0 ? res
			      : io__partial_open(f->pfd, f->tmp, O_RDWR | O_CREAT, f->e->path);
	if (held >= 0) {
		/* Locked since its chunks were checked: the file opened now must be that one. */
		if (fd >= 0 && fstat(fd, &a) == 0 && fstat(held, &b) == 0 && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev && (lockfd = dup(held)) >= 0)
			goto ours;
		if (fd >= 0)
			close(fd);
		return -EIO; /* what the sender was told is kept is not there */
	}
	if (fd < 0)
		goto fresh;
	lockfd = dup(fd);
	if (lockfd >= 0 && flock(lockfd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 &&
	    fstatat(f->pfd, f->tmp, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
	    a.st_dev == b.st_dev && ftruncate(fd, 0) == 0)
		goto ours;
	if (lockfd >= 0)
		close(lockfd);
fresh:
	if (fd >= 0)
		close(fd);
	f->partial = false;
	io__tmp_name(f->tmp);
	fd = openat(f->pfd, f->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
ours:
	f->lockfd = lockfd;
	for (k = 0; k < f->n_chunks; k++) {
		if (!io_partial_has(resume, k))
			continue;
		f->bits[k / 64] |= 1ull << (k % 64);
		f->hash[k] = io__partial_hash(resume, k);
		f->done++;
	}
	f->received = io__partial_bytes(resume);
	/*
	 * The log: what a receiver killed outright leaves, up to its last
	 * chunk (a record lags by up to a checkpoint). None is no error: the
	 * records still keep what they say.
	 */
	what = what_of(f);
	if (io__partial_log_open(f->pfd, &what, held >= 0, &f->log) == 0)
		for (k = 0; k < f->n_chunks; k++)
			if (io_partial_has(resume, k))
				io__partial_log_put(&f->log, k, f->hash[k]);
	return fd;
}

/*
 * IO_ROOT_SPARE: the partial names of f are taken (data file, record or
 * log there: an earlier --partial copy's, or another copy's at work).
 */
static bool names_taken(const struct io_wfile *f)
{
	char data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], log[IO_TMP_NAME_LEN];
	struct stat st;

	io__partial_names(f->last, data, rec, log);
	return fstatat(f->pfd, data, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	       fstatat(f->pfd, rec, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	       fstatat(f->pfd, log, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int io_wfile_partial(struct io_wfile *f, const struct io_partial *resume)
{
	char esc[IO_ESC_MAX];

	if (!(f->root->flags & IO_ROOT_PARTIAL) ||
	    f->n_chunks < (f->root->flags & IO_ROOT_CHECKSUM ? 1u : 2u))
		return 0; /* a file of one chunk has nothing to keep, but with -c its old self */
	if ((f->root->flags & IO_ROOT_SPARE) && !resume && names_taken(f))
		return 0; /* kept for a later --partial: a random temporary, as without it */
	f->hash = calloc((size_t)f->n_chunks, sizeof(*f->hash));
	if (!f->hash)
		return rcp_err(-ENOMEM, "out of memory receiving \"%s\"",
			       io__path_escape(f->e->path, strlen(f->e->path), esc));
	f->partial = true;
	f->resume = resume;
	{ /* its own name, not the random one: what an earlier copy kept may be there */
		char rec[IO_TMP_NAME_LEN], log[IO_TMP_NAME_LEN];

		io__partial_names(f->last, f->tmp, rec, log);
	}
	return 0;
}

/* A partial file's record and log go when its data file does (put in place, or removed). */
void io__wfile_record_remove(struct io_wfile *f)
{
	char data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], log[IO_TMP_NAME_LEN];

	if (!f->partial || f->pfd < 0)
		return;
	io__partial_names(f->last, data, rec, log);
	unlinkat(f->pfd, rec, 0);
	unlinkat(f->pfd, log, 0);
}

/* The record of f as it stands, written: 0, or -errno with a sentence. */
static int record_write(struct io_wfile *f)
{
	const struct io__partial_what w = what_of(f);

	return io__partial_record_write(f->pfd, &w);
}

/* A partial file whose writes all went well: what it holds is worth a record. */
static bool keepable(const struct io_wfile *f)
{
	return f->partial && f->created && !atomic_load(&f->failed);
}

int io_wfile_checkpoint(struct io_wfile *f)
{
	uint64_t done = atomic_load(&f->done); /* before the map is read: never ahead of it */
	int err;

	if (!keepable(f) || done == f->recorded)
		return 0; /* the record on disk says as much */
	err = record_write(f);
	if (!err)
		f->recorded = done;
	return err;
}

void io_wfile_keep(struct io_wfile *f)
{
	if (!f || !keepable(f) || record_write(f) != 0) {
		io_wfile_abort(f);
		return;
	}
	io__wfile_free(f); /* the data file stays, with its record */
}
