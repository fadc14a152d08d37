/*
 * test_io_checksum.c - how a -c receiver builds a file from its old self
 * (io/checksum.c): nothing is read when the held chunks are mapped; each
 * held chunk is read once, in the digests' pass (io_partial_read), and the
 * bytes it returns are those the partial file gets; no descriptor of the
 * old file is held between the map and the pass (a tree of many files would
 * hold one each); a chunk the old file lost since the map (cut, or the file
 * removed) reads as zeros, in the buffer and in the partial file alike, so
 * what is hashed is what the new file holds.
 *
 * Threading: single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/io_int.h"

#include "test_io_tree.h"

#define CHUNK (64u << 10)
#define N_CHUNKS 4
#define SIZE (N_CHUNKS * CHUNK)

struct fx {
	char base[4096];
	uint8_t old[SIZE];
	struct io_root *root;
	struct io_extent ext;
	struct io_entry e;
	struct io_partial *p;
};

/* Descriptors this process has open. */
static int fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	size_t i;

	assert_non_null(x);
	t_mkdtemp(x->base);
	for (i = 0; i < SIZE; i++)
		x->old[i] = (uint8_t)(i * 7 + i / CHUNK);
	t_write(x->base, "f", x->old, SIZE, 0644);
	assert_int_equal(io_root_open(x->base, IO_ROOT_PARTIAL | IO_ROOT_CHECKSUM, &x->root), 0);
	x->ext = (struct io_extent){.off = 0, .len = SIZE};
	x->e = (struct io_entry){.path = (char *)"f",
				 .type = IO_FILE,
				 .mode = 0644,
				 .size = SIZE,
				 .ext = &x->ext,
				 .n_ext = 1,
				 .data_bytes = SIZE};
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	io_partial_destroy(x->p);
	io_root_close(x->root);
	t_rm_rf(x->base);
	free(x);
	return 0;
}

/* The partial data file of "f", as it is now. */
static void partial_bytes(const struct fx *x, uint8_t out[SIZE])
{
	char data[IO_TMP_NAME_LEN], rec[IO_TMP_NAME_LEN], log[IO_TMP_NAME_LEN], path[4096];
	int fd;

	io__partial_names("f", data, rec, log);
	t_path(path, x->base, data);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, out, SIZE, 0), SIZE);
	close(fd);
}

/* Each held chunk, read in the digests' pass, is want's, hashed so, and the partial file is want.
 */
static void assert_reads(struct fx *x, const uint8_t want[SIZE])
{
	static uint8_t buf[CHUNK], got[SIZE];
	uint64_t k;

	for (k = 0; k < N_CHUNKS; k++) {
		memset(buf, 0xa5, CHUNK);
		assert_int_equal(io_partial_read(x->p, k, k * CHUNK, CHUNK, buf), 0);
		assert_memory_equal(buf, want + k * CHUNK, CHUNK);
		assert_true(x->p->hash[k] == io_chunk_hash(buf, CHUNK));
	}
	partial_bytes(x, got);
	assert_memory_equal(got, want, SIZE);
}

/* "f" mapped, then its path for the test to change before the pass. */
static void map(struct fx *x, char path[4096])
{
	x->p = io_root_partial(x->root, &x->e, CHUNK);
	assert_non_null(x->p);
	t_path(path, x->base, "f");
}

static void test_held_chunks_are_read_once_into_the_partial_file(void **state)
{
	struct fx *x = *state;
	static uint8_t got[SIZE], zero[SIZE];
	int before = fds_open();
	char path[4096];
	uint64_t k;

	map(x, path);
	for (k = 0; k < N_CHUNKS; k++)
		assert_true(io_partial_has(x->p, k));
	for (k = 0; k < N_CHUNKS; k++)
		assert_true(io_partial_late(x->p, k));
	/* Mapped, not read: the partial file is still all hole. */
	partial_bytes(x, got);
	assert_memory_equal(got, zero, SIZE);
	assert_int_equal(fds_open(), before + 1); /* the partial file's alone */
	assert_reads(x, x->old);
	assert_int_equal(fds_open(), before + 1); /* nothing of the old file's left open */
}

static void test_a_chunk_the_old_file_lost_since_reads_as_zeros(void **state)
{
	struct fx *x = *state;
	static uint8_t want[SIZE];
	char path[4096];

	map(x, path);
	assert_int_equal(truncate(path, CHUNK + CHUNK / 2), 0); /* cut after the map */
	memcpy(want, x->old, CHUNK + CHUNK / 2);
	assert_reads(x, want);
}

static void test_an_old_file_removed_since_reads_as_zeros(void **state)
{
	struct fx *x = *state;
	static uint8_t zero[SIZE];
	char path[4096];

	map(x, path);
	assert_int_equal(unlink(path), 0);
	assert_reads(x, zero);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_held_chunks_are_read_once_into_the_partial_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_chunk_the_old_file_lost_since_reads_as_zeros,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_an_old_file_removed_since_reads_as_zeros,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
