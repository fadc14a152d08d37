/*
 * mpi_main.c - railcp-mpi: one push spread over the ranks of an MPI job
 * (mpirun -n N railcp-mpi [options] SRC... HOSTS:DST). Rank 0 walks the
 * sources once and balances the files over the ranks by bytes
 * (cli/mpi_share.c); MPI_Scatterv gives each rank its share, and each rank
 * pushes it in an ordinary keyed, sealed session to server rank mod the
 * number of servers, placed by its own binding. Rank 0 gathers the figures
 * and prints the one summary (cli/mpi_summary.c). A rank whose server is
 * gone moves to another (cli/mpi_failover.c); a rank that fails says so in
 * one line naming itself, its host and the cause, and ends the job with
 * MPI_Abort. A pull (HOSTS:SRC... DST) is cli/mpi_pull_job.c's. Built by
 * cli/SConscript with MPI's flags, with the other mpi_*.c that call MPI or
 * use the job (cli/mpi_job.h); everything else is in the cli library.
 */
#include "cli/cli.h"
#include "cli/mpi.h"
#include "cli/mpi_job.h"
#include "cli/report.h"

#include "common/common.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Atomic bool cli__mpi_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	atomic_store(&cli__mpi_interrupted, true);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mpirun -n N railcp-mpi [options] SRC... HOSTS:DST\n"
		   "       mpirun -n N railcp-mpi [options] HOSTS:SRC... DST\n\n"
		   "Pushes SRC... over the ranks of an MPI job to the railcp servers HOSTS\n"
		   "(h1,h2,... each HOST or HOST:PORT, or @FILE naming them), all serving one\n"
		   "shared root. Rank 0 walks the sources once and gives each rank a share of\n"
		   "the files balanced by bytes, a file larger than the room left in a share\n"
		   "cut into byte ranges at multiples of --chunk (not with -u, -c, --partial\n"
		   "or -n; rank 0 puts a cut file in place once every rank has succeeded, and\n"
		   "a failed job's ranges are removed); each rank pushes its share to server\n"
		   "(rank mod the number of servers), placed on the NUMA node(s) and rails of\n"
		   "its binding (a share of more than one session's list, 4 Mi entries or\n"
		   "chunks or 1 GiB decoded, as several sessions). DST must be a directory\n"
		   "there (the root when empty): each SRC lands beneath it under its own name.\n"
		   "A pull: rank 0 lists the sources on the first server (a dry run), shares\n"
		   "their files by bytes, and each rank pulls its share from its server as a\n"
		   "--files-from list. A rank whose server is gone moves to the next one and\n"
		   "goes on there with -c (what landed is not sent again, but a range is sent\n"
		   "whole); --no-failover ends the job instead. A job that may cut files keeps\n"
		   "a quarter of its bytes back as a pool of batches (at least two per rank):\n"
		   "a rank whose share is done takes the next one from rank 0, so a slow rank,\n"
		   "disk or server does not hold the job; --no-steal gives every rank its\n"
		   "whole share at the start instead. Rank 0 prints the summary.\n\n"
		   "Options: those of a railcp copy (railcp --help-copy) but -e, --rsh and\n"
		   "--railcp-path (the servers must be running). --delete needs -p: after\n"
		   "the ranks' copies, rank 0 deletes in one more session with -u (it sends\n"
		   "only what differs). --progress: rank 0 draws one progress line for the\n"
		   "whole job, a rate per host. -h, --help prints this.\n");
}

/*
 * One line naming this rank, its host and the cause; then the whole job
 * ends. A rank stopped by a signal (MPI_Abort's, or the user's through
 * mpirun) says nothing: the rank that failed first, or mpirun, said it.
 * Rank 0 so stopped still has the cut files' temporaries removed, within
 * the second mpirun leaves between its SIGTERM and its SIGKILL: the rank
 * that ended the job may have said nothing (a rank killed with SIGKILL,
 * or by the out-of-memory killer), and one such removal is enough.
 */
