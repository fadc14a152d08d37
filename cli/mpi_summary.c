/*
 * mpi_summary.c - railcp-mpi's one summary, rank 0's after the gather: the
 * job's files, bytes, rate and balance, a line per rank with its server
 * and its moves (cli/mpi_failover.c), or all of it as one JSON object.
 * Built with MPI's flags beside cli/mpi_main.c; it calls no MPI itself.
 */
#include "cli/mpi_job.h"
#include "cli/report.h"

#include "common/common.h"

#include <stdint.h>
#include <stdio.h>

/*
 * Largest over smallest share, the batches each rank took from the pool
 * counted (what it moved, not what it sent again after a move); 0 when a
 * rank had no bytes (no ratio).
 */
static double balance(const struct result *r, int n)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	int i;

	for (i = 0; i < n; i++) {
		lo = r[i].share_bytes < lo ? r[i].share_bytes : lo;
		hi = r[i].share_bytes > hi ? r[i].share_bytes : hi;
	}
	return lo ? (double)hi / (double)lo : 0;
}

/* A server as --json names it. */
static json_t *server_json(const struct job *j, uint32_t i)
{
	return json_pack("{s:o, s:i}", "server", cli_json_text(j->srv[i].host), "port",
			 cli__mpi_server_port(j, i));
}

/*
 * A rank's moves: from and to which server, why, and what it sent from
 * then on (what its sessions after the move sent: the gone server's
 * files in place are compared, not sent again).
 */
static json_t *moves_json(const struct job *j, const struct result *r)
{
	json_t *a = json_array();
	uint32_t k;

	for (k = 0; k < r->n_moves && k < CLI_MPI_MOVES_KEPT; k++) {
		const struct cli_mpi_move *m = &r->move[k];

		json_array_append_new(a, json_pack("{s:o, s:o, s:o, s:I}", "moved_from",
						   server_json(j, m->from), "moved_to",
						   server_json(j, m->to), "cause",
						   cli_json_text(m->cause), "bytes_after",
						   (json_int_t)(r->bytes - m->bytes_before)));
	}
	return a;
}

static json_t *summary_json(const struct job *j, const struct result *r, const struct result *del,
			    double secs, uint64_t files, uint64_t bytes)
{
	json_t *o = json_object(), *ranks = json_array();
	double b = balance(r, j->size);
	json_int_t n_moves = 0;
	int i;

	for (i = 0; i < j->size; i++) {
		const struct cli_mpi_server *s = &j->srv[r[i].server];
		json_t *rank = json_pack(
			"{s:i, s:o, s:o, s:i, s:I, s:I, s:I, s:I, s:f}", "rank", i, "host",
			cli_json_text(r[i].host), "server", cli_json_text(s->host), "port",
			cli__mpi_server_port(j, r[i].server), "files", (json_int_t)r[i].files,
			"files_skipped", (json_int_t)r[i].files_skipped, "bytes",
			(json_int_t)r[i].bytes, "share_bytes", (json_int_t)r[i].share_bytes,
			"seconds", r[i].seconds);

		json_object_set_new(rank, "static_bytes",
				    json_integer((json_int_t)r[i].static_bytes));
		json_object_set_new(rank, "batches", json_integer((json_int_t)r[i].batches));
		json_object_set_new(rank, "moves", moves_json(j, &r[i]));
		json_array_append_new(ranks, rank);
		n_moves += r[i].n_moves;
	}
	json_object_set_new(o, "direction", json_string(j->o.dir == ENG_PUSH ? "push" : "pull"));
	json_object_set_new(o, "ranks", ranks);
	json_object_set_new(o, "servers", json_integer((json_int_t)j->n_srv));
	json_object_set_new(o, "moves", json_integer(n_moves + (json_int_t)del->n_moves));
	json_object_set_new(o, "files", json_integer((json_int_t)files));
	json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
	json_object_set_new(o, "seconds", json_real(secs));
	json_object_set_new(o, "gbps", json_real(cli_gbps(bytes, secs)));
	json_object_set_new(o, "balance", b > 0 ? json_real(b) : json_null());
	json_object_set_new(o, "synced", json_boolean(j->o.fsync));
	if (j->delete_extra) {
		json_object_set_new(o, "deleted", json_integer((json_int_t)j->deleted));
		json_object_set_new(o, "delete_pass_files_sent",
				    json_integer((json_int_t)j->resent_files));
		json_object_set_new(o, "delete_pass_bytes_sent",
				    json_integer((json_int_t)j->resent_bytes));
		json_object_set_new(o, "delete_pass_moves", moves_json(j, del));
	}
	if (j->series)
		json_object_set_new(o, "series", json_incref(j->series));
	return o;
}

