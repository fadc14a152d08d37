/*
 * checksum.c - a -c copy's start from what the destination holds
 * (IO_ROOT_CHECKSUM): the old file's bytes become the partial file the new
 * one is built in, and every chunk they fill whole is held, as a --partial
 * copy holds what an earlier one kept.
 *
 * For a regular file already at e's final name, the partial data file
 * (partial.c: its fixed name, taken only as the receiver's own, locked) is
 * emptied, then each of e's data extents gets the old file's bytes at the
 * same offsets, as far as the old file reaches: copy_file_range(2), which
 * the file system may do as a reflink, else through read and write. The
 * data file is then cut or extended to e's size, so holes stay holes and a
 * shorter file loses its old tail. Each chunk of e that lies wholly within
 * the old file's size is held; its CRC-64 (what the file's record and log
 * keep) is taken when the digests' pass reads it back. The engine then treats the held chunks as
 * kept ones: their keyed digests are compared with the sender's (engine/session/kept.c), those that
 * differ are received again, written over the old bytes, and the file is put in place by its rename
 * as any other.
 *
 * No old file, or one that is not a regular file, holds nothing: the file
 * is sent whole.
 *
 * Threading: thread-safe on distinct entries.
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

#define COPY_BUF (1u << 20)

/* len bytes at off from in to out through a buffer (no copy_file_range there). */
static int copy_rw(int in, int out, uint64_t off, uint64_t len)
{
	uint8_t *buf = malloc(COPY_BUF);
	int err = buf ? 0 : -ENOMEM;

	while (!err && len) {
		size_t want = len < COPY_BUF ? (size_t)len : COPY_BUF;
		ssize_t n = pread(in, buf, want, (off_t)off);

		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else if (pwrite(out, buf, (size_t)n, (off_t)off) != n)
			err = -EIO;
		off += n > 0 ? (uint64_t)n : 0;
		len -= n > 0 ? (uint64_t)n : 0;
	}
	free(buf);
	return err;
}

/* len bytes at off from in to out: copy_file_range, falling back to copy_rw. */
static int copy_range(int in, int out, uint64_t off, uint64_t len)
{
	while (len) {
		loff_t a = (loff_t)off, b = (loff_t)off;
		ssize_t n = copy_file_range(in, &a, out, &b, len, 0);

		if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			      errno == EOPNOTSUPP || errno == EBADF))
			return copy_rw(in, out, off, len);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* e's extents, each as far as the old file (size bytes) reaches, from old to fd. */
static int extents_copy(int old, int fd, const struct io_entry *e, uint64_t size)
{
	uint32_t x;
	int err = 0;

	for (x = 0; x < e->n_ext && !err; x++) {
		uint64_t off = e->ext[x].off, end = off + e->ext[x].len;

		if (off < size)
			err = copy_range(old, fd, off, (end < size ? end : size) - off);
	}
	return err;
}

/*
 * Hold each chunk of e inside the old file's size bytes; its CRC-64 comes
 * when the digests' pass reads it (io_partial_read), so it is read once.
 */
static void chunks_hold(const struct io_entry *e, uint32_t chunk, uint64_t size,
			struct io_partial *p)
{
	uint64_t k = 0, in, len;
	uint32_t x;

	p->hash_late = true;
	for (x = 0; x < e->n_ext; x++) {
		for (in = 0; in < e->ext[x].len; in += chunk, k++) {
			len = e->ext[x].len - in < chunk ? e->ext[x].len - in : chunk;
			if (e->ext[x].off + in + len > size)
				continue;
			p->bits[k / 64] |= 1ull << (k % 64);
			p->held++;
			p->held_bytes += len;
		}
	}
}

/*
 * The old file last beneath pfd, opened for reading if it is a regular file
 * with one name or of this user; its size. A file of another user's with
 * other names could be a hard link someone with the key planted to a file
 * they may not read (where protected_hardlinks is off): its chunks' digests
 * would tell of its content, so it is sent whole instead.
 */
static int old_open(int pfd, const char *last, uint64_t *size_out)
{
	int fd = openat(pfd, last, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_nlink > 1 && st.st_uid != geteuid())) {
		close(fd);
		return -EINVAL;
	}
	*size_out = (uint64_t)st.st_size;
	return fd;
}

/* The partial data file of p's entry made from old: locked, emptied, filled, sized. */
static const char *data_make(int pfd, const char *last, int old, uint64_t old_size,
			     const struct io_entry *e, uint32_t chunk, struct io_partial *p)
{
	char data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], log[IO_TMP_NAME_LEN];
	int fd;

	io__partial_names(last, data, rec, log);
	fd = io__partial_open(pfd, data, O_RDWR | O_CREAT, e->path);
	if (fd < 0)
		return "its partial file cannot be made";
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return "another copy is writing its partial file";
	}
	p->fd = fd;
	if (ftruncate(fd, 0) < 0 || extents_copy(old, fd, e, old_size) != 0 ||
	    ftruncate(fd, (off_t)e->size) < 0)
		return "the old file cannot be copied";
	chunks_hold(e, chunk, old_size, p);
	return NULL;
}

struct io_partial *io__root_checksum(const struct io_root *root, const struct io_entry *e,
				     uint32_t chunk)
{
	uint64_t n_chunks = io__entry_chunks(e, chunk), old_size = 0;
	const char *last, *why;
	char esc[IO_ESC_MAX];
	struct io_partial *p;
	int pfd, old;

	if (e->type != IO_FILE || n_chunks == 0)
		return NULL;
	if (io__parent_open(root->fd, e->path, &pfd, &last) != 0) {
		rcp_err_clear(); /* the copy itself says so */
		return NULL;
	}
	old = old_open(pfd, last, &old_size);
	if (old < 0) {
		close(pfd);
		return NULL; /* nothing there to compare: sent whole */
	}
	p = io__partial_new(n_chunks);
	why = p ? data_make(pfd, last, old, old_size, e, chunk, p) : "out of memory";
	close(old);
	close(pfd);
	if (why) {
		rcp_log(RCP_LOG_NOTICE, "\"%s\" is sent whole: %s",
			io__path_escape(e->path, strlen(e->path), esc), why);
		io_partial_destroy(p);
		return NULL;
	}
	if (p->held == 0) {
		io_partial_destroy(p);
		return NULL;
	}
	return p;
}
