/*
 * manifest.c - the sender's walk of its sources into a manifest (the
 * list of entries itself, appended, freed and copied: manifest_entries.c).
 *
 * Depth first, pre-order, so every directory comes before its contents;
 * the names in a directory are sorted bytewise, so a walk of the same tree
 * always gives the same manifest. The walk moves with directory fds
 * (openat/fstatat relative to the parent), never following a symlink: a
 * symlink is recorded with its target and not entered. A regular file is
 * opened once, its metadata taken from that fd, and its data extents found
 * with SEEK_DATA/SEEK_HOLE, so holes never travel. One fd stays open per
 * directory level while its children are walked. Temporaries (IO_TMP_PREFIX)
 * are skipped silently: they are railcp's own, not data. So are names that
 * differ from the prefix in case alone, which a receiver refuses as well.
 *
 * Threading: io_manifest_walk is thread-safe (no shared state); a manifest
 * is read-only afterwards and may be shared.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct walk {
	struct io_manifest *m;
	unsigned flags;
	const struct io_filter *filter; /* NULL: none */
	size_t top_len;			/* the source's top in rel: rel beneath it starts after */
	bool recursive;			/* -r itself (listed paths walk their way in without it) */
	bool *found;			/* per listed path */
};

/* a + "/" + b (or the one that is not empty), malloc'd. */
static char *path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);

	if (!p)
		return NULL;
	memcpy(p, a, la);
	if (la && lb && a[la - 1] != '/')
		p[la++] = '/';
	memcpy(p + la, b, lb + 1);
	return p;
}

static int entry_add(struct walk *w, const char *src, const char *rel, const struct stat *st,
		     enum io_type type, struct io_entry **e_out)
{
	struct io_entry *e;
	int err;

	if (strlen(rel) >= IO_PATH_MAX)
		return rcp_err(-ENAMETOOLONG,
			       "cannot send %s: its name at the destination is longer "
			       "than %d bytes",
			       src, IO_PATH_MAX - 1);
	err = io__manifest_add(w->m, &e);
	if (err)
		return err;
	e->type = type;
	e->mode = st->st_mode & 07777;
	e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->path = strdup(rel);
	e->src = strdup(src);
	if (!e->path || !e->src)
		return rcp_err(-ENOMEM, "out of memory walking %s", src);
	*e_out = e;
	return 0;
}

static int extent_push(struct io_entry *e, uint64_t off, uint64_t len)
{
	struct io_extent *grown;

	if ((e->n_ext & (e->n_ext - 1)) == 0) { /* 0, 1, 2, 4, ...: double */
		grown = realloc(e->ext, (e->n_ext ? 2 * (size_t)e->n_ext : 1) * sizeof(*grown));
		if (!grown)
			return rcp_err(-ENOMEM, "out of memory for the extents of %s", e->src);
		e->ext = grown;
	}
	e->ext[e->n_ext++] = (struct io_extent){.off = off, .len = len};
	e->data_bytes += len;
	return 0;
}

