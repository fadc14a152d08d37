/*
 * mpi_pool.c - railcp-mpi's pool of batches, the parts without MPI
 * (cli/mpi.h): the split of a job into the ranks' shares and the pool,
 * and rank 0's bookkeeping of the batches it hands out (the claims
 * themselves are cli/mpi_steal.c's).
 *
 * The split is two of cli_mpi_split's: the job's over the ranks (their
 * balance is that of a job without a pool), then each rank's pieces over
 * its slots, six kept and two batches (cli/mpi.h); pieces of a file that
 * meet under one owner are merged again, so a rank's part of a big file
 * stays one range. Cost: that of the first split, plus O(pieces x slots).
 * Each batch is then packed as the ranks' shares are, cut into lists
 * within a session's caps (cli_mpi_pack_parts), each list a batch of its
 * own: no batch is refused when it is taken, whatever its entries.
 *
 * Threading: none of its own; any thread.
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

unsigned cli_mpi_pool_batches(unsigned n_ranks)
{
	return (CLI_MPI_SLOTS - CLI_MPI_SLOTS_KEPT) * n_ranks;
}

unsigned cli_mpi_slot_owner(unsigned rank, unsigned slot, unsigned n_ranks)
{
	unsigned per = CLI_MPI_SLOTS - CLI_MPI_SLOTS_KEPT;

	return slot < CLI_MPI_SLOTS_KEPT ? rank
					 : n_ranks + rank * per + (slot - CLI_MPI_SLOTS_KEPT);
}

struct grown {
	struct cli_mpi_piece *p;
	size_t n, cap;
};

static int room_for(struct grown *g, size_t more)
{
	size_t cap = g->cap * 2 > g->n + more ? g->cap * 2 : g->n + more;
	struct cli_mpi_piece *p;

	if (g->n + more <= g->cap)
		return 0;
	if (!(p = realloc(g->p, cap * sizeof(*p))))
		return -ENOMEM;
	g->p = p;
	g->cap = cap;
	return 0;
}

/*
 * Rank r's pieces (pc[idx[i]], k of them) split over its slots as items of
 * their own, appended to out. A piece starts at a multiple of the chunk
 * from its file's start, so a cut of it at a multiple from its own start
 * is one too.
 */
static int rank_split(const struct io_manifest *m, const struct cli_mpi_piece *pc,
		      const size_t *idx, size_t k, unsigned r, unsigned n_ranks, uint32_t chunk,
		      struct grown *out, uint64_t *load)
{
	uint64_t *bytes = calloc(k ? k : 1, sizeof(*bytes)), slot[CLI_MPI_SLOTS];
	bool *cut = calloc(k ? k : 1, sizeof(*cut));
	struct cli_mpi_piece *sub = NULL;
	size_t n_sub = 0, i;
	int err = bytes && cut ? 0 : -ENOMEM;

	for (i = 0; i < k && !err; i++) {
		bytes[i] = pc[idx[i]].len;
		cut[i] = cli__mpi_dense(&m->entry[pc[idx[i]].item]);
	}
	if (!err)
		err = cli_mpi_split(bytes, cut, k, CLI_MPI_SLOTS, chunk, &sub, &n_sub, slot);
	if (!err)
		err = room_for(out, n_sub);
	for (i = 0; i < n_sub && !err; i++) {
		const struct cli_mpi_piece *from = &pc[idx[sub[i].item]];
		unsigned o = cli_mpi_slot_owner(r, sub[i].owner, n_ranks);

		out->p[out->n++] = (struct cli_mpi_piece){.item = from->item,
							  .off = from->off + sub[i].off,
							  .len = sub[i].len,
							  .owner = o};
		load[o] += sub[i].len;
	}
	free(bytes);
	free(cut);
	free(sub);
	return err;
}

