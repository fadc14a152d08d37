/*
 * test_cli_mpi.c - what railcp-mpi does without MPI (cli/mpi.h): the
 * greedy balance by bytes (the loads it gives, its bound of the mean plus
 * the largest file, empty files spread by count), the shares of a walked
 * tree (each file and symlink in one share, every directory in all), a
 * share packed and unpacked whole (sources, devices and inodes too) and
 * every cut of it refused, HOSTS:DST read from the line and from @FILE, and
 * a pull's items (files, links, empty directories; a name no --files-from
 * holds folded into its directory), a rank's share back as filters, a
 * share too large for one --files-from refused, and failover: which
 * errors say a server is gone, the order of the servers a rank moves
 * to, and the probe of a server's port; and a walk whose shares cannot fit
 * one scatter refused before they are packed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/mpi.h"
#include "common/common.h"
#include "test_io_tree.h"

static void test_the_largest_go_first_to_the_lightest_rank(void **state)
{
	const uint64_t bytes[] = {5, 10, 0, 7, 1, 5, 3};
	unsigned owner[7];
	uint64_t load[3];

	(void)state;
	assert_int_equal(cli_mpi_balance(bytes, 7, 3, owner, load), 0);
	/* 10 -> 0, 7 -> 1, 5 -> 2, 5 -> 2, 3 -> 1, 1 -> 0 (fewest files), 0 -> 1 */
	assert_int_equal(load[0], 11);
	assert_int_equal(load[1], 10);
	assert_int_equal(load[2], 10);
	assert_int_equal(owner[1], 0);
	assert_int_equal(owner[3], 1);
	assert_int_equal(owner[0], 2);
	assert_int_equal(owner[5], 2);
	assert_int_equal(owner[6], 1);
	assert_int_equal(owner[4], 0);
}

static void test_no_rank_gets_more_than_the_mean_and_the_largest(void **state)
{
	enum { N = 1000, R = 7 };
	static uint64_t bytes[N];
	unsigned owner[N];
	uint64_t load[R], sum = 0, max = 0, got[R] = {0};
	unsigned seed = 12345, r, i;

	(void)state;
	for (i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		bytes[i] = (uint64_t)1 << (seed >> 16) % 30; /* 1 byte to 512 MiB */
		sum += bytes[i];
		max = bytes[i] > max ? bytes[i] : max;
	}
	assert_int_equal(cli_mpi_balance(bytes, N, R, owner, load), 0);
	for (i = 0; i < N; i++) {
		assert_true(owner[i] < R);
		got[owner[i]] += bytes[i];
	}
	for (r = 0; r < R; r++) {
		assert_int_equal(got[r], load[r]);
		assert_true(load[r] <= sum / R + max);
	}
}

static void test_empty_files_spread_by_count(void **state)
{
	uint64_t bytes[9] = {0}, load[3];
	unsigned owner[9], count[3] = {0}, i;

	(void)state;
	assert_int_equal(cli_mpi_balance(bytes, 9, 3, owner, load), 0);
	for (i = 0; i < 9; i++)
		count[owner[i]]++;
	assert_int_equal(count[0], 3);
	assert_int_equal(count[1], 3);
	assert_int_equal(count[2], 3);
}

static struct io_manifest *walked_tree(char base[4096])
{
	struct io_manifest *m = NULL;
	char top[4096];
	const char *src[1] = {top};

	t_mkdtemp(base);
	t_tree(base);
	t_path(top, base, "top");
	assert_int_equal(io_manifest_walk(NULL, src, 1, IO_WALK_RECURSIVE, NULL, &m), 0);
	return m;
}

static void tree_remove(const char *base)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	assert_int_equal(system(cmd), 0);
}

static const struct io_entry *find(const struct io_manifest *m, const char *path)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->entry[i].path, path))
			return &m->entry[i];
	return NULL;
}

