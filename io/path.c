/*
 * path.c - the rules for names that come from a peer, and confined
 * resolution beneath a root.
 *
 * Two independent defences: a lexical check (io__path_problem) that the
 * manifest decoder and every io_root_* call apply (it also keeps peers off
 * the temporary names in any case, see IO_TMP_PREFIX), and openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS for every resolution, which the
 * kernel performs atomically, so a symlink swapped in after any check of
 * ours still cannot lead out. Objects are then created with *at() calls
 * relative to the directory fd openat2 returned, never by path from the
 * root again.
 *
 * Threading: all functions are thread-safe (no shared state).
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

bool io__is_memfs(int fd)
{
	struct statfs sf;

	return fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

const char *io_path_printable(const char *path, char out[IO_ESC_MAX])
{
	return io__path_escape(path, strlen(path), out);
}

const char *io__path_escape(const char *p, size_t len, char out[IO_ESC_MAX])
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (o + 4 + 4 >= IO_ESC_MAX) { /* room for one escape, "..." and the NUL */
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	out[o] = '\0';
	return out;
}

static const char *component_problem(const char *c, size_t n)
{
	if (n == 0)
		return "has an empty component";
	if (n == 1 && c[0] == '.')
		return "has a \".\" component";
	if (n == 2 && c[0] == '.' && c[1] == '.')
		return "has a \"..\" component";
	if (n > IO_NAME_MAX)
		return "has a component longer than 255 bytes";
	if (io__is_tmp_name(c, n))
		return "has a component that starts with \"" IO_TMP_PREFIX "\", which is reserved "
		       "for railcp's temporary files";
	return NULL;
}

const char *io__path_problem(const char *p, size_t len)
{
	const char *c, *end = p + len, *slash, *why;

	if (len == 0)
		return "is empty";
	if (len >= IO_PATH_MAX)
		return "is longer than 4095 bytes";
	if (memchr(p, '\0', len))
		return "contains a NUL byte";
	if (p[0] == '/')
		return "is absolute";
	for (c = p; c <= end; c = slash + 1) {
		slash = memchr(c, '/', (size_t)(end - c));
		if (!slash)
			slash = end;
		why = component_problem(c, (size_t)(slash - c));
		if (why)
			return why;
	}
	return NULL;
}

static int openat2_beneath(int dirfd, const char *path, uint64_t flags, int *fd_out)
{
	struct io_op op;
	int64_t fd;

	io__open_op(dirfd, path, flags, true, &op);
	fd = io__open_retry(&op, io_op_run(&op, NULL));
	*fd_out = fd < 0 ? -1 : (int)fd;
	return fd < 0 ? (int)fd : 0;
}

int io__resolve_err(int err, const char *path, const char *what)
{
	char esc[IO_ESC_MAX];

	io__path_escape(path, strlen(path), esc);
	switch (err) {
	case -EXDEV:
		return rcp_err(-EXDEV, "refused \"%s\": its %s leads outside the root", esc, what);
	case -ELOOP:
		return rcp_err(err,
			       "refused \"%s\": its %s is or passes a symlink that is not "
			       "followed",
			       esc, what);
	case -ENOSYS:
		return rcp_err(err, "cannot confine \"%s\": openat2 needs Linux 5.6 or newer", esc);
	default:
		return rcp_err(err, "cannot open the %s of \"%s\": %s", what, esc, strerror(-err));
	}
}

int io__parent_split(const char *path, char parent[IO_PATH_MAX], const char **last_out)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!slash) {
		strcpy(parent, ".");
	} else {
		n = (size_t)(slash - path);
		if (n >= IO_PATH_MAX)
			return io__resolve_err(-ENAMETOOLONG, path, "directory");
		memcpy(parent, path, n);
		parent[n] = '\0';
		if (n == 0) /* "/x": the root of the file system, never beneath */
			strcpy(parent, "/");
	}
	*last_out = slash ? slash + 1 : path;
	return 0;
}

int io__parent_open(int root_fd, const char *path, int *fd_out, const char **last_out)
{
	char parent[IO_PATH_MAX];
	int err;

	err = io__parent_split(path, parent, last_out);
	if (!err && (err = openat2_beneath(root_fd, parent, IO_PARENT_FLAGS, fd_out)) != 0)
		err = io__resolve_err(err, path, "directory");
	return err;
}

int io__dir_open(int root_fd, const char *path, int *fd_out)
{
	int fd, err;

	err = openat2_beneath(root_fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, &fd);
	if (err)
		return io__resolve_err(err, path, "path");
	*fd_out = fd;
	return 0;
}

int io__sub_open(int root_fd, const char *path, int *fd_out)
{
	int fd, err;

	err = openat2_beneath(root_fd, path, O_PATH | O_DIRECTORY, &fd);
	if (err)
		return io__resolve_err(err, path, "path");
	*fd_out = fd;
	return 0;
}
