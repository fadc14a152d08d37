/*
 * cmd_doctor.c - railcp doctor [HOST]: what on this host (and, with HOST,
 * on the way to a railcp server) would make a copy fail or run below what
 * the rails can, each with the command that fixes it (doctor.h has the
 * pieces).
 *
 * With HOST it runs no protocol of its own: per rail of the plan, one bench
 * session of a single 4 KiB chunk over that rail alone (one QP, a 1 MiB
 * pool), through the same hello, authentication, pairing and rdma_cm set-up
 * a copy uses, three times (the smallest and the middle time are reported:
 * the first session also pays for ARP). The session's report says which
 * rail each end really used (the transport checks that the connection
 * landed on the planned device), both ends' port MTUs (protocol 7 carries
 * them) and the time from the chunk's post to its credit coming back: a
 * round trip through both NICs, the peer's check of the chunk, and its
 * credit.
 *
 * Threading: one thread.
 */
#include "cli/addr.h"
#include "cli/doctor.h"
#include "cli/place.h"
#include "cli/session.h"

#include "common/common.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define DOC_PEER_BYTES 4096u
/* Sessions per rail: the first pays for ARP and the peer's first touch of its pool. */
#define DOC_PEER_ROUNDS 3

struct doctor_cmd {
	struct cli_place place;
	struct cli_session sess;
	bool json;
	char host[256];
	uint16_t port;
};

static void doctor_usage(FILE *f)
{
	fprintf(f, "usage: railcp doctor [HOST[:PORT]] [--json] [options]\n\n"
		   "Checks what copies need of this host, per rail of the plan: port state and\n"
		   "link layer, the GID table (types, IPv4/IPv6), the netdev's MTU against the\n"
		   "port's and the other rails', and, where rail interfaces share a subnet,\n"
		   "arp_ignore, arp_announce and rp_filter; then memlock against the plan's\n"
		   "pools and hugepages per NUMA node. One line per problem with the command\n"
		   "that fixes it. With HOST (a railcp serve there), connects each rail to the\n"
		   "server's alone and reports the devices used, both ends' MTUs and the round\n"
		   "trip of one 4 KiB write. Exit status 1 when a problem would hurt a copy.\n\n"
		   "  --json             one JSON object on stdout\n" CLI_SESSION_USAGE
		   "  --numa, --rails, --qps-per-rail, --buffer-mib, --profile: as railcp topo\n"
		   "  --transport: rdma (the default; tcp has no RDMA rails to check)\n"
		   "  -h, --help         print these options and exit\n");
}

static int doctor_opt(void *ctx, int c, const char *arg)
{
	struct doctor_cmd *dc = ctx;
	int r;

	if (c == 'j') {
		dc->json = true;
		return 0;
	}
	if ((r = cli_session_opt("doctor", &dc->sess, c, arg)) != -1)
		return r;
	return cli_place_opt("doctor", &dc->place, c, arg);
}

/* HOST, HOST:PORT, [ADDR]:PORT or an IPv6 address (cli/addr.h) */
static int parse_host(struct doctor_cmd *dc, const char *arg)
{
	return cli_host_port_parse("doctor", arg, dc->host, sizeof(dc->host), &dc->port);
}

static int doctor_args(int argc, char **argv, struct doctor_cmd *dc)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_OPTIONS,
		CLI_PLACE_OPTIONS,
		{0},
	};
	int first, r;

	r = cli_options("doctor", argc, argv, opts, doctor_opt, dc, doctor_usage, &first);
	if (r)
		return r;
	if (first < argc - 1)
		return cli_usage_error("doctor", "one server only, not '%s'", argv[argc - 1]);
	if (first == argc - 1 && (r = parse_host(dc, argv[first])) != 0)
		return r;
	if (dc->place.transport == CLI_TRANSPORT_TCP)
		return cli_usage_error("doctor",
				       "doctor checks RDMA rails: --transport tcp has none");
	dc->place.transport = CLI_TRANSPORT_RDMA;
	return cli_place_check("doctor", &dc->place) ? CLI_EXIT_USAGE : 0;
}

/* The plan of rail r alone: one QP and a 1 MiB pool are enough for one chunk. */
static int rail_plan(const struct topo_machine *m, const struct doc_rail *r,
		     struct topo_plan **plan_out)
{
	struct cli_place p = {.opts = {.n_rails = 1, .qps_per_rail = 1, .buffer_mib = 1},
			      .transport = CLI_TRANSPORT_RDMA};

	snprintf(p.opts.rails[0].dev, sizeof(p.opts.rails[0].dev), "%s", r->dev);
	p.opts.rails[0].port = r->port;
	return cli_place_plan(&p, m, plan_out);
}

