/*
 * test_io_sweep.c - io/'s allocating paths with their Nth allocation
 * failing, N = 1, 2, ... until they succeed: each failure must come back
 * as -ENOMEM with nothing written to the output and nothing leaked (the
 * ASan build's leak check fails the binary otherwise), and nothing left on
 * disk by the receiver.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc_fail.h"
#include "common/common.h"
#include "io/io.h"
#include "test_io_tree.h"

#define SWEEP_LIMIT 10000

static char base[4096];

static int setup(void **state)
{
	(void)state;
	t_mkdtemp(base);
	t_tree(base);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	t_rm_rf(base);
	return 0;
}

static void test_walk_survives_every_allocation_failure(void **state)
{
	struct io_manifest *m;
	char p[4096];
	const char *src[] = {p};
	unsigned n;
	int err;

	(void)state;
	t_path(p, base, "top");
	for (n = 1; n < SWEEP_LIMIT; n++) {
		m = NULL;
		alloc_fail_arm(n);
		err = io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m);
		alloc_fail_arm(0);
		if (err == 0)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_null(m);
	}
	print_message("io_manifest_walk: %u allocations swept\n", n - 1);
	assert_true(n > 10 && n < SWEEP_LIMIT);
	assert_int_equal(m->n, 7);
	io_manifest_destroy(m);
}

static void test_decode_and_plan_survive_every_allocation_failure(void **state)
{
	struct io_manifest *m = NULL, *d;
	struct io_plan *plan;
	char p[4096];
	const char *src[] = {p};
	unsigned n;
	size_t len;
	void *buf;
	int err;

	(void)state;
	t_path(p, base, "top");
	assert_int_equal(io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	assert_int_equal(io_manifest_encode(m, &buf, &len), 0);
	for (n = 1; n < SWEEP_LIMIT; n++) {
		d = NULL;
		alloc_fail_arm(n);
		err = io_manifest_decode(buf, len, &d);
		alloc_fail_arm(0);
		if (err == 0)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_null(d);
	}
	print_message("io_manifest_decode: %u allocations swept\n", n - 1);
	assert_true(n > 10 && n < SWEEP_LIMIT);
	assert_int_equal(d->n, m->n);
	for (n = 1; n < SWEEP_LIMIT; n++) {
		plan = NULL;
		alloc_fail_arm(n);
		err = io_plan_create(d, 4096, &plan);
		alloc_fail_arm(0);
		if (err == 0)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_null(plan);
	}
	assert_int_equal(n, 3); /* the plan and its chunk array */
	assert_int_equal(plan->n, 1 + 2 + 1 + 1);
	io_plan_destroy(plan);
	io_manifest_destroy(d);
	io_manifest_destroy(m);
	free(buf);
}

static void test_receiver_survives_every_allocation_failure(void **state)
{
	struct io_extent x[2] = {{0, 4096}, {SPARSE_FAR, 4096}};
	struct io_entry e = {.path = "top/sparse",
			     .type = IO_FILE,
			     .mode = 0600,
			     .size = SPARSE_SIZE,
			     .ext = x,
			     .n_ext = 2,
			     .data_bytes = 8192};
	struct io_root *r;
	struct io_wfile *w;
	unsigned n;
	int err;

	(void)state;
	for (n = 1; n < SWEEP_LIMIT; n++) {
		r = NULL;
		w = NULL;
		alloc_fail_arm(n);
		err = io_root_open(base, 0, &r);
		if (!err)
			err = io_wfile_open(r, &e, 4096, &w);
		alloc_fail_arm(0);
		if (err == 0)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_null(w);
		io_root_close(r);
		assert_int_equal(t_count_tmp(base), 0);
	}
	print_message("io_root_open + io_wfile_open: %u allocations swept\n", n - 1);
	assert_true(n > 3 && n < SWEEP_LIMIT);
	io_wfile_abort(w);
	io_root_close(r);
	assert_int_equal(t_count_tmp(base), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_survives_every_allocation_failure),
		cmocka_unit_test(test_decode_and_plan_survive_every_allocation_failure),
		cmocka_unit_test(test_receiver_survives_every_allocation_failure),
	};

	rcp_log_set_level(RCP_LOG_SILENT); /* no notice about the fixture's fifo */
	return cmocka_run_group_tests(tests, setup, teardown);
}
