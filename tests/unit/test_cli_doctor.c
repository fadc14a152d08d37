/*
 * test_cli_doctor.c - railcp doctor's readers and checks: the readers over a
 * tree made in a temporary directory that stands in for /sys and /proc (a
 * RoCE port whose GID table has unused and half-filled entries and indexes
 * past 9, an InfiniBand port, netdevs, sysctls, NUMA nodes), the checks
 * over hosts built in memory (InfiniBand rails among them: an IPoIB address,
 * not a netdev MTU; a subnet manager), each problem with its fix, and the
 * JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli/doctor.h"
#include "fake_root.h"
#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[512];

static void put(const char *path, const char *text)
{
	fake_root_put(root, path, text);
}

#define RXE "sys/class/infiniband/rxe0/ports/1/"
#define MLX "sys/class/infiniband/mlx5_0/ports/1/"

static int tree_setup(void **state)
{
	char name[128];
	unsigned i;

	(void)state;
	fake_root_make(root, sizeof(root), "test_cli_doctor");
	put(RXE "state", "4: ACTIVE\n");
	put(RXE "link_layer", "Ethernet\n");
	put(RXE "gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3401\n");
	put(RXE "gid_attrs/types/0", "IB/RoCE v1\n");
	put(RXE "gid_attrs/ndevs/0", "eth1\n");
	put(RXE "gids/1", "fe80:0000:0000:0000:5054:00ff:fe12:3401\n");
	put(RXE "gid_attrs/types/1", "RoCE v2\n");
	put(RXE "gid_attrs/ndevs/1", "eth1\n");
	put(RXE "gids/2", "0000:0000:0000:0000:0000:0000:0000:0000\n"); /* unused */
	put(RXE "gid_attrs/types/2", "RoCE v2\n"); /* (unused: some kernels still say a type) */
	put(RXE "gids/3", "0000:0000:0000:0000:0000:ffff:c612:0001\n"); /* no type: skipped */
	put(RXE "gids/10", "0000:0000:0000:0000:0000:ffff:c612:0001\n");
	put(RXE "gid_attrs/types/10", "RoCE v2\n");
	put(RXE "gid_attrs/ndevs/10", "eth1\n");
	put(RXE "gids/9", "2001:0002:0000:0000:0000:0000:0000:0001\n");
	put(RXE "gid_attrs/types/9", "RoCE v2\n");
	put(RXE "gid_attrs/ndevs/9", "eth1\n");
	/* rxe's table has 1024 entries, most unused, listed in no particular order */
	for (i = 11; i < 1024; i++) {
		snprintf(name, sizeof(name), RXE "gids/%u", i);
		put(name, "0000:0000:0000:0000:0000:0000:0000:0000\n");
	}
	put(MLX "state", "1: DOWN\n");
	put(MLX "link_layer", "InfiniBand\n");
	put(MLX "gids/0", "fe80:0000:0000:0000:0002:c903:0001:0002\n");
	put(MLX "gid_attrs/types/0", "IB/RoCE v1\n");
	put("sys/class/net/eth1/mtu", "9000\n");
	put("sys/class/net/eth1/operstate", "up\n");
	put("proc/sys/net/ipv4/conf/all/arp_ignore", "0\n");
	put("proc/sys/net/ipv4/conf/eth1/arp_ignore", "2\n");
	put("proc/sys/net/ipv4/conf/all/arp_announce", "1\n");
	put("proc/sys/net/ipv4/conf/eth1/arp_announce", "0\n");
	put("proc/sys/net/ipv4/conf/eth1/rp_filter", "2\n"); /* no all/rp_filter */
	put("sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "128\n");
	put("sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", "100\n");
	put("sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages", "2\n");
	put("sys/devices/system/node/node0/hugepages/hugepages-1048576kB/free_hugepages", "1\n");
	put("sys/devices/system/node/node10/hugepages/hugepages-2048kB/nr_hugepages", "4\n");
	put("sys/devices/system/node/node2/hugepages/hugepages-2048kB/free_hugepages", "7\n");
	put("sys/devices/system/node/possible", "0-10\n");
	return 0;
}

static int tree_teardown(void **state)
{
	(void)state;
	return fake_root_remove(root);
}

