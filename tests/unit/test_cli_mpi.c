/*
 * test_cli_mpi.c - what railcp-mpi does without MPI (cli/mpi.h): the
 * greedy balance by bytes (the loads it gives, its bound of the mean plus
 * the largest file, empty files spread by count), the shares of a walked
 * tree (each file and symlink in one share, every directory in all), a
 * share packed and unpacked whole (sources, devices and inodes too) and
 * every cut of it refused, and HOSTS:DST read from the line and from @FILE.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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
		assert_int_equal(cli_mpi_share(m, owner, r, &share[r]), 0);
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
	};

	rcp_log_set_level(RCP_LOG_SILENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