static _Noreturn void fail(const struct job *j, const char *what, int err, bool remove)
{
	if (atomic_load(&cli__mpi_interrupted)) {
		if (remove && j->rank == 0)
			cli__mpi_land_remove(j, err);
		MPI_Abort(MPI_COMM_WORLD, CLI_EXIT_FAIL);
		exit(CLI_EXIT_FAIL);
	}
	fprintf(stderr, "railcp-mpi: rank %d on %s failed %s: %s\n", j->rank, j->host, what,
		rcp_err_msg(err));
	fflush(stderr);
	if (remove)
		cli__mpi_land_remove(j, err); /* no cut file's temporary outlives the job */
	MPI_Abort(MPI_COMM_WORLD, CLI_EXIT_FAIL);
	exit(CLI_EXIT_FAIL);
}

_Noreturn void cli__mpi_fail(const struct job *j, const char *what, int err)
{
	fail(j, what, err, true);
}

_Noreturn void cli__mpi_fail_all_gone(const struct job *j, const char *what, int err)
{
	fail(j, what, err, false);
}

/* argv[i] as railcp-mpi:PATH, its servers the job's (the same in every such argument). */
static int remote_arg(struct job *j, char **argv, int i)
{
	struct cli_mpi_server *srv;
	const char *path;
	size_t n;
	int r = cli_mpi_servers(argv[i], &srv, &n, &path);

	if (r)
		return r;
	if (j->srv && (n != j->n_srv || memcmp(srv, j->srv, n * sizeof(*srv)))) {
		free(srv);
		return cli_usage_error(NULL,
				       "%s: every HOSTS:PATH of a job must name the same "
				       "servers",
				       argv[i]);
	}
	if (j->srv)
		free(srv);
	else
		j->srv = srv, j->n_srv = n;
	if (asprintf(&j->remote[i], "railcp-mpi:%s", path) < 0) {
		j->remote[i] = NULL;
		return cli_fail(-ENOMEM);
	}
	j->argv[i] = j->remote[i];
	return 0;
}

/* Refused: what would start a far side over ssh, which a job of servers has no use for. */
static int rsh_refused(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-e") || !strncmp(argv[i], "--rsh", 5) ||
		    !strncmp(argv[i], "--railcp-path", 13))
			return cli_usage_error(NULL,
					       "%s: railcp-mpi copies to running servers "
					       "only, never over ssh",
					       argv[i]);
	return 0;
}

/* The command line: the servers and DST, then a copy's options as railcp parses them. */
static int job_args(struct job *j, int argc, char **argv)
{
	int i, k, r, dashes = 0;

	if ((r = rsh_refused(argc, argv)))
		return r;
	j->argc = argc;
	j->argv = calloc((size_t)argc + 1, sizeof(*j->argv));
	j->remote = calloc((size_t)argc + 1, sizeof(*j->remote));
	if (!j->argv || !j->remote)
		return cli_fail(-ENOMEM);
	for (i = 0; i < argc; i++) {
		j->argv[i] = argv[i];
		dashes |= !strcmp(argv[i], "--");
		if (i && !dashes && !strcmp(argv[i], "--progress")) {
			j->progress = true; /* railcp-mpi's own: not a copy's option */
			j->argv[i] = NULL;
			continue;
		}
		if (i && !dashes && !strcmp(argv[i], "--no-steal")) {
			j->no_steal = true; /* railcp-mpi's own too */
			j->argv[i] = NULL;
			continue;
		}
		if (i && (dashes || argv[i][0] != '-') && strchr(argv[i], ':') &&
		    (r = remote_arg(j, argv, i)))
			return r;
	}
	if (!j->srv)
		return cli_usage_error(NULL, "a copy needs servers: SRC... HOSTS:DST or "
					     "HOSTS:SRC... DST");
	for (i = 0, k = 0; i < argc; i++)
		if (j->argv[i])
			j->argv[k++] = j->argv[i];
	j->argv[k] = NULL;
	r = cli_copy_parse(k, j->argv, &j->cc);
	if (r)
		return r < 0 ? -1 : r;
	j->o = *cli_copy_opts(j->cc);
	j->dst = j->o.dst;
	/*
	 * A push's DST, wherever options put it, gets a trailing '/': it is
	 * always a directory, made if missing. Each rank's share names its own
	 * files, so a share of one file would otherwise be renamed to DST by
	 * every rank's session, the last one winning.
	 */
	if (j->o.dir == ENG_PUSH && *j->dst && j->dst[strlen(j->dst) - 1] != '/') {
		if (asprintf(&j->dst_own, "%s/", j->dst) < 0) {
			j->dst_own = NULL;
			return cli_fail(-ENOMEM);
		}
		j->dst = j->dst_own;
	}
	/* --delete runs once after the ranks (cli__mpi_delete): -u there matches only with -p. */
	if (j->o.delete_extra && !j->o.preserve && !j->o.dry_run)
		return cli_usage_error(NULL,
				       "--delete needs -p with railcp-mpi: rank 0 deletes after "
				       "the ranks' copies in one more session with -u, which "
				       "would send every file again unless -p kept their times");
	if (j->o.checksum && j->o.dry_run) /* its list is rank 0's dry run of a pull, no chunks */
		return cli_usage_error(NULL, "-c with -n: railcp-mpi does not compare chunks in a "
					     "dry run; run railcp -n -c from one host");
	if (j->o.delete_extra && j->o.dry_run && j->o.dir == ENG_PUSH)
		return cli_usage_error(NULL, "--delete with -n: railcp-mpi lists a push's "
					     "deletions only by doing them; run railcp -n -r "
					     "--delete from one host");
	return 0;
}