static void test_gids_read_as_show_gids_prints_them(void **state)
{
	struct doc_rail r = {.dev = "rxe0", .port = 1};

	(void)state;
	assert_int_equal(cli_doctor_read_gids(root, &r), 0);
	assert_string_equal(r.state, "ACTIVE");
	assert_true(r.active);
	assert_string_equal(r.link_layer, "Ethernet");
	/* the unused entry and the one without a type are left out; 9 before 10 */
	assert_int_equal(r.n_gids, 4);
	assert_int_equal(r.gid[0].index, 0);
	assert_string_equal(r.gid[0].type, "RoCE v1");
	assert_int_equal(r.gid[0].ipver, 6);
	assert_string_equal(r.gid[0].ip, "fe80::5054:ff:fe12:3401");
	assert_string_equal(r.gid[0].ndev, "eth1");
	assert_string_equal(r.gid[1].type, "RoCE v2");
	assert_int_equal(r.gid[2].index, 9);
	assert_int_equal(r.gid[2].ipver, 6);
	assert_string_equal(r.gid[2].ip, "2001:2::1");
	assert_int_equal(r.gid[3].index, 10);
	assert_string_equal(r.gid[3].gid, "0000:0000:0000:0000:0000:ffff:c612:0001");
	assert_int_equal(r.gid[3].ipver, 4);
	assert_string_equal(r.gid[3].ip, "198.18.0.1");
}

static void test_ib_gid_is_ib_without_address(void **state)
{
	struct doc_rail r = {.dev = "mlx5_0", .port = 1};

	(void)state;
	assert_int_equal(cli_doctor_read_gids(root, &r), 0);
	assert_string_equal(r.state, "DOWN");
	assert_false(r.active);
	assert_int_equal(r.n_gids, 1);
	assert_string_equal(r.gid[0].type, "IB");
	assert_int_equal(r.gid[0].ipver, 0);
	assert_string_equal(r.gid[0].ip, "");
	assert_string_equal(r.gid[0].ndev, "");
}

static void test_missing_port_is_an_error_with_its_path(void **state)
{
	struct doc_rail r = {.dev = "rxe9", .port = 1};
	int err;

	(void)state;
	err = cli_doctor_read_gids(root, &r);
	assert_int_equal(err, -ENOENT);
	assert_non_null(strstr(rcp_err_msg(err), "rxe9/ports/1/gids"));
}

static void test_netdev_mtu_and_state(void **state)
{
	struct doc_rail r = {.netdev = "eth1"}, none = {.netdev = "eth7"};

	(void)state;
	assert_int_equal(cli_doctor_read_netdev(root, &r), 0);
	assert_int_equal(r.netdev_mtu, 9000);
	assert_string_equal(r.operstate, "up");
	assert_int_equal(cli_doctor_read_netdev(root, &none), -ENOENT);
	assert_int_equal(none.netdev_mtu, -1);
}

static void test_sysctl_is_the_larger_of_all_and_the_netdev(void **state)
{
	struct doc_sysctl s, none;

	(void)state;
	cli_doctor_read_sysctl(root, "eth1", &s);
	assert_int_equal(s.arp_ignore, 2);   /* all 0, eth1 2 */
	assert_int_equal(s.arp_announce, 1); /* all 1, eth1 0 */
	assert_int_equal(s.rp_filter, 2);    /* no all: eth1's */
	cli_doctor_read_sysctl(root, "eth7", &none);
	assert_int_equal(none.arp_ignore, 0); /* all alone */
	assert_int_equal(none.rp_filter, -1); /* neither */
}

static void test_nodes_in_id_order_with_hugepages(void **state)
{
	struct cli_doctor *d = calloc(1, sizeof(*d));

	(void)state;
	assert_non_null(d);
	assert_int_equal(cli_doctor_read_nodes(root, d), 0);
	assert_int_equal(d->n_nodes, 3);
	assert_int_equal(d->node[0].id, 0);
	assert_int_equal(d->node[1].id, 2);
	assert_int_equal(d->node[2].id, 10);
	assert_int_equal(d->node[0].huge_2m_total, 128);
	assert_int_equal(d->node[0].huge_2m_free, 100);
	assert_int_equal(d->node[0].huge_1g_total, 2);
	assert_int_equal(d->node[0].huge_1g_free, 1);
	assert_int_equal(d->node[1].huge_2m_free, 7);
	assert_int_equal(d->node[2].huge_2m_total, 4);
	free(d);
}

