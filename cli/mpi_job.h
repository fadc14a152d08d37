/*
 * mpi_job.h - private to railcp-mpi (cli/mpi_main.c, cli/mpi_pull_job.c,
 * cli/mpi_progress.c and cli/mpi_series.c, built with MPI's flags): the job every rank holds, what
 * each rank tells rank 0, and the steps the two files share.
 */
#ifndef RAILCP_CLI_MPI_JOB_H
#define RAILCP_CLI_MPI_JOB_H

#include "cli/cli.h"
#include "cli/mpi.h"

#include <stdatomic.h>

struct job {
	int rank, size;
	char host[64]; /* this rank's host */
	struct cli_copy *cc;
	struct eng_copy_opts o;
	struct cli_mpi_server *srv;
	size_t n_srv;
	const char *dst; /* a push's always ends in '/' (dst_own, when one was added) */
	char *dst_own;
	struct topo_plan *plan;
	char *share; /* a push: this rank's share, cli_mpi_pack_parts's bytes */
	size_t share_len;
	char **argv;   /* a copy, its HOSTS:PATH arguments rewritten for cli_copy_parse */
	char **remote; /* argc long: the rewritten ones */
	int argc;
	uint64_t *load; /* rank 0, a pull: each rank's bytes */
	/*
	 * --delete: the ranks' sessions delete nothing (each knows only its
	 * share); rank 0 deletes after them all (cli__mpi_delete).
	 */
	bool delete_extra;
	struct io_manifest *full;	     /* rank 0, a push with --delete: the whole list */
	uint64_t deleted;		     /* rank 0: entries --delete removed */
	uint64_t resent_files, resent_bytes; /* rank 0: what the delete pass sent again */
	bool progress;			     /* --progress: rank 0 draws the job's line */
	bool no_steal;			     /* --no-steal: no pool, each share whole */
	struct cli_mpi_progress *pg;
	struct cli_mpi_series *ms; /* --json: this rank's series */
	json_t *series;		   /* rank 0, --json: the job's, merged */
	uint64_t total;		   /* rank 0: the job's bytes, every share */
	/*
	 * Files cut into byte ranges (cli/mpi_land_job.c): the job's id (0:
	 * none), the list of its cut files (every rank's, NULL when none) and,
	 * rank 0, how many of them its last session put in place.
	 */
	uint64_t range_job;
	struct io_manifest *split;
	uint64_t placed;
	/* -p: the job's directories (every rank's), set once by its last session; NULL: none */
	struct io_manifest *dirs;
	/*
	 * The pool (cli/mpi_steal.c): rank 0's packed batches, one after
	 * another (batch_off and batch_len each n_batches long), and the
	 * claims' state while sessions run.
	 */
	char *batch_all;
	int *batch_off, *batch_len;
	size_t n_batches;
	struct cli_mpi_steal *st;
	size_t cur;	/* the server this rank's sessions go to now */
	unsigned moves; /* how often its server was gone (cli__mpi_session) */
};

/* A rank's move to another server, its old one gone (cli/mpi_failover.c). */
struct cli_mpi_move {
	uint32_t from, to;     /* the servers' indexes */
	uint64_t bytes_before; /* the rank's bytes (result.bytes) before the move */
	char cause[200];       /* why the old one counts as gone */
};
#define CLI_MPI_MOVES_KEPT 4

/* What each rank tells rank 0 at the end (MPI_BYTE). */
struct result {
	uint64_t files, files_skipped, bytes;
	uint64_t share_bytes;  /* its share's and the batches' it took */
	uint64_t static_bytes; /* its share's alone */
	uint32_t batches;      /* taken from the pool */
	double seconds;
	char host[64];
	uint32_t server;  /* where its last session went */
	uint32_t n_moves; /* its moves, the first CLI_MPI_MOVES_KEPT of them in move */
	struct cli_mpi_move move[CLI_MPI_MOVES_KEPT];
};

/*
 * Rank 0, after the gather: the job's one summary (cli/mpi_summary.c); del
 * is the --delete pass's (its moves). moves_say: a result's moves, a line
 * each (a pull's dry run says its own with it).
 */
void cli__mpi_summary(const struct job *j, const struct result *r, const struct result *del,
		      double secs);
void cli__mpi_moves_say(const struct job *j, const struct result *r);

/* Set by SIGINT and SIGTERM: each rank's sessions stop, and the job ends. */
extern _Atomic bool cli__mpi_interrupted;

/*
 * One line naming this rank, its host, what it was doing and the cause;
 * a live server removes the job's temporaries of its cut files
 * (cli__mpi_land_remove); then the whole job ends (MPI_Abort).
 */
_Noreturn void cli__mpi_fail(const struct job *j, const char *what, int err);

/*
 * The same when every server is gone: none is asked to remove anything
 * (each would cost its wait, minutes over many hosts, for nothing).
 */
_Noreturn void cli__mpi_fail_all_gone(const struct job *j, const char *what, int err);

/*
 * Sessions that move (cli/mpi_failover.c). server_use points j->o at
 * server i (its port, else the copy's --port) and makes it j->cur;
 * server_port is server i's port as a session uses it. session runs
 * eng_copy_run with j->o into *rep; when its server is gone (not under
 * --no-failover) it says so in one line, records the move in res, and
 * runs again on the next server (cli_mpi_next_server) with -c, which
 * sends only what the gone server did not put in place. Any other failure,
 * or every server gone, ends the job with one line naming rank, host, the
 * server and the cause (verb: "pushing to", "pulling from").
 */
