/*
 * error.c - one sentence per failure, recorded where it is first seen.
 *
 * The sentence lives in thread-local storage with the code it explains, so a
 * later, unrelated failure never prints a stale message: rcp_err_msg checks
 * that the code matches before using the sentence.
 */
#include "common/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local struct {
	int code;
	char text[512];
} last;

int rcp_err(int err, const char *fmt, ...)
{
	char text[sizeof(last.text)];
	va_list ap;

	/* Format aside first: callers may pass rcp_err_msg() itself as an argument. */
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	memcpy(last.text, text, sizeof(text));
	last.code = err;
	return err;
}

const char *rcp_err_msg(int err)
{
	if (err != 0 && last.code == err && last.text[0] != '\0')
		return last.text;
	return strerror(err < 0 ? -err : err);
}

void rcp_err_clear(void)
{
	last.code = 0;
	last.text[0] = '\0';
}