/* The data extents of fd up to size; a file system without SEEK_DATA gives one extent. */
static int file_extents(int fd, struct io_entry *e)
{
	off_t off = 0, data, hole;
	int err;

	while ((uint64_t)off < e->size) {
		data = lseek(fd, off, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			return 0; /* only a hole up to the end */
		if (data < 0 && errno == EINVAL && off == 0)
			return extent_push(e, 0, e->size);
		if (data < 0)
			return rcp_err(-errno, "cannot find the data of %s: %s", e->src,
				       strerror(errno));
		if ((uint64_t)data >= e->size)
			return 0;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			return rcp_err(-errno, "cannot find the holes of %s: %s", e->src,
				       strerror(errno));
		if ((uint64_t)hole > e->size)
			hole = (off_t)e->size;
		err = extent_push(e, (uint64_t)data, (uint64_t)(hole - data));
		if (err)
			return err;
		off = hole;
	}
	return 0;
}

/*
 * A regular file whose blocks cover its size has no hole worth keeping: one
 * extent, without opening it (the test cp uses). Only a file that may be
 * sparse is opened and asked for its data with SEEK_DATA/SEEK_HOLE. Under
 * emulation each system call is dear, and a tree of small files is mostly
 * the first kind.
 */
static bool may_be_sparse(const struct stat *st)
{
	return (uint64_t)st->st_blocks * 512 < (uint64_t)st->st_size;
}

static int walk_file(struct walk *w, int dirfd, const char *name, const char *src, const char *rel,
		     const struct stat *lst)
{
	struct io_entry *e;
	struct stat st = *lst;
	int fd = -1, err;

	if (may_be_sparse(&st)) {
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return rcp_err(-errno, "cannot open %s: %s", src, strerror(errno));
		if (fstat(fd, &st) < 0) {
			err = rcp_err(-errno, "cannot stat %s: %s", src, strerror(errno));
			goto out_close;
		}
		if (!S_ISREG(st.st_mode)) {
			err = rcp_err(-EAGAIN, "%s changed type during the walk", src);
			goto out_close;
		}
	}
	err = entry_add(w, src, rel, &st, IO_FILE, &e);
	if (err)
		goto out_close;
	e->size = (uint64_t)st.st_size;
	err = fd >= 0 ? file_extents(fd, e) : e->size ? extent_push(e, 0, e->size) : 0;
	if (err)
		goto out_close;
	w->m->data_bytes += e->data_bytes;
	w->m->n_files++;
out_close:
	if (fd >= 0)
		close(fd);
	return err;
}

static int walk_symlink(struct walk *w, int dirfd, const char *name, const char *src,
			const char *rel, const struct stat *st)
{
	char target[IO_PATH_MAX];
	struct io_entry *e;
	ssize_t n;
	int err;

	n = readlinkat(dirfd, name, target, sizeof(target));
	if (n < 0)
		return rcp_err(-errno, "cannot read the symlink %s: %s", src, strerror(errno));
	if (n == 0 || (size_t)n >= sizeof(target))
		return rcp_err(-ENAMETOOLONG,
			       "cannot send the symlink %s: its target is empty or "
			       "longer than %d bytes",
			       src, IO_PATH_MAX - 1);
	target[n] = '\0';
	err = entry_add(w, src, rel, st, IO_SYMLINK, &e);
	if (err)
		return err;
	e->size = (uint64_t)n;
	e->link = strdup(target);
	if (!e->link)
		return rcp_err(-ENOMEM, "out of memory walking %s", src);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **name, size_t n)
{
	while (n)
		free(name[--n]);
	free(name);
}

/*
 * The names in dir, sorted; "." and ".." left out, and so are temporaries
 * (IO_TMP_PREFIX, in any case): another session's file being received, or
 * one a killed receiver left, is never sent, and a receiver would refuse the
 * name.
 */
static int dir_names(DIR *dir, const char *src, char ***names_out, size_t *n_out)
{
	char **name = NULL, **grown;
	size_t n = 0, cap = 0;
	struct dirent *d;

	for (errno = 0; (d = readdir(dir)); errno = 0) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..") ||
		    io__is_tmp_name(d->d_name, strlen(d->d_name)))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(name, cap * sizeof(*name));
			if (!grown)
				goto err_nomem;
			name = grown;
		}
		name[n] = strdup(d->d_name);
		if (!name[n])
			goto err_nomem;
		n++;
	}
	if (errno) {
		names_free(name, n);
		return rcp_err(-errno, "cannot read the directory %s: %s", src, strerror(errno));
	}
	if (n > 1) /* an empty directory has no array: qsort must not see NULL */
		qsort(name, n, sizeof(*name), name_cmp);
	*names_out = name;
	*n_out = n;
	return 0;
err_nomem:
	names_free(name, n);
	return rcp_err(-ENOMEM, "out of memory reading the directory %s", src);
}

static int walk_at(struct walk *w, int dirfd, const char *name, const char *src, const char *rel);

static int walk_children(struct walk *w, DIR *dir, const char *src, const char *rel)
{
	char **name = NULL, *csrc, *crel;
	size_t n = 0, i;
	int err;

	err = dir_names(dir, src, &name, &n);
	if (err)
		return err;
	for (i = 0; i < n && !err; i++) {
		csrc = path_join(src, name[i]);
		crel = path_join(rel, name[i]);
		if (csrc && crel)
			err = walk_at(w, dirfd(dir), name[i], csrc, crel);
		else
			err = rcp_err(-ENOMEM, "out of memory walking %s", src);
		free(csrc);
		free(crel);
	}
	names_free(name, n);
	return err;
}

