/*
 * test_locality.c - NUMA locality of RDMA devices and IP interfaces from
 * fixture sysfs trees built in a temporary directory: the shapes of a real
 * mlx5 NIC, an rxe device over a virtio NIC, a virtual interface, and the
 * ways locality can be unknown; and this host's loopback interface as a
 * TCP rail, with what the interface listing reads for it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "topology/topology.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[PATH_MAX];

static void mkpath(const char *rel)
{
	char path[PATH_MAX * 2], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_to(const char *rel, const char *target)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/railcp-sysfs.XXXXXX");
	assert_non_null(mkdtemp(root));
	mkpath("class/infiniband");
	mkpath("class/net");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

/* A PCI NIC with an RDMA function, like mlx5: the ib device links to the PCI function. */
static void make_pci_nic(const char *ibdev, const char *bdf, const char *node)
{
	char rel[256], target[256];

	snprintf(rel, sizeof(rel), "devices/pci0000:00/%s", bdf);
	mkpath(rel);
	snprintf(rel, sizeof(rel), "devices/pci0000:00/%s/numa_node", bdf);
	put(rel, node);
	snprintf(rel, sizeof(rel), "devices/pci0000:00/%s/infiniband/%s", bdf, ibdev);
	mkpath(rel);
	snprintf(rel, sizeof(rel), "class/infiniband/%s", ibdev);
	snprintf(target, sizeof(target), "../../devices/pci0000:00/%s/infiniband/%s", bdf, ibdev);
	link_to(rel, target);
	snprintf(rel, sizeof(rel), "devices/pci0000:00/%s/infiniband/%s/device", bdf, ibdev);
	snprintf(target, sizeof(target), "../../../%s", bdf);
	link_to(rel, target);
}

/* A virtio NIC: the netdev's device is the virtio device under the PCI function. */
static void make_virtio_netdev(const char *netdev, const char *bdf, const char *node)
{
	char rel[256], target[256];

	snprintf(rel, sizeof(rel), "devices/pci0000:10/0000:10:00.0/%s/virtio3/net/%s", bdf,
		 netdev);
	mkpath(rel);
	if (node) {
		snprintf(rel, sizeof(rel), "devices/pci0000:10/0000:10:00.0/%s/numa_node", bdf);
		put(rel, node);
	}
	snprintf(rel, sizeof(rel), "class/net/%s", netdev);
	snprintf(target, sizeof(target), "../../devices/pci0000:10/0000:10:00.0/%s/virtio3/net/%s",
		 bdf, netdev);
	link_to(rel, target);
	snprintf(rel, sizeof(rel), "devices/pci0000:10/0000:10:00.0/%s/virtio3/net/%s/device", bdf,
		 netdev);
	link_to(rel, "../../../virtio3");
}

/* A virtual RDMA device (rxe, siw): no device link, a parent file naming its netdev. */
static void make_rxe(const char *ibdev, const char *netdev)
{
	char rel[256], target[256];

	snprintf(rel, sizeof(rel), "devices/virtual/infiniband/%s", ibdev);
	mkpath(rel);
	snprintf(rel, sizeof(rel), "devices/virtual/infiniband/%s/parent", ibdev);
	put(rel, netdev);
	snprintf(rel, sizeof(rel), "class/infiniband/%s", ibdev);
	snprintf(target, sizeof(target), "../../devices/virtual/infiniband/%s", ibdev);
	link_to(rel, target);
}

static void test_pci_nic_takes_node_of_its_pci_function(void **state)
{
	struct topo_locality loc;

	(void)state;
	make_pci_nic("mlx5_0", "0000:3b:00.0", "1\n");
	assert_int_equal(topo_ibdev_locality(root, "mlx5_0", &loc), 0);
	assert_int_equal(loc.numa_node, 1);
	assert_string_equal(loc.rule, "device 0000:3b:00.0");
}

static void test_rxe_takes_node_of_parent_netdev_pci_ancestor(void **state)
{
	struct topo_locality loc;

	(void)state;
	make_virtio_netdev("eth1", "0000:12:01.0", "1\n");
	make_rxe("rxe0", "eth1\n");
	assert_int_equal(topo_ibdev_locality(root, "rxe0", &loc), 0);
	assert_int_equal(loc.numa_node, 1);
	assert_string_equal(loc.rule, "parent netdev eth1 on device 0000:12:01.0");
}

static void test_minus_one_numa_node_is_unknown_and_says_who(void **state)
{
	struct topo_locality loc;

	(void)state;
	make_pci_nic("mlx5_1", "0000:5e:00.0", "-1\n");
	assert_int_equal(topo_ibdev_locality(root, "mlx5_1", &loc), 0);
	assert_int_equal(loc.numa_node, TOPO_NUMA_UNKNOWN);
	assert_string_equal(loc.rule, "unknown: device 0000:5e:00.0 reports no NUMA node");
}

static void test_netdev_without_numa_ancestor_is_unknown(void **state)
{
	struct topo_locality loc;

	(void)state;
	make_virtio_netdev("eth7", "0000:12:02.0", NULL);
	make_rxe("rxe7", "eth7\n");
	assert_int_equal(topo_ibdev_locality(root, "rxe7", &loc), 0);
	assert_int_equal(loc.numa_node, TOPO_NUMA_UNKNOWN);
	assert_string_equal(loc.rule, "unknown: parent netdev eth7 has no device with a NUMA node");
}

