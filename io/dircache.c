/*
 * dircache.c - the receiver's directories, opened once per job: each file's
 * parent is looked up here instead of resolved with openat2 per file, and
 * the directories whose entries changed are synced once, at the end
 * (io__dirs_sync), instead of once per file.
 *
 * A directory is opened as path.c opens a parent (openat2 beneath the root,
 * O_PATH), once. Held for the job, its descriptor would follow the
 * directory wherever it went: moved out of the root during a copy (by
 * anyone who may rename there), it would take the next files with it. So
 * each entry also records the chain of its real ancestors up to the root
 * (device and inode of "..", "../..", ...: the directories it really sits
 * in, symlinks in its path resolved), and each use checks that the chain is
 * still the same, at a cost of depth fstatat calls of "..". A directory
 * moved out of the root, or beneath another of its directories, fails the
 * check: it is opened afresh, beneath the root, by its path, and where that
 * finds nothing the file fails as it did when each file resolved its own
 * parent. Between the check and the use the window is the one the openat2
 * of each file had between its resolution and the file's creation.
 *
 * Threading: every function takes the root's dir_lock; an entry's fd stays
 * open until io__dirs_close (the root's close), so a descriptor handed out
 * may be used after the lock is released, by a file still being written:
 * an entry found moved is marked so, never handed out again, and, once a
 * new entry takes its slot, kept on a retired list until that close (its
 * descriptor's number must not be reused under a file that holds it).
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

/* Deeper than this beneath the root, a directory is not kept: each file opens its own. */
#define DIR_DEPTH_MAX 32
/*
 * At most this many directories are kept open per root (a descriptor
 * each, for the job): past it, and when the process is out of
 * descriptors, a directory's files open their own parent, as before.
 * railcp serve runs every session in one process, so one copy of a tree
 * of many directories must not take the descriptors of the others.
 */
#define DIRS_KEPT_MAX 256

struct io_dir {
	char *path;		      /* beneath the root, as the manifest names it */
	int fd;			      /* O_PATH */
	unsigned depth;		      /* its real ancestors up to the root */
	bool dirty;		      /* an entry was renamed into it since its last sync */
	bool moved;		      /* found moved: never handed out again, its fd kept open */
	struct io_dir *next;	      /* on the root's retired list */
	dev_t dev[DIR_DEPTH_MAX + 1]; /* [0] itself, [i] its i-th ancestor, [depth] the root */
	ino_t ino[DIR_DEPTH_MAX + 1];
};

static uint64_t path_hash(const char *p)
{
	uint64_t h = 1469598103934665603ull;

	while (*p)
		h = (h ^ (unsigned char)*p++) * 1099511628211ull;
	return h;
}

/* The slot of path in the table, or the empty slot where it would go. */
static size_t slot_of(const struct io_root *root, const char *path)
{
	size_t mask = root->dirs_cap - 1, i = path_hash(path) & mask;

	while (root->dirs[i] && strcmp(root->dirs[i]->path, path) != 0)
		i = (i + 1) & mask;
	return i;
}

static int table_grow(struct io_root *root)
{
	size_t cap = root->dirs_cap ? root->dirs_cap * 2 : 64, i, old_cap = root->dirs_cap;
	struct io_dir **old = root->dirs, **t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	root->dirs = t;
	root->dirs_cap = cap;
	for (i = 0; i < old_cap; i++)
		if (old[i])
			t[slot_of(root, old[i]->path)] = old[i];
	free(old);
	return 0;
}

/* "..", "../..", ... i times into buf (i <= DIR_DEPTH_MAX). */
static const char *up(unsigned i, char buf[3 * DIR_DEPTH_MAX + 1])
{
	unsigned k;

	for (k = 0; k < i; k++)
		memcpy(buf + 3 * k, "../", 3);
	buf[i ? 3 * i - 1 : 0] = '\0';
	return buf;
}

/* d's real ancestors from its fd up to the root (false: none within DIR_DEPTH_MAX, or gone). */
static bool chain_record(const struct io_root *root, struct io_dir *d)
{
	char buf[3 * DIR_DEPTH_MAX + 1];
	struct stat st;
	unsigned i;

	if (fstat(d->fd, &st) < 0)
		return false;
	d->dev[0] = st.st_dev;
	d->ino[0] = st.st_ino;
	for (i = 0; i <= DIR_DEPTH_MAX; i++) {
		if (d->dev[i] == root->dev && d->ino[i] == root->ino) {
			d->depth = i;
			return true;
		}
		if (i == DIR_DEPTH_MAX ||
		    fstatat(d->fd, up(i + 1, buf), &st, AT_SYMLINK_NOFOLLOW) < 0)
			return false;
		d->dev[i + 1] = st.st_dev;
		d->ino[i + 1] = st.st_ino;
	}
	return false;
}

