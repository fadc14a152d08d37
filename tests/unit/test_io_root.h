/*
 * test_io_root.h - what the receiver's tests (test_io_root*.c) share: a
 * scratch base with a root and a directory outside it, entries built in test
 * memory, and a chunk write that hashes what it writes. Include it after
 * cmocka.h. Its helpers are static: each test file has its own copy, and
 * each test runs on one thread unless it starts its own.
 */
#ifndef RAILCP_TEST_IO_ROOT_H
#define RAILCP_TEST_IO_ROOT_H

#include "common/common.h"
#include "io/io.h"
#include "io/io_int.h"
#include "test_io_tree.h"

#define CH 4096u

struct fixture {
	char base[4096];
	char root[4096];
	char outside[4096];
};

static inline int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	t_mkdtemp(fx->base);
	t_path(fx->root, fx->base, "root");
	t_path(fx->outside, fx->base, "outside");
	assert_int_equal(mkdir(fx->root, 0755), 0);
	assert_int_equal(mkdir(fx->outside, 0755), 0);
	*state = fx;
	return 0;
}

static inline int teardown(void **state)
{
	struct fixture *fx = *state;

	t_rm_rf(fx->base);
	free(fx);
	return 0;
}

/* An entry with its extents in one piece of test memory. */
struct fe {
	struct io_entry e;
	struct io_extent x[4];
	char path[4096];
};

static inline void fe_file(struct fe *f, const char *path, uint64_t size, unsigned n,
			   const uint64_t *pairs)
{
	unsigned i;

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->e = (struct io_entry){.path = f->path,
				 .type = IO_FILE,
				 .mode = 0640,
				 .size = size,
				 .ext = f->x,
				 .n_ext = n,
				 .mtime_ns = 1234567890123456789ll};
	for (i = 0; i < n; i++) {
		f->x[i] = (struct io_extent){pairs[2 * i], pairs[2 * i + 1]};
		f->e.data_bytes += pairs[2 * i + 1];
	}
}

static inline void fe_other(struct fe *f, enum io_type type, const char *path, const char *link)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->e = (struct io_entry){.path = f->path,
				 .type = type,
				 .mode = 0755,
				 .link = (char *)link,
				 .size = link ? strlen(link) : 0};
}

static inline struct io_root *root_of(const struct fixture *fx, unsigned flags)
{
	struct io_root *r = NULL;

	assert_int_equal(io_root_open(fx->root, flags, &r), 0);
	return r;
}

static inline int wr(struct io_wfile *f, uint64_t off, const void *data, uint32_t len, bool *done)
{
	return io_chunk_write(f, off, data, len, io_chunk_hash(data, len), done);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

#endif
