/*
 * test_engine_files.c - the file side of push and pull over the loopback
 * transport: a tree with every kind of entry arrives identical; a corrupted
 * or misdirected chunk fails the job and leaves no file under a final name
 * and no temporary; destinations are named as rsync names them; the file
 * list survives the control connection in parts and a hostile one is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "engine/session/session_int.h"

#include "engine_harness.h"
#include "test_io_tree.h"

#include <sys/socket.h>

#define KiB 1024u

struct pair {
	char src[4096], dst[4096];
	struct eng_files *snd, *rcv;
	struct harness h;
};

/* Walk src/top, send its list "over the wire" (encode, decode), open dst as the receiver's root. */
static void pair_make(struct pair *p, uint32_t chunk)
{
	const char *top[1];
	char path[4096];
	struct io_manifest *m, *m2;
	struct io_root *root;
	void *buf;
	size_t len;

	t_mkdtemp(p->src);
	t_mkdtemp(p->dst);
	t_tree(p->src);
	t_path(path, p->src, "top");
	top[0] = path;
	assert_int_equal(io_manifest_walk(NULL, top, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(io_manifest_encode(m, &buf, &len), 0);
	assert_int_equal(io_manifest_decode(buf, len, &m2), 0);
	free(buf);
	assert_int_equal(io_root_open(p->dst, IO_ROOT_KEEP_META, &root), 0);
	assert_int_equal(eng__files_create(ENG_SENDER, m, chunk, NULL, 0, &p->snd), 0);
	assert_int_equal(eng__files_create(ENG_RECEIVER, m2, chunk, root, 0, &p->rcv), 0);
	assert_int_equal(eng__files_chunks(p->snd), eng__files_chunks(p->rcv));
	h_plan(&p->h.plan, 2, 1, 2);
	assert_int_equal(h_create(&p->h, 4, chunk, 1, NULL), 0);
	eng__files_attach(p->snd, p->h.snd);
	eng__files_attach(p->rcv, p->h.rcv);
	assert_int_equal(eng__files_prepare(p->rcv), 0);
}

static void pair_destroy(struct pair *p)
{
	h_destroy(&p->h);
	eng__files_destroy(p->snd);
	eng__files_destroy(p->rcv);
	t_rm_rf(p->src);
	t_rm_rf(p->dst);
}

static void assert_same_file(const char *a_base, const char *b_base, const char *rel)
{
	char a[4096], b[4096], ba[65536], bb[65536];
	struct stat sa, sb;
	int fa, fb;
	off_t off;

	t_path(a, a_base, rel);
	t_path(b, b_base, rel);
	assert_int_equal(lstat(a, &sa), 0);
	assert_int_equal(lstat(b, &sb), 0);
	assert_int_equal(sa.st_size, sb.st_size);
	assert_int_equal(sa.st_mode, sb.st_mode);
	assert_int_equal(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
	fa = open(a, O_RDONLY);
	fb = open(b, O_RDONLY);
	assert_true(fa >= 0 && fb >= 0);
	/* Data regions only: the sparse file is 6 GiB of mostly hole. */
	for (off = lseek(fa, 0, SEEK_DATA); off >= 0 && off < sa.st_size;
	     off = lseek(fa, off, SEEK_DATA)) {
		off_t end = lseek(fa, off, SEEK_HOLE);

		assert_int_equal(lseek(fb, off, SEEK_DATA), off);
		assert_int_equal(lseek(fb, off, SEEK_HOLE), end);
		for (; off < end; off += (off_t)sizeof(ba)) {
			ssize_t n = pread(fa, ba, sizeof(ba), off);

			assert_true(n > 0);
			assert_int_equal(pread(fb, bb, (size_t)n, off), n);
			assert_memory_equal(ba, bb, (size_t)n);
			if (off + n >= end)
				break;
		}
		off = end;
	}
	close(fa);
	close(fb);
}

static void test_tree_arrives_identical(void **state)
{
	struct pair p = {0};
	char link[64], path[4096];
	struct stat st;
	ssize_t n;

	(void)state;
	pair_make(&p, 64 * KiB);
	h_run(&p.h);
	assert_int_equal(p.h.snd_err, 0);
	assert_int_equal(p.h.rcv_err, 0);
	assert_int_equal(eng__files_finish(p.rcv), 0);
	assert_int_equal(eng__files_done(p.rcv), eng__files_manifest(p.rcv)->n_files);
	assert_int_equal(eng__files_done(p.snd), eng__files_manifest(p.snd)->n_files);
	assert_same_file(p.src, p.dst, "top/sub/deep.txt");
	assert_same_file(p.src, p.dst, "top/empty");
	assert_same_file(p.src, p.dst, "top/sparse");
	assert_same_file(p.src, p.dst, "top/" ODD_NAME);
	t_path(path, p.dst, "top/link");
	n = readlink(path, link, sizeof(link) - 1);
	assert_true(n > 0);
	link[n] = '\0';
	assert_string_equal(link, "sub/deep.txt");
	t_path(path, p.dst, "top");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(st.st_mtim.tv_sec, T_TOP);
	assert_int_equal(t_count_tmp(p.dst), 0);
	pair_destroy(&p);
}

/* A sink that corrupts one byte of one chunk, as a broken wire or memory would. */
static struct eng_sink real_sink;
static _Atomic int corrupt_left;

static int corrupting_prepare(void *ctx, const struct eng_chunk_hdr *hdr, const void *data,
			      struct io_op *op)
{
	if (hdr->len > 1 && atomic_fetch_sub(&corrupt_left, 1) == 1)
		((uint8_t *)data)[hdr->len / 2] ^= 0x40;
	return real_sink.prepare(ctx, hdr, data, op);
}

/* A chunk through a sink as a helper takes it: prepare, then each I/O and its complete. */
static int consume(const struct eng_sink *sink, const struct eng_chunk_hdr *hdr, const char *data)
{
	struct io_op op = {.kind = IO_OP_NONE};
	int err = sink->prepare(sink->ctx, hdr, data, &op);

	if (err)
		return err;
	do
		err = sink->complete(sink->ctx, hdr, data, io_op_run(&op, (void *)data), &op);
	while (err == ENG_STEP_MORE);
	return err;
}

static void test_corrupt_chunk_fails_and_leaves_no_partial_file(void **state)
{
	struct pair p = {0};

	(void)state;
	pair_make(&p, 4 * KiB);
	real_sink = p.h.rcv->rcv.sink;
	p.h.rcv->rcv.sink.prepare = corrupting_prepare;
	atomic_store(&corrupt_left, 1);
	h_run(&p.h);
	assert_int_equal(p.h.rcv_err, -EBADMSG);
	assert_non_null(strstr(p.h.rcv_msg, "CRC-64"));
	/* The file whose chunk went bad is not in place; after the job, no temporary remains. */
	eng__files_destroy(p.rcv);
	p.rcv = NULL;
	assert_int_equal(t_count_tmp(p.dst), 0);
	pair_destroy(&p);
}

/* A source that grows once a chunk of it was read, as a log being appended to would. */
static struct eng_source real_src;
static char grow_path[4096];

static int growing_complete(void *ctx, struct eng_chunk_hdr *hdr, const void *buf, int64_t got,
			    struct io_op *op)
{
	/* The first chunk of top/sparse's far extent: its other chunks' last read comes after. */
	if (op->kind == IO_OP_READ && hdr->offset == SPARSE_FAR) {
		int fd = open(grow_path, O_WRONLY | O_APPEND);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "more", 4), 4);
		close(fd);
	}
	return real_src.complete(ctx, hdr, buf, got, op);
}

static void test_a_source_written_to_while_read_is_not_put_in_place(void **state)
{
	struct pair p = {0};
	char path[4096];

	(void)state;
	pair_make(&p, 4 * KiB);
	t_path(grow_path, p.src, "top/sparse");
	real_src = p.h.snd->src;
	p.h.snd->src.complete = growing_complete;
	h_run(&p.h);
	assert_int_equal(p.h.snd_err, -ESTALE);
	assert_non_null(strstr(p.h.snd_msg, "changed while it was being sent"));
	eng__files_destroy(p.rcv);
	p.rcv = NULL;
	t_path(path, p.dst, "top/sparse");
	assert_int_equal(access(path, F_OK), -1); /* never under its final name */
	assert_int_equal(t_count_tmp(p.dst), 0);
	pair_destroy(&p);
}

/* base/rel holds exactly want. */
static void expect_content(const char *base, const char *rel, const char *want)
{
	char path[4096], got[64] = {0};
	FILE *f;

	t_path(path, base, rel);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(got, 1, sizeof(got) - 1, f), strlen(want));
	fclose(f);
	assert_string_equal(got, want);
}

