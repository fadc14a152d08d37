/*
 * cmd_bench.c - railcp bench: memory to memory through the whole engine,
 * checked by the receiver, with throughput per rail and per NUMA node as
 * perftest defines its BW average (payload bytes over the time from the first
 * post to the last completion).
 */
#include "cli/addr.h"
#include "cli/place.h"
#include "cli/report.h"
#include "cli/session.h"
#include "cli/wire.h"

#include "common/common.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct bench_cmd {
	struct eng_bench_opts o;
	struct cli_place place;
	struct cli_session sess;
	char host[256];
	uint16_t port_opt; /* --port; 0: none */
	bool json;
	bool progress;
	struct cli_progress line;
	struct cli_series series;    /* --json: each rail's bytes over time */
	const struct cli_wire *wire; /* each rail's counters over the run, or NULL */
};

static void bench_usage(FILE *f)
{
	fprintf(f,
		"usage: railcp bench HOST[:PORT] [--port P] [--bytes N] [--chunk N]\n"
		"                    [placement options] [--json]\n\n"
		"Sends N bytes of a checkable pattern from memory to a railcp server's memory\n"
		"over every planned rail; the server verifies each byte. Prints throughput\n"
		"in total, per rail and per NUMA node.\n\n"
		"  --bytes N          bytes to move (default 1G; suffixes K, M, G, T)\n"
		"  --chunk N          bytes per RDMA write, a multiple of 4K (default 1M)\n"
		"  --port P           the server's TCP port, or HOST:PORT (default %d)\n"
		"  --json             one JSON object on stdout, the error's "
		"too\n" CLI_SESSION_USAGE
		"  --numa, --rails, --qps-per-rail, --buffer-mib, --profile: as railcp topo\n"
		"  --transport: as railcp topo; the server must serve the same, but on auto\n"
		"                     with RDMA a server of tcp alone is asked again over tcp\n"
		"  -h, --help         print these options and exit\n",
		ENG_DEFAULT_PORT);
}

/* HOST, HOST:PORT, [ADDR]:PORT or an IPv6 address (cli/addr.h) */
static int parse_target(struct bench_cmd *b, const char *arg)
{
	return cli_host_port_parse("bench", arg, b->host, sizeof(b->host), &b->o.port);
}

static int bench_opt(void *ctx, int c, const char *arg)
{
	struct bench_cmd *b = ctx;
	int r;

	switch (c) {
	case 'B':
		return cli_parse_size("bench", "--bytes", arg, &b->o.bytes);
	case 'C':
		return cli_parse_chunk("bench", arg, &b->o.chunk);
	case 'j':
		b->json = true;
		return 0;
	case 'P':
		return cli_parse_port("bench", arg, &b->port_opt);
	}
	if ((r = cli_session_opt("bench", &b->sess, c, arg)) != -1)
		return r;
	return cli_place_opt("bench", &b->place, c, arg);
}

