/*
 * profile.c - a plan saved as text, edited by hand, checked when loaded.
 *
 * Format (version 1): UTF-8 text, one "key = value" per line; '#' starts a
 * comment; blank lines are ignored. Keys before the first section apply to
 * the whole plan; each [worker] section is one worker thread:
 *
 *     qps_per_rail = 4            # 1..64, stripes (QPs) on every rail
 *     tos = 106                   # 0..255, as --tos
 *     ack_timeout = 14            # 1..31, as --ack-timeout
 *     retry_count = 7             # 1..7, as --retry-count
 *     connect_timeout = 5         # 1..3600 seconds, as --connect-timeout
 *
 * The last four, the fabric knobs, are optional: the plan carries them
 * (topo_plan.knobs) and the CLI applies each one the command line does not
 * give as an option.
 *
 *     [worker]
 *     node = 0                    # NUMA node, required
 *     cpus = 0-7,16-23            # default: the node's allowed CPUs
 *     rails = mlx5_0:1 mlx5_1:1   # DEV:PORT list, space or comma separated
 *     buffer_mib = 64             # default: 8 MiB per stripe
 *
 * Loading checks every line against the machine: a node that is missing or
 * that the process may not use, a CPU that is not an allowed CPU of that
 * node, a rail that is missing, not ACTIVE, or given to two workers. The
 * first problem is the error, as one sentence "FILE:LINE: ...".
 *
 * Threading: no shared state.
 */
#include "topology/topology.h"
#include "topology/topo_int.h"

#include "common/common.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct prof_worker {
	unsigned line; /* of its [worker] header */
	unsigned node_line, cpus_line, rails_line, buf_line;
	int node;
	struct topo_bitmap cpus;
	size_t n_rails;
	struct topo_rail_sel rails[TOPO_MAX_RAILS];
	unsigned buffer_mib;
};

/* The keys before the first [worker] section, in the order a profile is written. */
enum { G_QPS, G_TOS, G_ACK_TIMEOUT, G_RETRY_COUNT, G_CONNECT_TIMEOUT, G_N };

static const struct {
	const char *key;
	unsigned lo, hi;
	const char *what; /* in the sentence of a bad value */
} globals[G_N] = {
	[G_QPS] = {"qps_per_rail", 1, TOPO_MAX_QPS_PER_RAIL, "a number"},
	[G_TOS] = {"tos", 0, TOPO_MAX_TOS, "a traffic class"},
	[G_ACK_TIMEOUT] = {"ack_timeout", 1, TOPO_MAX_ACK_TIMEOUT, "an ACK timeout exponent"},
	[G_RETRY_COUNT] = {"retry_count", 1, TOPO_MAX_RETRY_COUNT, "a retry count"},
	[G_CONNECT_TIMEOUT] = {"connect_timeout", 1, TOPO_MAX_CONNECT_TIMEOUT,
			       "a number of seconds"},
};

struct prof {
	const char *path;
	unsigned line; /* being parsed */
	unsigned global[G_N], global_line[G_N];
	size_t n_workers;
	struct prof_worker w[TOPO_MAX_NODES];
};

static int perr(const struct prof *pf, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(const struct prof *pf, unsigned line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return rcp_err(-EINVAL, "%s:%u: %s", pf->path, line, msg);
}

static int parse_uint(const char *v, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long x;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || *end || x < lo || x > hi)
		return -EINVAL;
	*out = (unsigned)x;
	return 0;
}

static int worker_rails(struct prof *pf, struct prof_worker *w, const char *v)
{
	struct topo_opts tmp;

	w->n_rails = 0;
	if (*v == '\0')
		return 0; /* a worker without rails, as --numa can ask for */
	if (topo_opts_parse_rails(v, &tmp) != 0)
		return perr(pf, pf->line, "rails: '%s' is not a list of DEV:PORT", v);
	memcpy(w->rails, tmp.rails, tmp.n_rails * sizeof(tmp.rails[0]));
	w->n_rails = tmp.n_rails;
	return 0;
}

