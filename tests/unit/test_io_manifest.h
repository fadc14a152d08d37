/*
 * test_io_manifest.h - what the manifest's tests (test_io_manifest*.c)
 * share: the names of railcp's temporaries, and manifests built by hand,
 * byte by byte, so that a test can say what a hostile peer would send and
 * check that decoding refuses it with the sentence it names. Include it
 * after cmocka.h. Its helpers are static: each test file has its own copy;
 * none is thread-safe (a struct mb is one test's scratch).
 */
#ifndef RAILCP_TEST_IO_MANIFEST_H
#define RAILCP_TEST_IO_MANIFEST_H

#include "common/common.h"
#include "io/io.h"

#include <stdint.h>
#include <string.h>

/* What a receiver leaves while it works, or when it is killed: never data. */
#define TMP_A ".railcp-tmp-0123456789abcdef"
#define TMP_B ".railcp-tmp-fedcba9876543210"

struct mb {
	uint8_t b[16384];
	size_t n;
};

static inline void mb_u(struct mb *m, uint64_t v, unsigned bytes)
{
	unsigned i;

	for (i = 0; i < bytes; i++)
		m->b[m->n++] = (uint8_t)(v >> (8 * i));
}

static inline void mb_hdr(struct mb *m, unsigned version, uint64_t count)
{
	m->n = 0;
	memcpy(m->b, "RCPM", 4);
	m->n = 4;
	mb_u(m, version, 2);
	mb_u(m, 0, 2);
	mb_u(m, count, 8);
}

static inline void mb_entry(struct mb *m, unsigned type, const char *path, size_t plen,
			    uint32_t mode, uint64_t size)
{
	mb_u(m, type, 1);
	mb_u(m, 0, 1);
	mb_u(m, plen, 2);
	mb_u(m, mode, 4);
	mb_u(m, 1000, 8);
	mb_u(m, size, 8);
	memcpy(m->b + m->n, path, plen);
	m->n += plen;
}

static inline void mb_dir(struct mb *m, const char *path)
{
	mb_entry(m, IO_DIR, path, strlen(path), 0755, 0);
}

/* A file with n extents given as (offset, length) pairs. */
static inline void mb_file(struct mb *m, const char *path, uint64_t size, unsigned n,
			   const uint64_t *pairs)
{
	unsigned i;

	mb_entry(m, IO_FILE, path, strlen(path), 0644, size);
	mb_u(m, n, 4);
	for (i = 0; i < 2 * n; i++)
		mb_u(m, pairs[i], 8);
}

static inline void expect_bad(const struct mb *m, int err, const char *words)
{
	struct io_manifest *d = NULL;
	int got = io_manifest_decode(m->b, m->n, &d);

	if (got != err || !strstr(rcp_err_msg(got), words))
		fail_msg("got %d \"%s\", wanted %d with \"%s\"", got, rcp_err_msg(got), err, words);
	assert_null(d);
}

static inline void expect_good(const struct mb *m, size_t n)
{
	struct io_manifest *d = NULL;

	assert_int_equal(io_manifest_decode(m->b, m->n, &d), 0);
	assert_int_equal(d->n, n);
	io_manifest_destroy(d);
}

#endif
