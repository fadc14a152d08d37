/*
 * op.c - one step of file I/O done here and now (struct io_op): pread and
 * pwrite of a chunk, openat2, renameat, fsync. It is the thread-pool path of the
 * data path's I/O and the synchronous half of every two-step call of io/; a
 * ring does the same steps elsewhere (engine/datapath/ioring.c).
 *
 * Threading: thread-safe.
 */
#include "io/io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static int64_t rw_run(const struct io_op *op, void *buf)
{
	size_t done = 0;
	ssize_t n;

	while (done < op->len) {
		if (op->kind == IO_OP_READ)
			n = pread(op->fd, (char *)buf + done, op->len - done,
				  (off_t)(op->off + done));
		else
			n = pwrite(op->fd, (const char *)buf + done, op->len - done,
				   (off_t)(op->off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break; /* a read at the end of the file; a write that makes no progress */
		done += (size_t)n;
	}
	return (int64_t)done;
}

int64_t io_op_run(const struct io_op *op, void *buf)
{
	long r;

	switch (op->kind) {
	case IO_OP_READ:
	case IO_OP_WRITE:
		return rw_run(op, buf);
	case IO_OP_OPEN:
		r = syscall(SYS_openat2, op->fd, op->path, &op->how, sizeof(op->how));
		return r < 0 ? -errno : r;
	case IO_OP_RENAME:
		return renameat(op->fd, op->path, op->fd2, op->path2) < 0 ? -errno : 0;
	case IO_OP_FSYNC:
		return fsync(op->fd) < 0 ? -errno : 0;
	case IO_OP_NONE:
		break;
	}
	return 0;
}

void io__open_op(int dirfd, const char *path, uint64_t flags, bool beneath, struct io_op *op)
{
	*op = (struct io_op){
		.kind = IO_OP_OPEN,
		.fd = dirfd,
		.path = path,
		.how = {.flags = flags | O_CLOEXEC,
			.mode = (flags & O_CREAT) ? 0600 : 0,
			.resolve = beneath ? RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS : 0},
	};
}

int64_t io__open_retry(const struct io_op *op, int64_t res)
{
	int tries;

	/* The kernel answers EAGAIN when a concurrent rename raced a ".." step. */
	for (tries = 0; res == -EAGAIN && tries < 8; tries++)
		res = io_op_run(op, NULL);
	return res;
}
