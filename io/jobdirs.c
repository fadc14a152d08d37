/*
 * jobdirs.c - a railcp-mpi job's directories, whose metadata its last
 * session sets (the sessions' side is engine/session/ranges.c).
 *
 * A job's sessions (io_root_set_job) write into one tree, each after the
 * others, so no session may set a directory's metadata at its end: a later
 * one's file would change the mtime, and a read-only mode would stop it.
 * Each directory such a session makes gets the job's own marker instead
 * (its name holds the job id), and the job's last session
 * (io_root_job_dirs) applies the metadata of the directories that hold it,
 * and only of those, removing the markers. A marker is made beside a mkdir
 * that succeeded, or where a --partial marker says a copy made the
 * directory, and counts only as the receiver's own. It holds its
 * directory's inode (io_int.h says why not its device), and counts only
 * in that directory: a user
 * who may write one directory the job made cannot move its marker into
 * another (the receiver's own, in the job's list) and so have the last
 * session chmod that one. A session that fails or is cut removes the
 * markers it made (io_root_job_abandon), so that a failed job leaves few
 * even while other sessions of it still make directories.
 *
 * Threading: io__job_mark as io_root_mkdir (any thread, root->lock taken
 * for the record); io_root_job_dirs and io_root_job_abandon on the
 * session's thread, after every mkdir.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void io_root_set_job(struct io_root *root, uint64_t job)
{
	root->job = job;
}

static void job_marker(uint64_t job, char out[IO_JOB_MARKER_LEN])
{
	snprintf(out, IO_JOB_MARKER_LEN, IO_DIR_MARKER "-j%016llx", (unsigned long long)job);
}

/* Room for one more directory whose marker this session makes. */
static int jmade_reserve(struct io_root *root, const char *path)
{
	return io__dir_ids_reserve(root, &root->jmade, &root->n_jmade, &root->cap_jmade, "marking",
				   path);
}

static void jmade_add(struct io_root *root, const struct stat *st)
{
	io__dir_ids_add(root, &root->jmade, &root->n_jmade, &root->cap_jmade, st);
}

/* The marker name made anew in directory fd (st), holding st's identity: 0 or -errno. */
static int marker_make(int fd, const char *name, const struct stat *st)
{
	char id[48];
	int mfd = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
			 0600);
	int len = snprintf(id, sizeof(id), IO_JOB_MARKER_ID, (unsigned long long)st->st_ino);
	int err = 0;

	if (mfd < 0)
		return -errno;
	errno = 0; /* a short write sets none */
	if (write(mfd, id, (size_t)len) != len) {
		err = errno ? -errno : -EIO;
		(void)unlinkat(fd, name, 0); /* half-made: it would mark nothing */
	}
	close(mfd);
	return err;
}

/*
 * Another session of the job may mark it at once (a directory a --partial
 * copy made): one marker is enough, and it is that session's to remove.
 */
int io__job_mark(struct io_root *root, int pfd, const char *last, const char *path,
		 const struct stat *made)
{
	char name[IO_JOB_MARKER_LEN], esc[IO_ESC_MAX];
	int fd = openat(pfd, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), mfd, err;
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != made->st_dev ||
	    st.st_ino != made->st_ino) {
		if (fd >= 0)
			close(fd);
		return 0; /* swapped under us: not ours to mark */
	}
	job_marker(root->job, name);
	if ((err = jmade_reserve(root, path)) != 0) {
		close(fd);
		return err;
	}
	/* One there not the receiver's own goes (io__partial_open); one of its own stays. */
	mfd = io__partial_open(fd, name, O_RDONLY, path);
	err = mfd >= 0 ? 0 : mfd == -ENOENT ? marker_make(fd, name, &st) : mfd;
	if (mfd >= 0)
		close(mfd);
	else if (!err)
		jmade_add(root, &st);
	else if (err == -EEXIST)
		err = 0; /* made at once by another session of the job */
	close(fd);
	if (err)
		return rcp_err(err, "cannot mark the directory \"%s\" as made by this job: %s",
			       io__path_escape(path, strlen(path), esc), strerror(-err));
	return 0;
}

/* Remove name from directory fd (path): gone already is no error. */
static int marker_remove(int fd, const char *name, const char *path)
{
	char esc[IO_ESC_MAX];

	if (unlinkat(fd, name, 0) < 0 && errno != ENOENT)
		return rcp_err(-errno, "cannot remove the marker of the directory \"%s\": %s",
			       io__path_escape(path, strlen(path), esc), strerror(errno));
	return 0;
}

/* Whether marker mfd names directory fd as its own: a moved one does not. */
static bool marker_holds(int mfd, int fd)
{
	char buf[48], want[48];
	struct stat st;
	ssize_t n = pread(mfd, buf, sizeof(buf), 0);
	int len;

	if (n <= 0 || fstat(fd, &st) < 0)
		return false;
	len = snprintf(want, sizeof(want), IO_JOB_MARKER_ID, (unsigned long long)st.st_ino);
	return n == len && !memcmp(buf, want, (size_t)len);
}

