/*
 * naming.c - the names a copy gives and takes, by rsync's rule: a source
 * with a trailing slash (or no name of its own) stands for its contents,
 * any other is received by the destination under its own name, so where a
 * copy lands never depends on whether the destination existed and the same
 * command run again lands where the first run did. Here: the last name of
 * a source, whether a copy holds a source's contents, which names a pull
 * may receive, and where a copy lands at its destination.
 *
 * Design: every function here is a decision on strings and numbers only. It
 * touches no file system and allocates nothing; the caller tries the
 * destination (io_root_open or io_root_open_beneath on io_dest_path's path)
 * and hands the outcome in, so each case of the naming rule can be tested
 * without a directory tree, and the engine only carries out the decision.
 *
 * Threading: thread-safe (no shared state; errors go to the calling
 * thread's own sentence).
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <string.h>

/* "." or "..": a name that is no name of its own. */
static bool name_is_dots(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

size_t io__src_name(const char *src, const char **name_out)
{
	size_t len = strlen(src), start;

	for (start = len; start > 0 && src[start - 1] != '/'; start--)
		;
	*name_out = src + start;
	len -= start;
	return name_is_dots(src + start, len) ? 0 : len; /* "dir/": start == len */
}

bool io_src_contents_only(const char *const *src, size_t n_src)
{
	const char *name;
	size_t k;

	for (k = 0; k < n_src; k++)
		if (io__src_name(src[k], &name) == 0)
			return true;
	return false;
}

/* Whether top-level path is the last name of one of the sources. */
static bool pull_name_asked(const char *const *src, size_t n_src, const char *path)
{
	size_t k, n, len = strlen(path);
	const char *name;

	for (k = 0; k < n_src; k++) {
		n = io__src_name(src[k], &name);
		if (n && n == len && !memcmp(name, path, n))
			return true;
	}
	return false;
}

int io_pull_names_check(const char *const *src, size_t n_src, bool recursive,
			const struct io_manifest *m)
{
	char esc[IO_ESC_MAX];
	const char *name;
	bool any = false;
	size_t i, k;

	for (k = 0; k < n_src; k++)
		any |= io__src_name(src[k], &name) == 0;
	for (i = 0; i < m->n; i++) {
		const struct io_entry *e = &m->entry[i];

		if (e->type == IO_DIR && !recursive)
			return rcp_err(-EPROTO,
				       "the server sent the directory \"%s\", but -r was not given",
				       io_path_printable(e->path, esc));
		if (any || strchr(e->path, '/'))
			continue;
		if (!pull_name_asked(src, n_src, e->path))
			return rcp_err(-EPROTO,
				       "the server sent \"%s\", which was not asked for: refusing "
				       "the whole copy",
				       io_path_printable(e->path, esc));
	}
	return 0;
}

size_t io_manifest_top_count(const struct io_manifest *m)
{
	size_t i, n = 0;

	for (i = 0; i < m->n; i++)
		n += strchr(m->entry[i].path, '/') == NULL;
	return n;
}

bool io_manifest_one_file(const struct io_manifest *m)
{
	size_t i, n = 0;
	bool dir = false;

	for (i = 0; i < m->n; i++) {
		if (strchr(m->entry[i].path, '/'))
			continue;
		n++;
		dir |= m->entry[i].type == IO_DIR;
	}
	return n == 1 && !dir;
}

/* dst's length without its trailing slashes: "dir/" is "dir", "/" and "//" are "/". */
static size_t dest_len(const char *dst)
{
	size_t len = strlen(dst);

	while (len > 1 && dst[len - 1] == '/')
		len--;
	return len;
}

static int dest_too_long(const char *dst)
{
	char esc[IO_ESC_MAX];

	return rcp_err(-ENAMETOOLONG, "the destination \"%s\" is longer than %d bytes",
		       io_path_printable(dst, esc), IO_PATH_MAX - 1);
}

/* The first len bytes of dst (len < IO_PATH_MAX) as a path; "" is ".". */
static void dest_copy(const char *dst, size_t len, char out[IO_PATH_MAX])
{
	if (!len) {
		strcpy(out, ".");
		return;
	}
	memcpy(out, dst, len);
	out[len] = '\0';
}

int io_dest_path(const char *dst, char path_out[IO_PATH_MAX])
{
	size_t len = dest_len(dst);

	if (len >= IO_PATH_MAX)
		return dest_too_long(dst);
	dest_copy(dst, len, path_out);
	return 0;
}

/*
 * The directory dst[0, cut) names, where cut is just past the slash before
 * dst's last name (0: there is none): "a/b" -> "a", "/b" -> "/", "b" -> ".".
 * "a//b" gives "a/", as it always has: only the last slash is cut.
 */
static void dest_parent(const char *dst, size_t cut, char out[IO_PATH_MAX])
{
	if (cut == 1)
		strcpy(out, "/");
	else
		dest_copy(dst, cut ? cut - 1 : 0, out);
}

int io_dest_decide(const char *dst, bool contents, int open_err, bool one_file,
		   struct io_dest *dest_out)
{
	size_t len = dest_len(dst), cut, name_len;
	enum io_dest_kind kind;
	char esc[IO_ESC_MAX];

	if (len >= IO_PATH_MAX)
		return dest_too_long(dst);
	if (!open_err) {
		dest_out->kind = IO_DEST_INTO;
		dest_copy(dst, len, dest_out->dir);
		dest_out->name[0] = '\0';
		return 0;
	}
	if (open_err != -ENOENT && open_err != -ENOTDIR)
		return open_err;
	for (cut = len; cut > 0 && dst[cut - 1] != '/'; cut--)
		;
	name_len = len - cut;
	if (name_len == 0 || name_is_dots(dst + cut, name_len))
		return open_err; /* "", "/", "x/.", "x/..": no name; the open's sentence stands */
	if (one_file && !contents && len == strlen(dst))
		kind = IO_DEST_RENAME; /* one file to "new" (or over "file"): it is the file */
	else if (open_err == -ENOENT)
		kind = IO_DEST_MKDIR;
	else
		return rcp_err(-ENOTDIR,
			       "the destination \"%s\" is not a directory, which it must be "
			       "to receive %s",
			       io_path_printable(dst, esc),
			       one_file && !contents ? "a file under its own name"
						     : "a directory, contents or several sources");
	rcp_err_clear(); /* the failed open was the expected answer, not an error */
	dest_out->kind = kind;
	dest_parent(dst, cut, dest_out->dir);
	memcpy(dest_out->name, dst + cut, name_len);
	dest_out->name[name_len] = '\0';
	return 0;
}
