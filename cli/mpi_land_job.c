/*
 * mpi_land_job.c - railcp-mpi's files cut into byte ranges, the collective
 * and session steps (built with MPI's flags; the parts without MPI are
 * cli/mpi_land.c, the receiver's io/range.c, the protocol's
 * engine/session/ranges.c).
 *
 * Rank 0 draws the job's id and sends it with the list of cut files to
 * every rank (MPI_Bcast), so each rank's sessions name the job (the
 * server's temporaries of the cut files are named by it) and any rank that
 * fails can remove them. Each rank's sessions write its ranges; MPI's
 * gather after them says every range landed and was checked, and only then
 * does rank 0 run one short session that puts each cut file in place, once
 * (moving on to another server as its push would). A rank that fails asks
 * a live server, in one short session, to remove the job's temporaries of
 * the cut files before the job ends (cli__mpi_fail): nothing of a cut file
 * is left under its final name, nor as a temporary.
 *
 * With -p, the job's directories are set last, once: rank 0 picks them from
 * its walk and sends them with the job's id to every rank; each session
 * says "dirs_last", so its server marks the directories it makes as the
 * job's and sets none at the session's end; after the place (and --delete's
 * pass), rank 0's last session carries the directories and has a server
 * give those the job made their mode and time (cli__mpi_land_dirs). A rank
 * that fails has the markers removed with the temporaries.
 */
#include "cli/mpi_job.h"

#include "common/common.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

bool cli__mpi_splits(const struct job *j)
{
	const struct eng_copy_opts *o = cli_copy_opts(j->cc);

	/*
	 * A range is always sent: -u's quick check and -c's comparison are of
	 * whole files at their final names, and --partial would need the
	 * temporaries kept under a name a re-run finds (a job id drawn anew
	 * each run is none); so those, and -n, keep files whole.
	 */
	return o->dir == ENG_PUSH && j->size > 1 && !o->update && !o->checksum && !o->partial &&
	       !o->dry_run;
}

/* Rank 0: a job id, not 0. */
static uint64_t job_id(void)
{
	uint64_t id = 0;

	while (!id)
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = (uint64_t)MPI_Wtime() ^
			     ((uint64_t)getpid() << 32); /* seldom: still 0? */
	return id;
}

bool cli__mpi_dirs_last(const struct job *j)
{
	const struct eng_copy_opts *o = cli_copy_opts(j->cc);

	return o->dir == ENG_PUSH && o->preserve && !o->dry_run;
}

int cli__mpi_land_dirs_pick(struct job *j, const struct io_manifest *m)
{
	/* One list's caps, not a test's lower session cap: the last session's list is one. */
	const struct cli_mpi_caps caps = {.entries = IO_MANIFEST_MAX_ENTRIES,
					  .memory = IO_MANIFEST_MAX_MEMORY};
	bool *keep = calloc(m->n ? m->n : 1, sizeof(*keep));
	size_t i, n = 0;
	int err = 0;

	if (!keep)
		return rcp_err(-ENOMEM, "out of memory listing the job's directories");
	for (i = 0; i < m->n; i++) {
		keep[i] = m->entry[i].type == IO_DIR;
		n += keep[i];
	}
	if (!cli_mpi_list_fits(m, keep, &caps)) /* more than one list: as each session did */
		rcp_log(RCP_LOG_NOTICE,
			"the job has %zu directories, more than one session's list holds: each "
			"session sets the mode and time of those it made",
			n);
	else if (n)
		err = io_manifest_pick(m, keep, &j->dirs);
	free(keep);
	return err;
}

