/*
 * test_cli_wire.c - each rail's counters over a run: read from a tree made
 * in a temporary directory that stands in for /sys (an InfiniBand-style
 * port with port counters in 4-byte words, and an rxe port with only
 * hw_counters and its netdev's statistics), read again after the counters
 * moved, the difference, and the summary line and JSON made from it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/wire.h"
#include "fake_root.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char root[512];

static void put(const char *path, unsigned long long v)
{
	char text[32];

	snprintf(text, sizeof(text), "%llu\n", v);
	fake_root_put(root, path, text);
}

#define MLX "sys/class/infiniband/mlx5_0/ports/1/"
#define RXE "sys/class/infiniband/rxe1/ports/1/"

/* The counters at the start (k = 0) or after a run (k = 1). */
static void counters(unsigned k)
{
	put(MLX "counters/port_xmit_data", 1000 + k * 300000); /* words: 1.2 MB */
	put(MLX "counters/port_rcv_data", 500 + k * 1000);
	put(MLX "counters/port_xmit_packets", 10 + k * 300);
	put(MLX "counters/port_rcv_packets", 5 + k * 250);
	put(MLX "hw_counters/np_cnp_sent", 7 + k * 4);
	put(MLX "hw_counters/out_of_sequence", 3);
	put(MLX "hw_counters/lifespan", 10);
	put(RXE "hw_counters/sent_pkts", 100 + k * 900);
	put(RXE "hw_counters/rcvd_pkts", 50 + k * 450);
	put(RXE "hw_counters/completer_retry_err", 2 + k * 5);
	put(RXE "hw_counters/rcvd_seq_err", 1 + k * 3);
	put("sys/class/net/eth2/statistics/tx_bytes", 4000 + k * 1100000);
	put("sys/class/net/eth2/statistics/rx_bytes", 2000 + k * 40000);
	put("sys/class/net/eth2/statistics/tx_packets", 40 + k * 1000);
	put("sys/class/net/eth2/statistics/rx_packets", 20 + k * 500);
	put("sys/class/net/eth2/statistics/tx_dropped", 0);
	put("sys/class/net/eth2/statistics/rx_dropped", 0);
}

static int tree_setup(void **state)
{
	(void)state;
	fake_root_make(root, sizeof(root), "test_cli_wire");
	counters(0);
	fake_root_put(root, RXE "gid_attrs/ndevs/0", "eth2\n");
	return 0;
}

static int tree_teardown(void **state)
{
	(void)state;
	return fake_root_remove(root);
}

static const struct topo_plan plan = {
	.n_rails = 3,
	.rail = {{.dev = "mlx5_0", .port = 1},
		 {.dev = "rxe1", .port = 1},
		 {.dev = "eth2", .port = 1}},
};

static uint64_t counter(const struct cli_wire_rail *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->c[i].name, name))
			return r->c[i].v;
	fail_msg("no counter %s", name);
	return 0;
}

static bool has(const struct cli_wire_rail *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->c[i].name, name))
			return true;
	return false;
}

static struct cli_wire *run(void)
{
	struct cli_wire *w = calloc(2, sizeof(*w));

	assert_non_null(w);
	counters(0);
	cli_wire_read(root, &plan, &w[0]);
	counters(1);
	cli_wire_read(root, &plan, &w[1]);
	cli_wire_delta(&w[1], &w[0]);
	return w;
}

