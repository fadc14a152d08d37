/*
 * range.c - the receiver's side of a file that several sessions of one
 * railcp-mpi job write, each a byte range of it (doc/design.md, railcp-mpi).
 *
 * Every range of a file lands in one temporary per file and job, beside the
 * final name: ".railcp-tmp-j", the job id and the first 128 bits of the
 * SHA-256 of the final name, in hex (a CRC-64 is easily made to collide:
 * two names would share one temporary). The name starts with IO_TMP_PREFIX, so no peer can name it
 * and no walk lists it; the job id keeps two jobs into one tree apart. Several sessions (of one
 * server or of several serving one shared root) open it, so it is created with O_EXCL only when
 * missing and otherwise taken as it is, never truncated, and only if it is the receiver's own (a
 * regular file of its user, one link, written by no one else: io__partial_own's checks) and holds
 * nothing or the file's whole size; anything else under the name fails the session, never removed
 * and made anew, which would lose the ranges already landed in it. It is sized to the file's whole
 * size, so every range writes inside it, in any order.
 *
 * A range is a manifest entry of the file's whole size whose extents are
 * the ranges it carries (one, or a few when one session carries several):
 * chunk-aligned from the file's start, so its chunks are the
 * chunks a whole file's plan cuts there, each checked by its CRC-64 as any
 * chunk is (wfile.c). Its finalize syncs it (always: the session that puts
 * it in place may be another server's, on another host of a shared file
 * system, and must see what was written) and closes it; it never sets its
 * metadata and never renames it. A range's failure or abort leaves the
 * temporary: the other ranges may be landing in it, and the job removes it
 * (io_root_range_remove).
 *
 * Each range's finalize, once synced, appends its extents and the
 * temporary's inode to the job's record of the file's landed ranges
 * (io__range_record). Once every range of the job has landed, one session
 * puts each file in place (io_root_range_place): the record's ranges of
 * the temporary's inode checked to cover the whole size, its size
 * checked, its mode and time set, synced, renamed over the final name,
 * and the directory synced, as wfile.c's finalize does for a whole file;
 * with -p the directory keeps the time it had before the rename, which the
 * job's sessions gave it (directories' metadata last).
 *
 * Threading: as wfile.c's; io_root_range_place and io_root_range_remove
 * are thread-safe on distinct paths.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void io__range_name(uint64_t job, const char *last, char out[IO_RANGE_NAME_LEN])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	int n, i;

	SHA256((const unsigned char *)last, strlen(last), md);
	n = snprintf(out, IO_RANGE_NAME_LEN, "%sj%016llx", IO_TMP_PREFIX, (unsigned long long)job);
	for (i = 0; i < 16; i++)
		n += snprintf(out + n, IO_RANGE_NAME_LEN - (size_t)n, "%02x", md[i]);
}

/*
 * Why e cannot be ranges of its file received in chunk bytes, or NULL. The
 * extents are sorted, disjoint and non-empty (the manifest's checks); each
 * must lie inside the whole size, start on a chunk and end on one or at the
 * file's end, so its chunks are those a whole file's plan cuts there.
 */
static const char *range_problem(const struct io_entry *e, uint32_t chunk)
{
	uint32_t i;

	if (e->n_ext == 0)
		return "no range is given";
	for (i = 0; i < e->n_ext; i++) {
		const struct io_extent *x = &e->ext[i];

		if (x->len == 0)
			return "a range is empty";
		if (x->off > e->size || x->len > e->size - x->off)
			return "a range ends beyond the file's whole size";
		if (x->off % chunk)
			return "a range does not start on a chunk";
		if (x->len % chunk && x->off + x->len != e->size)
			return "a range ends inside a chunk before the file's end";
	}
	return NULL;
}

int io_wfile_range(struct io_wfile *f, uint64_t job)
{
	const char *why = range_problem(f->e, f->chunk);
	char esc[IO_ESC_MAX];

	if (!job) /* e.g. a hostile server's list to a pull: never put in place */
		why = "they name no job to gather them in";
	if (why)
		return rcp_err(job ? -EINVAL : -EPROTO,
			       "refused the ranges of \"%s\" (%llu bytes): %s",
			       io__path_escape(f->e->path, strlen(f->e->path), esc),
			       (unsigned long long)f->e->size, why);
	/* The open's op names f->tmp: it now creates the job's name, with O_EXCL. */
	io__range_name(job, f->last, f->tmp);
	f->range = true;
	return 0;
}

