/*
 * log.c - diagnostics for -v/-vv. One fprintf per line: stdio locks the
 * stream for the call, so lines from several threads never interleave.
 * Text from strangers is quoted through rcp_printable, so it can neither
 * break a line nor reach the terminal as an escape sequence.
 */
#include "common/common.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

const char *rcp_printable(const char *text, char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (size < 4) {
		if (size)
			out[0] = '\0';
		return out;
	}
	for (; *text; text++) {
		unsigned char c = (unsigned char)*text;
		bool plain = c >= 0x20 && c < 0x7f;

		if (o + (plain ? 1 : 4) + 4 > size) { /* this byte, "..." and the NUL */
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (plain) {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	out[o] = '\0';
	return out;
}

const char *rcp_size_text(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
		snprintf(buf, len, "%" PRIu64 " GiB", bytes >> 30);
	else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
		snprintf(buf, len, "%" PRIu64 " MiB", bytes >> 20);
	else
		snprintf(buf, len, "%" PRIu64 " KiB", (bytes + 1023) >> 10);
	return buf;
}
