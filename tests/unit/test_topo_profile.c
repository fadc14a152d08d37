/*
 * test_topo_profile.c - profiles: a saved plan loads back to the same plan,
 * its fabric knobs too, hand edits are honoured, and every contradiction
 * with the machine or bad value is one error naming the file and the line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "topology/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/railcp-profile-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static struct topo_machine *load(const char *fixture)
{
	struct topo_machine *m = NULL;
	char xml[512];

	snprintf(xml, sizeof(xml), "%s/%s", RAILCP_FIXTURES, fixture);
	assert_int_equal(topo_machine_create(xml, NULL, &m), 0);
	return m;
}

static void write_profile(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void assert_same_plan(const struct topo_plan *a, const struct topo_plan *b)
{
	size_t i;

	assert_int_equal(a->qps_per_rail, b->qps_per_rail);
	assert_int_equal(a->n_workers, b->n_workers);
	assert_int_equal(a->n_rails, b->n_rails);
	assert_int_equal(a->buffer_total, b->buffer_total);
	for (i = 0; i < a->n_workers; i++) {
		assert_int_equal(a->worker[i].node, b->worker[i].node);
		assert_true(topo_bitmap_equal(&a->worker[i].cpus, &b->worker[i].cpus));
		assert_int_equal(a->worker[i].first_rail, b->worker[i].first_rail);
		assert_int_equal(a->worker[i].n_rails, b->worker[i].n_rails);
		assert_int_equal(a->worker[i].buffer_bytes, b->worker[i].buffer_bytes);
		assert_int_equal(a->worker[i].page, b->worker[i].page);
	}
	for (i = 0; i < a->n_rails; i++) {
		assert_string_equal(a->rail[i].dev, b->rail[i].dev);
		assert_int_equal(a->rail[i].port, b->rail[i].port);
		assert_int_equal(a->rail[i].worker, b->rail[i].worker);
		assert_int_equal(a->rail[i].qps, b->rail[i].qps);
		assert_int_equal(a->rail[i].numa_node, b->rail[i].numa_node);
	}
}

static void round_trip(const char *fixture, const struct topo_opts *o)
{
	struct topo_machine *m = load(fixture);
	struct topo_plan *a = NULL, *b = NULL;

	assert_int_equal(topo_plan_build(m, o, &a), 0);
	assert_int_equal(topo_profile_save(a, m, path), 0);
	assert_int_equal(topo_profile_load(path, m, NULL, &b), 0);
	assert_same_plan(a, b);
	topo_plan_destroy(a);
	topo_plan_destroy(b);
	topo_machine_destroy(m);
}

static void test_round_trip_gpu8(void **state)
{
	(void)state;
	round_trip("topo_gpu8.xml", NULL);
}

static void test_round_trip_with_options_and_railless_worker(void **state)
{
	struct topo_opts o = {.nodes_set = true, .qps_per_rail = 2, .buffer_mib = 48};

	(void)state;
	assert_int_equal(topo_bitmap_parse("0,1", &o.nodes), 0);
	round_trip("topo_node_without_nic.xml", &o);
}

/* p saved as a profile of m at path, and read back as text (at most size - 1 bytes). */
static void saved_text(const struct topo_plan *p, const struct topo_machine *m, char *text,
		       size_t size)
{
	FILE *f;

	assert_int_equal(topo_profile_save(p, m, path), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fread(text, 1, size - 1, f) > 0);
	fclose(f);
}

