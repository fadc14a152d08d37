/*
 * cmd_devices.c - railcp devices: what RDMA hardware this host has, with the
 * facts that decide how railcp uses it (state, speed, GIDs, the netdev: a
 * RoCE port's or an InfiniBand port's IPoIB interface, NUMA node),
 * and the IP interfaces a TCP copy takes as rails (devices_net.c).
 */
#include "cli/cli.h"
#include "cli/place.h"

#include "common/common.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static json_t *gid_json(const struct eng_gid *g)
{
	json_t *o = json_object();

	json_object_set_new(o, "index", json_integer(g->index));
	json_object_set_new(o, "type", json_string(eng_gid_type_str(g->type)));
	json_object_set_new(o, "address", json_string(g->addr));
	json_object_set_new(o, "netdev", g->netdev[0] ? cli_json_text(g->netdev) : json_null());
	return o;
}

static json_t *port_json(const struct eng_port *p)
{
	json_t *o = json_object(), *gids = json_array();
	size_t i;

	json_object_set_new(o, "port", json_integer(p->num));
	json_object_set_new(o, "state", json_string(p->state));
	json_object_set_new(o, "link_layer", json_string(p->link_layer));
	json_object_set_new(o, "active_mtu", json_integer(p->active_mtu));
	json_object_set_new(o, "width", json_integer(p->width));
	json_object_set_new(o, "lane_gbps", json_real(p->lane_gbps));
	json_object_set_new(o, "speed_gbps", json_real(p->gbps));
	json_object_set_new(o, "netdev", p->netdev[0] ? cli_json_text(p->netdev) : json_null());
	for (i = 0; i < p->n_gids; i++)
		json_array_append_new(gids, gid_json(&p->gids[i]));
	json_object_set_new(o, "gids", gids);
	return o;
}

json_t *cli_devices_json(const struct eng_device_list *list)
{
	json_t *root = json_object(), *devs = json_array();
	size_t d;
	unsigned p;

	if (!root || !devs) {
		json_decref(root);
		json_decref(devs);
		return NULL;
	}
	for (d = 0; d < list->n; d++) {
		const struct eng_device *dev = &list->dev[d];
		json_t *o = json_object(), *ports = json_array();

		json_object_set_new(o, "name", json_string(dev->name));
		json_object_set_new(o, "node_guid", json_string(dev->node_guid));
		json_object_set_new(o, "numa_node",
				    dev->numa_node >= 0 ? json_integer(dev->numa_node)
							: json_null());
		json_object_set_new(o, "numa_rule", cli_json_text(dev->numa_rule));
		for (p = 0; p < dev->n_ports; p++)
			json_array_append_new(ports, port_json(&dev->ports[p]));
		json_object_set_new(o, "ports", ports);
		json_array_append_new(devs, o);
	}
	json_object_set_new(root, "devices", devs);
	return root;
}

static void port_print(FILE *f, const struct eng_port *p)
{
	size_t i;

	fprintf(f, "  port %u: %-6s %-10s mtu %-4u ", p->num, p->state, p->link_layer,
		p->active_mtu);
	if (p->width && p->lane_gbps > 0)
		fprintf(f, "%ux %g Gb/s = %g Gb/s", p->width, p->lane_gbps, p->gbps);
	else
		fprintf(f, "speed unknown");
	if (p->netdev[0])
		fprintf(f, "  netdev %s", p->netdev);
	fputc('\n', f);
	for (i = 0; i < p->n_gids; i++)
		fprintf(f, "    gid %-3u %-8s %s\n", p->gids[i].index,
			eng_gid_type_str(p->gids[i].type), p->gids[i].addr);
}

void cli_devices_print(FILE *f, const struct eng_device_list *list)
{
	size_t d;
	unsigned p;

	for (d = 0; d < list->n; d++) {
		const struct eng_device *dev = &list->dev[d];

		if (dev->numa_node >= 0)
			fprintf(f, "%s  guid %s  numa node %d (%s)\n", dev->name, dev->node_guid,
				dev->numa_node, dev->numa_rule);
		else
			fprintf(f, "%s  guid %s  numa node %s\n", dev->name, dev->node_guid,
				dev->numa_rule);
		for (p = 0; p < dev->n_ports; p++)
			port_print(f, &dev->ports[p]);
	}
}

