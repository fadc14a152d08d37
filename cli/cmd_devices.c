/*
 * cmd_devices.c - railcp devices: what RDMA hardware this host has, with the
 * facts that decide how railcp uses it (state, speed, RoCE GIDs, NUMA node).
 */
#include "cli/cli.h"

#include "common/common.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

static json_t *gid_json(const struct eng_gid *g)
{
	json_t *o = json_object();

	json_object_set_new(o, "index", json_integer(g->index));
	json_object_set_new(o, "type", json_string(eng_gid_type_str(g->type)));
	json_object_set_new(o, "address", json_string(g->addr));
	json_object_set_new(o, "netdev", g->netdev[0] ? json_string(g->netdev) : json_null());
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
	json_object_set_new(o, "netdev", p->netdev[0] ? json_string(p->netdev) : json_null());
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
		json_object_set_new(o, "numa_rule", json_string(dev->numa_rule));
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
	fprintf(f, "usage: railcp devices [--json]\n\n"
		   "Lists RDMA devices and ports: state, link layer, active MTU, speed\n"
		   "(lanes x lane rate), GIDs with their type, the netdev behind a RoCE port,\n"
		   "and the NUMA node each device is local to.\n\n"
		   "  --json       one JSON object on stdout\n"
		   "  -h, --help   print these options and exit\n");
}

static int devices_opt(void *ctx, int c, const char *arg)
{
	(void)arg;
	if (c != 'j')
		return -1;
	*(bool *)ctx = true;
	return 0;
}

int cli_cmd_devices(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	struct eng_device_list *list;
	bool as_json = false;
	int first, err;

	err = cli_options("devices", argc, argv, opts, devices_opt, &as_json, devices_usage,
			  &first);
	if (err)
		return err < 0 ? CLI_EXIT_OK : err;
	if (first < argc)
		return cli_usage_error("devices", "unexpected argument '%s'", argv[first]);

	err = eng_device_list_create("/sys", &list);
	if (err) {
		cli_fail(err);
		return as_json ? cli_json_error(CLI_EXIT_FAIL, NULL) : CLI_EXIT_FAIL;
	}
	if (as_json) {
		json_t *j = cli_devices_json(list);

		err = j ? cli_json_print(stdout, j) : -ENOMEM;
		json_decref(j);
	} else {
		cli_devices_print(stdout, list);
	}
	eng_device_list_destroy(list);
	return err ? cli_fail(err) : CLI_EXIT_OK;
}
