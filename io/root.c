/*
 * root.c - the receiver's root, and the directories and symlinks made in it.
 *
 * Every object is created by an *at() call on the directory fd that
 * io__parent_open got from openat2 beneath the root, after the name passed
 * the lexical check: nothing is created before the path is known to stay
 * inside. New directories get owner rwx while they are filled (a read-only
 * directory could not receive its contents); their own mode and mtime are
 * applied by io_root_dirs_finish, deepest first, because creating a child
 * changes a directory's mtime. Only directories this root made get them: a
 * directory that already existed is the receiver's, not the peer's to chmod
 * (cp -p would change it; a server must not let a client set any directory
 * beneath its root to 0000). The made ones are remembered by device and
 * inode, so one swapped in under the same name later is left alone too.
 * With IO_ROOT_PARTIAL a directory made gets a marker (IO_DIR_MARKER) until
 * its metadata is applied, so a copy that resumes one an interrupted copy
 * made knows it as made by a copy, not the receiver's own, and gives it the
 * source's mode and mtime too; the marker goes just before them. A marker
 * counts only if it is the receiver's own (io__partial_open: not a link, its
 * user's, one name), so no other user can plant one to have the receiver
 * chmod a directory that is not a copy's.
 * A railcp-mpi job's sessions (io_root_set_job) mark the directories they
 * make for the job's last session instead (io/jobdirs.c).
 * Symlinks are made under a temporary name and renamed over the final one,
 * so an existing entry is replaced atomically and a failure leaves nothing
 * half-made.
 *
 * Threading: an io_root may be used from several threads for different
 * paths (it holds an fd, constants, and the record of the directories it
 * made under its lock); io_root_dirs_finish must follow every mkdir.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Each thread draws its temporaries' random bits TMP_POOL names at a time:
 * one getrandom per 32 files received, not one per file (a system call was
 * a tenth of a small file's calls at the receiver). A child of fork starts
 * with no bits of its own: it must not name its temporaries as its parent
 * will.
 */
#define TMP_POOL 32
static __thread uint64_t tmp_pool[TMP_POOL];
static __thread unsigned tmp_left;
static pthread_once_t tmp_once = PTHREAD_ONCE_INIT;

static void tmp_pool_forget(void)
{
	tmp_left = 0;
}

static void tmp_pool_init(void)
{
	pthread_atfork(NULL, NULL, tmp_pool_forget);
}

void io__tmp_name(char out[IO_TMP_NAME_LEN])
{
	static _Atomic uint64_t counter;
	uint64_t r;

	pthread_once(&tmp_once, tmp_pool_init);
	/* Unpredictable where possible; O_EXCL makes a collision an error, not a race. */
	if (tmp_left == 0 &&
	    getrandom(tmp_pool, sizeof(tmp_pool), GRND_NONBLOCK) == (ssize_t)sizeof(tmp_pool))
		tmp_left = TMP_POOL;
	if (tmp_left > 0) {
		r = tmp_pool[--tmp_left];
		tmp_pool[tmp_left] = 0; /* used once */
	} else {
		r = ((uint64_t)getpid() << 32) ^ ++counter ^ (uint64_t)time(NULL);
	}
	snprintf(out, IO_TMP_NAME_LEN, IO_TMP_PREFIX "%016llx", (unsigned long long)r);
}

void io__mtime_times(int64_t mtime_ns, struct timespec ts_out[2])
{
	int64_t sec = mtime_ns / 1000000000, nsec = mtime_ns % 1000000000;

	if (nsec < 0) {
		nsec += 1000000000;
		sec--;
	}
	ts_out[0] = (struct timespec){.tv_nsec = UTIME_OMIT};
	ts_out[1] = (struct timespec){.tv_sec = sec, .tv_nsec = nsec};
}

