/*
 * cmd_serve.c - railcp serve: plan this host's workers and rails, then
 * receive sessions until SIGINT or SIGTERM (a self-pipe wakes the engine).
 */
#include "cli/place.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int stop_pipe[2] = {-1, -1};

static void on_stop_signal(int sig)
{
	int saved = errno;

	(void)sig;
	if (write(stop_pipe[1], "x", 1) < 0)
		(void)0; /* the pipe is full: a stop is pending anyway */
	errno = saved;
}

static void serve_usage(FILE *f)
{
	fprintf(f, "usage: railcp serve [--port P] [--listen ADDR] [placement options]\n\n"
		   "Receives sessions from railcp senders, several at once, until SIGINT or\n"
		   "SIGTERM. The control connection is TCP (default port %d); data moves over\n"
		   "RDMA on this host's rails, one worker per NUMA node (see railcp topo).\n\n"
		   "  --port P           TCP port of the control connection (default %d)\n"
		   "  --listen ADDR      IPv4 address to listen on (default: every address)\n"
		   "  --max-sessions N   sessions at once; more are refused (default 16)\n"
		   "  --timeout SEC      limit of each control and connection step (default 30)\n"
		   "  --numa, --rails, --qps-per-rail, --buffer-mib, --profile: as railcp topo;\n"
		   "                     --buffer-mib is each worker's slot memory per session\n",
		ENG_DEFAULT_PORT, ENG_DEFAULT_PORT);
}

static void on_ready(uint16_t port, void *ctx)
{
	const struct topo_plan *plan = ctx;
	unsigned r;

	fprintf(stderr, "railcp: serving on port %u, rails:", port);
	for (r = 0; r < plan->n_rails; r++)
		fprintf(stderr, " %s:%u (node %d)", plan->rail[r].dev, plan->rail[r].port,
			plan->worker[plan->rail[r].worker].node);
	fputc('\n', stderr);
}

static int serve_args(int argc, char **argv, struct cli_place *place, struct eng_serve_opts *o)
{
	static const struct option opts[] = {
		{"port", required_argument, NULL, 'P'},
		{"listen", required_argument, NULL, 'L'},
		{"max-sessions", required_argument, NULL, 'M'},
		{"timeout", required_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		CLI_PLACE_OPTIONS,
		{0},
	};
	unsigned v;
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h') {
			serve_usage(stdout);
			return -1;
		} else if (c == 'P' || c == 'M' || c == 'T') {
			r = cli_parse_count("serve", c == 'P' ? "--port" : c == 'M' ? "--max-sessions" : "--timeout",
					    optarg, c == 'P' ? 65535 : c == 'M' ? 1024 : 3600, &v);
			if (r)
				return r;
			if (c == 'P')
				o->port = (uint16_t)v;
			else if (c == 'M')
				o->max_sessions = v;
			else
				o->timeout_ms = (int)v * 1000;
		} else if (c == 'L') {
			o->listen_addr = optarg;
		} else if ((r = cli_place_opt("serve", place, c, optarg)) != 0) {
			return r > 0 ? r : cli_usage_error("serve", "unknown option or missing value '%s'",
							   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);
	return cli_place_check("serve", place) ? CLI_EXIT_USAGE : 0;
}

int cli_cmd_serve(int argc, char **argv)
{
	struct eng_serve_opts o = {.max_sessions = 16, .timeout_ms = 30000};
	struct sigaction sa = {.sa_handler = on_stop_signal};
	struct cli_place place;
	struct topo_plan *plan = NULL;
	int r, err;

	memset(&place, 0, sizeof(place));
	r = serve_args(argc, argv, &place, &o);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	err = cli_place_live(&place, &plan);
	if (err)
		return cli_fail(err);
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		topo_plan_destroy(plan);
		return cli_fail(-errno);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	o.plan = plan;
	o.stop_fd = stop_pipe[0];
	o.ready = on_ready;
	o.ctx = plan;
	err = eng_serve(&o);
	topo_plan_destroy(plan);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	if (err)
		return cli_fail(err);
	fprintf(stderr, "railcp: server stopped\n");
	return CLI_EXIT_OK;
}
