/*
 * precheck.c - what a copy, a bench or a server would refuse that can be
 * told on this host alone: the key, the sources of a push, the directory
 * a pull writes into, the root and the address a server listens on. The
 * CLI asks before it probes the RDMA devices, so a mistake of the command
 * line is said as such on a host without RDMA too.
 *
 * Threading: no shared state.
 */
#include "engine/session/auth.h"
#include "engine/session/session_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

int eng_key_check(const char *key_file)
{
	struct eng_auth_key key;
	int err = eng__auth_key_find(key_file, &key);

	eng__auth_key_wipe(&key);
	if (err == -ENOENT && !key_file) {
		rcp_err_clear(); /* no key: loopback only, which the session says if it matters */
		return 0;
	}
	return err;
}

/* A push's source: there, and a directory only for a recursive copy (as the walk says it). */
static int source_check(const char *src, bool recursive)
{
	struct stat st;

	if (lstat(src, &st) < 0)
		return rcp_err(-errno, "cannot stat %s: %s", src, strerror(errno));
	if (S_ISDIR(st.st_mode) && !recursive)
		return rcp_err(-EISDIR, "%s is a directory: copy directories with -r", src);
	return 0;
}

/* A pull's destination: there, or a name in a directory that is. */
static int dest_check(const char *dst)
{
	char dir[PATH_MAX];
	const char *slash;
	struct stat st;
	size_t n;

	if (lstat(dst, &st) == 0 || errno != ENOENT)
		return 0; /* the copy says more precisely what it cannot do with it */
	for (n = strlen(dst); n > 1 && dst[n - 1] == '/'; n--)
		; /* "new/" is made as "new" is */
	for (slash = NULL; n > 0 && !slash; n--)
		if (dst[n - 1] == '/')
			slash = dst + n - 1;
	if (!slash)
		return 0;
	n = slash == dst ? 1 : (size_t)(slash - dst);
	if (n >= sizeof(dir))
		return rcp_err(-ENAMETOOLONG, "the destination %s is too long a path", dst);
	memcpy(dir, dst, n);
	dir[n] = '\0';
	if (stat(dir, &st) < 0)
		return rcp_err(-errno, "cannot create %s: %s: %s", dst, dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return rcp_err(-ENOTDIR, "cannot create %s: %s is not a directory", dst, dir);
	return 0;
}

int eng_copy_check(const struct eng_copy_opts *o)
{
	size_t i;
	int err = 0;

	if (o->dir == ENG_PULL)
		return dest_check(o->dst);
	for (i = 0; i < o->n_src && !err; i++)
		err = source_check(o->src[i], o->recursive);
	return err;
}

int eng_serve_check(const struct eng_serve_opts *o)
{
	struct eng_auth_key key;
	struct sockaddr_storage addr;
	socklen_t len;
	struct io_root *root;
	bool keyed;
	int err = eng__serve_key(o, &key, &keyed, &addr, &len);

	eng__auth_key_wipe(&key);
	if (!err && o->root) {
		err = io_root_open(o->root, 0, &root);
		if (!err)
			io_root_close(root);
	}
	return err;
}
