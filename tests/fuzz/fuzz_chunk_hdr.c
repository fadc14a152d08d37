/*
 * fuzz_chunk_hdr.c - what arrives on the data path from a hostile peer:
 * chunk headers and the immediates that announce them (at a receiver), and
 * credits (at a sender).
 *
 * Design: two jobs of one worker and one rail with two stripes of 4 slots of
 * 4 KiB, as eng__job_create lays them out, on a fake endpoint whose
 * operations succeed (or fail, when the input says so). The input is a list
 * of records, each one completion handed to eng__stripe_complete as a
 * worker would: a chunk at the receiver (the record's immediate and the
 * 64-byte header it wrote into that slot), a credit at the sender, a
 * sender's pump, or a completion of another kind or with an error status
 * (the format, which gen_corpus writes too, is in fuzz.h).
 * Flags in a record can make the header honest where a fuzzer could not
 * guess it (magic, token, slot; the bench pattern, or a planned chunk of the
 * file job with its right hash), so the checks behind those are reached.
 * The input's first byte chooses the receiver's sink: the bench pattern
 * (eng__bench_check) or files (files.c's sink, prepare, pwrite, complete) beneath a
 * fresh directory of the harness's temporary directory.
 *
 * Checked: a receiver that took a chunk without failing took only a header
 * that matches the session, the slot and the slot size; a sender's free and
 * outstanding slots always add up to its slots while the stripe is up; a
 * completion error takes its stripe down (failover, as eng__job_run sets it
 * up), and the job with its last stripe.
 *
 * Threading: one thread plays the worker.
 */
#include "common/common.h"
#include "engine/datapath/datapath_int.h"
#include "io/io_int.h"
#include "tests/fuzz/fuzz.h"

#include <stdbool.h>
#include <sys/stat.h>

#define N_SLOTS 4
#define SLOT 4096u
#define BENCH_BYTES (10ull * SLOT + 100)

static int fail_next;

static int take_fail(void)
{
	int err = fail_next;

	fail_next = 0;
	return err;
}

static int ep_write_imm(struct eng_ep *ep, const struct eng_write *w, unsigned n)
{
	(void)ep;
	FUZZ_CHECK(n >= 1 && n <= ENG_WRITE_BATCH && w[0].len <= SLOT);
	return take_fail();
}

static int ep_send_imm(struct eng_ep *ep, uint64_t wr_id, bool signaled, uint32_t imm)
{
	(void)ep;
	(void)wr_id;
	(void)signaled;
	FUZZ_CHECK(imm < N_SLOTS); /* a receiver credits only slots that exist */
	return take_fail();
}

static int ep_post_recv(struct eng_ep *ep, uint64_t wr_id, unsigned n)
{
	(void)ep;
	(void)wr_id;
	(void)n;
	return take_fail();
}

static void ep_describe(struct eng_ep *ep, char *buf, size_t len)
{
	(void)ep;
	snprintf(buf, len, "fuzz0:1 qp 0x1");
}

static void ep_shutdown(struct eng_ep *e)
{
	(void)e;
}

static const struct eng_tr_ops ops = {.name = "fuzz",
				      .write_imm = ep_write_imm,
				      .send_imm = ep_send_imm,
				      .post_recv = ep_post_recv,
				      .describe = ep_describe,
				      .shutdown = ep_shutdown};
static struct eng_ep ep = {.ops = &ops};
static struct topo_plan plan;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	plan.n_workers = 1;
	plan.worker[0].buffer_bytes = 64u << 20;
	plan.n_rails = 1;
	snprintf(plan.rail[0].dev, sizeof(plan.rail[0].dev), "fuzz0");
	plan.rail[0].port = 1;
	plan.rail[0].qps = 2;
	fuzz_tmpdir();
	return 0;
}

/* The input, read a byte at a time; zeros past its end. */
struct in {
	const uint8_t *p;
	size_t left;
};

static void take(struct in *in, void *out, size_t n)
{
	size_t k = n < in->left ? n : in->left;

	memcpy(out, in->p, k);
	memset((uint8_t *)out + k, 0, n - k);
	in->p += k;
	in->left -= k;
}

static uint8_t take_byte(struct in *in)
{
	uint8_t b;

	take(in, &b, 1);
	return b;
}

