/*
 * cli.h - private to cli/: the subcommands and their shared helpers.
 *
 * Each subcommand is a function taking argc/argv (argv[0] is the subcommand
 * name) and returning the process exit status. Errors are printed once, here
 * at the boundary, as "railcp: <sentence>".
 */
#ifndef RAILCP_CLI_H
#define RAILCP_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"

enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,  /* the command ran and failed */
	CLI_EXIT_USAGE = 2, /* bad command line */
};

int cli_cmd_devices(int argc, char **argv);
int cli_cmd_serve(int argc, char **argv);
int cli_cmd_bench(int argc, char **argv);
int cli_cmd_topo(int argc, char **argv);
int cli_cmd_doctor(int argc, char **argv);
/* railcp [options] SRC... HOST:DST and railcp [options] HOST:SRC... DST; argv[0] is "railcp". */
int cli_cmd_copy(int argc, char **argv);

/* A copy's command line, parsed: what cli_cmd_copy runs. */
struct cli_copy;

/*
 * Parse a copy's command line (argv[0] is "railcp"; a pull's remote paths
 * are trimmed in place, and the result points into argv). 0 with
 * *cc_out set, -1 after printing usage for --help, CLI_EXIT_USAGE after one
 * line, or CLI_EXIT_FAIL. Not thread-safe (getopt).
 */
int cli_copy_parse(int argc, char **argv, struct cli_copy **cc_out);

/* The options eng_copy_run would get (without the placement plan and progress). */
const struct eng_copy_opts *cli_copy_opts(const struct cli_copy *cc);

/*
 * What a copy checks on this host before it starts (sources, key), and its
 * placement from this process's binding: *plan_out (the caller destroys it)
 * and the transport go into its options. 0 or an error with a sentence.
 */
int cli_copy_place(struct cli_copy *cc, struct topo_plan **plan_out);

/* Whether the copy's command line asked for --json. */
bool cli_copy_json(const struct cli_copy *cc);

/* Accepts NULL. */
void cli_copy_destroy(struct cli_copy *cc);

/* What cli_fail and cli_usage_error begin their line with (default "railcp"); not copied. */
void cli_set_prog(const char *name);

/* Print "railcp: <sentence for err>" to stderr; returns CLI_EXIT_FAIL. */
int cli_fail(int err);

/*
 * Print "railcp: <msg>" and where the options are told to stderr: cmd's
 * --help, --help-copy for NULL (a copy), railcp --help for "". Returns
 * CLI_EXIT_USAGE.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A byte count like 4096, 64K, 1M, 2G or 1GiB (binary units); CLI_EXIT_USAGE when not one. */
int cli_parse_size(const char *cmd, const char *opt, const char *v, uint64_t *out);

/* A count from 1 to max; CLI_EXIT_USAGE (after one line) when v is not one. */
int cli_parse_count(const char *cmd, const char *opt, const char *v, unsigned max, unsigned *out);

/* A count from 0 (none) to max; CLI_EXIT_USAGE (after one line) when v is not one. */
int cli_parse_count_or_none(const char *cmd, const char *opt, const char *v, unsigned max,
			    unsigned *out);

/* --chunk: a multiple of 4K from 4K to 64M; CLI_EXIT_USAGE (after one line) when not one. */
int cli_parse_chunk(const char *cmd, const char *v, uint32_t *out);

/* --port: 1 to 65535; CLI_EXIT_USAGE (after one line) when not one. */
int cli_parse_port(const char *cmd, const char *v, uint16_t *out);

#define CLI_MAX_SECS 3600

/*
 * The seconds of option opt (--timeout, --stall: 1 to CLI_MAX_SECS) as
 * milliseconds; CLI_EXIT_USAGE (after one line) when not such a number.
 */
int cli_parse_secs(const char *cmd, const char *opt, const char *v, int *ms_out);

/* "1.5 GiB" */
void cli_size_str(uint64_t bytes, char *buf, size_t len);

struct option;

