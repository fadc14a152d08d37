/*
 * devices_net.c - the IP interfaces in `railcp devices`: the rails a TCP
 * copy runs on, as topology/'s topo_netifs_list finds them (the same list
 * the TCP transport's rails come from), and whether a copy uses each.
 */
#include "cli/cli.h"

#include "topology/topology.h"

#include <string.h>

const char *cli_netif_unused(const struct topo_netif *n)
{
	if (!n->up)
		return "down";
	if (n->loopback)
		return "loopback (a rail only when --rails names it, and only to this host)";
	return NULL;
}

static json_t *netif_json(const struct topo_netif *n)
{
	json_t *o = json_object();
	const char *why = cli_netif_unused(n);

	json_object_set_new(o, "name", cli_json_text(n->name));
	json_object_set_new(o, "address", json_string(n->addr));
	json_object_set_new(o, "prefix", json_integer(n->prefix));
	json_object_set_new(o, "state", json_string(n->up ? "UP" : "DOWN"));
	json_object_set_new(o, "loopback", json_boolean(n->loopback));
	json_object_set_new(o, "mtu", n->mtu ? json_integer(n->mtu) : json_null());
	json_object_set_new(o, "speed_gbps", n->gbps > 0 ? json_real(n->gbps) : json_null());
	json_object_set_new(o, "numa_node",
			    n->numa_node >= 0 ? json_integer(n->numa_node) : json_null());
	json_object_set_new(o, "numa_rule", cli_json_text(n->rule));
	json_object_set_new(o, "used", json_boolean(!why));
	json_object_set_new(o, "unused_why", why ? json_string(why) : json_null());
	return o;
}

json_t *cli_netifs_json(const struct topo_netif_list *l)
{
	json_t *a = json_array();
	size_t k;

	for (k = 0; a && k < l->n; k++)
		json_array_append_new(a, netif_json(&l->nif[k]));
	return a;
}

static void netif_print(FILE *f, const struct topo_netif *n)
{
	const char *why = cli_netif_unused(n);

	fprintf(f, "%s  %s/%u  %s  ", n->name, n->addr, n->prefix, n->up ? "UP" : "DOWN");
	if (n->mtu)
		fprintf(f, "mtu %u  ", n->mtu);
	else
		fprintf(f, "mtu unknown  ");
	if (n->gbps > 0)
		fprintf(f, "%g Gb/s  ", n->gbps);
	else
		fprintf(f, "speed unknown  ");
	if (n->numa_node >= 0)
		fprintf(f, "numa node %d (%s)\n", n->numa_node, n->rule);
	else
		fprintf(f, "numa node %s\n", n->rule);
	if (why)
		fprintf(f, "  not a rail of a TCP copy: %s\n", why);
	else
		fprintf(f, "  a rail of a TCP copy\n");
}

void cli_netifs_print(FILE *f, const struct topo_netif_list *l, bool tcp_by_default)
{
	size_t k, used = 0;

	fprintf(f, "IP interfaces (rails of a copy with --transport tcp):\n");
	for (k = 0; k < l->n; k++) {
		netif_print(f, &l->nif[k]);
		used += !cli_netif_unused(&l->nif[k]);
	}
	if (!used)
		fprintf(f, "No interface a TCP copy would use: none with an IPv4 address is up, "
			   "loopback aside.\n");
	else if (tcp_by_default)
		fprintf(f, "A copy can go over %s with --transport tcp, or auto (the default).\n",
			used > 1 ? "these rails" : "this rail");
}
