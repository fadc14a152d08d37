/*
 * mpi_share.c - railcp-mpi's work without MPI: rank 0's one walk balanced
 * over the ranks by bytes (greedy largest first, see mpi.h), each rank's
 * share cut from it, and the share packed for MPI_Scatterv and unpacked;
 * whether the packed shares can fit one scatter at all, and whether
 * --delete's pass after the ranks fits one session.
 */
#include "cli/mpi.h"

#include "common/common.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int cli__mpi_by_bytes_down(const void *a, const void *b)
{
	const struct cli_mpi_order *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i;
}

unsigned cli__mpi_lightest(const uint64_t *load, const size_t *count, unsigned n_ranks)
{
	unsigned r, best = 0;

	for (r = 1; r < n_ranks; r++)
		if (load[r] < load[best] || (load[r] == load[best] && count[r] < count[best]))
			best = r;
	return best;
}

int cli_mpi_balance(const uint64_t *bytes, size_t n, unsigned n_ranks, unsigned *owner,
		    uint64_t *load)
{
	struct cli_mpi_order *it = calloc(n ? n : 1, sizeof(*it));
	size_t *count = calloc(n_ranks, sizeof(*count)), k;

	if (!it || !count || !n_ranks) {
		free(it);
		free(count);
		return rcp_err(n_ranks ? -ENOMEM : -EINVAL, n_ranks ? "out of memory balancing "
								      "the files over the ranks"
								    : "no ranks to balance over");
	}
	memset(load, 0, n_ranks * sizeof(*load));
	for (k = 0; k < n; k++)
		it[k] = (struct cli_mpi_order){.bytes = bytes[k], .i = k};
	qsort(it, n, sizeof(*it), cli__mpi_by_bytes_down);
	for (k = 0; k < n; k++) {
		unsigned r = cli__mpi_lightest(load, count, n_ranks);

		owner[it[k].i] = r;
		load[r] += it[k].bytes;
		count[r]++;
	}
	free(it);
	free(count);
	return 0;
}

int cli_mpi_assign(const struct io_manifest *m, unsigned n_ranks, unsigned *owner_out,
		   uint64_t *load)
{
	uint64_t *bytes = calloc(m->n ? m->n : 1, sizeof(*bytes));
	size_t *at = calloc(m->n ? m->n : 1, sizeof(*at)), i, n = 0;
	unsigned *own = calloc(m->n ? m->n : 1, sizeof(*own));
	int err = bytes && at && own ? 0 : rcp_err(-ENOMEM, "out of memory for the shares");

	for (i = 0; i < m->n && !err; i++) {
		owner_out[i] = 0; /* directories: where cli_mpi_dirs_keep puts them */
		if (m->entry[i].type == IO_DIR)
			continue;
		bytes[n] = m->entry[i].type == IO_FILE ? m->entry[i].data_bytes : 0;
		at[n++] = i;
	}
	if (!err)
		err = cli_mpi_balance(bytes, n, n_ranks, own, load);
	for (i = 0; i < n && !err; i++)
		owner_out[at[i]] = own[i];
	free(bytes);
	free(at);
	free(own);
	return err;
}

int cli_mpi_share(const struct io_manifest *m, const unsigned *owner, unsigned rank,
		  const struct cli_mpi_dirs *d, struct io_manifest **share_out)
{
	bool *keep = calloc(m->n ? m->n : 1, sizeof(*keep));
	size_t i;
	int err;

	if (!keep)
		return rcp_err(-ENOMEM, "out of memory for a rank's share");
	for (i = 0; i < m->n; i++)
		keep[i] = m->entry[i].type != IO_DIR && owner[i] == rank;
	cli_mpi_dirs_keep(d, m, rank, keep);
	err = io_manifest_pick(m, keep, share_out);
	free(keep);
	return err;
}

int cli_mpi_pack(const struct io_manifest *m, void **buf_out, size_t *len_out)
{
	size_t len, i, srcs = 0, off;
	void *enc;
	char *buf;
	int err = io_manifest_encode(m, &enc, &len);

	if (err)
		return err;
	for (i = 0; i < m->n; i++)
		srcs += strlen(m->entry[i].src ? m->entry[i].src : "") + 1 + 16;
	buf = malloc(8 + len + srcs);
	if (!buf) {
		free(enc);
		return rcp_err(-ENOMEM, "out of memory packing a rank's share");
	}
	memcpy(buf, &(uint64_t){len}, 8);
	memcpy(buf + 8, enc, len);
	off = 8 + len;
	for (i = 0; i < m->n; i++) {
		const char *s = m->entry[i].src ? m->entry[i].src : "";

		memcpy(buf + off, s, strlen(s) + 1);
		off += strlen(s) + 1;
		memcpy(buf + off, &m->entry[i].dev, 8);
		memcpy(buf + off + 8, &m->entry[i].ino, 8);
		off += 16;
	}
	free(enc);
	*buf_out = buf;
	*len_out = off;
	return 0;
}

