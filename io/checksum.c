/*
 * checksum.c - a -c copy's start from what the destination holds
 * (IO_ROOT_CHECKSUM): the old file's bytes become the partial file the new
 * one is built in, and every chunk they fill whole is held, as a --partial
 * copy holds what an earlier one kept.
 *
 * For a regular file already at e's final name, the partial data file
 * (partial.c: its fixed name, taken only as the receiver's own, locked) is
 * emptied and sized to e's size (so holes stay holes and a shorter file
 * loses its old tail), and each chunk of e that lies wholly within the old
 * file's size is held. Nothing is read yet: the held map goes to the sender
 * at once, so both ends read and hash together, and no descriptor of the
 * old file is kept (a tree of many files would hold one each). The
 * digests' pass (engine/session/kept.c, through io_partial_read) then
 * takes each held chunk once: the old file opened again by its name, with
 * the same checks, and the chunk cloned from it where its file system can
 * (FICLONERANGE, a reflink: no bytes move) and read back from the partial
 * file, else read from it into the pass's buffer and written from there
 * into the partial file. Either way the bytes hashed (keyed digest, and the
 * CRC-64 the file's record and log keep) are those the new file holds, even
 * if the old file changes meanwhile: a chunk it lost since (cut, removed)
 * reads as zeros and will not match. The chunks whose digests differ from
 * the sender's are received again, written over the old bytes, and the file
 * is put in place by its rename as any other.
 *
 * No old file, or one that is not a regular file, holds nothing: the file
 * is sent whole.
 *
 * A -c copy that was cut keeps its partial files, as --partial does: the
 * record and log say which chunks it received and confirmed, each with its
 * CRC-64. The next -c copy takes them first as --partial does
 * (io__partial_claims: the record of the same source, each chunk read back
 * and checked) and keeps its data file, sized anew, instead of emptying
 * it; only the chunks it does not hold that lie within the old file are
 * then held from the old file ("late": read in the digests' pass). The
 * sender confirms both kinds by digest, so at most the chunks that changed
 * and were not received yet travel.
 *
 * A dry run (IO_ROOT_DRY, -c -n) holds the same chunks without making or
 * writing anything: a cut copy's claims are taken as the next -c would take
 * them, but only looked at (p->look: nothing is removed, the data file is
 * opened for reading, its shared lock taken only to see that no copy
 * writes it and let go before its chunks are read back), and read from the
 * data file; the others are read from the old file. So the digests
 * compared, and the chunks counted, are the ones the next -c copy would
 * compare and send; but where that copy could not make or lock the data
 * file (data_make: another copy writing it, or a name it may not replace)
 * it would send the file whole, which the count, keeping the old file's
 * chunks, does not foresee.
 *
 * Threading: thread-safe on distinct entries.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Up to len bytes at off from fd into buf; what it could not read (a file cut since) is zeros. */
static int read_full(int fd, uint8_t *buf, uint64_t off, uint32_t len)
{
	uint32_t got = 0;
	ssize_t n = 1;

	while (got < len && n > 0) {
		n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			n = 1;
		else if (n < 0)
			return -errno;
		else
			got += (uint32_t)n;
	}
	memset(buf + got, 0, len - got);
	return 0;
}

/*
 * Hold each chunk of e inside the old file's size bytes that p does not
 * hold already (a cut copy received it); its CRC-64 comes when the digests'
 * pass reads it (io_partial_read: a late chunk), so it is read once.
 */
static void chunks_hold(const struct io_entry *e, uint32_t chunk, uint64_t size,
			struct io_partial *p)
{
	uint64_t k = 0, in, len;
	uint32_t x;

