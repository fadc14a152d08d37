/*
 * delete.c - --delete: after a copy succeeded, the receiver removes what
 * the directories the copy covered hold and the sender's list does not.
 *
 * The directories covered are the manifest's directories (each a source
 * directory's copy, or one beneath it) and, when a source was contents
 * ("dir/"), the root itself; nothing else is looked at, so a single file's
 * copy removes nothing. Each covered directory is opened beneath the root
 * with openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV): a
 * path through a symlink or onto another file system is not entered. In it
 * an entry stays if the manifest lists it, if the filter leaves it out (it
 * is protected, as rsync protects excluded names without --delete-excluded)
 * or if its name starts with ".railcp-tmp-" (another copy's temporaries);
 * every other is removed by its directory's descriptor: a file, a symlink
 * (the link itself, never what it names) or a directory, emptied first the
 * same way, bottom-up (what the filter protects inside stays, and the
 * directory with it, as rsync leaves a directory that is not empty),
 * through descriptors opened the way the covered directories are (openat2:
 * no symlink, no mount point crossed, bind mounts of the same file system
 * included), each checked to be on the covered directory's file system.
 * Nothing is done by a path string, so a rename racing the walk cannot
 * point it outside the root.
 *
 * A failure to remove one entry does not stop the others; the first is
 * returned with a sentence saying how many failed. Threading: the caller's
 * thread; the root is only read.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Directories nested deeper than this inside an extraneous one are not removed (a descriptor each).
 */
#define DELETE_MAX_DEPTH 128

struct del {
	const struct io_delete_opts *o;
	const char **listed; /* the manifest's paths, sorted */
	size_t n_listed;
	bool strip_top; /* the filter's paths start beneath each top-level name */
	struct io_delete_result res;
	uint64_t held; /* protected entries found inside extraneous directories */
	int first_err;
	char path[IO_PATH_MAX]; /* the entry at hand, beneath the root */
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool listed(const struct del *d, const char *path)
{
	return bsearch(&path, d->listed, d->n_listed, sizeof(*d->listed), cmp_str) != NULL;
}

/* A failure to remove d->path: counted, and the first one's sentence kept. */
static void failed(struct del *d, int err, const char *why)
{
	char esc[IO_ESC_MAX];

	d->res.failed++;
	if (d->first_err)
		return;
	io__path_escape(d->path, strlen(d->path), esc);
	d->first_err = rcp_err(err, "could not remove \"%s\" beneath the destination: %s", esc,
			       why ? why : strerror(-err));
}

/* The entry at d->path, removed (or listed, dry) as said. */
static void removed(struct del *d, bool is_dir)
{
	d->res.removed++;
	if (d->o->said)
		d->o->said(d->path, is_dir, d->o->ctx);
}

/* Append name to d->path; false if it does not fit. */
static bool path_push(struct del *d, size_t at, const char *name)
{
	int n = snprintf(d->path + at, IO_PATH_MAX - at, "%s%s", at ? "/" : "", name);

	return n >= 0 && (size_t)n < IO_PATH_MAX - at;
}

/*
 * The directory path beneath dfd: no symlink followed, no mount point
 * crossed (another file system or a bind mount), nothing outside dfd.
 */
static int open_dir_beneath(int dfd, const char *path, int *fd_out)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_XDEV,
	};
	long fd;
	int tries = 0;

	do
		fd = syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN && ++tries < 8);
	if (fd < 0)
		return -errno;
	*fd_out = (int)fd;
	return 0;
}

static void remove_entry(struct del *d, int dfd, const char *name, dev_t dev, unsigned depth);
static bool stays(struct del *d, int dfd, const char *name);

/* Empty the open directory fd (at d->path) of everything, deepest first. */
static void empty_dir(struct del *d, int fd, dev_t dev, unsigned depth)
{
	size_t at = strlen(d->path);
	int dup_fd = dup(fd);
	DIR *dir = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;

	if (!dir) {
		if (dup_fd >= 0)
			close(dup_fd);
		failed(d, -errno, NULL);
		return;
	}
	while ((de = readdir(dir)) != NULL) {
		if (d->o->visit)
			d->o->visit(d->o->ctx);
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!path_push(d, at, de->d_name))
			failed(d, -ENAMETOOLONG, NULL);
		else if (stays(d, fd, de->d_name))
			d->held++; /* excluded (or a temporary): it stays, and so do its parents */
		else
			remove_entry(d, fd, de->d_name, dev, depth + 1);
		d->path[at] = '\0';
	}
	closedir(dir);
}

