/*
 * fuzz_manifest.c - a peer's file list, both ways it arrives.
 *
 * The whole input is decoded as a manifest (io_manifest_decode, io/codec.c),
 * and the same input is read as the stream of "manifest" frames a peer sends
 * on the control connection (eng__manifest_recv: the announced total, hex
 * parts that must add up to it, then the decode). Seeds of each kind live in
 * corpus/manifest/; each kind fails the other's first check at once.
 *
 * An accepted manifest is held to what the receiver relies on: its encoding
 * decodes again to the same entries, its chunk plan can be made (or is
 * refused as too big), and the names the receiver then works out (top-level
 * count, a pull's name check, cp's rename of the one top entry) stay sound.
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "engine/session/proto.h"
#include "io/io_int.h"
#include "tests/fuzz/fuzz.h"

#include <stdbool.h>

static char long_name[IO_NAME_MAX + 1];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	memset(long_name, 'n', IO_NAME_MAX);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_manifest(const struct io_manifest *a, const struct io_manifest *b)
{
	size_t i;

	FUZZ_CHECK(a->n == b->n && a->n_files == b->n_files && a->data_bytes == b->data_bytes);
	for (i = 0; i < a->n; i++) {
		const struct io_entry *x = &a->entry[i], *y = &b->entry[i];

		FUZZ_CHECK(!strcmp(x->path, y->path) && x->type == y->type && x->mode == y->mode);
		FUZZ_CHECK(x->size == y->size && x->n_ext == y->n_ext &&
			   x->mtime_ns == y->mtime_ns && x->range == y->range);
		FUZZ_CHECK(!x->range || x->type == IO_FILE);
		FUZZ_CHECK(!x->link == !y->link && (!x->link || !strcmp(x->link, y->link)));
		FUZZ_CHECK(!x->n_ext || !memcmp(x->ext, y->ext, x->n_ext * sizeof(*x->ext)));
	}
}

/* What a decoded manifest must be, and what the receiver then does with it. */
static void accepted(struct io_manifest *m)
{
	struct io_manifest *again = NULL;
	struct io_plan *plan = NULL;
	const char *src[2] = {"a", "dir/."};
	void *buf = NULL;
	size_t len = 0, i;
	int err;

	for (i = 0; i < m->n; i++)
		FUZZ_CHECK(io__path_problem(m->entry[i].path, strlen(m->entry[i].path)) == NULL);
	FUZZ_CHECK(io_manifest_encode(m, &buf, &len) == 0);
	FUZZ_CHECK(io_manifest_decode(buf, len, &again) == 0);
	same_manifest(m, again);
	free(buf);
	io_manifest_destroy(again);
	err = io_plan_create(m, 4096, &plan);
	FUZZ_CHECK(err == 0 || err == -EFBIG);
	if (!err) {
		uint64_t bytes = 0;

		for (i = 0; i < plan->n; i++) {
			FUZZ_CHECK(plan->chunk[i].file < m->n);
			FUZZ_CHECK(plan->chunk[i].len >= 1 && plan->chunk[i].len <= 4096);
			bytes += plan->chunk[i].len;
		}
		FUZZ_CHECK(bytes == m->data_bytes);
		io_plan_destroy(plan);
	}
	FUZZ_CHECK(io_manifest_top_count(m) <= m->n);
	io_pull_names_check(src, 1, false, m);
	io_pull_names_check(src, 2, true, m);
	/* cp SRC NEW: the longest name a component may have, so that paths grow. */
	if (io_manifest_rename_top(m, long_name) == 0) {
		for (i = 0; i < m->n; i++)
			FUZZ_CHECK(io__path_problem(m->entry[i].path, strlen(m->entry[i].path)) ==
				   NULL);
		FUZZ_CHECK(io__manifest_check(m, NULL) == 0);
	}
}

static void decode_whole(const uint8_t *data, size_t size)
{
	struct io_manifest *m = NULL;
	int err = io_manifest_decode(data, size, &m);

	if (err) {
		FUZZ_CHECK(m == NULL);
		FUZZ_CHECK(err == -EBADMSG || err == -EPROTONOSUPPORT || err == -EFBIG ||
			   err == -EOVERFLOW);
		return;
	}
	accepted(m);
	io_manifest_destroy(m);
}

static void receive_parts(const uint8_t *data, size_t size)
{
	struct io_manifest *m = NULL;
	int fd, peer, err;

	if (fuzz_feed(data, size, &fd, &peer) != 0)
		return;
	err = eng__manifest_recv(&ENG_CTL_PLAIN(fd), 1000, &m);
	if (!err) {
		accepted(m);
		io_manifest_destroy(m);
	} else {
		FUZZ_CHECK(m == NULL);
	}
	close(fd);
	close(peer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_whole(data, size);
	receive_parts(data, size);
	return 0;
}