	for (x = 0; x < e->n_ext; x++) {
		for (in = 0; in < e->ext[x].len; in += chunk, k++) {
			len = e->ext[x].len - in < chunk ? e->ext[x].len - in : chunk;
			if (e->ext[x].off + in + len > size || io_partial_has(p, k))
				continue;
			p->bits[k / 64] |= 1ull << (k % 64);
			p->late[k / 64] |= 1ull << (k % 64);
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

/*
 * Chunk at off cloned from old into p's file (a reflink: no bytes copied)
 * and read back from it, so what is hashed is what the new file holds even
 * if old changes meanwhile; -EOPNOTSUPP where old's file system cannot.
 */
static int clone_chunk(struct io_partial *p, int old, uint64_t off, uint32_t len, uint8_t *buf)
{
	struct file_clone_range r = {
		.src_fd = old, .src_offset = off, .src_length = len, .dest_offset = off};

	/* The pass's threads share p: no_clone is an atomic. */
	if (__atomic_load_n(&p->no_clone, __ATOMIC_RELAXED) || ioctl(p->fd, FICLONERANGE, &r) < 0) {
		if (errno != EINVAL) /* EINVAL: this range only (a tail cut since) */
			__atomic_store_n(&p->no_clone, true, __ATOMIC_RELAXED);
		return -EOPNOTSUPP;
	}
	return read_full(p->fd, buf, off, len);
}

/* The old file at p's name, opened as io__root_checksum did: -1 if it is no longer there. */
static int old_reopen(const struct io_partial *p)
{
	const char *last;
	uint64_t size;
	int pfd, old;

	if (io__parent_open(p->root_fd, p->old_path, &pfd, &last) != 0) {
		rcp_err_clear();
		return -1;
	}
	old = old_open(pfd, last, &size);
	close(pfd);
	return old;
}

int io__checksum_fill(struct io_partial *p, uint64_t off, uint32_t len, void *buf)
{
	bool into = p->fd >= 0 && !p->look; /* a dry run's data file (a cut copy's) is only read */
	int old = old_reopen(p),
	    err = old < 0 || !into ? -EOPNOTSUPP : clone_chunk(p, old, off, len, buf);
	ssize_t w;

	if (err == -EOPNOTSUPP) {
		/* One read of the old bytes: hashed from buf, and buf is what the file gets. */
		if (old < 0)
			memset(buf, 0, len); /* gone since: reads as zeros */
		err = old < 0 ? 0 : read_full(old, buf, off, len);
		/* A dry run's: the old bytes hashed, nothing written. */
		if (!err && into && (w = pwrite(p->fd, buf, len, (off_t)off)) != (ssize_t)len)
			err = w < 0 ? -errno : -EIO;
	}
	if (old >= 0)
		close(old);
	if (err)
		return rcp_err(err, "cannot copy a chunk of the old file at %" PRIu64 ": %s", off,
			       strerror(-err));
	return 0;
}

/* The partial data file of p's entry made from old: locked, emptied, filled, sized. */
static const char *data_make(int pfd, const char *last, uint64_t old_size, const struct io_entry *e,
			     uint32_t chunk, struct io_partial *p)
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
	if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)e->size) < 0)
		return "its partial file cannot be sized";
	chunks_hold(e, chunk, old_size, p);
	return NULL;
}

/*
 * What a cut -c copy of e received and kept (its partial file's record and
 * log, each chunk read back and checked: io__partial_claims), taken into p,
 * its data file locked; else p is left as new, nothing of it open.
 */
static void cut_take(int pfd, const char *last, const struct io_entry *e, uint32_t chunk,
		     struct io_partial *p)
{
	const char *why = io__partial_claims(pfd, last, e, chunk, p);
	char esc[IO_ESC_MAX];

	if (why)
		rcp_log(RCP_LOG_NOTICE, "the partial record of \"%s\" is ignored: %s",
			io__path_escape(e->path, strlen(e->path), esc), why);
	if (!why && p->held)
		return;
	if (p->fd >= 0)
		close(p->fd); /* and its lock */
	p->fd = -1;
	p->held = p->held_bytes = 0;
	memset(p->bits, 0, (size_t)(p->n_chunks / 64 + 1) * sizeof(*p->bits));
	memset(p->hash, 0, (size_t)p->n_chunks * sizeof(*p->hash));
}

/*
 * The holds of p (new, or with what a cut copy received: cut_take) for e
 * beneath pfd, old (-1: none) old_size bytes: a dry run's where they are;
 * else in the partial data file, a cut copy's sized anew, or one made from
 * the old file. A reason when it cannot be.
 */
static const char *holds_make(int pfd, const char *last, bool dry, int old, uint64_t old_size,
			      const struct io_entry *e, uint32_t chunk, struct io_partial *p)
{
	if (p->fd < 0 && !dry)
		return old >= 0 ? data_make(pfd, last, old_size, e, chunk, p) : NULL;
	if (p->fd >= 0 && !dry && ftruncate(p->fd, (off_t)e->size) < 0)
		return "its partial file cannot be sized";
	if (old >= 0) /* what no cut copy received: from the old file */
		chunks_hold(e, chunk, old_size, p);
	return NULL;
}

struct io_partial *io__root_checksum(const struct io_root *root, const struct io_entry *e,
				     uint32_t chunk)
{
	uint64_t n_chunks = io__entry_chunks(e, chunk), old_size = 0;
	bool dry = root->flags & IO_ROOT_DRY;
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
	p = io__partial_new(n_chunks);
	if (p) { /* a dry run only looks: it removes, writes and keeps locked nothing */
		p->look = dry;
		cut_take(pfd, last, e, chunk, p);
	}
	old = old_open(pfd, last, &old_size); /* none: only what a cut copy received is held */
	why = p ? holds_make(pfd, last, dry, old, old_size, e, chunk, p) : "out of memory";
	close(pfd);
	if (old >= 0)
		close(old);
	/* Opened again for each chunk in the digests' pass: no descriptor held till then. */
	if (p)
		p->root_fd = root->fd;
	if (!why && !(p->old_path = strdup(e->path)))
		why = "out of memory";
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
