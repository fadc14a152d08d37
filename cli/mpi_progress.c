/*
 * mpi_progress.c - railcp-mpi --progress: rank 0 draws one progress line for
 * the whole job, all ranks' bytes, with a rate per host.
 *
 * Every rank's sessions call back from its main thread about every 20 ms
 * (eng_copy_opts.progress). At most every 250 ms a rank sends rank 0 its
 * bytes so far with MPI_Issend, one message in flight at a time: it is done
 * only when rank 0 has taken it, so a rank never waits for rank 0 and no
 * messages pile up at rank 0 while it is busy outside its callback (a walk,
 * a finalize). Once its sessions are done a rank sends a last one.
 * Rank 0 reads whatever has come (MPI_Iprobe) in its own callback and draws
 * the line with cli_progress_update, the hosts standing in for its rails
 * (the first LINE_HOSTS named, the others as one).
 * After its own sessions, rank 0 keeps drawing as messages come until every
 * rank's last one is in; only then do the ranks gather their figures. Every
 * rank's messages to rank 0 are of one tag, so they arrive in the order sent
 * and the last is last. Only the main thread calls MPI (MPI_THREAD_FUNNELED).
 */
#include "cli/mpi_job.h"
#include "cli/report.h"

#include "common/common.h"

#include <errno.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define BEAT_TAG 7101
#define BEAT_NS (250 * 1000000ull)
/* Hosts named on the line; the rest share one entry. */
#define LINE_HOSTS 4

/* What a rank tells rank 0 (MPI_BYTE). */
struct beat {
	uint64_t bytes;	  /* moved so far, over all its sessions */
	uint64_t skipped; /* held already (-u): never to move */
	uint32_t last;	  /* its sessions are done */
};

struct cli_mpi_progress {
	struct job *j;
	/* every rank: its finished sessions' figures, and the message in flight */
	uint64_t done_bytes, done_skipped, sent_ns;
	struct beat out;
	MPI_Request req;
	/* rank 0: each rank's last word, host and the line */
	struct beat *heard;
	unsigned *hid; /* each rank's host, numbered in the ranks' order */
	int n_last;
	uint64_t total; /* the job's bytes, every share */
	struct eng_report *r;
	struct cli_progress line;
};

/* Rank 0: what the ranks said, summed, per host as the line's rails; drawn. */
static void draw(struct cli_mpi_progress *pg)
{
	struct eng_report *r = pg->r;
	uint64_t skipped = 0;
	unsigned k;
	int i;

	r->bytes = 0;
	for (k = 0; k < r->n_rails; k++)
		r->rail[k].bytes = 0;
	for (i = 0; i < pg->j->size; i++) {
		r->bytes += pg->heard[i].bytes;
		skipped += pg->heard[i].skipped;
		k = pg->hid[i] < LINE_HOSTS ? pg->hid[i] : LINE_HOSTS;
		r->rail[k].bytes += pg->heard[i].bytes;
	}
	r->bytes_total = pg->total > skipped ? pg->total - skipped : 0;
	cli_progress_update(&pg->line, r);
}

/*
 * Rank 0: each rank's host as a rail of the line, in the ranks' order; past
 * LINE_HOSTS hosts (the line must fit a terminal's row), the rest as one.
 */
static void hosts_name(struct cli_mpi_progress *pg, char (*host)[64])
{
	struct eng_report *r = pg->r;
	unsigned n = 0, k;
	int i, o;

	for (i = 0; i < pg->j->size; i++) {
		for (o = 0; o < i && strcmp(host[o], host[i]); o++)
			;
		pg->hid[i] = o < i ? pg->hid[o] : n++;
		if (o == i && pg->hid[i] < LINE_HOSTS)
			snprintf(r->rail[pg->hid[i]].name, sizeof(r->rail[0].name), "%s", host[i]);
	}
	k = n < LINE_HOSTS ? n : LINE_HOSTS;
	if (n > LINE_HOSTS)
		snprintf(r->rail[k++].name, sizeof(r->rail[0].name), "+%u hosts", n - LINE_HOSTS);
	r->n_rails = k;
}

