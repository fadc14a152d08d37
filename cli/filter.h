/*
 * filter.h - private to cli/: a copy's --dry-run and its filter options
 * (--exclude, --include, --exclude-from, --files-from, --from0), read into
 * an io_filter (io/io.h) for the engine, and the dry run's list printed.
 *
 * Threading: the copy's thread.
 */
#ifndef RAILCP_CLI_FILTER_H
#define RAILCP_CLI_FILTER_H

#include <getopt.h>
#include <stdbool.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

enum {
	CLI_OPT_EXCLUDE = 0x300,
	CLI_OPT_INCLUDE,
	CLI_OPT_EXCLUDE_FROM,
	CLI_OPT_FILES_FROM,
	CLI_OPT_FROM0,
	CLI_OPT_DELETE,
};

/* The entries of a copy's struct option table. */
#define CLI_FILTER_OPTIONS                                                                         \
	{"dry-run", no_argument, NULL, 'n'},                                                       \
		{"exclude", required_argument, NULL, CLI_OPT_EXCLUDE},                             \
		{"include", required_argument, NULL, CLI_OPT_INCLUDE},                             \
		{"exclude-from", required_argument, NULL, CLI_OPT_EXCLUDE_FROM},                   \
		{"files-from", required_argument, NULL, CLI_OPT_FILES_FROM},                       \
		{"delete", no_argument, NULL, CLI_OPT_DELETE},                                     \
	{                                                                                          \
		"from0", no_argument, NULL, CLI_OPT_FROM0                                          \
	}

/* Their lines in the copy's usage. */
#define CLI_FILTER_USAGE                                                                           \
	"  -n, --dry-run      list what would travel (with -u: what differs, and\n"                \
	"                     why; with -c: each file's chunks that differ, compared\n"            \
	"                     at both ends; with --partial: each file's chunks a\n"                \
	"                     resume would send), write nothing on either side, exit 0\n"          \
	"  --exclude PATTERN  leave out what PATTERN matches beneath a source directory\n"         \
	"                     (a glob on the name; DIR/ directories only, /X anchored\n"           \
	"                     at the source, a/b the path's end; first match wins)\n"              \
	"  --include PATTERN  keep what PATTERN matches, against a later --exclude\n"              \
	"  --exclude-from FILE  --exclude each line of FILE ('+ ' an --include; '#' a\n"           \
	"                     comment; - stdin)\n"                                                 \
	"  --files-from FILE  send only the paths FILE lists, relative to the one\n"               \
	"                     source directory (with -r: listed directories whole)\n"              \
	"  --from0            the lines of those files end with NUL bytes, not newlines\n"         \
	"  --delete           with -r, once the copy succeeded: remove what the copied\n"          \
	"                     directories hold at the destination and the sources do\n"            \
	"                     not (entries --exclude leaves out stay); with -n: list\n"            \
	"                     them; -v names each\n"

struct cli_filter_op;

struct cli_filter {
	struct cli_filter_op *op; /* rules in command-line order */
	size_t n_op;
	const char *files_from;
	bool from0, dry_run, delete_extra;
	struct io_filter *f;
	/* for the dry run's list */
	const char *host;
	bool json, update, push;
	bool checksum; /* -c: the chunks compared; else (--partial) those a resume keeps */
	/* --delete: what was (or would be) removed, named for --json (-v or dry run) */
	json_t *deleting;
	uint64_t n_deleting;
};

/* 0 when c was a filter option (taken), CLI_EXIT_USAGE after one line, -1 when not ours. */
int cli_filter_opt(struct cli_filter *cf, int c, const char *arg);

/*
 * After the command line: the filter built (files read) into o->filter,
 * and o's dry run set. n_src: the copy's sources. 0 or CLI_EXIT_USAGE
 * after one line.
 */
int cli_filter_finish(struct cli_filter *cf, size_t n_src, struct eng_copy_opts *o);

/* --delete's lines: "deleted N entries" (and names for --json) into o or onto stdout. */
void cli_delete_json(const struct cli_filter *cf, json_t *o, uint64_t deleted);
void cli_delete_print(const struct cli_filter *cf, uint64_t deleted);

/* Accepts a zeroed cf. */
void cli_filter_fini(struct cli_filter *cf);

#endif