static int ms_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void peer_rail(const struct doctor_cmd *dc, const struct topo_machine *m,
		      const struct doc_rail *r, struct doc_peer_rail *out)
{
	struct eng_bench_opts o = {.host = dc->host,
				   .port = dc->port,
				   .bytes = DOC_PEER_BYTES,
				   .chunk = DOC_PEER_BYTES,
				   .timeout_ms = dc->sess.timeout_ms,
				   .stall_ms = dc->sess.stall_ms,
				   .rail_stall_ms = dc->sess.rail_stall_ms,
				   .key_file = dc->sess.key_file,
				   .connect_timeout_ms = dc->sess.connect_timeout_ms,
				   .qp = dc->sess.qp,
				   .transport = ENG_TRANSPORT_RDMA,
				   .no_failover = true};
	struct topo_plan *plan = NULL;
	double ms[DOC_PEER_ROUNDS];
	struct eng_report rep;
	unsigned i;
	int err;

	snprintf(out->rail, sizeof(out->rail), "%s:%u", r->dev, r->port);
	err = rail_plan(m, r, &plan);
	o.plan = plan;
	for (i = 0; i < DOC_PEER_ROUNDS && !err; i++) {
		err = eng_bench_run(&o, &rep);
		ms[i] = err ? 0 : rep.seconds * 1e3;
	}
	topo_plan_destroy(plan);
	if (err) {
		snprintf(out->error, sizeof(out->error), "%s", rcp_err_msg(err));
		rcp_err_clear();
		return;
	}
	out->ok = true;
	snprintf(out->rail, sizeof(out->rail), "%s", rep.rail[0].name);
	snprintf(out->peer, sizeof(out->peer), "%s", rep.rail[0].peer);
	out->mtu = rep.rail[0].mtu;
	out->peer_mtu = rep.rail[0].peer_mtu;
	qsort(ms, DOC_PEER_ROUNDS, sizeof(ms[0]), ms_cmp);
	out->rtt_ms = ms[0];
	out->rtt_ms_median = ms[DOC_PEER_ROUNDS / 2];
}

/* With HOST: a session per planned ACTIVE rail. */
static int run_peer(const struct doctor_cmd *dc, struct cli_doctor *d)
{
	struct topo_machine *m;
	size_t i;
	int err = cli_machine_load(NULL, &m);

	if (err)
		return err;
	for (i = 0; i < d->n_rails; i++)
		if (d->rail[i].planned && d->rail[i].active)
			peer_rail(dc, m, &d->rail[i], &d->peer[d->n_peer++]);
	topo_machine_destroy(m);
	return 0;
}

/* The plan copies would use; when none can be made, why, as a problem of the report. */
static struct topo_plan *doctor_plan(struct doctor_cmd *dc, struct cli_doctor *d)
{
	struct topo_plan *plan = NULL;
	int err = cli_place_live(&dc->place, &plan);

	if (err) {
		snprintf(d->plan_error, sizeof(d->plan_error), "%s", rcp_err_msg(err));
		rcp_err_clear();
		return NULL;
	}
	return plan;
}

static int doctor_report(const struct doctor_cmd *dc, struct cli_doctor *d)
{
	json_t *j;
	int err;

	if (!dc->json) {
		cli_doctor_print(stdout, d);
		return 0;
	}
	j = cli_doctor_json(d);
	err = j ? cli_json_print(stdout, j) : -ENOMEM;
	json_decref(j);
	return err;
}

int cli_cmd_doctor(int argc, char **argv)
{
	struct doctor_cmd dc = {.sess = {.timeout_ms = ENG_TIMEOUT_MS_DEFAULT}};
	struct topo_plan *plan;
	struct cli_doctor *d;
	int r, err;

	r = doctor_args(argc, argv, &dc);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	signal(SIGPIPE, SIG_IGN);
	d = calloc(1, sizeof(*d));
	if (!d)
		return cli_fail(-ENOMEM);
	rcp_log_set_level(rcp_log_level() > RCP_LOG_NOTICE ? rcp_log_level() : RCP_LOG_SILENT);
	plan = doctor_plan(&dc, d);
	cli_session_knobs(&dc.sess, plan); /* a profile's, unless given as options */
	err = cli_doctor_gather(d, plan);
	topo_plan_destroy(plan);
	if (dc.host[0])
		d->host = dc.host;
	if (!err && dc.host[0] && !d->no_device)
		err = run_peer(&dc, d);
	if (!err) {
		cli_doctor_check(d);
		err = doctor_report(&dc, d);
	}
	r = err ? cli_fail(err) : cli_doctor_hurts(d) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	free(d);
	return r;
}
