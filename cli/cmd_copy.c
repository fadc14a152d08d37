/*
 * cmd_copy.c - railcp [options] SRC... HOST:DST (push) and
 * railcp [options] HOST:SRC... DST (pull), addressed as scp addresses
 * things and named as rsync names them (io_dest_decide). An argument is
 * remote when it has a ':' with no '/' before it (write ./a:b for a local
 * name with a colon); [USER@][V6ADDR]:PATH is remote too (cli/addr.h).
 * This file reads the command line, runs the copy and says how it went;
 * the way to the far side, a server on --port or ssh, is copy_ssh.c's.
 */
#include "cli/addr.h"
#include "cli/copy.h"
#include "cli/rsh.h"

#include "common/common.h"
#include "io/io.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FSYNC_GIVEN = 1, NO_FSYNC_GIVEN = 2, DIRECT_GIVEN = 4, NO_DIRECT_GIVEN = 8 };

static void copy_usage(FILE *f)
{
	fprintf(f,
		"usage: railcp [options] SRC... HOST:DST     copy to a railcp server\n"
		"       railcp [options] HOST:SRC... DST     copy from a railcp server\n\n"
		"Copies files and trees over every planned RDMA rail. When HOST runs\n"
		"'railcp serve --root DIR', remote paths are beneath DIR; when nothing\n"
		"answers there (or with -e), ssh starts railcp on HOST for this one copy\n"
		"and remote paths are as scp reads them ([user@]HOST:PATH, PATH relative to\n"
		"the home directory, or absolute). As rsync names them: a SRC ending in '/'\n"
		"is its contents, any other SRC lands in DST under its own name (DST made\n"
		"if missing), so the same command run again lands in the same place; one\n"
		"file to a DST that is no directory is created as DST. Each file is written\n"
		"under a temporary name, checked chunk by chunk (CRC-64), synced to the\n"
		"disk and renamed into place when complete.\n\n"
		"  -r, --recursive    copy directories and their contents\n"
		"  -p, --preserve     keep mode and modification time (default: mode less\n"
		"                     the receiver's umask, time of the copy)\n"
		"  -u, --update       send only what the destination lacks: a file already\n"
		"                     there with the same size and modification time (to\n"
		"                     the nanosecond, as -p copies it) or a symlink to the\n"
		"                     same target is left alone (rsync's quick check)\n"
		"  -c, --checksum     a file already at the destination is compared chunk by\n"
		"                     chunk (a keyed digest at each end): only the chunks\n"
		"                     that differ are sent, and the file is built anew from\n"
		"                     the others; a cut copy keeps what it got, as --partial\n"
		"  --partial          an interrupted copy keeps what it received; the next\n"
		"                     --partial copy checks it again and sends only the "
		"rest\n" CLI_FILTER_USAGE
		"  -q, --quiet        no progress line and no summary, only errors\n"
		"  -v, --verbose      say more on stderr (-vv: debug)\n"
		"  --json             the summary as one JSON object on stdout\n"
		"  --fsync            sync each file and its directory to the disk before\n"
		"                     the copy says it is done (the default)\n"
		"  --no-fsync         return before the files reach the disk: faster for\n"
		"                     many small files, but after a power loss or a crash\n"
		"                     of the receiving host a copied file may be empty or\n"
		"                     hold zeros\n"
		"  --direct           O_DIRECT reads and writes of every file where aligned\n"
		"                     (default: of files of 8 MiB or more, not on tmpfs)\n"
		"  --no-direct        every file through the page cache\n"
		"  --chunk N          bytes per RDMA write, a multiple of 4K (default 1M; a\n"
		"                     push of smaller files: its largest, rounded up)\n"
		"  --port P           the server's TCP port (default %d)\n"
		"  --bind ADDR        the address of this host (IPv4 or IPv6) the control\n"
		"                     connection leaves from (default: the kernel's choice)\n"
		"  -e, --rsh CMD      start the far side with CMD (default: $RAILCP_RSH, else\n"
		"                     ssh) even when a server answers on --port\n"
		"  --railcp-path PATH the railcp to run on HOST over ssh (default: "
		"railcp)\n" CLI_SESSION_USAGE
		"  --numa, --rails, --qps-per-rail, --buffer-mib, --profile: as railcp "
		"topo\n"
		"  --transport: as railcp topo; the server must serve the same, but on auto\n"
		"                     with RDMA a server of tcp alone is asked again over "
		"tcp\n" CLI_IO_USAGE "  -h, --help         print these options and exit\n",
		ENG_DEFAULT_PORT);
}

