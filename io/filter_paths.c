/*
 * filter_paths.c - the paths of --files-from, the part of a walk's filter
 * that names what to send instead of what to leave out.
 *
 * A path is read as beneath the source ("/a" and "./a" are a, a trailing
 * '/' dropped) and refused by the checks a peer's name gets
 * (io__path_problem). The paths are kept sorted and unique
 * (io__filter_paths_sort, from io_filter_finish): an entry is wanted when
 * it is listed, lies on the way to one listed (a directory), or lies
 * beneath a listed directory of a recursive copy, each found by a binary
 * search. The walk (manifest.c) asks io__filter_wanted of every entry and
 * says which listed path it never met.
 *
 * Threading: as filter.c: built by one thread, then read-only (a look-up
 * writes only the caller's found[]).
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *io_filter_path_problem(const char *path)
{
	size_t len = strlen(path);
	const char *why = io__text_problem(path, len);

	if (!why && len >= IO_PATH_MAX)
		why = "is longer than 4095 bytes";
	return why ? why : io__path_problem(path, len);
}

int io_filter_path(struct io_filter *f, const char *path)
{
	size_t len = strlen(path);
	const char *why = io__text_problem(path, len), *p = path;
	char **grown;

	if (!why && len >= IO_PATH_MAX)
		why = "is longer than 4095 bytes";
	if (why)
		return rcp_err(-EINVAL, "the path '%.64s%s' %s", path, len > 64 ? "..." : "", why);
	while (*p == '/' || (p[0] == '.' && p[1] == '/'))
		p++; /* "/a" and "./a" are a, beneath the source as every listed path */
	len = strlen(p);
	while (len > 0 && p[len - 1] == '/')
		len--;
	if ((why = io__path_problem(p, len)) != NULL)
		return rcp_err(-EINVAL, "the path '%.64s%s' %s", path,
			       strlen(path) > 64 ? "..." : "", why);
	if (f->n_paths >= IO_FILTER_MAX_PATHS)
		return rcp_err(-E2BIG, "more than %d paths in --files-from", IO_FILTER_MAX_PATHS);
	if (f->n_paths == f->cap_paths) {
		size_t cap = f->cap_paths ? f->cap_paths * 2 : 64;

		grown = realloc(f->path, cap * sizeof(*grown));
		if (!grown)
			return rcp_err(-ENOMEM, "out of memory for --files-from");
		f->path = grown;
		f->cap_paths = cap;
	}
	if (!(f->path[f->n_paths] = strndup(p, len)))
		return rcp_err(-ENOMEM, "out of memory for --files-from");
	f->n_paths++;
	f->bytes += len + 2;
	return 0;
}

static int path_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void io__filter_paths_sort(struct io_filter *f)
{
	size_t i, n = 0;

	if (f->n_paths > 1)
		qsort(f->path, f->n_paths, sizeof(*f->path), path_cmp);
	for (i = 0; i < f->n_paths; i++) {
		if (n && !strcmp(f->path[n - 1], f->path[i]))
			free(f->path[i]);
		else
			f->path[n++] = f->path[i];
	}
	f->n_paths = n;
}

bool io_filter_has_paths(const struct io_filter *f)
{
	return f && f->n_paths > 0;
}

size_t io_filter_n_paths(const struct io_filter *f)
{
	return f ? f->n_paths : 0;
}

const char *io_filter_path_at(const struct io_filter *f, size_t i)
{
	return f->path[i];
}

/* The index of the first listed path >= key. */
static size_t lower_bound(const struct io_filter *f, const char *key)
{
	size_t lo = 0, hi = f->n_paths, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(f->path[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the first len bytes of rel are a listed path; its index in *i. */
static bool listed(const struct io_filter *f, const char *rel, size_t len, size_t *i)
{
	char key[IO_PATH_MAX];

	memcpy(key, rel, len);
	key[len] = '\0';
	*i = lower_bound(f, key);
	return *i < f->n_paths && !strcmp(f->path[*i], key);
}

bool io__filter_wanted(const struct io_filter *f, const char *rel, bool is_dir, bool recursive,
		       bool *found)
{
	size_t len = strlen(rel), i, k;
	char key[IO_PATH_MAX + 1];

	if (len >= IO_PATH_MAX)
		return false;
	if (listed(f, rel, len, &i)) {
		found[i] = true;
		return true;
	}
	if (is_dir) { /* on the way to a listed path: rel + "/" begins one */
		memcpy(key, rel, len);
		memcpy(key + len, "/", 2);
		i = lower_bound(f, key);
		if (i < f->n_paths && !strncmp(f->path[i], key, len + 1))
			return true;
	}
	for (k = len; recursive && k > 0; k--)
		if (rel[k - 1] == '/' && listed(f, rel, k - 1, &i))
			return true;
	return false;
}
