/*
 * files.c - the file side of push and pull jobs: the sender's chunk source
 * and the receiver's chunk sink. Both sides build the same plan from the
 * same manifest and chunk size, so a chunk travels as (file, offset,
 * length); where the manifest comes from and where the files land is the
 * session's business.
 *
 * Each side works in the data path's steps (datapath_int.h): prepare opens and
 * checks, a helper's ring (or pread/pwrite) moves the bytes between the
 * file and the slot, complete judges, hashes and closes. A file of one
 * chunk (most of a tree of small files) is opened by its chunk's task as
 * ring entries too: prepare only says the open, and complete takes what it
 * returned before it says the read or write. At the receiver the fsyncs
 * and the rename that put a finished file in place are the last I/Os of the
 * task that finished it.
 *
 * Sender: chunk seq is plan chunk seq. A file is opened by the first
 * prepare that needs one of its chunks and closed by whichever complete
 * finishes its last; a count of chunks left per file decides which, so no
 * chunk of a file can be read after its close. Chunks are claimed in plan
 * order, so only the files whose chunks are in flight are open. The hash
 * is taken once the read is in.
 *
 * Receiver: a chunk must be the planned chunk its number names (file,
 * offset, length). Its hash is checked before anything is written (before
 * a file of one chunk is even created). A file is opened (as a temporary
 * beside its final name) on its first chunk. A chunk can arrive twice when
 * a rail fails after its first copy landed and before its credit came back
 * (failover.c): a second copy of a chunk of a file that is complete, or of
 * the only chunk of a file whose first copy is still being opened or
 * written, is taken without a write (IO_OP_NONE); one of a file still
 * being written is written again at its place, the same verified bytes,
 * and counted once by the file's chunk map (io_chunk_write_end).
 * Writers of a file (from prepare to complete) are counted under its lock;
 * the writer that leaves the file complete with nobody else inside puts it
 * in place, so a repeated chunk from a broken or hostile sender can never
 * touch a handle that was finalized. A file whose chunks are all in is never
 * written again. On failure every unfinished file's temporary is removed;
 * files already in place stay, complete and verified.
 *
 * The maps the sides trade before the data moves (--update, --partial)
 * and what they do to the plan are in files_maps.c.
 *
 * Threading: prepare and complete run on helper (or worker) threads,
 * concurrently; the rest on the session's thread before the workers start
 * or after they end.
 * Per-file state is guarded by one of FILES_LOCKS mutexes, chosen by the
 * file's index.
 */
#include "engine/datapath/files_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void eng__files_plan_counts(struct eng_files *f)
{
	const struct io_manifest *m = f->m;
	uint64_t i;

	atomic_store(&f->files_done, 0);
	for (i = 0; i < m->n; i++)
		f->st[i].left = 0;
	for (i = 0; i < f->plan->n; i++)
		f->st[f->plan->chunk[i].file].left++;
	for (i = 0; i < m->n; i++)
		f->st[i].single = f->st[i].left == 1;
	/* A sender has nothing to read of a file without data: it is done from the start. */
	for (i = 0; f->role == ENG_SENDER && i < m->n; i++)
		if (m->entry[i].type == IO_FILE && !m->entry[i].skip && f->st[i].left == 0)
			atomic_fetch_add(&f->files_done, 1);
}

int eng__files_plan_make(struct eng_files *f, uint32_t chunk)
{
	int err = io_plan_create(f->m, chunk, &f->plan);

	if (!err)
		eng__files_plan_counts(f);
	return err;
}

int eng__files_create(enum eng_role role, struct io_manifest *m, uint32_t chunk,
		      struct io_root *root, unsigned io_flags, struct eng_files **f_out)
{
	struct eng_files *f = calloc(1, sizeof(*f));
	uint64_t i;
	int err;

