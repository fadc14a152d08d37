/*
 * rfile.c - the sender's side of a file: chunks read with pread at their
 * offsets, each with its hash (io_chunk_hash).
 *
 * With IO_DIRECT (or IO_DIRECT_AUTO and a file io_direct_pays picks: large,
 * not on tmpfs, and not mostly in the page cache already) a second
 * descriptor is opened with O_DIRECT and used for
 * every chunk whose offset and buffer are aligned; it reads the length
 * rounded up to IO_DIRECT_ALIGN (the tail of a file is rarely aligned, and a
 * direct read past the end simply returns less). Unaligned chunks and file
 * systems without O_DIRECT use the buffered descriptor, so O_DIRECT is a
 * speed option, never a reason to fail. The handle refers to its manifest
 * entry, which must outlive it. With a root (a server answering a pull),
 * e->src is opened with openat2 beneath it, like everything a receiver
 * creates, so a peer's names cannot make us read outside the root.
 *
 * The open never blocks on a FIFO swapped in after the walk (O_NONBLOCK,
 * then the type is checked), and a file whose size or modification time
 * differs from what the walk recorded is refused: its chunks were planned
 * from the walk.
 *
 * The open and a chunk's read each come in two halves, so the system call
 * itself can go through a ring (engine/datapath/ioring.c):
 * io_rfile_open_start and io_chunk_read_start say what to call (struct
 * io_op), io_rfile_open_end and io_chunk_read_end judge what came back.
 * io_rfile_open and io_chunk_read do all of it at once.
 *
 * Threading: io_chunk_read* are thread-safe (pread only); open and close are not.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct io_rfile {
	const struct io_entry *e;
	int fd;
	int dfd;	     /* O_DIRECT, or -1 */
	struct io__dio dio;  /* what dfd's reads need aligned */
	atomic_bool dio_off; /* the kernel refused a direct read: buffered from now on */
};

/* The open of e->src with flags, beneath root when there is one. */
static void src_op(const struct io_root *root, const struct io_entry *e, int flags,
		   struct io_op *op)
{
	flags |= O_RDONLY | O_NOFOLLOW | O_NOCTTY;
	io__open_op(root ? root->fd : AT_FDCWD, e->src, (uint64_t)flags, root != NULL, op);
}

/* The descriptor op's open returned, or -errno with a sentence. */
static int src_opened(const struct io_root *root, const struct io_entry *e, const struct io_op *op,
		      int64_t res, int *fd_out)
{
	res = io__open_retry(op, res);
	if (res < 0 && root)
		return io__resolve_err((int)res, e->src, "path");
	if (res < 0)
		return rcp_err((int)res, "cannot open %s: %s", e->src, strerror((int)-res));
	*fd_out = (int)res;
	return 0;
}

static int src_open(const struct io_root *root, const struct io_entry *e, int flags, int *fd_out)
{
	struct io_op op;

	src_op(root, e, flags, &op);
	return src_opened(root, e, &op, io_op_run(&op, NULL), fd_out);
}

/*
 * An O_DIRECT descriptor of the same file, or -1 (O_DIRECT is an option, not
 * a need); dio_out: the alignment its reads need.
 */
static int direct_open(const struct io_root *root, const struct io_entry *e, int fd,
		       struct io__dio *dio_out)
{
	struct stat a, b;
	int dfd = -1, err;

	if (!io__dio_align(fd, dio_out))
		return -1; /* a file system without direct I/O, or one the slots cannot meet */
	err = src_open(root, e, O_DIRECT, &dfd);
	if (err) {
		rcp_log(RCP_LOG_INFO, "no O_DIRECT, reading through the page cache: %s",
			rcp_err_msg(err));
		return -1;
	}
	if (fstat(fd, &a) < 0 || fstat(dfd, &b) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		close(dfd);
		return -1;
	}
	return dfd;
}

int io_rfile_open_start(const struct io_root *root, const struct io_entry *e, struct io_op *op)
{
	if (e->type != IO_FILE || !e->src)
		return rcp_err(-EINVAL, "%s is not a regular file of this host", e->path);
	/* O_NONBLOCK: a FIFO swapped in since the walk must not hold the open. */
	src_op(root, e, O_NONBLOCK, op);
	return 0;
}

