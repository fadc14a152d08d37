/*
 * series.c - a run's throughput over time, for bench --json and copy --json:
 * each rail's cumulative bytes, sampled from the engine's progress callback
 * (about every 20 ms, ENG_PROGRESS_MS) at most every CLI_SERIES_MS. Time 0
 * is when the command started the run (connecting comes first: no bytes);
 * the last sample is the finished run's report, so it sums to the summary's
 * bytes. Memory grows by doubling up to max samples; a run that fills them
 * loses every other sample and samples half as often from then on
 * (interval_ms in the JSON says how often). The plot (tools/plot) takes rates
 * from the deltas. Not thread-safe: the thread that runs the transfer feeds it.
 */
#include "cli/report.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SERIES_FIRST_CAP 64

void cli_series_init(struct cli_series *s, uint64_t now_ns, size_t max)
{
	memset(s, 0, sizeof(*s));
	s->t0_ns = now_ns;
	s->interval_ns = CLI_SERIES_MS * 1000000ull;
	s->max = max < 2 ? 2 : max;
}

void cli_series_fini(struct cli_series *s)
{
	free(s->t_ns);
	free(s->bytes);
	s->t_ns = s->bytes = NULL;
	s->n = s->cap = 0;
}

/* Past max samples: keep 0, 2, 4, ... (the zero sample stays) and sample half as often. */
static void series_thin(struct cli_series *s)
{
	size_t i;

	for (i = 0; 2 * i < s->n; i++) {
		s->t_ns[i] = s->t_ns[2 * i];
		memcpy(&s->bytes[i * s->n_rails], &s->bytes[2 * i * s->n_rails],
		       s->n_rails * sizeof(*s->bytes));
	}
	s->n = i;
	s->interval_ns *= 2;
}

/* Room for one more sample (n < max): double the arrays, up to max. */
static int series_room(struct cli_series *s)
{
	size_t cap;
	uint64_t *t, *b;

	if (s->n < s->cap)
		return 0;
	cap = s->cap ? 2 * s->cap : SERIES_FIRST_CAP;
	if (cap > s->max)
		cap = s->max;
	if (!(t = realloc(s->t_ns, cap * sizeof(*t))))
		return -ENOMEM;
	s->t_ns = t;
	/* A run of no rails still takes a row, of no bytes. */
	if (!(b = realloc(s->bytes, cap * (s->n_rails ? s->n_rails : 1) * sizeof(*b))))
		return -ENOMEM;
	s->bytes = b;
	s->cap = cap;
	return 0;
}

static int series_push(struct cli_series *s, uint64_t t_ns, const struct eng_report *r)
{
	unsigned i;
	int err;

	if ((err = series_room(s)) != 0)
		return s->err = err;
	s->t_ns[s->n] = t_ns;
	for (i = 0; i < s->n_rails; i++)
		s->bytes[s->n * s->n_rails + i] = i < r->n_rails ? r->rail[i].bytes : 0;
	s->n++;
	return 0;
}

/* The first report names the rails; the series starts with zeros at t0. */
static int series_start(struct cli_series *s, const struct eng_report *r)
{
	struct eng_report zero = {.n_rails = 0};
	unsigned i;

	s->n_rails = r->n_rails < TOPO_MAX_RAILS ? r->n_rails : TOPO_MAX_RAILS;
	for (i = 0; i < s->n_rails; i++)
		snprintf(s->rail[i], sizeof(s->rail[i]), "%s", r->rail[i].name);
	return series_push(s, 0, &zero);
}

/* Before a sample: the first one (zeros) made, and room for one more. */
static int series_ready(struct cli_series *s, const struct eng_report *r)
{
	int err;

	if (s->err)
		return s->err;
	if (s->n == 0 && (err = series_start(s, r)) != 0)
		return err;
	if (s->n == s->max)
		series_thin(s);
	return 0;
}

int cli_series_add(struct cli_series *s, uint64_t now_ns, const struct eng_report *r)
{
	uint64_t t = now_ns - s->t0_ns;
	int err = series_ready(s, r);

	if (err)
		return err;
	if (t < s->t_ns[s->n - 1] + s->interval_ns)
		return 0;
	return series_push(s, t, r);
}

int cli_series_end(struct cli_series *s, uint64_t now_ns, const struct eng_report *r)
{
	uint64_t t = now_ns - s->t0_ns;
	int err = series_ready(s, r);

	if (err)
		return err;
	/* A last sample less than an interval old gives way: every gap stays an interval. */
	if (s->n >= 2 && t < s->t_ns[s->n - 1] + s->interval_ns)
		s->n--;
	return series_push(s, t > s->t_ns[s->n - 1] ? t : s->t_ns[s->n - 1], r);
}

int cli_series_json(json_t *o, const struct cli_series *s)
{
	json_t *x, *rails, *t, *b;
	size_t k;
	unsigned i;

	if (s->err)
		return s->err;
	x = json_object();
	rails = json_array();
	t = json_array();
	b = json_array();
	for (i = 0; i < s->n_rails; i++)
		json_array_append_new(rails, cli_json_text(s->rail[i]));
	for (k = 0; k < s->n; k++) {
		json_t *row = json_array();

		json_array_append_new(t, json_integer((json_int_t)(s->t_ns[k] / 1000000)));
		for (i = 0; i < s->n_rails; i++)
			json_array_append_new(
				row, json_integer((json_int_t)s->bytes[k * s->n_rails + i]));
		json_array_append_new(b, row);
	}
	json_object_set_new(x, "interval_ms", json_integer((json_int_t)(s->interval_ns / 1000000)));
	json_object_set_new(x, "rails", rails);
	json_object_set_new(x, "t_ms", t);
	json_object_set_new(x, "bytes", b);
	json_object_set_new(o, "series", x);
	return 0;
}

void cli_series_progress(const struct eng_report *so_far, void *ctx)
{
	struct cli_series *s = ctx;

	s->last = *so_far;
	s->have_last = true;
	cli_series_add(s, rcp_now_ns(), so_far);
}

json_t *cli_series_failure(const struct cli_series *s)
{
	json_t *o = json_object();

	if (o && s->have_last)
		cli_report_json(o, &s->last, s->last.seconds);
	if (o && s->n)
		cli_series_json(o, s);
	return o;
}