	if (!f) {
		io_manifest_destroy(m);
		io_root_close(root);
		return rcp_err(-ENOMEM, "out of memory for a file job");
	}
	*f = (struct eng_files){.role = role, .m = m, .root = root, .io_flags = io_flags};
	for (i = 0; i < FILES_LOCKS; i++)
		pthread_mutex_init(&f->lock[i], NULL);
	f->st = calloc(m->n ? m->n : 1, sizeof(*f->st));
	if (!f->st) {
		eng__files_destroy(f);
		return rcp_err(-ENOMEM, "out of memory for a job of %zu entries", m->n);
	}
	if ((err = eng__files_plan_make(f, chunk)) != 0) {
		eng__files_destroy(f);
		return err;
	}
	f->chunks_all = f->plan->n;
	*f_out = f;
	return 0;
}

void eng__files_destroy(struct eng_files *f)
{
	size_t i;

	if (!f)
		return;
	/* A job's session that did not finish: its directories' markers go (io/jobdirs.c). */
	if (f->role == ENG_RECEIVER && !f->finished)
		io_root_job_abandon(f->root, f->m);
	for (i = 0; f->st && i < f->m->n; i++) {
		io_rfile_close(f->st[i].r);
		if (f->drop)
			io_wfile_abort(f->st[i].w);
		else
			io_wfile_keep(f->st[i].w); /* with --partial, an unfinished file is kept */
		io_partial_destroy(f->st[i].resume);
	}
	for (i = 0; i < FILES_LOCKS; i++)
		pthread_mutex_destroy(&f->lock[i]);
	free(f->st);
	io_plan_destroy(f->plan);
	io_manifest_destroy(f->m);
	io_root_close(f->root);
	free(f);
}

void eng__files_unkept(struct eng_files *f)
{
	if (!f || f->role != ENG_RECEIVER)
		return;
	f->drop = true;
	/* The markers of the directories it made go too: nothing is resumed. */
	io_root_set_flags(f->root, IO_ROOT_PARTIAL);
	(void)io_root_dirs_finish(f->root, f->m);
}

const struct io_manifest *eng__files_manifest(const struct eng_files *f)
{
	return f->m;
}

const struct io_root *eng__files_root(const struct eng_files *f)
{
	return f->root;
}

uint64_t eng__files_chunks(const struct eng_files *f)
{
	return f->plan->n;
}

uint64_t eng__files_chunks_all(const struct eng_files *f)
{
	return f->chunks_all;
}

uint64_t eng__files_done(const struct eng_files *f)
{
	return atomic_load(&f->files_done);
}

uint64_t eng__files_direct(const struct eng_files *f)
{
	return atomic_load(&f->files_direct);
}

/* A file just opened (either side), counted if it has an O_DIRECT descriptor. */
static void count_direct(struct eng_files *f, bool direct)
{
	if (direct)
		atomic_fetch_add(&f->files_direct, 1);
}

static pthread_mutex_t *lock_of(struct eng_files *f, uint64_t file)
{
	return &f->lock[file % FILES_LOCKS];
}

static const char *path_of(const struct eng_files *f, uint64_t file, char out[IO_ESC_MAX])
{
	return io_path_printable(f->m->entry[file].path, out);
}

/* Sender: name the plan's chunk seq and open its file; the read goes into buf. */
static int files_read_prepare(void *ctx, struct eng_chunk_hdr *hdr, void *buf, struct io_op *op)
{
	struct eng_files *f = ctx;
	const struct io_chunk *c = &f->plan->chunk[hdr->seq];
	struct file_state *st = &f->st[c->file];
	pthread_mutex_t *lock = lock_of(f, c->file);
	int err = 0;

	hdr->file = c->file;
	hdr->offset = c->offset;
	hdr->len = c->len;
	if (st->single) /* its only chunk: the open is this task's first I/O */
		return io_rfile_open_start(f->root, &f->m->entry[c->file], op);
	pthread_mutex_lock(lock);
	if (!st->r && !(err = io_rfile_open(f->root, &f->m->entry[c->file], f->io_flags, &st->r)))
		count_direct(f, io_rfile_direct(st->r));
	if (!err)
		err = io_chunk_read_start(st->r, c->offset, c->len, buf, op);
	pthread_mutex_unlock(lock);
	return err;
}

/*
 * Sender: a file of one chunk is open: its read next. The read is in (or
 * failed): its hash; the file's last chunk checks that it did not change
 * while it was read, and closes it.
 */