static void test_delta_of_port_hw_and_netdev_counters(void **state)
{
	struct cli_wire *w = run();
	const struct cli_wire_rail *mlx = &w[1].rail[0], *rxe = &w[1].rail[1];

	(void)state;
	assert_int_equal(w[1].n_rails, 3);
	assert_int_equal(counter(mlx, "port_xmit_data"), 1200000); /* words to bytes */
	assert_int_equal(counter(mlx, "port_xmit_packets"), 300);
	assert_int_equal(counter(mlx, "np_cnp_sent"), 4);
	assert_int_equal(counter(mlx, "out_of_sequence"), 0);
	assert_false(has(mlx, "lifespan"));
	assert_int_equal(cli_wire_sent(mlx), 1200000);
	assert_string_equal(rxe->netdev, "eth2");
	assert_int_equal(counter(rxe, "completer_retry_err"), 5);
	assert_int_equal(counter(rxe, "tx_bytes"), 1100000);
	assert_int_equal(cli_wire_sent(rxe), 1100000); /* no port counters: the netdev's */
	/* a TCP rail (an IP interface): its own statistics */
	assert_string_equal(w[1].rail[2].netdev, "eth2");
	assert_int_equal(cli_wire_sent(&w[1].rail[2]), 1100000);
	free(w);
}

static void test_counter_gone_back_is_left_out(void **state)
{
	struct cli_wire *w = calloc(2, sizeof(*w));

	(void)state;
	assert_non_null(w);
	counters(1);
	cli_wire_read(root, &plan, &w[0]);
	counters(0); /* a driver reset its counters during the run */
	cli_wire_read(root, &plan, &w[1]);
	cli_wire_delta(&w[1], &w[0]);
	assert_false(has(&w[1].rail[0], "port_xmit_data"));
	assert_true(has(&w[1].rail[0], "out_of_sequence")); /* unchanged: 0 */
	free(w);
}

static void test_summary_line_names_what_moved(void **state)
{
	struct eng_report rep = {.n_rails = 2};
	struct cli_wire *w = run();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	snprintf(rep.rail[1].name, sizeof(rep.rail[1].name), "rxe1:1");
	rep.rail[1].bytes = 1 << 20;
	cli_wire_print(f, &w[1], &rep);
	cli_wire_print(f, NULL, &rep); /* no counters: nothing */
	fclose(f);
	assert_non_null(strstr(text,
			       "  wire mlx5_0:1: sent 1.1 MiB in 300 packets, received "
			       "3.9 KiB in 250 packets, for 0 B of payload; np_cnp_sent 4\n"));
	assert_non_null(strstr(text, "  wire rxe1:1: sent 1.0 MiB in 1000 packets, received "
				     "39.1 KiB in 500 packets, for 1.0 MiB of payload; "));
	assert_non_null(strstr(text, "completer_retry_err 5"));
	assert_non_null(strstr(text, "rcvd_seq_err 3"));
	assert_null(strstr(text, "sent_pkts"));
	free(text);
	free(w);
}

static void test_json_per_rail(void **state)
{
	struct eng_report rep = {.n_rails = 1};
	struct cli_wire *w = run();
	json_t *o = json_object(), *a, *rxe;

	(void)state;
	snprintf(rep.rail[0].name, sizeof(rep.rail[0].name), "rxe1:1");
	rep.rail[0].bytes = 4096;
	cli_wire_json(o, &w[1], &rep);
	a = json_object_get(o, "wire");
	assert_int_equal(json_array_size(a), 3);
	assert_true(json_is_null(json_object_get(json_array_get(a, 0), "netdev")));
	rxe = json_array_get(a, 1);
	assert_string_equal(json_string_value(json_object_get(rxe, "rail")), "rxe1:1");
	assert_int_equal(json_integer_value(json_object_get(rxe, "payload_bytes")), 4096);
	assert_int_equal(json_integer_value(json_object_get(rxe, "sent_bytes")), 1100000);
	assert_int_equal(json_integer_value(json_object_get(rxe, "received_packets")), 500);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rxe, "hw_counters"),
							    "rcvd_seq_err")),
			 3);
	assert_int_equal(json_object_size(json_object_get(rxe, "port_counters")), 0);
	json_decref(o);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delta_of_port_hw_and_netdev_counters),
		cmocka_unit_test(test_counter_gone_back_is_left_out),
		cmocka_unit_test(test_summary_line_names_what_moved),
		cmocka_unit_test(test_json_per_rail),
	};

	return cmocka_run_group_tests(tests, tree_setup, tree_teardown);
}
