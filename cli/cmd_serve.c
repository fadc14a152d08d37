/*
 * cmd_serve.c - railcp serve: plan this host's workers and rails, then
 * receive sessions until SIGINT or SIGTERM (a self-pipe wakes the engine).
 * With --ssh, the far side of a copy started over ssh (cli/rsh.h): one
 * session, a fresh key, the greeting on stdout, and a stop when stdin
 * closes (a thread waits for that and writes to the self-pipe).
 */
#include "cli/place.h"
#include "cli/report.h"
#include "cli/rsh.h"
#include "cli/session.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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
		"  --listen ADDR      IPv4 or IPv6 address to listen on (default: every\n"
		"                     address of both families with a key, 127.0.0.1\n"
		"                     without one; ::1 is IPv6's loopback)\n"
		"  --name HOST[:PORT] a name clients may dial this server by besides its own\n"
		"                     addresses and host name (a NAT, an alias); may be\n"
		"                     repeated ([ADDR]:PORT for IPv6); a session dialed to\n"
		"                     another server is refused\n"
		"  --max-sessions N   authenticated sessions at once; a client past them\n"
		"                     waits its turn, in arrival order, within its\n"
		"                     --timeout (default 16)\n"
		"  --max-memory SIZE  slot memory all sessions' pools may take together; a\n"
		"                     session past it waits its turn as past --max-sessions\n"
		"                     (default: a quarter of RAM, or the memlock limit if\n"
		"                     lower)\n"
		"  --json             each session as it ends as one JSON object a line on\n"
		"                     stdout: session, peer, job, what, start, end, bytes,\n"
		"                     seconds, gbps, result, error; and a line as a session\n"
		"                     joins the queue (event \"queued\") and as it leaves it\n"
		"                     (\"admitted\" or \"refused\")\n"
		"  --no-direct        read and write every file through the page cache,\n"
		"                     whatever a client asks ('railcp --direct', or the\n"
		"                     default's O_DIRECT for files of 8 MiB or more): for\n"
		"                     datasets that many clients read, or a file system\n"
		"                     whose direct I/O is slow\n" CLI_SESSION_USAGE
		"  --ssh              serve one copy started over ssh by 'railcp SRC HOST:DST'\n"
		"                     (files beneath /, a fresh key, a port of the kernel's\n"
		"                     choice, said on stdout; ends when stdin closes)\n"
		"  --transport: as railcp topo; a client must ask for the same, but on auto\n"
		"                     with RDMA a tcp client is served over tcp too\n"
		"  --numa, --rails, --qps-per-rail, --buffer-mib, --profile: as railcp topo;\n"
		"                     --buffer-mib is each worker's slot memory per "
		"session\n" CLI_IO_USAGE "  -h, --help         print these options and exit\n",
		ENG_DEFAULT_PORT, ENG_DEFAULT_PORT);
}

static pthread_mutex_t json_lock = PTHREAD_MUTEX_INITIALIZER;

/* --json: a line, whole, however many sessions write at once; consumes o. */
static void json_line(json_t *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&json_lock);
	if (json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) == 0)
		fputc('\n', stdout);
	fflush(stdout);
	pthread_mutex_unlock(&json_lock);
	json_decref(o);
}

static void on_session_json(const struct eng_session_record *rec, void *ctx)
{
	(void)ctx;
	json_line(cli_session_json(rec));
}

/* A session joins or leaves the queue of those waiting their turn. */
static void on_queue_json(const struct eng_queue_event *ev, void *ctx)
{
	(void)ctx;
	json_line(cli_queue_json(ev));
}

static void rails_print(const struct topo_plan *plan)
{
	unsigned r;

	for (r = 0; r < plan->n_rails; r++)
		fprintf(stderr, " %s:%u (node %d)", plan->rail[r].dev, plan->rail[r].port,
			plan->worker[plan->rail[r].worker].node);
}

static void on_ready(const char *addr, uint16_t port, const char *auth, void *ctx)
{
	const struct eng_serve_opts *o = ctx;
	const struct topo_plan *plan = o->plan;
	struct topo_knobs k;
	char knobs[128];

	fprintf(stderr, "railcp: serving on %s port %u (%s), %s%s, ",
		!strcmp(addr, "::") ? "every address, IPv6 and IPv4," : addr, port, auth,
		o->root ? "files beneath " : "bench only: no --root", o->root ? o->root : "");
	fprintf(stderr, "%u sessions and %" PRIu64 " MiB of slots at most, over %s, rails:",
		o->max_sessions, o->max_memory >> 20, eng_transport_str(o->transport));
	rails_print(plan);
	if (o->plan_tcp) {
		fprintf(stderr, "; and over tcp for a client that asks for it (--transport auto), "
				"rails:");
		rails_print(o->plan_tcp);
	}
	cli_knobs_of(&o->qp, o->connect_timeout_ms, &k);
	cli_knobs_str(&k, knobs, sizeof(knobs));
	if (knobs[0]) /* those in effect: the options', else the --profile's */
		fprintf(stderr, "; fabric knobs: %s", knobs);
	fputc('\n', stderr);
}