/* Rank 0 parses first and says what is wrong once; the others follow its verdict. */
static int job_parse(struct job *j, int argc, char **argv)
{
	int r = 0, i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			if (j->rank == 0)
				usage(stdout);
			return -1;
		}
	if (j->rank == 0)
		r = job_args(j, argc, argv);
	MPI_Bcast(&r, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (r || j->rank == 0)
		return r;
	r = job_args(j, argc, argv);
	if (r)
		cli__mpi_fail(j, "to read its command line", -EINVAL);
	return 0;
}

int cli__mpi_append(char **all, size_t *total, const void *buf, size_t len, int *displ, int *count)
{
	char *grown;

	if (*total + len > INT_MAX)
		return rcp_err(-EFBIG, "the file list is more than 2 GiB: too many files for one "
				       "scatter");
	if (!(grown = realloc(*all, *total + len + 1)))
		return -ENOMEM;
	*all = grown;
	memcpy(grown + *total, buf, len);
	*displ = (int)*total;
	*count = (int)len;
	*total += len;
	return 0;
}

/*
 * Rank 0: each rank's share, whole files (cli_mpi_assign), or files and
 * byte ranges of files when the job cuts them (cli_mpi_pool_ranges, whose
 * pieces of owner size + b are the pool's batch b; cli_mpi_assign_ranges
 * under --no-steal), the list of cut files then in j->split; share(r)
 * gives rank r's.
 */
struct shares {
	const struct io_manifest *m;
	unsigned *owner;	  /* whole files */
	struct cli_mpi_piece *pc; /* files and ranges */
	size_t n_pc;
	struct cli_mpi_dirs dirs; /* the directories each carries */
};

static int shares_make(struct job *j, const struct io_manifest *m, struct shares *sh)
{
	/* the ranks' bytes, and the pool's batches' after them */
	unsigned n = (unsigned)j->size, batches = j->no_steal ? 0 : cli_mpi_pool_batches(n);
	uint64_t *load = calloc((size_t)n + batches, sizeof(*load));
	int err = load ? 0 : -ENOMEM;

	sh->m = m;
	if (!err)
		err = cli_mpi_dirs_init(&sh->dirs, m, n);
	if (!err && cli__mpi_splits(j)) {
		err = j->no_steal
			      ? cli_mpi_assign_ranges(m, n, j->o.chunk, &sh->pc, &sh->n_pc, load)
			      : cli_mpi_pool_ranges(m, n, j->o.chunk, &sh->pc, &sh->n_pc, load);
		if (!err)
			err = cli_mpi_split_list(m, sh->pc, sh->n_pc, &j->split);
	} else if (!err) {
		sh->owner = calloc(m->n ? m->n : 1, sizeof(*sh->owner));
		err = sh->owner ? cli_mpi_assign(m, n, sh->owner, load) : -ENOMEM;
	}
	free(load);
	return err;
}