static int bench_args(int argc, char **argv, struct bench_cmd *b)
{
	static const struct option opts[] = {
		{"bytes", required_argument, NULL, 'B'},
		{"chunk", required_argument, NULL, 'C'},
		{"json", no_argument, NULL, 'j'},
		{"port", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_OPTIONS,
		CLI_PLACE_OPTIONS,
		{0},
	};
	int first, r;

	r = cli_options("bench", argc, argv, opts, bench_opt, b, bench_usage, &first);
	if (r)
		return r;
	b->o.timeout_ms = b->sess.timeout_ms;
	b->o.stall_ms = b->sess.stall_ms;
	b->o.key_file = b->sess.key_file;
	b->o.no_failover = b->sess.no_failover;
	b->o.rail_stall_ms = b->sess.rail_stall_ms;
	b->o.connect_timeout_ms = b->sess.connect_timeout_ms;
	b->o.qp = b->sess.qp;
	if (first != argc - 1)
		return cli_usage_error("bench",
				       first == argc ? "which server? give HOST[:PORT]"
						     : "one server only, not '%s'",
				       argv[argc - 1]);
	if ((r = parse_target(b, argv[first])) != 0)
		return r;
	if (b->port_opt && b->o.port && b->o.port != b->port_opt)
		return cli_usage_error("bench", "two ports: %u in '%s' and --port %u", b->o.port,
				       argv[first], b->port_opt);
	if (b->port_opt)
		b->o.port = b->port_opt;
	return cli_place_check("bench", &b->place) ? CLI_EXIT_USAGE : 0;
}

static void on_progress(const struct eng_report *r, void *ctx)
{
	cli_progress_update(ctx, r);
}

static int print_json(const struct bench_cmd *b, const struct eng_report *r)
{
	json_t *o = json_object();
	unsigned n_rails;
	int err;

	cli_report_json(o, r, r->seconds);
	/*
	 * The stripes used per rail, not the ones asked: a buffer that holds
	 * fewer leaves some out (their note says so), and a figure read as a
	 * run of the asked queue pairs would not be one. A fraction when the
	 * trim left rails uneven.
	 */
	n_rails = r->n_rails ? r->n_rails : 1;
	json_object_set_new(o, "qps_per_rail",
			    r->n_stripes % n_rails ? json_real((double)r->n_stripes / n_rails)
						   : json_integer(r->n_stripes / n_rails));
	if (b->place.opts.qps_per_rail)
		json_object_set_new(o, "qps_per_rail_asked",
				    json_integer(b->place.opts.qps_per_rail));
	cli_wire_json(o, b->wire, r);
	err = cli_series_json(o, &b->series);
	if (!err)
		err = cli_json_print(stdout, o);
	json_decref(o);
	return err;
}

static void print_human(const struct bench_cmd *b, const struct eng_report *r)
{
	char sz[32];

	cli_size_str(r->bytes, sz, sizeof(sz));
	printf("bench: %s to %s in %.3f s: %.3f Gb/s (%.1f MiB/s), verified by the receiver\n", sz,
	       b->host, r->seconds, cli_gbps(r->bytes, r->seconds),
	       cli_mibps(r->bytes, r->seconds));
	cli_report_print(stdout, r, r->seconds);
	cli_wire_print(stdout, b->wire, r);
}

/* The run failed with err: the one line, and with --json the one object. */
static int bench_failed(struct bench_cmd *b, int err)
{
	json_t *more;

	cli_fail(err);
	if (!b->json)
		return CLI_EXIT_FAIL;
	more = cli_series_failure(&b->series);
	if (more)
		json_object_set_new(more, "host", cli_json_text(b->host));
	return cli_json_error(CLI_EXIT_FAIL, more);
}

int cli_cmd_bench(int argc, char **argv)
{
	struct bench_cmd b = {.o = {.bytes = 1ull << 30, .chunk = ENG_CHUNK_DEFAULT},
			      .sess = {.timeout_ms = ENG_TIMEOUT_MS_DEFAULT}};
	struct topo_plan *plan = NULL, *plan_tcp = NULL;
	struct cli_wire *wire;
	struct eng_report rep;
	uint64_t topo_ns;
	int r, err;

	r = bench_args(argc, argv, &b);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	signal(SIGPIPE, SIG_IGN);
	err = eng_key_check(b.o.key_file); /* before the device probe, as any local mistake */
	topo_ns = rcp_now_ns();
	if (!err)
		err = cli_place_live(&b.place, &plan);
	topo_ns = rcp_now_ns() - topo_ns;
	if (err)
		return bench_failed(&b, err);
	b.o.host = b.host;
	b.o.plan = plan;
	cli_session_knobs(&b.sess, plan); /* a profile's, unless given as options */
	b.o.connect_timeout_ms = b.sess.connect_timeout_ms;
	b.o.qp = b.sess.qp;
	b.o.transport = cli_place_transport(&b.place);
	cli_place_live_tcp(&b.place, &plan_tcp);
	b.o.plan_tcp = plan_tcp;
	b.progress = !b.json && isatty(STDOUT_FILENO);
	b.line.label = "bench";
	if (b.progress) {
		b.o.progress = on_progress;
		b.o.ctx = &b.line;
	} else if (b.json) {
		b.o.progress = cli_series_progress;
		b.o.ctx = &b.series;
	}
	cli_series_init(&b.series, rcp_now_ns(), CLI_SERIES_MAX);
	wire = cli_wire_begin(plan);
	err = eng_bench_run(&b.o, &rep);
	b.wire = cli_wire_end(wire, plan);
	if (!err && strcmp(rep.transport, eng_transport_str(b.o.transport)))
		b.wire = NULL; /* auto went over tcp: the plan's rails carried none of it */
	cli_progress_clear(&b.line);
	if (!err && b.json)
		err = cli_series_end(&b.series, rcp_now_ns(), &rep);
	if (!err) {
		rep.steps.ns[RCP_STEP_TOPOLOGY] = topo_ns;
		cli_steps_log(&rep.steps);
		err = b.json ? print_json(&b, &rep) : (print_human(&b, &rep), 0);
		r = err ? cli_fail(err) : CLI_EXIT_OK;
	} else {
		r = bench_failed(&b, err);
	}
	cli_series_fini(&b.series);
	free(wire);
	topo_plan_destroy(plan);
	topo_plan_destroy(plan_tcp);
	return r;
}