/* The job's temporary of f, as the open with O_EXCL answered (res): the descriptor, or -errno. */
int io__range_take(struct io_wfile *f, int res)
{
	const char *why = "it is not of the file's size";
	char esc[IO_ESC_MAX];
	struct stat st;
	int err;

	io__path_escape(f->e->path, strlen(f->e->path), esc);
	/*
	 * Another session made it first: taken only if it is the receiver's
	 * own, never removed and made anew, which would lose the ranges
	 * already in it.
	 */
	if (res == -EEXIST)
		res = io__partial_own(f->pfd, f->tmp, O_RDWR, &why);
	if (res == -EPERM)
		return rcp_err(res, "refused the job's temporary file of \"%s\": %s", esc, why);
	if (res < 0)
		return rcp_err(res, "cannot open the job's temporary file of \"%s\": %s", esc,
			       strerror(-res));
	if (fstat(res, &st) < 0)
		err = -errno;
	else if ((uint64_t)st.st_size == f->e->size)
		return res;
	else if (st.st_size != 0) /* neither just made nor sized by this job */
		err = -EPERM;
	else if (ftruncate(res, (off_t)f->e->size) == 0)
		return res;
	else
		err = -errno;
	close(res);
	if (err == -EPERM)
		return rcp_err(err,
			       "refused the job's temporary file of \"%s\": it holds %llu "
			       "bytes, neither none nor the file's %llu",
			       esc, (unsigned long long)st.st_size, (unsigned long long)f->e->size);
	return rcp_err(err, "cannot size the job's temporary file of \"%s\": %s", esc,
		       strerror(-err));
}

/*
 * The job's record of the ranges of a file that landed: the temporary's
 * name with 'k' for its 'j'. Each landed range appends RECORD_LEN bytes,
 * little-endian: the temporary's inode, the range's offset and length.
 * Its size is bounded: a range list's entries are (the manifest's).
 */
#define RECORD_LEN 24
#define RECORD_MAX (64u << 20)

static void record_name(const char *tmp, char out[IO_RANGE_NAME_LEN])
{
	snprintf(out, IO_RANGE_NAME_LEN, "%s", tmp);
	out[IO_TMP_PREFIX_LEN] = 'k';
}

/* The record of pfd's name rec opened to append (made when missing), or -errno with a sentence. */
static int record_open(int pfd, const char *rec, const char *esc)
{
	const char *why = NULL;
	int fd = openat(pfd, rec, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);

	if (fd < 0 && errno == EEXIST)
		fd = io__partial_own(pfd, rec, O_WRONLY | O_APPEND, &why);
	else if (fd < 0)
		fd = -errno;
	if (fd == -EPERM && why)
		return rcp_err(fd, "refused the job's record of the ranges of \"%s\": %s", esc,
			       why);
	if (fd < 0)
		return rcp_err(fd, "cannot open the job's record of the ranges of \"%s\": %s", esc,
			       strerror(-fd));
	return fd;
}

/*
 * Whether f's temporary (whose stat is tmp) is no longer at its name: a
 * failed job's removal (io_root_range_remove) took it while this range was
 * landing. The removal unlinks the temporary before the record, so a record
 * this range made anew after it (fd, still empty) is unlinked again here,
 * and no record outlives the job. 0 while it is there.
 */