/* Rank 0: every message that has come, without waiting. */
static void hear(struct cli_mpi_progress *pg, bool wait)
{
	MPI_Status st;
	struct beat b;
	int flag = 1;

	for (;;) {
		if (wait)
			MPI_Probe(MPI_ANY_SOURCE, BEAT_TAG, MPI_COMM_WORLD, &st);
		else
			MPI_Iprobe(MPI_ANY_SOURCE, BEAT_TAG, MPI_COMM_WORLD, &flag, &st);
		if (!flag)
			return;
		MPI_Recv(&b, sizeof(b), MPI_BYTE, st.MPI_SOURCE, BEAT_TAG, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		pg->heard[st.MPI_SOURCE] = b;
		pg->n_last += b.last ? 1 : 0;
		if (wait)
			return;
	}
}

static void on_beat(const struct eng_report *so_far, void *ctx)
{
	struct cli_mpi_progress *pg = ctx;
	uint64_t now = rcp_now_ns();
	int done;

	if (pg->j->rank == 0) {
		pg->heard[0] = (struct beat){pg->done_bytes + so_far->bytes,
					     pg->done_skipped + so_far->bytes_skipped, 0};
		hear(pg, false);
		draw(pg);
		return;
	}
	if (now - pg->sent_ns < BEAT_NS)
		return;
	MPI_Test(&pg->req, &done, MPI_STATUS_IGNORE);
	if (!done)
		return; /* rank 0 has not taken the last one yet: no queue of them */
	pg->out = (struct beat){pg->done_bytes + so_far->bytes,
				pg->done_skipped + so_far->bytes_skipped, 0};
	/* Synchronous: done only once rank 0 has taken it, so none pile up there. */
	MPI_Issend(&pg->out, sizeof(pg->out), MPI_BYTE, 0, BEAT_TAG, MPI_COMM_WORLD, &pg->req);
	pg->sent_ns = now;
}

void cli__mpi_progress_begin(struct job *j, uint64_t total)
{
	struct cli_mpi_progress *pg;
	char(*host)[64] = NULL;

	if (!j->progress)
		return;
	if (!(pg = calloc(1, sizeof(*pg))))
		cli__mpi_fail(j, "to start its progress line", -ENOMEM);
	pg->j = j;
	pg->req = MPI_REQUEST_NULL;
	pg->total = total;
	pg->line.label = j->o.dir == ENG_PUSH ? "railcp-mpi: push" : "railcp-mpi: pull";
	if (j->rank == 0) {
		pg->heard = calloc((size_t)j->size, sizeof(*pg->heard));
		pg->hid = calloc((size_t)j->size, sizeof(*pg->hid));
		host = calloc((size_t)j->size, sizeof(*host));
		pg->r = calloc(1, sizeof(*pg->r));
		if (!pg->heard || !pg->hid || !host || !pg->r)
			cli__mpi_fail(j, "to start its progress line", -ENOMEM);
	}
	MPI_Gather(j->host, sizeof(j->host), MPI_BYTE, host, sizeof(j->host), MPI_BYTE, 0,
		   MPI_COMM_WORLD);
	if (j->rank == 0)
		hosts_name(pg, host);
	free(host);
	j->pg = pg;
	j->o.progress = on_beat;
	j->o.ctx = pg;
}

void cli__mpi_progress_session(struct job *j, const struct eng_report *rep)
{
	if (!j->pg)
		return;
	j->pg->done_bytes += rep->bytes;
	j->pg->done_skipped += rep->bytes_skipped;
}

void cli__mpi_progress_tick(struct job *j)
{
	struct cli_mpi_progress *pg = j->pg;

	if (!pg || j->rank)
		return;
	pg->heard[0] = (struct beat){pg->done_bytes, pg->done_skipped, 0};
	hear(pg, false);
	draw(pg);
}

void cli__mpi_progress_end(struct job *j)
{
	struct cli_mpi_progress *pg = j->pg;
	struct beat last;

	if (!pg)
		return;
	if (j->rank) {
		MPI_Wait(&pg->req, MPI_STATUS_IGNORE);
		last = (struct beat){pg->done_bytes, pg->done_skipped, 1};
		MPI_Send(&last, sizeof(last), MPI_BYTE, 0, BEAT_TAG, MPI_COMM_WORLD);
	} else {
		pg->heard[0] = (struct beat){pg->done_bytes, pg->done_skipped, 1};
		hear(pg, false);
		while (pg->n_last < j->size - 1) {
			draw(pg);
			hear(pg, true);
		}
		pg->line.last_ns = 0; /* the whole job's last figures, drawn whatever the time */
		draw(pg);
		cli_progress_clear(&pg->line);
		free(pg->heard);
		free(pg->hid);
		free(pg->r);
	}
	free(pg);
	j->pg = NULL;
	j->o.progress = NULL;
	j->o.ctx = NULL;
}
