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
	fprintf(f,
		"usage: railcp serve [--root DIR] [--port P] [--listen ADDR] [placement "
		"options]\n\n"
		"Serves railcp clients, several at once, until SIGINT or SIGTERM: copies to\n"
		"and from DIR (railcp SRC... HOST:DST, railcp HOST:SRC... DST) and railcp\n"
		"bench. The control connection is TCP (default port %d); data moves over\n"
		"RDMA on this host's rails, one worker per NUMA node (see railcp topo).\n\n"
		"  --root DIR         serve copies beneath DIR only; names that lead out of it\n"
		"                     (absolute, \"..\", symlinks) are refused (default: no\n"
		"                     copies, bench only)\n"
		"  --port P           TCP port of the control connection (default %d)\n"
		"  --listen ADDR      IPv4 address to listen on (default: every address with a\n"
		"                     key, 127.0.0.1 without one)\n"
		"  --key-file FILE    the shared key senders must prove (default: $RAILCP_KEY,\n"
		"                     then ~/.config/railcp/key; the file must be chmod 600)\n"
		"  --max-sessions N   authenticated sessions at once; more are refused (default\n"
		"                     16); at most 64 connections may wait to authenticate\n"
		"  --timeout SEC      limit of each control and connection step (default 30)\n"
		"  --no-failover      a rail that fails fails the sessions on it (default: the\n"
		"                     session goes on over its other rails)\n"
		"  --numa, --rails, --qps-per-rail, --buffer-mib, --profile: as railcp topo;\n"
		"                     --buffer-mib is each worker's slot memory per "
		"session\n" CLI_IO_USAGE "  -h, --help         print these options and exit\n",
		ENG_DEFAULT_PORT, ENG_DEFAULT_PORT);
}

static void on_ready(const char *addr, uint16_t port, const char *auth, void *ctx)
{
	const struct eng_serve_opts *o = ctx;
	const struct topo_plan *plan = o->plan;
	unsigned r;

	fprintf(stderr, "railcp: serving on %s port %u (%s), %s%s, rails:", addr, port, auth,
		o->root ? "files beneath " : "bench only: no --root", o->root ? o->root : "");
	for (r = 0; r < plan->n_rails; r++)
		fprintf(stderr, " %s:%u (node %d)", plan->rail[r].dev, plan->rail[r].port,
			plan->worker[plan->rail[r].worker].node);
	fputc('\n', stderr);
}

struct serve_cmd {
	struct cli_place place;
	struct eng_serve_opts o;
};

static int serve_opt(void *ctx, int c, const char *arg)
{
	struct serve_cmd *sc = ctx;

	switch (c) {
	case 'P':
		return cli_parse_port("serve", arg, &sc->o.port);
	case 'M':
		return cli_parse_count("serve", "--max-sessions", arg, 1024, &sc->o.max_sessions);
	case 'T':
		return cli_parse_timeout("serve", arg, &sc->o.timeout_ms);
	case 'L':
		sc->o.listen_addr = arg;
		return 0;
	case 'K':
		sc->o.key_file = arg;
		return 0;
	case 'R':
		sc->o.root = arg;
		return 0;
	case 'F':
		sc->o.no_failover = true;
		return 0;
	}
	return cli_place_opt("serve", &sc->place, c, arg);
}

static int serve_args(int argc, char **argv, struct serve_cmd *sc)
{
	static const struct option opts[] = {
		{"root", required_argument, NULL, 'R'},
		{"port", required_argument, NULL, 'P'},
		{"listen", required_argument, NULL, 'L'},
		{"key-file", required_argument, NULL, 'K'},
		{"max-sessions", required_argument, NULL, 'M'},
		{"timeout", required_argument, NULL, 'T'},
		{"no-failover", no_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		CLI_PLACE_OPTIONS,
		CLI_IO_OPTIONS,
		{0},
	};
	int first, r;

	r = cli_options("serve", argc, argv, opts, serve_opt, sc, serve_usage, &first);
	if (r)
		return r;
	if (first < argc)
		return cli_usage_error("serve", "unexpected argument '%s'", argv[first]);
	return cli_place_check("serve", &sc->place) ? CLI_EXIT_USAGE : 0;
}

int cli_cmd_serve(int argc, char **argv)
{
	struct serve_cmd sc = {.o = {.max_sessions = 16, .timeout_ms = ENG_TIMEOUT_MS_DEFAULT}};
	struct eng_serve_opts *o = &sc.o;
	struct sigaction sa = {.sa_handler = on_stop_signal};
	struct topo_plan *plan = NULL;
	int r, err;

	r = serve_args(argc, argv, &sc);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	err = cli_place_live(&sc.place, &plan);
	if (err)
		return cli_fail(err);
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		topo_plan_destroy(plan);
		return cli_fail(-errno);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	o->plan = plan;
	o->stop_fd = stop_pipe[0];
	o->ready = on_ready;
	o->ctx = o;
	cli_raise_nofile();
	err = eng_serve(o);
	topo_plan_destroy(plan);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	if (err)
		return cli_fail(err);
	fprintf(stderr, "railcp: server stopped\n");
	return CLI_EXIT_OK;
}