#define CLI_SERVE_NAMES_MAX 32

struct serve_cmd {
	struct cli_place place;
	struct cli_session sess;
	struct eng_serve_opts o;
	bool ssh;
	bool json;
	const char *names[CLI_SERVE_NAMES_MAX + 1]; /* --name, NULL-terminated */
	unsigned n_names;
	char key[CLI_RSH_KEY_HEX + 1];
	char listen[INET6_ADDRSTRLEN];
	char home[4096];
};

/* --ssh: the greeting the client reads over the ssh channel (cli/rsh.h). */
static void on_ready_ssh(const char *addr, uint16_t port, const char *auth, void *ctx)
{
	const struct serve_cmd *sc = ctx;

	(void)auth;
	printf("%s %d %s %u %s %s\n", CLI_RSH_GREETING, CLI_RSH_VERSION, addr, port, sc->key,
	       sc->home);
	fflush(stdout);
}

/*
 * --ssh: stop when the ssh channel closes, however the client ended. arg is
 * the thread's own descriptor of the self-pipe, so the server closing its
 * ends never leaves this write to a reused descriptor.
 */
static void *stdin_watch(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[256];
	ssize_t n;

	while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		;
	if (write(fd, "x", 1) < 0)
		(void)0; /* a stop is pending anyway, or the server is gone */
	close(fd);
	return NULL;
}

/*
 * The address ssh reached us on (SSH_CONNECTION's third word), IPv4 or
 * IPv6; a link-local IPv6 one is left (it needs its interface, which
 * SSH_CONNECTION does not say): the server then listens on every address.
 */
static void ssh_listen_addr(struct serve_cmd *sc)
{
	const char *conn = getenv("SSH_CONNECTION");
	char a[64], b[64], c[64];
	struct in6_addr a6;
	struct in_addr a4;

	if (sc->o.listen_addr || !conn || sscanf(conn, "%63s %63s %63s", a, b, c) != 3)
		return;
	if (inet_pton(AF_INET, c, &a4) == 1)
		inet_ntop(AF_INET, &a4, sc->listen, sizeof(sc->listen));
	else if (inet_pton(AF_INET6, c, &a6) == 1 && !IN6_IS_ADDR_LINKLOCAL(&a6))
		inet_ntop(AF_INET6, &a6, sc->listen, sizeof(sc->listen));
	else
		return;
	sc->o.listen_addr = sc->listen;
}

/* --ssh: a key of 32 random bytes, the root '/', one session, and the home to report. */
static int serve_ssh_setup(struct serve_cmd *sc)
{
	static const char hex[] = "0123456789abcdef";
	const struct passwd *pw = getpwuid(geteuid());
	const char *home = getenv("HOME");
	unsigned char raw[CLI_RSH_KEY_HEX / 2];
	size_t i;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return rcp_err(-EIO, "cannot make a key: getrandom: %s", strerror(errno));
	for (i = 0; i < sizeof(raw); i++) {
		sc->key[2 * i] = hex[raw[i] >> 4];
		sc->key[2 * i + 1] = hex[raw[i] & 15];
	}
	if (!home || home[0] != '/')
		home = pw && pw->pw_dir[0] == '/' ? pw->pw_dir : "/";
	snprintf(sc->home, sizeof(sc->home), "%s", home);
	ssh_listen_addr(sc);
	sc->o.key = sc->key;
	sc->o.root = "/";
	sc->o.once = true;
	sc->o.any_name = true; /* the key is this session's alone */
	sc->o.max_sessions = 1;
	sc->o.ready = on_ready_ssh;
	sc->o.ctx = sc;
	return 0;
}

static int serve_opt(void *ctx, int c, const char *arg)
{
	struct serve_cmd *sc = ctx;
	int r;

	switch (c) {
	case 'P':
		return cli_parse_port("serve", arg, &sc->o.port);
	case 'M':
		return cli_parse_count("serve", "--max-sessions", arg, 1024, &sc->o.max_sessions);
	case 'm':
		return cli_parse_size("serve", "--max-memory", arg, &sc->o.max_memory);
	case 'L':
		sc->o.listen_addr = arg;
		return 0;
	case 'R':
		sc->o.root = arg;
		return 0;
	case 'S':
		sc->ssh = true;
		return 0;
	case 'J':
		sc->json = true;
		return 0;
	case 'D':
		sc->o.no_direct = true;
		return 0;
	case 'N':
		if (sc->n_names == CLI_SERVE_NAMES_MAX)
			return cli_usage_error("serve", "at most %d --name options",
					       CLI_SERVE_NAMES_MAX);
		if (eng_serve_name_check(arg))
			return cli_usage_error("serve", "%s", rcp_err_msg(-EINVAL));
		sc->names[sc->n_names++] = arg;
		sc->o.names = sc->names;
		return 0;
	}
	if ((r = cli_session_opt("serve", &sc->sess, c, arg)) != -1)
		return r;
	return cli_place_opt("serve", &sc->place, c, arg);
}

