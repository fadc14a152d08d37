/*
 * test_session_checksum.c - copies with -c over the loopback transport
 * (session_harness.h): a file already at the destination is compared chunk
 * by chunk and only the chunks that differ travel, whichever side changed
 * (the source, or the destination behind the copy's back), both ways; a
 * file grown or cut short keeps its common chunks; a file with nothing at
 * the destination is sent whole. The report's sent and compared figures
 * are what the tests hold to, and each tree must end byte for byte the
 * same, so a comparison that passed a changed chunk, or one that sent
 * everything, fails them.
 *
 * Threading: one session at a time.
 */
#include "session_harness.h"

#include <fcntl.h>
#include <unistd.h>

#define BIG "top/sub/big.bin"
#define BIG_BYTES (300 * KiB + 1234)
#define CHUNK (4 * KiB)
/* The tree's chunks: a.txt 1, big.bin 76, c.txt 2 (the empty file none). */
#define TREE_CHUNKS 79

/* Overwrite one byte of base/rel at off, the file's size and times otherwise kept. */
static void poke(const char *base, const char *rel, off_t off, uint8_t byte)
{
	char p[4096];
	int fd;

	t_path(p, base, rel);
	fd = open(p, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &byte, 1, off), 1);
	assert_int_equal(close(fd), 0);
}

/* Set base/rel's size to len (cut, or extended by a hole). */
static void resize(const char *base, const char *rel, off_t len)
{
	char p[4096];

	t_path(p, base, rel);
	assert_int_equal(truncate(p, len), 0);
}

struct ck {
	char src[4096], root[4096], back[4096], top[4096];
	struct topo_plan plan;
};

static void ck_start(struct fx *fx, struct ck *c)
{
	static const unsigned rails[] = {1, 2};

	fx_dir(fx, "src", c->src);
	fx_dir(fx, "root", c->root);
	fx_dir(fx, "back", c->back);
	tree_make(c->src);
	t_path(c->top, c->src, "top");
	plan_make(&fx->srv.plan, rails, 2, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, c->root, NULL);
	plan_make(&c->plan, rails, 2, 2, 1, BUDGET);
}

static int ck_copy(struct fx *fx, struct ck *c, enum eng_copy_dir dir, bool checksum,
		   struct eng_report *r)
{
	const char *push_src[] = {c->top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
						  : copy_opts(ENG_PULL, pull_src, 1, c->back);

	cp.preserve = true;
	cp.checksum = checksum;
	memset(r, 0, sizeof(*r));
	return copy(&fx->srv, &c->plan, &cp, NULL, r);
}

static void test_a_push_with_c_sends_only_the_chunks_that_differ(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct ck c;

	ck_start(fx, &c);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0); /* nothing there: all of it */
	assert_int_equal(r.bytes, TREE_BYTES);
	assert_int_equal(r.chunks_compared, 0);
	tree_same(c.src, c.root);
	/* Nothing changed: every chunk compared, none sent. */
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0);
	assert_int_equal(r.chunks_compared, TREE_CHUNKS);
	assert_int_equal(r.bytes, 0);
	assert_int_equal(r.bytes_kept, TREE_BYTES);
	assert_true(r.hashed_bytes >= TREE_BYTES && r.peer_hashed_bytes >= TREE_BYTES);
	/* Two chunks of the source change, size and time kept: those two travel. */
	poke(c.src, BIG, 10 * CHUNK + 7, 0xa5);
	poke(c.src, BIG, 70 * CHUNK, 0x5a);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0);
	assert_int_equal(r.chunks, 2);
	assert_int_equal(r.bytes, 2 * CHUNK);
	assert_int_equal(r.bytes_kept, TREE_BYTES - 2 * CHUNK);
	tree_same(c.src, c.root);
	/* A byte changed at the destination (a forged file) is found and sent again. */
	poke(c.root, "top/sub/deeper/c.txt", 4500, 0);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0);
	assert_int_equal(r.bytes, 5000 - CHUNK);
	tree_same(c.src, c.root);
	assert_int_equal(t_count_tmp(c.root), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * A destination file of another user's with a second name (a hard link
 * someone with the key could plant to a file they may not read) is not
 * compared: its digests would tell of its content. It is sent whole; the
 * same file of this user's, or of one name, is compared.
 */