/*
 * Run getopt_long over argv (argv[0] is the subcommand) with opts, in which
 * --help maps to 'h'; -q and -v set the log level as before the command. handle(ctx, c, arg)
 * returns 0, CLI_EXIT_USAGE (after printing why) or -1 for an option it does not know. Returns 0
 * with the index of the first argument that is not an option in *first_arg_out, -1 after printing
 * usage for --help, or CLI_EXIT_USAGE after one line.
 */
int cli_options(const char *cmd, int argc, char **argv, const struct option *opts,
		int (*handle)(void *ctx, int c, const char *arg), void *ctx, void (*usage)(FILE *f),
		int *first_arg_out);

/* Raise the soft limit of open files to the hard one: a copy holds a few per file in flight. */
void cli_raise_nofile(void);

/* cli_options with short options too (getopt syntax; include "h"). */
int cli_options_short(const char *cmd, const char *shortopts, int argc, char **argv,
		      const struct option *opts, int (*handle)(void *ctx, int c, const char *arg),
		      void *ctx, void (*usage)(FILE *f), int *first_arg_out);

/* The sentence cli_fail or cli_usage_error printed last ("" before any). */
const char *cli_last_error(void);

/* Whether the command line asks for --json (before any "--"). */
bool cli_wants_json(int argc, char **argv);

/*
 * For --json: print {"error": cli_last_error(), "exit": code, and more's
 * members (what was measured before the failure)} on stdout. more may be
 * NULL; it is consumed. Returns code.
 */
int cli_json_error(int code, json_t *more);

/* -q or -v (c): the log level, as before the command. */
void cli_log_opt(int c);

/*
 * The name of names nearest to word, if it is near enough to be a slip
 * (at most two edits, and fewer than a third of the word); else NULL.
 */
const char *cli_nearest(const char *word, const char *const *names, size_t n);

/*
 * cli/opts.c, for cli_options_short: one line about what getopt refused
 * (c '?' or ':'; word the argument it was at), with a did-you-mean from
 * opts and the value's name from usage's text; CLI_EXIT_USAGE.
 */
int cli_opt_error(const char *cmd, int c, const char *word, const char *shortopts,
		  const struct option *opts, void (*usage)(FILE *f));

/* Whether arg is one of the options of shortopts and opts (as "--root" or "-r"). */
bool cli_opt_is_option(const char *arg, const char *shortopts, const struct option *opts);

/* The option with code c took the option arg as its value: say what it needs; CLI_EXIT_USAGE. */
int cli_opt_taken(const char *cmd, int c, const char *arg, const char *shortopts,
		  const struct option *opts, void (*usage)(FILE *f));

/* Write a JSON value to f, indented, with a final newline; consumes nothing. */
int cli_json_print(FILE *f, const json_t *v);

/*
 * text as a JSON string, whatever its bytes: as it is when it is UTF-8,
 * else with every byte outside printable ASCII as \xNN (rcp_printable), so
 * a field never goes missing for an interface name or a sentence that is
 * not UTF-8. NULL text is JSON null.
 */
json_t *cli_json_text(const char *text);

/* The device listing as a JSON object {"devices": [...]}; NULL on no memory. */
json_t *cli_devices_json(const struct eng_device_list *list);

/* The device listing for people. */
void cli_devices_print(FILE *f, const struct eng_device_list *list);

/* ---- the IP interfaces in railcp devices (devices_net.c) ---- */
struct topo_netif;
struct topo_netif_list;

/* Why a TCP copy without --rails leaves interface n out ("down", ...); NULL when it uses it. */
const char *cli_netif_unused(const struct topo_netif *n);

/* The interfaces as a JSON array, each with whether a copy uses it; NULL on no memory. */
json_t *cli_netifs_json(const struct topo_netif_list *l);

/*
 * The interfaces for people, under a header line, and whether a TCP copy
 * uses each; tcp_by_default: the host has no ACTIVE RDMA port, so say that
 * a copy can go over them (--transport tcp, or auto, the default).
 */
void cli_netifs_print(FILE *f, const struct topo_netif_list *l, bool tcp_by_default);

#endif