/* Remove the directory name in dfd (at d->path): its contents first, by descriptor. */
static void remove_dir(struct del *d, int dfd, const char *name, dev_t dev, unsigned depth)
{
	struct stat st;
	int fd = -1, err;
	uint64_t before = d->res.failed, held = d->held;

	if (depth > DELETE_MAX_DEPTH) {
		failed(d, -ELOOP, "directories nested too deep");
		return;
	}
	/* RESOLVE_NO_XDEV: a bind mount of the same file system (same st_dev) is not entered
	 * either. */
	err = open_dir_beneath(dfd, name, &fd);
	if (err) {
		failed(d, err,
		       err == -EXDEV ? "it is a mount point (another file system or a bind mount): "
				       "not entered"
				     : NULL);
		return;
	}
	if (fstat(fd, &st) != 0 || st.st_dev != dev) {
		failed(d, -EXDEV, "it is on another file system (a mount point): not entered");
		close(fd);
		return;
	}
	empty_dir(d, fd, dev, depth);
	close(fd);
	if (d->res.failed != before || d->held != held)
		return; /* something in it stays, and so does it */
	if (!d->o->dry && unlinkat(dfd, name, AT_REMOVEDIR) != 0)
		failed(d, -errno, NULL);
	else
		removed(d, true);
}

static void remove_entry(struct del *d, int dfd, const char *name, dev_t dev, unsigned depth)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT) /* gone already: nothing to remove */
			failed(d, -errno, NULL);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		remove_dir(d, dfd, name, dev, depth);
		return;
	}
	if (!d->o->dry && unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
		failed(d, -errno, NULL);
	else
		removed(d, false);
}

/* Whether the filter protects the entry at path (beneath the root). */
static bool protected(const struct del *d, const char *path, bool is_dir)
{
	const char *rel = path;

	if (!d->o->filter)
		return false;
	if (d->strip_top) {
		rel = strchr(path, '/');
		if (!rel)
			return false; /* a top-level name: a source's own, never filtered */
		rel++;
	}
	return io_filter_excluded(d->o->filter, rel, is_dir);
}

/* Whether the entry name found in the covered directory stays. */
static bool stays(struct del *d, int dfd, const char *name)
{
	struct stat st;

	if (io__is_tmp_name(name, strlen(name)) || listed(d, d->path))
		return true;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return true; /* gone already */
	return protected(d, d->path, S_ISDIR(st.st_mode));
}

/* One covered directory (path beneath the root, "." the root): its extraneous entries go. */
static void covered_scan(struct del *d, int root_fd, const char *path)
{
	char esc[IO_ESC_MAX];
	size_t at = strcmp(path, ".") ? strlen(path) : 0;
	struct dirent *de;
	struct stat st;
	DIR *dir;
	int fd = -1, err = open_dir_beneath(root_fd, path, &fd);

	if (err == -ENOENT)
		return; /* a dry run's directory the copy would make: nothing in it yet */
	if (err) {
		rcp_log(RCP_LOG_NOTICE, "--delete: \"%s\" not entered: %s",
			io__path_escape(path, strlen(path), esc),
			err == -ELOOP || err == -ENOTDIR
				? "it is or passes a symlink, or no directory"
			: err == -EXDEV ? "it is on another file system"
					: strerror(-err));
		return;
	}
	if (fstat(fd, &st) != 0 || !(dir = fdopendir(fd))) {
		close(fd);
		return;
	}
	memcpy(d->path, path, at);
	while ((de = readdir(dir)) != NULL) {
		if (d->o->visit)
			d->o->visit(d->o->ctx);
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		d->path[at] = '\0';
		if (!path_push(d, at, de->d_name))
			continue; /* longer than any listed path: the copy did not make it */
		if (!stays(d, fd, de->d_name))
			remove_entry(d, fd, de->d_name, st.st_dev, 0);
	}
	closedir(dir);
}

int io_root_delete(const struct io_root *root, const struct io_manifest *m,
		   const struct io_delete_opts *o, struct io_delete_result *out)
{
	struct del *d = calloc(1, sizeof(*d));
	char first[512];
	size_t i;
	int err;

	if (!d || !(d->listed = malloc((m->n ? m->n : 1) * sizeof(*d->listed)))) {
		free(d);
		return rcp_err(-ENOMEM, "out of memory for --delete's list");
	}
	d->o = o;
	d->strip_top = !o->root_too;
	for (i = 0; i < m->n; i++)
		d->listed[d->n_listed++] = m->entry[i].path;
	qsort(d->listed, d->n_listed, sizeof(*d->listed), cmp_str);
	if (o->root_too)
		covered_scan(d, root->fd, ".");
	for (i = 0; i < m->n; i++)
		if (m->entry[i].type == IO_DIR)
			covered_scan(d, root->fd, m->entry[i].path);
	*out = d->res;
	err = d->first_err;
	if (d->res.failed > 1) {
		snprintf(first, sizeof(first), "%s", rcp_err_msg(err));
		rcp_err(err, "%s (and %" PRIu64 " more entries could not be removed)", first,
			d->res.failed - 1);
	}
	free(d->listed);
	free(d);
	return err;
}