static int entry_add(struct io_manifest *m, enum io_type type, const char *path, uint64_t size,
		     const struct io_extent *ext, uint32_t n_ext)
{
	struct io_entry *e;
	uint32_t i;

	if (io__manifest_add(m, &e) != 0)
		return -ENOMEM;
	e->type = type;
	e->mode = type == IO_FILE ? 0644 : 0755;
	e->size = size;
	e->path = strdup(path);
	e->link = type == IO_SYMLINK ? strdup("b") : NULL;
	e->ext = n_ext ? malloc(n_ext * sizeof(*ext)) : NULL;
	if (!e->path || (type == IO_SYMLINK && !e->link) || (n_ext && !e->ext))
		return -ENOMEM;
	for (i = 0; i < n_ext; i++) {
		e->ext[i] = ext[i];
		e->data_bytes += ext[i].len;
	}
	e->n_ext = n_ext;
	m->data_bytes += e->data_bytes;
	m->n_files += type == IO_FILE;
	return 0;
}

/* A directory, a file of 3 chunks in it, a sparse file, an empty file and a symlink. */
static struct io_manifest *manifest_make(void)
{
	static const struct io_extent a[] = {{0, 2 * SLOT + 17}};
	static const struct io_extent b[] = {{0, SLOT}, {3 * SLOT, 100}};
	struct io_manifest *m = calloc(1, sizeof(*m));

	if (!m || entry_add(m, IO_DIR, "d", 0, NULL, 0) ||
	    entry_add(m, IO_FILE, "d/a", a[0].len, a, 1) ||
	    entry_add(m, IO_FILE, "b", 3 * SLOT + 100, b, 2) ||
	    entry_add(m, IO_FILE, "e", 0, NULL, 0) || entry_add(m, IO_SYMLINK, "l", 1, NULL, 0)) {
		io_manifest_destroy(m);
		return NULL;
	}
	return m;
}

/* The receiver's file side beneath dir, attached to job; its plan in *plan_out. */
static int files_make(struct eng_job *job, const char *dir, struct eng_files **f_out,
		      struct io_plan **plan_out)
{
	struct io_manifest *m = manifest_make();
	struct io_root *root = NULL;
	int err;

	if (!m)
		return -ENOMEM;
	FUZZ_CHECK(io__manifest_check(m, NULL) == 0);
	FUZZ_CHECK(mkdir(dir, 0700) == 0);
	if ((err = io_root_open(dir, 0, &root)) != 0) {
		io_manifest_destroy(m);
		return err;
	}
	if ((err = eng__files_create(ENG_RECEIVER, m, SLOT, root, 0, f_out)) != 0)
		return err;
	eng__files_attach(*f_out, job);
	FUZZ_CHECK(eng__files_prepare(*f_out) == 0);
	return io_plan_create(eng__files_manifest(*f_out), SLOT, plan_out);
}

/* An honest chunk for h->seq: the bench pattern's place and bytes, or a planned file chunk. */
static void honest_data(struct eng_chunk_hdr *h, uint8_t *data, const struct io_plan *fplan,
			struct in *in)
{
	const struct io_chunk *c;

	if (!fplan) {
		uint32_t len = h->len % SLOT ? h->len % SLOT : SLOT;
		struct eng_source src = {.total = h->seq * SLOT + len, .chunk = SLOT};
		struct io_op op;

		eng__bench_fill(&src, h, data, &op);
		return;
	}
	c = &fplan->chunk[h->seq % fplan->n];
	h->file = c->file;
	h->offset = c->offset;
	h->len = c->len;
	take(in, data, c->len < 8 ? c->len : 8); /* some bytes of the input, zeros after */
	memset(data + 8, 0, c->len > 8 ? c->len - 8 : 0);
	h->hash = io_chunk_hash(data, c->len);
}

/* A chunk arrives at the receiver's stripe s with immediate imm. */
static void rec_chunk(struct eng_stripe *s, uint8_t op, struct in *in, const struct io_plan *fplan)
{
	struct eng_chunk_hdr h;
	uint32_t imm = take_byte(in);
	uint64_t before = atomic_load(&s->chunks);
	struct eng_wc wc;

	if (op & FUZZ_F_WIDE_IMM) {
		uint8_t b[3];

		take(in, b, 3);
		imm |= (uint32_t)b[0] << 8 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 24;
	}
	take(in, &h, sizeof(h));
	if (op & FUZZ_F_HONEST_HDR) {
		h.magic = ENG_HDR_MAGIC;
		h.token = FUZZ_CHUNK_TOKEN;
		h.slot = imm;
	}
	if (imm < N_SLOTS) {
		uint8_t *data = s->link.data + (size_t)imm * SLOT;

		if (op & FUZZ_F_HONEST_DATA)
			honest_data(&h, data, fplan, in);
		memcpy(&s->link.hdr[imm], &h, sizeof(h));
	}
	wc = (struct eng_wc){
		.wr_id = (uint64_t)(uintptr_t)s | ENG_WR_RECV, .op = ENG_WC_RECV_IMM, .imm = imm};
	eng__stripe_complete(&wc);
	if (atomic_load(&s->chunks) != before) /* taken: it must have been a valid header */
		FUZZ_CHECK(imm < N_SLOTS && h.magic == ENG_HDR_MAGIC &&
			   h.token == FUZZ_CHUNK_TOKEN && h.slot == imm && h.len >= 1 &&
			   h.len <= SLOT);
}