static int walk_dir(struct walk *w, int dirfd, const char *name, const char *src, const char *rel,
		    const struct stat *st)
{
	struct io_entry *e;
	DIR *dir;
	int fd, err;

	if (!(w->flags & IO_WALK_RECURSIVE))
		return rcp_err(-EISDIR, "%s is a directory: copy directories with -r", src);
	if (rel[0]) {
		err = entry_add(w, src, rel, st, IO_DIR, &e);
		if (err)
			return err;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return rcp_err(-errno, "cannot open the directory %s: %s", src, strerror(errno));
	dir = fdopendir(fd);
	if (!dir) {
		err = rcp_err(-errno, "cannot read the directory %s: %s", src, strerror(errno));
		close(fd);
		return err;
	}
	err = walk_children(w, dir, src, rel);
	closedir(dir);
	return err;
}

/* Whether the filter leaves out the entry at rel, beneath the source's top. */
static bool left_out(const struct walk *w, const char *rel, bool is_dir)
{
	const char *beneath = rel + w->top_len + (w->top_len > 0);

	if (io_filter_has_paths(w->filter) &&
	    !io__filter_wanted(w->filter, beneath, is_dir, w->recursive, w->found))
		return true;
	return io_filter_excluded(w->filter, beneath, is_dir);
}

static int walk_at(struct walk *w, int dirfd, const char *name, const char *src, const char *rel)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return rcp_err(-errno, "cannot stat %s: %s", src, strerror(errno));
	if (w->filter && rel[w->top_len] != '\0' && left_out(w, rel, S_ISDIR(st.st_mode)))
		return 0;
	if (w->filter && rel[w->top_len] == '\0' && io_filter_has_paths(w->filter) &&
	    !S_ISDIR(st.st_mode))
		return rcp_err(-ENOTDIR, "--files-from needs a source directory; %s is not one",
			       src);
	if (S_ISDIR(st.st_mode))
		return walk_dir(w, dirfd, name, src, rel, &st);
	if (!rel[0])
		return rcp_err(-EINVAL, "%s has no name to copy it under", src);
	if (S_ISREG(st.st_mode))
		return walk_file(w, dirfd, name, src, rel, &st);
	if (S_ISLNK(st.st_mode))
		return walk_symlink(w, dirfd, name, src, rel, &st);
	rcp_log(RCP_LOG_NOTICE, "skipping %s: not a regular file, directory or symlink", src);
	return 0;
}

/* All new paths first, then the swap: m is untouched on failure. */
static int rename_all(struct io_manifest *m, size_t old_len, const char *name)
{
	size_t i;
	char **p = calloc(m->n ? m->n : 1, sizeof(*p));
	int err = 0;

	if (!p)
		return rcp_err(-ENOMEM, "out of memory renaming a manifest");
	for (i = 0; i < m->n && !err; i++) {
		const char *rest = m->entry[i].path + old_len;

		p[i] = path_join(name, rest + (rest[0] == '/'));
		if (!p[i])
			err = rcp_err(-ENOMEM, "out of memory renaming a manifest");
		else if (strlen(p[i]) >= IO_PATH_MAX)
			err = rcp_err(-ENAMETOOLONG,
				      "renamed to \"%s\", a path would be longer than "
				      "%d bytes",
				      name, IO_PATH_MAX - 1);
	}
	for (i = 0; i < m->n; i++) {
		if (!err) {
			free(m->entry[i].path);
			m->entry[i].path = p[i];
		} else {
			free(p[i]);
		}
	}
	free(p);
	return err;
}

int io_manifest_rename_top(struct io_manifest *m, const char *name)
{
	const char *top = m->n ? m->entry[0].path : "";
	size_t len = strcspn(top, "/"), i;

	if (io__path_problem(name, strlen(name)) || strchr(name, '/'))
		return rcp_err(-EINVAL, "\"%s\" cannot be a destination name", name);
	for (i = 0; i < m->n; i++) {
		const char *p = m->entry[i].path;

		if (strncmp(p, top, len) || (p[len] != '\0' && p[len] != '/'))
			return rcp_err(-EINVAL,
				       "several sources cannot all be called \"%s\"; copy "
				       "them into a directory",
				       name);
	}
	if (m->n == 0)
		return rcp_err(-EINVAL, "nothing to call \"%s\"", name);
	return rename_all(m, len, name);
}

/*
 * The name src gets beneath the destination root (see io.h): its last
 * component; "" (its contents) for ".", "..", "dir/." and any path ending
 * in "/", as rsync reads a source. A reserved temporary name is refused,
 * with or without a trailing slash.
 */
static int top_name(const char *src, const char *as_name, char **name_out)
{
	size_t len = strlen(src), start;
	const char *last;
	char *name;

	if (as_name) {
		if (io__path_problem(as_name, strlen(as_name)) || strchr(as_name, '/'))
			return rcp_err(-EINVAL, "\"%s\" cannot be a destination name", as_name);
		name = strdup(as_name);
		goto out;
	}
	if (len == 0)
		return rcp_err(-ENOENT, "an empty source path names nothing");
	while (len > 1 && src[len - 1] == '/')
		len--;
	for (start = len; start > 0 && src[start - 1] != '/'; start--)
		;
	if (io__is_tmp_name(src + start, len - start))
		return rcp_err(-EINVAL,
			       "cannot copy %s: names that start with \"" IO_TMP_PREFIX "\" are "
			       "reserved for railcp's temporary files",
			       src);
	/* "dir/", "dir/.", "/": the source's contents, as rsync reads it */
	len = io__src_name(src, &last);
	name = strndup(last, len);
out:
	if (!name)
		return rcp_err(-ENOMEM, "out of memory walking %s", src);
	*name_out = name;
	return 0;
}

