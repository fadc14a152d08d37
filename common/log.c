/*
 * log.c - diagnostics for -v/-vv. One fprintf per line: stdio locks the
 * stream for the call, so lines from several threads never interleave.
 */
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>

static enum rcp_log_level log_level = RCP_LOG_NOTICE;

void rcp_log_set_level(enum rcp_log_level level)
{
	log_level = level;
}

enum rcp_log_level rcp_log_level(void)
{
	return log_level;
}

void rcp_log(enum rcp_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "railcp: %s\n", line);
}