static int serve_args(int argc, char **argv, struct serve_cmd *sc)
{
	static const struct option opts[] = {
		{"root", required_argument, NULL, 'R'},
		{"port", required_argument, NULL, 'P'},
		{"listen", required_argument, NULL, 'L'},
		{"max-sessions", required_argument, NULL, 'M'},
		{"max-memory", required_argument, NULL, 'm'},
		{"ssh", no_argument, NULL, 'S'},
		{"json", no_argument, NULL, 'J'},
		{"no-direct", no_argument, NULL, 'D'},
		{"name", required_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_OPTIONS,
		CLI_PLACE_OPTIONS,
		CLI_IO_OPTIONS,
		{0},
	};
	int first, r;

	r = cli_options("serve", argc, argv, opts, serve_opt, sc, serve_usage, &first);
	if (r)
		return r;
	sc->o.timeout_ms = sc->sess.timeout_ms;
	sc->o.stall_ms = sc->sess.stall_ms;
	sc->o.key_file = sc->sess.key_file;
	sc->o.no_failover = sc->sess.no_failover;
	sc->o.rail_stall_ms = sc->sess.rail_stall_ms;
	sc->o.connect_timeout_ms = sc->sess.connect_timeout_ms;
	sc->o.qp = sc->sess.qp;
	if (first < argc)
		return cli_usage_error("serve", "unexpected argument '%s'", argv[first]);
	if (sc->ssh && (sc->o.root || sc->o.key_file || sc->n_names))
		return cli_usage_error("serve", "--ssh serves files beneath / with a key of its "
						"own: give neither --root, --key-file nor --name");
	if (sc->ssh && sc->json)
		return cli_usage_error("serve", "--ssh says its greeting on stdout: it cannot go "
						"with --json");
	return cli_place_check("serve", &sc->place) ? CLI_EXIT_USAGE : 0;
}

/* The server failed with err: the one line, and with --json a line of JSON too. */
static int serve_failed(const struct serve_cmd *sc, int err)
{
	json_t *o;

	cli_fail(err);
	if (!sc->json)
		return CLI_EXIT_FAIL;
	o = json_pack("{s:s, s:i}", "error", cli_last_error(), "exit", CLI_EXIT_FAIL);
	if (o && json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) == 0)
		fputc('\n', stdout);
	fflush(stdout);
	json_decref(o);
	return CLI_EXIT_FAIL;
}

int cli_cmd_serve(int argc, char **argv)
{
	struct serve_cmd sc = {.o = {.max_sessions = 16},
			       .sess = {.timeout_ms = ENG_TIMEOUT_MS_DEFAULT}};
	struct eng_serve_opts *o = &sc.o;
	struct sigaction sa = {.sa_handler = on_stop_signal};
	struct topo_plan *plan = NULL, *plan_tcp = NULL;
	int r, err;

	r = serve_args(argc, argv, &sc);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	/* The root, --listen and the key before the device probe; --ssh makes its own. */
	err = sc.ssh ? 0 : eng_serve_check(o);
	if (!err)
		err = cli_place_live(&sc.place, &plan);
	if (err)
		return serve_failed(&sc, err);
	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		topo_plan_destroy(plan);
		return serve_failed(&sc, -errno);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	o->plan = plan;
	cli_session_knobs(&sc.sess, plan); /* a profile's, unless given as options */
	o->connect_timeout_ms = sc.sess.connect_timeout_ms;
	o->qp = sc.sess.qp;
	cli_place_live_tcp(&sc.place, &plan_tcp); /* auto chose rdma: tcp sessions too */
	o->plan_tcp = plan_tcp;
	if (!o->max_memory)
		o->max_memory = eng_serve_memory_default();
	o->transport = cli_place_transport(&sc.place);
	o->stop_fd = stop_pipe[0];
	o->ready = on_ready;
	o->ctx = o;
	o->session_end = sc.json ? on_session_json : NULL;
	o->session_queue = sc.json ? on_queue_json : NULL;
	err = sc.ssh ? serve_ssh_setup(&sc) : 0;
	if (!err && sc.ssh) {
		int fd = fcntl(stop_pipe[1], F_DUPFD_CLOEXEC, 3);
		pthread_t t;

		err = fd < 0 ? -errno
			     : -pthread_create(&t, NULL, stdin_watch, (void *)(intptr_t)fd);
		if (!err)
			pthread_detach(t);
		else if (fd >= 0)
			close(fd);
	}
	cli_raise_nofile();
	if (!err)
		err = eng_serve(o);
	topo_plan_destroy(plan);
	topo_plan_destroy(plan_tcp);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	if (err)
		return serve_failed(&sc, err);
	if (!sc.ssh)
		fprintf(stderr, "railcp: server stopped\n");
	return CLI_EXIT_OK;
}