enum {
	OPT_JSON = 0x200,
	OPT_FSYNC,
	OPT_NO_FSYNC,
	OPT_DIRECT,
	OPT_NO_DIRECT,
	OPT_CHUNK,
	OPT_PORT,
	OPT_PARTIAL,
	OPT_RAILCP_PATH,
	OPT_BIND
};

static int copy_opt(void *ctx, int c, const char *arg)
{
	struct cli_copy *cc = ctx;
	int r;

	switch (c) {
	case 'r':
		cc->o.recursive = true;
		return 0;
	case 'p':
		cc->o.preserve = true;
		return 0;
	case 'u':
		cc->o.update = true;
		return 0;
	case OPT_PARTIAL:
		cc->o.partial = true;
		return 0;
	case 'c':
		cc->o.checksum = true;
		return 0;
	case OPT_JSON:
		cc->json = true;
		return 0;
	case OPT_FSYNC:
		cc->o.fsync = true;
		cc->pairs_given |= FSYNC_GIVEN;
		return 0;
	case OPT_NO_FSYNC:
		cc->o.fsync = false;
		cc->pairs_given |= NO_FSYNC_GIVEN;
		return 0;
	case OPT_DIRECT:
		cc->o.direct = ENG_DIRECT_ALWAYS;
		cc->pairs_given |= DIRECT_GIVEN;
		return 0;
	case OPT_NO_DIRECT:
		cc->o.direct = ENG_DIRECT_NEVER;
		cc->pairs_given |= NO_DIRECT_GIVEN;
		return 0;
	case OPT_CHUNK:
		cc->o.chunk_fit = false;
		return cli_parse_chunk(NULL, arg, &cc->o.chunk);
	case OPT_PORT:
		return cli_parse_port(NULL, arg, &cc->o.port);
	case 'e':
		cc->rsh = arg;
		return 0;
	case OPT_RAILCP_PATH:
		cc->railcp_path = arg;
		return 0;
	case OPT_BIND: {
		struct in6_addr a;

		if (inet_pton(AF_INET, arg, &a) != 1 && inet_pton(AF_INET6, arg, &a) != 1)
			return cli_usage_error(
				NULL, "--bind needs an IPv4 or IPv6 address, not '%s'", arg);
		cc->o.bind_addr = arg;
		return 0;
	}
	}
	if ((r = cli_session_opt(NULL, &cc->sess, c, arg)) != -1 ||
	    (r = cli_filter_opt(&cc->filter, c, arg)) != -1)
		return r;
	return cli_place_opt(NULL, &cc->place, c, arg);
}

/* The only argument is arg (NULL: none): what a copy line still lacks. */
static int no_destination(const char *arg)
{
	struct cli_remote r;
	int remote = arg ? cli_remote_parse(arg, &r) : 0;

	if (!arg)
		return cli_usage_error(NULL, "a copy needs sources and a destination: "
					     "SRC... HOST:DST or HOST:SRC... DST");
	if (remote == CLI_EXIT_USAGE)
		return remote;
	if (remote)
		return cli_usage_error(
			NULL, "the copy from '%s' needs a local destination after it", arg);
	return cli_usage_error(NULL, "the copy of '%s' needs a destination after it: HOST:PATH",
			       arg);
}

/* Whether dst reads as a host alone: an address, or a name that is no file here. */
static bool host_alone(const char *dst)
{
	unsigned char a[sizeof(struct in6_addr)];
	size_t i;

	if (inet_pton(AF_INET, dst, a) == 1 || inet_pton(AF_INET6, dst, a) == 1)
		return true;
	if (!dst[0] || access(dst, F_OK) == 0 || strchr(dst, '.'))
		return false;
	for (i = 0; dst[i]; i++)
		if (!isalnum((unsigned char)dst[i]) && dst[i] != '-' && dst[i] != '@')
			return false;
	return dst[0] != '-';
}

