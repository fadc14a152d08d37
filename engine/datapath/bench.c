/*
 * bench.c - the source and sink of railcp bench: a pattern the sender makes
 * and the receiver checks, memory to memory, with no file in between.
 *
 * Word i of the chunk at offset off is base + i * K, with base a hash of
 * the session token and the offset. Every word of every offset differs, so
 * misplaced, stale or corrupted data fails the check, while filling and
 * checking cost one add per word: under Soft-RoCE the pattern shares the
 * CPUs with the emulated wire, so it must be cheap.
 *
 * Threading: fill and check run on worker threads, concurrently (the job
 * marks them cheap: no helper threads); they touch only their chunk.
 */
#include "engine/datapath/datapath_int.h"

#include "common/common.h"

#include <errno.h>
#include <string.h>

#define PATTERN_STEP 0x9e3779b97f4a7c15ull

static uint64_t pattern_base(uint64_t token, uint64_t off)
{
	uint64_t x = token ^ off;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	return x;
}

/* Chunk seq of a byte stream is [seq * chunk, min(total, (seq + 1) * chunk)). */
static void stream_place(const struct eng_source *src, struct eng_chunk_hdr *hdr)
{
	hdr->offset = hdr->seq * src->chunk;
	hdr->len = (uint32_t)(src->total - hdr->offset < src->chunk ? src->total - hdr->offset
								    : src->chunk);
}

void eng__bench_attach(struct eng_job *job, uint64_t bytes, uint32_t chunk)
{
	job->src = (struct eng_source){.total = bytes,
				       .chunk = chunk,
				       .n_chunks = (bytes + chunk - 1) / chunk,
				       .prepare = eng__bench_fill,
				       .cheap = true,
				       .ctx = &job->src};
	job->rcv.sink = (struct eng_sink){
		.prepare = eng__bench_check, .cheap = true, .ctx = &job->src.chunk};
}

int eng__bench_fill(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op)
{
	uint64_t v, *w = buf;
	uint32_t i, n;

	op->kind = IO_OP_NONE; /* no file: the pattern is the data */
	stream_place(ctx, hdr);
	v = pattern_base(hdr->token, hdr->offset);
	n = hdr->len / 8;
	for (i = 0; i < n; i++, v += PATTERN_STEP)
		w[i] = v;
	memcpy(w + n, &v, hdr->len % 8); /* a short last chunk: the next word's first bytes */
	return 0;
}

int eng__bench_check(void *ctx, const struct eng_chunk_hdr *hdr, const void *data, struct io_op *op)
{
	uint64_t v = pattern_base(hdr->token, hdr->offset), bad = 0;
	const uint64_t *w = data;
	uint32_t i, n = hdr->len / 8;

	op->kind = IO_OP_NONE;
	if (ctx && hdr->offset != hdr->seq * *(const uint32_t *)ctx)
		return rcp_err(-EBADMSG, "chunk %llu arrived for offset %llu, not its own",
			       (unsigned long long)hdr->seq, (unsigned long long)hdr->offset);
	for (i = 0; i < n; i++, v += PATTERN_STEP)
		bad |= w[i] ^ v; /* no branch in the loop: it vectorises */
	if (!bad && memcmp(w + n, &v, hdr->len % 8) == 0)
		return 0;
	for (i = 0, v = pattern_base(hdr->token, hdr->offset); i < n && w[i] == v; i++)
		v += PATTERN_STEP;
	return rcp_err(
		-EBADMSG,
		"data check failed: chunk %llu (offset %llu) arrived with wrong bytes at byte %u",
		(unsigned long long)hdr->seq, (unsigned long long)hdr->offset, i * 8);
}
