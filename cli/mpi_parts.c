/*
 * mpi_parts.c - a railcp-mpi rank's share cut into consecutive sessions.
 *
 * One session's list is bounded (IO_MANIFEST_MAX_ENTRIES entries and
 * IO_PLAN_MAX_CHUNKS chunks: what a hostile peer can cost a server), so a
 * share of more is pushed as several lists, one session each, one after
 * another. The share is cut in its own order (the walk's, directories and
 * then ranges first after cli_mpi_share_pieces): each part takes the next
 * entries while they fit, with every directory they need that the part
 * does not hold yet (a list holds each entry's parents); directories no
 * entry needs (empty ones) go where they fit after the files, so every
 * directory of the share is made, as by one session. An entry that does not
 * fit even an empty part (a file of more chunks than the limit) goes alone,
 * and its session refuses it as one railcp would.
 *
 * Rank 0 packs each part (cli_mpi_pack) behind its length; the rank keeps
 * the packed bytes and decodes one part at a time, so it holds its share
 * packed and one session's list decoded. No MPI here; not thread-safe.
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The index of each entry's parent directory in m (SIZE_MAX: at the top). */
struct dir_at {
	const char *path;
	size_t i;
};

static int dir_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dir_at *)a)->path, ((const struct dir_at *)b)->path);
}

static int parents_find(const struct io_manifest *m, size_t *parent)
{
	struct dir_at *d = malloc((m->n ? m->n : 1) * sizeof(*d));
	size_t i, n = 0;

	if (!d)
		return rcp_err(-ENOMEM, "out of memory cutting a share into sessions");
	for (i = 0; i < m->n; i++)
		if (m->entry[i].type == IO_DIR)
			d[n++] = (struct dir_at){.path = m->entry[i].path, .i = i};
	qsort(d, n, sizeof(*d), dir_cmp);
	for (i = 0; i < m->n; i++) {
		const char *p = m->entry[i].path, *slash = strrchr(p, '/');
		char *up = slash ? strndup(p, (size_t)(slash - p)) : NULL;
		struct dir_at key = {.path = up}, *hit;

		if (slash && !up) {
			free(d);
			return rcp_err(-ENOMEM, "out of memory cutting a share into sessions");
		}
		hit = up ? bsearch(&key, d, n, sizeof(*d), dir_cmp) : NULL;
		parent[i] = hit ? hit->i : SIZE_MAX;
		free(up);
	}
	free(d);
	return 0;
}

/* Chunks of entry e in a session of chunk bytes a chunk. */
static uint64_t entry_chunks(const struct io_entry *e, uint32_t chunk)
{
	struct io_manifest one = {.entry = (struct io_entry *)e, .n = 1};

	return io_plan_count(&one, chunk);
}

/*
 * The cut being built: the last part each entry went into (from 1; 0 while
 * in none: a directory may go into several), and the open part's entries.
 */
struct cut {
	const struct io_manifest *m;
	const size_t *parent;
	size_t *part; /* m->n long */
	size_t *in;   /* the open part's entries, m->n long */
	bool *keep;   /* m->n long, all false between parts */
	size_t max, n_in, n_parts;
	uint64_t chunks;
	struct io_manifest **parts; /* the closed ones, n_parts - 1 */
};

/* How many of i and its directories the open part lacks. */
static size_t cut_cost(const struct cut *c, size_t i)
{
	size_t n = 0;

	for (; i != SIZE_MAX && c->part[i] != c->n_parts; i = c->parent[i])
		n++;
	return n;
}

/* The open part as its own list, and a new one opened. */
static int cut_close(struct cut *c)
{
	struct io_manifest **grown = realloc(c->parts, c->n_parts * sizeof(*grown));
	size_t k;
	int err;

	if (!grown)
		return -ENOMEM;
	c->parts = grown;
	for (k = 0; k < c->n_in; k++)
		c->keep[c->in[k]] = true;
	err = io_manifest_pick(c->m, c->keep, &c->parts[c->n_parts - 1]);
	for (k = 0; k < c->n_in; k++)
		c->keep[c->in[k]] = false;
	if (err)
		return err;
	c->n_parts++;
	c->n_in = 0;
	c->chunks = 0;
	return 0;
}

static int cut_add(struct cut *c, size_t i, uint32_t chunk)
{
	uint64_t k = entry_chunks(&c->m->entry[i], chunk);
	int err;

	if (c->n_in && (c->n_in + cut_cost(c, i) > c->max || c->chunks + k > c->max) &&
	    (err = cut_close(c)))
		return err;
	c->chunks += k;
	for (; i != SIZE_MAX && c->part[i] != c->n_parts; i = c->parent[i]) {
		c->part[i] = c->n_parts;
		c->in[c->n_in++] = i;
	}
	return 0;
}

int cli_mpi_parts(const struct io_manifest *share, size_t max, uint32_t chunk,
		  struct io_manifest ***parts_out, size_t *n_out)
{
	size_t n = share->n ? share->n : 1, i, *parent = calloc(n, sizeof(*parent));
	struct cut c = {.m = share,
			.parent = parent,
			.part = calloc(n, sizeof(size_t)),
			.in = calloc(n, sizeof(size_t)),
			.keep = calloc(n, sizeof(bool)),
			.max = max ? max : 1,
			.n_parts = 1};
	int err = parent && c.part && c.in && c.keep ? parents_find(share, parent) : -ENOMEM;

	for (i = 0; i < share->n && !err; i++) /* the files, links and ranges, then the rest */
		if (share->entry[i].type != IO_DIR)
			err = cut_add(&c, i, chunk);
	for (i = 0; i < share->n && !err; i++)
		if (!c.part[i])
			err = cut_add(&c, i, chunk);
	if (!err)
		err = cut_close(&c);
	for (i = 0; err && i + 1 < c.n_parts; i++)
		io_manifest_destroy(c.parts[i]);
	free(parent);
	free(c.part);
	free(c.in);
	free(c.keep);
	if (err) {
		free(c.parts);
		return err == -ENOMEM ? rcp_err(err, "out of memory cutting a share into sessions")
				      : err;
	}
	*parts_out = c.parts;
	*n_out = c.n_parts - 1;
	return 0;
}

int cli_mpi_pack_parts(const struct io_manifest *share, size_t max, uint32_t chunk, void **buf_out,
		       size_t *len_out)
{
	struct io_manifest **parts = NULL;
	size_t n = 0, i, total = 0;
	char *all = NULL;
	int err = cli_mpi_parts(share, max, chunk, &parts, &n);

	for (i = 0; i < n && !err; i++) {
		void *buf = NULL;
		size_t len = 0;
		char *grown;

		err = cli_mpi_pack(parts[i], &buf, &len);
		if (!err && !(grown = realloc(all, total + 8 + len)))
			err = rcp_err(-ENOMEM, "out of memory packing a rank's share");
		if (!err) {
			all = grown;
			memcpy(all + total, &(uint64_t){len}, 8);
			memcpy(all + total + 8, buf, len);
			total += 8 + len;
		}
		free(buf);
	}
	for (i = 0; i < n; i++)
		io_manifest_destroy(parts[i]);
	free(parts);
	if (err) {
		free(all);
		return err;
	}
	*buf_out = all;
	*len_out = total;
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