static int files_read_complete(void *ctx, struct eng_chunk_hdr *hdr, const void *buf, int64_t got,
			       struct io_op *op)
{
	struct eng_files *f = ctx;
	struct file_state *st = &f->st[hdr->file];
	pthread_mutex_t *lock = lock_of(f, hdr->file);
	struct io_rfile *r, *fin = NULL;
	int err;

	if (op->kind == IO_OP_OPEN) { /* st is this task's alone */
		err = io_rfile_open_end(f->root, &f->m->entry[hdr->file], f->io_flags, op, got,
					&st->r);
		if (!err)
			count_direct(f, io_rfile_direct(st->r));
		err = err ? err : io_chunk_read_start(st->r, hdr->offset, hdr->len, buf, op);
		return err ? err : ENG_STEP_MORE;
	}

	pthread_mutex_lock(lock);
	r = st->r;
	pthread_mutex_unlock(lock);
	/* a direct read the kernel refused: again through the page cache */
	if (io_chunk_read_redo(r, op, got)) {
		err = io_chunk_read_start(r, hdr->offset, hdr->len, buf, op);
		return err ? err : ENG_STEP_MORE;
	}
	err = io_chunk_read_end(r, hdr->offset, hdr->len, got);
	if (!err)
		hdr->hash = io_chunk_hash(buf, hdr->len);
	pthread_mutex_lock(lock);
	if (!err && --st->left == 0) {
		fin = st->r; /* every chunk is read: nobody else holds it */
		st->r = NULL;
	}
	pthread_mutex_unlock(lock);
	if (fin) {
		/*
		 * Checked before this chunk goes: the receiver puts the file in
		 * place only once it has every chunk, so a file written to while
		 * it was read never gets its final name.
		 */
		err = io_rfile_unchanged(fin);
		io_rfile_close(fin);
		if (!err)
			atomic_fetch_add(&f->files_done, 1);
	}
	return err;
}

/*
 * Receiver: the handle of file, with what it may keep or had kept
 * (--partial); with op, the open's first I/O in *op, else the whole open
 * here.
 */
static int wopen(struct eng_files *f, uint64_t file, struct io_op *op, struct io_wfile **w_out)
{
	struct io_wfile *w = NULL;
	struct io_op here;
	int err = io_wfile_open_start(f->root, &f->m->entry[file], f->plan->chunk_size, &w,
				      op ? op : &here);

	if (!err && f->m->entry[file].range) /* into the job's temporary, never kept */
		err = io_wfile_range(w, f->range_job);
	else if (!err)
		err = io_wfile_partial(w, f->st[file].resume);
	if (err && w)
		io_wfile_abort(w);
	else if (!err && !op && !(err = io_wfile_open_rest(w, &here)))
		count_direct(f, io_wfile_direct(w));
	if (!err)
		*w_out = w;
	return err;
}

void eng__files_range_job(struct eng_files *f, uint64_t job)
{
	f->range_job = job;
}

/*
 * Receiver, under the file's lock: a file of one chunk whose opens have not
 * begun (io_wfile_open_start made no system call) is as if never opened.
 */
static void unopen(struct eng_files *f, uint64_t file)
{
	io_wfile_abort(f->st[file].w);
	f->st[file].w = NULL;
	atomic_fetch_sub(&f->open_files, 1);
}

/* Receiver: the header names the chunk the plan numbers hdr->seq, exactly. */
static bool chunk_planned(const struct eng_files *f, const struct eng_chunk_hdr *hdr)
{
	const struct io_chunk *c;

	if (hdr->seq >= f->plan->n)
		return false;
	c = &f->plan->chunk[hdr->seq];
	return c->file == hdr->file && c->offset == hdr->offset && c->len == hdr->len;
}

/*
 * Receiver: check a chunk (its file, its place, its hash) and open its
 * file, or for a file of one chunk say its first open; the write comes from
 * the slot.
 */
static int files_write_prepare(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
			       struct io_op *op)
{
	struct eng_files *f = ctx;
	char esc[IO_ESC_MAX];
	struct file_state *st;
	pthread_mutex_t *lock;
	struct io_op check;
	bool opening = false;
	int err = 0;

