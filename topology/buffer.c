/*
 * buffer.c - a worker's buffer pool on its own NUMA node, and the memory
 * facts the plan needs (free hugepages per node, THP, memory binding).
 *
 * A pool is one anonymous mapping bound to its node with mbind(MPOL_BIND)
 * before any page exists, so wherever a page is faulted it lands on the node.
 * Page size, best first: 1 GiB hugetlb pages (pools of 1 GiB or more), 2 MiB
 * hugetlb pages, transparent hugepages (MADV_HUGEPAGE), normal pages. A
 * hugetlb size is used only when sysfs shows enough free pages of that size
 * on that node: a private hugetlb mapping reserves pages machine-wide, and a
 * fault on a node that has none would kill the process with SIGBUS instead
 * of returning an error. The reason for a fallback is kept in the pool, so
 * the caller reports it once.
 *
 * The pages are not touched here: the worker thread, pinned to its node's
 * CPUs, calls topo_pool_touch, so the page tables and the first cache lines
 * are warm where they are used.
 *
 * Threading: functions are thread-safe; a pool belongs to one worker.
 */
#include "topology/topology.h"
#include "topology/topo_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif

uint64_t topo__huge_free(int node, uint64_t page_bytes)
{
	char path[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/devices/system/node/node%d/hugepages/"
		 "hugepages-%" PRIu64 "kB/free_hugepages",
		 node, page_bytes >> 10);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

bool topo__thp_enabled(void)
{
	char line[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");

	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	return strstr(line, "[always]") || strstr(line, "[madvise]");
}

int topo__membind_nodes(struct topo_bitmap *nodes_out, bool *set_out)
{
	unsigned long mask[TOPO_MAX_NODES / (8 * sizeof(unsigned long)) + 1] = {0};
	unsigned i;
	int mode;

	if (get_mempolicy(&mode, mask, TOPO_MAX_NODES + 1, NULL, 0) != 0) {
		/* A kernel without NUMA support has no policy to honour. */
		if (errno == ENOSYS) {
			*set_out = false;
			return 0;
		}
		return rcp_err(-errno, "get_mempolicy: %s", strerror(errno));
	}
	topo_bitmap_zero(nodes_out);
	for (i = 0; i < TOPO_MAX_NODES; i++)
		if (mask[i / (8 * sizeof(unsigned long))] >> (i % (8 * sizeof(unsigned long))) & 1)
			topo_bitmap_set(nodes_out, i);
	*set_out = mode == MPOL_BIND;
	return 0;
}

static uint64_t round_up(uint64_t v, uint64_t unit)
{
	return (v + unit - 1) / unit * unit;
}

static int pool_mbind(struct topo_pool *p)
{
	unsigned long mask[TOPO_MAX_NODES / (8 * sizeof(unsigned long)) + 1] = {0};
	unsigned bits = 8 * sizeof(unsigned long);

	if (p->node < 0 || p->node >= TOPO_MAX_NODES)
		return rcp_err(-EINVAL, "cannot bind a buffer pool to node %d", p->node);
	mask[(unsigned)p->node / bits] = 1ul << ((unsigned)p->node % bits);
	if (mbind(p->base, p->len, MPOL_BIND, mask, TOPO_MAX_NODES + 1, 0) != 0)
		return rcp_err(-errno, "mbind(%zu bytes, node %d): %s", p->len, p->node,
			       strerror(errno));
	return 0;
}

/*
 * A hugetlb mapping of page-sized pages on the pool's node, faulted in at
 * once. The mmap reservation is machine-wide, not per node, and the per-node
 * free count drops only when pages are faulted: two pools made back to back
 * (a server's and a client's in one host) would both see the same free pages,
 * and the second one's late faults would kill the process with SIGBUS or make
 * memory registration fail. MADV_POPULATE_WRITE faults every page now under
 * the node binding and fails cleanly instead, so the pool falls back.
 */
static bool pool_map_huge(struct topo_pool *p, uint64_t bytes, uint64_t page, int log2)
{
	uint64_t len = round_up(bytes, page);
	void *a;

	if (topo__huge_free(p->node, page) < len / page)
		return false;
	a = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (log2 << MAP_HUGE_SHIFT), -1, 0);
	if (a == MAP_FAILED)
		return false;
	p->base = a;
	p->len = len;
	if (pool_mbind(p) == 0 && madvise(a, len, MADV_POPULATE_WRITE) == 0)
		return true;
	rcp_err_clear();
	munmap(a, len);
	p->base = NULL;
	return false;
}

static int pool_map(struct topo_pool *p, uint64_t bytes)
{
	uint64_t need2m = round_up(bytes, 2ull << 20) >> 21;
	void *a;

	if (bytes >= (1ull << 30) && pool_map_huge(p, bytes, 1ull << 30, 30)) {
		p->page = TOPO_PAGE_1G;
		return 0;
	}
	if (pool_map_huge(p, bytes, 2ull << 20, 21)) {
		p->page = TOPO_PAGE_2M;
		return 0;
	}
	snprintf(p->fallback, sizeof(p->fallback),
		 "node %d has %" PRIu64 " free 2 MiB "
		 "hugepages, %" PRIu64 " needed (reserve them in /proc/sys/vm/nr_hugepages)",
		 p->node, topo__huge_free(p->node, 2ull << 20), need2m);
	p->len = round_up(bytes, 2ull << 20);
	a = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return rcp_err(-errno, "mmap(%zu bytes) for the node %d buffer pool: %s", p->len,
			       p->node, strerror(errno));
	p->base = a;
	p->page = topo__thp_enabled() && madvise(a, p->len, MADV_HUGEPAGE) == 0 ? TOPO_PAGE_THP
										: TOPO_PAGE_4K;
	return pool_mbind(p); /* before any page exists; the worker's first touch faults them */
}

int topo_pool_create(int node, uint64_t bytes, struct topo_pool **pool_out)
{
	struct topo_pool *p;
	int err;

	if (bytes == 0)
		return rcp_err(-EINVAL, "a buffer pool of 0 bytes makes no sense");
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->node = node;
	err = pool_map(p, bytes);
	if (err) {
		if (p->base)
			munmap(p->base, p->len);
		free(p);
		return err;
	}
	*pool_out = p;
	return 0;
}

void topo_pool_destroy(struct topo_pool *pool)
{
	if (!pool)
		return;
	munmap(pool->base, pool->len);
	free(pool);
}

void topo_pool_touch(struct topo_pool *pool)
{
	volatile char *b = pool->base;
	size_t off;

	/* One write per 4 KiB: enough for every page size, cheap for huge ones. */
	for (off = 0; off < pool->len; off += 4096)
		b[off] = 0;
}

static int page_node(const void *addr)
{
	int node = -1;

	if (get_mempolicy(&node, NULL, 0, (void *)addr, MPOL_F_NODE | MPOL_F_ADDR) != 0)
		return -1;
	return node;
}

/* KernelPageSize and AnonHugePages of the mapping that starts at base. */
static int smaps_read(const void *base, uint64_t *page_out, uint64_t *thp_out)
{
	char line[512];
	unsigned long start, end, kb;
	bool in = false, found = false;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return rcp_err(-errno, "cannot read /proc/self/smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = start == (unsigned long)base;
			found |= in;
		} else if (in && sscanf(line, "KernelPageSize: %lu kB", &kb) == 1) {
			*page_out = (uint64_t)kb << 10;
		} else if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1) {
			*thp_out = (uint64_t)kb << 10;
		}
	}
	fclose(f);
	return found ? 0
		     : rcp_err(-ENOENT, "the buffer pool at %p is not in /proc/self/smaps", base);
}