/* What entry e takes packed (cli_mpi_pack): its encoding, its source, device and inode. */
static uint64_t packed_len(const struct io_entry *e)
{
	return io_manifest_entry_len(e) + strlen(e->src ? e->src : "") + 1 + 16;
}

int cli_mpi_scatter_fits(const struct io_manifest *m, bool pool)
{
	uint64_t need = 0, room = (uint64_t)INT_MAX * (pool ? 2 : 1);
	size_t i;

	for (i = 0; i < m->n; i++)
		need += packed_len(&m->entry[i]);
	if (need <= room)
		return 0;
	return rcp_err(-EFBIG,
		       "the walk's %zu entries take at least %.1f GiB packed for the ranks, more "
		       "than %s: copy the tree in parts",
		       m->n, (double)need / (1u << 30),
		       pool ? "the 4 GiB that one MPI scatter and the pool's batches hold"
			    : "the 2 GiB that one MPI scatter holds");
}

/* Each entry's source, device and inode from the bytes p to end. */
static int srcs_unpack(struct io_manifest *m, const char *p, const char *end)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));

		if (!nul || end - nul - 1 < 16)
			return rcp_err(-EBADMSG, "a rank's share lacks the source of '%s'",
				       m->entry[i].path);
		m->entry[i].src = strdup(p);
		if (!m->entry[i].src)
			return rcp_err(-ENOMEM, "out of memory unpacking a rank's share");
		memcpy(&m->entry[i].dev, nul + 1, 8);
		memcpy(&m->entry[i].ino, nul + 9, 8);
		p = nul + 17;
	}
	return p == end ? 0 : rcp_err(-EBADMSG, "a rank's share has bytes after its sources");
}

int cli_mpi_unpack(const void *buf, size_t len, struct io_manifest **m_out)
{
	uint64_t n;
	int err;

	*m_out = NULL;
	if (len < 8)
		return rcp_err(-EBADMSG, "a rank's share is %zu bytes, too short", len);
	memcpy(&n, buf, 8);
	if (n > len - 8)
		return rcp_err(-EBADMSG, "a rank's share is cut short");
	err = io_manifest_decode((const char *)buf + 8, n, m_out);
	if (!err)
		err = srcs_unpack(*m_out, (const char *)buf + 8 + n, (const char *)buf + len);
	if (err && *m_out) {
		io_manifest_destroy(*m_out);
		*m_out = NULL;
	}
	return err;
}

/* What the delete pass's one list of m[0..n) costs to decode: one list's base and each entry's
 * cost. */
static uint64_t delete_memory(const struct io_manifest *const *m, size_t n, size_t entries)
{
	uint64_t memory = io_manifest_decoded_base(entries);
	size_t k, i;

	for (k = 0; k < n; k++)
		for (i = 0; i < m[k]->n; i++)
			memory += io_manifest_decoded_cost(&m[k]->entry[i]);
	return memory;
}

int cli_mpi_delete_fits(const struct io_manifest *const *m, size_t n,
			const struct cli_mpi_caps *caps, uint32_t chunk)
{
	uint64_t chunks = 0, memory;
	size_t k, entries = 0;

	for (k = 0; k < n; k++)
		entries += m[k]->n;
	if (entries > caps->entries)
		return rcp_err(-EFBIG,
			       "--delete: the whole job's %zu entries are more than the %zu of one "
			       "session, which deletes after the ranks; give its parts as sources "
			       "in several jobs",
			       entries, caps->entries);
	for (k = 0; k < n; k++)
		chunks += io_plan_count(m[k], chunk);
	if (chunks > caps->chunks)
		return rcp_err(-EFBIG,
			       "--delete: the whole job's %llu chunks of %u KiB are more than the "
			       "%llu of one session, which deletes after the ranks; use a larger "
			       "--chunk, or give its parts as sources in several jobs",
			       (unsigned long long)chunks, chunk >> 10,
			       (unsigned long long)caps->chunks);
	memory = delete_memory(m, n, entries);
	if (memory > caps->memory)
		return rcp_err(-EFBIG,
			       "--delete: the whole job's list takes %llu MiB to decode, more than "
			       "the %llu MiB of one session, which deletes after the ranks; give "
			       "its parts as sources in several jobs",
			       (unsigned long long)(memory >> 20),
			       (unsigned long long)(caps->memory >> 20));
	return 0;
}