/* One key of a [worker] section. */
static int worker_key(struct prof *pf, struct prof_worker *w, const char *k, const char *v)
{
	unsigned *line = !strcmp(k, "node")	    ? &w->node_line
			 : !strcmp(k, "cpus")	    ? &w->cpus_line
			 : !strcmp(k, "rails")	    ? &w->rails_line
			 : !strcmp(k, "buffer_mib") ? &w->buf_line
						    : NULL;
	unsigned x;

	if (!line)
		return perr(pf, pf->line,
			    "unknown key '%s' in a [worker] section "
			    "(known: node, cpus, rails, buffer_mib)",
			    k);
	if (*line)
		return perr(pf, pf->line, "'%s' is already set on line %u", k, *line);
	*line = pf->line;
	if (!strcmp(k, "node")) {
		/* Any node a worker can have: an id the binding's bitmaps hold, not a count. */
		if (parse_uint(v, 0, TOPO_MAX_CPUS - 1, &x))
			return perr(pf, pf->line, "node: '%s' is not a NUMA node number", v);
		w->node = (int)x;
	} else if (!strcmp(k, "cpus")) {
		if (topo_bitmap_parse(v, &w->cpus) || topo_bitmap_count(&w->cpus) == 0)
			return perr(pf, pf->line, "cpus: '%s' is not a CPU list like 0-7,16", v);
	} else if (!strcmp(k, "rails")) {
		return worker_rails(pf, w, v);
	} else if (parse_uint(v, 1, TOPO_MAX_BUFFER_MIB, &w->buffer_mib)) {
		return perr(pf, pf->line, "buffer_mib: '%s' is not a number from 1 to %d", v,
			    TOPO_MAX_BUFFER_MIB);
	}
	return 0;
}

