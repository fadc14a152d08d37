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

int cli_fail(int err)
{
	fprintf(stderr, "railcp: %s\n", rcp_err_msg(err));
	return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "railcp: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'railcp %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
	return CLI_EXIT_USAGE;
}

int cli_json_print(FILE *f, const json_t *v)
{
	if (json_dumpf(v, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF)
		return -EIO;
	return fflush(f) == 0 ? 0 : -EIO;
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
	return cli_options_short(cmd, "h", argc, argv, opts, handle, ctx, usage, first_arg_out);
}

int cli_options_short(const char *cmd, const char *shortopts, int argc, char **argv,
		      const struct option *opts, int (*handle)(void *ctx, int c, const char *arg),
		      void *ctx, void (*usage)(FILE *f), int *first_arg_out)
{
	int c, r;

	optind = 0; /* not 1: glibc then also forgets an earlier parse (tests parse several) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		r = c == '?' || c == ':' ? -1 : handle(ctx, c, optarg);
		if (r == -1)
			return cli_usage_error(cmd, "unknown option or missing value '%s'",
					       argv[optind - 1]);
		if (r)
			return r;
	}
	*first_arg_out = optind;
	return 0;
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

	if (cli_parse_count(cmd, opt, v, 3600, &sec))
		return CLI_EXIT_USAGE;
	*ms_out = (int)sec * 1000;
	return 0;
}
