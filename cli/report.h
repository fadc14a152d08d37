/*
 * report.h - private to cli/: a transfer's figures as a progress line, a
 * summary and JSON, shared by bench and copies.
 */
#ifndef RAILCP_CLI_REPORT_H
#define RAILCP_CLI_REPORT_H

#include "cli/cli.h"

double cli_gbps(uint64_t bytes, double seconds);
double cli_mibps(uint64_t bytes, double seconds);

/* Set bytes, seconds, rates, chunk, stripes, slots, "rails" and "nodes" in o. */
void cli_report_json(json_t *o, const struct eng_report *r, double seconds);

/* One line per rail and per NUMA node, then the stripes and slots. */
void cli_report_print(FILE *f, const struct eng_report *r, double seconds);

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

#endif