/* d still sits where it was opened: the same ancestors, up to the root. */
static bool chain_holds(const struct io_dir *d)
{
	char buf[3 * DIR_DEPTH_MAX + 1];
	struct stat st;
	unsigned i;

	if (d->moved)
		return false;
	for (i = 1; i <= d->depth; i++)
		if (fstatat(d->fd, up(i, buf), &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    st.st_dev != d->dev[i] || st.st_ino != d->ino[i])
			return false;
	return true;
}

static void dir_free(struct io_dir *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	free(d);
}

/* path opened beneath the root into a new entry (*d_out NULL: not to be kept). */
static int dir_open(struct io_root *root, const char *path, struct io_dir **d_out)
{
	struct io_dir *d = calloc(1, sizeof(*d));
	int err;

	*d_out = NULL;
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return rcp_err(-ENOMEM, "out of memory for a directory of the copy");
	}
	d->fd = -1;
	err = io__sub_open(root->fd, path, &d->fd);
	if (!err && chain_record(root, d)) {
		*d_out = d;
		return 0;
	}
	dir_free(d);
	return err;
}

/*
 * The kept entry of path, opened or reopened as needed; NULL with 0 when
 * it is not to be kept (too deep). Under dir_lock.
 */
static int dir_find(struct io_root *root, const char *path, struct io_dir **d_out)
{
	struct io_dir *d = NULL;
	size_t i;
	int err;

	/* Room for one more at most half full, so that a probe always ends. */
	if ((root->n_dirs + 1) * 2 > root->dirs_cap && (err = table_grow(root)) != 0)
		return rcp_err(err, "out of memory for the directories of the copy");
	i = slot_of(root, path);
	if (root->dirs[i] && chain_holds(root->dirs[i])) {
		*d_out = root->dirs[i];
		return 0;
	}
	*d_out = NULL;
	if (!root->dirs[i] && root->n_dirs >= DIRS_KEPT_MAX)
		return 0; /* enough kept: its files open their own */
	err = dir_open(root, path, &d);
	if (err == -EMFILE || err == -ENFILE) {
		rcp_err_clear();
		err = 0; /* out of descriptors: not kept, its files try their own */
	}
	if (root->dirs[i]) { /* moved: it stays in its slot (the probes pass it), open */
		if (d)
			d->dirty = root->dirs[i]->dirty; /* its new self owes its sync */
		root->dirs[i]->moved = true;
		root->dirs[i]->dirty = false; /* outside, or gone: nothing of ours to sync */
	}
	if (err || !d)
		return err;
	if (root->dirs[i]) { /* retired, not closed: a file in flight may hold its fd */
		root->dirs[i]->next = root->dirs_retired;
		root->dirs_retired = root->dirs[i];
		root->n_dirs--;
	}
	root->dirs[i] = d;
	root->n_dirs++;
	*d_out = d;
	return 0;
}

int io__dir_get(struct io_root *root, const char *path, int *fd_out, bool *kept_out)
{
	struct io_dir *d;
	int err;

	if (!strcmp(path, ".")) { /* the root itself: its fd is the root's */
		*fd_out = root->fd;
		*kept_out = true;
		return 0;
	}
	pthread_mutex_lock(&root->dir_lock);
	err = dir_find(root, path, &d);
	if (!err && d)
		*fd_out = d->fd;
	pthread_mutex_unlock(&root->dir_lock);
	if (err || d) {
		*kept_out = true;
		return err;
	}
	*kept_out = false; /* too deep to keep: the caller's own, as before */
	return io__sub_open(root->fd, path, fd_out);
}

void io__dir_dirty(struct io_root *root, const char *path)
{
	size_t i;

	pthread_mutex_lock(&root->dir_lock);
	if (!strcmp(path, "."))
		root->root_dirty = true;
	else if (root->dirs_cap && root->dirs[i = slot_of(root, path)] && !root->dirs[i]->moved)
		root->dirs[i]->dirty = true;
	pthread_mutex_unlock(&root->dir_lock);
}

/* fsync of directory fd (O_PATH) named path; one sentence on failure. */
static int dir_sync(int fd, const char *path)
{
	char esc[IO_ESC_MAX];
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (dfd < 0 || fsync(dfd) < 0)
		err = -errno;
	if (dfd >= 0)
		close(dfd);
	if (err)
		return rcp_err(err,
			       "cannot sync the directory \"%s\" (its files' names may not survive "
			       "a crash): %s",
			       io__path_escape(path, strlen(path), esc), strerror(-err));
	return 0;
}

int io__dirs_sync(struct io_root *root)
{
	size_t i;
	int err = 0;

	pthread_mutex_lock(&root->dir_lock);
	for (i = 0; i < root->dirs_cap && !err; i++) {
		struct io_dir *d = root->dirs[i];

		if (d && d->dirty && (err = dir_sync(d->fd, d->path)) == 0)
			d->dirty = false;
	}
	if (!err && root->root_dirty && (err = dir_sync(root->fd, ".")) == 0)
		root->root_dirty = false;
	pthread_mutex_unlock(&root->dir_lock);
	return err;
}

void io__dirs_close(struct io_root *root)
{
	size_t i;

	for (i = 0; i < root->dirs_cap; i++)
		dir_free(root->dirs[i]);
	while (root->dirs_retired) {
		struct io_dir *d = root->dirs_retired;

		root->dirs_retired = d->next;
		dir_free(d);
	}
	free(root->dirs);
	root->dirs = NULL;
	root->dirs_cap = root->n_dirs = 0;
}
