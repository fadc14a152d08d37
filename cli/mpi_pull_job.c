/*
 * mpi_pull_job.c - railcp-mpi's pulls, the collective steps (the rest is
 * cli/mpi_pull.c): rank 0 lists the sources on the first server and
 * shares the items, MPI_Scatterv hands each rank its list, and each rank
 * pulls its share from its server, one session per source with the list as
 * an in-memory --files-from. See doc/design.md, railcp-mpi.
 */
#include "cli/mpi_job.h"

#include "common/common.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Server (rank mod S) into this rank's options: its port, else the copy's --port; stoppable. */
static void job_server(struct job *j, int rank)
{
	cli__mpi_server_use(j, (size_t)rank % j->n_srv);
}

/* Rank 0: every rank's items of p packed, balanced by bytes (j->load). */
static int pull_pack(struct job *j, const struct cli_mpi_pull *p, char **all, int *count,
		     int *displ)
{
	uint64_t *bytes = calloc(p->n ? p->n : 1, sizeof(*bytes));
	unsigned *owner = calloc(p->n ? p->n : 1, sizeof(*owner));
	size_t i, total = 0;
	int r, err = bytes && owner && j->load ? 0 : -ENOMEM;

	for (i = 0; i < p->n && !err; i++)
		bytes[i] = p->item[i].bytes;
	if (!err)
		err = cli_mpi_balance(bytes, p->n, (unsigned)j->size, owner, j->load);
	if (!err)
		err = cli_mpi_pull_fits(p, owner, (unsigned)j->size);
	for (r = 0; r < j->size && !err; r++) {
		void *buf = NULL;
		size_t len = 0;

		err = cli_mpi_pull_pack(p, owner, (unsigned)r, &buf, &len);
		if (!err)
			err = cli__mpi_append(all, &total, buf, len, &displ[r], &count[r]);
		free(buf);
	}
	free(bytes);
	free(owner);
	return err;
}

/* One try of rank 0's listing (a move retries it whole on the next server). */
static int list_run(struct job *j, void *p)
{
	struct eng_copy_opts o = j->o;

	o.checksum = cli_copy_opts(j->cc)->checksum; /* a move's -c: nothing to compare here */
	cli_mpi_pull_free(p);
	return cli_mpi_pull_list(&o, p);
}

/*
 * Rank 0 lists the sources on its server (a dry run each) and settles where
 * they land, by rsync's rule as one railcp names them (io_dest_decide): a
 * DST that is a directory receives each source under its name (a source
 * ending in '/' or '.': its contents); a missing DST is made here first,
 * with the umask's mode, so that every rank's session finds it and none
 * races another to name it; one file alone to a DST that is not a
 * directory (nor ends in '/') is one item, named DST by the one session
 * that pulls it. Several sources or a directory onto a file: -ENOTDIR.
 */
static int pull_list(struct job *j, struct cli_mpi_pull *p, struct result *res)
{
	const char *dst = j->o.dst;
	size_t len = strlen(dst);
	struct stat st;
	bool exists = stat(dst, &st) == 0, into = exists && S_ISDIR(st.st_mode);
	const struct io_manifest *m;

	cli__mpi_attempts(j, res, "listing the sources on", list_run, p);
	m = p->src[0].m;
	if (into || (p->n_src == 1 && p->src[0].has_top && m->n == 1 &&
		     m->entry[0].type != IO_DIR && len && dst[len - 1] != '/'))
		return 0; /* into DST, or the one file named DST */
	if (exists)
		return rcp_err(-ENOTDIR, "%s is not a directory, which it must be to receive %s",
			       dst,
			       p->n_src > 1 ? "several sources" : "a directory or its contents");
	if (mkdir(dst, 0777) && errno != EEXIST)
		return rcp_err(-errno, "cannot make %s: %s", dst, strerror(errno));
	return 0;
}

/* --delete: the pass after the ranks pulls every source in one session, which must hold them. */
static int pull_delete_fits(const struct job *j, const struct cli_mpi_pull *p)
{
	const struct io_manifest **m = calloc(p->n_src ? p->n_src : 1, sizeof(*m));
	const struct cli_mpi_caps server = cli_mpi_server_caps();
	size_t k;
	int err;

	if (!m)
		return -ENOMEM;
	for (k = 0; k < p->n_src; k++)
		m[k] = p->src[k].m;
	err = cli_mpi_delete_fits(m, p->n_src, &server, j->o.chunk);
	free(m);
	return err;
}

