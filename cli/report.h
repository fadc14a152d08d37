/*
 * report.h - private to cli/: a transfer's figures as a progress line, a
 * summary and JSON, shared by bench and copies.
 */
#ifndef RAILCP_CLI_REPORT_H
#define RAILCP_CLI_REPORT_H

#include "cli/cli.h"

double cli_gbps(uint64_t bytes, double seconds);
double cli_mibps(uint64_t bytes, double seconds);

/* Set bytes, seconds, rates, chunk, stripes, slots, "rails", "nodes" and "steps" in o. */
void cli_report_json(json_t *o, const struct eng_report *r, double seconds);

/*
 * "steps": each step of common/steps.h by its name, in seconds, and "fixed",
 * their sum but the data phase (doc/usage.md). NULL on no memory.
 */
json_t *cli_steps_json(const struct rcp_steps *s);

/* -v: the steps as one line on stderr ("railcp: steps: topology 12.1 ms, ..."). */
void cli_steps_log(const struct rcp_steps *s);

/*
 * A server's session as it ended (serve --json): session, peer, job, what,
 * start and end (UTC, ISO 8601 with milliseconds), bytes, seconds, gbps,
 * result ("ok" or "failed"), error (null or the sentence) and the server's
 * "steps" up to its end exchange. NULL on no memory.
 */
json_t *cli_session_json(const struct eng_session_record *r);

/*
 * A session that waits its turn at the server (serve --json), as it joins
 * the queue or leaves it: session, peer, event ("queued", "admitted" or
 * "refused"), time (UTC, as start), place and of (the queue's length);
 * queued: reason (why it waits); admitted and refused: waited_ms and error
 * (null, or the sentence its client is told). NULL on no memory.
 */
json_t *cli_queue_json(const struct eng_queue_event *ev);

/* One line per rail and per NUMA node, then the stripes (queue pairs) and slots. */
void cli_report_print(FILE *f, const struct eng_report *r, double seconds);

/*
 * A copy whose every RDMA rail failed and that went on over tcp (--transport
 * auto): its "fallback" object (from, bytes moved before, the failure's
 * sentence), or its line; nothing for any other copy.
 */
void cli_fallback_json(json_t *o, const struct eng_report *r);
void cli_fallback_print(FILE *f, const struct eng_report *r);

/* The kept chunks' comparison (--partial, -c) in the copy's --json object o; push: this end sends.
 */
void cli_hashed_json(json_t *o, const struct eng_report *r, bool push);

/* -c's lines of a copy's summary on f; push: this end sends. */
void cli_checksum_print(FILE *f, const struct eng_report *r, bool push);

/* The progress line on a terminal: state between refreshes. */
struct cli_progress {
	const char *label;
	uint64_t last_ns;
	uint64_t last_bytes;
	double rate; /* bytes/s, smoothed */
	uint64_t rail_last[TOPO_MAX_RAILS];
	double rail_rate[TOPO_MAX_RAILS];
};

/* Redraw the line (at most four times a second): bytes, files, rate, ETA, per-rail rates. */
void cli_progress_update(struct cli_progress *p, const struct eng_report *r);

/* Erase the line, if one was drawn. */
void cli_progress_clear(const struct cli_progress *p);

/*
 * A run's time series for --json (cli/series.c): every rail's bytes so far,
 * sampled from the progress callback at most every CLI_SERIES_MS by the
 * monotonic clock, from t0 (a sample of zeros) to a final sample of the
 * finished run's figures. Beyond max samples, every other one is dropped
 * and the interval doubles, so a run of any length takes bounded memory.
 * Not thread-safe: one thread (the one that runs the transfer) feeds it.
 */
#define CLI_SERIES_MS 250
/* 36 hours at 4 a second; (1 + rails) x 8 bytes each: 12 MiB with two rails, 36 with 8. */
#define CLI_SERIES_MAX (1u << 19)

struct cli_series {
	uint64_t t0_ns;
	uint64_t interval_ns;	       /* CLI_SERIES_MS, doubled at each decimation */
	size_t max;		       /* samples held at most (at least 2) */
	size_t n, cap;		       /* samples held, allocated */
	unsigned n_rails;	       /* 0 until the first sample */
	uint64_t *t_ns;		       /* each sample's time since t0 */
	uint64_t *bytes;	       /* n x n_rails: each rail's bytes so far */
	char rail[TOPO_MAX_RAILS][80]; /* the rails' names, as eng_rail_report has them */
	int err;		       /* -ENOMEM once a sample could not be kept */
	struct eng_report last;	       /* the figures cli_series_progress saw last */
	bool have_last;
};

/* Start the clock at now_ns; keep at most max samples. */
void cli_series_init(struct cli_series *s, uint64_t now_ns, size_t max);

/* Free the samples; the series is empty again. */
void cli_series_fini(struct cli_series *s);

/* Keep r as a sample if one interval passed since the last; 0 or -ENOMEM (kept in s->err). */
int cli_series_add(struct cli_series *s, uint64_t now_ns, const struct eng_report *r);

/* The finished run's figures: always kept, in place of a last sample less than an interval old. */
int cli_series_end(struct cli_series *s, uint64_t now_ns, const struct eng_report *r);

/*
 * Set "series" in o: {"interval_ms", "rails": [names], "t_ms": [ms since t0],
 * "bytes": [[each rail's bytes so far] per sample]}. s->err if a sample was lost.
 */
int cli_series_json(json_t *o, const struct cli_series *s);

/* A progress callback (ctx: a struct cli_series) that samples by rcp_now_ns. */
void cli_series_progress(const struct eng_report *so_far, void *ctx);

/*
 * For a failed run's --json: what was measured before the failure (the
 * figures of the last progress report, as cli_report_json sets them, and
 * the series), as an object for cli_json_error; NULL on no memory.
 */
json_t *cli_series_failure(const struct cli_series *s);

#endif