static int global_key(struct prof *pf, const char *k, const char *v)
{
	size_t i;

	for (i = 0; i < G_N && strcmp(k, globals[i].key) != 0; i++)
		;
	if (i == G_N)
		return perr(pf, pf->line,
			    "unknown key '%s' before the first [worker] section (known: "
			    "qps_per_rail, tos, ack_timeout, retry_count, connect_timeout)",
			    k);
	if (pf->global_line[i])
		return perr(pf, pf->line, "'%s' is already set on line %u", k, pf->global_line[i]);
	if (parse_uint(v, globals[i].lo, globals[i].hi, &pf->global[i]))
		return perr(pf, pf->line, "%s: '%s' is not %s from %u to %u", k, v, globals[i].what,
			    globals[i].lo, globals[i].hi);
	pf->global_line[i] = pf->line;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse_line(struct prof *pf, char *line)
{
	char *eq, *s = trim(line);

	s[strcspn(s, "#")] = '\0';
	s = trim(s);
	if (*s == '\0')
		return 0;
	if (*s == '[') {
		if (strcmp(s, "[worker]") != 0)
			return perr(pf, pf->line, "unknown section '%s' (only [worker])", s);
		if (pf->n_workers == TOPO_MAX_NODES)
			return perr(pf, pf->line, "more than %d workers", TOPO_MAX_NODES);
		memset(&pf->w[pf->n_workers], 0, sizeof(pf->w[0]));
		pf->w[pf->n_workers++].line = pf->line;
		return 0;
	}
	eq = strchr(s, '=');
	if (!eq)
		return perr(pf, pf->line, "expected 'key = value', found '%s'", s);
	*eq = '\0';
	if (pf->n_workers == 0)
		return global_key(pf, trim(s), trim(eq + 1));
	return worker_key(pf, &pf->w[pf->n_workers - 1], trim(s), trim(eq + 1));
}

static int prof_read(struct prof *pf)
{
	/* Longer than the longest line railcp writes: 64 rails of 63-character names. */
	char line[8192];
	FILE *f = fopen(pf->path, "re");
	int err = 0;

	if (!f)
		return rcp_err(-errno, "cannot open profile %s: %s", pf->path, strerror(errno));
	while (!err && fgets(line, sizeof(line), f)) {
		pf->line++;
		if (!strchr(line, '\n') && !feof(f))
			err = perr(pf, pf->line, "line longer than %zu characters",
				   sizeof(line) - 2);
		else
			err = parse_line(pf, line);
	}
	if (!err && ferror(f))
		err = rcp_err(-EIO, "cannot read profile %s", pf->path);
	fclose(f);
	if (!err && pf->n_workers == 0)
		err = rcp_err(-EINVAL, "%s: the profile has no [worker] section", pf->path);
	return err;
}

/* The worker's node must exist and be usable, its CPUs allowed CPUs of it. */
static int check_node(const struct prof *pf, const struct topo_machine *m, struct prof_worker *w,
		      size_t wi)
{
	char allowed[256];
	int i, cpu;
	size_t k;

	if (!w->node_line)
		return perr(pf, w->line, "this [worker] section has no 'node = N' line");
	i = topo_machine_node_index(m, w->node);
	if (i < 0)
		return perr(pf, w->node_line, "node %d is not on %s", w->node, m->source);
	if (!m->node[i].usable)
		return perr(pf, w->node_line, "node %d cannot be used: %s", w->node,
			    m->node[i].why);
	for (k = 0; k < wi; k++)
		if (pf->w[k].node == w->node)
			return perr(pf, w->node_line, "node %d already has a worker (line %u)",
				    w->node, pf->w[k].node_line);
	if (!w->cpus_line) {
		w->cpus = m->node[i].cpus;
		return 0;
	}
	if (topo_bitmap_subset(&w->cpus, &m->node[i].cpus))
		return 0;
	for (cpu = topo_bitmap_next(&w->cpus, 0);
	     topo_bitmap_isset(&m->node[i].cpus, (unsigned)cpu);)
		cpu = topo_bitmap_next(&w->cpus, (unsigned)cpu + 1);
	topo_bitmap_format(&m->node[i].cpus, allowed, sizeof(allowed));
	return perr(pf, w->cpus_line, "CPU %d is not an allowed CPU of node %d (allowed: %s)", cpu,
		    w->node, allowed);
}

/* Every rail exists, is ACTIVE, has a port, and belongs to one worker only. */
static int check_rails(const struct prof *pf, const struct topo_machine *m,
		       const struct prof_worker *w, size_t wi)
{
	size_t r, k, j;

	for (r = 0; r < w->n_rails; r++) {
		const struct topo_rail_sel *s = &w->rails[r];
		int i = topo_machine_rail_index(m, s->dev, s->port);

		if (s->port == 0)
			return perr(pf, w->rails_line, "rail %s has no port: write %s:1", s->dev,
				    s->dev);
		if (i < 0)
			return perr(pf, w->rails_line, "rail %s:%u is not on %s", s->dev, s->port,
				    m->source);
		if (!m->rail[i].active)
			return perr(pf, w->rails_line, "rail %s:%u is %s, not ACTIVE", s->dev,
				    s->port, m->rail[i].state);
		for (k = 0; k <= wi; k++)
			for (j = 0; j < (k == wi ? r : pf->w[k].n_rails); j++)
				if (!strcmp(pf->w[k].rails[j].dev, s->dev) &&
				    pf->w[k].rails[j].port == s->port)
					return perr(pf, w->rails_line,
						    "rail %s:%u is already "
						    "given on line %u",
						    s->dev, s->port, pf->w[k].rails_line);
	}
	return 0;
}

static int worker_node_cmp(const void *a, const void *b)
{
	return ((const struct prof_worker *)a)->node - ((const struct prof_worker *)b)->node;
}

static void prof_to_plan(const struct prof *pf, const struct topo_machine *m, unsigned qps,
			 unsigned buffer_mib, struct topo_plan *p)
{
	size_t wi, r;

	p->qps_per_rail = qps;
	for (wi = 0; wi < pf->n_workers; wi++) {
		const struct prof_worker *pw = &pf->w[wi];
		struct topo_worker *w = &p->worker[p->n_workers++];
		const struct topo_node *n = &m->node[topo_machine_node_index(m, pw->node)];

		w->node = pw->node;
		w->cpus = pw->cpus;
		w->first_rail = p->n_rails;
		w->n_rails = pw->n_rails;
		snprintf(w->why, sizeof(w->why), "profile line %u", pw->line);
		for (r = 0; r < pw->n_rails; r++) {
			struct topo_plan_rail *pr = &p->rail[p->n_rails++];
			const struct topo_rail *mr = &m->rail[topo_machine_rail_index(
				m, pw->rails[r].dev, pw->rails[r].port)];

			snprintf(pr->dev, sizeof(pr->dev), "%s", mr->dev);
			pr->port = mr->port;
			pr->gbps = mr->gbps;
			pr->numa_node = mr->numa_node;
			pr->worker = (unsigned)wi;
			pr->qps = qps;
			snprintf(pr->placement, sizeof(pr->placement), "profile line %u",
				 pw->rails_line);
		}
		w->buffer_bytes = buffer_mib	   ? (uint64_t)buffer_mib << 20
				  : pw->buffer_mib ? (uint64_t)pw->buffer_mib << 20
						   : topo__buffer_default(pw->n_rails, qps);
		w->page = topo__page_expect(m, n, w->buffer_bytes);
		p->buffer_total += w->buffer_bytes;
	}
}

int topo_profile_load(const char *path, const struct topo_machine *m, const struct topo_opts *opts,
		      struct topo_plan **plan_out)
{
	struct topo_plan *p = NULL;
	struct prof *pf;
	size_t wi, total = 0;
	unsigned qps;
	int err = -ENOMEM;

	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->path = path;
	err = prof_read(pf);
	for (wi = 0; !err && wi < pf->n_workers; wi++) {
		err = check_node(pf, m, &pf->w[wi], wi);
		err = err ? err : check_rails(pf, m, &pf->w[wi], wi);
		total += pf->w[wi].n_rails;
	}
	if (!err && total > TOPO_MAX_RAILS)
		err = rcp_err(-EINVAL, "%s: more than %d rails", path, TOPO_MAX_RAILS);
	if (err)
		goto out_free;
	qps = opts && opts->qps_per_rail ? opts->qps_per_rail
	      : pf->global[G_QPS]	 ? pf->global[G_QPS]
					 : TOPO_DEFAULT_QPS_PER_RAIL;
	qsort(pf->w, pf->n_workers, sizeof(pf->w[0]), worker_node_cmp);
	p = calloc(1, sizeof(*p));
	if (!p) {
		err = -ENOMEM;
		goto out_free;
	}
	prof_to_plan(pf, m, qps, opts ? opts->buffer_mib : 0, p);
	p->knobs = (struct topo_knobs){.tos_set = pf->global_line[G_TOS] != 0,
				       .tos = pf->global[G_TOS],
				       .ack_timeout = pf->global[G_ACK_TIMEOUT],
				       .retry_count = pf->global[G_RETRY_COUNT],
				       .connect_timeout = pf->global[G_CONNECT_TIMEOUT]};
	*plan_out = p;
out_free:
	free(pf);
	return err;
}

/* The knobs that are set, each as its key. */
static void knobs_write(FILE *f, const struct topo_knobs *k)
{
	const unsigned v[G_N] = {[G_TOS] = k->tos,
				 [G_ACK_TIMEOUT] = k->ack_timeout,
				 [G_RETRY_COUNT] = k->retry_count,
				 [G_CONNECT_TIMEOUT] = k->connect_timeout};
	size_t i;

	for (i = G_TOS; i < G_N; i++)
		if (v[i] || (i == G_TOS && k->tos_set))
			fprintf(f, "%s = %u\n", globals[i].key, v[i]);
}

static int profile_write(FILE *f, const struct topo_plan *plan, const struct topo_machine *m)
{
	/* The longest list of TOPO_MAX_CPUS CPUs ("0-1,3-4,...") is 2,673 characters. */
	char cpus[4096];
	/*
	 * The file's and the host's names through rcp_printable: a newline in
	 * either would end the comment, and a control byte would reach the
	 * terminal of whoever prints the file. Room for every byte as \xNN.
	 */
	char source[4 * sizeof(m->source)], host[4 * sizeof(m->host)];
	size_t w, r;

	rcp_printable(m->source, source, sizeof(source));
	rcp_printable(m->host, host, sizeof(host));
	fprintf(f,
		"# railcp profile, format 1: one [worker] section per worker thread.\n"
		"# Written by 'railcp topo --save-profile' for %s (host %s).\n"
		"# Edit freely; --profile FILE checks every line against the machine it runs on.\n"
		"\nqps_per_rail = %u\n",
		source, host, plan->qps_per_rail);
	knobs_write(f, &plan->knobs);
	for (w = 0; w < plan->n_workers; w++) {
		const struct topo_worker *wk = &plan->worker[w];

		topo_bitmap_format(&wk->cpus, cpus, sizeof(cpus));
		fprintf(f, "\n[worker]\nnode = %d\ncpus = %s\nrails =", wk->node, cpus);
		for (r = wk->first_rail; r < wk->first_rail + wk->n_rails; r++)
			fprintf(f, " %s:%u", plan->rail[r].dev, plan->rail[r].port);
		fprintf(f, "\nbuffer_mib = %" PRIu64 "\n", (uint64_t)(wk->buffer_bytes >> 20));
	}
	return ferror(f) ? -EIO : 0;
}

int topo_profile_save(const struct topo_plan *plan, const struct topo_machine *m, const char *path)
{
	FILE *f = fopen(path, "we");
	int err;

	if (!f)
		return rcp_err(-errno, "cannot write profile %s: %s", path, strerror(errno));
	err = profile_write(f, plan, m);
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (err)
		return rcp_err(err, "cannot write profile %s: %s", path, strerror(-err));
	return 0;
}