/* Neither src nor dst is HOST:PATH. */
static int no_remote(const char *src, const char *dst)
{
	if (host_alone(dst))
		return cli_usage_error(
			NULL, "the destination needs HOST:PATH (did you mean '%s%s%s:'?)",
			strchr(dst, ':') ? "[" : "", dst, strchr(dst, ':') ? "]" : "");
	return cli_usage_error(NULL,
			       "neither '%s' nor '%s' is HOST:PATH: one side of a copy is a "
			       "railcp server or an ssh host",
			       src, dst);
}

static int copy_args(int argc, char **argv, struct cli_copy *cc)
{
	static const struct option opts[] = {
		{"recursive", no_argument, NULL, 'r'},
		{"preserve", no_argument, NULL, 'p'},
		{"update", no_argument, NULL, 'u'},
		{"partial", no_argument, NULL, OPT_PARTIAL},
		{"checksum", no_argument, NULL, 'c'},
		{"quiet", no_argument, NULL, 'q'},
		{"verbose", no_argument, NULL, 'v'},
		{"json", no_argument, NULL, OPT_JSON},
		{"fsync", no_argument, NULL, OPT_FSYNC},
		{"no-fsync", no_argument, NULL, OPT_NO_FSYNC},
		{"direct", no_argument, NULL, OPT_DIRECT},
		{"no-direct", no_argument, NULL, OPT_NO_DIRECT},
		{"chunk", required_argument, NULL, OPT_CHUNK},
		{"port", required_argument, NULL, OPT_PORT},
		{"rsh", required_argument, NULL, 'e'},
		{"railcp-path", required_argument, NULL, OPT_RAILCP_PATH},
		{"bind", required_argument, NULL, OPT_BIND},
		{"help", no_argument, NULL, 'h'},
		CLI_SESSION_OPTIONS,
		CLI_PLACE_OPTIONS,
		CLI_IO_OPTIONS,
		CLI_FILTER_OPTIONS,
		{0},
	};
	struct cli_remote dst, src;
	int first, r, i, n;

	r = cli_options_short(NULL, "hrpucqve:n", argc, argv, opts, copy_opt, cc, copy_usage,
			      &first);
	if (r)
		return r;
	cc->o.timeout_ms = cc->sess.timeout_ms;
	cc->o.stall_ms = cc->sess.stall_ms;
	cc->o.key_file = cc->sess.key_file;
	cc->o.no_failover = cc->sess.no_failover;
	cc->o.rail_stall_ms = cc->sess.rail_stall_ms;
	cc->o.connect_timeout_ms = cc->sess.connect_timeout_ms;
	cc->o.qp = cc->sess.qp;
	if ((cc->pairs_given & (FSYNC_GIVEN | NO_FSYNC_GIVEN)) == (FSYNC_GIVEN | NO_FSYNC_GIVEN))
		return cli_usage_error(NULL, "--fsync and --no-fsync contradict each other: give "
					     "one or neither");
	if ((cc->pairs_given & (DIRECT_GIVEN | NO_DIRECT_GIVEN)) ==
	    (DIRECT_GIVEN | NO_DIRECT_GIVEN))
		return cli_usage_error(NULL, "--direct and --no-direct contradict each other: give "
					     "one or neither");
	n = argc - first - 1;
	if (n < 1)
		return no_destination(first < argc ? argv[first] : NULL);
	cc->src = calloc((size_t)n, sizeof(*cc->src));
	if (!cc->src)
		return cli_fail(-ENOMEM);
	if ((r = cli_remote_parse(argv[argc - 1], &dst)) == CLI_EXIT_USAGE)
		return r;
	cc->o.dir = r ? ENG_PUSH : ENG_PULL;
	cc->o.dst = r ? dst.path : argv[argc - 1];
	if (r)
		memcpy(cc->host, dst.login, sizeof(dst.login));
	for (i = 0; i < n; i++) {
		const char *arg = argv[first + i], *path;

		if ((r = cli_remote_parse(arg, &src)) == CLI_EXIT_USAGE)
			return r;
		path = r ? src.path : NULL;
		if (cc->o.dir == ENG_PUSH && path)
			return cli_usage_error(NULL,
					       "'%s' and the destination are both remote: one side "
					       "of a copy is this host",
					       arg);
		if (cc->o.dir == ENG_PULL && !path)
			return no_remote(arg, argv[argc - 1]);
		if (cc->o.dir == ENG_PULL && i > 0 && strcmp(src.login, cc->host) != 0)
			return cli_usage_error(NULL, "the sources are on two hosts, %s and %s",
					       cc->host, src.login);
		if (cc->o.dir == ENG_PULL) {
			/* "dir/" stays: its contents, as for local sources (io__src_name) */
			memcpy(cc->host, src.login, sizeof(src.login));
			cc->src[i] = path[0] ? path : ".";
		} else {
			cc->src[i] = arg;
		}
	}
	/* Before anything starts: ssh, or the fallback to it, would take it for an option. */
	if (cli_rsh_host_check(cc->host))
		return cli_usage_error(NULL, "%s", rcp_err_msg(-EINVAL));
	cc->o.src = cc->src;
	cc->o.n_src = (size_t)n;
	cc->o.host = cli_rsh_hostname(cc->host); /* user@ is for ssh */
	if (!cc->railcp_path)
		cc->railcp_path = "railcp";
	cc->filter.host = cc->host;
	cc->filter.json = cc->json;
	if ((r = cli_filter_finish(&cc->filter, cc->o.n_src, &cc->o)) != 0)
		return r;
	return cli_place_check(NULL, &cc->place) ? CLI_EXIT_USAGE : 0;
}