/* What both constructors set once root->fd is open: the locks, the file system, its identity. */
static void root_init(struct io_root *root)
{
	struct stat st;

	root->memfs = io__is_memfs(root->fd);
	pthread_mutex_init(&root->lock, NULL);
	pthread_mutex_init(&root->dir_lock, NULL);
	if (fstat(root->fd, &st) == 0) { /* else no kept directory ever finds the root: none kept */
		root->dev = st.st_dev;
		root->ino = st.st_ino;
	}
}

int io_root_open(const char *dir, unsigned flags, struct io_root **root_out)
{
	struct io_root *root;
	int err;

	root = calloc(1, sizeof(*root));
	if (!root)
		return rcp_err(-ENOMEM, "out of memory opening the root %s", dir);
	root->fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root->fd < 0) {
		err = rcp_err(-errno, "cannot open the root directory %s: %s", dir,
			      strerror(errno));
		free(root);
		return err;
	}
	root->flags = flags;
	root->umask = umask(022);
	umask(root->umask);
	root_init(root);
	*root_out = root;
	return 0;
}

int io_root_open_beneath(const struct io_root *parent, const char *rel, struct io_root **root_out)
{
	bool itself = !rel[0] || !strcmp(rel, ".");
	const char *why = itself ? NULL : io__path_problem(rel, strlen(rel));
	char esc[IO_ESC_MAX];
	struct io_root *root;
	int err;

	if (why)
		return rcp_err(-EINVAL, "refused the destination \"%s\": the name %s",
			       io__path_escape(rel, strlen(rel), esc), why);
	root = calloc(1, sizeof(*root));
	if (!root)
		return rcp_err(-ENOMEM, "out of memory opening a destination");
	err = io__sub_open(parent->fd, itself ? "." : rel, &root->fd);
	if (err) {
		free(root);
		return err;
	}
	root->flags = parent->flags;
	root->umask = parent->umask;
	/* no directory made yet: those made on the parent are the parent's */
	root_init(root);
	*root_out = root;
	return 0;
}

void io_root_set_flags(struct io_root *root, unsigned flags)
{
	root->flags = flags;
}

void io_root_close(struct io_root *root)
{
	if (!root)
		return;
	io__dirs_close(root);
	close(root->fd);
	pthread_mutex_destroy(&root->dir_lock);
	pthread_mutex_destroy(&root->lock);
	free(root->made);
	free(root->jmade);
	free(root);
}

/* The lexical rules (a peer's names may reach here without a manifest). */
static int name_check(const struct io_entry *e, enum io_type want)
{
	char esc[IO_ESC_MAX];
	const char *why;

	if (e->type != want)
		return rcp_err(-EINVAL, "\"%s\" has the wrong type for this call",
			       io__path_escape(e->path, strlen(e->path), esc));
	why = io__path_problem(e->path, strlen(e->path));
	if (why)
		return rcp_err(-EINVAL, "refused \"%s\": the name %s",
			       io__path_escape(e->path, strlen(e->path), esc), why);
	return 0;
}