/* ---- checks over hosts built in memory ---- */

static void rail(struct cli_doctor *d, const char *dev, const char *netdev, const char *addr)
{
	struct doc_rail *r = &d->rail[d->n_rails++];
	unsigned a, b, c, e, prefix;

	snprintf(r->dev, sizeof(r->dev), "%s", dev);
	r->port = 1;
	r->planned = r->active = true;
	snprintf(r->state, sizeof(r->state), "ACTIVE");
	snprintf(r->link_layer, sizeof(r->link_layer), "Ethernet");
	r->active_mtu = 1024;
	snprintf(r->netdev, sizeof(r->netdev), "%s", netdev);
	r->netdev_mtu = 1500;
	snprintf(r->operstate, sizeof(r->operstate), "up");
	r->n_gids = 1;
	snprintf(r->gid[0].type, sizeof(r->gid[0].type), "RoCE v2");
	r->gid[0].ipver = 4;
	snprintf(r->gid[0].ip, sizeof(r->gid[0].ip), "%.*s", (int)strcspn(addr, "/"), addr);
	assert_int_equal(sscanf(addr, "%u.%u.%u.%u/%u", &a, &b, &c, &e, &prefix), 5);
	r->addr[0].addr = a << 24 | b << 16 | c << 8 | e;
	r->addr[0].prefix = prefix;
	snprintf(r->addr[0].text, sizeof(r->addr[0].text), "%s", addr);
	r->n_addrs = 1;
	r->sys = (struct doc_sysctl){2, 2, 2};
}

/* Two rails on their own subnets, memlock unlimited, pools on hugepages: clean. */
static struct cli_doctor *host(void)
{
	struct cli_doctor *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	rail(d, "rxe0", "eth1", "198.18.0.1/24");
	rail(d, "rxe1", "eth2", "198.18.1.1/24");
	d->memlock_limit = UINT64_MAX;
	d->memlock_need = 64u << 20;
	d->n_nodes = 1;
	d->node[0] = (struct doc_node){
		.huge_2m_total = 128, .huge_2m_free = 128, .pool_bytes = 64u << 20};
	return d;
}

/* The one problem of what, checked for its fix; fails unless there is exactly one. */
static const struct doc_problem *only(const struct cli_doctor *d, const char *what)
{
	const struct doc_problem *p = NULL;
	size_t i;

	for (i = 0; i < d->n_probs; i++)
		if (!strcmp(d->prob[i].what, what)) {
			assert_null(p);
			p = &d->prob[i];
		}
	assert_non_null(p);
	return p;
}

static void test_clean_host_has_no_problem(void **state)
{
	struct cli_doctor *d = host();

	(void)state;
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 0);
	assert_false(cli_doctor_hurts(d));
	free(d);
}

static void test_rail_at_other_mtu_is_found_with_fix(void **state)
{
	struct cli_doctor *d = host();
	const struct doc_problem *p;

	(void)state;
	rail(d, "rxe2", "eth3", "198.18.2.1/24");
	d->rail[1].netdev_mtu = 9000;
	d->rail[1].active_mtu = 4096;
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 1);
	p = only(d, "rxe1:1");
	assert_true(p->hurts);
	assert_string_equal(p->fix, "ip link set dev eth2 mtu 1500");
	assert_non_null(strstr(p->text, "MTU 9000 (port MTU 4096) but the other rails' have 1500"));
	assert_true(cli_doctor_hurts(d));
	free(d);
}

static void test_netdev_too_small_for_port_mtu(void **state)
{
	struct cli_doctor *d = host();
	const struct doc_problem *p;

	(void)state;
	d->rail[0].active_mtu = d->rail[1].active_mtu = 4096;
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 2);
	p = only(d, "rxe0:1");
	assert_true(p->hurts);
	assert_string_equal(p->fix, "ip link set dev eth1 mtu 4176");
	/* a netdev that carries the frames is no problem */
	d->n_probs = 0;
	d->rail[0].netdev_mtu = d->rail[1].netdev_mtu = 4176;
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 0);
	free(d);
}