static void test_each_file_is_in_one_share_and_each_directory_in_all(void **state)
{
	struct io_manifest *m, *share[2];
	unsigned owner[16], r;
	uint64_t load[2], bytes = 0;
	char base[4096];
	size_t i;

	(void)state;
	m = walked_tree(base);
	assert_true(m->n <= 16);
	assert_int_equal(cli_mpi_assign(m, 2, owner, load), 0);
	for (r = 0; r < 2; r++) {
		assert_int_equal(cli_mpi_share(m, owner, r, NULL, &share[r]), 0);
		bytes += share[r]->data_bytes;
		assert_int_equal(share[r]->data_bytes, load[r]);
	}
	assert_int_equal(bytes, m->data_bytes);
	assert_true(load[0] && load[1]);
	for (i = 0; i < m->n; i++) {
		const struct io_entry *e = &m->entry[i];
		bool in0 = find(share[0], e->path), in1 = find(share[1], e->path);

		if (e->type == IO_DIR)
			assert_true(in0 && in1);
		else
			assert_true(in0 != in1);
	}
	assert_int_equal(share[0]->n + share[1]->n, m->n + 2); /* top and top/sub twice */
	io_manifest_destroy(share[0]);
	io_manifest_destroy(share[1]);
	io_manifest_destroy(m);
	tree_remove(base);
}

static void test_a_share_comes_back_whole_and_a_cut_one_is_refused(void **state)
{
	struct io_manifest *m, *back = NULL;
	char base[4096];
	void *buf;
	size_t len, i, cut;

	(void)state;
	m = walked_tree(base);
	assert_int_equal(cli_mpi_pack(m, &buf, &len), 0);
	assert_int_equal(cli_mpi_unpack(buf, len, &back), 0);
	assert_int_equal(back->n, m->n);
	assert_int_equal(back->data_bytes, m->data_bytes);
	for (i = 0; i < m->n; i++) {
		assert_string_equal(back->entry[i].path, m->entry[i].path);
		assert_string_equal(back->entry[i].src, m->entry[i].src);
		assert_int_equal(back->entry[i].ino, m->entry[i].ino);
		assert_int_equal(back->entry[i].dev, m->entry[i].dev);
		assert_int_equal(back->entry[i].size, m->entry[i].size);
	}
	assert_true(m->entry[1].ino != 0);
	io_manifest_destroy(back);
	for (cut = 0; cut < len; cut++) {
		back = (struct io_manifest *)1;
		assert_int_equal(cli_mpi_unpack(buf, cut, &back), -EBADMSG);
		assert_null(back);
	}
	free(buf);
	io_manifest_destroy(m);
	tree_remove(base);
}

static void test_hosts_and_ports_before_dst(void **state)
{
	struct cli_mpi_server *s = NULL;
	const char *dst = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(cli_mpi_servers("a:7001,b,c:7003:x/y", &s, &n, &dst), 0);
	assert_int_equal(n, 3);
	assert_string_equal(s[0].host, "a");
	assert_int_equal(s[0].port, 7001);
	assert_string_equal(s[1].host, "b");
	assert_int_equal(s[1].port, 0);
	assert_string_equal(s[2].host, "c");
	assert_int_equal(s[2].port, 7003);
	assert_string_equal(dst, "x/y");
	free(s);
	assert_int_equal(cli_mpi_servers("h1,h2:", &s, &n, &dst), 0);
	assert_int_equal(n, 2);
	assert_string_equal(s[1].host, "h2");
	assert_string_equal(dst, "");
	free(s);
}

static void test_bad_hosts_are_usage_errors(void **state)
{
	static const char *const bad[] = {"a,b",       "a,,b:x",	  ":x",
					  "a:70000:x", "@/nonexistent:x", "@:x"};
	struct cli_mpi_server *s = NULL;
	const char *dst;
	size_t n, i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cli_mpi_servers(bad[i], &s, &n, &dst), CLI_EXIT_USAGE);
	assert_null(s);
}

