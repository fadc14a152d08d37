/*
 * mpi_land.c - railcp-mpi's files cut into byte ranges, the parts without
 * MPI (cli/mpi.h): each rank's share of the pieces cli_mpi_assign_ranges
 * made, as a manifest whose cut files are entries flagged as ranges (their
 * extents the rank's pieces, their size the file's whole size), and the
 * job's list of cut files, which the session that puts them in place (or
 * removes their temporaries) sends. The landing itself is the receiver's
 * (io/range.c) and the protocol's (engine/session/ranges.c); doc/design.md,
 * railcp-mpi, has the whole of it.
 *
 * Threading: none of its own; any thread.
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* cut[i]: item i of m is in more than one piece. */
static bool *cut_items(const struct io_manifest *m, const struct cli_mpi_piece *pc, size_t n_pc)
{
	unsigned *count = calloc(m->n ? m->n : 1, sizeof(*count));
	bool *cut = calloc(m->n ? m->n : 1, sizeof(*cut));
	size_t k;

	if (!count || !cut) {
		free(count);
		free(cut);
		return NULL;
	}
	for (k = 0; k < n_pc; k++)
		if (++count[pc[k].item] > 1)
			cut[pc[k].item] = true;
	free(count);
	return cut;
}

/* e (a copy of item i) becomes rank's ranges of it: its pieces, merged where they meet. */
static int ranges_take(struct io_entry *e, size_t i, const struct cli_mpi_piece *pc, size_t n_pc,
		       unsigned rank)
{
	struct io_extent *x = calloc(n_pc, sizeof(*x));
	uint32_t n = 0, a, b;
	size_t k;

	if (!x)
		return rcp_err(-ENOMEM, "out of memory for a rank's share");
	for (k = 0; k < n_pc; k++)
		if (pc[k].item == i && pc[k].owner == rank && pc[k].len)
			x[n++] = (struct io_extent){.off = pc[k].off, .len = pc[k].len};
	for (a = 1; a < n; a++) /* by offset (a few pieces: insertion) */
		for (b = a; b > 0 && x[b - 1].off > x[b].off; b--) {
			struct io_extent t = x[b];

			x[b] = x[b - 1];
			x[b - 1] = t;
		}
	for (a = 0, b = 0; a < n; a++)
		if (b && x[b - 1].off + x[b - 1].len == x[a].off)
			x[b - 1].len += x[a].len;
		else
			x[b++] = x[a];
	free(e->ext);
	e->ext = x;
	e->n_ext = b;
	e->range = true;
	e->data_bytes = 0;
	for (a = 0; a < b; a++)
		e->data_bytes += x[a].len;
	return 0;
}

/*
 * The share's entries reordered in place: directories, then ranges, then
 * the rest, each in its order. A session sends its list's chunks in list
 * order, so a rank opens its cut files' temporaries at its start, not
 * whenever the walk reaches them: after a failed job's removal, only a
 * rank still in its first moments can open one anew. Directories first
 * keeps every parent before its contents.
 */
static int ranges_first(struct io_manifest *share)
{
	struct io_entry *e = malloc((share->n ? share->n : 1) * sizeof(*e));
	size_t i, n = 0;
	int pass;

	if (!e)
		return rcp_err(-ENOMEM, "out of memory for a rank's share");
	for (pass = 0; pass < 3; pass++)
		for (i = 0; i < share->n; i++) {
			const struct io_entry *x = &share->entry[i];
			int at = x->type == IO_DIR ? 0 : x->range ? 1 : 2;

			if (at == pass)
				e[n++] = *x;
		}
	if (share->n) /* an empty share (a batch of nothing but directories) has no array */
		memcpy(share->entry, e, share->n * sizeof(*e));
	free(e);
	return 0;
}

int cli_mpi_share_pieces(const struct io_manifest *m, const struct cli_mpi_piece *pc, size_t n_pc,
			 unsigned rank, const struct cli_mpi_dirs *d,
			 struct io_manifest **share_out)
{
	bool *keep = calloc(m->n ? m->n : 1, sizeof(*keep)), *cut = cut_items(m, pc, n_pc);
	struct io_manifest *share = NULL;
	size_t i, k;
	int err = keep && cut ? 0 : rcp_err(-ENOMEM, "out of memory for a rank's share");

	for (k = 0; k < n_pc && !err; k++)
		keep[pc[k].item] |= pc[k].owner == rank;
	if (!err)
		cli_mpi_dirs_keep(d, m, rank, keep);
	if (!err)
		err = io_manifest_pick(m, keep, &share);
	for (i = 0, k = 0; i < m->n && !err; i++) {
		if (!keep[i])
			continue;
		if (cut[i]) {
			share->data_bytes -= share->entry[k].data_bytes;
			err = ranges_take(&share->entry[k], i, pc, n_pc, rank);
			share->data_bytes += share->entry[k].data_bytes;
		}
		k++;
	}
	free(keep);
	free(cut);
	if (!err)
		err = ranges_first(share);
	if (err) {
		io_manifest_destroy(share);
		return err;
	}
	*share_out = share;
	return 0;
}

/* Whether directory d (a path) holds path, at any depth. */
static bool holds(const char *d, const char *path)
{
	size_t n = strlen(d);

	return !strncmp(d, path, n) && path[n] == '/';
}

int cli_mpi_split_list(const struct io_manifest *m, const struct cli_mpi_piece *pc, size_t n_pc,
		       struct io_manifest **split_out)
{
	bool *keep = calloc(m->n ? m->n : 1, sizeof(*keep)), *cut = cut_items(m, pc, n_pc);
	size_t *files = calloc(m->n ? m->n : 1, sizeof(*files)), n = 0, i, k;
	int err = keep && cut && files
			  ? 0
			  : rcp_err(-ENOMEM, "out of memory for the list of cut files");

	for (i = 0; i < m->n && !err; i++)
		if (cut[i])
			keep[i] = true, files[n++] = i;
	/* the directories on their way, as a list holds a file's parents (a few files: cheap) */
	for (i = 0; i < m->n && !err && n; i++)
		for (k = 0; k < n && m->entry[i].type == IO_DIR && !keep[i]; k++)
			keep[i] = holds(m->entry[i].path, m->entry[files[k]].path);
	if (!err)
		err = io_manifest_pick(m, keep, split_out);
	free(keep);
	free(cut);
	free(files);
	return err;
}

size_t cli_mpi_split_files(const struct io_manifest *split)
{
	return split ? (size_t)split->n_files : 0;
}

size_t cli_mpi_ranges_later(const struct io_manifest *share)
{
	size_t i, n = 0;

	for (i = 0; i < share->n; i++)
		n += share->entry[i].range && share->entry[i].ext[0].off != 0;
	return n;
}