/* Whether st is the file as the walk listed it: the same size and mtime. */
/* The file the walk listed, as it was: the same inode (when the walk saw one), size and time. */
static bool as_listed(const struct stat *st, const struct io_entry *e)
{
	return (!e->ino || (st->st_dev == e->dev && st->st_ino == e->ino)) &&
	       (uint64_t)st->st_size == e->size &&
	       (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec == e->mtime_ns;
}

int io_rfile_open_end(const struct io_root *root, const struct io_entry *e, unsigned flags,
		      const struct io_op *op, int64_t res, struct io_rfile **f_out)
{
	struct io_rfile *f = calloc(1, sizeof(*f));
	struct stat st;
	int err;

	if (!f) {
		if (res >= 0)
			close((int)res);
		return rcp_err(-ENOMEM, "out of memory opening %s", e->src);
	}
	f->e = e;
	f->dfd = -1;
	err = src_opened(root, e, op, res, &f->fd);
	if (err)
		goto err_free;
	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		err = rcp_err(-EIO, "%s is no longer a regular file", e->src);
		goto err_close;
	}
	/* What the walk saw is what the chunks were planned from: a change means another file. */
	if (!as_listed(&st, e)) {
		err = rcp_err(-ESTALE,
			      "%s changed after it was listed (replaced, or its size or "
			      "modification time changed): "
			      "copy it again once it is no longer written to",
			      e->src);
		goto err_close;
	}
	/*
	 * Of the flags F_SETFL sets, this descriptor was opened with O_NONBLOCK
	 * alone (src_op; O_DIRECT gets a descriptor of its own): clearing all of
	 * them needs no F_GETFL first, one system call per file fewer.
	 */
	fcntl(f->fd, F_SETFL, O_RDONLY);
	if (io__direct_wanted(flags, e, f->fd))
		f->dfd = direct_open(root, e, f->fd, &f->dio);
	*f_out = f;
	return 0;
err_close:
	close(f->fd);
err_free:
	free(f);
	return err;
}

int io_rfile_unchanged(const struct io_rfile *f)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return rcp_err(-errno, "cannot check %s after reading it: %s", f->e->src,
			       strerror(errno));
	if (!as_listed(&st, f->e))
		return rcp_err(-ESTALE,
			       "%s changed while it was being sent (replaced, or its size or "
			       "modification time changed): "
			       "copy it again once it is no longer written to",
			       f->e->src);
	return 0;
}

int io_rfile_open(const struct io_root *root, const struct io_entry *e, unsigned flags,
		  struct io_rfile **f_out)
{
	struct io_op op;
	int err = io_rfile_open_start(root, e, &op);

	return err ? err : io_rfile_open_end(root, e, flags, &op, io_op_run(&op, NULL), f_out);
}

bool io_rfile_direct(const struct io_rfile *f)
{
	return f->dfd >= 0;
}

bool io_chunk_read_redo(struct io_rfile *f, const struct io_op *op, int64_t got)
{
	if (got != -EINVAL || f->dfd < 0 || op->fd != f->dfd)
		return false;
	if (!atomic_exchange(&f->dio_off, true))
		rcp_log(RCP_LOG_INFO,
			"a direct read of %s was refused (%s): reading it through the page cache",
			f->e->src, strerror(EINVAL));
	return true;
}

void io_rfile_close(struct io_rfile *f)
{
	if (!f)
		return;
	if (f->dfd >= 0)
		close(f->dfd);
	close(f->fd);
	free(f);
}

int io_chunk_read_start(struct io_rfile *f, uint64_t off, uint32_t len, const void *buf,
			struct io_op *op)
{
	bool direct = f->dfd >= 0 && !atomic_load(&f->dio_off) &&
		      io__dio_fits(&f->dio, off, len, buf, false);

	if (off > f->e->size || len > f->e->size - off)
		return rcp_err(-EINVAL, "a chunk at %llu+%u is outside %s (%llu bytes)",
			       (unsigned long long)off, len, f->e->src,
			       (unsigned long long)f->e->size);
	*op = (struct io_op){
		.kind = IO_OP_READ,
		.fd = direct ? f->dfd : f->fd,
		.off = off,
		.len = direct ? (len + f->dio.off - 1) / f->dio.off * f->dio.off : len,
	};
	return 0;
}

int io_chunk_read_end(struct io_rfile *f, uint64_t off, uint32_t len, int64_t got)
{
	if (got < 0)
		return rcp_err((int)got, "cannot read %s at offset %llu: %s", f->e->src,
			       (unsigned long long)off, strerror((int)-got));
	if (got < (int64_t)len)
		return rcp_err(-EIO,
			       "%s got shorter while it was being sent (%llu bytes at offset "
			       "%llu are missing)",
			       f->e->src, (unsigned long long)(len - got),
			       (unsigned long long)(off + (uint64_t)got));
	return 0;
}

int io_chunk_read(struct io_rfile *f, uint64_t off, uint32_t len, void *buf, uint64_t *hash_out)
{
	struct io_op op;
	int err = io_chunk_read_start(f, off, len, buf, &op);
	int64_t got = 0;

	/* a direct read the kernel refused: again through the page cache */
	if (!err && io_chunk_read_redo(f, &op, got = io_op_run(&op, buf)) &&
	    !(err = io_chunk_read_start(f, off, len, buf, &op)))
		got = io_op_run(&op, buf);
	if (!err)
		err = io_chunk_read_end(f, off, len, got);
	if (!err)
		*hash_out = io_chunk_hash(buf, len);
	return err;
}