/* One directory of io_root_job_dirs: 0 (*held set if it held the marker) or -errno. */
static int job_dir_end(struct io_root *root, const struct io_entry *e, const char *name, bool apply,
		       bool *held)
{
	bool keep_partial = !apply && (root->flags & IO_ROOT_PARTIAL), own;
	char esc[IO_ESC_MAX];
	int fd, mfd, err;

	*held = false;
	if ((err = io__dir_open(root->fd, e->path, &fd)) == -ENOENT)
		rcp_err_clear(); /* gone: nothing of the job's to end there */
	if (err)
		return err == -ENOENT ? 0 : err;
	/* Not the receiver's own: removed, and it marks nothing. */
	mfd = io__partial_open(fd, name, O_RDONLY, e->path);
	if (mfd == -ENOENT && apply) {
		/*
		 * No job marker, but a copy's (--partial's or -c's, judged as
		 * root.c judges it): a copy made the directory. A session of
		 * this job that made it may have removed its job marker when
		 * cut (a server judged gone while it lived), after the re-run's
		 * session found the directory made and marked: the copy's
		 * marker still says whose it is, as it does for one railcp.
		 */
		mfd = io__partial_open(fd, IO_DIR_MARKER, O_RDONLY, e->path);
		if (mfd >= 0)
			close(mfd);
		name = IO_DIR_MARKER; /* the one marker to remove below */
	} else if (mfd >= 0) {
		own = marker_holds(mfd, fd);
		close(mfd);
		if (!own) { /* another directory's, moved here: it goes, and marks nothing */
			err = marker_remove(fd, name, e->path);
			goto out_close;
		}
	}
	if (mfd < 0) {
		err = mfd == -ENOENT ? 0
				     : rcp_err(mfd, "cannot open the marker of \"%s\": %s",
					       io__path_escape(e->path, strlen(e->path), esc),
					       strerror(-mfd));
		goto out_close;
	}
	*held = true;
	if (!keep_partial && (err = marker_remove(fd, IO_DIR_MARKER, e->path)) != 0)
		goto out_close;
	if ((err = marker_remove(fd, name, e->path)) != 0 || !apply ||
	    !(root->flags & IO_ROOT_KEEP_META))
		goto out_close;
	err = io__dir_meta_set(fd, e);
out_close:
	close(fd);
	return err;
}

int io_root_job_dirs(struct io_root *root, const struct io_manifest *m, uint64_t job, bool apply,
		     void (*visited)(void *ctx), void *ctx, uint64_t *count_out)
{
	char name[IO_JOB_MARKER_LEN];
	struct io_depth_idx *order;
	uint64_t count = 0;
	size_t i, n;
	bool held;
	int err, r;

	if (!job)
		return rcp_err(-EINVAL, "no job named to end its directories");
	if ((err = io__dirs_order(m, &order, &n)) != 0)
		return err;
	if (visited) /* a sort of millions of directories can take longer than a caller's cadence */
		visited(ctx);
	job_marker(job, name);
	for (i = 0; i < n && (!err || !apply); i++) {
		r = job_dir_end(root, &m->entry[order[i].idx], name, apply, &held);
		count += held;
		err = err ? err : r;
		if (visited)
			visited(ctx);
	}
	free(order);
	if (!err)
		*count_out = count;
	return err;
}

void io_root_job_abandon(struct io_root *root, const struct io_manifest *m)
{
	char name[IO_JOB_MARKER_LEN];
	struct io_dir_id id;
	struct stat st;
	size_t i;
	int fd;

	if (!root || !m || !root->job || !root->n_jmade)
		return;
	job_marker(root->job, name);
	pthread_mutex_lock(&root->lock);
	qsort(root->jmade, root->n_jmade, sizeof(*root->jmade), io__dir_id_cmp);
	for (i = 0; i < m->n; i++) {
		if (m->entry[i].type != IO_DIR)
			continue;
		if (io__dir_open(root->fd, m->entry[i].path, &fd) != 0) {
			rcp_err_clear(); /* gone or not a directory: no marker of ours there */
			continue;
		}
		id = (struct io_dir_id){0, 0};
		if (fstat(fd, &st) == 0)
			id = (struct io_dir_id){st.st_dev, st.st_ino};
		if (id.ino &&
		    bsearch(&id, root->jmade, root->n_jmade, sizeof(id), io__dir_id_cmp) &&
		    marker_remove(fd, name, m->entry[i].path) != 0)
			rcp_err_clear(); /* best effort: the job's removal tries again */
		close(fd);
	}
	root->n_jmade = 0;
	pthread_mutex_unlock(&root->lock);
}