static void devices_usage(FILE *f)
{
	fprintf(f, "usage: railcp devices [--json] [--transport KIND]\n\n"
		   "Lists RDMA devices and ports: state, link layer, active MTU, speed\n"
		   "(lanes x lane rate), GIDs with their type, the netdev behind a RoCE port\n"
		   "or an InfiniBand port's IPoIB interface, and the NUMA node each device is\n"
		   "local to. Then the IP interfaces, the rails of a TCP copy: IPv4 address,\n"
		   "state, MTU, speed, NUMA node, and whether a copy uses it.\n\n"
		   "  --json            one JSON object on stdout\n"
		   "  --transport KIND  rdma: the RDMA devices only (none is an error),\n"
		   "                    tcp: the IP interfaces only, auto: both (default)\n"
		   "  -h, --help        print these options and exit\n");
}

struct devices_cmd {
	bool json;
	struct cli_place place; /* only its transport */
};

static int devices_opt(void *ctx, int c, const char *arg)
{
	struct devices_cmd *cmd = ctx;

	if (c == 'j') {
		cmd->json = true;
		return 0;
	}
	return c == CLI_OPT_TRANSPORT ? cli_place_opt("devices", &cmd->place, c, arg) : -1;
}

/* What this host has, as the transport asks: no RDMA device is no error for auto. */
struct devices_found {
	struct eng_device_list *rdma;
	struct topo_netif_list *ifs;
	bool no_rdma;
	char no_rdma_why[512]; /* the sentence that says so */
};

static int devices_find(enum cli_transport t, struct devices_found *f)
{
	int err = 0;

	if (t != CLI_TRANSPORT_TCP) {
		err = eng_device_list_create("/sys", &f->rdma);
		f->no_rdma = err == -ENODEV && t == CLI_TRANSPORT_AUTO;
		if (err && !f->no_rdma)
			return err;
		if (f->no_rdma)
			snprintf(f->no_rdma_why, sizeof(f->no_rdma_why), "%s", rcp_err_msg(err));
	}
	if (t == CLI_TRANSPORT_RDMA)
		return 0;
	f->ifs = malloc(sizeof(*f->ifs));
	if (!f->ifs)
		return -ENOMEM;
	err = topo_netifs_list("/sys", f->ifs);
	if (!err && f->no_rdma && f->ifs->n == 0)
		err = rcp_err(-ENODEV, "%s; and no IP interface has an IPv4 address",
			      f->no_rdma_why);
	return err;
}

static int devices_json(const struct devices_found *f)
{
	json_t *j = f->rdma ? cli_devices_json(f->rdma) : json_object();
	int err = -ENOMEM;

	if (j && f->no_rdma) {
		json_object_set_new(j, "devices", json_array());
		json_object_set_new(j, "rdma_error", cli_json_text(f->no_rdma_why));
	}
	if (j && f->ifs)
		json_object_set_new(j, "interfaces", cli_netifs_json(f->ifs));
	if (j)
		err = cli_json_print(stdout, j);
	json_decref(j);
	return err;
}

/* Whether a port is ACTIVE: else --transport auto copies over TCP (cli_place_machine). */
static bool rdma_active(const struct eng_device_list *list)
{
	size_t d;
	unsigned p;

	for (d = 0; d < list->n; d++)
		for (p = 0; p < list->dev[d].n_ports; p++)
			if (list->dev[d].ports[p].active)
				return true;
	return false;
}

static void devices_text(const struct devices_found *f)
{
	if (f->rdma)
		cli_devices_print(stdout, f->rdma);
	if (f->no_rdma)
		printf("%s\n", f->no_rdma_why);
	if (f->ifs) {
		if (f->rdma)
			putchar('\n');
		cli_netifs_print(stdout, f->ifs, f->no_rdma || (f->rdma && !rdma_active(f->rdma)));
	}
}

int cli_cmd_devices(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"transport", required_argument, NULL, CLI_OPT_TRANSPORT},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct devices_cmd cmd = {0};
	struct devices_found found = {0};
	int first, err;

	err = cli_options("devices", argc, argv, opts, devices_opt, &cmd, devices_usage, &first);
	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	if (first < argc)
		return cli_usage_error("devices", "unexpected argument '%s'", argv[first]);

	err = devices_find(cmd.place.transport, &found);
	if (err) {
		eng_device_list_destroy(found.rdma);
		free(found.ifs);
		cli_fail(err);
		return cmd.json ? cli_json_error(CLI_EXIT_FAIL, NULL) : CLI_EXIT_FAIL;
	}
	if (cmd.json)
		err = devices_json(&found);
	else
		devices_text(&found);
	eng_device_list_destroy(found.rdma);
	free(found.ifs);
	return err ? cli_fail(err) : CLI_EXIT_OK;
}
