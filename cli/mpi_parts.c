/*
 * mpi_parts.c - a railcp-mpi rank's share cut into consecutive sessions.
 *
 * One session's list is bounded (IO_MANIFEST_MAX_ENTRIES entries,
 * IO_PLAN_MAX_CHUNKS chunks and IO_MANIFEST_MAX_MEMORY to decode: what a
 * hostile peer can cost a server), so a share of more is pushed as several
 * lists, one session each, one after another. The share is cut in its own
 * order (the walk's, directories and then ranges first after
 * cli_mpi_share_pieces): each part takes the next entries while they fit,
 * with every directory they need that the part does not hold yet (a list
 * holds each entry's parents); directories no entry needs (empty ones) go
 * where they fit after the files, so every directory of the share is made,
 * as by one session. The memory is io_manifest_decoded_base and _cost, the
 * decoder's own count, so a part of long paths or many extents closes
 * before the entry cap and still decodes. An entry that does not fit even
 * an empty part (a file of more chunks than the limit) goes alone, and its
 * session refuses it as one railcp would.
 *
 * Rank 0 packs each part (cli_mpi_pack) behind its length as it cuts it,
 * holding one part decoded at a time; the rank keeps the packed bytes and
 * decodes one part at a time, so it holds its share packed and one
 * session's list decoded. No MPI here; not thread-safe.
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Chunks of entry e in a session of chunk bytes a chunk. */
static uint64_t entry_chunks(const struct io_entry *e, uint32_t chunk)
{
	struct io_manifest one = {.entry = (struct io_entry *)e, .n = 1};

	return io_plan_count(&one, chunk);
}

/*
 * The cut being built: the last part each entry went into (from 1; 0 while
 * in none: a directory may go into several), the open part's entries, its
 * chunks and its entries' decoded cost (io_manifest_decoded_cost; the
 * list's own, io_manifest_decoded_base, depends on how many). A closed part
 * is kept decoded in parts, or, when packing, packed at once into packed.
 */
struct cut {
	const struct io_manifest *m;
	const size_t *parent;
	struct cli_mpi_caps caps;
	uint32_t chunk;
	size_t *part; /* m->n long */
	size_t *in;   /* the open part's entries, m->n long */
	size_t n_in, n_parts;
	uint64_t chunks, memory;
	struct io_manifest **parts; /* not packing: the closed ones, n_parts - 1 */
	bool pack;
	char *packed;
	size_t packed_len, packed_cap;
};

/* How many of i and its directories the open part lacks, and their decoded cost. */
static size_t cut_lacks(const struct cut *c, size_t i, uint64_t *memory_out)
{
	uint64_t memory = 0;
	size_t n = 0;

	for (; i != SIZE_MAX && c->part[i] != c->n_parts; i = c->parent[i]) {
		memory += io_manifest_decoded_cost(&c->m->entry[i]);
		n++;
	}
	*memory_out = memory;
	return n;
}

/* Whether the open part takes n more entries of k chunks and memory bytes decoded. */
static bool cut_fits(const struct cut *c, size_t n, uint64_t k, uint64_t memory)
{
	return c->n_in + n <= c->caps.entries && c->chunks + k <= c->caps.chunks &&
	       c->memory + memory + io_manifest_decoded_base(c->n_in + n) <= c->caps.memory;
}

/* Part p packed behind its length at the end of c->packed; p is destroyed. */
static int cut_pack(struct cut *c, struct io_manifest *p)
{
	void *buf = NULL;
	size_t len = 0, cap = 0;
	char *grown = NULL;
	int err = cli_mpi_pack(p, &buf, &len);

	io_manifest_destroy(p);
	/* grown by half at least: one part's size at a time copies O(parts x share) */
	if (!err && c->packed_len + 8 + len > c->packed_cap) {
		cap = c->packed_cap + c->packed_cap / 2;
		if (cap < c->packed_len + 8 + len)
			cap = c->packed_len + 8 + len;
		if (!(grown = realloc(c->packed, cap)))
			err = rcp_err(-ENOMEM, "out of memory packing a rank's share");
		else
			c->packed = grown, c->packed_cap = cap;
	}
	if (!err) {
		memcpy(c->packed + c->packed_len, &(uint64_t){len}, 8);
		memcpy(c->packed + c->packed_len + 8, buf, len);
		c->packed_len += 8 + len;
	}
	free(buf);
	return err;
}

static int index_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* The open part as its own list, and a new one opened. */
static int cut_close(struct cut *c)
{
	struct io_manifest **grown = NULL, *p = NULL;
	int err;

	if (!c->pack && !(grown = realloc(c->parts, c->n_parts * sizeof(*grown))))
		return -ENOMEM;
	if (grown)
		c->parts = grown;
	/* its own entries in share order: not a scan of the share per part */
	qsort(c->in, c->n_in, sizeof(*c->in), index_cmp);
	err = io_manifest_pick_at(c->m, c->in, c->n_in, &p);
	if (!err && c->pack)
		err = cut_pack(c, p);
	else if (!err)
		c->parts[c->n_parts - 1] = p;
	if (err)
		return err;
	c->n_parts++;
	c->n_in = 0;
	c->chunks = c->memory = 0;
	return 0;
}