static int temp_gone(const struct io_wfile *f, const struct stat *tmp, int fd)
{
	char rec[IO_RANGE_NAME_LEN];
	struct stat now, ours;

	if (fstatat(f->pfd, f->tmp, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == tmp->st_ino &&
	    now.st_dev == tmp->st_dev)
		return 0;
	record_name(f->tmp, rec);
	if (fstat(fd, &ours) == 0 && ours.st_size == 0 &&
	    fstatat(f->pfd, rec, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == ours.st_ino &&
	    now.st_dev == ours.st_dev)
		unlinkat(f->pfd, rec, 0);
	return -ECANCELED;
}

int io__range_record(struct io_wfile *f)
{
	char esc[IO_ESC_MAX], rec[IO_RANGE_NAME_LEN];
	size_t len = (size_t)f->e->n_ext * RECORD_LEN, at = 0;
	uint64_t *buf = malloc(len);
	struct stat st;
	uint32_t i;
	ssize_t n;
	int fd, err = 0;

	io__path_escape(f->e->path, strlen(f->e->path), esc);
	if (!buf)
		return rcp_err(-ENOMEM, "out of memory");
	if (fstat(f->fd, &st) < 0) {
		err = rcp_err(-errno, "cannot read the job's temporary file of \"%s\": %s", esc,
			      strerror(errno));
		goto out_free;
	}
	for (i = 0; i < f->e->n_ext; i++) {
		buf[3 * i] = htole64((uint64_t)st.st_ino);
		buf[3 * i + 1] = htole64(f->e->ext[i].off);
		buf[3 * i + 2] = htole64(f->e->ext[i].len);
	}
	record_name(f->tmp, rec);
	if ((fd = record_open(f->pfd, rec, esc)) < 0) {
		err = fd;
		goto out_free;
	}
	/* One writer at a time, so records never interleave (O_APPEND alone is not so on NFS). */
	if (flock(fd, LOCK_EX) < 0)
		err = -errno;
	if (!err && temp_gone(f, &st, fd) != 0)
		err = rcp_err(-ECANCELED,
			      "the job's temporary file of \"%s\" was removed: the job failed "
			      "elsewhere",
			      esc);
	while (!err && at < len) {
		n = write(fd, (const char *)buf + at, len - at);
		if (n < 0 && errno != EINTR)
			err = -errno;
		at += n > 0 ? (size_t)n : 0;
	}
	/* Synced always: the place may be another host's, and a crash must not forge a range. */
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (err && err != -ECANCELED) /* ECANCELED's sentence is said */
		rcp_err(err, "cannot record the landed ranges of \"%s\": %s", esc, strerror(-err));
out_free:
	free(buf);
	return err;
}

static int off_cmp(const void *a, const void *b)
{
	uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];

	return x < y ? -1 : x > y;
}

/*
 * How many bytes from the start of a file of size bytes the record's ranges
 * of inode ino cover without a gap (*covered_out), or -errno.
 */
static int record_cover(int fd, uint64_t ino, uint64_t size, uint64_t *covered_out)
{
	uint64_t(*r)[2] = NULL, covered = 0, raw[3];
	size_t n = 0, i;
	struct stat st;
	int err = 0;

	if (flock(fd, LOCK_SH) < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size % RECORD_LEN || (uint64_t)st.st_size > RECORD_MAX)
		return -EBADMSG;
	if (st.st_size && !(r = malloc((size_t)st.st_size / RECORD_LEN * sizeof(*r))))
		return -ENOMEM;
	for (i = 0; !err && i < (size_t)st.st_size / RECORD_LEN; i++) {
		ssize_t got = pread(fd, raw, RECORD_LEN, (off_t)(i * RECORD_LEN));

		if (got != RECORD_LEN)
			err = got < 0 ? -errno : -EBADMSG;
		else if (le64toh(raw[0]) == ino) {
			r[n][0] = le64toh(raw[1]);
			r[n++][1] = le64toh(raw[2]);
		}
	}
	if (!err) {
		qsort(r, n, sizeof(*r), off_cmp);
		for (i = 0; i < n && r[i][0] <= covered; i++) {
			uint64_t end =
				r[i][1] > UINT64_MAX - r[i][0] ? UINT64_MAX : r[i][0] + r[i][1];

			if (end > covered)
				covered = end;
		}
		*covered_out = covered < size ? covered : size;
	}
	free(r);
	return err;
}

/*
 * Whether the job's record rec in pfd says its ranges of the temporary fd
 * cover the whole size: 0, or -errno with a sentence (-EIO for a gap).
 */
static int landed_check(int pfd, const char *rec, int fd, uint64_t size, const char *esc)
{
	const char *why = NULL;
	uint64_t covered = 0;
	struct stat st;
	int rfd, err;

	if (fstat(fd, &st) < 0)
		return rcp_err(-errno, "cannot read the job's temporary file of \"%s\": %s", esc,
			       strerror(errno));
	rfd = io__partial_own(pfd, rec, O_RDONLY, &why);
	if (rfd == -ENOENT)
		return rcp_err(-EIO,
			       "cannot put \"%s\" in place: no range of it is recorded as "
			       "landed",
			       esc);
	if (rfd < 0)
		return rcp_err(rfd, "cannot put \"%s\" in place: its record of landed ranges: %s",
			       esc, rfd == -EPERM && why ? why : strerror(-rfd));
	err = record_cover(rfd, (uint64_t)st.st_ino, size, &covered);
	close(rfd);
	if (err)
		return rcp_err(err, "cannot read the job's record of the ranges of \"%s\": %s", esc,
			       strerror(-err));
	if (covered < size)
		return rcp_err(-EIO,
			       "cannot put \"%s\" in place: only its first %llu of %llu bytes "
			       "are recorded as landed",
			       esc, (unsigned long long)covered, (unsigned long long)size);
	return 0;
}

/* What place and remove share: path checked, its directory (*pfd_out, *kept_out) and name. */
static int range_at(struct io_root *root, const char *path, uint64_t job, bool quiet_missing,
		    int *pfd_out, bool *kept_out, const char **last_out,
		    char name_out[IO_RANGE_NAME_LEN])
{
	const char *why = io__path_problem(path, strlen(path));
	char esc[IO_ESC_MAX], parent[IO_PATH_MAX];
	int err;

	if (why)
		return rcp_err(-EINVAL, "refused \"%s\": %s",
			       io__path_escape(path, strlen(path), esc), why);
	if ((err = io__parent_split(path, parent, last_out)) != 0)
		return err;
	if ((err = io__dir_get(root, parent, pfd_out, kept_out)) != 0)
		return quiet_missing && err == -ENOENT ? err
						       : io__resolve_err(err, path, "directory");
	io__range_name(job, *last_out, name_out);
	return 0;
}

/* The temporary fd of e, checked and settled as a finished file: size, mode, time, synced. */
static int place_settle(const struct io_root *root, const struct io_entry *e, int fd,
			const char *esc)
{
	bool keep = root->flags & IO_ROOT_KEEP_META;
	mode_t mode = keep ? (e->mode & 01777) : (e->mode & 0777 & ~root->umask);
	struct timespec ts[2];
	struct stat st;

	if (fstat(fd, &st) < 0)
		return rcp_err(-errno, "cannot read the job's temporary file of \"%s\": %s", esc,
			       strerror(errno));
	if ((uint64_t)st.st_size != e->size)
		return rcp_err(-EIO,
			       "the job's temporary file of \"%s\" holds %llu bytes, not the "
			       "file's %llu: it is not put in place",
			       esc, (unsigned long long)st.st_size, (unsigned long long)e->size);
	io__mtime_times(e->mtime_ns, ts);
	if (fchmod(fd, mode) < 0 || (keep && futimens(fd, ts) < 0) ||
	    ((root->flags & IO_ROOT_FSYNC) && fsync(fd) < 0))
		return rcp_err(-errno, "cannot settle the job's temporary file of \"%s\": %s", esc,
			       strerror(errno));
	return 0;
}

/*
 * The directory pfd, as a descriptor futimens and fsync take (*dfd_out,
 * -1 when nothing needs it: neither -p nor IO_ROOT_FSYNC), and its mtime
 * (*mtim_out) before the rename into it; 0, or -errno with a sentence.
 */
static int dir_hold(const struct io_root *root, int pfd, struct timespec *mtim_out, const char *esc,
		    int *dfd_out)
{
	struct stat st;
	int dfd;

	if (!(root->flags & (IO_ROOT_KEEP_META | IO_ROOT_FSYNC))) {
		*dfd_out = -1;
		return 0;
	}
	dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0 && fstat(dfd, &st) == 0) {
		*mtim_out = st.st_mtim;
		*dfd_out = dfd;
		return 0;
	}
	if (dfd >= 0)
		close(dfd);
	return rcp_err(-errno, "cannot open the directory of \"%s\": %s", esc, strerror(errno));
}