static void test_shared_subnet_needs_arp_settings(void **state)
{
	struct cli_doctor *d = host();
	const struct doc_problem *p;

	(void)state;
	/* the kernel's defaults on separate subnets: nothing to say */
	d->rail[0].sys = d->rail[1].sys = (struct doc_sysctl){0, 0, 1};
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 0);
	/* the same subnet: each setting once, naming both interfaces */
	d->rail[1].addr[0].addr = 198u << 24 | 18 << 16 | 0 << 8 | 2;
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 3);
	p = only(d, "arp_ignore");
	assert_true(p->hurts);
	assert_non_null(strstr(p->text, "eth1=0, eth2=0"));
	assert_string_equal(p->fix,
			    "sysctl -w net.ipv4.conf.all.arp_ignore=2 "
			    "net.ipv4.conf.eth1.arp_ignore=2 net.ipv4.conf.eth2.arp_ignore=2");
	assert_true(only(d, "arp_announce")->hurts);
	assert_true(only(d, "rp_filter")->hurts);
	/* as librdmacm asks: none left */
	d->n_probs = 0;
	d->rail[0].sys = d->rail[1].sys = (struct doc_sysctl){2, 2, 2};
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 0);
	/* a rail outside the plan is not checked */
	d->rail[1].sys = (struct doc_sysctl){0, 2, 2};
	d->rail[1].planned = false;
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 0);
	free(d);
}

static void test_memlock_below_pools_hurts_unless_cap(void **state)
{
	struct cli_doctor *d = host();
	const struct doc_problem *p;

	(void)state;
	d->memlock_limit = 64 << 10;
	cli_doctor_check(d);
	p = only(d, "memlock");
	assert_true(p->hurts);
	assert_string_equal(p->fix, "ulimit -l unlimited");
	assert_non_null(
		strstr(p->text, "need 64.0 MiB of locked memory but the limit is 64.0 KiB"));
	d->n_probs = 0;
	d->lock_any = true;
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 0);
	free(d);
}

static void test_too_few_hugepages_is_a_note(void **state)
{
	struct cli_doctor *d = host();
	const struct doc_problem *p;

	(void)state;
	d->node[0].id = 1;
	d->node[0].huge_2m_total = 10;
	d->node[0].huge_2m_free = 4;
	cli_doctor_check(d);
	p = only(d, "node 1");
	assert_false(p->hurts);
	assert_false(cli_doctor_hurts(d));
	/* 32 pages wanted, 4 free of 10: reserve 38 */
	assert_string_equal(p->fix, "echo 38 > "
				    "/sys/devices/system/node/node1/hugepages/hugepages-2048kB/"
				    "nr_hugepages");
	free(d);
}

static void test_down_port_is_a_note_unless_none_is_active(void **state)
{
	struct cli_doctor *d = host();
	const struct doc_problem *p;

	(void)state;
	d->rail[1].active = d->rail[1].planned = false;
	snprintf(d->rail[1].state, sizeof(d->rail[1].state), "DOWN");
	snprintf(d->rail[1].operstate, sizeof(d->rail[1].operstate), "down");
	cli_doctor_check(d);
	p = only(d, "rxe1:1");
	assert_false(p->hurts);
	assert_string_equal(p->fix, "ip link set dev eth2 up");
	d->n_probs = 0;
	d->rail[0].active = false;
	cli_doctor_check(d);
	assert_true(only(d, "rxe0:1")->hurts);
	assert_true(cli_doctor_hurts(d));
	free(d);
}

static void test_no_ip_gid_hurts(void **state)
{
	struct cli_doctor *d = host();
	const struct doc_problem *p;

	(void)state;
	d->rail[0].n_gids = 0;
	cli_doctor_check(d);
	p = only(d, "rxe0:1");
	assert_true(p->hurts);
	assert_string_equal(p->fix, "ip addr add ADDRESS/PREFIX dev eth1");
	free(d);
}

/* rail i as an InfiniBand port: no IP GID, its IPoIB netdev in connected mode (MTU 65520). */
static void rail_ib(struct cli_doctor *d, size_t i)
{
	struct doc_rail *r = &d->rail[i];

	snprintf(r->link_layer, sizeof(r->link_layer), "InfiniBand");
	r->n_gids = 0; /* its GIDs are no addresses */
	r->netdev_mtu = 65520;
}

