/*
 * files_maps.c - the maps the two sides of a file job trade before any
 * chunk moves, and what each does to the plan: the entries the receiver
 * holds already (--update) and the chunks it kept from an earlier copy
 * (--partial).
 *
 * A map has a bit per manifest entry (eng__files_map_len) or per planned
 * chunk (eng__files_kept_map_len), k at bit k % 8 of byte k / 8, and
 * travels as it is. Both sides remake or cut their plan from the same maps,
 * so they keep agreeing on what chunk k is.
 *
 * With --update the receiver first looks for each file and symlink at its
 * destination (io_root_holds); those it holds already are marked skip on
 * both sides (a bit per entry travels back), so the plan has no chunks for
 * them and the receiver leaves them alone; the summary counts them apart.
 *
 * With --partial the receiver maps the chunks its partial files still hold
 * (io_root_partial); both sides read those chunks' bytes for the session
 * to compare (engine/session/kept.c); the receiver forgets the ones the
 * sender did not confirm, and both leave the confirmed ones out of the
 * plan. A file's chunks are consecutive in the plan, so a chunk's number
 * in its file is its distance from the file's first.
 *
 * Threading: the session's thread, before the job's workers start.
 */
#include "engine/datapath/files_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int eng__files_skip(struct eng_files *f, const uint8_t *bits)
{
	uint32_t chunk = f->plan->chunk_size;
	size_t i;

	f->skip_files = f->skip_bytes = 0;
	for (i = 0; i < f->m->n; i++) {
		struct io_entry *e = &f->m->entry[i];

		/* A directory is never skipped: its contents are looked at one by one. */
		e->skip = e->type != IO_DIR && eng__bit_set(bits, i);
		if (e->skip && e->type == IO_FILE) {
			f->skip_files++;
			f->skip_bytes += e->data_bytes;
		}
	}
	io_plan_destroy(f->plan);
	f->plan = NULL;
	return eng__files_plan_make(f, chunk);
}

size_t eng__files_map_len(const struct eng_files *f)
{
	return f->m->n / 8 + 1;
}

size_t eng__files_kept_map_len(const struct eng_files *f)
{
	return (f->plan->n + f->kept_chunks) / 8 + 1; /* the plan before the drop */
}

void eng__files_drop(struct eng_files *f, const uint8_t *bits)
{
	struct io_plan *p = f->plan;
	uint64_t k, n = 0;

	for (k = 0; k < p->n; k++) {
		if (eng__bit_set(bits, k)) {
			f->kept_bytes += p->chunk[k].len;
			f->kept_chunks++;
		} else {
			p->chunk[n++] = p->chunk[k];
		}
	}
	p->n = n;
	eng__files_plan_counts(f);
}

int eng__files_kept(struct eng_files *f, uint8_t **bits_out)
{
	size_t i, len = eng__files_kept_map_len(f);
	uint8_t *bits = calloc(len, 1);
	uint64_t k, first = 0, t0 = rcp_now_ns();

	if (!bits)
		return rcp_err(-ENOMEM, "out of memory for a map of %" PRIu64 " chunks",
			       f->plan->n);
	for (i = 0; i < f->m->n; i++)
		if (f->m->entry[i].type == IO_FILE && !f->m->entry[i].skip &&
		    !f->m->entry[i].range) /* a range lands whole in the job's temporary */
			f->st[i].resume =
				io_root_partial(f->root, &f->m->entry[i], f->plan->chunk_size);
	/* A file's chunks are consecutive in the plan, in the order its own map counts them. */
	for (k = 0; k < f->plan->n; k++) {
		uint64_t file = f->plan->chunk[k].file;

		if (k == 0 || f->plan->chunk[k - 1].file != file)
			first = k;
		if (io_partial_has(f->st[file].resume, k - first)) {
			bits[k / 8] |= (uint8_t)(1u << (k % 8));
			if (!io_partial_late(f->st[file].resume, k - first))
				f->hashed_bytes += f->plan->chunk[k].len; /* read back and hashed */
		}
	}
	f->hash_ns += rcp_now_ns() - t0;
	*bits_out = bits;
	return 0;
}

uint64_t eng__files_kept_settle(struct eng_files *f, const uint8_t *kept, const uint8_t *confirmed)
{
	const struct io_plan *p = f->plan;
	uint64_t k, first = 0, n = 0;

	for (k = 0; k < p->n; k++) {
		uint64_t file = p->chunk[k].file;

		if (k == 0 || p->chunk[k - 1].file != file)
			first = k;
		if (eng__bit_set(kept, k) && !eng__bit_set(confirmed, k)) {
			io_partial_forget(f->st[file].resume, k - first, p->chunk[k].len);
			n++;
		}
	}
	eng__files_drop(f, confirmed);
	return n;
}

int eng__files_holds(struct eng_files *f, uint8_t **bits_out)
{
	size_t i, len = eng__files_map_len(f);
	uint8_t *bits = calloc(len, 1);
	int err;

	if (!bits)
		return rcp_err(-ENOMEM, "out of memory for a map of %zu entries", f->m->n);
	for (i = 0; i < f->m->n; i++)
		if (!f->m->entry[i].range && io_root_holds(f->root, &f->m->entry[i]))
			bits[i / 8] |= (uint8_t)(1u << (i % 8));
	if ((err = eng__files_skip(f, bits)) != 0) {
		free(bits);
		return err;
	}
	*bits_out = bits;
	return 0;
}

void eng__files_skipped(const struct eng_files *f, uint64_t *files_out, uint64_t *bytes_out)
{
	*files_out = f->skip_files;
	*bytes_out = f->skip_bytes;
}

uint64_t eng__files_kept_bytes(const struct eng_files *f)
{
	return f->kept_bytes;
}

void eng__files_hashed(const struct eng_files *f, uint64_t *bytes_out, uint64_t *ns_out)
{
	*bytes_out = f->hashed_bytes;
	*ns_out = f->hash_ns;
}

void eng__files_chunks_each(const struct eng_files *f, uint64_t *n, uint64_t *bytes)
{
	uint64_t k;

	memset(n, 0, f->m->n * sizeof(*n));
	if (bytes)
		memset(bytes, 0, f->m->n * sizeof(*bytes));
	for (k = 0; k < f->plan->n; k++) {
		n[f->plan->chunk[k].file]++;
		if (bytes)
			bytes[f->plan->chunk[k].file] += f->plan->chunk[k].len;
	}
}
