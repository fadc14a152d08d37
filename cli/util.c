/*
 * util.c - error printing, option values and JSON output shared by the
 * subcommands.
 */
#include "cli/cli.h"

#include "common/common.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* The last error said, for --json. */
static char last_error[1024];
/* What errors begin with: railcp, or railcp-mpi (cli_set_prog). */
static const char *prog = "railcp";

void cli_set_prog(const char *name)
{
	prog = name;
}

const char *cli_last_error(void)
{
	return last_error;
}

int cli_fail(int err)
{
	snprintf(last_error, sizeof(last_error), "%s", rcp_err_msg(err));
	fprintf(stderr, "%s: %s\n", prog, last_error);
	return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	/* NULL: a copy's options, which --help-copy lists; "": the global ones */
	if (strcmp(prog, "railcp"))
		fprintf(stderr, "%s: %s (see '%s --help')\n", prog, last_error, prog);
	else
		fprintf(stderr, "railcp: %s (see 'railcp %s%s--help%s')\n", last_error,
			cmd ? cmd : "", cmd && cmd[0] ? " " : "", cmd ? "" : "-copy");
	return CLI_EXIT_USAGE;
}

bool cli_wants_json(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return true;
	return false;
}

int cli_json_error(int code, json_t *more)
{
	json_t *o = json_object();

	json_object_set_new(o, "error", cli_json_text(last_error));
	json_object_set_new(o, "exit", json_integer(code));
	if (more)
		json_object_update(o, more);
	json_decref(more);
	cli_json_print(stdout, o);
	json_decref(o);
	return code;
}

int cli_json_print(FILE *f, const json_t *v)
{
	if (json_dumpf(v, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF)
		return -EIO;
	return fflush(f) == 0 ? 0 : -EIO;
}

json_t *cli_json_text(const char *text)
{
	json_t *v;
	size_t size;
	char *esc;

	if (!text)
		return json_null();
	if ((v = json_string(text)) != NULL)
		return v;
	size = 4 * strlen(text) + 4; /* each byte at most \xNN, and the NUL */
	if (!(esc = malloc(size)))
		return NULL;
	v = json_string(rcp_printable(text, esc, size));
	free(esc);
	return v;
}

int cli_parse_size(const char *cmd, const char *opt, const char *v, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	unsigned long long x;
	int shift = 0;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno == 0 && end != v && *end && (u = strchr(units, *end)) != NULL) {
		shift = 10 * (int)(u - units + 1);
		end += (end[1] == 'i' && end[2] == 'B') ? 3 : (end[1] == 'B' ? 2 : 1);
	}
	if (errno || end == v || *end || x == 0 || x > (~0ull >> shift))
		return cli_usage_error(cmd, "%s needs a size like 4096, 64K, 1M or 2G, not '%s'",
				       opt, v);
	*out = (uint64_t)x << shift;
	return 0;
}

void cli_size_str(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	unsigned i = 0;

	while (v >= 1024 && i + 1 < RCP_ARRAY_SIZE(units)) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", v, units[i]);
}

int cli_options(const char *cmd, int argc, char **argv, const struct option *opts,
		int (*handle)(void *ctx, int c, const char *arg), void *ctx, void (*usage)(FILE *f),
		int *first_arg_out)
{
	return cli_options_short(cmd, "hqv", argc, argv, opts, handle, ctx, usage, first_arg_out);
}

int cli_options_short(const char *cmd, const char *shortopts, int argc, char **argv,
		      const struct option *opts, int (*handle)(void *ctx, int c, const char *arg),
		      void *ctx, void (*usage)(FILE *f), int *first_arg_out)
{
	char spec[64];
	int c, r;

	snprintf(spec, sizeof(spec), ":%s", shortopts); /* ':': a missing value is told apart */
	optind = 0; /* not 1: glibc then also forgets an earlier parse (tests parse several) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, spec, opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		if (c == '?' || c == ':')
			return cli_opt_error(cmd, c, argv[optind - 1], shortopts, opts, usage);
		if (optarg && optarg == argv[optind - 1] &&
		    cli_opt_is_option(optarg, shortopts, opts))
			return cli_opt_taken(cmd, c, optarg, shortopts, opts, usage);
		if (c == 'q' || c == 'v') {
			cli_log_opt(c);
			continue;
		}
		r = handle(ctx, c, optarg);
		if (r == -1)
			return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		if (r)
			return r;
	}
	*first_arg_out = optind;
	return 0;
}

void cli_log_opt(int c)
{
	if (c == 'q')
		rcp_log_set_level(RCP_LOG_SILENT);
	else
		rcp_log_set_level(rcp_log_level() >= RCP_LOG_INFO ? RCP_LOG_DEBUG : RCP_LOG_INFO);
}

void cli_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int cli_parse_chunk(const char *cmd, const char *v, uint32_t *out)
{
	uint64_t chunk;

	if (cli_parse_size(cmd, "--chunk", v, &chunk))
		return CLI_EXIT_USAGE;
	if (chunk == 0 || chunk % ENG_CHUNK_MIN || chunk > ENG_CHUNK_MAX)
		return cli_usage_error(cmd, "--chunk must be a multiple of 4K, at most 64M");
	*out = (uint32_t)chunk;
	return 0;
}

/* A decimal count of at most max in v (no sign, nothing after it) into *x. */
static bool count_of(const char *v, unsigned max, unsigned long *x)
{
	char *end;

	errno = 0;
	*x = strtoul(v, &end, 10);
	return !errno && end != v && !*end && *x <= max && v[0] != '-';
}

int cli_parse_count(const char *cmd, const char *opt, const char *v, unsigned max, unsigned *out)
{
	unsigned long x;

	if (!count_of(v, max, &x) || x == 0)
		return cli_usage_error(cmd, "%s needs a number from 1 to %u, not '%s'", opt, max,
				       v);
	*out = (unsigned)x;
	return 0;
}

int cli_parse_count_or_none(const char *cmd, const char *opt, const char *v, unsigned max,
			    unsigned *out)
{
	unsigned long x;

	if (!count_of(v, max, &x))
		return cli_usage_error(cmd, "%s needs a number from 0 (none) to %u, not '%s'", opt,
				       max, v);
	*out = (unsigned)x;
	return 0;
}

int cli_parse_port(const char *cmd, const char *v, uint16_t *out)
{
	unsigned port = 0; /* gcc 12 cannot tell cli_usage_error returns non-zero */

	if (cli_parse_count(cmd, "--port", v, 65535, &port))
		return CLI_EXIT_USAGE;
	*out = (uint16_t)port;
	return 0;
}

int cli_parse_secs(const char *cmd, const char *opt, const char *v, int *ms_out)
{
	unsigned sec = 0; /* as in cli_parse_port */

	if (cli_parse_count(cmd, opt, v, CLI_MAX_SECS, &sec))
		return CLI_EXIT_USAGE;
	*ms_out = (int)sec * 1000;
	return 0;
}
