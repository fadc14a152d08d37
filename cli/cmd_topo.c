/*
 * cmd_topo.c - railcp topo: the machine (NUMA nodes, CPUs, memory, rails and
 * their locality) and the plan railcp would run on it (workers, CPUs, rails,
 * QPs, buffers), for this host or, with --topology, for an hwloc XML export
 * of another machine. Also saves and loads profiles, and with
 * --check-buffers builds the pools as the engine will and reports where
 * their pages and threads landed.
 *
 * On this host the rails come from engine/ (verbs) and are handed to
 * topology/ as plain data; the process binding (taskset, numactl) limits the
 * nodes and CPUs. An XML export is another machine: no binding applies.
 */
#include "cli/cli.h"
#include "cli/place.h"
#include "cli/session.h"
#include "cli/topo.h"

#include "common/common.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

struct topo_cmd {
	bool json, check;
	const char *xml, *save;
	struct cli_place place;
	struct cli_session knobs; /* --tos, --ack-timeout, --retry-count, --connect-timeout */
};

static void topo_usage(FILE *f)
{
	fprintf(f,
		"usage: railcp topo [--json] [--topology FILE.xml] [--numa LIST] [--rails LIST]\n"
		"                   [--qps-per-rail N] [--buffer-mib N] [--profile FILE]\n"
		"                   [--transport KIND] [--save-profile FILE] [--check-buffers]\n"
		"                   [--tos N] [--ack-timeout N] [--retry-count R]\n"
		"                   [--connect-timeout SEC]\n\n"
		"Shows this machine (NUMA nodes with their allowed CPUs, memory and hugepages,\n"
		"RDMA rails with state, speed and NUMA locality) and the plan railcp runs on it:\n"
		"one worker per NUMA node that has rails, pinned to the node's CPUs.\n\n"
		"  --json               one JSON object on stdout\n"
		"  --topology FILE.xml  plan for the machine of an hwloc XML export (lstopo "
		"FILE.xml)\n"
		"  --numa LIST          worker nodes, e.g. 0,1 (default: nodes with rails)\n"
		"  --rails LIST         rails DEV:PORT,... e.g. mlx5_0:1,mlx5_2:1 (default: all "
		"ACTIVE)\n"
		"  --qps-per-rail N     QPs (stripes) per rail (default %d)\n"
		"  --buffer-mib N       buffer pool per worker (default %d MiB per stripe)\n"
		"  --profile FILE       take the plan from a profile, checked against the machine\n"
		"  --transport KIND     rdma, tcp (rails are IP interfaces, named as the kernel\n"
		"                       names them; loopback ones only when --rails or\n"
		"                       --profile names rails)\n"
		"                       or auto: rdma when an RDMA port is ACTIVE (default),\n"
		"                       and a copy's two ends on auto agree (tcp when one\n"
		"                       has no RDMA)\n"
		"  --save-profile FILE  write the plan as a profile, with the fabric knobs\n"
		"                       given (else the --profile's)\n"
		"  --check-buffers      allocate the pools, first-touch them from the pinned\n"
		"                       workers, and report page node, page size and CPU\n"
		"  --tos N, --ack-timeout N, --retry-count R, --connect-timeout SEC\n"
		"                       the fabric knobs, as a copy takes them: shown in the\n"
		"                       plan and saved by --save-profile\n"
		"  -h, --help           print these options and exit\n",
		TOPO_DEFAULT_QPS_PER_RAIL, TOPO_STRIPE_BUFFER_MIB);
}

static int parse_opt(void *ctx, int c, const char *arg)
{
	struct topo_cmd *cmd = ctx;
	int r;

	switch (c) {
	case 'j':
		cmd->json = true;
		return 0;
	case 'c':
		cmd->check = true;
		return 0;
	case 't':
		cmd->xml = arg;
		return 0;
	case 's':
		cmd->save = arg;
		return 0;
	}
	r = cli_session_opt("topo", &cmd->knobs, c, arg); /* only its knobs are in the table */
	if (r != -1)
		return r;
	return cli_place_opt("topo", &cmd->place, c, arg);
}

