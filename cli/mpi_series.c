/*
 * mpi_series.c - railcp-mpi --json's series: the job's throughput over time,
 * every rank's rails, so tools/plot draws the whole job.
 *
 * Each rank samples its own sessions' rails (cli_series, from the barrier
 * that starts the job, at most MPI_SERIES_MAX samples: a long job samples
 * less often, as one copy's series does), the bytes of its finished
 * sessions carried over into the next, so a pull's one session per source
 * reads as one run. After the last session each rank's series goes to rank
 * 0 (MPI_Gatherv), which puts them on one time base: the times of the
 * slowest-sampled rank, each rank's rails stepping to their last sample at
 * or before each time. The ranks' clocks start at the barrier, so they
 * agree to within its skew. Rails are named "rank N RAIL".
 */
#include "cli/mpi_job.h"
#include "cli/report.h"

#include "common/common.h"

#include <errno.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* Per rank: (1 + rails) x 8 bytes each, 160 KiB with four rails. */
#define MPI_SERIES_MAX 4096u

#define NAME_LEN 80

struct cli_mpi_series {
	struct cli_series s;
	struct eng_report *adj; /* the sample: this session's bytes, the finished ones' added */
	uint64_t off[TOPO_MAX_RAILS];
	bool named; /* adj's rails named, from the first report */
};

/* One rank's series as it travels: header, names, times, bytes. */
struct packed {
	uint32_t n, n_rails;
	uint64_t interval_ns;
};

/* adj from so_far (NULL: the finished sessions alone), the finished sessions' bytes added. */
static void adjust(struct cli_mpi_series *ms, const struct eng_report *so_far)
{
	unsigned k;

	if (!ms->named && so_far) {
		ms->adj->n_rails = so_far->n_rails;
		for (k = 0; k < so_far->n_rails; k++)
			memcpy(ms->adj->rail[k].name, so_far->rail[k].name, NAME_LEN);
		ms->named = true;
	}
	for (k = 0; k < ms->adj->n_rails; k++)
		ms->adj->rail[k].bytes =
			ms->off[k] + (so_far && k < so_far->n_rails ? so_far->rail[k].bytes : 0);
}

static void on_sample(const struct eng_report *so_far, void *ctx)
{
	struct cli_mpi_series *ms = ctx;
	struct cli_series *s = &ms->s;
	uint64_t now = rcp_now_ns();

	adjust(ms, so_far); /* every call: a session that fails carries its last into the next */
	if (s->n && now - s->t0_ns - s->t_ns[s->n - 1] < s->interval_ns)
		return;
	cli_series_add(s, now, ms->adj);
}

void cli__mpi_series_begin(struct job *j)
{
	struct cli_mpi_series *ms;

	if (!cli_copy_json(j->cc))
		return;
	if (!(ms = calloc(1, sizeof(*ms))) || !(ms->adj = calloc(1, sizeof(*ms->adj))))
		cli__mpi_fail(j, "to keep its series", -ENOMEM);
	cli_series_init(&ms->s, rcp_now_ns(), MPI_SERIES_MAX);
	j->ms = ms;
	j->o.progress = on_sample;
	j->o.ctx = ms;
}

void cli__mpi_series_session(struct job *j, const struct eng_report *rep)
{
	unsigned k;

	if (!j->ms)
		return;
	adjust(j->ms, rep);
	for (k = 0; k < j->ms->adj->n_rails; k++)
		j->ms->off[k] = j->ms->adj->rail[k].bytes;
}

void cli__mpi_series_moved(struct job *j)
{
	unsigned k;

	if (!j->ms)
		return;
	for (k = 0; k < j->ms->adj->n_rails; k++)
		j->ms->off[k] = j->ms->adj->rail[k].bytes;
}

/* This rank's series as bytes (malloc'd, *len long). */
static void *pack(const struct job *j, const struct cli_series *s, int *len)
{
	struct packed h = {(uint32_t)s->n, s->n_rails, s->interval_ns};
	size_t names = (size_t)s->n_rails * NAME_LEN, t = s->n * sizeof(uint64_t),
	       b = s->n * s->n_rails * sizeof(uint64_t), total = sizeof(h) + names + t + b;
	char *buf = malloc(total), *p = buf;
	unsigned k;

	if (!buf || total > INT32_MAX)
		cli__mpi_fail(j, "to send its series", -ENOMEM);
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	for (k = 0; k < s->n_rails; k++, p += NAME_LEN)
		memcpy(p, s->rail[k], NAME_LEN);
	memcpy(p, s->t_ns, t);
	memcpy(p + t, s->bytes, b);
	*len = (int)total;
	return buf;
}

