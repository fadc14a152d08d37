/*
 * wire.h - private to cli/: each rail's counters on the wire over a run
 * (see wire.c), for the summary and --json of copies and bench.
 */
#ifndef RAILCP_CLI_WIRE_H
#define RAILCP_CLI_WIRE_H

#include <jansson.h>
#include <net/if.h>
#include <stdio.h>

#include "cli/cli.h"

#define CLI_WIRE_MAX 96 /* counters kept per rail */

enum cli_wire_kind {
	CLI_WIRE_PORT,	 /* ports/P/counters: the IB port counters */
	CLI_WIRE_HW,	 /* ports/P/hw_counters: the driver's (retransmits, CNPs, ...) */
	CLI_WIRE_NETDEV, /* the netdev's statistics: all of a RoCE rail's frames */
};

struct cli_wire_counter {
	enum cli_wire_kind kind;
	char name[48];
	uint64_t v;
};

struct cli_wire_rail {
	char dev[64];
	unsigned port;
	char netdev[IF_NAMESIZE];
	size_t n;
	struct cli_wire_counter c[CLI_WIRE_MAX];
};

struct cli_wire {
	size_t n_rails;
	struct cli_wire_rail rail[TOPO_MAX_RAILS];
};

/* The counters of the plan's rails now, read under root ("" live); none is an error. */
void cli_wire_read(const char *root, const struct topo_plan *plan, struct cli_wire *out);

/* end minus start, counter by counter (a counter missing at the start, or gone back, is left out).
 */
void cli_wire_delta(struct cli_wire *end, const struct cli_wire *start);

/* The bytes this end sent on rail r's wire over the delta: port counters, else the netdev's. */
uint64_t cli_wire_sent(const struct cli_wire_rail *r);

/*
 * The counters of plan's rails before a run: a pair whose first is read
 * now; NULL when out of memory (the run goes on without them). Free it.
 */
struct cli_wire *cli_wire_begin(const struct topo_plan *plan);

/* After the run: the second of the pair becomes the difference, returned. Accepts NULL. */
const struct cli_wire *cli_wire_end(struct cli_wire *pair, const struct topo_plan *plan);

/* One line per rail: bytes and packets both ways against the payload, and what else moved. */
void cli_wire_print(FILE *f, const struct cli_wire *w,
		    const struct eng_report *r); /* w may be NULL */

/* "wire": [ {rail, netdev, sent_bytes, ..., port, hw, netdev_stats} ] in o. */
void cli_wire_json(json_t *o, const struct cli_wire *w,
		   const struct eng_report *r); /* w may be NULL */

#endif