/*
 * Walk one source: from the current directory, or beneath root (a server
 * answering a pull), where src must be a valid relative path ("." or ""
 * for the root itself; a trailing "/" or "/." names the directory, whose
 * contents top_name's "" asks for) and its directory is found with
 * openat2.
 */
static int walk_source(struct walk *w, const struct io_root *root, const char *src,
		       const char *name)
{
	char esc[IO_ESC_MAX], dir[IO_PATH_MAX];
	const char *last, *why;
	size_t len = strlen(src);
	int pfd, err;

	if (!root)
		return walk_at(w, AT_FDCWD, src, src, name);
	/* "a/b/." and "a/b/" are a/b: the name (top_name) already says contents or not. */
	while (len > 0 &&
	       (src[len - 1] == '/' || (src[len - 1] == '.' && (len == 1 || src[len - 2] == '/'))))
		len--;
	if (len == 0)
		return walk_at(w, root->fd, ".", ".", name);
	if (len >= sizeof(dir))
		return rcp_err(-ENAMETOOLONG, "refused the source \"%s\": the name is too long",
			       io__path_escape(src, strlen(src), esc));
	memcpy(dir, src, len);
	dir[len] = '\0';
	src = dir;
	why = io__path_problem(src, strlen(src));
	if (why)
		return rcp_err(-EINVAL, "refused the source \"%s\": the name %s",
			       io__path_escape(src, strlen(src), esc), why);
	err = io__parent_open(root->fd, src, &pfd, &last);
	if (err)
		return err;
	err = walk_at(w, pfd, last, src, name);
	close(pfd);
	return err;
}

int io_manifest_walk(const struct io_root *root, const char *const *src, size_t n_src,
		     unsigned flags, const char *as_name, struct io_manifest **m_out)
{
	return io_manifest_walk_filtered(root, src, n_src, flags, as_name, NULL, m_out);
}

int io_manifest_walk_filtered(const struct io_root *root, const char *const *src, size_t n_src,
			      unsigned flags, const char *as_name, const struct io_filter *f,
			      struct io_manifest **m_out)
{
	struct walk w = {.flags = flags, .filter = f, .recursive = flags & IO_WALK_RECURSIVE};
	char *name = NULL;
	size_t i;
	int err = 0;

	if (as_name && n_src != 1)
		return rcp_err(-EINVAL, "a destination name needs exactly one source, not %zu",
			       n_src);
	if (io_filter_has_paths(f) && n_src != 1)
		return rcp_err(-EINVAL, "--files-from needs exactly one source directory, not %zu",
			       n_src);
	if (io_filter_has_paths(f)) { /* the way to each listed path is walked, -r or not */
		w.flags |= IO_WALK_RECURSIVE;
		w.found = calloc(io_filter_n_paths(f), sizeof(*w.found));
		if (!w.found)
			return rcp_err(-ENOMEM, "out of memory for --files-from");
	}
	w.m = calloc(1, sizeof(*w.m));
	if (!w.m)
		err = rcp_err(-ENOMEM, "out of memory for a manifest");
	for (i = 0; i < n_src && !err; i++) {
		err = top_name(src[i], as_name, &name);
		if (err)
			break;
		w.top_len = strlen(name);
		err = walk_source(&w, root, src[i], name);
		free(name);
	}
	for (i = 0; !err && w.found && i < io_filter_n_paths(f); i++) {
		char esc[IO_ESC_MAX];

		if (!w.found[i]) /* the source may be a peer's name: escaped */
			err = rcp_err(-ENOENT,
				      "--files-from lists \"%.200s\", which is not in %s (or is "
				      "excluded)",
				      io_filter_path_at(f, i),
				      io__path_escape(src[0], strlen(src[0]), esc));
	}
	free(w.found);
	/* Sources may collide (a/x and b/x, or x and ./x): two entries, one destination. */
	if (!err) {
		err = io__manifest_check(w.m,
					 &(struct io__decode_ctl){.large = flags & IO_WALK_LARGE});
		if (err == -EBADMSG)
			err = rcp_err(-EEXIST, "cannot copy these sources together: %s",
				      rcp_err_msg(err));
	}
	if (err) {
		io_manifest_destroy(w.m);
		return err;
	}
	*m_out = w.m;
	return 0;
}
