/*
 * copy.h - private to cli/: a copy's command line as cmd_copy.c parses it
 * and runs it, and copy_ssh.c takes it to its far side.
 *
 * Threading: the copy's thread.
 */
#ifndef RAILCP_CLI_COPY_H
#define RAILCP_CLI_COPY_H

#include <stdbool.h>

#include "cli/cli.h"
#include "cli/filter.h"
#include "cli/place.h"
#include "cli/report.h"
#include "cli/session.h"
#include "cli/wire.h"

struct cli_copy {
	struct eng_copy_opts o;
	struct cli_place place;
	struct topo_plan *plan_tcp; /* auto chose rdma: for a server that serves tcp alone */
	struct cli_session sess;
	char host[256];
	const char **src;
	bool json;
	const char *rsh;	 /* -e: always over ssh with this command */
	const char *railcp_path; /* the far side's railcp, over ssh */
	bool over_ssh;		 /* this copy went over ssh */
	char ssh_home[4200];	 /* there, what relative paths are beneath (escaped) */
	unsigned pairs_given; /* --fsync, --no-fsync, --direct, --no-direct: a pair contradicts */
	struct cli_progress line;
	struct cli_series series;    /* --json: each rail's bytes over time */
	const struct cli_wire *wire; /* each rail's counters over the copy, or NULL */
	struct cli_filter filter;    /* --dry-run, --exclude, --files-from, ... */
};

/*
 * The copy, into *rep: with -e over ssh; else to the server on --port, and
 * over ssh when none answers there (nothing listens: refused at once) or,
 * without a key, when what answers is not a server of this user on this
 * host (the engine refuses it with -ENOKEY before sending anything).
 * 0, or -errno with a sentence (copy_ssh.c).
 */
int cli__copy_run(struct cli_copy *cc, struct eng_report *rep);

#endif