static void test_ib_rail_needs_an_ipoib_address_not_a_netdev_mtu(void **state)
{
	struct cli_doctor *d = host();

	(void)state;
	rail_ib(d, 1);
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 0);
	d->rail[1].n_addrs = 0;
	cli_doctor_check(d);
	assert_string_equal(only(d, "rxe1:1")->fix, "ip addr add ADDRESS/PREFIX dev eth2");
	assert_true(cli_doctor_hurts(d));
	d->n_probs = 0;
	d->rail[1].netdev[0] = '\0';
	cli_doctor_check(d);
	assert_string_equal(only(d, "rxe1:1")->fix, "modprobe ib_ipoib");
	/* with HOST, a port MTU that differs is the subnet manager's to fix */
	d->n_probs = 0;
	d->rail[1].n_addrs = 1;
	d->host = "srv";
	d->n_peer = 1;
	d->peer[0] = (struct doc_peer_rail){
		.rail = "rxe1:1", .peer = "rxe1:1", .mtu = 4096, .peer_mtu = 2048, .ok = true};
	cli_doctor_check(d);
	assert_non_null(strstr(only(d, "rxe1:1")->text, "the subnet manager gives each port"));
	free(d);
}

static void test_ib_port_in_init_wants_a_subnet_manager(void **state)
{
	struct cli_doctor *d = host();

	(void)state;
	rail_ib(d, 1);
	d->rail[1].active = false;
	snprintf(d->rail[1].state, sizeof(d->rail[1].state), "INIT");
	snprintf(d->rail[1].operstate, sizeof(d->rail[1].operstate), "down");
	cli_doctor_check(d);
	assert_string_equal(only(d, "rxe1:1")->fix, "systemctl start opensm");
	assert_non_null(strstr(only(d, "rxe1:1")->text, "INIT, no subnet manager has configured"));
	free(d);
}

static void test_no_device_says_how_to_get_soft_roce(void **state)
{
	struct cli_doctor *d = calloc(1, sizeof(*d));
	const struct doc_problem *p;

	(void)state;
	assert_non_null(d);
	d->no_device = true;
	d->memlock_limit = UINT64_MAX;
	snprintf(d->suggest_netdev, sizeof(d->suggest_netdev), "eth0");
	cli_doctor_check(d);
	p = only(d, "devices");
	assert_true(p->hurts);
	assert_string_equal(p->fix, "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0");
	free(d);
}

static void test_peer_failure_and_mtu_mismatch_hurt(void **state)
{
	struct cli_doctor *d = host();

	(void)state;
	d->host = "srv";
	d->n_peer = 2;
	d->peer[0] = (struct doc_peer_rail){.rail = "rxe0:1",
					    .peer = "rxe0:1",
					    .mtu = 4096,
					    .peer_mtu = 1024,
					    .ok = true,
					    .rtt_ms = 0.5};
	d->peer[1] = (struct doc_peer_rail){.rail = "rxe1:1", .error = "no route"};
	cli_doctor_check(d);
	assert_int_equal(d->n_probs, 2);
	assert_non_null(strstr(only(d, "rxe0:1")->text, "the rail runs at 1024"));
	assert_non_null(strstr(only(d, "rxe1:1")->text, "no session with srv over it: no route"));
	assert_true(cli_doctor_hurts(d));
	free(d);
}

static void test_json_has_rails_peer_and_problems(void **state)
{
	struct cli_doctor *d = host();
	json_t *j, *r, *p;

	(void)state;
	d->rail[1].netdev_mtu = 9000;
	d->host = "srv";
	d->n_peer = 1;
	d->peer[0] = (struct doc_peer_rail){.rail = "rxe0:1",
					    .peer = "rxe0:1",
					    .mtu = 1024,
					    .peer_mtu = 1024,
					    .ok = true,
					    .rtt_ms = 0.25,
					    .rtt_ms_median = 0.5};
	cli_doctor_check(d);
	j = cli_doctor_json(d);
	assert_non_null(j);
	assert_false(json_is_true(json_object_get(j, "ok")));
	r = json_array_get(json_object_get(j, "rails"), 1);
	assert_string_equal(json_string_value(json_object_get(r, "name")), "rxe1:1");
	assert_int_equal(json_integer_value(json_object_get(r, "netdev_mtu")), 9000);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(r, "sysctl"), "arp_ignore")), 2);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(r, "gids"), 0), "ip")),
			    "198.18.1.1");
	p = json_array_get(json_object_get(j, "peer"), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "path_mtu")), 1024);
	assert_true(json_real_value(json_object_get(p, "rtt_ms")) == 0.25);
	assert_true(json_real_value(json_object_get(p, "rtt_ms_median")) == 0.5);
	p = json_array_get(json_object_get(j, "problems"), 0);
	assert_string_equal(json_string_value(json_object_get(p, "fix")),
			    "ip link set dev eth2 mtu 1500");
	assert_true(json_is_null(json_object_get(json_object_get(j, "memlock"), "limit_bytes")));
	json_decref(j);
	free(d);
}