static int parse_args(int argc, char **argv, struct topo_cmd *cmd)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"topology", required_argument, NULL, 't'},
		CLI_PLACE_OPTIONS,
		CLI_KNOB_OPTIONS,
		{"save-profile", required_argument, NULL, 's'},
		{"check-buffers", no_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int first, r;

	r = cli_options("topo", argc, argv, opts, parse_opt, cmd, topo_usage, &first);
	if (r)
		return r;
	if (first < argc)
		return cli_usage_error("topo", "unexpected argument '%s'", argv[first]);
	if (cli_place_check("topo", &cmd->place))
		return CLI_EXIT_USAGE;
	if (cmd->check && cmd->xml)
		return cli_usage_error("topo", "--check-buffers allocates on this host; it cannot "
					       "go with --topology");
	return 0;
}

static int output_json(const struct topo_machine *m, const struct topo_plan *plan, int plan_err,
		       const struct cli_topo_check *checks)
{
	json_t *root = json_object();
	int err;

	if (!root)
		return -ENOMEM;
	json_object_set_new(root, "machine", cli_topo_machine_json(m));
	json_object_set_new(root, "plan", plan ? cli_topo_plan_json(plan) : json_null());
	json_object_set_new(root, "error", cli_json_text(plan_err ? rcp_err_msg(plan_err) : NULL));
	if (plan_err)
		json_object_set_new(root, "exit", json_integer(CLI_EXIT_FAIL));
	if (checks)
		json_object_set_new(root, "buffers", cli_topo_checks_json(checks, plan->n_workers));
	err = cli_json_print(stdout, root);
	json_decref(root);
	return err;
}

static void output_human(const struct topo_machine *m, const struct topo_plan *plan,
			 const struct cli_topo_check *checks)
{
	cli_topo_machine_print(stdout, m);
	if (plan)
		cli_topo_plan_print(stdout, plan);
	if (checks)
		cli_topo_checks_print(stdout, checks, plan->n_workers);
	fflush(stdout);
}

/* The first worker whose pages or thread are not where the plan put them. */
static int checks_verdict(const struct topo_plan *plan, const struct cli_topo_check *c)
{
	size_t i;

	for (i = 0; i < plan->n_workers; i++) {
		if (c[i].probe.node_first != c[i].node || c[i].probe.node_last != c[i].node)
			return rcp_err(-EIO,
				       "the node %d worker's buffer pages are on node %d..%d, "
				       "not on node %d",
				       c[i].node, c[i].probe.node_first, c[i].probe.node_last,
				       c[i].node);
		if (!c[i].cpu_ok)
			return rcp_err(-EIO, "the node %d worker ran on CPU %d, outside its CPUs",
				       c[i].node, c[i].cpu);
	}
	return 0;
}

static int plan_make(const struct topo_cmd *cmd, const struct topo_machine *m,
		     struct topo_plan **plan_out)
{
	int err;

	err = cli_place_plan(&cmd->place, m, plan_out);
	if (!err) {
		/* the knobs in effect: the command line's, else the --profile's */
		struct cli_session k = cmd->knobs;

		cli_session_knobs(&k, *plan_out);
		cli_session_knobs_save(&k, &(*plan_out)->knobs);
	}
	if (!err && cmd->save) {
		err = topo_profile_save(*plan_out, m, cmd->save);
		if (err) {
			topo_plan_destroy(*plan_out);
			*plan_out = NULL;
		}
	}
	return err;
}

int cli_cmd_topo(int argc, char **argv)
{
	struct topo_cmd cmd;
	struct topo_machine *m = NULL;
	struct topo_plan *plan = NULL;
	struct cli_topo_check *checks = NULL;
	int r, err, out_err, verdict = 0;

	memset(&cmd, 0, sizeof(cmd));
	r = parse_args(argc, argv, &cmd);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	err = cli_place_machine(&cmd.place, cmd.xml, &m);
	if (err) {
		cli_fail(err);
		return cmd.json ? cli_json_error(CLI_EXIT_FAIL, NULL) : CLI_EXIT_FAIL;
	}
	err = plan_make(&cmd, m, &plan);
	if (!err && cmd.check) {
		checks = calloc(plan->n_workers ? plan->n_workers : 1, sizeof(*checks));
		err = checks ? cli_topo_check_buffers(plan, checks) : -ENOMEM;
		if (err) {
			free(checks);
			checks = NULL;
		}
	}
	if (!err && checks)
		verdict = checks_verdict(plan, checks);
	if (cmd.json)
		out_err = output_json(m, plan, err ? err : verdict, checks);
	else
		out_err = (output_human(m, plan, checks), 0);
	err = err ? err : verdict;
	free(checks);
	topo_plan_destroy(plan);
	topo_machine_destroy(m);
	err = err ? err : out_err;
	return err ? cli_fail(err) : CLI_EXIT_OK;
}