void cli__mpi_server_use(struct job *j, size_t i);
unsigned cli__mpi_server_port(const struct job *j, size_t i);
void cli__mpi_session(struct job *j, struct result *res, const char *verb, struct eng_report *rep);
/* The same around run(j, ctx), which reaches the server j->o names (0 or a negative errno). */
void cli__mpi_attempts(struct job *j, struct result *res, const char *verb,
		       int (*run)(struct job *j, void *ctx), void *ctx);

/*
 * Rank 0, --delete, once every rank's copy is in place: one more session of
 * the whole job to server 0 (a push: j->full; a pull: every source), with
 * -u, so that it sends only what differs in size or time (nothing the job
 * put in place with -p) and removes what the sources do not hold, as one
 * railcp -r -u -p --delete would. Sets j->deleted and j->resent_*, its
 * moves and bytes (a failed attempt's too) in *del; a failure ends the job.
 */
void cli__mpi_delete(struct job *j, struct result *del);

/*
 * --progress (cli/mpi_progress.c), when j->progress: begin, by every rank
 * at once (it gathers the hosts), before the sessions, total the job's
 * bytes (rank 0's); it sets j->o.progress. session after each of this
 * rank's sessions, with its report; end after the last, before the
 * gather: rank 0 draws until every rank is done, then clears the line.
 */
void cli__mpi_progress_begin(struct job *j, uint64_t total);
void cli__mpi_progress_session(struct job *j, const struct eng_report *rep);
void cli__mpi_progress_end(struct job *j);

/* --progress: rank 0 draws the line once more, its own sessions done (a tick of its wait). */
void cli__mpi_progress_tick(struct job *j);

/*
 * The pool of batches (cli/mpi_steal.c), in a job that may cut files: begin,
 * by every rank after the progress's and series's begin, installs the
 * callback through which rank 0 serves claims while its sessions run
 * (chained to theirs); next, once this rank's share is done, asks rank 0
 * for a batch: true with it in *batch_out (to run as one more session), or
 * false when none is left; end, after the last batch, restores the
 * callback, rank 0 first serving every rank's claims until each has been
 * told none is left (drawing the progress line meanwhile).
 */
void cli__mpi_steal_begin(struct job *j);
bool cli__mpi_steal_next(struct job *j, struct io_manifest **batch_out);
void cli__mpi_steal_end(struct job *j);

/*
 * --json's series (cli/mpi_series.c): begin right after the barrier that
 * starts the job (it sets j->o.progress), session after each of this
 * rank's sessions, end after the last, by every rank at once: rank 0 then
 * holds the job's series, every rank's rails on one time base, in
 * j->series.
 */
void cli__mpi_series_begin(struct job *j);
void cli__mpi_series_session(struct job *j, const struct eng_report *rep);
void cli__mpi_series_end(struct job *j);
/* A session that failed and moves on: the bytes its last sample had stay, so the series never
 * falls. */
void cli__mpi_series_moved(struct job *j);

/*
 * Files cut into byte ranges (cli/mpi_land_job.c). splits: whether this
 * job cuts files (a push of several ranks without -u, -c, --partial or -n).
 * land_share, by every rank at once after the scatter: rank 0's job id and
 * list of cut files (j->split, from the shares) to every rank, into j->o.
 * land_place, rank 0 after the gather: the cut files put in place in one
 * session (moving on as a push does); res gets its moves, a failure ends
 * the job. land_remove, a rank that fails with err, before the job ends:
 * the job's temporaries removed in one session to the first server that
 * answers within 5 s (its own first, or last when err may mean it is
 * gone), or a line saying they could not be (none when every server is
 * gone: the job's line says so); with j->dirs, the job's markers in its
 * directories likewise (--partial's stay, for a re-run).
 * dirs_last: whether the job's directories are set once, at its end (a
 * push with -p, not -n). land_dirs_pick, rank 0 before land_share: the
 * directories of its walk m into j->dirs (none past one session's list:
 * then each session sets those it made, as before). land_dirs, rank 0
 * after land_place (and --delete's pass): one session has a server give
 * the directories the job made their mode and time, deepest first.
 */
bool cli__mpi_splits(const struct job *j);
void cli__mpi_land_share(struct job *j);
void cli__mpi_land_place(struct job *j, struct result *res);
void cli__mpi_land_remove(const struct job *j, int err);
bool cli__mpi_dirs_last(const struct job *j);
int cli__mpi_land_dirs_pick(struct job *j, const struct io_manifest *m);
void cli__mpi_land_dirs(struct job *j, struct result *res);

/* Rank r's packed share buf (len bytes) appended to rank 0's bytes all
 * (*total long): displ and count are rank r's entries. -EFBIG past what
 * one MPI scatter counts (INT_MAX), -ENOMEM; all is kept on failure. */
int cli__mpi_append(char **all, size_t *total, const void *buf, size_t len, int *displ, int *count);

/* Rank 0's bytes (all, with count and displ per rank) scattered: this rank's, *mine long. */
char *cli__mpi_scatter(const struct job *j, const char *all, const int *count, const int *displ,
		       int *mine);

/*
 * A pull (cli/mpi_pull_job.c): rank 0 lists and shares the sources into p,
 * every rank pulls its share (*t0_out: when the ranks started, after the
 * listing); rank 0 then sets what -p asks of the directories and each
 * rank's share in all. -n: rank 0 lists the pull, the others do nothing.
 */
void cli__mpi_pull(struct job *j, struct cli_mpi_pull *p, struct result *res, double *t0_out);
void cli__mpi_pull_finish(struct job *j, const struct cli_mpi_pull *p, struct result *all);
int cli__mpi_pull_dry(struct job *j);

#endif