static int by_item_off(const void *a, const void *b)
{
	const struct cli_mpi_piece *x = a, *y = b;

	if (x->item != y->item)
		return x->item < y->item ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Pieces of one item that meet under one owner become one (pc in order of item and offset). */
static size_t pieces_merge(struct cli_mpi_piece *pc, size_t n)
{
	size_t a, b = 0;

	for (a = 0; a < n; a++) {
		struct cli_mpi_piece *last = b ? &pc[b - 1] : NULL;

		if (last && last->item == pc[a].item && last->owner == pc[a].owner &&
		    last->off + last->len == pc[a].off)
			last->len += pc[a].len;
		else
			pc[b++] = pc[a];
	}
	return b;
}

/* idx: pc's indexes by owner, rank r's from at[r] to at[r + 1]. */
static int by_owner(const struct cli_mpi_piece *pc, size_t n, unsigned n_ranks, size_t *idx,
		    size_t *at)
{
	size_t *fill = calloc(n_ranks, sizeof(*fill)), k;
	unsigned r;

	if (!fill)
		return -ENOMEM;
	for (k = 0; k < n; k++)
		at[pc[k].owner + 1]++;
	for (r = 0; r < n_ranks; r++)
		at[r + 1] += at[r];
	for (k = 0; k < n; k++)
		idx[at[pc[k].owner] + fill[pc[k].owner]++] = k;
	free(fill);
	return 0;
}

int cli_mpi_pool_ranges(const struct io_manifest *m, unsigned n_ranks, uint32_t chunk,
			struct cli_mpi_piece **pieces_out, size_t *n_out, uint64_t *load_out)
{
	uint64_t *rank_load = calloc(n_ranks ? n_ranks : 1, sizeof(*rank_load)), *load;
	struct cli_mpi_piece *pc = NULL;
	struct grown out = {0};
	size_t n_pc = 0, *idx = NULL, *at = NULL;
	unsigned r, owners = n_ranks + cli_mpi_pool_batches(n_ranks);
	int err;

	load = calloc(owners ? owners : 1, sizeof(*load));
	err = rank_load && load ? 0 : -ENOMEM;
	if (!err && (err = cli_mpi_assign_ranges(m, n_ranks, chunk, &pc, &n_pc, rank_load)))
		goto out; /* said */
	idx = err ? NULL : malloc((n_pc ? n_pc : 1) * sizeof(*idx));
	at = err ? NULL : calloc((size_t)n_ranks + 1, sizeof(*at));
	if (!err)
		err = idx && at ? by_owner(pc, n_pc, n_ranks, idx, at) : -ENOMEM;
	for (r = 0; r < n_ranks && !err; r++)
		err = rank_split(m, pc, idx + at[r], at[r + 1] - at[r], r, n_ranks, chunk, &out,
				 load);
	if (err) {
		err = rcp_err(err, "out of memory splitting the files over the ranks and the pool");
		goto out;
	}
	/* A job of directories only has no pieces: out.p may be NULL, which qsort must not see. */
	if (!out.n && (err = room_for(&out, 1))) {
		err = rcp_err(err, "out of memory splitting the files over the ranks and the pool");
		goto out;
	}
	if (out.n)
		qsort(out.p, out.n, sizeof(*out.p), by_item_off);
	memcpy(load_out, load, owners * sizeof(*load));
	*n_out = pieces_merge(out.p, out.n);
	*pieces_out = out.p;
	out.p = NULL;
out:
	free(out.p);
	free(pc);
	free(idx);
	free(at);
	free(rank_load);
	free(load);
	return err;
}

long cli_mpi_pool_take(struct cli_mpi_pool *p)
{
	if (p->next < p->n)
		return (long)p->next++;
	p->told_none++;
	return -1;
}

bool cli_mpi_pool_done(const struct cli_mpi_pool *p)
{
	return p->told_none >= p->n_ranks;
}

/* A batch with nothing but directories (a pool of fewer items than batches) is left out. */
static bool batch_empty(const struct io_manifest *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (b->entry[i].type != IO_DIR)
			return false;
	return true;
}

/*
 * What out's arrays can hold (cap batches) and its bytes (all_cap; total
 * used): each grows by doubling, as one batch at a time would copy
 * O(batches^2) (a realloc copies always under ASan).
 */
struct batches_room {
	size_t cap, total, all_cap;
};

/* Room in out->off and out->len for one more batch. */
static int batches_room_one(struct cli_mpi_batches *out, struct batches_room *r)
{
	size_t cap = r->cap ? r->cap * 2 : 2;
	int *off, *lens;

	if (out->n < r->cap)
		return 0;
	if (cap > SIZE_MAX / sizeof(*off))
		return -ENOMEM;
	if (!(off = realloc(out->off, cap * sizeof(*off))))
		return -ENOMEM;
	out->off = off;
	if (!(lens = realloc(out->len, cap * sizeof(*lens))))
		return -ENOMEM;
	out->len = lens;
	r->cap = cap;
	return 0;
}

/* Room in out->all for need bytes, need at most INT_MAX + 1: doubled, never past that. */
static int batches_room_bytes(struct cli_mpi_batches *out, struct batches_room *r, size_t need)
{
	size_t cap = r->all_cap * 2;
	char *all;

	if (need <= r->all_cap)
		return 0;
	if (cap > (size_t)INT_MAX + 1)
		cap = (size_t)INT_MAX + 1;
	if (cap < need)
		cap = need;
	if (!(all = realloc(out->all, cap)))
		return -ENOMEM;
	out->all = all;
	r->all_cap = cap;
	return 0;
}

/* The parts of packed (cli_mpi_pack_parts's bytes, len long) appended to out, a batch each. */
static int batches_add(struct cli_mpi_batches *out, struct batches_room *r, const char *packed,
		       size_t len)
{
	const char *at = packed, *end = packed + len;
	uint64_t n;
	int err;

	while (at < end) {
		if ((err = batches_room_one(out, r)) != 0)
			return err;
		memcpy(&n, at, 8);
		if (r->total + n > INT_MAX)
			return rcp_err(-EFBIG,
				       "the pool's batches are more than 2 GiB packed: too "
				       "many files for rank 0 to hand out; copy the tree in "
				       "parts");
		if ((err = batches_room_bytes(out, r, r->total + n + 1)) != 0)
			return err;
		memcpy(out->all + r->total, at + 8, n);
		out->off[out->n] = (int)r->total;
		out->len[out->n++] = (int)n;
		r->total += n;
		at += 8 + n;
	}
	return 0;
}

int cli_mpi_batches_pack(const struct io_manifest *m, const struct cli_mpi_piece *pc, size_t n_pc,
			 unsigned n_ranks, const struct cli_mpi_dirs *d,
			 const struct cli_mpi_caps *caps, uint32_t chunk,
			 struct cli_mpi_batches *out)
{
	struct cli_mpi_batches bs = {0}; /* *out written on success only */
	unsigned n = cli_mpi_pool_batches(n_ranks), b;
	struct batches_room room = {0};
	int err = 0;

	for (b = 0; b < n && !err; b++) {
		struct io_manifest *batch = NULL;
		void *buf = NULL;
		size_t len = 0;

		err = cli_mpi_share_pieces(m, pc, n_pc, n_ranks + b, d, &batch);
		if (!err && !batch_empty(batch))
			err = cli_mpi_pack_parts(batch, caps, chunk, &buf, &len);
		if (!err && buf)
			err = batches_add(&bs, &room, buf, len);
		io_manifest_destroy(batch);
		free(buf);
	}
	if (err) {
		cli_mpi_batches_fini(&bs);
		return err == -ENOMEM ? rcp_err(err, "out of memory packing the pool's batches")
				      : err;
	}
	*out = bs;
	return 0;
}

void cli_mpi_batches_fini(struct cli_mpi_batches *b)
{
	if (!b)
		return;
	free(b->all);
	free(b->off);
	free(b->len);
	*b = (struct cli_mpi_batches){0};
}
