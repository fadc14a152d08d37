/*
 * session.h - private to cli/: the options of a session with a peer that
 * copies, railcp bench and railcp serve share (see session.c): --timeout,
 * --stall, --key-file, --no-failover, --rail-stall, --connect-timeout,
 * --ack-timeout, --retry-count and --tos,
 * with one getopt table fragment,
 * one parser and one usage text, as place.h has for the placement options;
 * and the last four, the fabric knobs, merged with a --profile's.
 */
#ifndef RAILCP_CLI_SESSION_H
#define RAILCP_CLI_SESSION_H

#include <getopt.h>
#include <stdbool.h>

#include "cli/cli.h"
#include "topology/topology.h"

/*
 * What the options set; a command starts timeout_ms at ENG_TIMEOUT_MS_DEFAULT
 * and copies the four into its engine options once they are parsed.
 */
struct cli_session {
	int timeout_ms;		/* --timeout: each control and connection step */
	int stall_ms;		/* --stall: 0, the engine's 60 s */
	const char *key_file;	/* --key-file: NULL, RAILCP_KEY, then ~/.config/railcp/key */
	bool no_failover;	/* --no-failover */
	int rail_stall_ms;	/* --rail-stall: 0, the engine's ENG_RAIL_STALL_MS */
	int connect_timeout_ms; /* --connect-timeout: 0, ENG_CONNECT_TIMEOUT_MS_DEFAULT */
	struct eng_qp_knobs qp; /* --ack-timeout, --retry-count, --tos: 0, rdma_cm's and 7, none */
};

/* Codes of the session options: beyond any character and the placement options' codes. */
enum {
	CLI_OPT_TIMEOUT = 0x180,
	CLI_OPT_STALL,
	CLI_OPT_KEY_FILE,
	CLI_OPT_NO_FAILOVER,
	CLI_OPT_RAIL_STALL,
	CLI_OPT_CONNECT_TIMEOUT,
	CLI_OPT_ACK_TIMEOUT,
	CLI_OPT_RETRY_COUNT,
	CLI_OPT_TOS,
};

/*
 * getopt_long entries of the fabric knobs, which a profile can hold too
 * (railcp topo --save-profile takes them alone).
 */
#define CLI_KNOB_OPTIONS                                                                           \
	{"connect-timeout", required_argument, NULL, CLI_OPT_CONNECT_TIMEOUT},                     \
		{"ack-timeout", required_argument, NULL, CLI_OPT_ACK_TIMEOUT},                     \
		{"retry-count", required_argument, NULL, CLI_OPT_RETRY_COUNT},                     \
	{                                                                                          \
		"tos", required_argument, NULL, CLI_OPT_TOS                                        \
	}

/* getopt_long entries of the session options, for a command's table. */
#define CLI_SESSION_OPTIONS                                                                        \
	{"timeout", required_argument, NULL, CLI_OPT_TIMEOUT},                                     \
		{"stall", required_argument, NULL, CLI_OPT_STALL},                                 \
		{"key-file", required_argument, NULL, CLI_OPT_KEY_FILE},                           \
		{"rail-stall", required_argument, NULL, CLI_OPT_RAIL_STALL}, CLI_KNOB_OPTIONS,     \
	{                                                                                          \
		"no-failover", no_argument, NULL, CLI_OPT_NO_FAILOVER                              \
	}

/* Their lines in a command's usage. */
#define CLI_SESSION_USAGE                                                                          \
	"  --timeout SEC      limit of each control and connection step (default 30)\n"            \
	"  --stall SEC        fail the data phase after SEC seconds without a completed\n"         \
	"                     chunk: a stopped peer, fabric or disk (default 60)\n"                \
	"  --key-file FILE    the key client and server share (default: $RAILCP_KEY,\n"            \
	"                     then ~/.config/railcp/key, chmod 600; without a key,\n"              \
	"                     client and server meet only on loopback, as one user)\n"             \
	"  --no-failover      a rail that fails fails the copy, bench or session on it\n"          \
	"                     (default: its chunks are sent again on the other rails;\n"           \
	"                     only when every rail failed does it fail)\n"                         \
	"  --rail-stall SEC   with failover, a rail whose chunks get no credit back for\n"         \
	"                     SEC seconds while another rail moves is failed as\n"                 \
	"                     stalled (default 5)\n"                                               \
	"  --connect-timeout SEC  limit of each stripe's connection at set-up (address,\n"         \
	"                     route, the peer's answer); with failover a rail that does\n"         \
	"                     not connect within it is left out (default 10, at most\n"            \
	"                     --timeout)\n"                                                        \
	"  --ack-timeout N    the queue pairs' local ACK timeout, 4.096 us x 2^N, N 1 to 31\n"     \
	"                     (default: rdma_cm's); with --retry-count R, a rail that\n"           \
	"                     drops everything fails after (R + 1) such timeouts\n"                \
	"  --retry-count R    transport retries of the queue pairs, 1 to 7 (default 7)\n"          \
	"  --tos N            the traffic class of this side's connections, 0 to 255:\n"           \
	"                     RoCE v2's DSCP and ECN bits, InfiniBand's SL, TCP's IP_TOS\n"        \
	"                     (default: the system's)\n"                                           \
	"                     (these four, when not given, take a --profile's values)\n"

/* 0 when c was a session option and arg good, CLI_EXIT_USAGE when bad, -1 when not ours. */
int cli_session_opt(const char *cmd, struct cli_session *s, int c, const char *arg);

/*
 * The knobs a profile gave (plan->knobs) where the command line gave none:
 * afterwards s holds the values in effect, which the engine, the summary
 * and a far side over ssh (rsh.c) take from it. plan may be NULL.
 */
void cli_session_knobs(struct cli_session *s, const struct topo_plan *plan);

/* The knobs s holds, as a profile saves them (railcp topo --save-profile). */
void cli_session_knobs_save(const struct cli_session *s, struct topo_knobs *k);

/* The same from an engine's options. */
void cli_knobs_of(const struct eng_qp_knobs *qp, int connect_timeout_ms, struct topo_knobs *k);

/*
 * The knobs k sets as words, "tos 72, ack_timeout 14, retry_count 3,
 * connect_timeout 5 s" (a profile's keys), truncated to len; "" when none.
 */
void cli_knobs_str(const struct topo_knobs *k, char *buf, size_t len);

#endif