/* Rank 0's list *l (packed into *buf, *len bytes) to every rank, into *l there. */
static void list_share(struct job *j, struct io_manifest **l, void **buf, uint64_t len,
		       const char *what)
{
	if (len > (uint64_t)INT_MAX)
		cli__mpi_fail(j, what, -EFBIG);
	if (j->rank && len && !(*buf = malloc(len)))
		cli__mpi_fail(j, what, -ENOMEM);
	if (len)
		MPI_Bcast(*buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (j->rank && len) {
		int err = cli_mpi_unpack(*buf, len, l);

		if (err)
			cli__mpi_fail(j, what, err);
	}
	free(*buf);
	*buf = NULL;
}

void cli__mpi_land_share(struct job *j)
{
	uint64_t hdr[3] = {0, 0, 0}; /* the job id; the cut files' and directories' packed bytes */
	void *buf[2] = {NULL, NULL};
	size_t len[2] = {0, 0};
	int err = 0;

	if (j->rank == 0) {
		if (j->split)
			err = cli_mpi_pack(j->split, &buf[0], &len[0]);
		if (!err && j->dirs)
			err = cli_mpi_pack(j->dirs, &buf[1], &len[1]);
		hdr[0] = j->split || j->dirs ? job_id() : 0;
		hdr[1] = err ? 0 : len[0];
		hdr[2] = err ? 0 : len[1];
	}
	if (err)
		cli__mpi_fail(j, "to pack the lists of cut files and directories", err);
	MPI_Bcast(hdr, 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	list_share(j, &j->split, &buf[0], hdr[1], "to share the list of cut files");
	list_share(j, &j->dirs, &buf[1], hdr[2], "to share the list of directories");
	j->range_job = hdr[0];
	j->o.range_job = hdr[0];
	j->o.dirs_last = j->dirs != NULL; /* the servers set them once, at the end */
	if (cli__mpi_splits(j))
		j->o.chunk_fit = false; /* the cuts are at multiples of the chunk: it stays */
}

/* One attempt of the place: after the first, an earlier one may have put some files in place. */
struct place_try {
	struct eng_report *rep;
	bool tried;
};

static int place_run(struct job *j, void *ctx)
{
	struct place_try *t = ctx;

	j->o.range_step = t->tried ? ENG_RANGES_PLACE_AGAIN : ENG_RANGES_PLACE;
	t->tried = true;
	return eng_copy_run(&j->o, t->rep);
}

void cli__mpi_land_place(struct job *j, struct result *res)
{
	struct eng_report rep;
	struct place_try t = {.rep = &rep};

	if (!cli_mpi_split_files(j->split))
		return;
	j->o = *cli_copy_opts(j->cc);
	cli__mpi_server_use(j, j->cur);
	j->o.dst = j->dst;
	j->o.manifest = j->split;
	j->o.range_job = j->range_job;
	j->o.update = j->o.checksum = j->o.partial = j->o.delete_extra = false;
	cli__mpi_attempts(j, res, "putting its cut files in place with", place_run, &t);
	res->server = (uint32_t)j->cur;
	j->placed = rep.files_total;
	/* Every cut file, once: a server that counts otherwise did not do what was asked. */
	if (j->placed != cli_mpi_split_files(j->split))
		cli__mpi_fail(
			j, "putting its cut files in place",
			rcp_err(-EIO, "the server put %llu of the job's %zu cut files in place",
				(unsigned long long)j->placed, cli_mpi_split_files(j->split)));
	j->o.range_step = ENG_RANGES_LAND;
}

static int dirs_run(struct job *j, void *ctx)
{
	return eng_copy_run(&j->o, ctx);
}

void cli__mpi_land_dirs(struct job *j, struct result *res)
{
	struct eng_report rep;

	if (!j->dirs)
		return;
	j->o = *cli_copy_opts(j->cc);
	cli__mpi_server_use(j, j->cur);
	j->o.dst = j->dst;
	j->o.manifest = j->dirs;
	j->o.range_job = j->range_job;
	j->o.range_step = ENG_RANGES_DIRS; /* again on the next server: what is done stays done */
	j->o.update = j->o.checksum = j->o.partial = j->o.delete_extra = false;
	cli__mpi_attempts(j, res, "setting its directories' mode and time with", dirs_run, &rep);
	res->server = (uint32_t)j->cur;
	rcp_log(RCP_LOG_INFO,
		"rank 0: %llu of the job's %zu directories made by the job got their mode and "
		"time",
		(unsigned long long)rep.files_total, j->dirs->n);
	j->o.range_step = ENG_RANGES_LAND;
}

/*
 * How long the removal waits on one server: a failing job should end
 * promptly, and a server that does not answer within this is passed over
 * for the next.
 */
#define REMOVE_TIMEOUT_MS 5000
/* And over every server tried, for each removal, so a job over many hosts that fail ends. */
#define REMOVE_TOTAL_MS 15000
/*
 * Rank 0 stopped by a signal (cli__mpi_fail): mpirun's SIGKILL follows its
 * SIGTERM after odls_base_sigkill_timeout (1 s by default), so each try and
 * each removal gets a share of that second.
 */
#define REMOVE_SIGNALLED_MS 300
#define REMOVE_SIGNALLED_TOTAL_MS 400

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Session o (a removal) to the servers in turn from first, until one does
 * it or REMOVE_TOTAL_MS passed; each removal has its own, so one that used
 * it up leaves the next its tries.
 */
static int remove_run(const struct job *j, struct eng_copy_opts *o, size_t first, int total_ms)
{
	int64_t until = now_ms() + total_ms;
	struct eng_report rep;
	size_t k, i;
	int r = -ETIMEDOUT;

	for (k = 0; k < j->n_srv && r && now_ms() < until; k++) {
		i = (first + k) % j->n_srv;
		o->host = j->srv[i].host;
		o->port = (uint16_t)cli__mpi_server_port(j, i);
		r = eng_copy_run(o, &rep);
	}
	return r;
}

void cli__mpi_land_remove(const struct job *j, int err)
{
	/* a server that may be gone is tried last, not first */
	size_t first = cli_mpi_server_gone(err) == CLI_MPI_NOT_GONE ? j->cur : j->cur + 1;
	struct eng_copy_opts o = j->o;
	bool signalled = atomic_load(&cli__mpi_interrupted);
	int try_ms = signalled ? REMOVE_SIGNALLED_MS : REMOVE_TIMEOUT_MS;
	int total_ms = signalled ? REMOVE_SIGNALLED_TOTAL_MS : REMOVE_TOTAL_MS;
	int r;

	if (!j->range_job)
		return;
	/* j->o may be a pass's that is not the job's (--delete's, cli__mpi_delete): it is named */
	o.range_job = j->range_job;
	o.update = o.checksum = o.partial = o.delete_extra = o.dry_run = o.dirs_last = false;
	o.progress = NULL;
	o.cancel = NULL;
	o.dst = j->dst;
	if (!o.timeout_ms || o.timeout_ms > try_ms)
		o.timeout_ms = try_ms;
	if (!o.connect_timeout_ms || o.connect_timeout_ms > try_ms)
		o.connect_timeout_ms = try_ms;
	o.manifest = j->split;
	o.range_step = ENG_RANGES_REMOVE;
	/* Every server gone: the job's one line said so already, and none could remove them. */
	/* A rank stopped by a signal says nothing (cli__mpi_fail), nor that this failed. */
	if (cli_mpi_split_files(j->split) && (r = remove_run(j, &o, first, total_ms)) != 0 &&
	    !signalled && cli_mpi_server_gone(r) == CLI_MPI_NOT_GONE)
		fprintf(stderr,
			"railcp-mpi: rank %d on %s could not remove the job's temporaries of its "
			"%zu cut files (named .railcp-tmp-j%016llx...): %s\n",
			j->rank, j->host, cli_mpi_split_files(j->split),
			(unsigned long long)j->range_job, rcp_err_msg(r));
	/*
	 * --partial's markers stay (-c's sessions make them too): a re-run
	 * resumes those directories as the job's.
	 */
	o.partial = cli_copy_opts(j->cc)->partial || cli_copy_opts(j->cc)->checksum;
	o.manifest = j->dirs;
	o.range_step = ENG_RANGES_DIRS_REMOVE;
	if (j->dirs && (r = remove_run(j, &o, first, total_ms)) != 0 && !signalled &&
	    cli_mpi_server_gone(r) == CLI_MPI_NOT_GONE)
		fprintf(stderr,
			"railcp-mpi: rank %d on %s could not remove the job's markers of its "
			"directories (named .railcp-tmp-dir-j%016llx): %s\n",
			j->rank, j->host, (unsigned long long)j->range_job, rcp_err_msg(r));
}
