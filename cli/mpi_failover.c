/*
 * mpi_failover.c - railcp-mpi's sessions, each moved to another server
 * when its own is gone (cli/mpi_move.c tells gone from the copy's own
 * failures and picks the next server). Every server serves one shared
 * root, so what the gone server put in place is there for the next: the
 * rank runs its share again there with -c, which compares each file
 * already at the destination chunk by chunk (a keyed digest at each end)
 * and sends only the chunks that differ or are missing, so what landed
 * does not travel again, whatever -p and -u say (a -u quick check
 * matches nothing the job wrote without -p). With --no-failover, or when
 * every server is gone, the job ends in one line. Each rank decides
 * alone: no collective while sessions run. Built with MPI's flags.
 */
#include "cli/mpi_job.h"

#include "common/common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * The probe of a server whose error could mean either, all of it: a live
 * server's answer takes 1.1 s (two connections, each watched 0.3 s, 0.5 s
 * apart), which leaves 0.7 s for the connections themselves.
 */
#define PROBE_MS 1800

/*
 * Ranks that find every server gone at once speak in rank order, this far
 * apart (the third and later ones together): the first one's MPI_Abort
 * ends the others before their turn. Two seconds, as one rank can reach
 * the finding later than another by a probe (at most PROBE_MS, whole) on
 * a loaded host.
 */
#define GONE_STAGGER_MS 2000
#define GONE_STAGGER_MAX 3

void cli__mpi_server_use(struct job *j, size_t i)
{
	const struct cli_mpi_server *s = &j->srv[i];

	j->cur = i;
	j->o.host = s->host;
	j->o.port = s->port ? s->port : cli_copy_opts(j->cc)->port;
	j->o.cancel = &cli__mpi_interrupted;
}

unsigned cli__mpi_server_port(const struct job *j, size_t i)
{
	unsigned p = j->srv[i].port ? j->srv[i].port : cli_copy_opts(j->cc)->port;

	return p ? p : ENG_DEFAULT_PORT;
}

static unsigned port_of(const struct job *j)
{
	return cli__mpi_server_port(j, j->cur);
}

/* Whether err says this rank's server is gone (asking it once more when err could be either). */
static bool gone(const struct job *j, int err)
{
	switch (cli_mpi_server_gone(err)) {
	case CLI_MPI_GONE:
		return true;
	case CLI_MPI_GONE_ASK:
		return cli_mpi_probe(j->o.host, (uint16_t)port_of(j), PROBE_MS) != 0;
	default:
		return false;
	}
}

/*
 * A move's line waits until the session on the new server is under way
 * (its first progress call) or done, so that a job whose every server is
 * gone ends in its one line; a failure of the new server's own says it
 * first. The copy's own progress callback, if any, is called through.
 * last_bytes is the attempt's bytes at its last progress call (every 20
 * ms): a failed attempt reports nothing else, and the series carries the
 * same figure into the next attempt.
 */
struct said {
	char pending[2048];
	void (*cb)(const struct eng_report *so_far, void *ctx);
	void *ctx;
	uint64_t last_bytes;
};

static void say(struct said *n)
{
	if (n->pending[0] && rcp_log_level() >= RCP_LOG_NOTICE)
		fputs(n->pending, stderr);
	n->pending[0] = '\0';
}

static void said_progress(const struct eng_report *so_far, void *ctx)
{
	struct said *n = ctx;

	n->last_bytes = so_far->bytes;
	say(n);
	if (n->cb)
		n->cb(so_far, n->ctx);
}

/* No server left: the lowest rank of those that found so says it (the abort silences the rest). */
static _Noreturn void all_gone(const struct job *j, const char *verb, int err)
{
	char what[512];

	usleep((useconds_t)(j->rank < GONE_STAGGER_MAX ? j->rank : GONE_STAGGER_MAX) *
	       GONE_STAGGER_MS * 1000);
	snprintf(what, sizeof(what),
		 "%s %s port %u, the last of the job's %zu servers, every other one gone", verb,
		 j->o.host, port_of(j), j->n_srv);
	cli__mpi_fail_all_gone(j, what, err);
}

/* The move, kept for the summary (the first CLI_MPI_MOVES_KEPT) and its line for n. */
static void move_record(struct job *j, struct result *res, size_t from, const char *cause,
			struct said *n)
{
	struct cli_mpi_move *m = &res->move[res->n_moves < CLI_MPI_MOVES_KEPT ? res->n_moves : 0];
	size_t len = strlen(n->pending);
	char esc[200];

	if (res->n_moves < CLI_MPI_MOVES_KEPT) {
		*m = (struct cli_mpi_move){
			.from = (uint32_t)from, .to = (uint32_t)j->cur, .bytes_before = res->bytes};
		snprintf(m->cause, sizeof(m->cause), "%s", cause);
	}
	res->n_moves++;
	snprintf(n->pending + len, sizeof(n->pending) - len,
		 "railcp-mpi: rank %d on %s: server %s port %u is gone (%s); its copy goes on "
		 "with %s port %u\n",
		 j->rank, j->host, j->srv[from].host, cli__mpi_server_port(j, from),
		 rcp_printable(cause, esc, sizeof(esc)), j->o.host, port_of(j));
}

/* One attempt failed with err: the job ends, or this rank moves to its next server. */
static void session_failed(struct job *j, struct result *res, const char *verb, int err,
			   struct said *n)
{
	size_t from = j->cur;
	char what[512], cause[200];

	if (atomic_load(&cli__mpi_interrupted) || j->o.no_failover || j->n_srv < 2 ||
	    !gone(j, err)) {
		/*
		 * A move not yet said is said before this rank's failure, which names the
		 * new server; but a rank stopped by a signal says nothing (cli__mpi_fail),
		 * its move neither: the abort of a rank that found every server gone
		 * stops this one, often while its move waits for bytes to flow.
		 */
		if (!atomic_load(&cli__mpi_interrupted))
			say(n);
		snprintf(what, sizeof(what), "%s %s port %u", verb, j->o.host, port_of(j));
		cli__mpi_fail(j, what, err);
	}
	if (j->moves + 1 >= j->n_srv)
		all_gone(j, verb, err);
	res->bytes += n->last_bytes; /* what reached the gone server counts: the series has it */
	snprintf(cause, sizeof(cause), "%s", rcp_err_msg(err));
	cli__mpi_server_use(j, cli_mpi_next_server((unsigned)j->rank, j->n_srv, ++j->moves));
	/* What the gone server put in place stays: compared, not sent again. */
	j->o.checksum = !j->o.dry_run;
	cli__mpi_series_moved(j);
	move_record(j, res, from, cause, n);
	n->last_bytes = 0;
}

void cli__mpi_attempts(struct job *j, struct result *res, const char *verb,
		       int (*run)(struct job *j, void *ctx), void *ctx)
{
	struct said n = {.cb = j->o.progress, .ctx = j->o.ctx};
	bool checksum = j->o.checksum; /* a pull's next source: nothing of it landed yet */
	int err;

	j->o.progress = said_progress;
	j->o.ctx = &n;
	while ((err = run(j, ctx)) != 0)
		session_failed(j, res, verb, err, &n);
	say(&n);
	j->o.progress = n.cb;
	j->o.ctx = n.ctx;
	j->o.checksum = checksum;
}

static int copy_run(struct job *j, void *rep)
{
	return eng_copy_run(&j->o, rep);
}

void cli__mpi_session(struct job *j, struct result *res, const char *verb, struct eng_report *rep)
{
	cli__mpi_attempts(j, res, verb, copy_run, rep);
}
