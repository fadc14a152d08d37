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
 * Once every range of the job has landed, one session puts each file in
 * place (io_root_range_place): the temporary's size checked against the
 * whole size, its mode and time set, synced, renamed over the final name,
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
#include <string.h>
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

	if (why)
		return rcp_err(-EINVAL, "refused the ranges of \"%s\" (%llu bytes): %s",
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

/* What place and remove share: path checked, its directory (*pfd_out, *kept_out) and name. */
static int range_at(struct io_root *root, const char *path, uint64_t job, bool quiet_missing,
		    int *pfd_out, bool *kept_out, char name[IO_RANGE_NAME_LEN],
		    const char **last_out)
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
	io__range_name(job, *last_out, name);
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
 * The directory pfd, as a descriptor futimens and fsync take, and its mtime
 * (*mtim_out) before the rename into it; -1 when nothing needs it (neither
 * -p nor IO_ROOT_FSYNC), or -errno with a sentence.
 */
static int dir_hold(const struct io_root *root, int pfd, struct timespec *mtim_out, const char *esc)
{
	struct stat st;
	int dfd;

	if (!(root->flags & (IO_ROOT_KEEP_META | IO_ROOT_FSYNC)))
		return -1;
	dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0 && fstat(dfd, &st) == 0) {
		*mtim_out = st.st_mtim;
		return dfd;
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

int io_root_range_place(struct io_root *root, const struct io_entry *e, uint64_t job)
{
	char esc[IO_ESC_MAX], name[IO_RANGE_NAME_LEN];
	struct timespec mtim = {0};
	const char *last;
	bool kept = false;
	int pfd = -1, fd = -1, dfd = -1, err;

	io__path_escape(e->path, strlen(e->path), esc);
	if (e->type != IO_FILE)
		return rcp_err(-EINVAL, "refused \"%s\": it is not a regular file", esc);
	err = range_at(root, e->path, job, false, &pfd, &kept, name, &last);
	if (err)
		return err;
	fd = io__partial_open(pfd, name, O_RDWR, e->path); /* the receiver's own, or -ENOENT */
	if (fd < 0) {
		err = rcp_err(fd, "cannot put \"%s\" in place: %s", esc,
			      fd == -ENOENT ? "none of its ranges landed" : strerror(-fd));
		goto out;
	}
	err = place_settle(root, e, fd, esc);
	if (close(fd) < 0 && !err)
		err = rcp_err(-errno, "closing \"%s\" failed (%s): it is not put in place", esc,
			      strerror(errno));
	if (!err && (dfd = dir_hold(root, pfd, &mtim, esc)) < -1)
		err = dfd;
	if (err) {
		unlinkat(pfd, name, 0);
		goto out;
	}
	if (renameat(pfd, name, pfd, last) < 0) {
		err = rcp_err(-errno, "cannot put \"%s\" in place: %s", esc, strerror(errno));
		unlinkat(pfd, name, 0);
		if (dfd >= 0)
			close(dfd);
		goto out;
	}
	err = dir_settle(root, dfd, &mtim, esc);
out:
	if (!kept)
		close(pfd);
	return err;
}

int io_root_range_remove(struct io_root *root, const char *path, uint64_t job)
{
	char esc[IO_ESC_MAX], name[IO_RANGE_NAME_LEN];
	const char *last;
	bool kept = false;
	int pfd = -1, err = range_at(root, path, job, true, &pfd, &kept, name, &last);

	if (err)
		return err == -ENOENT ? 0 : err; /* no directory: no temporary either */
	if (unlinkat(pfd, name, 0) < 0 && errno != ENOENT)
		err = rcp_err(-errno, "cannot remove the job's temporary file of \"%s\": %s",
			      io__path_escape(path, strlen(path), esc), strerror(errno));
	if (!kept)
		close(pfd);
	return err;
}
