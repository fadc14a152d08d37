/*
 * util.c - error printing and JSON output shared by the subcommands.
 */
#include "cli/cli.h"

#include "common/common.h"

#include <errno.h>
#include <stdarg.h>

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
