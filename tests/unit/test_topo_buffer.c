/*
 * test_topo_buffer.c - node-local pools on this host: the pages a worker
 * thread first-touches are on the pool's node (get_mempolicy), the thread
 * runs where it was pinned, the page size is the one reported, and the
 * memlock check fails with the `ulimit -l` sentence before any allocation.
 *
 * This host has one NUMA node (node 0) and no reserved hugepages; the tests
 * read what the machine offers and assert the matching outcome.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "topology/topology.h"

#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct touch_job {
	struct topo_pool *pool;
	struct topo_bitmap cpus;
	int node;
	int bind_err, probe_err, cpu;
	struct topo_pool_probe probe;
};

/* What a worker does first: pin, touch its own pool, then look. */
static void *touch_thread(void *arg)
{
	struct touch_job *j = arg;

	j->bind_err = topo_thread_bind(&j->cpus, j->node);
	topo_pool_touch(j->pool);
	j->cpu = sched_getcpu();
	j->probe_err = topo_pool_probe(j->pool, &j->probe);
	return NULL;
}

static struct topo_machine *this_host(void)
{
	struct topo_binding b;
	struct topo_machine *m = NULL;

	assert_int_equal(topo_binding_of_process(&b), 0);
	assert_int_equal(topo_machine_create(NULL, &b, &m), 0);
	return m;
}

static void run_touch(struct touch_job *j)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, touch_thread, j), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j->bind_err, 0);
	assert_int_equal(j->probe_err, 0);
}

static void test_pool_pages_land_on_their_node_from_the_worker(void **state)
{
	struct topo_machine *m = this_host();
	const struct topo_node *n = &m->node[0];
	struct touch_job j;
	uint64_t bytes = 6ull << 20;

	(void)state;
	memset(&j, 0, sizeof(j));
	j.node = n->id;
	j.cpus = n->cpus;
	assert_int_equal(topo_pool_create(n->id, bytes, &j.pool), 0);
	assert_int_equal(j.pool->len, bytes);
	run_touch(&j);
	assert_int_equal(j.probe.node_first, n->id);
	assert_int_equal(j.probe.node_last, n->id);
	assert_true(topo_bitmap_isset(&n->cpus, (unsigned)j.cpu));
	if (n->huge_2m >= 3) {
		assert_int_equal(j.pool->page, TOPO_PAGE_2M);
		assert_int_equal(j.probe.kernel_page, 2ull << 20);
		assert_string_equal(j.pool->fallback, "");
	} else {
		assert_int_equal(j.pool->page, m->thp ? TOPO_PAGE_THP : TOPO_PAGE_4K);
		assert_int_equal(j.probe.kernel_page, (uint64_t)sysconf(_SC_PAGESIZE));
		assert_true(j.probe.anon_huge <= bytes);
		assert_non_null(strstr(j.pool->fallback, "free 2 MiB hugepages, 3 needed"));
	}
	topo_pool_destroy(j.pool);
	topo_machine_destroy(m);
}

static void test_worker_runs_on_the_one_cpu_it_was_given(void **state)
{
	struct topo_machine *m = this_host();
	struct touch_job j;
	int cpu = -1, c;

	(void)state;
	for (c = topo_bitmap_next(&m->node[0].cpus, 0); c >= 0;
	     c = topo_bitmap_next(&m->node[0].cpus, (unsigned)c + 1))
		cpu = c; /* the last allowed CPU: not simply where the test started */
	memset(&j, 0, sizeof(j));
	topo_bitmap_set(&j.cpus, (unsigned)cpu);
	j.node = m->node[0].id;
	assert_int_equal(topo_pool_create(j.node, 1ull << 20, &j.pool), 0);
	run_touch(&j);
	assert_int_equal(j.cpu, cpu);
	topo_pool_destroy(j.pool);
	topo_machine_destroy(m);
}

static void test_pool_on_missing_node_fails_cleanly(void **state)
{
	struct topo_pool *p = NULL;
	int err;

	(void)state;
	err = topo_pool_create(TOPO_MAX_NODES - 1, 1ull << 20, &p);
	assert_true(err < 0);
	assert_null(p);
	assert_non_null(strstr(rcp_err_msg(err), "node 63"));
	assert_int_equal(topo_pool_create(0, 0, &p), -EINVAL);
	topo_pool_destroy(NULL);
}

/* Drop CAP_IPC_LOCK from this thread's effective set (root has it): the limit applies again. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {{0}};

	if (syscall(SYS_capget, &h, d) != 0)
		return -1;
	d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
	return (int)syscall(SYS_capset, &h, d);
}

/* In a child: a soft limit of 64 KiB and no CAP_IPC_LOCK. */
static void memlock_low_child(void)
{
	struct rlimit low;
	int err;

	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &low), 0);
	if (low.rlim_max == RLIM_INFINITY || low.rlim_max >= 64 << 10)
		low.rlim_cur = 64 << 10;
	else
		low.rlim_cur = low.rlim_max;
	if (setrlimit(RLIMIT_MEMLOCK, &low) != 0 || drop_ipc_lock() != 0)
		_exit(3);
	if (topo_can_lock_any())
		_exit(4);
	err = topo_memlock_check(128ull << 20);
	if (err != -ENOMEM ||
	    strcmp(rcp_err_msg(err),
		   "the buffer pools need 128 MiB of locked memory but the limit is 64 KiB: "
		   "raise it with 'ulimit -l unlimited' (or 'ulimit -l 131072', in KiB, or "
		   "memlock in /etc/security/limits.conf), or use a smaller --buffer-mib"))
		_exit(5);
	_exit(topo_memlock_check(64 << 10) == 0 ? 0 : 6);
}

static void test_memlock_below_pools_names_ulimit(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		memlock_low_child();
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* CAP_IPC_LOCK lets the kernel pin past the limit, so the check lets it through. */
static void test_memlock_check_accepts_cap_ipc_lock(void **state)
{
	struct rlimit saved, low;

	(void)state;
	if (!topo_can_lock_any()) {
		print_message(
			"skipped: this process has no CAP_IPC_LOCK (run the tests as root)\n");
		skip();
	}
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &saved), 0);
	low = saved;
	low.rlim_cur = 0;
	assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &low), 0);
	assert_int_equal(topo_memlock_check(128ull << 20), 0);
	assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &saved), 0);
}

static void test_memlock_unlimited_passes_in_child(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit inf = {RLIM_INFINITY, RLIM_INFINITY};

		/* Raising the hard limit needs CAP_SYS_RESOURCE: skip that half without it. */
		if (setrlimit(RLIMIT_MEMLOCK, &inf) != 0)
			_exit(topo_memlock_check(1) == 0 ? 0 : 1);
		_exit(topo_memlock_check(1ull << 40) == 0 ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_process_binding_matches_affinity(void **state)
{
	struct topo_binding b;
	cpu_set_t set;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_int_equal(topo_binding_of_process(&b), 0);
	assert_true(b.cpus_set);
	assert_int_equal(topo_bitmap_count(&b.cpus), (unsigned)CPU_COUNT(&set));
	assert_false(b.nodes_set); /* the test runs without numactl --membind */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_pages_land_on_their_node_from_the_worker),
		cmocka_unit_test(test_worker_runs_on_the_one_cpu_it_was_given),
		cmocka_unit_test(test_pool_on_missing_node_fails_cleanly),
		cmocka_unit_test(test_memlock_below_pools_names_ulimit),
		cmocka_unit_test(test_memlock_check_accepts_cap_ipc_lock),
		cmocka_unit_test(test_memlock_unlimited_passes_in_child),
		cmocka_unit_test(test_process_binding_matches_affinity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