static void test_servers_from_a_file(void **state)
{
	static const char text[] = "# the movers' servers\n"
				   "s1:7001 s2\n"
				   "\n"
				   "s3:7003, s4 # the last\n";
	struct cli_mpi_server *s = NULL;
	char base[4096], path[4096], arg[4200];
	const char *dst = NULL;
	size_t n = 0;

	(void)state;
	t_mkdtemp(base);
	t_write(base, "servers", text, sizeof(text) - 1, 0600);
	t_path(path, base, "servers");
	snprintf(arg, sizeof(arg), "@%s:out", path);
	assert_int_equal(cli_mpi_servers(arg, &s, &n, &dst), 0);
	assert_int_equal(n, 4);
	assert_string_equal(s[0].host, "s1");
	assert_int_equal(s[0].port, 7001);
	assert_string_equal(s[1].host, "s2");
	assert_int_equal(s[2].port, 7003);
	assert_string_equal(s[3].host, "s4");
	assert_string_equal(dst, "out");
	free(s);
	t_write(base, "servers", "s1:x\n", 5, 0600);
	assert_int_equal(cli_mpi_servers(arg, &s, &n, &dst), CLI_EXIT_USAGE);
	tree_remove(base);
}

/*
 * Two HOSTS of the same servers give lists equal byte for byte (a job's
 * HOSTS:PATH arguments are compared so): the bytes past a name are set, not
 * what the allocator's last user left there. Each list is parsed into
 * memory just freed dirty, in blocks of the list's size.
 */
static void test_the_same_servers_give_equal_lists(void **state)
{
	struct cli_mpi_server *s[2];
	const char *dst = NULL;
	size_t n[2], i;

	(void)state;
	for (i = 0; i < 2; i++) {
		char *dirty = malloc(sizeof(struct cli_mpi_server));

		assert_non_null(dirty);
		memset(dirty, i ? 0x55 : 0xaa, sizeof(struct cli_mpi_server));
		free(dirty);
		assert_int_equal(cli_mpi_servers("h1:7001:x", &s[i], &n[i], &dst), 0);
	}
	assert_int_equal(n[0], 1);
	assert_int_equal(n[1], 1);
	assert_memory_equal(s[0], s[1], sizeof(*s[0]));
	free(s[0]);
	free(s[1]);
}

/* A walk's list as a dry run gives it, by hand: paths, types and bytes. */
struct ent {
	const char *path;
	enum io_type type;
	uint64_t bytes;
};

static struct io_manifest *listed(const struct ent *e, size_t n, struct io_entry *buf)
{
	static struct io_manifest m;
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (struct io_entry){.path = (char *)e[i].path,
					   .type = e[i].type,
					   .data_bytes = e[i].bytes,
					   .size = e[i].bytes};
	m = (struct io_manifest){.entry = buf, .n = n, .cap = n};
	return &m;
}

static void assert_item(const struct cli_mpi_pull *p, size_t i, uint32_t src, const char *rel,
			uint64_t bytes)
{
	assert_true(i < p->n);
	assert_int_equal(p->item[i].src, src);
	assert_string_equal(p->item[i].rel, rel);
	assert_int_equal(p->item[i].bytes, bytes);
}

static void test_a_pull_shares_files_links_and_empty_directories(void **state)
{
	const struct ent tree[] = {
		{"top", IO_DIR, 0},	   {"top/a", IO_DIR, 0},     {"top/a/f1", IO_FILE, 10},
		{"top/a/f2", IO_FILE, 20}, {"top/e", IO_DIR, 0},     {"top/e2", IO_DIR, 0},
		{"top/e2/sub", IO_DIR, 0}, {"top/l", IO_SYMLINK, 0}, {"top/z", IO_FILE, 5},
	};
	const struct ent file[] = {{"big", IO_FILE, 99}};
	struct cli_mpi_pull p = {0};
	struct io_entry buf[9];

	(void)state;
	assert_int_equal(cli_mpi_pull_items(&p, 0, listed(tree, 9, buf), true), 0);
	assert_int_equal(p.n, 6);
	assert_item(&p, 0, 0, "a/f1", 10);
	assert_item(&p, 1, 0, "a/f2", 20);
	assert_item(&p, 2, 0, "e", 0);
	assert_item(&p, 3, 0, "e2/sub", 0);
	assert_item(&p, 4, 0, "l", 0);
	assert_item(&p, 5, 0, "z", 5);
	/* contents only (SRC/.): no top to take off */
	assert_int_equal(cli_mpi_pull_items(&p, 1, listed(tree + 1, 8, buf), false), 0);
	assert_int_equal(p.n, 12);
	assert_item(&p, 6, 1, "top/a/f1", 10);
	assert_item(&p, 11, 1, "top/z", 5);
	/* a file: pulled whole */
	assert_int_equal(cli_mpi_pull_items(&p, 2, listed(file, 1, buf), true), 0);
	assert_item(&p, 12, 2, "", 99);
	cli_mpi_pull_free(&p);
}

