/*
 * mpi_steal.c - railcp-mpi's work stealing: a rank whose share is done
 * takes batches of the job's pool from rank 0, one at a time, so a slow
 * rank, host, rail, disk or server does not hold the job (the pool's split
 * and bookkeeping are cli/mpi_pool.c's).
 *
 * Rank 0 keeps the batches packed (cli_mpi_pack, as a share); no other
 * rank holds them. A rank that has finished its share sends rank 0 a claim
 * (CLAIM_TAG, no bytes) and waits for the answer (BATCH_TAG): a packed
 * batch, which it runs as one more session to its current server, or no
 * bytes, none left, after which it asks no more. Rank 0 answers claims in
 * the callback its sessions make about every 20 ms from its main thread
 * (chained before --progress's or the series', installed also when neither
 * is), takes batches for itself directly, and, its own work done, keeps
 * answering until every rank has been told none is left: only then may it
 * enter a collective or --progress's blocking wait. A claim costs a round
 * trip to rank 0 plus up to 20 ms (rank 0's callback period).
 *
 * Limit: the engine makes that callback only in a session's data phase
 * (eng__job_run, engine/datapath/coordinator.c), so rank 0 answers claims
 * only then and once its own work is done: not while a session of its own
 * connects, says hello, sends its file list, waits for the server's
 * result or in a busy server's queue or backoff, nor in the gone-probe or
 * a failover. A slow rank 0, or a slow, stopped or gone rank-0 server,
 * holds every claim that long (rank 0's server stopped 3 s: rank 1 waited
 * 3 s in its claim), and the pool gains nothing then. Planned fix: rank
 * 0's sessions on a worker thread, its main thread looping on claims and
 * beats, the engine's callback only updating atomics it reads.
 * Only the main thread calls MPI (MPI_THREAD_FUNNELED). Built with MPI's
 * flags.
 */
#include "cli/mpi_job.h"

#include "common/common.h"

#include <errno.h>
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#define CLAIM_TAG 7102
#define BATCH_TAG 7103
/* Rank 0's wait for the last claims, between looks: as often as a session's callback. */
#define WAIT_NS (20 * 1000000L)

struct cli_mpi_steal {
	struct job *j;
	void (*cb)(const struct eng_report *so_far, void *ctx); /* the one it chains to */
	void *ctx;
	struct cli_mpi_pool pool; /* rank 0 */
};

/* Rank 0: every claim that has come answered, without waiting. */
static void serve(struct cli_mpi_steal *st)
{
	struct job *j = st->j;
	MPI_Status s;
	int flag;
	long b;

	for (;;) {
		MPI_Iprobe(MPI_ANY_SOURCE, CLAIM_TAG, MPI_COMM_WORLD, &flag, &s);
		if (!flag)
			return;
		MPI_Recv(NULL, 0, MPI_BYTE, s.MPI_SOURCE, CLAIM_TAG, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		b = cli_mpi_pool_take(&st->pool);
		/* The claimant waits in its receive: this send completes at once. */
		MPI_Send(b < 0 ? NULL : j->batch_all + j->batch_off[b], b < 0 ? 0 : j->batch_len[b],
			 MPI_BYTE, s.MPI_SOURCE, BATCH_TAG, MPI_COMM_WORLD);
	}
}

static void on_progress(const struct eng_report *so_far, void *ctx)
{
	struct cli_mpi_steal *st = ctx;

	if (st->j->rank == 0)
		serve(st);
	if (st->cb)
		st->cb(so_far, st->ctx);
}

void cli__mpi_steal_begin(struct job *j)
{
	struct cli_mpi_steal *st;

	if (!cli__mpi_splits(j) || j->no_steal)
		return;
	if (!(st = calloc(1, sizeof(*st))))
		cli__mpi_fail(j, "to start taking batches", -ENOMEM);
	st->j = j;
	st->cb = j->o.progress;
	st->ctx = j->o.ctx;
	st->pool = (struct cli_mpi_pool){.n = j->n_batches, .n_ranks = (unsigned)j->size};
	j->st = st;
	j->o.progress = on_progress;
	j->o.ctx = st;
}

/* A rank but 0: rank 0's answer to one claim (len 0: none left), malloc'd. */
static char *claim(struct job *j, int *len)
{
	MPI_Status s;
	char *buf;

	MPI_Send(NULL, 0, MPI_BYTE, 0, CLAIM_TAG, MPI_COMM_WORLD);
	MPI_Probe(0, BATCH_TAG, MPI_COMM_WORLD, &s);
	MPI_Get_count(&s, MPI_BYTE, len);
	if (!(buf = malloc(*len ? (size_t)*len : 1)))
		cli__mpi_fail(j, "to receive a batch", -ENOMEM);
	MPI_Recv(buf, *len, MPI_BYTE, 0, BATCH_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return buf;
}

bool cli__mpi_steal_next(struct job *j, struct io_manifest **batch_out)
{
	const char *buf;
	char *got = NULL;
	int len = 0, err;
	long b;

	if (!j->st)
		return false;
	if (j->rank == 0) {
		b = cli_mpi_pool_take(&j->st->pool);
		buf = b < 0 ? NULL : j->batch_all + j->batch_off[b];
		len = b < 0 ? 0 : j->batch_len[b];
	} else
		buf = got = claim(j, &len);
	if (!len) {
		free(got);
		return false;
	}
	err = cli_mpi_unpack(buf, (size_t)len, batch_out);
	free(got);
	if (err)
		cli__mpi_fail(j, "to read a batch", err);
	return true;
}

void cli__mpi_steal_end(struct job *j)
{
	struct cli_mpi_steal *st = j->st;
	const struct timespec wait = {0, WAIT_NS};

	if (!st)
		return;
	while (j->rank == 0 && !cli_mpi_pool_done(&st->pool)) {
		if (atomic_load(&cli__mpi_interrupted))
			cli__mpi_fail(j, "waiting for the other ranks' claims", -EINTR);
		serve(st);
		cli__mpi_progress_tick(j);
		if (!cli_mpi_pool_done(&st->pool))
			nanosleep(&wait, NULL);
	}
	j->o.progress = st->cb;
	j->o.ctx = st->ctx;
	free(st);
	j->st = NULL;
}
