/*
 * common.h - the error convention, logging and the clock shared by every
 * railcp module.
 *
 * Functions return 0 or a negative errno. Where an error is first seen, the
 * code records one sentence that explains it (rcp_err), and every caller
 * passes the code up untouched. The command prints that sentence once, at the
 * boundary (rcp_err_msg), so a user sees one clear line, never a bare errno.
 *
 * Threading: the error sentence is per thread (each worker keeps its own);
 * the log level is process-wide and set once at start-up.
 */
#ifndef RAILCP_COMMON_H
#define RAILCP_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define RCP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum rcp_log_level {
	RCP_LOG_SILENT = -1, /* -q */
	RCP_LOG_NOTICE = 0,  /* shown by default: a server's session reports */
	RCP_LOG_INFO = 1,    /* -v */
	RCP_LOG_DEBUG = 2,   /* -vv */
};

/* Record the sentence for error code err (negative errno) and return err. */
int rcp_err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The recorded sentence if the last recorded code is err, else strerror(-err). */
const char *rcp_err_msg(int err);

/* Forget the recorded sentence of this thread. */
void rcp_err_clear(void);

/* Not thread-safe: call once before threads start. */
void rcp_log_set_level(enum rcp_log_level level);

/* The level set last (RCP_LOG_NOTICE by default). */
enum rcp_log_level rcp_log_level(void);

/* Thread-safe: one line to stderr when level is enabled. */
void rcp_log(enum rcp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * text from a peer or any other stranger, fit to quote in a log line or a
 * sentence: printable ASCII is kept, every other byte becomes \xNN, so no
 * newline or terminal escape can forge a line; at most size - 1 bytes (size
 * >= 4), a text cut short ends in "...". A backslash is kept as is, so a
 * sentence that already quotes an escaped name reads the same. Returns out.
 * Thread-safe.
 */
const char *rcp_printable(const char *text, char *out, size_t size);

/*
 * bytes for a sentence: "2 GiB", "8 MiB" where whole, else KiB rounded up
 * ("1536 KiB", "100 KiB"). Returns buf. Thread-safe.
 */
const char *rcp_size_text(uint64_t bytes, char *buf, size_t len);

/* CLOCK_MONOTONIC in nanoseconds. Thread-safe. */
uint64_t rcp_now_ns(void);

#endif