static void test_a_name_no_list_holds_travels_with_its_directory(void **state)
{
	const struct ent tree[] = {
		{"top", IO_DIR, 0},
		{"top/a", IO_DIR, 0},
		{"top/a/a0", IO_FILE, 3},
		{"top/a/b\xff", IO_DIR, 0},
		{"top/a/b\xff/c", IO_FILE, 7},
		{"top/a/f1", IO_FILE, 10},
		{"top/ab", IO_FILE, 1},
		{"top/z\nnl", IO_FILE, 2},
	};
	struct cli_mpi_pull p = {0};
	struct io_manifest *m = NULL;
	struct io_entry buf[8];
	char base[4096];

	(void)state;
	/* top/a/b\xff: top/a whole (a0 folded in, f1 with it); top/ab is no part of top/a */
	assert_int_equal(cli_mpi_pull_items(&p, 0, listed(tree, 7, buf), true), 0);
	assert_int_equal(p.n, 2);
	assert_item(&p, 0, 0, "a", 20);
	assert_item(&p, 1, 0, "ab", 1);
	/* a bad name just beneath the top: the source whole */
	assert_int_equal(cli_mpi_pull_items(&p, 1, listed(tree, 8, buf), true), 0);
	assert_int_equal(p.n, 3);
	assert_item(&p, 2, 1, "", 23);
	cli_mpi_pull_free(&p);
	/* a walked tree with a name that is not UTF-8 at its top */
	m = walked_tree(base);
	assert_int_equal(cli_mpi_pull_items(&p, 0, m, true), 0);
	assert_int_equal(p.n, 1);
	assert_item(&p, 0, 0, "", m->data_bytes);
	cli_mpi_pull_free(&p);
	io_manifest_destroy(m);
	tree_remove(base);
}

static void test_a_pull_share_comes_back_as_filters(void **state)
{
	const struct ent tree[] = {
		{"top", IO_DIR, 0},	{"top/a", IO_FILE, 50}, {"top/b", IO_FILE, 40},
		{"top/c", IO_FILE, 30}, {"top/d", IO_FILE, 20}, {"top/e", IO_DIR, 0},
	};
	const struct ent file[] = {{"one", IO_FILE, 45}};
	struct cli_mpi_pull p = {0};
	struct cli_mpi_task t[2];
	struct io_entry buf[6];
	unsigned owner[7];
	uint64_t bytes[7], load[2];
	void *share;
	size_t len, i;

	(void)state;
	p.n_src = 2; /* as cli_mpi_pull_list sets them: two sources, their lists not kept */
	assert_non_null(p.src = calloc(p.n_src, sizeof(*p.src)));
	p.src[0].name = "top";
	p.src[1].name = "one";
	assert_int_equal(cli_mpi_pull_items(&p, 0, listed(tree, 6, buf), true), 0);
	assert_int_equal(cli_mpi_pull_items(&p, 1, listed(file, 1, buf), true), 0);
	assert_int_equal(p.n, 6);
	for (i = 0; i < p.n; i++)
		bytes[i] = p.item[i].bytes;
	assert_int_equal(cli_mpi_balance(bytes, p.n, 2, owner, load), 0);
	assert_int_equal(load[0], 100); /* a 50, c 30, d 20 / one 45, b 40, e 0 */
	assert_int_equal(load[1], 85);
	assert_int_equal(cli_mpi_pull_fits(&p, owner, 2), 0);
	assert_int_equal(cli_mpi_pull_pack(&p, owner, 1, &share, &len), 0);
	assert_int_equal(cli_mpi_pull_unpack(share, len, 2, t), 0);
	assert_false(t[0].whole);
	assert_non_null(t[0].filter);
	assert_int_equal(io_filter_n_paths(t[0].filter), 2);
	assert_string_equal(io_filter_path_at(t[0].filter, 0), "b");
	assert_string_equal(io_filter_path_at(t[0].filter, 1), "e");
	assert_true(t[1].whole);
	assert_null(t[1].filter);
	io_filter_destroy(t[0].filter);
	/* cut inside an item, or naming a source the job lacks: refused */
	assert_int_equal(cli_mpi_pull_unpack(share, 3, 2, t), -EBADMSG);
	assert_int_equal(cli_mpi_pull_unpack(share, len, 0, t), -EBADMSG);
	free(share);
	assert_int_equal(cli_mpi_pull_pack(&p, owner, 0, &share, &len), 0);
	assert_int_equal(cli_mpi_pull_unpack(share, len, 2, t), 0);
	assert_false(t[1].whole);
	assert_null(t[1].filter);
	assert_int_equal(io_filter_n_paths(t[0].filter), 3);
	assert_string_equal(io_filter_path_at(t[0].filter, 2), "d");
	io_filter_destroy(t[0].filter);
	free(share);
	cli_mpi_pull_free(&p);
}

