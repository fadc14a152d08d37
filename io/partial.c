/*
 * partial.c - what a receiver keeps of an interrupted copy (--partial), and
 * what it trusts of it the next time.
 *
 * A file of several chunks received with IO_ROOT_PARTIAL is written under a
 * name of its own instead of a random one: ".railcp-tmp-p" and the CRC-64
 * of its final name in hex, beside that name; its record is ".railcp-tmp-r"
 * and the same hex. Both start with IO_TMP_PREFIX, so no peer can name
 * them and no walk lists them. A copy holds an exclusive flock on the data
 * file from the check of what it holds (or the open) to the end: a second
 * copy into the same directory that finds it locked resumes nothing of it
 * and takes a random temporary instead (wfile_partial.c), so two copies
 * never write one partial file, and what was checked is what is written.
 * The check waits a moment for that lock first (lock_wait): the same
 * command run again straight after a cut copy often comes before the
 * session that held the file has noticed the cut and ended.
 *
 * The record, written when a copy fails and at each checkpoint, and the
 * log, written as each chunk lands, say which chunks landed and with which
 * CRC-64 (partial_record.c has their layouts and how each survives a
 * crash).
 *
 * The next copy with --partial (io_root_partial) takes the claims of a
 * record and of a log only if each is whole and describes the same source
 * (partial_record.c). One that fails is ignored; if neither claims a chunk,
 * with a notice, and the file is sent whole. Then each chunk claimed is read back
 * from the data file and hashed again: only those whose CRC-64 matches are
 * held; a byte changed on disk since costs that chunk, which travels again.
 *
 * A dry run (IO_ROOT_DRY: --partial -n, and -c -n through checksum.c)
 * takes the same claims and reads back the same chunks, but only looks
 * (p->look, io__partial_look): what is not the receiver's own counts for
 * nothing and is not removed, the data file is opened as the copy opens it
 * (it fails where the copy's would) but only read, and its
 * shared lock is let go before its chunks are read back; no record, log or
 * data file is made. So its count is what the next copy would keep.
 *
 * Trust: the names are predictable, and the directory may be one another
 * local user writes too (a group's project, shared scratch). So each of
 * these objects, and the directory marker (root.c), is opened without
 * following a symlink and taken only if the descriptor shows a regular file
 * of the receiver's effective user with one name and no group or other
 * write (io__partial_open); anything else is removed and made anew with
 * O_EXCL, before anything is read, truncated, written or mapped. Else a
 * root receiver would keep her chunks and put her inode in place; any
 * receiver would truncate the target of her hard link, outside the root;
 * and a log she can truncate beneath the mapping would raise SIGBUS in the
 * whole server. Where what is there cannot be removed (a sticky directory
 * not the receiver's) nothing of it is used: no claims from it, no log, and
 * the data file is received under a random temporary name, as without
 * --partial (wfile_partial.c).
 *
 * Threading: io_root_partial and io_partial_* are thread-safe on distinct
 * entries.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Why what st describes is not one of the receiver's own partial objects, or NULL. */
static const char *not_own(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return "it is a symbolic link";
	if (!S_ISREG(st->st_mode))
		return "it is not a regular file";
	if (st->st_uid != geteuid())
		return "another user owns it";
	if (st->st_nlink != 1)
		return "it is hard-linked under another name";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "others may write it";
	return NULL;
}

/*
 * Whether name, opened or not as res says (a descriptor, or -errno), is the
 * receiver's own: 0, with *why_out NULL; or its reason not to be, or -errno.
 */