int io__dir_id_cmp(const void *a, const void *b)
{
	const struct io_dir_id *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int io__dir_ids_reserve(struct io_root *root, struct io_dir_id **v, const size_t *n, size_t *cap,
			const char *doing, const char *path)
{
	char esc[IO_ESC_MAX];
	struct io_dir_id *grown;
	size_t want;
	int err = 0;

	pthread_mutex_lock(&root->lock);
	if (*n == *cap) {
		want = *cap ? 2 * *cap : 16;
		grown = realloc(*v, want * sizeof(*grown));
		if (grown) {
			*v = grown;
			*cap = want;
		} else {
			err = rcp_err(-ENOMEM, "out of memory %s the directory \"%s\"", doing,
				      io__path_escape(path, strlen(path), esc));
		}
	}
	pthread_mutex_unlock(&root->lock);
	return err;
}

void io__dir_ids_add(struct io_root *root, struct io_dir_id **v, size_t *n, size_t *cap,
		     const struct stat *st)
{
	struct io_dir_id *grown;

	pthread_mutex_lock(&root->lock);
	/*
	 * Two threads that each reserved when one slot was left both find it:
	 * the second grows the list here (only out of memory drops an id then).
	 */
	if (*n == *cap && *cap && (grown = realloc(*v, 2 * *cap * sizeof(*grown))) != NULL) {
		*v = grown;
		*cap *= 2;
	}
	if (*n < *cap)
		(*v)[(*n)++] = (struct io_dir_id){st->st_dev, st->st_ino};
	pthread_mutex_unlock(&root->lock);
}

/* Room for one more made directory, taken before it is made: no failure after the mkdir. */
static int made_reserve(struct io_root *root, const char *path)
{
	return io__dir_ids_reserve(root, &root->made, &root->n_made, &root->cap_made, "creating",
				   path);
}

/*
 * Remember the directory just made. Another thread may have taken the room
 * reserved; then only this directory's metadata is lost (it keeps what
 * mkdir gave it), which is the safe side.
 */
static void made_add(struct io_root *root, const struct stat *st)
{
	io__dir_ids_add(root, &root->made, &root->n_made, &root->cap_made, st);
}

/*
 * The marker of directory last (beneath pfd), path, opened (made, with
 * O_CREAT in flags) as the receiver's own; a descriptor or -errno.
 */
static int marker_open(int pfd, const char *last, const char *path, int flags)
{
	int fd = openat(pfd, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), mfd;

	if (fd < 0)
		return -errno;
	mfd = io__partial_open(fd, IO_DIR_MARKER, flags, path);
	close(fd);
	return mfd;
}

/* Whether directory last (beneath pfd), path, holds the marker of a copy that made it. */
static bool dir_marked(int pfd, const char *last, const char *path)
{
	int mfd = marker_open(pfd, last, path, O_RDONLY);

	if (mfd >= 0)
		close(mfd);
	return mfd >= 0;
}

/* Mark directory last (beneath pfd), just made: a copy made it (see the top). */
static int dir_mark(int pfd, const char *last, const char *path)
{
	char esc[IO_ESC_MAX];
	int mfd = marker_open(pfd, last, path, O_RDONLY | O_CREAT);

	if (mfd < 0)
		return rcp_err(mfd, "cannot mark the directory \"%s\" as made by this copy: %s",
			       io__path_escape(path, strlen(path), esc), strerror(-mfd));
	close(mfd);
	return 0;
}

int io_root_mkdir(struct io_root *root, const struct io_entry *e)
{
	bool partial = root->flags & IO_ROOT_PARTIAL;
	bool keep = root->flags & (IO_ROOT_KEEP_META | IO_ROOT_PARTIAL);
	char esc[IO_ESC_MAX];
	const char *last;
	struct stat st;
	int pfd, err;

	err = name_check(e, IO_DIR);
	if (!err && keep)
		err = made_reserve(root, e->path);
	if (err)
		return err;
	err = io__parent_open(root->fd, e->path, &pfd, &last);
	if (err)
		return err;
	if (mkdirat(pfd, last, (e->mode & 0777) | 0700) < 0) {
		err = -errno;
		if (err == -EEXIST && fstatat(pfd, last, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)) {
			err = 0; /* copying into an existing directory, as cp -r does */
			/* Not for a copy that leaves an earlier one's state alone. */
			if (partial && !(root->flags & IO_ROOT_SPARE) &&
			    dir_marked(pfd, last, e->path)) {
				made_add(root, &st); /* an interrupted copy made it */
				if (root->job)
					err = io__job_mark(root, pfd, last, e->path, &st);
			}
		} else if (err == -EEXIST)
			err = rcp_err(err,
				      "cannot create the directory \"%s\": something else is "
				      "in the way",
				      io__path_escape(e->path, strlen(e->path), esc));
		else
			err = rcp_err(err, "cannot create the directory \"%s\": %s",
				      io__path_escape(e->path, strlen(e->path), esc),
				      strerror(-err));
	} else if ((keep || root->job) && fstatat(pfd, last, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		   S_ISDIR(st.st_mode)) {
		if (keep)
			made_add(root, &st); /* else it was swapped at once: not ours to change */
		if (partial)
			err = dir_mark(pfd, last, e->path);
		if (!err && root->job)
			err = io__job_mark(root, pfd, last, e->path, &st);
	}
	close(pfd);
	return err;
}

/* What is at last in pfd against e. */
static enum io_diff diff_at(int pfd, const char *last, const struct io_entry *e)
{
	size_t want = e->link ? strlen(e->link) : 0;
	char target[IO_PATH_MAX];
	struct stat st;
	ssize_t n;

	if (fstatat(pfd, last, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return IO_DIFF_NEW;
	if (e->type == IO_DIR)
		return S_ISDIR(st.st_mode) ? IO_DIFF_SAME : IO_DIFF_TYPE;
	if (e->type == IO_FILE && !S_ISREG(st.st_mode))
		return IO_DIFF_TYPE;
	if (e->type == IO_FILE)
		return (uint64_t)st.st_size != e->size ? IO_DIFF_SIZE
		       : (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != e->mtime_ns
			       ? IO_DIFF_MTIME
			       : IO_DIFF_SAME;
	if (!S_ISLNK(st.st_mode))
		return IO_DIFF_TYPE;
	n = want < sizeof(target) ? readlinkat(pfd, last, target, sizeof(target)) : -1;
	return n >= 0 && (size_t)n == want && !memcmp(target, e->link, want) ? IO_DIFF_SAME
									     : IO_DIFF_LINK;
}

enum io_diff io_root_compare(const struct io_root *root, const struct io_entry *e)
{
	const char *last;
	enum io_diff d;
	int pfd;

	if (!root)
		return IO_DIFF_NEW;
	if (io__parent_open(root->fd, e->path, &pfd, &last) != 0) {
		rcp_err_clear(); /* not ours to report: the copy itself will */
		return IO_DIFF_NEW;
	}
	d = diff_at(pfd, last, e);
	close(pfd);
	return d;
}

const char *io_diff_str(enum io_diff d)
{
	static const char *const words[] = {"up to date",
					    "new",
					    "another type there",
					    "size differs",
					    "modification time differs",
					    "symlink target differs"};

	return (unsigned)d <= IO_DIFF_MAX ? words[d] : "?";
}

bool io_root_holds(const struct io_root *root, const struct io_entry *e)
{
	return e->type != IO_DIR && io_root_compare(root, e) == IO_DIFF_SAME;
}

int io_root_symlink(struct io_root *root, const struct io_entry *e)
{
	char tmp[IO_TMP_NAME_LEN], esc[IO_ESC_MAX];
	struct timespec ts[2];
	const char *last;
	int pfd, err = 0;

	err = name_check(e, IO_SYMLINK);
	if (err)
		return err;
	err = io__parent_open(root->fd, e->path, &pfd, &last);
	if (err)
		return err;
	io__tmp_name(tmp);
	if (symlinkat(e->link, pfd, tmp) < 0) {
		err = rcp_err(-errno, "cannot create the symlink \"%s\": %s",
			      io__path_escape(e->path, strlen(e->path), esc), strerror(errno));
		goto out_close;
	}
	io__mtime_times(e->mtime_ns, ts);
	if ((root->flags & IO_ROOT_KEEP_META) && utimensat(pfd, tmp, ts, AT_SYMLINK_NOFOLLOW) < 0) {
		err = rcp_err(-errno, "cannot set the time of the symlink \"%s\": %s",
			      io__path_escape(e->path, strlen(e->path), esc), strerror(errno));
		goto err_unlink;
	}
	if (renameat(pfd, tmp, pfd, last) < 0) {
		err = rcp_err(-errno, "cannot put the symlink \"%s\" in place: %s",
			      io__path_escape(e->path, strlen(e->path), esc), strerror(errno));
		goto err_unlink;
	}
	goto out_close;
err_unlink:
	unlinkat(pfd, tmp, 0);
out_close:
	close(pfd);
	return err;
}

int io__dir_meta_set(int fd, const struct io_entry *e)
{
	char esc[IO_ESC_MAX];
	struct timespec ts[2];

	io__mtime_times(e->mtime_ns, ts);
	/* setuid/setgid never survive: the peer does not choose what runs as us */
	if (fchmod(fd, e->mode & 01777) < 0 || futimens(fd, ts) < 0)
		return rcp_err(-errno, "cannot set the mode or time of the directory \"%s\": %s",
			       io__path_escape(e->path, strlen(e->path), esc), strerror(errno));
	return 0;
}

/* Under root->lock, with root->made sorted by io__dir_id_cmp. */
static int dir_meta_apply(struct io_root *root, const struct io_entry *e)
{
	char esc[IO_ESC_MAX];
	struct io_dir_id id;
	struct stat st;
	int fd, err = 0;

	err = io__dir_open(root->fd, e->path, &fd);
	if (err)
		return err;
	if (fstat(fd, &st) < 0) {
		err = rcp_err(-errno, "cannot stat the directory \"%s\": %s",
			      io__path_escape(e->path, strlen(e->path), esc), strerror(errno));
		goto out_close;
	}
	id = (struct io_dir_id){st.st_dev, st.st_ino};
	if (!root->n_made || !bsearch(&id, root->made, root->n_made, sizeof(id), io__dir_id_cmp))
		goto out_close; /* it existed before the copy: the receiver's own */
	if ((root->flags & IO_ROOT_PARTIAL) && unlinkat(fd, IO_DIR_MARKER, 0) < 0 &&
	    errno != ENOENT) {
		err = rcp_err(-errno, "cannot remove the marker of the directory \"%s\": %s",
			      io__path_escape(e->path, strlen(e->path), esc), strerror(errno));
		goto out_close;
	}
	if (!(root->flags & IO_ROOT_KEEP_META))
		goto out_close; /* only the marker was to go */
	err = io__dir_meta_set(fd, e);
out_close:
	close(fd);
	return err;
}

static int deeper_first(const void *a, const void *b)
{
	const struct io_depth_idx *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? 1 : -1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t depth_of(const char *p)
{
	size_t d = 0;

	for (; *p; p++)
		d += *p == '/';
	return d;
}

int io__dirs_order(const struct io_manifest *m, struct io_depth_idx **order_out, size_t *n_out)
{
	struct io_depth_idx *order = malloc((m->n ? m->n : 1) * sizeof(*order));
	size_t i, n = 0;

	if (!order)
		return rcp_err(-ENOMEM, "out of memory ordering %zu directories", m->n);
	for (i = 0; i < m->n; i++)
		if (m->entry[i].type == IO_DIR)
			order[n++] = (struct io_depth_idx){depth_of(m->entry[i].path), i};
	qsort(order, n, sizeof(*order), deeper_first);
	*order_out = order;
	*n_out = n;
	return 0;
}

int io_root_dirs_finish(struct io_root *root, const struct io_manifest *m)
{
	struct io_depth_idx *order;
	size_t i, n = 0;
	int err = 0;

	/* The renames into kept directories, synced once per directory (wfile.c). */
	if ((err = io__dirs_sync(root)) != 0)
		return err;
	/* A job's session: the job's last one applies them (io_root_job_dirs). */
	if (!(root->flags & (IO_ROOT_KEEP_META | IO_ROOT_PARTIAL)) || root->job)
		return 0;
	if ((err = io__dirs_order(m, &order, &n)) != 0)
		return err;
	pthread_mutex_lock(&root->lock);
	if (root->n_made > 1)
		qsort(root->made, root->n_made, sizeof(*root->made), io__dir_id_cmp);
	for (i = 0; i < n && !err; i++)
		err = dir_meta_apply(root, &m->entry[order[i].idx]);
	pthread_mutex_unlock(&root->lock);
	free(order);
	return err;
}