static void test_rxe_over_missing_netdev_is_unknown(void **state)
{
	struct topo_locality loc;

	(void)state;
	make_rxe("rxe9", "gone0\n");
	assert_int_equal(topo_ibdev_locality(root, "rxe9", &loc), 0);
	assert_int_equal(loc.numa_node, TOPO_NUMA_UNKNOWN);
	assert_non_null(strstr(loc.rule, "gone0"));
}

static void test_unknown_device_is_enoent_and_leaves_output_alone(void **state)
{
	struct topo_locality loc = {.numa_node = 42};

	(void)state;
	assert_int_equal(topo_ibdev_locality(root, "nosuch0", &loc), -ENOENT);
	assert_int_equal(loc.numa_node, 42);
}

/* ---- IP interfaces as rails (the TCP transport's) ---- */

static void test_ip_interface_takes_node_of_its_device(void **state)
{
	struct topo_locality loc;

	(void)state;
	make_virtio_netdev("eth5", "0000:12:05.0", "1\n");
	assert_int_equal(topo_netdev_locality(root, "eth5", &loc), 0);
	assert_int_equal(loc.numa_node, 1);
	assert_non_null(strstr(loc.rule, "0000:12:05.0"));
}

static void test_virtual_interface_has_no_node_and_says_why(void **state)
{
	struct topo_locality loc;

	(void)state;
	mkpath("devices/virtual/net/br9");
	link_to("class/net/br9", "../../devices/virtual/net/br9");
	assert_int_equal(topo_netdev_locality(root, "br9", &loc), 0);
	assert_int_equal(loc.numa_node, TOPO_NUMA_UNKNOWN);
	assert_non_null(strstr(loc.rule, "br9 is a virtual interface"));
	assert_int_equal(topo_netdev_locality(root, "nosuch9", &loc), -ENOENT);
}

/* This host's lo: a rail only when asked for, and then up, port 1, link layer IP. */
static void test_loopback_is_a_rail_only_when_asked_for(void **state)
{
	struct topo_machine *m = calloc(1, sizeof(*m));
	int i;

	(void)state;
	assert_non_null(m);
	assert_int_equal(topo_machine_add_ip_rails(m, "/sys", false), 0);
	assert_int_equal(topo_machine_rail_index(m, "lo", 1), -1);
	assert_int_equal(topo_machine_add_ip_rails(m, "/sys", true), 0);
	i = topo_machine_rail_index(m, "lo", 1);
	assert_true(i >= 0);
	assert_true(m->rail[i].active);
	assert_string_equal(m->rail[i].state, "UP");
	assert_string_equal(m->rail[i].link_layer, "IP");
	assert_int_equal(m->rail[i].numa_node, TOPO_NUMA_UNKNOWN);
	free(m);
}

/*
 * This host's lo as topo_netifs_list finds it (getifaddrs), with its MTU,
 * speed and device read from a fixture sysfs: 127.0.0.1/8, up, loopback.
 */
static void test_netifs_list_reads_address_mtu_and_speed(void **state)
{
	struct topo_netif_list *l = calloc(1, sizeof(*l));
	const struct topo_netif *lo = NULL;
	size_t k;

	(void)state;
	assert_non_null(l);
	mkpath("devices/virtual/net/lo");
	link_to("class/net/lo", "../../devices/virtual/net/lo");
	put("class/net/lo/mtu", "9000\n");
	put("class/net/lo/speed", "25000\n");
	assert_int_equal(topo_netifs_list(root, l), 0);
	for (k = 0; k < l->n; k++)
		if (strcmp(l->nif[k].name, "lo") == 0)
			lo = &l->nif[k];
	assert_non_null(lo);
	assert_string_equal(lo->addr, "127.0.0.1");
	assert_int_equal(lo->prefix, 8);
	assert_true(lo->up && lo->loopback);
	assert_int_equal(lo->mtu, 9000);
	assert_true(lo->gbps == 25.0);
	assert_int_equal(lo->numa_node, TOPO_NUMA_UNKNOWN);
	assert_non_null(strstr(lo->rule, "lo is a virtual interface"));
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pci_nic_takes_node_of_its_pci_function),
		cmocka_unit_test(test_rxe_takes_node_of_parent_netdev_pci_ancestor),
		cmocka_unit_test(test_minus_one_numa_node_is_unknown_and_says_who),
		cmocka_unit_test(test_netdev_without_numa_ancestor_is_unknown),
		cmocka_unit_test(test_rxe_over_missing_netdev_is_unknown),
		cmocka_unit_test(test_unknown_device_is_enoent_and_leaves_output_alone),
		cmocka_unit_test(test_ip_interface_takes_node_of_its_device),
		cmocka_unit_test(test_virtual_interface_has_no_node_and_says_why),
		cmocka_unit_test(test_loopback_is_a_rail_only_when_asked_for),
		cmocka_unit_test(test_netifs_list_reads_address_mtu_and_speed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