static void test_a_share_no_files_from_holds_is_refused(void **state)
{
	size_t n = IO_FILTER_MAX_PATHS + 1, i;
	struct cli_mpi_item *item = calloc(n, sizeof(*item));
	unsigned *owner = calloc(n, sizeof(*owner));
	struct cli_mpi_pull p = {.item = item, .n = n, .n_src = 1};
	struct cli_mpi_source src = {.name = "tree"};

	(void)state;
	assert_non_null(item);
	assert_non_null(owner);
	p.src = &src;
	for (i = 0; i < n; i++)
		item[i] = (struct cli_mpi_item){.rel = "f", .bytes = 1};
	assert_int_equal(cli_mpi_pull_fits(&p, owner, 2), -E2BIG);
	assert_non_null(strstr(rcp_err_msg(-E2BIG), "rank 0's share of tree"));
	for (i = 0; i < n; i++)
		owner[i] = i % 2;
	assert_int_equal(cli_mpi_pull_fits(&p, owner, 2), 0);
	free(item);
	free(owner);
}

/*
 * --delete's pass after the ranks is one session of the whole job: a job
 * over one session's chunks or entries is refused before anything moves.
 */
static void test_a_job_too_big_for_the_delete_pass_is_refused(void **state)
{
	struct io_extent big = {0, 8ull << 30}; /* 8 GiB: 2 Mi chunks of 4 KiB */
	struct io_entry e = {.path = "big",
			     .type = IO_FILE,
			     .size = big.len,
			     .ext = &big,
			     .n_ext = 1,
			     .data_bytes = big.len};
	struct io_manifest one = {.entry = &e, .n = 1, .n_files = 1, .data_bytes = big.len};
	const struct io_manifest *two[] = {&one, &one}, *three[] = {&one, &one, &one};
	const struct cli_mpi_caps caps = cli_mpi_server_caps();
	int err;

	(void)state;
	assert_int_equal(cli_mpi_delete_fits(two, 2, &caps, 4096), 0); /* 4 Mi chunks: the limit */
	err = cli_mpi_delete_fits(three, 3, &caps, 4096);
	assert_int_equal(err, -EFBIG);
	assert_non_null(strstr(rcp_err_msg(err), "whole job's 6291456 chunks of 4 KiB"));
	assert_int_equal(cli_mpi_delete_fits(three, 3, &caps, 1 << 20), 0);
	one.n = IO_MANIFEST_MAX_ENTRIES / 2 + 1; /* counted first: never read */
	err = cli_mpi_delete_fits(two, 2, &caps, 1 << 20);
	assert_int_equal(err, -EFBIG);
	assert_non_null(strstr(rcp_err_msg(err), "entries are more than"));
}

/*
 * --delete's pass decodes the whole job as one list: one within the
 * entries and chunks but over the memory to decode it (long paths) is
 * refused before anything moves, counted as the decoder counts it: one
 * list's base for all the lists' entries, and each entry's cost.
 */