int topo_pool_probe(const struct topo_pool *pool, struct topo_pool_probe *probe_out)
{
	struct topo_pool_probe pr = {.node_first = -1, .node_last = -1};
	int err;

	pr.node_first = page_node(pool->base);
	pr.node_last = page_node((const char *)pool->base + pool->len - 1);
	err = smaps_read(pool->base, &pr.kernel_page, &pr.anon_huge);
	if (err)
		return err;
	*probe_out = pr;
	return 0;
}

bool topo_can_lock_any(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {{0}};

	if (syscall(SYS_capget, &h, d) != 0)
		return false;
	return d[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK);
}

int topo_memlock_check(uint64_t bytes)
{
	struct rlimit rl;
	char need[32], have[32];

	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return rcp_err(-errno, "getrlimit(RLIMIT_MEMLOCK): %s", strerror(errno));
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= bytes || topo_can_lock_any())
		return 0;
	rcp_size_text(bytes, need, sizeof(need));
	rcp_size_text(rl.rlim_cur, have, sizeof(have));
	return rcp_err(-ENOMEM,
		       "the buffer pools need %s of locked memory but the limit is %s: "
		       "raise it with 'ulimit -l unlimited' (or 'ulimit -l %" PRIu64 "', in KiB, "
		       "or memlock in /etc/security/limits.conf), or use a smaller --buffer-mib",
		       need, have, (uint64_t)((bytes + 1023) >> 10));
}

int topo_thread_bind(const struct topo_bitmap *cpus, int node)
{
	unsigned long mask[TOPO_MAX_NODES / (8 * sizeof(unsigned long)) + 1] = {0};
	unsigned bits = 8 * sizeof(unsigned long);
	cpu_set_t set;
	int cpu, err;

	CPU_ZERO(&set);
	for (cpu = topo_bitmap_next(cpus, 0); cpu >= 0 && cpu < CPU_SETSIZE;
	     cpu = topo_bitmap_next(cpus, (unsigned)cpu + 1))
		CPU_SET(cpu, &set);
	err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (err)
		return rcp_err(-err, "cannot pin the node %d worker to its CPUs: %s", node,
			       strerror(err));
	if (node < 0 || node >= TOPO_MAX_NODES)
		return 0;
	/* Preferred, not bound: a full node should slow a worker, not kill it. */
	mask[(unsigned)node / bits] = 1ul << ((unsigned)node % bits);
	if (set_mempolicy(MPOL_PREFERRED, mask, TOPO_MAX_NODES + 1) != 0)
		return rcp_err(-errno, "set_mempolicy(node %d): %s", node, strerror(errno));
	return 0;
}