void cli__mpi_moves_say(const struct job *j, const struct result *r)
{
	char sz[32], esc[200];
	uint32_t k;

	for (k = 0; k < r->n_moves && k < CLI_MPI_MOVES_KEPT; k++) {
		const struct cli_mpi_move *m = &r->move[k];

		cli_size_str(r->bytes - m->bytes_before, sz, sizeof(sz));
		printf("    moved from %s port %u (%s) to %s port %u, which got %s\n",
		       j->srv[m->from].host, cli__mpi_server_port(j, m->from),
		       rcp_printable(m->cause, esc, sizeof(esc)), j->srv[m->to].host,
		       cli__mpi_server_port(j, m->to), sz);
	}
	if (r->n_moves > CLI_MPI_MOVES_KEPT)
		printf("    and moved %u times more\n", r->n_moves - CLI_MPI_MOVES_KEPT);
}

/* Rank 0: the job's one summary, for people or as one JSON object. */
void cli__mpi_summary(const struct job *j, const struct result *r, const struct result *del,
		      double secs)
{
	uint64_t files = 0, bytes = 0;
	bool push = j->o.dir == ENG_PUSH;
	size_t used;
	double b;
	char sz[32];
	int i;

	for (i = 0; i < j->size; i++)
		files += r[i].files, bytes += r[i].bytes;
	if (cli_copy_json(j->cc)) {
		json_t *o = summary_json(j, r, del, secs, files, bytes);

		cli_json_print(stdout, o);
		json_decref(o);
		return;
	}
	if (rcp_log_level() == RCP_LOG_SILENT)
		return;
	cli_size_str(bytes, sz, sizeof(sz));
	used = (size_t)j->size < j->n_srv ? (size_t)j->size : j->n_srv;
	b = balance(r, j->size);
	printf("railcp-mpi: %s %llu files, %s with %d rank%s %s %zu server%s in %.3f s: "
	       "%.3f Gb/s; balance ",
	       push ? "pushed" : "pulled", (unsigned long long)files, sz, j->size,
	       j->size == 1 ? "" : "s", push ? "to" : "from", used, used == 1 ? "" : "s", secs,
	       cli_gbps(bytes, secs));
	if (b > 0)
		printf("%.3f (largest over smallest rank's bytes)\n", b);
	else
		printf("none (a rank had no bytes to send)\n");
	for (i = 0; i < j->size; i++) {
		cli_size_str(r[i].share_bytes, sz, sizeof(sz));
		printf("  rank %d on %s: %llu files, %s %s %s in %.3f s\n", i, r[i].host,
		       (unsigned long long)r[i].files, sz, push ? "to" : "from",
		       j->srv[r[i].server].host, r[i].seconds);
		if (r[i].batches) {
			cli_size_str(r[i].share_bytes - r[i].static_bytes, sz, sizeof(sz));
			printf("    of them %s in %u batch%s taken from the pool\n", sz,
			       r[i].batches, r[i].batches == 1 ? "" : "es");
		}
		cli__mpi_moves_say(j, &r[i]);
	}
	if (j->delete_extra)
		printf("railcp-mpi: then deleted %llu entries the sources do not hold "
		       "(--delete)\n",
		       (unsigned long long)j->deleted);
	cli__mpi_moves_say(j, del);
	if (j->resent_files) {
		cli_size_str(j->resent_bytes, sz, sizeof(sz));
		printf("railcp-mpi: the delete pass sent %llu files again (%s): they differed in "
		       "size or time from what the ranks had put in place\n",
		       (unsigned long long)j->resent_files, sz);
	}
}