static void test_c_does_not_compare_another_user_s_file_with_other_names(void **state)
{
	struct fx *fx = *state;
	char p[4096], planted[4096];
	struct eng_report r;
	struct ck c;

	if (geteuid() != 0) {
		print_message("skipped: only root can give a file to another user\n");
		skip();
	}
	ck_start(fx, &c);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0);
	t_path(p, c.root, BIG);
	t_path(planted, c.root, "planted");
	assert_int_equal(link(p, planted), 0);
	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0);
	assert_int_equal(r.bytes, BIG_BYTES); /* big.bin whole, the others kept */
	assert_int_equal(r.chunks_compared, TREE_CHUNKS - 76);
	assert_int_equal(unlink(planted), 0);
	tree_same(c.src, c.root);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_c_keeps_the_common_chunks_of_a_file_grown_or_cut(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct ck c;

	ck_start(fx, &c);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, false, &r), 0);
	/* Grown by a hole and a byte past it: its last old chunk (partial) and the new ones. */
	resize(c.src, BIG, BIG_BYTES + 3 * CHUNK);
	poke(c.src, BIG, BIG_BYTES + 3 * CHUNK - 1, 1);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0);
	assert_int_equal(r.bytes_kept, TREE_BYTES - 1234);
	tree_same(c.src, c.root);
	/* Cut short inside a chunk: nothing travels, and the old tail is gone. */
	resize(c.src, BIG, 40 * CHUNK + 10);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0);
	assert_int_equal(r.bytes, 0);
	tree_same(c.src, c.root);
	assert_int_equal(t_count_tmp(c.root), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

static void test_a_pull_with_c_sends_only_the_chunks_that_differ(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	struct ck c;

	ck_start(fx, &c);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, false, &r), 0);
	assert_int_equal(ck_copy(fx, &c, ENG_PULL, true, &r), 0);
	tree_same(c.root, c.back);
	poke(c.root, BIG, 33 * CHUNK + 1, 0x11);
	assert_int_equal(ck_copy(fx, &c, ENG_PULL, true, &r), 0);
	assert_int_equal(r.chunks_compared, TREE_CHUNKS);
	assert_int_equal(r.bytes, CHUNK);
	assert_true(r.hashed_bytes >= TREE_BYTES && r.peer_hashed_bytes >= TREE_BYTES);
	tree_same(c.root, c.back);
	assert_int_equal(t_count_tmp(c.back), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* What a dry run with -c told, entry by entry (the tree has 8 entries: test_session_dry.c). */
struct told {
	unsigned calls;
	size_t n;
	char path[8][64];
	uint8_t why[8];
	struct eng_dry_chunks c[8];
};

static void told_list(const struct io_manifest *m, const uint8_t *why,
		      const struct eng_dry_chunks *c, void *ctx)
{
	struct told *t = ctx;
	size_t i;

	assert_non_null(c);
	t->calls++;
	t->n = m->n;
	for (i = 0; i < m->n && i < RCP_ARRAY_SIZE(t->path); i++) {
		snprintf(t->path[i], sizeof(t->path[i]), "%s", m->entry[i].path);
		t->why[i] = why[i];
		t->c[i] = c[i];
	}
}

/* A dry run of ck_copy's copy with -c (and -u with update): its list into t. */
static int ck_dry(struct fx *fx, struct ck *c, enum eng_copy_dir dir, bool update, struct told *t)
{
	const char *push_src[] = {c->top}, *pull_src[] = {"top"};
	struct eng_copy_opts cp = dir == ENG_PUSH ? copy_opts(ENG_PUSH, push_src, 1, "")
						  : copy_opts(ENG_PULL, pull_src, 1, c->back);
	struct eng_report r;

	memset(t, 0, sizeof(*t));
	cp.preserve = true;
	cp.checksum = true;
	cp.update = update;
	cp.dry_run = true;
	cp.dry_list = told_list;
	cp.dry_ctx = t;
	return copy(&fx->srv, &c->plan, &cp, NULL, &r);
}

/* Entry i of t is path, with differ of its chunks chunks differing (bytes: their bytes). */
static void told_is(const struct told *t, size_t i, const char *path, uint64_t differ,
		    uint64_t chunks, uint64_t bytes)
{
	assert_string_equal(t->path[i], path);
	assert_int_equal(t->c[i].chunks, chunks);
	assert_int_equal(t->c[i].differ, differ);
	assert_int_equal(t->c[i].differ_bytes, bytes);
}

/*
 * -c -n, push: each file's chunks that differ, by the digests a copy
 * compares (a change at the source and a forged byte at the destination
 * alike), a file with nothing at the destination whole, and nothing made
 * or written at the destination (no partial file either).
 */
static void test_a_push_dry_run_with_c_counts_the_chunks_that_differ(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char orig[4096];
	struct told t;
	struct ck c;

	ck_start(fx, &c);
	fx_dir(fx, "orig", orig);
	assert_int_equal(ck_dry(fx, &c, ENG_PUSH, false, &t), 0); /* nothing there: all whole */
	assert_int_equal(t.calls, 1);
	assert_int_equal(t.n, 8);
	assert_int_equal(t.why[4], IO_DIFF_NEW);
	told_is(&t, 4, BIG, 76, 76, BIG_BYTES);
	told_is(&t, 2, "top/empty", 0, 0, 0);
	assert_true(dir_empty(c.root));
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, false, &r), 0);
	tree_make(orig); /* the destination as it is now */
	poke(c.src, BIG, 10 * CHUNK + 7, 0xa5);
	poke(c.src, BIG, 70 * CHUNK, 0x5a);
	poke(c.root, "top/sub/deeper/c.txt", 4500, 0);
	poke(orig, "top/sub/deeper/c.txt", 4500, 0);
	assert_int_equal(ck_dry(fx, &c, ENG_PUSH, false, &t), 0);
	told_is(&t, 1, "top/a.txt", 0, 1, 0);
	told_is(&t, 4, BIG, 2, 76, 2 * CHUNK);
	told_is(&t, 6, "top/sub/deeper/c.txt", 1, 2, 5000 - CHUNK);
	tree_same(orig, c.root);
	assert_int_equal(t_count_tmp(c.root), 0);
	/* The copy sends what the dry run counted. */
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, true, &r), 0);
	assert_int_equal(r.chunks, 3);
	tree_same(c.src, c.root);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* -c -n, pull: the client compares its old files with the server's, writing nothing. */
