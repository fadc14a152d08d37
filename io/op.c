/*
 * op.c - one chunk's read or write done here and now, with pread or pwrite:
 * the thread-pool path of the data path's I/O, and the whole of
 * io_chunk_read and io_chunk_write. A ring does the same op elsewhere
 * (engine/datapath/helpers.c).
 *
 * Threading: thread-safe.
 */
#include "io/io_int.h"

#include <errno.h>
#include <unistd.h>

int64_t io_op_run(const struct io_op *op, enum io_op_kind kind, void *buf)
{
	size_t done = 0;
	ssize_t n;

	while (done < op->len) {
		if (kind == IO_OP_READ)
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