static _Atomic bool interrupted;

/* The first SIGINT or SIGTERM stops the copy cleanly; a second one kills as usual. */
static void on_interrupt(int sig)
{
	(void)sig;
	atomic_store(&interrupted, true);
}

static void on_progress(const struct eng_report *r, void *ctx)
{
	cli_progress_update(ctx, r);
}

static int print_summary(const struct cli_copy *cc, const struct eng_report *r)
{
	const char *verb = cc->o.dir == ENG_PUSH ? "pushed" : "pulled";
	bool push = cc->o.dir == ENG_PUSH;
	char sz[32];
	json_t *o;
	int err;

	if (cc->o.dry_run) /* its list and its line are said (copy_filter.c) */
		return 0;
	if (cc->json) {
		o = json_object();
		cli_report_json(o, r, r->wall_seconds);
		cli_fallback_json(o, r);
		json_object_set_new(o, "direction",
				    json_string(cc->o.dir == ENG_PUSH ? "push" : "pull"));
		json_object_set_new(o, "host", cli_json_text(cc->host));
		json_object_set_new(o, "files", json_integer((json_int_t)r->files_total));
		json_object_set_new(o, "files_sent",
				    json_integer((json_int_t)(r->files_total - r->files_skipped)));
		json_object_set_new(o, "files_skipped", json_integer((json_int_t)r->files_skipped));
		json_object_set_new(o, "bytes_skipped", json_integer((json_int_t)r->bytes_skipped));
		json_object_set_new(o, "bytes_kept", json_integer((json_int_t)r->bytes_kept));
		json_object_set_new(
			o, "files_direct_read",
			json_integer((json_int_t)(push ? r->files_direct : r->peer_files_direct)));
		json_object_set_new(
			o, "files_direct_written",
			json_integer((json_int_t)(push ? r->peer_files_direct : r->files_direct)));
		cli_hashed_json(o, r, cc->o.dir == ENG_PUSH);
		json_object_set_new(o, "transfer_seconds", json_real(r->seconds));
		json_object_set_new(o, "transfer_gbps", json_real(cli_gbps(r->bytes, r->seconds)));
		json_object_set_new(o, "synced", json_boolean(cc->o.fsync));
		json_object_set_new(o, "over_ssh", json_boolean(cc->over_ssh));
		if (cc->over_ssh)
			json_object_set_new(o, "ssh_home", cli_json_text(cc->ssh_home));
		cli_wire_json(o, cc->wire, r);
		cli_delete_json(&cc->filter, o, r->deleted);
		err = cli_series_json(o, &cc->series);
		if (!err)
			err = cli_json_print(stdout, o);
		json_decref(o);
		return err;
	}
	if (rcp_log_level() == RCP_LOG_SILENT)
		return 0;
	cli_size_str(r->bytes, sz, sizeof(sz));
	printf("railcp: %s %llu files, %s %s %s%s%s%s in %.3f s: %.3f Gb/s (data phase %.3f s, "
	       "%.3f Gb/s), every chunk checked, %s\n",
	       verb, (unsigned long long)(r->files_total - r->files_skipped), sz,
	       cc->o.dir == ENG_PUSH ? "to" : "from", cc->host,
	       cc->over_ssh ? " over ssh (relative paths beneath " : "",
	       cc->over_ssh ? cc->ssh_home : "", cc->over_ssh ? ")" : "", r->wall_seconds,
	       cli_gbps(r->bytes, r->wall_seconds), r->seconds, cli_gbps(r->bytes, r->seconds),
	       cc->o.fsync ? "every file synced to the disk" : "not synced (--no-fsync)");
	if (cc->o.update) {
		cli_size_str(r->bytes_skipped, sz, sizeof(sz));
		printf("railcp: %llu files, %s, were at the destination already (same size and "
		       "modification time): not sent\n",
		       (unsigned long long)r->files_skipped, sz);
	}
	if (cc->o.checksum)
		cli_checksum_print(stdout, r, cc->o.dir == ENG_PUSH);
	else if (cc->o.partial && r->bytes_kept) {
		cli_size_str(r->bytes_kept, sz, sizeof(sz));
		printf("railcp: %s kept by an earlier copy were confirmed by the sender (a keyed "
		       "digest of each chunk) and not sent\n",
		       sz);
	}
	if (r->files_direct || r->peer_files_direct) {
		char rule[48];

		snprintf(rule, sizeof(rule), "files of %u MiB or more", IO_DIRECT_MIN >> 20);
		printf("railcp: O_DIRECT (%s): files read %llu, written %llu\n",
		       cc->o.direct == ENG_DIRECT_ALWAYS ? "--direct" : rule,
		       (unsigned long long)(push ? r->files_direct : r->peer_files_direct),
		       (unsigned long long)(push ? r->peer_files_direct : r->files_direct));
	}
	cli_fallback_print(stdout, r);
	cli_delete_print(&cc->filter, r->deleted);
	cli_report_print(stdout, r, r->wall_seconds);
	cli_wire_print(stdout, cc->wire, r);
	return 0;
}