static void test_a_job_too_big_to_decode_for_the_delete_pass_is_refused(void **state)
{
	char path[121];
	struct io_entry e[3] = {{.path = path, .type = IO_DIR},
				{.path = path, .type = IO_DIR},
				{.path = path, .type = IO_DIR}};
	struct io_manifest one = {.entry = e, .n = 3};
	const struct io_manifest *two[] = {&one, &one};
	uint64_t need;
	struct cli_mpi_caps caps = cli_mpi_server_caps();
	int err;

	(void)state;
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = 0;
	need = io_manifest_decoded_base(6) + 6 * io_manifest_decoded_cost(&e[0]);
	caps.memory = need;
	assert_int_equal(cli_mpi_delete_fits(two, 2, &caps, 4096), 0);
	caps.memory = need - 1;
	err = cli_mpi_delete_fits(two, 2, &caps, 4096);
	assert_int_equal(err, -EFBIG);
	assert_non_null(strstr(rcp_err_msg(err), "to decode, more than"));
}

/*
 * A connection refused, reset or closed: gone. A refusal of the copy's
 * own (its error frame, a bad key, a missing source, a full disk, a busy
 * server): not gone. -EIO (the fabric's "every rail failed", or a disk),
 * -ECONNABORTED (a refusal, or a shutdown), no answer in time (a dead
 * host, a slow server, this rank's stalled disk) and an unreachable host
 * or network (maybe this rank's own interface): asked of the server's port.
 */
static void test_errors_say_whether_a_server_is_gone(void **state)
{
	static const int gone[] = {ECONNREFUSED, ECONNRESET, EPIPE};
	static const int not_gone[] = {ENOENT, ENOSPC, EACCES, EPERM, EBUSY, EPROTO, EINTR, 0};
	static const int ask[] = {EIO,	       ECONNABORTED, ETIMEDOUT, EHOSTUNREACH,
				  ENETUNREACH, ENETDOWN,     ENOTCONN};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		assert_int_equal(cli_mpi_server_gone(-gone[i]), CLI_MPI_GONE);
	for (i = 0; i < sizeof(not_gone) / sizeof(not_gone[0]); i++)
		assert_int_equal(cli_mpi_server_gone(-not_gone[i]), CLI_MPI_NOT_GONE);
	for (i = 0; i < sizeof(ask) / sizeof(ask[0]); i++)
		assert_int_equal(cli_mpi_server_gone(-ask[i]), CLI_MPI_GONE_ASK);
}

/*
 * The ranks of a server that is gone go one to each other server in turn,
 * and each rank's moves take every other server once, never its home.
 */
static void test_a_gone_servers_ranks_spread_over_the_others(void **state)
{
	unsigned rank, moves, seen;
	size_t s;

	(void)state;
	/* 4 servers, 12 ranks: server 1's ranks 1, 5 and 9 move to 2, 3 and 0. */
	assert_int_equal(cli_mpi_next_server(1, 4, 1), 2);
	assert_int_equal(cli_mpi_next_server(5, 4, 1), 3);
	assert_int_equal(cli_mpi_next_server(9, 4, 1), 0);
	for (rank = 0; rank < 12; rank++) {
		assert_int_equal(cli_mpi_next_server(rank, 4, 0), rank % 4);
		for (seen = 0, moves = 1; moves < 4; moves++) {
			s = cli_mpi_next_server(rank, 4, moves);
			assert_int_not_equal(s, rank % 4);
			assert_false(seen & (1u << s));
			seen |= 1u << s;
		}
	}
	/* One server: nowhere else to go. */
	assert_int_equal(cli_mpi_next_server(3, 1, 1), 0);
}

/* A listener answers the probe (the kernel takes the connection); a closed port refuses it. */
static void test_a_probe_tells_a_listener_from_a_closed_port(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(cli_mpi_probe("127.0.0.1", ntohs(a.sin_port), 1800), 0);
	close(fd);
	assert_int_equal(cli_mpi_probe("127.0.0.1", ntohs(a.sin_port), 1000), -ECONNREFUSED);
}

static uint64_t ms_since(uint64_t t0)
{
	return (rcp_now_ns() - t0) / 1000000u;
}

/*
 * The budget bounds the whole probe: a listener that takes the connection
 * (whose answer needs two connections and their waits, 1.1 s) and one
 * whose backlog is full (its connection never completes) each get no more
 * than their 400 ms, and say -ETIMEDOUT.
 */