	if (hdr->file >= f->m->n || f->m->entry[hdr->file].type != IO_FILE)
		return rcp_err(-EPROTO,
			       "the sender sent a chunk for entry %" PRIu64
			       ", which is not a file of this job",
			       hdr->file);
	if (!chunk_planned(f, hdr))
		return rcp_err(-EPROTO,
			       "the sender sent chunk %" PRIu64 " as %u bytes at offset %" PRIu64
			       " of \"%s\", which is not where the plan puts it",
			       hdr->seq, hdr->len, hdr->offset, path_of(f, hdr->file, esc));
	st = &f->st[hdr->file];
	lock = lock_of(f, hdr->file);
	pthread_mutex_lock(lock);
	if (st->complete || st->done || (st->single && st->w)) {
		pthread_mutex_unlock(lock);
		op->kind = IO_OP_NONE; /* a second copy: the first is in, or on its way */
		return 0;
	}
	if (!st->w && atomic_fetch_add(&f->open_files, 1) >= f->max_open) {
		/* Chunks go out in plan order: more open files than chunks in flight is not honest.
		 */
		atomic_fetch_sub(&f->open_files, 1);
		err = rcp_err(-EPROTO,
			      "the sender started more than %u files at once, more than its "
			      "chunks in flight allow",
			      f->max_open);
	} else if (!st->w) {
		/* A file of one chunk is opened by this task's I/Os (complete), others here. */
		opening = st->single;
		err = wopen(f, hdr->file, opening ? op : NULL, &st->w);
		if (err)
			atomic_fetch_sub(&f->open_files, 1);
	}
	/* Opening, it only checks the chunk is planned: the write comes after the opens. */
	if (!err)
		err = io_chunk_write_start(st->w, hdr->offset, data, hdr->len,
					   opening ? &check : op);
	if (!err)
		st->writers++;
	else if (opening)
		unopen(f, hdr->file);
	pthread_mutex_unlock(lock);
	/* The hash is checked outside the lock: chunks of one file verify in parallel. */
	if (!err && (err = io_chunk_verify(st->w, hdr->offset, data, hdr->len, hdr->hash)) != 0) {
		pthread_mutex_lock(lock);
		st->writers--; /* nothing is written, and complete is not called */
		if (opening)
			unopen(f, hdr->file);
		pthread_mutex_unlock(lock);
	}
	return err;
}

/* Receiver: a writer leaves without a write (its chunk's I/O failed before it). */
static int writer_gone(struct eng_files *f, uint64_t file, int err)
{
	pthread_mutex_lock(lock_of(f, file));
	f->st[file].writers--;
	pthread_mutex_unlock(lock_of(f, file));
	return err;
}

/*
 * Receiver: one of the I/Os that put a finished file in place is done (or
 * failed): the next, or the file's handle ends.
 */
static int files_placing(struct eng_files *f, uint64_t file, struct io_op *op, int64_t res)
{
	struct file_state *st = &f->st[file];
	int err = io_wfile_finalize_step(st->w, op, res);

	if (err == 1)
		return ENG_STEP_MORE;
	pthread_mutex_lock(lock_of(f, file));
	st->w = NULL; /* ended */
	pthread_mutex_unlock(lock_of(f, file));
	if (!err)
		atomic_fetch_add(&f->files_done, 1);
	return err;
}

/*
 * Receiver: a file of one chunk is open (or one of its opens is done): the
 * write next. The write is done (or failed): the writer that completes the
 * file settles it and puts it in place, with more I/Os (its fsync, the
 * rename, the directory's fsync).
 */