/* The number the plan (64 KiB chunks, as pair_make's) gives file's first chunk. */
static uint64_t plan_seq(const struct io_manifest *m, uint64_t file)
{
	struct io_plan *plan;
	uint64_t i, seq = UINT64_MAX;

	assert_int_equal(io_plan_create(m, 64 * KiB, &plan), 0);
	for (i = 0; i < plan->n && seq == UINT64_MAX; i++)
		if (plan->chunk[i].file == file && plan->chunk[i].offset == 0)
			seq = i;
	io_plan_destroy(plan);
	assert_true(seq != UINT64_MAX);
	return seq;
}

static void test_misdirected_chunks_are_refused(void **state)
{
	struct pair p = {0};
	struct eng_chunk_hdr h = {
		.magic = ENG_HDR_MAGIC, .len = 5, .hash = io_chunk_hash("deep\n", 5)};
	const struct io_manifest *m;
	uint64_t i, dir = UINT64_MAX, file = UINT64_MAX;

	(void)state;
	pair_make(&p, 64 * KiB);
	m = eng__files_manifest(p.rcv);
	for (i = 0; i < m->n; i++) {
		if (m->entry[i].type == IO_DIR && dir == UINT64_MAX)
			dir = i;
		if (!strcmp(m->entry[i].path, "top/sub/deep.txt"))
			file = i;
	}
	assert_true(dir != UINT64_MAX && file != UINT64_MAX);
	h.file = m->n; /* past the list */
	assert_int_equal(consume(&p.h.rcv->rcv.sink, &h, "deep\n"), -EPROTO);
	h.file = dir; /* not a file */
	assert_int_equal(consume(&p.h.rcv->rcv.sink, &h, "deep\n"), -EPROTO);
	h.file = file;
	h.seq = plan_seq(m, file);
	h.offset = 4096; /* not a planned chunk */
	assert_int_not_equal(consume(&p.h.rcv->rcv.sink, &h, "deep\n"), 0);
	h.offset = 0;
	h.seq = plan_seq(m, file) + 1; /* the right place under another chunk's number */
	assert_int_equal(consume(&p.h.rcv->rcv.sink, &h, "deep\n"), -EPROTO);
	h.seq = plan_seq(m, file);
	assert_int_equal(consume(&p.h.rcv->rcv.sink, &h, "deep\n"), 0);
	assert_true(t_exists(p.dst, "top/sub/deep.txt"));
	/*
	 * Complete, in place: a second copy (its first's credit lost with a rail)
	 * is taken without a write, so even other bytes do not reach the file.
	 */
	h.hash = io_chunk_hash("DEEP\n", 5);
	assert_int_equal(consume(&p.h.rcv->rcv.sink, &h, "DEEP\n"), 0);
	assert_int_equal(t_count_tmp(p.dst), 0);
	expect_content(p.dst, "top/sub/deep.txt", "deep\n");
	pair_destroy(&p);
}

