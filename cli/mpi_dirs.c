/*
 * mpi_dirs.c - railcp-mpi's directories in the shares, without MPI
 * (cli/mpi.h): each entry's directory found once by name (the directories
 * sorted by path, each entry's parent looked up among them: O(n log n),
 * no allocation per entry), which cli/mpi_parts.c uses to give each
 * session's list the directories its entries need.
 *
 * Threading: none of its own; any thread.
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct dir_at {
	const char *path;
	size_t i;
};

static int dir_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dir_at *)a)->path, ((const struct dir_at *)b)->path);
}

/* A parent's name: the first len bytes of p, against a directory's whole path. */
struct up {
	const char *p;
	size_t len;
};

static int up_cmp(const void *key, const void *elem)
{
	const struct up *u = key;
	const char *d = ((const struct dir_at *)elem)->path;
	int c = strncmp(u->p, d, u->len);

	return c ? c : d[u->len] ? -1 : 0;
}

int cli__mpi_parents(const struct io_manifest *m, size_t *parent)
{
	struct dir_at *d = malloc((m->n ? m->n : 1) * sizeof(*d)), *hit;
	size_t i, n = 0;

	if (!d)
		return -ENOMEM;
	for (i = 0; i < m->n; i++)
		if (m->entry[i].type == IO_DIR)
			d[n++] = (struct dir_at){.path = m->entry[i].path, .i = i};
	qsort(d, n, sizeof(*d), dir_cmp);
	for (i = 0; i < m->n; i++) {
		const char *p = m->entry[i].path, *slash = strrchr(p, '/');
		struct up key = {.p = p, .len = slash ? (size_t)(slash - p) : 0};

		hit = slash ? bsearch(&key, d, n, sizeof(*d), up_cmp) : NULL;
		parent[i] = hit ? hit->i : SIZE_MAX;
	}
	free(d);
	return 0;
}