/* Every rank's tasks, from rank 0's list. */
static struct cli_mpi_task *pull_share(struct job *j, struct cli_mpi_pull *p, struct result *res)
{
	int *count = calloc((size_t)j->size, sizeof(int)),
	    *displ = calloc((size_t)j->size, sizeof(int));
	struct cli_mpi_task *t = calloc(j->o.n_src, sizeof(*t));
	char *all = NULL, *buf;
	int r, mine = 0, err = count && displ && t ? 0 : -ENOMEM;

	if (j->rank == 0 && !(j->load = calloc((size_t)j->size, sizeof(*j->load))))
		err = -ENOMEM;
	if (j->rank == 0 && !err)
		err = pull_list(j, p, res);
	if (j->rank == 0 && !err && j->delete_extra)
		err = pull_delete_fits(j, p);
	if (j->rank == 0 && !err)
		err = pull_pack(j, p, &all, count, displ);
	for (r = 0; j->rank == 0 && !err && r < j->size; r++)
		j->total += j->load[r];
	if (err)
		cli__mpi_fail(j, "to share the sources", err);
	buf = cli__mpi_scatter(j, all, count, displ, &mine);
	err = cli_mpi_pull_unpack(buf, (size_t)mine, j->o.n_src, t);
	if (err)
		cli__mpi_fail(j, "to read its share", err);
	free(buf);
	free(all);
	free(count);
	free(displ);
	return t;
}

/* One source's task: the source whole, or its listed paths. */
static void pull_task(struct job *j, size_t k, const struct cli_mpi_task *t, struct result *res)
{
	const char *const *srcs = cli_copy_opts(j->cc)->src;
	struct eng_report rep;

	if (!t->whole && !t->filter)
		return;
	j->o.src = &srcs[k];
	j->o.n_src = 1;
	j->o.filter = t->whole ? NULL : t->filter;
	j->o.dry_run = false;
	cli__mpi_session(j, res, "pulling from", &rep);
	cli__mpi_progress_session(j, &rep);
	cli__mpi_series_session(j, &rep);
	res->files += rep.files_total - rep.files_skipped;
	res->files_skipped += rep.files_skipped;
	res->bytes += rep.bytes;
}

/* This rank's pull: each source's share from its server; rank 0 gets the listing's figures. */
void cli__mpi_pull(struct job *j, struct cli_mpi_pull *p, struct result *res, double *t0_out)
{
	size_t k, n_src = j->o.n_src;
	struct cli_mpi_task *t;
	double t0;

	job_server(j, 0);
	t = pull_share(j, p, res);
	if (!j->moves) /* else rank 0 stays where its listing went */
		job_server(j, j->rank);
	cli__mpi_progress_begin(j, j->total);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = *t0_out = MPI_Wtime();
	cli__mpi_series_begin(j);
	for (k = 0; k < n_src; k++)
		pull_task(j, k, &t[k], res);
	res->seconds = MPI_Wtime() - t0;
	res->server = (uint32_t)j->cur;
	memcpy(res->host, j->host, sizeof(res->host));
	cli_mpi_tasks_free(t, n_src);
}

/* Rank 0, after every rank's pull: the directories' metadata (-p), each rank's share. */
void cli__mpi_pull_finish(struct job *j, const struct cli_mpi_pull *p, struct result *all)
{
	int i, err = j->o.preserve ? cli_mpi_pull_dirs(p, j->o.dst) : 0;

	if (err)
		cli__mpi_fail(j, "to set the directories' metadata", err);
	for (i = 0; i < j->size; i++)
		all[i].share_bytes = all[i].static_bytes = j->load[i];
}

/* -n: rank 0's dry run lists the pull as one railcp would; the others have nothing to do. */
int cli__mpi_pull_dry(struct job *j)
{
	struct result res = {0};
	struct eng_report rep;

	if (j->rank)
		return 0;
	job_server(j, 0);
	cli__mpi_session(j, &res, "listing the sources on", &rep);
	if (res.n_moves && !cli_copy_json(j->cc) && rcp_log_level() != RCP_LOG_SILENT) {
		printf("railcp-mpi: dry run: rank 0 listed the sources on %s port %u\n",
		       j->srv[j->cur].host, cli__mpi_server_port(j, j->cur));
		cli__mpi_moves_say(j, &res);
	}
	return 0;
}
