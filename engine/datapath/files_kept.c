/*
 * files_kept.c - the read of every kept chunk at both ends before the job
 * (--partial's kept chunks, -c's chunks of the old files), for the session
 * to digest and compare (engine/session/kept.c).
 *
 * The pass is cut into up to KEPT_THREADS_MAX parts of consecutive plan
 * chunks with as many kept chunks each (one per online CPU), and each part
 * runs on a thread of its own with its own buffer and, at the sender, its
 * own open of the source (a file cut between two parts is opened by both).
 * Hashing (Poly1305 at about 7 GB/s a core with a key, HMAC-SHA256 at
 * 1.5-2 GB/s with SHA-NI without one: engine/session/kept.c) is what the
 * pass costs, with, at a -c receiver, the copy of each chunk into the new
 * file; both scale with the cores. Kept chunk i (in plan order) is given to
 * fn with i, so fn writes its result in place and the parts need no lock.
 *
 * Threading: called on the session's thread before the job's workers
 * start; fn runs on the pass's threads, at once on distinct chunks.
 */
#include "engine/datapath/files_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEPT_THREADS_MAX 8
#define KEPT_PER_THREAD_MIN 8 /* kept chunks a thread of its own must have */

struct part {
	struct eng_files *f;
	const uint8_t *bits;
	eng_kept_fn fn;
	void *ctx;
	uint64_t k0, k1, i0; /* plan chunks [k0, k1); the first kept one is kept chunk i0 */
	uint64_t bytes;	     /* read and given to fn */
	int err;
	char msg[256]; /* err's sentence, from this thread's rcp_err */
	pthread_t thread;
};

/* Plan chunk k's bytes into buf: the receiver's kept copy, the sender's source (*r kept open). */
static int chunk_read(struct eng_files *f, uint64_t k, uint64_t first, struct io_rfile **r,
		      uint64_t *open, uint8_t *buf)
{
	const struct io_chunk *c = &f->plan->chunk[k];
	struct io_op op;
	int64_t got;
	int err = 0;

	if (f->role == ENG_RECEIVER)
		return io_partial_read(f->st[c->file].resume, k - first, c->offset, c->len, buf);
	if (c->file != *open) { /* the plan holds a file's chunks together: one open each */
		io_rfile_close(*r);
		*r = NULL;
		*open = c->file;
		err = io_rfile_open(f->root, &f->m->entry[c->file], 0, r);
	}
	/* io_chunk_read without its CRC-64: the digest is all this read is for. */
	if (!err)
		err = io_chunk_read_start(*r, c->offset, c->len, buf, &op);
	if (err)
		return err;
	got = io_op_run(&op, buf);
	/* a direct read the kernel refused: again through the page cache */
	if (io_chunk_read_redo(*r, &op, got)) {
		if ((err = io_chunk_read_start(*r, c->offset, c->len, buf, &op)) != 0)
			return err;
		got = io_op_run(&op, buf);
	}
	return io_chunk_read_end(*r, c->offset, c->len, got);
}

/* The plan chunk that begins k's file. */
static uint64_t file_first(const struct io_plan *p, uint64_t k)
{
	while (k > 0 && p->chunk[k - 1].file == p->chunk[k].file)
		k--;
	return k;
}

static void *part_main(void *arg)
{
	struct part *t = arg;
	const struct io_plan *p = t->f->plan;
	struct io_rfile *r = NULL;
	uint64_t k, i = t->i0, open = UINT64_MAX, first = file_first(p, t->k0);
	uint8_t *buf = malloc(p->chunk_size);

	t->err = buf ? 0 : rcp_err(-ENOMEM, "out of memory for a chunk of %u bytes", p->chunk_size);
	for (k = t->k0; k < t->k1 && !t->err; k++) {
		if (k > t->k0 && p->chunk[k - 1].file != p->chunk[k].file)
			first = k; /* the file's chunk k - first */
		if (!eng__bit_set(t->bits, k))
			continue;
		t->err = chunk_read(t->f, k, first, &r, &open, buf);
		if (!t->err)
			t->err = t->fn(t->ctx, i++, k, buf, p->chunk[k].len);
		if (!t->err)
			t->bytes += p->chunk[k].len;
	}
	if (t->err)
		snprintf(t->msg, sizeof(t->msg), "%s", rcp_err_msg(t->err));
	io_rfile_close(r);
	free(buf);
	return NULL;
}

/* How many parts for n kept chunks: one per online CPU, each with enough to do. */
static size_t parts_count(uint64_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t want = cpus > 0 ? (uint64_t)cpus : 1;

	if (want > KEPT_THREADS_MAX)
		want = KEPT_THREADS_MAX;
	if (want > n / KEPT_PER_THREAD_MIN)
		want = n / KEPT_PER_THREAD_MIN;
	return want ? (size_t)want : 1;
}

/* t[0..n) cut from the plan, each with about a share of the n_kept kept chunks. */
static void parts_cut(struct part *t, size_t n, uint64_t n_kept, const struct io_plan *p,
		      const uint8_t *bits)
{
	uint64_t k = 0, i = 0;
	size_t j;

	for (j = 0; j < n; j++) {
		uint64_t until = n_kept * (j + 1) / n; /* kept chunks before this part's end */

		t[j].k0 = k;
		t[j].i0 = i;
		while (k < p->n && (i < until || j + 1 == n))
			i += eng__bit_set(bits, k++);
		t[j].k1 = k;
	}
}

uint64_t eng__files_bits_bytes(const struct eng_files *f, const uint8_t *bits)
{
	uint64_t k, n = 0;

	for (k = 0; k < f->plan->n; k++)
		if (eng__bit_set(bits, k))
			n += f->plan->chunk[k].len;
	return n;
}

int eng__files_kept_each(struct eng_files *f, const uint8_t *bits, eng_kept_fn fn, void *ctx)
{
	uint64_t k, n_kept = 0, t0 = rcp_now_ns();
	struct part *t;
	size_t n, j, started;
	int err = 0;

	for (k = 0; k < f->plan->n; k++)
		n_kept += eng__bit_set(bits, k);
	n = parts_count(n_kept);
	if (!(t = calloc(n, sizeof(*t))))
		return rcp_err(-ENOMEM, "out of memory for %zu threads", n);
	parts_cut(t, n, n_kept, f->plan, bits);
	for (j = 0; j < n; j++)
		t[j] = (struct part){.f = f,
				     .bits = bits,
				     .fn = fn,
				     .ctx = ctx,
				     .k0 = t[j].k0,
				     .k1 = t[j].k1,
				     .i0 = t[j].i0};
	for (started = 1; started < n && !err; started++)
		if ((err = -pthread_create(&t[started].thread, NULL, part_main, &t[started])))
			err = rcp_err(err, "cannot start a thread to hash kept chunks: %s",
				      strerror(-err));
	if (!err)
		part_main(&t[0]);
	for (j = 1; j < started - (err ? 1 : 0); j++)
		pthread_join(t[j].thread, NULL);
	for (j = 0; j < n && !err; j++) {
		f->hashed_bytes += t[j].bytes;
		if (t[j].err)
			err = rcp_err(t[j].err, "%s", t[j].msg);
	}
	free(t);
	f->hash_ns += rcp_now_ns() - t0;
	return err;
}