static void test_a_pull_dry_run_with_c_counts_the_chunks_that_differ(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char orig[4096];
	struct told t;
	struct ck c;

	ck_start(fx, &c);
	fx_dir(fx, "orig", orig);
	assert_int_equal(ck_copy(fx, &c, ENG_PUSH, false, &r), 0);
	assert_int_equal(ck_copy(fx, &c, ENG_PULL, false, &r), 0);
	tree_make(orig);
	poke(c.root, BIG, 33 * CHUNK + 1, 0x11);
	resize(c.root, "top/sub/deeper/c.txt", CHUNK); /* cut to its first chunk */
	assert_int_equal(ck_dry(fx, &c, ENG_PULL, false, &t), 0);
	assert_int_equal(t.calls, 1);
	told_is(&t, 4, BIG, 1, 76, CHUNK);
	told_is(&t, 6, "top/sub/deeper/c.txt", 0, 1, 0);
	assert_int_equal(t.why[6], IO_DIFF_SIZE);
	told_is(&t, 1, "top/a.txt", 0, 1, 0);
	/* With -u, what its quick check leaves alone is not compared: no chunk counted. */
	assert_int_equal(ck_dry(fx, &c, ENG_PULL, true, &t), 0);
	told_is(&t, 1, "top/a.txt", 0, 0, 0);
	told_is(&t, 6, "top/sub/deeper/c.txt", 0, 1, 0);
	tree_same(orig, c.back);
	assert_int_equal(t_count_tmp(c.back), 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_push_with_c_sends_only_the_chunks_that_differ),
		T(test_c_does_not_compare_another_user_s_file_with_other_names),
		T(test_c_keeps_the_common_chunks_of_a_file_grown_or_cut),
		T(test_a_pull_with_c_sends_only_the_chunks_that_differ),
		T(test_a_push_dry_run_with_c_counts_the_chunks_that_differ),
		T(test_a_pull_dry_run_with_c_counts_the_chunks_that_differ),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