int cli_copy_parse(int argc, char **argv, struct cli_copy **cc_out)
{
	struct cli_copy *cc = calloc(1, sizeof(*cc));
	int r;

	if (!cc)
		return cli_fail(-ENOMEM);
	/* fsync by default: "verified" must still hold after a power loss */
	cc->o = (struct eng_copy_opts){.chunk = ENG_CHUNK_DEFAULT,
				       .chunk_fit = true,
				       .fsync = true,
				       .direct = ENG_DIRECT_AUTO};
	cc->sess = (struct cli_session){.timeout_ms = ENG_TIMEOUT_MS_DEFAULT};
	r = copy_args(argc, argv, cc);
	if (r) {
		cli_copy_destroy(cc);
		return r;
	}
	*cc_out = cc;
	return 0;
}

const struct eng_copy_opts *cli_copy_opts(const struct cli_copy *cc)
{
	return &cc->o;
}

/* The plan made: the copy runs on it, with a profile's knobs the command line did not give. */
static void copy_use_plan(struct cli_copy *cc, struct topo_plan *plan)
{
	cc->o.plan = plan;
	cc->o.transport = cli_place_transport(&cc->place);
	cli_place_live_tcp(&cc->place, &cc->plan_tcp);
	cc->o.plan_tcp = cc->plan_tcp;
	cli_session_knobs(&cc->sess, plan);
	cc->o.connect_timeout_ms = cc->sess.connect_timeout_ms;
	cc->o.qp = cc->sess.qp;
}

