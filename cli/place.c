/*
 * place.c - what every command that runs workers shares: the placement
 * options (--numa, --rails, --qps-per-rail, --buffer-mib, --profile), the
 * machine as this host's binding, hwloc and the engine's devices describe it,
 * and the plan those give.
 */
#include "cli/place.h"

#include "common/common.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A count from 0 to max, where 0 means none: the plan's TOPO_NONE. */
static int parse_count_or_none(const char *cmd, const char *opt, const char *v, unsigned max,
			       unsigned *out)
{
	unsigned x;

	if (cli_parse_count_or_none(cmd, opt, v, max, &x))
		return CLI_EXIT_USAGE;
	*out = x == 0 ? TOPO_NONE : x;
	return 0;
}

int cli_place_opt(const char *cmd, struct cli_place *p, int c, const char *arg)
{
	switch (c) {
	case CLI_OPT_HELPERS:
		return parse_count_or_none(cmd, "--helpers", arg, TOPO_MAX_HELPERS, &p->helpers);
	case CLI_OPT_IO_DEPTH:
		return parse_count_or_none(cmd, "--io-depth", arg, TOPO_MAX_IO_DEPTH, &p->io_depth);
	case CLI_OPT_PROFILE:
		p->profile = arg;
		return 0;
	case CLI_OPT_QPS:
		return cli_parse_count(cmd, "--qps-per-rail", arg, TOPO_MAX_QPS_PER_RAIL,
				       &p->opts.qps_per_rail);
	case CLI_OPT_BUFFER:
		return cli_parse_count(cmd, "--buffer-mib", arg, TOPO_MAX_BUFFER_MIB,
				       &p->opts.buffer_mib);
	case CLI_OPT_NUMA:
		if (topo_bitmap_parse(arg, &p->opts.nodes) != 0)
			return cli_usage_error(cmd, "--numa needs a node list like 0,1, not '%s'",
					       arg);
		p->opts.nodes_set = true;
		return 0;
	case CLI_OPT_TRANSPORT:
		if (strcmp(arg, "auto") == 0)
			p->transport = CLI_TRANSPORT_AUTO;
		else if (strcmp(arg, "rdma") == 0)
			p->transport = CLI_TRANSPORT_RDMA;
		else if (strcmp(arg, "tcp") == 0)
			p->transport = CLI_TRANSPORT_TCP;
		else
			return cli_usage_error(cmd, "--transport is rdma, tcp or auto, not '%s'",
					       arg);
		return 0;
	case CLI_OPT_RAILS:
		if (topo_opts_parse_rails(arg, &p->opts) != 0)
			return cli_usage_error(cmd, "%s", rcp_err_msg(-EINVAL));
		return 0;
	}
	return -1;
}

int cli_place_check(const char *cmd, const struct cli_place *p)
{
	if (p->profile && (p->opts.nodes_set || p->opts.n_rails))
		return cli_usage_error(cmd, "--profile places workers and rails itself; "
					    "leave out --numa and --rails");
	return 0;
}

/* Add every port of an engine device listing to m as rails. */
static int machine_add_engine_rails(struct topo_machine *m, const struct eng_device_list *list)
{
	size_t d;
	unsigned p;
	int err;

	for (d = 0; d < list->n; d++) {
		const struct eng_device *dev = &list->dev[d];

		for (p = 0; p < dev->n_ports; p++) {
			const struct eng_port *port = &dev->ports[p];
			struct topo_rail r;

			memset(&r, 0, sizeof(r));
			snprintf(r.dev, sizeof(r.dev), "%s", dev->name);
			r.port = port->num;
			snprintf(r.state, sizeof(r.state), "%s", port->state);
			r.active = port->active;
			snprintf(r.link_layer, sizeof(r.link_layer), "%s", port->link_layer);
			r.gbps = port->gbps;
			r.numa_node = dev->numa_node;
			snprintf(r.rule, sizeof(r.rule), "%s", dev->numa_rule);
			err = topo_machine_add_rail(m, &r);
			if (err && err != -EEXIST)
				return err;
		}
	}
	return 0;
}

int cli_machine_load(const char *xml, struct topo_machine **m_out)
{
	struct eng_device_list *list = NULL;
	struct topo_binding bind;
	struct topo_machine *m;
	int err;

	if (xml)
		return topo_machine_read_xml(xml, m_out);
	err = topo_binding_of_process(&bind);
	err = err ? err : topo_machine_create(NULL, &bind, &m);
	if (err)
		return err;
	err = eng_device_list_create("/sys", &list);
	if (err == -ENODEV) {
		err = 0; /* a host without RDMA still has a machine to show */
		rcp_err_clear();
	} else if (!err) {
		err = machine_add_engine_rails(m, list);
		eng_device_list_destroy(list);
	}
	if (err) {
		topo_machine_destroy(m);
		return err;
	}
	*m_out = m;
	return 0;
}