static int files_write_complete(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
				int64_t put, struct io_op *op)
{
	struct eng_files *f = ctx;
	struct file_state *st = &f->st[hdr->file];
	pthread_mutex_t *lock = lock_of(f, hdr->file);
	struct io_wfile *fin = NULL;
	bool complete = false;
	int err;

	if (op->kind == IO_OP_NONE)
		return 0; /* a second copy, taken without a write (files_write_prepare) */
	if (op->kind == IO_OP_OPEN) { /* st->w is this task's alone until it is written */
		err = io_wfile_open_step(st->w, op, put);
		if (err == 0) { /* open */
			count_direct(f, io_wfile_direct(st->w));
			err = io_chunk_write_start(st->w, hdr->offset, data, hdr->len, op);
		}
		return err < 0 ? writer_gone(f, hdr->file, err) : ENG_STEP_MORE;
	}
	if (op->kind != IO_OP_WRITE) /* the file's fsync, rename, or its directory's fsync */
		return files_placing(f, hdr->file, op, put);
	/* a direct write the kernel refused: again through the page cache */
	if (io_chunk_write_redo(st->w, op, put)) {
		err = io_chunk_write_start(st->w, hdr->offset, data, hdr->len, op);
		return err < 0 ? writer_gone(f, hdr->file, err) : ENG_STEP_MORE;
	}
	err = io_chunk_write_end(st->w, hdr->offset, hdr->len, put, &complete);
	pthread_mutex_lock(lock);
	st->writers--;
	st->complete |= complete;
	if (st->complete && st->writers == 0 && !st->done) {
		fin = st->w; /* stays in st->w until its rename is done */
		st->done = true;
	}
	pthread_mutex_unlock(lock);
	if (!fin) /* a complete file has had no failed write */
		return err;
	atomic_fetch_sub(&f->open_files, 1);
	err = io_wfile_finalize_start(fin, op);
	if (!err)
		return ENG_STEP_MORE;
	pthread_mutex_lock(lock);
	st->w = NULL; /* ended by the failed finalize */
	pthread_mutex_unlock(lock);
	return err;
}

void eng__files_attach(struct eng_files *f, struct eng_job *job)
{
	uint64_t total = f->m->data_bytes - f->skip_bytes - f->kept_bytes;

	job->src = (struct eng_source){.total = total,
				       .chunk = f->plan->chunk_size,
				       .n_chunks = f->plan->n,
				       .prepare = files_read_prepare,
				       .complete = files_read_complete,
				       .ctx = f};
	if (f->role == ENG_RECEIVER)
		job->rcv.sink = (struct eng_sink){
			.prepare = files_write_prepare, .complete = files_write_complete, .ctx = f};
	/* Each slot holds one chunk, and a chunk starts at most one file. */
	f->max_open = job->n_stripes * (job->n_stripes ? job->stripe[0].link.n_slots : 0) +
		      job->n_workers + 1;
}

int eng__files_prepare(struct eng_files *f)
{
	size_t i;
	int err = 0;

	for (i = 0; i < f->m->n && !err; i++) {
		const struct io_entry *e = &f->m->entry[i];
		struct io_wfile *w;

		if (e->skip)
			continue; /* held already: left as it is */
		if (e->type == IO_DIR)
			err = io_root_mkdir(f->root, e);
		else if (e->type == IO_SYMLINK)
			err = io_root_symlink(f->root, e);
		else if (f->st[i].left == 0) {
			/* No chunk will come: empty, all hole, or all kept from before. */
			err = wopen(f, i, NULL, &w);
			if (!err)
				err = io_wfile_finalize(w);
			if (!err) {
				f->st[i].done = true;
				atomic_fetch_add(&f->files_done, 1);
			}
		}
	}
	return err;
}

int eng__files_finish(struct eng_files *f)
{
	uint64_t done = atomic_load(&f->files_done);
	int err;

	if (done + f->skip_files != f->m->n_files)
		return rcp_err(-EIO, "only %" PRIu64 " of %" PRIu64 " files arrived complete", done,
			       f->m->n_files - f->skip_files);
	err = io_root_dirs_finish(f->root, f->m);
	f->finished = !err;
	return err;
}

void eng__files_checkpoint(struct eng_files *f)
{
	size_t i;

	for (i = 0; i < f->m->n; i++) {
		struct file_state *st = &f->st[i];
		pthread_mutex_t *lock = lock_of(f, i);

		/*
		 * Under the lock a file of several chunks is open whole (wopen ran
		 * under it) and not being put in place (done and complete are set
		 * under it first): its handle stays until the lock is released.
		 */
		pthread_mutex_lock(lock);
		/* A record that fails to be written: the next checkpoint, or the end, tries again.
		 */
		if (st->w && !st->single && !st->done && !st->complete)
			io_wfile_checkpoint(st->w);
		pthread_mutex_unlock(lock);
	}
}