int cli_copy_place(struct cli_copy *cc, struct topo_plan **plan_out)
{
	int err = eng_copy_check(&cc->o);

	if (!err)
		err = eng_key_check(cc->o.key_file);
	if (!err)
		err = cli_place_live(&cc->place, plan_out);
	if (!err)
		copy_use_plan(cc, *plan_out);
	return err;
}

bool cli_copy_json(const struct cli_copy *cc)
{
	return cc->json;
}

void cli_copy_destroy(struct cli_copy *cc)
{
	if (!cc)
		return;
	cli_filter_fini(&cc->filter);
	topo_plan_destroy(cc->plan_tcp);
	free(cc->src);
	free(cc);
}

/* --json, and the copy failed with err: the one line, the one object, and the end. */
static int copy_failed(struct cli_copy *cc, int err, struct topo_plan *plan)
{
	json_t *more;

	cli_fail(err);
	more = cli_series_failure(&cc->series);
	if (more) {
		json_object_set_new(more, "direction",
				    json_string(cc->o.dir == ENG_PUSH ? "push" : "pull"));
		json_object_set_new(more, "host", cli_json_text(cc->host));
		json_object_set_new(more, "over_ssh", json_boolean(cc->over_ssh));
	}
	cli_json_error(CLI_EXIT_FAIL, more);
	cli_series_fini(&cc->series);
	topo_plan_destroy(plan);
	cli_copy_destroy(cc);
	return CLI_EXIT_FAIL;
}

int cli_cmd_copy(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_interrupt, .sa_flags = SA_RESETHAND};
	struct topo_plan *plan = NULL;
	struct cli_copy *cc = NULL;
	struct cli_wire *wire = NULL;
	struct eng_report rep;
	uint64_t topo_ns;
	int r, err;

	r = cli_copy_parse(argc, argv, &cc);
	if (r)
		return r < 0 ? CLI_EXIT_OK : r;
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	cc->o.cancel = &interrupted;
	cli_raise_nofile();
	/* What this host alone can tell first: on a host without RDMA too. */
	err = eng_copy_check(&cc->o);
	if (!err && !cc->rsh)
		err = eng_key_check(cc->o.key_file); /* over ssh, the far side makes the key */
	topo_ns = rcp_now_ns();
	if (!err)
		err = cli_place_live(&cc->place, &plan);
	topo_ns = rcp_now_ns() - topo_ns;
	if (!err) {
		copy_use_plan(cc, plan);
		cc->line.label = cc->o.dir == ENG_PUSH ? "push" : "pull";
		if (!cc->json && rcp_log_level() != RCP_LOG_SILENT && isatty(STDOUT_FILENO)) {
			cc->o.progress = on_progress;
			cc->o.ctx = &cc->line;
		} else if (cc->json) {
			cc->o.progress = cli_series_progress;
			cc->o.ctx = &cc->series;
		}
		cli_series_init(&cc->series, rcp_now_ns(), CLI_SERIES_MAX);
		wire = cli_wire_begin(plan);
		err = cli__copy_run(cc, &rep);
		cc->wire = cli_wire_end(wire, plan);
		/* auto went over tcp: the plan's rails carried none of it */
		if (!err && strcmp(rep.transport, eng_transport_str(cc->o.transport)))
			cc->wire = NULL;
		cli_progress_clear(&cc->line);
		if (!err && cc->json)
			err = cli_series_end(&cc->series, rcp_now_ns(), &rep);
	}
	if (!err) {
		rep.steps.ns[RCP_STEP_TOPOLOGY] = topo_ns;
		cli_steps_log(&rep.steps);
		err = print_summary(cc, &rep);
	} else if (cc->json)
		return copy_failed(cc, err, plan);
	cli_series_fini(&cc->series);
	free(wire);
	topo_plan_destroy(plan);
	cli_copy_destroy(cc);
	return err ? cli_fail(err) : CLI_EXIT_OK;
}