int cli_place_plan(const struct cli_place *p, const struct topo_machine *m,
		   struct topo_plan **plan_out)
{
	int err = p->profile ? topo_profile_load(p->profile, m, &p->opts, plan_out)
			     : topo_plan_build(m, &p->opts, plan_out);

	if (!err) {
		(*plan_out)->helpers = p->helpers;
		(*plan_out)->io_depth = p->io_depth;
	}
	return err;
}

/*
 * A port that is not ACTIVE is left out of the plan (topo_plan_build): say
 * so, since the run then has fewer rails than the machine. A rail that comes
 * back is in the next run's plan.
 */
static void say_left_out(const struct cli_place *p, const struct topo_machine *m)
{
	size_t i;

	if (p->opts.n_rails || p->profile)
		return; /* the rails were named: an inactive one named is an error of its own */
	for (i = 0; i < m->n_rails; i++)
		if (!m->rail[i].active)
			rcp_log(RCP_LOG_NOTICE, "%s:%u is %s: this run goes without it",
				m->rail[i].dev, m->rail[i].port, m->rail[i].state);
}

static bool has_active_rail(const struct topo_machine *m)
{
	size_t i;

	for (i = 0; i < m->n_rails; i++)
		if (m->rail[i].active)
			return true;
	return false;
}

int cli_place_machine(struct cli_place *p, const char *xml, struct topo_machine **m_out)
{
	struct topo_machine *m;
	int err = cli_machine_load(xml, &m);

	if (err)
		return err;
	if (p->transport == CLI_TRANSPORT_AUTO) {
		p->transport = xml || has_active_rail(m) ? CLI_TRANSPORT_RDMA : CLI_TRANSPORT_TCP;
		p->chose = true;
	}
	if (p->transport == CLI_TRANSPORT_TCP) {
		m->n_rails = 0; /* the RDMA ports: not TCP's rails */
		err = xml ? rcp_err(-EINVAL, "--transport tcp describes this host's interfaces, "
					     "not an hwloc XML file's")
			  : topo_machine_add_ip_rails(m, "/sys", p->opts.n_rails > 0 || p->profile);
	}
	if (err) {
		topo_machine_destroy(m);
		return err;
	}
	*m_out = m;
	return 0;
}

enum eng_transport_kind cli_place_transport(const struct cli_place *p)
{
	return p->transport == CLI_TRANSPORT_TCP ? ENG_TRANSPORT_TCP : ENG_TRANSPORT_RDMA;
}

int cli_place_live(struct cli_place *p, struct topo_plan **plan_out)
{
	struct topo_machine *m;
	int err = cli_place_machine(p, NULL, &m);

	if (err)
		return err;
	say_left_out(p, m);
	err = cli_place_plan(p, m, plan_out);
	topo_machine_destroy(m);
	if (err == -ENODEV && !p->profile && !p->opts.n_rails)
		err = rcp_err(err,
			      "%s (see 'railcp devices'; on a host without an RDMA NIC, "
			      "Soft-RoCE: rdma link add rxe0 type rxe netdev IF)",
			      rcp_err_msg(err));
	return err;
}

void cli_place_live_tcp(const struct cli_place *p, struct topo_plan **tcp_out)
{
	struct cli_place tcp = *p;
	struct topo_binding bind;
	struct topo_machine *m;
	int err;

	*tcp_out = NULL;
	if (!p->chose || p->transport != CLI_TRANSPORT_RDMA || p->profile)
		return;
	tcp.transport = CLI_TRANSPORT_TCP;
	/*
	 * The machine without its RDMA ports, which a TCP plan leaves out:
	 * no second device listing (testbed/fault_verbs_client counts them).
	 */
	err = topo_binding_of_process(&bind);
	err = err ? err : topo_machine_create(NULL, &bind, &m);
	if (!err) {
		err = topo_machine_add_ip_rails(m, "/sys", p->opts.n_rails > 0);
		err = err ? err : cli_place_plan(&tcp, m, tcp_out);
		topo_machine_destroy(m);
	}
	if (err) {
		*tcp_out = NULL;
		rcp_log(RCP_LOG_INFO, "tcp only if the other end has no rdma: %s",
			rcp_err_msg(err));
		rcp_err_clear();
	}
}