static int own_check(int pfd, const char *name, int res, const char **why_out)
{
	struct stat st;
	int err = res < 0 ? res : 0;

	/* Not opened: judged by what the name is (a symlink answers ELOOP). */
	if (res >= 0 ? fstat(res, &st) < 0 : fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	*why_out = not_own(&st);
	return *why_out ? 0 : err; /* its own and yet not opened: that error */
}

int io__partial_open(int pfd, const char *name, int flags, const char *path)
{
	int acc = flags & O_ACCMODE, fd, fl, err;
	const char *why = NULL;
	char esc[IO_ESC_MAX];

	fd = openat(pfd, name, acc | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	err = own_check(pfd, name, fd < 0 ? -errno : fd, &why);
	if (!err && !why &&
	    ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
		err = -errno;
	if (fd >= 0 && (err || why))
		close(fd);
	if (err == -ENOENT)
		goto make;
	if (err || !why)
		return err ? err : fd;
	io__path_escape(path, strlen(path), esc);
	/* Its name is reserved for the receiver: not its own, it goes (never written through). */
	if (unlinkat(pfd, name, 0) < 0 && errno != ENOENT) {
		err = -errno;
		rcp_log(RCP_LOG_NOTICE,
			"the file %s kept for \"%s\" is not this receiver's own (%s) and cannot "
			"be removed (%s), so it is not used",
			name, esc, why, strerror(-err));
		return err;
	}
	rcp_log(RCP_LOG_NOTICE,
		"the file %s kept for \"%s\" is not this receiver's own (%s), so it is removed",
		name, esc, why);
make:
	if (!(flags & O_CREAT))
		return -ENOENT;
	fd = openat(pfd, name, acc | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

int io__partial_own(int pfd, const char *name, int flags, const char **why_out)
{
	int fd = openat(pfd, name,
			(flags & (O_ACCMODE | O_APPEND)) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				O_CLOEXEC);
	const char *why = NULL;
	int err = own_check(pfd, name, fd < 0 ? -errno : fd, &why), fl;

	if (!err && !why &&
	    ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0))
		err = -errno;
	if (!err && why)
		err = -EPERM;
	if (err && fd >= 0)
		close(fd);
	if (err == -EPERM && why)
		*why_out = why;
	return err ? err : fd;
}

int io__partial_look(int pfd, const char *name, int acc)
{
	int fd = openat(pfd, name,
			(acc & O_ACCMODE) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	const char *why = NULL;
	int err = own_check(pfd, name, fd < 0 ? -errno : fd, &why);

	if (!err && why)
		err = -ENOENT; /* a copy removes it: none */
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

void io__partial_names(const char *last, char data[IO_TMP_NAME_LEN], char rec[IO_TMP_NAME_LEN],
		       char log[IO_TMP_NAME_LEN])
{
	unsigned long long h = (unsigned long long)io_chunk_hash(last, strlen(last));

	snprintf(data, IO_TMP_NAME_LEN, "%sp%016llx", IO_TMP_PREFIX, h);
	snprintf(rec, IO_TMP_NAME_LEN, "%sr%016llx", IO_TMP_PREFIX, h);
	snprintf(log, IO_TMP_NAME_LEN, "%sl%016llx", IO_TMP_PREFIX, h);
}

/* Read back chunk k of e from the data file and hold it if its CRC-64 is still want. */
static bool chunk_still(int fd, const struct io_entry *e, uint32_t chunk, uint64_t k, uint64_t want,
			uint8_t *buf, uint32_t *len_out)
{
	uint64_t first = 0, n;
	uint32_t x;

	for (x = 0; x < e->n_ext; x++, first += n) {
		uint64_t in, len;

		n = io__chunks_of(e->ext[x].len, chunk);
		if (k >= first + n)
			continue;
		in = (k - first) * chunk;
		len = e->ext[x].len - in < chunk ? e->ext[x].len - in : chunk;
		*len_out = (uint32_t)len;
		return pread(fd, buf, len, (off_t)(e->ext[x].off + in)) == (ssize_t)len &&
		       io_chunk_hash(buf, len) == want;
	}
	return false;
}

#define LOCK_WAIT_NS (2000ull * 1000000)   /* a held partial file's lock, waited for */
#define LOCK_QUIET_NS (10000ull * 1000000) /* after a wait that ran out: no other waits */
#define LOCK_STEP_US 20000

/*
 * fd's lock (a copy's LOCK_EX, or a dry run's LOCK_SH if look), waited for
 * up to LOCK_WAIT_NS: 0, or -1 with errno (EWOULDBLOCK: another copy holds
 * it still). A wait that runs out means another copy is writing the file;
 * for LOCK_QUIET_NS after it no other file of this process waits, so a tree
 * another copy is writing costs one wait, not one per file. Copies and dry
 * runs keep apart times: a dry run that gave up spares no copy its wait.
 */
static int lock_wait(int fd, bool look)
{
	static _Atomic uint64_t gave_up_ns[2]; /* a copy's, a dry run's */
	_Atomic uint64_t *gave_up = &gave_up_ns[look];
	uint64_t start = rcp_now_ns(), last = atomic_load(gave_up);
	bool wait = last == 0 || start - last > LOCK_QUIET_NS;
	int op = look ? LOCK_SH : LOCK_EX;

	while (flock(fd, op | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return -1;
		if (!wait || rcp_now_ns() - start >= LOCK_WAIT_NS) {
			if (wait)
				atomic_store(gave_up, rcp_now_ns());
			errno = EWOULDBLOCK;
			return -1;
		}
		usleep(LOCK_STEP_US);
	}
	return 0;
}

/*
 * What the data file still holds of p's claims: p keeps only those, the
 * file locked first (into p->fd): what is checked is what this copy then
 * writes, and no other copy touches it meanwhile. A dry run's look (p->look)
 * opens it for reading and takes a shared lock, waited for as a copy waits,
 * only to learn that no copy is writing it now; it lets the lock go before
 * reading anything back, so a copy that starts meanwhile is not kept
 * waiting (nor sent whole) for a count. A reason when it cannot be.
 */
static const char *claims_verify(int pfd, const char *data, const struct io_entry *e,
				 uint32_t chunk, struct io_partial *p)
{
	/*
	 * The look opens it as the copy would, for writing too, though it only
	 * reads: a data file the receiver may read but not write (0400 for a
	 * receiver not root, immutable, a read-only mount) is one the copy
	 * cannot take, and sends whole, so it counts for nothing here either.
	 */
	int fd = p->look ? io__partial_look(pfd, data, O_RDWR)
			 : io__partial_open(pfd, data, O_RDWR, e->path);
	uint8_t *buf = malloc(chunk);
	struct stat st;
	uint64_t k;
	uint32_t len;

	if (fd < 0 || !buf || lock_wait(fd, p->look) < 0) {
		bool busy = fd >= 0 && buf && errno == EWOULDBLOCK;

		if (fd >= 0)
			close(fd);
		free(buf);
		if (busy)
			return "another copy is writing its file";
		if (fd == -ENOENT && p->look && fstatat(pfd, data, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return "its data file is not this receiver's own (a copy would remove it)";
		return fd == -ENOENT ? "its data file is gone" : "its data file cannot be used";
	}
	if (p->look) /* no copy writes it now; what is read next is a count, no promise */
		flock(fd, LOCK_UN);
	for (k = 0; k < p->n_chunks; k++) {
		if (!io_partial_has(p, k))
			continue;
		if (!chunk_still(fd, e, chunk, k, p->hash[k], buf, &len)) {
			p->bits[k / 64] &= ~(1ull << (k % 64));
			p->hash[k] = 0;
			continue;
		}
		p->held++;
		p->held_bytes += len;
	}
	p->fd = fd;
	free(buf);
	return NULL;
}

struct io_partial *io__partial_new(uint64_t n_chunks)
{
	struct io_partial *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->fd = p->root_fd = -1;
	p->n_chunks = n_chunks;
	p->bits = calloc((size_t)(n_chunks / 64 + 1), sizeof(*p->bits));
	p->late = calloc((size_t)(n_chunks / 64 + 1), sizeof(*p->late));
	p->hash = calloc((size_t)n_chunks, sizeof(*p->hash));
	if (!p->bits || !p->late || !p->hash) {
		io_partial_destroy(p);
		return NULL;
	}
	return p;
}

const char *io__partial_claims(int pfd, const char *last, const struct io_entry *e, uint32_t chunk,
			       struct io_partial *p)
{
	char data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], log[IO_TMP_NAME_LEN];
	const char *why, *why_log;
	uint64_t k;

	io__partial_names(last, data, rec, log);
	why = io__partial_record_claims(pfd, rec, last, e, chunk, p);
	why_log = io__partial_log_claims(pfd, log, last, e, chunk, p);
	for (k = 0; k < p->n_chunks && !io_partial_has(p, k); k++)
		;
	/* Either may claim a chunk; if neither does, the record's reason, else the log's. */
	return k < p->n_chunks ? claims_verify(pfd, data, e, chunk, p) : why ? why : why_log;
}

struct io_partial *io_root_partial(const struct io_root *root, const struct io_entry *e,
				   uint32_t chunk)
{
	uint64_t n_chunks = io__entry_chunks(e, chunk);
	const char *last, *why;
	char esc[IO_ESC_MAX];
	struct io_partial *p;
	int pfd;

	if (root->flags & IO_ROOT_CHECKSUM)
		return io__root_checksum(root, e, chunk); /* -c: the old file is the start */
	if (e->type != IO_FILE || n_chunks < 2)
		return NULL; /* nothing a partial file could hold */
	if (io__parent_open(root->fd, e->path, &pfd, &last) != 0) {
		rcp_err_clear(); /* the copy itself says so */
		return NULL;
	}
	p = io__partial_new(n_chunks);
	if (p) /* a dry run (--partial -n) only looks, as -c -n does (checksum.c) */
		p->look = root->flags & IO_ROOT_DRY;
	why = p ? io__partial_claims(pfd, last, e, chunk, p) : "out of memory";
	if (why)
		rcp_log(RCP_LOG_NOTICE, "the partial record of \"%s\" is ignored: %s",
			io__path_escape(e->path, strlen(e->path), esc), why);
	close(pfd);
	if (p && (why || p->held == 0)) {
		io_partial_destroy(p);
		p = NULL;
	}
	return p;
}

void io_partial_destroy(struct io_partial *p)
{
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd); /* the lock goes with the last descriptor of the file */
	free(p->old_path);
	free(p->bits);
	free(p->late);
	free(p->hash);
	free(p);
}

bool io_partial_has(const struct io_partial *p, uint64_t k)
{
	return p && k < p->n_chunks && (p->bits[k / 64] >> (k % 64) & 1);
}

uint64_t io__partial_bytes(const struct io_partial *p)
{
	return p ? p->held_bytes : 0;
}

uint64_t io__partial_hash(const struct io_partial *p, uint64_t k)
{
	return io_partial_has(p, k) ? p->hash[k] : 0;
}

bool io_partial_late(const struct io_partial *p, uint64_t k)
{
	return io_partial_has(p, k) && (p->late[k / 64] >> (k % 64) & 1);
}

int io_partial_read(struct io_partial *p, uint64_t k, uint64_t off, uint32_t len, void *buf)
{
	ssize_t n;

	if (p && p->old_path && io_partial_late(p, k)) {
		int err = io__checksum_fill(p, off, len, buf);

		if (!err)
			p->hash[k] = io_chunk_hash(buf, len);
		return err;
	}
	n = p ? pread(p->fd, buf, len, (off_t)off) : -1;
	if (n == (ssize_t)len)
		return 0;
	if (n < 0)
		return rcp_err(p ? -errno : -EINVAL,
			       "cannot read back a kept chunk at %" PRIu64 ": %s", off,
			       p ? strerror(errno) : "no partial file");
	return rcp_err(-EIO, "a kept chunk at %" PRIu64 " is cut short (%zd of %u bytes)", off, n,
		       len);
}

void io_partial_forget(struct io_partial *p, uint64_t k, uint32_t len)
{
	if (!io_partial_has(p, k))
		return;
	p->bits[k / 64] &= ~(1ull << (k % 64));
	p->held--;
	p->held_bytes -= len;
}

int io__partial_fd(const struct io_partial *p)
{
	return p ? p->fd : -1;
}