static void test_text_has_rails_peer_problems_and_fixes(void **state)
{
	struct cli_doctor *d = host();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	d->rail[1].netdev_mtu = 9000;
	d->host = "srv";
	d->n_peer = 2;
	d->peer[0] = (struct doc_peer_rail){.rail = "rxe0:1",
					    .peer = "rxe0:1",
					    .mtu = 1024,
					    .peer_mtu = 4096,
					    .ok = true,
					    .rtt_ms = 0.25,
					    .rtt_ms_median = 0.5};
	d->peer[1] = (struct doc_peer_rail){.rail = "rxe1:1", .error = "no route"};
	cli_doctor_check(d);
	cli_doctor_print(f, d);
	fclose(f);
	assert_non_null(strstr(text, "rxe1:1  ACTIVE  Ethernet  port MTU 1024  (in the plan)\n"
				     "  netdev eth2 (up) MTU 9000  addresses 198.18.1.1/24\n"
				     "  arp_ignore 2, arp_announce 2, rp_filter 2\n"));
	assert_non_null(strstr(text,
			       "  rxe0:1 -> rxe0:1: MTU 1024 here, 4096 there, path MTU 1024; "
			       "round trip 0.250 ms (median 0.500)\n"));
	assert_non_null(strstr(text, "  rxe1:1: failed\n"));
	assert_non_null(strstr(text, "problem: rxe1:1: its netdev eth2 has MTU 9000"));
	assert_non_null(strstr(text, "\n  fix: ip link set dev eth2 mtu 1500\n"));
	assert_non_null(strstr(text, "problem: rxe1:1: no session with srv over it: no route\n"));
	assert_non_null(strstr(text, "doctor: 3 problems that would hurt a copy, 0 notes\n"));
	free(text);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gids_read_as_show_gids_prints_them),
		cmocka_unit_test(test_ib_gid_is_ib_without_address),
		cmocka_unit_test(test_missing_port_is_an_error_with_its_path),
		cmocka_unit_test(test_netdev_mtu_and_state),
		cmocka_unit_test(test_sysctl_is_the_larger_of_all_and_the_netdev),
		cmocka_unit_test(test_nodes_in_id_order_with_hugepages),
		cmocka_unit_test(test_clean_host_has_no_problem),
		cmocka_unit_test(test_rail_at_other_mtu_is_found_with_fix),
		cmocka_unit_test(test_netdev_too_small_for_port_mtu),
		cmocka_unit_test(test_shared_subnet_needs_arp_settings),
		cmocka_unit_test(test_memlock_below_pools_hurts_unless_cap),
		cmocka_unit_test(test_too_few_hugepages_is_a_note),
		cmocka_unit_test(test_down_port_is_a_note_unless_none_is_active),
		cmocka_unit_test(test_no_ip_gid_hurts),
		cmocka_unit_test(test_ib_rail_needs_an_ipoib_address_not_a_netdev_mtu),
		cmocka_unit_test(test_ib_port_in_init_wants_a_subnet_manager),
		cmocka_unit_test(test_no_device_says_how_to_get_soft_roce),
		cmocka_unit_test(test_peer_failure_and_mtu_mismatch_hurt),
		cmocka_unit_test(test_json_has_rails_peer_and_problems),
		cmocka_unit_test(test_text_has_rails_peer_problems_and_fixes),
	};

	return cmocka_run_group_tests(tests, tree_setup, tree_teardown);
}