static void rec_other(struct eng_job *rcv, struct eng_job *snd, uint8_t op)
{
	struct eng_job *job = op & FUZZ_F_OTHER_SENDER ? snd : rcv;
	struct eng_stripe *s = &job->stripe[(op & FUZZ_F_STRIPE) ? 1 : 0];
	struct eng_wc wc = {.wr_id = (uint64_t)(uintptr_t)s |
				     (op & FUZZ_F_OTHER_SEND ? ENG_WR_SEND : ENG_WR_WRITE),
			    .status = op & FUZZ_F_OTHER_ERROR ? 12 : 0,
			    .status_str = "transport retry counter exceeded",
			    .op = op & FUZZ_F_OTHER_SEND ? ENG_WC_SEND : ENG_WC_WRITE};

	eng__stripe_complete(&wc);
	/* An error takes the stripe down (failover), and the job with its last stripe. */
	FUZZ_CHECK(!(op & FUZZ_F_OTHER_ERROR) || atomic_load(&s->dead));
	FUZZ_CHECK(!(op & FUZZ_F_OTHER_ERROR) || atomic_load(&job->err) != 0 ||
		   atomic_load(&job->stripes_alive) > 0);
}

static void records(struct eng_job *rcv, struct eng_job *snd, struct in *in,
		    const struct io_plan *fplan)
{
	while (in->left > 0) {
		uint8_t op = take_byte(in);
		unsigned k = (op & FUZZ_F_STRIPE) ? 1 : 0;
		struct eng_stripe *ss = &snd->stripe[k];

		if (op & FUZZ_F_FAIL_NEXT_OP)
			fail_next = -EIO;
		switch (op & 3) {
		case FUZZ_REC_CHUNK:
			if (!atomic_load(&rcv->stop))
				rec_chunk(&rcv->stripe[k], op, in, fplan);
			break;
		case FUZZ_REC_CREDIT:
			if (!atomic_load(&snd->stop)) {
				struct eng_wc wc = {.wr_id = (uint64_t)(uintptr_t)ss | ENG_WR_RECV,
						    .op = ENG_WC_RECV_IMM,
						    .imm = take_byte(in)};

				eng__stripe_complete(&wc);
			}
			break;
		case FUZZ_REC_PUMP:
			if (!atomic_load(&snd->stop)) {
				eng__stripe_pump(ss); /* no helpers: each chunk is made at once */
				eng__stripe_flush(ss);
			}
			break;
		default:
			rec_other(rcv, snd, op);
		}
		fail_next = 0;
		if (!atomic_load(&snd->stop) && !atomic_load(&ss->dead))
			FUZZ_CHECK(ss->n_free + ss->outstanding + ss->n_ready + ss->busy ==
				   N_SLOTS);
	}
}

static struct eng_job *job_make(enum eng_role role)
{
	struct eng_job *job = NULL;
	unsigned i;

	FUZZ_CHECK(eng__job_create(role, &plan, N_SLOTS, SLOT, false, &job) == 0);
	job->token = FUZZ_CHUNK_TOKEN;
	eng__bench_attach(job, BENCH_BYTES, SLOT);
	for (i = 0; i < job->n_stripes; i++) {
		job->stripe[i].link.ep = &ep;
		if (role == ENG_SENDER)
			FUZZ_CHECK(eng__stripe_init_sender(&job->stripe[i]) == 0);
		else
			FUZZ_CHECK(eng__stripe_init_receiver(&job->stripe[i]) == 0);
	}
	return job;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	struct eng_job *rcv = job_make(ENG_RECEIVER), *snd = job_make(ENG_SENDER);
	struct eng_files *files = NULL;
	struct io_plan *fplan = NULL;
	char dir[4200];

	snprintf(dir, sizeof(dir), "%s/run", fuzz_tmpdir());
	if (take_byte(&in) & 1)
		FUZZ_CHECK(files_make(rcv, dir, &files, &fplan) == 0);
	/* What eng__job_run sets up first, for the job's chunks as attached: failover's state. */
	FUZZ_CHECK(eng__failover_init(rcv) == 0 && eng__failover_init(snd) == 0);
	records(rcv, snd, &in, fplan);
	if (files) {
		eng__files_finish(files);
		eng__files_destroy(files);
		io_plan_destroy(fplan);
		fuzz_rm_rf(dir);
	}
	eng__job_destroy(snd);
	eng__job_destroy(rcv);
	return 0;
}
