/*
 * mpi_ranges.c - railcp-mpi's balance of files and byte ranges of files
 * over the ranks, without MPI (cli/mpi.h): a file larger than the room
 * left in the lightest rank's share is cut at a chunk boundary, the part
 * that fills the room goes there and the rest on to the next lightest.
 *
 * The share is the job's bytes over the ranks, rounded up. Items go
 * largest first, each to the rank with the fewest bytes (then the fewest
 * pieces, then the lowest rank), as cli_mpi_balance does with whole files;
 * an item bigger than that rank's room is cut to the room rounded down to
 * whole chunks, or to one chunk when the room is less than one (every rank
 * is then within a chunk of its share). So only a file larger than what is
 * left of a share is cut, a job of many files sees few cuts (at most about
 * two per rank), and every rank ends within one chunk of the share when
 * every item larger than a chunk can be cut: a rank goes past the share
 * only by a piece of at most a chunk placed when every rank was within a
 * chunk of it, and no rank ends short by more than that either, as the
 * pieces always go to the lightest. Cuts fall on multiples of the chunk
 * from the file's start, which are the chunks a session plans for a file
 * of one extent from offset 0 (io_plan_create), so a range is whole
 * chunks of that plan; a sparse file travels whole (its plan's chunks
 * start at each extent).
 *
 * Cost: O(items x ranks), as cli_mpi_balance; 32 bytes a piece.
 * Threading: none of its own; any thread.
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* How much of rest (of an item that may be cut or not) goes to a rank of room bytes. */
static uint64_t take_of(uint64_t rest, uint64_t room, bool cut, uint32_t chunk)
{
	uint64_t whole = room / chunk * chunk;

	if (rest <= room || !cut || rest <= chunk)
		return rest;
	return whole ? whole : chunk;
}

struct pieces {
	struct cli_mpi_piece *p;
	size_t n, cap;
};

static int piece_add(struct pieces *ps, size_t item, uint64_t off, uint64_t len, unsigned owner)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap * 2;
		struct cli_mpi_piece *grown = realloc(ps->p, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		ps->p = grown;
		ps->cap = cap;
	}
	ps->p[ps->n++] =
		(struct cli_mpi_piece){.item = item, .off = off, .len = len, .owner = owner};
	return 0;
}

/* Item o's pieces, each to the lightest rank at that moment. */
static int item_place(struct pieces *ps, const struct cli_mpi_order *o, bool cut, uint64_t share,
		      uint32_t chunk, uint64_t *load, size_t *count, unsigned n_ranks)
{
	uint64_t off = 0, rest = o->bytes;

	do {
		unsigned r = cli__mpi_lightest(load, count, n_ranks);
		uint64_t take = take_of(rest, load[r] < share ? share - load[r] : 0, cut, chunk);

		if (piece_add(ps, o->i, off, take, r))
			return -ENOMEM;
		load[r] += take;
		count[r]++;
		off += take;
		rest -= take;
	} while (rest);
	return 0;
}

static uint64_t share_of(const uint64_t *bytes, size_t n, unsigned n_ranks)
{
	uint64_t total = 0;
	size_t k;

	for (k = 0; k < n; k++)
		total += bytes[k];
	return total / n_ranks + (total % n_ranks != 0);
}

int cli_mpi_split(const uint64_t *bytes, const bool *cuttable, size_t n, unsigned n_ranks,
		  uint32_t chunk, struct cli_mpi_piece **pieces_out, size_t *n_out,
		  uint64_t *load_out)
{
	struct pieces ps = {.cap = n + 2 * (size_t)n_ranks + 1};
	struct cli_mpi_order *o;
	uint64_t *load; /* written to load_out only on success */
	size_t *count, k;
	uint64_t share;
	int err = 0;

	if (!n_ranks || !chunk)
		return rcp_err(-EINVAL, "no ranks, or no chunk size, to split the files over");
	o = calloc(n ? n : 1, sizeof(*o));
	count = calloc(n_ranks, sizeof(*count));
	load = calloc(n_ranks, sizeof(*load));
	ps.p = malloc(ps.cap * sizeof(*ps.p));
	if (!o || !count || !load || !ps.p)
		err = -ENOMEM;
	for (k = 0; k < n && !err; k++)
		o[k] = (struct cli_mpi_order){.bytes = bytes[k], .i = k};
	if (!err) {
		qsort(o, n, sizeof(*o), cli__mpi_by_bytes_down);
		share = share_of(bytes, n, n_ranks);
	}
	for (k = 0; k < n && !err; k++)
		err = item_place(&ps, &o[k], cuttable && cuttable[o[k].i], share, chunk, load,
				 count, n_ranks);
	free(o);
	free(count);
	if (err) {
		free(load);
		free(ps.p);
		return rcp_err(err, "out of memory splitting the files over the ranks");
	}
	memcpy(load_out, load, n_ranks * sizeof(*load));
	free(load);
	*pieces_out = ps.p;
	*n_out = ps.n;
	return 0;
}

bool cli__mpi_dense(const struct io_entry *e)
{
	return e->type == IO_FILE && e->n_ext == 1 && e->ext[0].off == 0 &&
	       e->ext[0].len == e->size;
}

int cli_mpi_assign_ranges(const struct io_manifest *m, unsigned n_ranks, uint32_t chunk,
			  struct cli_mpi_piece **pieces_out, size_t *n_out, uint64_t *load_out)
{
	uint64_t *bytes = calloc(m->n ? m->n : 1, sizeof(*bytes));
	size_t *at = calloc(m->n ? m->n : 1, sizeof(*at)), i, n = 0;
	bool *cut = calloc(m->n ? m->n : 1, sizeof(*cut));
	int err = bytes && at && cut ? 0 : rcp_err(-ENOMEM, "out of memory for the shares");

	for (i = 0; i < m->n && !err; i++) {
		if (m->entry[i].type == IO_DIR) /* every rank's */
			continue;
		bytes[n] = m->entry[i].type == IO_FILE ? m->entry[i].data_bytes : 0;
		cut[n] = cli__mpi_dense(&m->entry[i]);
		at[n++] = i;
	}
	if (!err)
		err = cli_mpi_split(bytes, cut, n, n_ranks, chunk, pieces_out, n_out, load_out);
	for (i = 0; !err && i < *n_out; i++)
		(*pieces_out)[i].item = at[(*pieces_out)[i].item];
	free(bytes);
	free(at);
	free(cut);
	return err;
}
