/*
 * test_cli_devices.c - the device listing as JSON and as text, rendered from
 * a listing built in memory (an mlx5 NIC at 200 Gb/s and an rxe device of
 * unknown locality); and the IP interfaces, from a list built the same way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "topology/topology.h"

#include <stdlib.h>
#include <string.h>

static struct eng_gid gids_rxe[] = {
	{.index = 0, .type = ENG_GID_ROCE_V2, .addr = "fe80::5054:ff:fe72:0", .netdev = "eth1"},
	{.index = 1, .type = ENG_GID_ROCE_V2, .addr = "::ffff:198.18.0.1", .netdev = "eth1"},
};
static struct eng_gid gids_ib[] = {
	{.index = 0, .type = ENG_GID_IB, .addr = "fe80::2:c903:1:2"},
};
static struct eng_port port_ib = {
	.num = 1,
	.state = "ACTIVE",
	.active = true,
	.link_layer = "InfiniBand",
	.active_mtu = 4096,
	.width = 4,
	.lane_gbps = 50.0,
	.gbps = 200.0,
	.n_gids = 1,
	.gids = gids_ib,
};
static struct eng_port port_rxe = {
	.num = 1,
	.state = "DOWN",
	.link_layer = "Ethernet",
	.active_mtu = 1024,
	.netdev = "eth1",
	.n_gids = 2,
	.gids = gids_rxe,
};
static struct eng_device devs[] = {
	{.name = "mlx5_0",
	 .node_guid = "0002:c903:0001:0002",
	 .numa_node = 1,
	 .numa_rule = "device 0000:3b:00.0",
	 .n_ports = 1,
	 .ports = &port_ib},
	{.name = "rxe0",
	 .node_guid = "5054:00ff:fe72:0000",
	 .numa_node = -1,
	 .numa_rule = "unknown: parent netdev eth1 has no device with a NUMA node",
	 .n_ports = 1,
	 .ports = &port_rxe},
};
static const struct eng_device_list list = {.n = 2, .dev = devs};

static void test_json_has_every_field_of_every_port(void **state)
{
	json_t *j = cli_devices_json(&list), *d, *p, *g;

	(void)state;
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "devices")), 2);
	d = json_array_get(json_object_get(j, "devices"), 0);
	assert_string_equal(json_string_value(json_object_get(d, "name")), "mlx5_0");
	assert_int_equal(json_integer_value(json_object_get(d, "numa_node")), 1);
	p = json_array_get(json_object_get(d, "ports"), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "port")), 1);
	assert_string_equal(json_string_value(json_object_get(p, "state")), "ACTIVE");
	assert_string_equal(json_string_value(json_object_get(p, "link_layer")), "InfiniBand");
	assert_int_equal(json_integer_value(json_object_get(p, "active_mtu")), 4096);
	assert_int_equal(json_integer_value(json_object_get(p, "width")), 4);
	assert_true(json_real_value(json_object_get(p, "speed_gbps")) == 200.0);
	assert_true(json_is_null(json_object_get(p, "netdev")));
	g = json_array_get(json_object_get(p, "gids"), 0);
	assert_string_equal(json_string_value(json_object_get(g, "type")), "IB");
	assert_string_equal(json_string_value(json_object_get(g, "address")), "fe80::2:c903:1:2");
	json_decref(j);
}

static void test_json_unknown_numa_is_null_with_rule(void **state)
{
	json_t *j = cli_devices_json(&list), *d, *p, *g;

	(void)state;
	d = json_array_get(json_object_get(j, "devices"), 1);
	assert_true(json_is_null(json_object_get(d, "numa_node")));
	assert_non_null(strstr(json_string_value(json_object_get(d, "numa_rule")), "unknown"));
	p = json_array_get(json_object_get(d, "ports"), 0);
	assert_string_equal(json_string_value(json_object_get(p, "netdev")), "eth1");
	assert_int_equal(json_array_size(json_object_get(p, "gids")), 2);
	g = json_array_get(json_object_get(p, "gids"), 1);
	assert_string_equal(json_string_value(json_object_get(g, "type")), "RoCE v2");
	assert_string_equal(json_string_value(json_object_get(g, "address")), "::ffff:198.18.0.1");
	json_decref(j);
}

static char *render_text(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	cli_devices_print(f, &list);
	fclose(f);
	return buf;
}

static void test_text_shows_speed_locality_and_gids(void **state)
{
	char *text = render_text();

	(void)state;
	assert_non_null(strstr(
		text, "mlx5_0  guid 0002:c903:0001:0002  numa node 1 (device 0000:3b:00.0)\n"));
	assert_non_null(strstr(text, "port 1: ACTIVE InfiniBand mtu 4096 4x 50 Gb/s = 200 Gb/s\n"));
	assert_non_null(strstr(text, "gid 1   RoCE v2  ::ffff:198.18.0.1\n"));
	assert_non_null(strstr(text, "rxe0  guid 5054:00ff:fe72:0000  numa node unknown: "));
	assert_non_null(strstr(text, "speed unknown  netdev eth1\n"));
	free(text);
}

/* ---- the IP interfaces: a 25 Gb/s NIC on node 1, lo, and one that is down ---- */