/*
 * After the rename into dfd (from dir_hold): with -p its mtime as it was,
 * which the job's sessions set when they finished it (the rename would
 * otherwise make it now); with IO_ROOT_FSYNC synced, so the rename
 * survives a crash. Closes dfd.
 */
static int dir_settle(const struct io_root *root, int dfd, const struct timespec *mtim,
		      const char *esc)
{
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, *mtim};
	int err = 0;

	if (dfd < 0)
		return 0;
	if ((root->flags & IO_ROOT_KEEP_META) && futimens(dfd, ts) < 0)
		err = rcp_err(-errno, "cannot keep the time of the directory of \"%s\": %s", esc,
			      strerror(errno));
	if (!err && (root->flags & IO_ROOT_FSYNC) && fsync(dfd) < 0)
		err = rcp_err(-errno, "cannot sync the directory of \"%s\": %s", esc,
			      strerror(errno));
	close(dfd);
	return err;
}

/*
 * On a place again (an earlier one may have put e in place before its
 * server was judged gone), with no temporary: whether e's final name last
 * in pfd is the file that place put there. With the record still there
 * (the earlier place stopped before removing it) its ranges of the final
 * name's inode cover the whole size; without, the final name is a regular
 * file of e's size (and with -p, e's mtime). 0 (and the record removed),
 * or -ENOENT.
 */
