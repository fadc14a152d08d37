/*
 * mpi_dirs.c - railcp-mpi's directories in the shares, without MPI
 * (cli/mpi.h): each entry's directory found once by name (the directories
 * sorted by path, each entry's parent looked up among them: O(n log n),
 * no allocation per entry), which cli/mpi_parts.c uses to give each
 * session's list the directories its entries need.
 *
 * A share or a batch of the job carries only the directories on the way to
 * its own entries, not every directory of the job (which cost n ranks times
 * D directories of packed bytes, and a tree of millions of directories
 * went past the scatter's 2 GiB whatever its files). A directory with no
 * file or symlink beneath it, at any depth (an empty one, or one of empty
 * ones), is carried by no entry, so it gets a home: one rank whose share
 * carries it (with its own directories on the way). The homes are the
 * walk's order cut into n ranks' runs, so a tree of empty directories is
 * spread and a rank's run shares its directories on the way. So every
 * directory of the job is in at least one share and each is made by a
 * session, as one railcp makes it. Cost: O(n log n) once, then O(n) per
 * share.
 *
 * Threading: none of its own; any thread.
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <limits.h>
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

int cli_mpi_dirs_init(struct cli_mpi_dirs *d, const struct io_manifest *m, unsigned n_ranks)
{
	size_t n = m->n ? m->n : 1, i, k, empty = 0;
	bool *needed = calloc(n, sizeof(*needed));
	int err;

	*d = (struct cli_mpi_dirs){.parent = malloc(n * sizeof(size_t)),
				   .home = malloc(n * sizeof(unsigned))};
	err = needed && d->parent && d->home && n_ranks ? cli__mpi_parents(m, d->parent) : -ENOMEM;
	for (i = 0; i < m->n && !err; i++) /* every directory on the way to a file or link */
		if (m->entry[i].type != IO_DIR)
			for (k = d->parent[i]; k != SIZE_MAX && !needed[k]; k = d->parent[k])
				needed[k] = true;
	for (i = 0; i < m->n && !err; i++)
		empty += m->entry[i].type == IO_DIR && !needed[i];
	for (i = 0, k = 0; i < m->n && !err; i++)
		d->home[i] = m->entry[i].type == IO_DIR && !needed[i]
				     ? (unsigned)((uint64_t)k++ * n_ranks / empty)
				     : UINT_MAX;
	free(needed);
	if (err) {
		cli_mpi_dirs_fini(d);
		return rcp_err(n_ranks ? -ENOMEM : -EINVAL,
			       n_ranks ? "out of memory placing the directories in the shares"
				       : "no ranks to place the directories over");
	}
	return 0;
}

void cli_mpi_dirs_fini(struct cli_mpi_dirs *d)
{
	if (!d)
		return;
	free(d->parent);
	free(d->home);
	*d = (struct cli_mpi_dirs){0};
}

void cli_mpi_dirs_keep(const struct cli_mpi_dirs *d, const struct io_manifest *m, unsigned owner,
		       bool *keep)
{
	size_t i, k;

	if (!d) {
		for (i = 0; i < m->n; i++)
			keep[i] |= m->entry[i].type == IO_DIR;
		return;
	}
	for (i = 0; i < m->n; i++)
		keep[i] |= d->home[i] == owner;
	/*
	 * A directory comes before its contents, so when entry i is reached
	 * every kept entry before it has its whole way kept: a climb stops at
	 * the first directory kept.
	 */
	for (i = 0; i < m->n; i++)
		if (keep[i])
			for (k = d->parent[i]; k != SIZE_MAX && !keep[k]; k = d->parent[k])
				keep[k] = true;
}

bool cli_mpi_list_fits(const struct io_manifest *m, const bool *keep,
		       const struct cli_mpi_caps *caps)
{
	uint64_t memory = 0, bytes = 16; /* the list's header */
	size_t i, n = 0;

	for (i = 0; i < m->n; i++) {
		if (!keep[i])
			continue;
		n++;
		memory += io_manifest_decoded_cost(&m->entry[i]);
		bytes += io_manifest_entry_len(&m->entry[i]);
	}
	return n <= caps->entries && io_manifest_decoded_base(n) + memory <= caps->memory &&
	       bytes <= caps->memory;
}
