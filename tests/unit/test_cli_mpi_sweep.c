/*
 * test_cli_mpi_sweep.c - railcp-mpi's directory placing, share cutting and
 * batch packing when memory runs out: each allocation of cli_mpi_dirs_init,
 * cli_mpi_parts, cli_mpi_pack_parts and cli_mpi_batches_pack fails in turn.
 * Each returns -ENOMEM, leaves its output alone (batches: written on
 * success only) and leaks nothing (ASan); then the run that fails none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/mpi.h"
#include "io/io_int.h"

#include "alloc_fail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB 1024u

static void add(struct io_manifest *m, const char *path, enum io_type type, uint64_t size)
{
	static const struct io_extent ext = {0, 3 * KIB};
	struct io_entry *e;

	assert_int_equal(io__manifest_add(m, &e), 0);
	e->path = strdup(path);
	assert_non_null(e->path);
	e->type = type;
	e->mode = type == IO_DIR ? 0755 : 0644;
	if (type == IO_FILE && size) {
		e->ext = malloc(sizeof(*e->ext));
		assert_non_null(e->ext);
		*e->ext = ext;
		e->n_ext = 1;
		e->size = e->data_bytes = ext.len;
		m->data_bytes += ext.len;
	}
	if (type == IO_FILE)
		m->n_files++;
}

/* top/ with a/ (8 files of 3 chunks of 1 KiB) and e/ and e/x/ (empty). */
static struct io_manifest *tree(void)
{
	struct io_manifest *m = calloc(1, sizeof(*m));
	char path[32];
	int i;

	assert_non_null(m);
	add(m, "top", IO_DIR, 0);
	add(m, "top/a", IO_DIR, 0);
	for (i = 0; i < 8; i++) {
		snprintf(path, sizeof(path), "top/a/f%d", i);
		add(m, path, IO_FILE, 1);
	}
	add(m, "top/e", IO_DIR, 0);
	add(m, "top/e/x", IO_DIR, 0);
	return m;
}

static void test_each_failed_allocation_of_the_directories_is_enomem(void **state)
{
	struct io_manifest *m = tree();
	struct cli_mpi_dirs d;
	unsigned n;
	int err;

	(void)state;
	for (n = 1;; n++) {
		alloc_fail_arm(n);
		err = cli_mpi_dirs_init(&d, m, 3);
		alloc_fail_arm(0);
		cli_mpi_dirs_fini(&d);
		if (!err)
			break;
		assert_int_equal(err, -ENOMEM);
	}
	assert_true(n > 1);
	io_manifest_destroy(m);
}

static void test_each_failed_allocation_of_the_parts_is_enomem(void **state)
{
	const struct cli_mpi_caps caps = {
		.entries = 4, .chunks = 6, .memory = IO_MANIFEST_MAX_MEMORY};
	struct io_manifest *m = tree(), **parts = (struct io_manifest **)&parts;
	size_t n_parts = 77, k;
	unsigned n;
	int err;

	(void)state;
	for (n = 1;; n++) {
		alloc_fail_arm(n);
		err = cli_mpi_parts(m, &caps, KIB, &parts, &n_parts);
		alloc_fail_arm(0);
		if (!err)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_true(parts == (struct io_manifest **)&parts && n_parts == 77);
	}
	assert_true(n > 1);
	assert_true(n_parts > 1);
	for (k = 0; k < n_parts; k++)
		io_manifest_destroy(parts[k]);
	free(parts);
	io_manifest_destroy(m);
}

static void test_each_failed_allocation_of_the_packed_parts_is_enomem(void **state)
{
	const struct cli_mpi_caps caps = {
		.entries = 4, .chunks = 6, .memory = IO_MANIFEST_MAX_MEMORY};
	struct io_manifest *m = tree();
	void *buf = &buf;
	size_t len = 77;
	unsigned n;
	int err;

	(void)state;
	for (n = 1;; n++) {
		alloc_fail_arm(n);
		err = cli_mpi_pack_parts(m, &caps, KIB, &buf, &len);
		alloc_fail_arm(0);
		if (!err)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_true(buf == &buf && len == 77);
	}
	assert_true(n > 1);
	free(buf);
	io_manifest_destroy(m);
}

static void test_each_failed_allocation_of_the_batches_is_enomem(void **state)
{
	const struct cli_mpi_caps caps = {
		.entries = 4, .chunks = 6, .memory = IO_MANIFEST_MAX_MEMORY};
	struct io_manifest *m = tree();
	struct cli_mpi_batches b;
	struct cli_mpi_piece *p;
	struct cli_mpi_dirs d;
	uint64_t load[6];
	size_t n_p;
	unsigned n;
	int err;

	(void)state;
	assert_int_equal(cli_mpi_dirs_init(&d, m, 2), 0);
	assert_int_equal(cli_mpi_pool_ranges(m, 2, KIB, &p, &n_p, load), 0);
	for (n = 1;; n++) {
		b = (struct cli_mpi_batches){.n = 77};
		alloc_fail_arm(n);
		err = cli_mpi_batches_pack(m, p, n_p, 2, &d, &caps, KIB, &b);
		alloc_fail_arm(0);
		if (!err)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_true(b.n == 77 && !b.all && !b.off && !b.len); /* left alone */
	}
	assert_true(n > 1);
	assert_true(b.n > 0);
	cli_mpi_batches_fini(&b);
	cli_mpi_dirs_fini(&d);
	free(p);
	io_manifest_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_failed_allocation_of_the_directories_is_enomem),
		cmocka_unit_test(test_each_failed_allocation_of_the_parts_is_enomem),
		cmocka_unit_test(test_each_failed_allocation_of_the_packed_parts_is_enomem),
		cmocka_unit_test(test_each_failed_allocation_of_the_batches_is_enomem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
