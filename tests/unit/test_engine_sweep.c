/*
 * test_engine_sweep.c - every create/init path of the engine, with its Nth
 * allocation failing, N = 1, 2, ... until it succeeds: each failure must be
 * returned as an error (not a crash) and leave nothing behind (the ASan
 * build's leak check fails the binary otherwise). And where the slot
 * memory of a job without pools comes from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc_fail.h"
#include "common/common.h"
#include "engine_harness.h"

#include <errno.h>
#include <sys/mman.h>

#define SWEEP_LIMIT 10000

static void test_job_create_survives_every_allocation_failure(void **state)
{
	struct topo_plan plan;
	struct eng_job *job;
	unsigned n;
	int err;

	(void)state;
	h_plan(&plan, 3, 2, 2);
	for (n = 1; n < SWEEP_LIMIT; n++) {
		job = NULL;
		alloc_fail_arm(n);
		err = eng__job_create(ENG_SENDER, &plan, 4, 8192, false, &job);
		alloc_fail_arm(0);
		if (err == 0)
			break;
		assert_int_equal(err, -ENOMEM);
		assert_null(job);
	}
	print_message("eng__job_create: %u allocations swept\n", n - 1);
	assert_true(n > 3 && n < SWEEP_LIMIT);
	eng__job_destroy(job);
}

static void test_loopback_set_up_survives_every_allocation_failure(void **state)
{
	struct harness h;
	unsigned n;
	int err;

	(void)state;
	for (n = 1; n < SWEEP_LIMIT; n++) {
		memset(&h, 0, sizeof(h));
		h_plan(&h.plan, 2, 1, 2);
		alloc_fail_arm(n);
		err = h_create(&h, 2, 4096, 64 * 1024, NULL);
		alloc_fail_arm(0);
		if (err == 0)
			break;
		assert_int_equal(err, -ENOMEM);
		h_destroy(&h);
	}
	print_message("loopback job pair: %u allocations swept\n", n - 1);
	assert_true(n > 3 && n < SWEEP_LIMIT);
	h_run(&h);
	assert_int_equal(h.snd_err, 0);
	h_destroy(&h);
}

/*
 * Slot memory without pools (TCP's, loopback's) is a mapping of its own,
 * unmapped when the job goes: a TCP end closed with zero-copy sends pending
 * leaves the kernel reading those pages, which the heap would hand out again.
 */
static void test_slot_memory_without_pools_is_unmapped_with_its_job(void **state)
{
	struct topo_plan plan;
	struct eng_job *job = NULL;
	unsigned char v;
	void *mem;

	(void)state;
	h_plan(&plan, 1, 1, 1);
	assert_int_equal(eng__job_create(ENG_SENDER, &plan, 2, 4096, false, &job), 0);
	mem = job->worker[0].tr.mem;
	assert_non_null(mem);
	assert_int_equal((uintptr_t)mem % 4096, 0);
	assert_int_equal(mincore(mem, 1, &v), 0);
	eng__job_destroy(job);
	assert_int_equal(mincore(mem, 1, &v), -1); /* 0: still mapped, the heap's to reuse */
	assert_int_equal(errno, ENOMEM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_create_survives_every_allocation_failure),
		cmocka_unit_test(test_loopback_set_up_survives_every_allocation_failure),
		cmocka_unit_test(test_slot_memory_without_pools_is_unmapped_with_its_job),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