static void test_saved_text_is_the_documented_format(void **state)
{
	struct topo_machine *m = load("topo_1node_dualport.xml");
	struct topo_plan *p = NULL;
	char text[2048] = "";

	(void)state;
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	saved_text(p, m, text, sizeof(text));
	assert_non_null(strstr(text, "\nqps_per_rail = 4\n\n[worker]\nnode = 0\ncpus = 0-3\n"
				     "rails = mlx5_0:1 mlx5_0:2\nbuffer_mib = 64\n"));
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_saved_comment_quotes_names_escaped(void **state)
{
	struct topo_machine *m = load("topo_1node_dualport.xml");
	struct topo_plan *p = NULL, *back = NULL;
	char text[2048] = "";

	(void)state;
	/* a newline would end the comment; ESC and the 8-bit CSI (0x9b) reach a terminal */
	snprintf(m->source, sizeof(m->source), "/tmp/a\nqps_per_rail = 9\x1b[2J.xml");
	snprintf(m->host, sizeof(m->host), "h\2332J\tx");
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	saved_text(p, m, text, sizeof(text));
	assert_non_null(strstr(text, " for /tmp/a\\x0aqps_per_rail = 9\\x1b[2J.xml (host "
				     "h\\x9b2J\\x09x).\n"));
	assert_int_equal(topo_profile_load(path, m, NULL, &back), 0);
	assert_int_equal(back->qps_per_rail, p->qps_per_rail);
	topo_plan_destroy(back);
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_hand_edited_profile_is_honoured(void **state)
{
	struct topo_machine *m = load("topo_2s_4nic.xml");
	struct topo_opts o = {.qps_per_rail = 6};
	struct topo_plan *p = NULL;

	(void)state;
	write_profile("# two rails on socket 1, one on socket 0\n"
		      "qps_per_rail = 2\n\n"
		      "[worker]\n  node = 1   # comment\ncpus=8-11\nrails = mlx5_3:1, mlx5_2:1\n"
		      "[worker]\nnode = 0\nrails = mlx5_0:1\nbuffer_mib = 10\n");
	assert_int_equal(topo_profile_load(path, m, NULL, &p), 0);
	assert_int_equal(p->qps_per_rail, 2);
	assert_int_equal(p->n_workers, 2);
	assert_int_equal(p->worker[0].node, 0); /* in node order */
	assert_int_equal(p->worker[0].n_rails, 1);
	assert_int_equal(p->worker[0].buffer_bytes, 10ull << 20);
	assert_int_equal(topo_bitmap_count(&p->worker[0].cpus), 8);
	assert_int_equal(p->worker[1].node, 1);
	assert_int_equal(topo_bitmap_next(&p->worker[1].cpus, 0), 8);
	assert_int_equal(topo_bitmap_count(&p->worker[1].cpus), 4);
	assert_string_equal(p->rail[1].dev, "mlx5_3");
	assert_string_equal(p->rail[2].dev, "mlx5_2");
	assert_int_equal(p->worker[1].buffer_bytes, 2ull * 2 * TOPO_STRIPE_BUFFER_MIB << 20);
	topo_plan_destroy(p);
	assert_int_equal(topo_profile_load(path, m, &o, &p), 0); /* --qps-per-rail wins */
	assert_int_equal(p->rail[0].qps, 6);
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

/* Load a profile that must fail, and check its sentence names path:line. */
static void expect_error(const struct topo_machine *m, const char *text, unsigned line,
			 const char *what)
{
	struct topo_plan *p = NULL;
	char want[512];
	int err;

	write_profile(text);
	err = topo_profile_load(path, m, NULL, &p);
	assert_int_equal(err, -EINVAL);
	assert_null(p);
	snprintf(want, sizeof(want), "%s:%u: %s", path, line, what);
	assert_string_equal(rcp_err_msg(err), want);
}

static void test_contradictions_name_the_line(void **state)
{
	struct topo_binding b = {.cpus_set = true};
	struct topo_machine *m = load("topo_gpu8.xml"), *bound = NULL;
	char xml[512];

	(void)state;
	expect_error(m, "[worker]\nnode = 0\nrails = mlx5_0:1 mlx5_9:1\n", 3,
		     "rail mlx5_9:1 is not on " RAILCP_FIXTURES "/topo_gpu8.xml");
	expect_error(m, "\n[worker]\nnode = 7\n", 3,
		     "node 7 is not on " RAILCP_FIXTURES "/topo_gpu8.xml");
	expect_error(m, "[worker]\nnode = 1\ncpus = 4-8\n", 3,
		     "CPU 8 is not an allowed CPU of node 1 (allowed: 4-7)");
	expect_error(m, "[worker]\nnode = 0\nrails = mlx5_8:1\n", 3,
		     "rail mlx5_8:1 is DOWN, not ACTIVE");
	expect_error(m,
		     "[worker]\nnode = 0\nrails = mlx5_0:1\n[worker]\nnode = 2\nrails = mlx5_0:1\n",
		     6, "rail mlx5_0:1 is already given on line 3");
	expect_error(m, "[worker]\nnode = 0\n\n[worker]\nnode = 0\n", 5,
		     "node 0 already has a worker (line 2)");

	/* An offline node: the same profile on a machine bound to the second socket. */
	snprintf(xml, sizeof(xml), "%s/topo_gpu8.xml", RAILCP_FIXTURES);
	assert_int_equal(topo_bitmap_parse("8-15", &b.cpus), 0);
	assert_int_equal(topo_machine_create(xml, &b, &bound), 0);
	expect_error(bound, "qps_per_rail = 4\n[worker]\nnode = 0\n", 3,
		     "node 0 cannot be used: its CPUs are outside the allowed CPUs "
		     "(taskset, numactl --cpunodebind, cgroup cpuset)");
	topo_machine_destroy(bound);
	topo_machine_destroy(m);
}

static void test_syntax_errors_name_the_line(void **state)
{
	struct topo_machine *m = load("topo_2s_4nic.xml");

	(void)state;
	expect_error(m, "qps_per_rail = 0\n", 1, "qps_per_rail: '0' is not a number from 1 to 64");
	expect_error(m, "# c\nspeed = 3\n", 2,
		     "unknown key 'speed' before the first [worker] section (known: qps_per_rail, "
		     "tos, ack_timeout, retry_count, connect_timeout)");
	expect_error(m, "[worker]\nnode 0\n", 2, "expected 'key = value', found 'node 0'");
	expect_error(m, "[workers]\n", 1, "unknown section '[workers]' (only [worker])");
	expect_error(m, "[worker]\nnode = 0\nnode = 1\n", 3, "'node' is already set on line 2");
	expect_error(m, "[worker]\ncpus = 0-3\n", 1,
		     "this [worker] section has no 'node = N' line");
	expect_error(m, "[worker]\nnode = 0\ncpus = 0-\n", 3,
		     "cpus: '0-' is not a CPU list like 0-7,16");
	expect_error(m, "[worker]\nnode = 0\nrails = mlx5_0:one\n", 3,
		     "rails: 'mlx5_0:one' is not a list of DEV:PORT");
	expect_error(m, "[worker]\nnode = 0\nrails = mlx5_0\n", 3,
		     "rail mlx5_0 has no port: write mlx5_0:1");
	expect_error(m, "[worker]\nnode = 0\nbuffer_mib = -4\n", 3,
		     "buffer_mib: '-4' is not a number from 1 to 1048576");
	topo_machine_destroy(m);
}

/* Each knob is checked with its option's bounds, and said as the option would be. */
static void test_bad_knobs_name_the_line(void **state)
{
	static const struct {
		const char *text, *what;
		unsigned line;
	} bad[] = {
		{"tos = 256\n", "tos: '256' is not a traffic class from 0 to 255", 1},
		{"tos = -1\n", "tos: '-1' is not a traffic class from 0 to 255", 1},
		{"tos = 0x10\n", "tos: '0x10' is not a traffic class from 0 to 255", 1},
		{"qps_per_rail = 2\nack_timeout = 0\n",
		 "ack_timeout: '0' is not an ACK timeout exponent from 1 to 31", 2},
		{"ack_timeout = 32\n",
		 "ack_timeout: '32' is not an ACK timeout exponent from 1 to 31", 1},
		{"retry_count = 8\n", "retry_count: '8' is not a retry count from 1 to 7", 1},
		{"retry_count =\n", "retry_count: '' is not a retry count from 1 to 7", 1},
		{"connect_timeout = 0\n",
		 "connect_timeout: '0' is not a number of seconds from 1 to 3600", 1},
		{"connect_timeout = 3601\n",
		 "connect_timeout: '3601' is not a number of seconds from 1 to 3600", 1},
		{"connect_timeout = 5s\n",
		 "connect_timeout: '5s' is not a number of seconds from 1 to 3600", 1},
		{"tos = 8\n\ntos = 8\n", "'tos' is already set on line 1", 3},
		{"[worker]\nnode = 0\ntos = 8\n",
		 "unknown key 'tos' in a [worker] section (known: node, cpus, rails, buffer_mib)",
		 3},
	};
	struct topo_machine *m = load("topo_2s_4nic.xml");
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_error(m, bad[i].text, bad[i].line, bad[i].what);
	topo_machine_destroy(m);
}

/* A hand-written profile's knobs reach the plan; unset ones stay unset (0 is a class). */
static void test_knobs_load_into_the_plan(void **state)
{
	struct topo_machine *m = load("topo_2s_4nic.xml");
	struct topo_plan *p = NULL;

	(void)state;
	write_profile("tos = 0\nretry_count = 3 # fewer\n[worker]\nnode = 0\n");
	assert_int_equal(topo_profile_load(path, m, NULL, &p), 0);
	assert_true(p->knobs.tos_set);
	assert_int_equal(p->knobs.tos, 0);
	assert_int_equal(p->knobs.retry_count, 3);
	assert_int_equal(p->knobs.ack_timeout, 0);
	assert_int_equal(p->knobs.connect_timeout, 0);
	topo_plan_destroy(p);
	write_profile("ack_timeout = 31\nconnect_timeout = 3600\n[worker]\nnode = 0\n");
	assert_int_equal(topo_profile_load(path, m, NULL, &p), 0);
	assert_false(p->knobs.tos_set);
	assert_int_equal(p->knobs.ack_timeout, 31);
	assert_int_equal(p->knobs.connect_timeout, 3600);
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

/* The knobs a plan carries are written as keys, those set only, and load back the same. */
static void test_saved_knobs_load_back(void **state)
{
	struct topo_machine *m = load("topo_1node_dualport.xml");
	struct topo_plan *p = NULL, *back = NULL;
	char text[2048] = "";

	(void)state;
	assert_int_equal(topo_plan_build(m, NULL, &p), 0);
	p->knobs = (struct topo_knobs){.tos_set = true,
				       .tos = 106,
				       .ack_timeout = 14,
				       .retry_count = 7,
				       .connect_timeout = 5};
	saved_text(p, m, text, sizeof(text));
	assert_non_null(strstr(text, "\nqps_per_rail = 4\ntos = 106\nack_timeout = 14\n"
				     "retry_count = 7\nconnect_timeout = 5\n\n[worker]\n"));
	assert_int_equal(topo_profile_load(path, m, NULL, &back), 0);
	assert_same_plan(p, back);
	assert_memory_equal(&back->knobs, &p->knobs, sizeof(p->knobs));
	topo_plan_destroy(back);
	p->knobs = (struct topo_knobs){.tos_set = true, .retry_count = 2};
	memset(text, 0, sizeof(text));
	saved_text(p, m, text, sizeof(text));
	assert_non_null(strstr(text, "\nqps_per_rail = 4\ntos = 0\nretry_count = 2\n\n[worker]"));
	topo_plan_destroy(p);
	topo_machine_destroy(m);
}

static void test_empty_and_missing_profiles(void **state)
{
	struct topo_machine *m = load("topo_2s_4nic.xml");
	struct topo_plan *p = NULL;
	char want[128];
	int err;

	(void)state;
	write_profile("# nothing\nqps_per_rail = 2\n");
	err = topo_profile_load(path, m, NULL, &p);
	assert_int_equal(err, -EINVAL);
	snprintf(want, sizeof(want), "%s: the profile has no [worker] section", path);
	assert_string_equal(rcp_err_msg(err), want);
	err = topo_profile_load("/nonexistent/railcp.profile", m, NULL, &p);
	assert_int_equal(err, -ENOENT);
	assert_string_equal(rcp_err_msg(err), "cannot open profile /nonexistent/railcp.profile: "
					      "No such file or directory");
	assert_null(p);
	topo_machine_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_gpu8),
		cmocka_unit_test(test_round_trip_with_options_and_railless_worker),
		cmocka_unit_test(test_saved_text_is_the_documented_format),
		cmocka_unit_test(test_saved_comment_quotes_names_escaped),
		cmocka_unit_test(test_hand_edited_profile_is_honoured),
		cmocka_unit_test(test_contradictions_name_the_line),
		cmocka_unit_test(test_syntax_errors_name_the_line),
		cmocka_unit_test(test_bad_knobs_name_the_line),
		cmocka_unit_test(test_knobs_load_into_the_plan),
		cmocka_unit_test(test_saved_knobs_load_back),
		cmocka_unit_test(test_empty_and_missing_profiles),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