static struct topo_netif_list *netifs(void)
{
	static const struct topo_netif nif[] = {
		{.name = "lo",
		 .addr = "127.0.0.1",
		 .prefix = 8,
		 .up = true,
		 .loopback = true,
		 .mtu = 65536,
		 .numa_node = -1,
		 .rule = "unknown: lo is a virtual interface"},
		{.name = "eth1",
		 .addr = "198.18.0.1",
		 .prefix = 24,
		 .up = true,
		 .mtu = 9000,
		 .gbps = 25.0,
		 .numa_node = 1,
		 .rule = "device 0000:12:01.0"},
		{.name = "eth2",
		 .addr = "10.1.2.3",
		 .prefix = 16,
		 .numa_node = -1,
		 .rule = "unknown: device 0000:12:02.0 reports no NUMA node"},
	};
	struct topo_netif_list *l = calloc(1, sizeof(*l));

	assert_non_null(l);
	memcpy(l->nif, nif, sizeof(nif));
	l->n = 3;
	return l;
}

static void test_netifs_json_says_which_a_copy_uses(void **state)
{
	struct topo_netif_list *l = netifs();
	json_t *a = cli_netifs_json(l), *o;

	(void)state;
	assert_int_equal(json_array_size(a), 3);
	o = json_array_get(a, 1);
	assert_string_equal(json_string_value(json_object_get(o, "name")), "eth1");
	assert_string_equal(json_string_value(json_object_get(o, "address")), "198.18.0.1");
	assert_int_equal(json_integer_value(json_object_get(o, "prefix")), 24);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "UP");
	assert_int_equal(json_integer_value(json_object_get(o, "mtu")), 9000);
	assert_true(json_real_value(json_object_get(o, "speed_gbps")) == 25.0);
	assert_int_equal(json_integer_value(json_object_get(o, "numa_node")), 1);
	assert_true(json_is_true(json_object_get(o, "used")));
	assert_true(json_is_null(json_object_get(o, "unused_why")));
	o = json_array_get(a, 0);
	assert_true(json_is_false(json_object_get(o, "used")));
	assert_non_null(strstr(json_string_value(json_object_get(o, "unused_why")), "loopback"));
	assert_true(json_is_null(json_object_get(o, "speed_gbps")));
	assert_true(json_is_null(json_object_get(o, "numa_node")));
	o = json_array_get(a, 2);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "DOWN");
	assert_string_equal(json_string_value(json_object_get(o, "unused_why")), "down");
	json_decref(a);
	free(l);
}

/* An interface name is bytes, not text: one that is not UTF-8 still gets its fields. */
static void test_netifs_json_keeps_a_name_that_is_not_utf8(void **state)
{
	struct topo_netif_list *l = netifs();
	json_t *a, *o;

	(void)state;
	strcpy(l->nif[1].name, "eth\xff"
			       "1");
	snprintf(l->nif[1].rule, sizeof(l->nif[1].rule),
		 "unknown: eth\xff"
		 "1 is virtual");
	strcpy(l->nif[2].name, "n\xc3\xa4t"); /* UTF-8: kept as it is */
	a = cli_netifs_json(l);
	o = json_array_get(a, 1);
	assert_string_equal(json_string_value(json_object_get(o, "name")), "eth\\xff1");
	assert_string_equal(json_string_value(json_object_get(o, "numa_rule")),
			    "unknown: eth\\xff1 is virtual");
	o = json_array_get(a, 2);
	assert_string_equal(json_string_value(json_object_get(o, "name")), "n\xc3\xa4t");
	json_decref(a);
	free(l);
	o = cli_json_text(NULL);
	assert_true(json_is_null(o));
	json_decref(o);
}

static char *render_netifs(const struct topo_netif_list *l, bool no_rdma)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	cli_netifs_print(f, l, no_rdma);
	fclose(f);
	return buf;
}

static void test_netifs_text_says_which_a_copy_uses(void **state)
{
	struct topo_netif_list *l = netifs();
	char *text = render_netifs(l, true);

	(void)state;
	assert_non_null(strstr(text, "eth1  198.18.0.1/24  UP  mtu 9000  25 Gb/s  numa node 1 "
				     "(device 0000:12:01.0)\n  a rail of a TCP copy\n"));
	assert_non_null(strstr(text, "lo  127.0.0.1/8  UP  mtu 65536  speed unknown  numa node "
				     "unknown: lo is a virtual interface\n  not a rail of a TCP "
				     "copy: loopback"));
	assert_non_null(strstr(text, "eth2  10.1.2.3/16  DOWN  "));
	assert_non_null(strstr(text, "  not a rail of a TCP copy: down\n"));
	assert_non_null(strstr(text, "with --transport tcp, or auto"));
	free(text);
	text = render_netifs(l, false); /* RDMA is there: no advice to go over TCP */
	assert_null(strstr(text, "--transport tcp, or auto"));
	free(text);
	l->nif[1].up = false; /* nothing but lo up */
	text = render_netifs(l, true);
	assert_non_null(strstr(text, "No interface a TCP copy would use"));
	assert_null(strstr(text, "--transport tcp, or auto"));
	free(text);
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_has_every_field_of_every_port),
		cmocka_unit_test(test_json_unknown_numa_is_null_with_rule),
		cmocka_unit_test(test_text_shows_speed_locality_and_gids),
		cmocka_unit_test(test_netifs_json_says_which_a_copy_uses),
		cmocka_unit_test(test_netifs_text_says_which_a_copy_uses),
		cmocka_unit_test(test_netifs_json_keeps_a_name_that_is_not_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