/* Rank 0: the pool's batches packed, one after another, into j's (see struct job). */
static int batches_pack(struct job *j, const struct io_manifest *m, const struct shares *sh,
			const struct cli_mpi_caps *caps)
{
	struct cli_mpi_batches b;
	int err = cli_mpi_batches_pack(m, sh->pc, sh->n_pc, (unsigned)j->size, &sh->dirs, caps,
				       j->o.chunk, &b);

	if (!err) {
		j->batch_all = b.all;
		j->batch_off = b.off;
		j->batch_len = b.len;
		j->n_batches = b.n;
	}
	return err;
}

/* Rank 0: every rank's share packed, one after another, with counts and offsets. */
static int shares_pack(struct job *j, const struct io_manifest *m, char **all, int *count,
		       int *displ)
{
	const struct cli_mpi_caps caps = cli_mpi_session_caps();
	struct shares sh = {0};
	size_t total = 0;
	int r, err = shares_make(j, m, &sh);

	if (!err && sh.pc && !j->no_steal)
		err = batches_pack(j, m, &sh, &caps);
	for (r = 0; r < j->size && !err; r++) {
		struct io_manifest *share = NULL;
		void *buf = NULL;
		size_t len = 0;

		err = sh.pc ? cli_mpi_share_pieces(m, sh.pc, sh.n_pc, (unsigned)r, &sh.dirs, &share)
			    : cli_mpi_share(m, sh.owner, (unsigned)r, &sh.dirs, &share);
		if (!err) /* as several sessions, past one session's list */
			err = cli_mpi_pack_parts(share, &caps, j->o.chunk, &buf, &len);
		io_manifest_destroy(share);
		if (!err)
			err = cli__mpi_append(all, &total, buf, len, &displ[r], &count[r]);
		free(buf);
	}
	free(sh.owner);
	free(sh.pc);
	cli_mpi_dirs_fini(&sh.dirs);
	return err;
}

/* Rank 0's bytes (all, count and displ per rank) scattered: this rank's, *mine long. */
char *cli__mpi_scatter(const struct job *j, const char *all, const int *count, const int *displ,
		       int *mine)
{
	char *buf;

	MPI_Scatter(count, 1, MPI_INT, mine, 1, MPI_INT, 0, MPI_COMM_WORLD);
	buf = malloc(*mine ? (size_t)*mine : 1);
	if (!buf)
		cli__mpi_fail(j, "to receive its share", -ENOMEM);
	MPI_Scatterv(all, count, displ, MPI_BYTE, buf, *mine, MPI_BYTE, 0, MPI_COMM_WORLD);
	return buf;
}

/* Rank 0 walks the sources once, through the copy's filter; each rank gets its share. */
static void job_scatter(struct job *j)
{
	int *count = j->rank ? NULL : calloc((size_t)j->size, sizeof(int)),
	    *displ = j->rank ? NULL : calloc((size_t)j->size, sizeof(int)), mine = 0;
	char *all = NULL;
	int err = 0;

	double t[3] = {MPI_Wtime(), 0, 0}; /* the walk's start, its end, the shares packed */

	if (j->rank == 0) {
		const struct cli_mpi_caps server = cli_mpi_server_caps();
		struct io_manifest *m = NULL;

		err = count && displ ? 0 : -ENOMEM;
		if (!err)
			err = io_manifest_walk_filtered(NULL, j->o.src, j->o.n_src,
							(j->o.recursive ? IO_WALK_RECURSIVE : 0) |
								IO_WALK_LARGE,
							NULL, j->o.filter, &m);
		t[1] = MPI_Wtime();
		if (!err)
			err = cli_mpi_scatter_fits(m, cli__mpi_splits(j) && !j->no_steal);
		if (!err)
			err = shares_pack(j, m, &all, count, displ);
		t[2] = MPI_Wtime();
		if (!err)
			rcp_log(RCP_LOG_INFO,
				"rank 0 walked %zu entries in %.2f s and shared and packed them in "
				"%.2f s",
				m->n, t[1] - t[0], t[2] - t[1]);
		if (!err)
			j->total = m->data_bytes;
		if (!err && cli__mpi_dirs_last(j))
			err = cli__mpi_land_dirs_pick(j, m);
		if (!err && j->delete_extra)
			err = cli_mpi_delete_fits((const struct io_manifest *const *)&m, 1, &server,
						  j->o.chunk);
		if (j->delete_extra)
			j->full = m, m = NULL; /* for cli__mpi_delete */
		io_manifest_destroy(m);
		if (err)
			cli__mpi_fail(j, "to walk and share the sources", err);
	}
	/* kept packed: its sessions' lists are decoded one at a time (job_push) */
	j->share = cli__mpi_scatter(j, all, count, displ, &mine);
	j->share_len = (size_t)mine;
	if (j->rank == 0)
		rcp_log(RCP_LOG_INFO, "rank 0 scattered the shares in %.2f s", MPI_Wtime() - t[2]);
	if (cli__mpi_splits(j) || cli__mpi_dirs_last(j))
		cli__mpi_land_share(j);
	free(all);
	free(count);
	free(displ);
}