static void test_a_probe_keeps_to_its_budget(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), c[4], i;
	uint64_t t0;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	assert_int_equal(listen(fd, 0), 0);
	t0 = rcp_now_ns();
	assert_int_equal(cli_mpi_probe("127.0.0.1", ntohs(a.sin_port), 400), -ETIMEDOUT);
	assert_true(ms_since(t0) < 800);
	for (i = 0; i < 4; i++) { /* fill the backlog: the next connection waits */
		c[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		assert_true(c[i] >= 0);
		connect(c[i], (struct sockaddr *)&a, sizeof(a));
	}
	usleep(100 * 1000);
	t0 = rcp_now_ns();
	assert_int_equal(cli_mpi_probe("127.0.0.1", ntohs(a.sin_port), 400), -ETIMEDOUT);
	assert_true(ms_since(t0) < 800);
	for (i = 0; i < 4; i++)
		close(c[i]);
	close(fd);
}

/*
 * A walk whose entries alone pack to more than one scatter's 2 GiB (entries
 * of 4000-byte paths and sources, all one string: a few MiB of memory, not
 * gigabytes) is refused right after the walk, saying why; with the pool's
 * batches beside the scatter it fits, and one entry fewer fits either way.
 */
static void test_a_walk_too_big_for_the_scatter_is_refused_early(void **state)
{
	char *name = malloc(4001);
	struct io_manifest m = {0};
	size_t per, i;

	(void)state;
	assert_non_null(name);
	memset(name, 'n', 4000);
	name[4000] = '\0';
	m.entry = calloc(300000, sizeof(*m.entry));
	assert_non_null(m.entry);
	for (i = 0; i < 300000; i++)
		m.entry[i] = (struct io_entry){.path = name, .src = name, .type = IO_DIR};
	per = io_manifest_entry_len(&m.entry[0]) + 4000 + 1 + 16;
	m.n = INT_MAX / per;
	assert_true(m.n < 300000);
	assert_int_equal(cli_mpi_scatter_fits(&m, false), 0);
	m.n++;
	assert_int_equal(cli_mpi_scatter_fits(&m, false), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "more than the 2 GiB that one MPI scatter "
						    "holds: copy the tree in parts"));
	assert_int_equal(cli_mpi_scatter_fits(&m, true), 0);
	free(m.entry);
	free(name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_largest_go_first_to_the_lightest_rank),
		cmocka_unit_test(test_no_rank_gets_more_than_the_mean_and_the_largest),
		cmocka_unit_test(test_empty_files_spread_by_count),
		cmocka_unit_test(test_each_file_is_in_one_share_and_each_directory_in_all),
		cmocka_unit_test(test_a_share_comes_back_whole_and_a_cut_one_is_refused),
		cmocka_unit_test(test_hosts_and_ports_before_dst),
		cmocka_unit_test(test_bad_hosts_are_usage_errors),
		cmocka_unit_test(test_servers_from_a_file),
		cmocka_unit_test(test_the_same_servers_give_equal_lists),
		cmocka_unit_test(test_a_pull_shares_files_links_and_empty_directories),
		cmocka_unit_test(test_a_name_no_list_holds_travels_with_its_directory),
		cmocka_unit_test(test_a_pull_share_comes_back_as_filters),
		cmocka_unit_test(test_a_share_no_files_from_holds_is_refused),
		cmocka_unit_test(test_a_job_too_big_for_the_delete_pass_is_refused),
		cmocka_unit_test(test_a_job_too_big_to_decode_for_the_delete_pass_is_refused),
		cmocka_unit_test(test_a_walk_too_big_for_the_scatter_is_refused_early),
		cmocka_unit_test(test_errors_say_whether_a_server_is_gone),
		cmocka_unit_test(test_a_gone_servers_ranks_spread_over_the_others),
		cmocka_unit_test(test_a_probe_tells_a_listener_from_a_closed_port),
		cmocka_unit_test(test_a_probe_keeps_to_its_budget),
	};

	rcp_log_set_level(RCP_LOG_SILENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