static int cut_add(struct cut *c, size_t i)
{
	uint64_t k = entry_chunks(&c->m->entry[i], c->chunk), memory;
	size_t n = cut_lacks(c, i, &memory);
	int err;

	if (c->n_in && !cut_fits(c, n, k, memory) && (err = cut_close(c)))
		return err;
	c->chunks += k;
	for (; i != SIZE_MAX && c->part[i] != c->n_parts; i = c->parent[i]) {
		c->part[i] = c->n_parts;
		c->in[c->n_in++] = i;
		c->memory += io_manifest_decoded_cost(&c->m->entry[i]);
	}
	return 0;
}

/* c's share cut: its parts in c->parts (c->n_parts - 1 of them) or c->packed. */
static int cut_run(struct cut *c)
{
	const struct io_manifest *share = c->m;
	size_t n = share->n ? share->n : 1, i, *parent = malloc(n * sizeof(*parent));
	int err;

	c->parent = parent;
	c->part = calloc(n, sizeof(size_t));
	c->in = calloc(n, sizeof(size_t));
	c->n_parts = 1;
	err = parent && c->part && c->in ? cli__mpi_parents(share, parent) : -ENOMEM;
	for (i = 0; i < share->n && !err; i++) /* the files, links and ranges, then the rest */
		if (share->entry[i].type != IO_DIR)
			err = cut_add(c, i);
	for (i = 0; i < share->n && !err; i++)
		if (!c->part[i])
			err = cut_add(c, i);
	if (!err)
		err = cut_close(c);
	for (i = 0; err && !c->pack && i + 1 < c->n_parts; i++)
		io_manifest_destroy(c->parts[i]);
	free(parent);
	free(c->part);
	free(c->in);
	if (err) {
		free(c->parts);
		free(c->packed);
		return err == -ENOMEM ? rcp_err(err, "out of memory cutting a share into sessions")
				      : err;
	}
	return 0;
}

int cli_mpi_parts(const struct io_manifest *share, const struct cli_mpi_caps *caps, uint32_t chunk,
		  struct io_manifest ***parts_out, size_t *n_out)
{
	struct cut c = {.m = share, .caps = *caps, .chunk = chunk};
	int err = cut_run(&c);

	if (err)
		return err;
	*parts_out = c.parts;
	*n_out = c.n_parts - 1;
	return 0;
}

int cli_mpi_pack_parts(const struct io_manifest *share, const struct cli_mpi_caps *caps,
		       uint32_t chunk, void **buf_out, size_t *len_out)
{
	struct cut c = {.m = share, .caps = *caps, .chunk = chunk, .pack = true};
	int err = cut_run(&c);

	if (err)
		return err;
	*buf_out = c.packed;
	*len_out = c.packed_len;
	return 0;
}

int cli_mpi_unpack_next(const char **at, const char *end, struct io_manifest **part_out)
{
	uint64_t len;
	int err;

	if (*at == end) {
		*part_out = NULL;
		return 0;
	}
	if (end - *at < 8)
		return rcp_err(-EBADMSG, "a rank's share is cut short");
	memcpy(&len, *at, 8);
	if (len > (uint64_t)(end - *at - 8))
		return rcp_err(-EBADMSG, "a rank's share is cut short");
	err = cli_mpi_unpack(*at + 8, (size_t)len, part_out);
	if (!err)
		*at += 8 + len;
	return err;
}

struct cli_mpi_caps cli_mpi_server_caps(void)
{
	return (struct cli_mpi_caps){.entries = IO_MANIFEST_MAX_ENTRIES,
				     .chunks = IO_PLAN_MAX_CHUNKS,
				     .memory = IO_MANIFEST_MAX_MEMORY};
}

struct cli_mpi_caps cli_mpi_session_caps(void)
{
	struct cli_mpi_caps caps = cli_mpi_server_caps();
	size_t max = cli_mpi_session_max();

	if (caps.entries > max)
		caps.entries = max;
	if (caps.chunks > max)
		caps.chunks = max;
	return caps;
}

size_t cli_mpi_session_max(void)
{
	const char *s = getenv("RAILCP_TEST_SESSION_ENTRIES");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return IO_MANIFEST_MAX_ENTRIES;
	v = strtoull(s, &end, 10);
	return *end || !v || v > IO_MANIFEST_MAX_ENTRIES ? IO_MANIFEST_MAX_ENTRIES : (size_t)v;
}