/*
 * rsync's naming on a real tree: a directory lands under its own name in an
 * existing DST and in a DST the copy makes alike; one file is created as a
 * new name; a trailing slash (contents) puts the contents in DST.
 */
static void test_destination_naming(void **state)
{
	char base[4096], src[4096], d[4096], top[4096], empty[4096], file[4096];
	const char *one[1] = {top}, *two[2] = {top, empty}, *f[1] = {file};
	struct io_manifest *m;
	struct io_root *parent, *root;

	(void)state;
	t_mkdtemp(base);
	t_mkdtemp(src);
	t_tree(src);
	t_path(d, base, "d");
	t_path(top, src, "top");
	t_path(empty, src, "top/empty");
	t_path(file, src, "top/sub/deep.txt");
	assert_int_equal(mkdir(d, 0755), 0);
	assert_int_equal(io_root_open(base, 0, &parent), 0);
	assert_int_equal(io_manifest_walk(NULL, one, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	/* An existing directory keeps the name. */
	assert_int_equal(eng__dest_open(parent, "d/", false, 0, m, &root), 0);
	assert_string_equal(m->entry[0].path, "top");
	io_root_close(root);
	/* A new name is made, and the directory lands in it under its own name. */
	assert_int_equal(eng__dest_open(parent, "d/new", false, 0, m, &root), 0);
	assert_string_equal(m->entry[0].path, "top");
	assert_true(t_exists(base, "d/new"));
	io_root_close(root);
	/* ... and the same again finds it and lands in the same place. */
	assert_int_equal(eng__dest_open(parent, "d/new", false, 0, m, &root), 0);
	assert_string_equal(m->entry[0].path, "top");
	assert_false(t_exists(base, "d/new/new"));
	io_root_close(root);
	/* Leading out of the parent is refused, whatever exists. */
	assert_int_not_equal(eng__dest_open(parent, "../x", false, 0, m, &root), 0);
	assert_int_not_equal(eng__dest_open(parent, "/etc", false, 0, m, &root), 0);
	assert_int_not_equal(eng__dest_open(parent, "d/../../x", false, 0, m, &root), 0);
	/* A missing parent is an error, not created. */
	assert_int_equal(eng__dest_open(parent, "no/such", false, 0, m, &root), -ENOENT);
	assert_false(t_exists(base, "no"));
	io_manifest_destroy(m);
	/* One file to a new name is created as it. */
	assert_int_equal(io_manifest_walk(NULL, f, 1, 0, NULL, &m), 0);
	assert_int_equal(eng__dest_open(parent, "d/renamed.txt", false, 0, m, &root), 0);
	assert_string_equal(m->entry[0].path, "renamed.txt");
	assert_false(t_exists(base, "d/renamed.txt"));
	io_root_close(root);
	io_manifest_destroy(m);
	/* Several sources to a missing name make it. */
	assert_int_equal(io_manifest_walk(NULL, two, 2, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(eng__dest_open(parent, "missing", false, 0, m, &root), 0);
	assert_true(t_exists(base, "missing"));
	io_root_close(root);
	io_manifest_destroy(m);
	/* top/ NEW: NEW is made and the contents land in it. */
	t_path(top, src, "top/");
	assert_int_equal(io_manifest_walk(NULL, one, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(eng__dest_open(parent, "d/fresh", true, 0, m, &root), 0);
	assert_true(t_exists(base, "d/fresh"));
	assert_false(t_exists(base, "d/fresh/top"));
	io_root_close(root);
	io_manifest_destroy(m);
	io_root_close(parent);
	t_rm_rf(base);
	t_rm_rf(src);
}

/* A list of many entries crosses a socket in several parts and decodes to the same list. */
static void test_manifest_travels_in_parts(void **state)
{
	char base[4096], name[64];
	const char *top[1];
	struct io_manifest *m, *got;
	int sv[2], i;

	(void)state;
	t_mkdtemp(base);
	for (i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "a-rather-long-file-name-to-fill-parts-%06d", i);
		t_write(base, name, "x", 1, 0644);
	}
	top[0] = base;
	assert_int_equal(io_manifest_walk(NULL, top, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	if (fork() == 0) {
		close(sv[0]);
		_exit(eng__manifest_send(&ENG_CTL_PLAIN(sv[1]), m) == 0 ? 0 : 1);
	}
	close(sv[1]);
	assert_int_equal(eng__manifest_recv(&ENG_CTL_PLAIN(sv[0]), 5000, &got), 0);
	assert_int_equal(got->n, m->n);
	assert_int_equal(got->n_files, 3000);
	assert_string_equal(got->entry[got->n - 1].path, m->entry[m->n - 1].path);
	close(sv[0]);
	io_manifest_destroy(got);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

/* One "manifest" frame with this total and part, then what the receiver makes of it. */
static int manifest_frame_result(json_int_t total, const char *part)
{
	struct io_manifest *m = NULL;
	json_t *msg = eng__proto_msg("manifest", false);
	int sv[2], err;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	json_object_set_new(msg, "total", json_integer(total));
	json_object_set_new(msg, "part", json_string(part));
	assert_int_equal(eng__proto_send(&ENG_CTL_PLAIN(sv[1]), msg), 0);
	json_decref(msg);
	err = eng__manifest_recv(&ENG_CTL_PLAIN(sv[0]), 2000, &m);
	assert_null(m);
	close(sv[0]);
	close(sv[1]);
	return err;
}

static void test_hostile_manifest_frames_are_refused(void **state)
{
	(void)state;
	/* An announced size beyond the limit: refused before any allocation. */
	assert_int_equal(manifest_frame_result((json_int_t)(ENG_MANIFEST_MAX + 1), "00"), -EFBIG);
	/* Parts that overrun what was announced. */
	assert_int_equal(manifest_frame_result(2, "000000"), -EPROTO);
	/* Not hex. */
	assert_int_equal(manifest_frame_result(2, "zz00"), -EPROTO);
	/* Well-framed garbage: the decoder refuses it. */
	assert_int_not_equal(manifest_frame_result(4, "deadbeef"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_arrives_identical),
		cmocka_unit_test(test_corrupt_chunk_fails_and_leaves_no_partial_file),
		cmocka_unit_test(test_a_source_written_to_while_read_is_not_put_in_place),
		cmocka_unit_test(test_misdirected_chunks_are_refused),
		cmocka_unit_test(test_destination_naming),
		cmocka_unit_test(test_manifest_travels_in_parts),
		cmocka_unit_test(test_hostile_manifest_frames_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