/* One session of list m (the share, or a batch) to this rank's server, moving on if it is gone. */
static void push_list(struct job *j, struct result *res, const struct io_manifest *m,
		      struct eng_report *rep)
{
	j->o.manifest = m;
	j->o.dst = j->dst;
	cli__mpi_session(j, res, "pushing to", rep);
	cli__mpi_progress_session(j, rep);
	cli__mpi_series_session(j, rep);
	res->files += rep->files_total - rep->files_skipped - cli_mpi_ranges_later(m);
	res->files_skipped += rep->files_skipped;
	res->bytes += rep->bytes; /* after the failed attempts' bytes, if it moved */
	res->share_bytes += m->data_bytes;
}

/*
 * This rank's sessions: its share to its server, or to the next one while
 * servers are gone, as one session per part of it (one unless it holds
 * more than one session's list, cli/mpi_parts.c), one after another; then
 * the pool's batches it can take, each as one more session to the server
 * it has come to.
 */
static void job_push(struct job *j, struct result *res)
{
	const char *at = j->share, *end = j->share + j->share_len;
	struct io_manifest *part, *batch;
	struct eng_report rep = {0};
	double t0 = MPI_Wtime();
	unsigned parts = 0;
	int err;

	cli__mpi_server_use(j, (size_t)j->rank % j->n_srv);
	while (!(err = cli_mpi_unpack_next(&at, end, &part)) && part) {
		/*
		 * An empty share (a rank with nothing, a part of nothing) runs no
		 * session; the rank still takes the job's collectives and the
		 * pool's batches, and its result says so.
		 */
		if (part->n) {
			push_list(j, res, part, &rep);
			res->static_bytes += part->data_bytes;
			parts++;
		}
		io_manifest_destroy(part);
	}
	if (err)
		cli__mpi_fail(j, "to read its share", err);
	res->seconds = rep.wall_seconds;
	while (cli__mpi_steal_next(j, &batch)) {
		push_list(j, res, batch, &rep);
		res->batches++;
		io_manifest_destroy(batch);
	}
	if (j->moves || res->batches || parts > 1) /* its sessions', from the first's start */
		res->seconds = MPI_Wtime() - t0;
	res->server = (uint32_t)j->cur;
	memcpy(res->host, j->host, sizeof(res->host));
}

void cli__mpi_delete(struct job *j, struct result *del)
{
	struct eng_report rep;

	/* rank 0's server now, moving on if it is gone */
	j->o = *cli_copy_opts(j->cc);
	cli__mpi_server_use(j, j->cur);
	j->o.dst = j->dst;
	j->o.manifest = j->full; /* a pull's (NULL): its sources, whole */
	j->o.update = true;
	j->o.checksum = j->o.partial = false;
	cli__mpi_session(j, del, "deleting (--delete) with", &rep);
	del->bytes += rep.bytes;
	del->server = (uint32_t)j->cur;
	j->deleted = rep.deleted;
	j->resent_files = rep.files_total - rep.files_skipped;
	j->resent_bytes = del->bytes;
}

/*
 * Whether a rank failed err (its own, 0 if none) in a step every rank takes
 * (the sources, the key, the placement): the lowest such rank says why in
 * one line, and every rank ends without an abort.
 */