/* One rank's series, read in place from what rank 0 gathered. */
struct view {
	struct packed h;
	const char *names;
	const uint64_t *t, *b;
	size_t at; /* the last sample at or before the time being merged */
};

static void view_of(const char *p, struct view *v)
{
	memcpy(&v->h, p, sizeof(v->h));
	v->names = p + sizeof(v->h);
	v->t = (const uint64_t *)(const void *)(v->names + (size_t)v->h.n_rails * NAME_LEN);
	v->b = v->t + v->h.n;
	v->at = 0;
}

/* Rank 0: the ranks' series (v, size of them) on one time base, as cli_series_json sets it. */
static json_t *merge(struct view *v, int size)
{
	json_t *o = json_object(), *rails = json_array(), *t_ms = json_array(),
	       *bytes = json_array();
	uint64_t iv = CLI_SERIES_MS * 1000000ull, end = 0, t;
	char name[NAME_LEN + 32];
	unsigned k;
	int r;

	for (r = 0; r < size; r++) {
		iv = v[r].h.interval_ns > iv ? v[r].h.interval_ns : iv;
		end = v[r].h.n && v[r].t[v[r].h.n - 1] > end ? v[r].t[v[r].h.n - 1] : end;
		for (k = 0; k < v[r].h.n_rails; k++) {
			snprintf(name, sizeof(name), "rank %d %.*s", r, NAME_LEN,
				 v[r].names + (size_t)k * NAME_LEN);
			json_array_append_new(rails, cli_json_text(name));
		}
	}
	for (t = 0;; t = t + iv < end ? t + iv : end) {
		json_t *row = json_array();

		for (r = 0; r < size; r++) {
			while (v[r].at + 1 < v[r].h.n && v[r].t[v[r].at + 1] <= t)
				v[r].at++;
			for (k = 0; k < v[r].h.n_rails; k++)
				json_array_append_new(
					row,
					json_integer(
						v[r].h.n && v[r].t[v[r].at] <= t
							? (json_int_t)v[r]
								  .b[v[r].at * v[r].h.n_rails + k]
							: 0));
		}
		json_array_append_new(t_ms, json_integer((json_int_t)(t / 1000000u)));
		json_array_append_new(bytes, row);
		if (t == end)
			break;
	}
	json_object_set_new(o, "interval_ms", json_integer((json_int_t)(iv / 1000000u)));
	json_object_set_new(o, "rails", rails);
	json_object_set_new(o, "t_ms", t_ms);
	json_object_set_new(o, "bytes", bytes);
	return o;
}

void cli__mpi_series_end(struct job *j)
{
	struct cli_mpi_series *ms = j->ms;
	int len = 0, *count = NULL, *displ = NULL, r;
	char *mine, *all = NULL;
	struct view *v = NULL;
	size_t total = 0;

	if (!ms)
		return;
	adjust(ms, NULL);
	cli_series_end(&ms->s, rcp_now_ns(), ms->adj);
	if (ms->s.err)
		cli__mpi_fail(j, "to keep its series", ms->s.err);
	mine = pack(j, &ms->s, &len);
	if (j->rank == 0 && (!(count = calloc((size_t)j->size, sizeof(int))) ||
			     !(displ = calloc((size_t)j->size, sizeof(int))) ||
			     !(v = calloc((size_t)j->size, sizeof(*v)))))
		cli__mpi_fail(j, "to gather the series", -ENOMEM);
	MPI_Gather(&len, 1, MPI_INT, count, 1, MPI_INT, 0, MPI_COMM_WORLD);
	for (r = 0; j->rank == 0 && r < j->size; r++) {
		displ[r] = (int)total;
		total += (size_t)count[r];
	}
	if (j->rank == 0 && (total > INT32_MAX || !(all = malloc(total ? total : 1))))
		cli__mpi_fail(j, "to gather the series", -ENOMEM);
	MPI_Gatherv(mine, len, MPI_BYTE, all, count, displ, MPI_BYTE, 0, MPI_COMM_WORLD);
	if (j->rank == 0) {
		for (r = 0; r < j->size; r++)
			view_of(all + displ[r], &v[r]);
		j->series = merge(v, j->size);
	}
	free(mine);
	free(all);
	free(count);
	free(displ);
	free(v);
	cli_series_fini(&ms->s);
	free(ms->adj);
	free(ms);
	j->ms = NULL;
	j->o.progress = NULL;
	j->o.ctx = NULL;
}