static int placed_before(const struct io_root *root, const struct io_entry *e, int pfd,
			 const char *last, const char *rec)
{
	const char *why = NULL;
	uint64_t covered = 0;
	struct stat st;
	int rfd, err;

	if (fstatat(pfd, last, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != e->size)
		return -ENOENT;
	rfd = io__partial_own(pfd, rec, O_RDONLY, &why);
	if (rfd >= 0) {
		err = record_cover(rfd, (uint64_t)st.st_ino, e->size, &covered);
		close(rfd);
		if (err || covered < e->size)
			return -ENOENT;
		unlinkat(pfd, rec, 0);
		return 0;
	}
	if (rfd != -ENOENT)
		return -ENOENT;
	if ((root->flags & IO_ROOT_KEEP_META) &&
	    (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != e->mtime_ns)
		return -ENOENT;
	return 0;
}

/* The temporary fd of e, named name in pfd, checked, settled and renamed to last; closes fd. */
static int place_fd(const struct io_root *root, const struct io_entry *e, int pfd, int fd,
		    const char *name, const char *last, const char *rec, const char *esc)
{
	struct timespec mtim = {0};
	int dfd = -1, err = landed_check(pfd, rec, fd, e->size, esc);

	if (!err)
		err = place_settle(root, e, fd, esc);
	if (close(fd) < 0 && !err)
		err = rcp_err(-errno, "closing \"%s\" failed (%s): it is not put in place", esc,
			      strerror(errno));
	if (!err)
		err = dir_hold(root, pfd, &mtim, esc, &dfd);
	if (!err && renameat(pfd, name, pfd, last) < 0) {
		err = rcp_err(-errno, "cannot put \"%s\" in place: %s", esc, strerror(errno));
		if (dfd >= 0)
			close(dfd);
	}
	if (err) { /* not put in place: nothing of it stays */
		unlinkat(pfd, name, 0);
		unlinkat(pfd, rec, 0);
		return err;
	}
	/* Only now: a place again finds the record of what this one renamed (placed_before). */
	unlinkat(pfd, rec, 0);
	return dir_settle(root, dfd, &mtim, esc);
}

int io_root_range_place(struct io_root *root, const struct io_entry *e, uint64_t job, bool again)
{
	char esc[IO_ESC_MAX], name[IO_RANGE_NAME_LEN], rec[IO_RANGE_NAME_LEN];
	const char *last, *why = NULL;
	bool kept = false;
	int pfd = -1, fd, err;

	io__path_escape(e->path, strlen(e->path), esc);
	if (e->type != IO_FILE)
		return rcp_err(-EINVAL, "refused \"%s\": it is not a regular file", esc);
	err = range_at(root, e->path, job, false, &pfd, &kept, &last, name);
	if (err)
		return err;
	record_name(name, rec);
	fd = io__partial_own(pfd, name, O_RDWR, &why); /* never removed here: the job's to */
	if (fd == -ENOENT && again && placed_before(root, e, pfd, last, rec) == 0)
		err = 0;
	else if (fd < 0)
		err = rcp_err(fd, "cannot put \"%s\" in place: %s", esc,
			      fd == -ENOENT	    ? "none of its ranges landed"
			      : fd == -EPERM && why ? why
						    : strerror(-fd));
	else
		err = place_fd(root, e, pfd, fd, name, last, rec, esc);
	if (!kept)
		close(pfd);
	return err;
}

int io_root_range_remove(struct io_root *root, const char *path, uint64_t job)
{
	char esc[IO_ESC_MAX], name[IO_RANGE_NAME_LEN], rec[IO_RANGE_NAME_LEN];
	const char *last;
	bool kept = false;
	int pfd = -1, err = range_at(root, path, job, true, &pfd, &kept, &last, name);

	if (err)
		return err == -ENOENT ? 0 : err; /* no directory: no temporary either */
	if (unlinkat(pfd, name, 0) < 0 && errno != ENOENT)
		err = rcp_err(-errno, "cannot remove the job's temporary file of \"%s\": %s",
			      io__path_escape(path, strlen(path), esc), strerror(errno));
	record_name(name, rec);
	if (unlinkat(pfd, rec, 0) < 0 && errno != ENOENT && !err)
		err = rcp_err(-errno, "cannot remove the job's record of the ranges of \"%s\": %s",
			      io__path_escape(path, strlen(path), esc), strerror(errno));
	if (!kept)
		close(pfd);
	return err;
}
