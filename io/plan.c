/*
 * plan.c - cutting a manifest into chunks, and the chunks' checksum.
 *
 * A chunk never crosses a data extent (so it never carries a hole) and is
 * at most the chunk size; an extent of len bytes gives ceil(len / chunk)
 * chunks, all full but the last. Files and extents are taken in manifest
 * order; an entry marked skip (already at the receiver) has none. The
 * receiver relies on this exact cut (io_wfile_open recomputes
 * it per file to recognise chunks), so changing it changes the protocol.
 *
 * The checksum is CRC-64/XZ from ISA-L (crc64_ecma_refl), which applies
 * the standard's pre- and post-inversion itself ("123456789" ->
 * 995dc9bbdf1939fa). It replaced CRC-32C in protocol version 3: the same
 * cost, measured (tests/bench/bench_hash.c), and 64 bits.
 *
 * Threading: thread-safe (no shared state); a plan is read-only once made.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <isa-l/crc64.h>
#include <stdlib.h>

uint64_t io_chunk_hash(const void *buf, size_t len)
{
	/* ISA-L takes and gives the CRC as the standard states it: each call goes on from seed. */
	return crc64_ecma_refl(0, buf, len);
}

uint64_t io_plan_count(const struct io_manifest *m, uint32_t chunk)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!m->entry[i].skip)
			n += io__entry_chunks(&m->entry[i], chunk);
	return n;
}

static void plan_fill(const struct io_manifest *m, struct io_plan *plan)
{
	const struct io_extent *ext;
	uint64_t k = 0, off, left;
	size_t i;
	uint32_t x;

	for (i = 0; i < m->n; i++) {
		for (x = 0; !m->entry[i].skip && x < m->entry[i].n_ext; x++) {
			ext = &m->entry[i].ext[x];
			for (off = ext->off, left = ext->len; left; k++) {
				plan->chunk[k].file = i;
				plan->chunk[k].offset = off;
				plan->chunk[k].len =
					left < plan->chunk_size ? (uint32_t)left : plan->chunk_size;
				off += plan->chunk[k].len;
				left -= plan->chunk[k].len;
			}
		}
	}
}

int io_plan_create(const struct io_manifest *m, uint32_t chunk, struct io_plan **plan_out)
{
	struct io_plan *plan;
	uint64_t n;

	if (chunk == 0 || chunk > IO_CHUNK_MAX)
		return rcp_err(-EINVAL, "a chunk of %u bytes is not between 1 byte and 1 GiB",
			       chunk);
	n = io_plan_count(m, chunk);
	if (n > IO_PLAN_MAX_CHUNKS)
		return rcp_err(-EFBIG,
			       "a copy of %llu chunks of %u KiB is more than the %llu chunks "
			       "allowed: use a larger --chunk or copy in parts",
			       (unsigned long long)n, chunk >> 10,
			       (unsigned long long)IO_PLAN_MAX_CHUNKS);
	plan = calloc(1, sizeof(*plan));
	if (!plan)
		return rcp_err(-ENOMEM, "out of memory for a chunk plan");
	plan->chunk = malloc((size_t)(n ? n : 1) * sizeof(*plan->chunk));
	if (!plan->chunk) {
		free(plan);
		return rcp_err(-ENOMEM, "out of memory for a plan of %llu chunks",
			       (unsigned long long)n);
	}
	plan->n = n;
	plan->chunk_size = chunk;
	plan_fill(m, plan);
	*plan_out = plan;
	return 0;
}

void io_plan_destroy(struct io_plan *plan)
{
	if (!plan)
		return;
	free(plan->chunk);
	free(plan);
}

uint32_t io_plan_chunk_fit(const struct io_manifest *m, uint32_t chunk, uint32_t unit)
{
	uint64_t most = unit;
	size_t i, k;

	for (i = 0; i < m->n; i++)
		for (k = 0; k < m->entry[i].n_ext; k++)
			if (m->entry[i].ext[k].len > most)
				most = m->entry[i].ext[k].len;
	most = (most + unit - 1) & ~(uint64_t)(unit - 1);
	return most < chunk ? (uint32_t)most : chunk;
}