static bool job_agree(const struct job *j, int err)
{
	int mine = err ? j->rank : j->size, first;

	MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (first == j->size)
		return false;
	if (first == j->rank)
		fprintf(stderr, "railcp-mpi: rank %d on %s failed before its session: %s\n",
			j->rank, j->host, rcp_err_msg(err));
	return true;
}

static int job_run(struct job *j)
{
	struct result mine = {0}, del = {0}, landed = {0}, *all = NULL;
	struct cli_mpi_pull pull = {0};
	double t0, secs;
	int err;

	err = cli_copy_place(j->cc, &j->plan);
	if (job_agree(j, err))
		return CLI_EXIT_FAIL;
	j->o = *cli_copy_opts(j->cc);
	if (j->o.dir == ENG_PULL && j->o.dry_run)
		return cli__mpi_pull_dry(j); /* rank 0 alone, --delete's listing included */
	j->delete_extra = j->o.delete_extra;
	j->progress = j->progress && !cli_copy_json(j->cc) && rcp_log_level() != RCP_LOG_SILENT;
	j->o.delete_extra = false; /* a share's session would remove the others' files */
	if (j->o.dir == ENG_PUSH) {
		job_scatter(j);
		cli__mpi_progress_begin(j, j->total);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		cli__mpi_series_begin(j);
		cli__mpi_steal_begin(j);
		job_push(j, &mine);
		cli__mpi_steal_end(j);
	} else
		cli__mpi_pull(j, &pull, &mine, &t0);
	cli__mpi_progress_end(j);
	cli__mpi_series_end(j);
	if (j->rank == 0 && !(all = calloc((size_t)j->size, sizeof(*all))))
		cli__mpi_fail(j, "to gather the figures", -ENOMEM);
	MPI_Gather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE, 0, MPI_COMM_WORLD);
	secs = MPI_Wtime() - t0;
	if (j->rank == 0 && j->o.dir == ENG_PULL)
		cli__mpi_pull_finish(j, &pull, all);
	if (j->rank == 0 && j->o.dir == ENG_PUSH) /* every range landed: the cut files */
		cli__mpi_land_place(j, &landed);
	if (j->rank == 0 && j->delete_extra)
		cli__mpi_delete(j, &del);
	if (j->rank == 0 && j->o.dir == ENG_PUSH) /* -p: every directory the job made, last */
		cli__mpi_land_dirs(j, &landed);
	if (j->rank == 0)
		cli__mpi_summary(j, all, &del, secs);
	free(all);
	cli_mpi_pull_free(&pull);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_interrupt, .sa_flags = SA_RESETHAND};
	struct job j = {0};
	int r, i, threads;

	/* Only the main thread calls MPI; the sessions' threads never do. */
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &threads);
	MPI_Comm_rank(MPI_COMM_WORLD, &j.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &j.size);
	cli_set_prog("railcp-mpi");
	if (threads < MPI_THREAD_FUNNELED && j.rank == 0)
		rcp_log(RCP_LOG_NOTICE,
			"this MPI gives no MPI_THREAD_FUNNELED (level %d): the sessions run "
			"threads of their own, though only the main one calls MPI",
			threads);
	if (gethostname(j.host, sizeof(j.host) - 1))
		snprintf(j.host, sizeof(j.host), "?");
	r = job_parse(&j, argc, argv);
	if (!r) {
		signal(SIGPIPE, SIG_IGN);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		cli_raise_nofile();
		r = job_run(&j);
	}
	free(j.share);
	io_manifest_destroy(j.full);
	io_manifest_destroy(j.split);
	io_manifest_destroy(j.dirs);
	free(j.dst_own);
	json_decref(j.series);
	topo_plan_destroy(j.plan);
	cli_copy_destroy(j.cc);
	free(j.srv);
	free(j.argv);
	for (i = 0; j.remote && i < j.argc; i++)
		free(j.remote[i]);
	free(j.remote);
	free(j.load);
	free(j.batch_all);
	free(j.batch_off);
	free(j.batch_len);
	MPI_Finalize();
	return r < 0 ? CLI_EXIT_OK : r;
}
