/*
 * report.c - figures of a transfer for people and for programs: the
 * progress line on a terminal, the summary per rail and per NUMA node
 * that bench and copies print when they end, and a server's session as a
 * JSON line (serve --json).
 */
#include "cli/report.h"

#include "common/common.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double cli_gbps(uint64_t bytes, double s)
{
	return s > 0 ? (double)bytes * 8 / s / 1e9 : 0;
}

double cli_mibps(uint64_t bytes, double s)
{
	return s > 0 ? (double)bytes / s / (1 << 20) : 0;
}

/* Bytes per NUMA node, summed over the rails its workers drove. */
static unsigned node_totals(const struct eng_report *r, int *node, uint64_t *bytes)
{
	unsigned i, k, n = 0;

	for (i = 0; i < r->n_rails; i++) {
		for (k = 0; k < n && node[k] != r->rail[i].node; k++)
			;
		if (k == n) {
			node[k] = r->rail[i].node;
			bytes[k] = 0;
			n++;
		}
		bytes[k] += r->rail[i].bytes;
	}
	return n;
}

json_t *cli_steps_json(const struct rcp_steps *s)
{
	json_t *o = json_object();
	unsigned i;

	for (i = 0; o && i < RCP_STEP_N; i++)
		json_object_set_new(o, rcp_step_name(i), json_real((double)s->ns[i] / 1e9));
	if (o)
		json_object_set_new(o, "fixed", json_real((double)rcp_steps_setup_ns(s) / 1e9));
	return o;
}

void cli_steps_log(const struct rcp_steps *s)
{
	char line[512];

	rcp_log(RCP_LOG_INFO, "steps: %s", rcp_steps_line(s, line, sizeof(line)));
}

void cli_report_json(json_t *o, const struct eng_report *r, double seconds)
{
	json_t *rails = json_array(), *nodes = json_array();
	int node[TOPO_MAX_RAILS];
	uint64_t nb[TOPO_MAX_RAILS];
	unsigned i, n;

	json_object_set_new(o, "bytes", json_integer((json_int_t)r->bytes));
	json_object_set_new(o, "seconds", json_real(seconds));
	json_object_set_new(o, "gbps", json_real(cli_gbps(r->bytes, seconds)));
	json_object_set_new(o, "mib_per_s", json_real(cli_mibps(r->bytes, seconds)));
	json_object_set_new(o, "chunk", json_integer(r->chunk));
	json_object_set_new(o, "transport", json_string(r->transport[0] ? r->transport : "rdma"));
	json_object_set_new(o, "stripes", json_integer(r->n_stripes));
	json_object_set_new(o, "slots_per_stripe", json_integer(r->n_slots));
	json_object_set_new(o, "verified", json_true());
	json_object_set_new(o, "failover", json_boolean(r->failover));
	json_object_set_new(o, "rails_failed", json_integer(r->rails_failed));
	json_object_set_new(o, "rails_left_out", json_integer(r->rails_left_out));
	json_object_set_new(o, "ack_timeout",
			    r->qp.ack_timeout ? json_integer(r->qp.ack_timeout) : json_null());
	json_object_set_new(o, "retry_count",
			    json_integer(r->qp.retry_count ? r->qp.retry_count : 7));
	json_object_set_new(o, "tos", r->qp.tos_set ? json_integer(r->qp.tos) : json_null());
	json_object_set_new(o, "connect_timeout",
			    r->connect_timeout_ms > 0 ? json_real(r->connect_timeout_ms / 1e3)
						      : json_null());
	if (r->file_io[0]) {
		json_object_set_new(o, "file_io", json_string(r->file_io));
		json_object_set_new(o, "helpers_per_worker", json_integer(r->helpers));
		json_object_set_new(o, "io_depth", json_integer(r->io_depth));
	}
	for (i = 0; i < r->n_rails; i++) {
		json_t *x = json_object();

		json_object_set_new(x, "name", cli_json_text(r->rail[i].name));
		if (r->rail[i].addr[0])
			json_object_set_new(x, "address", json_string(r->rail[i].addr));
		json_object_set_new(x, "node", json_integer(r->rail[i].node));
		json_object_set_new(x, "peer", cli_json_text(r->rail[i].peer));
		json_object_set_new(x, "bytes", json_integer((json_int_t)r->rail[i].bytes));
		json_object_set_new(x, "gbps", json_real(cli_gbps(r->rail[i].bytes, seconds)));
		json_object_set_new(x, "mib_per_s",
				    json_real(cli_mibps(r->rail[i].bytes, seconds)));
		json_object_set_new(x, "stripes", json_integer(r->rail[i].stripes));
		json_object_set_new(x, "stripes_failed", json_integer(r->rail[i].stripes_lost));
		json_object_set_new(x, "failed", json_boolean(r->rail[i].failed));
		if (r->rail[i].failed)
			json_object_set_new(x, "failed_after_s", json_real(r->rail[i].failed_at));
		if (r->rail[i].why[0])
			json_object_set_new(x, "error", cli_json_text(r->rail[i].why));
		json_object_set_new(x, "left_out", json_boolean(r->rail[i].left_out));
		json_object_set_new(x, "stripes_left_out",
				    json_integer(r->rail[i].stripes_left_out));
		if (r->rail[i].left_out_why[0])
			json_object_set_new(x, "left_out_error",
					    cli_json_text(r->rail[i].left_out_why));
		if (r->rail[i].mtu) {
			json_object_set_new(x, "mtu", json_integer(r->rail[i].mtu));
			json_object_set_new(x, "peer_mtu", json_integer(r->rail[i].peer_mtu));
		}
		json_array_append_new(rails, x);
	}
	n = node_totals(r, node, nb);
	for (i = 0; i < n; i++) {
		json_t *x = json_object();

		json_object_set_new(x, "node", json_integer(node[i]));
		json_object_set_new(x, "bytes", json_integer((json_int_t)nb[i]));
		json_object_set_new(x, "gbps", json_real(cli_gbps(nb[i], seconds)));
		json_array_append_new(nodes, x);
	}
	json_object_set_new(o, "rails", rails);
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "steps", cli_steps_json(&r->steps));
}

/*
 * A rail whose ends' MTUs differ (both used the smaller), one left out at
 * set-up (why), and one that lost stripes (queue pairs) mid-transfer:
 * when, why, and that the others carried its chunks.
 */
static void rail_notes_print(FILE *f, const struct eng_rail_report *rr)
{
	if (rr->mtu && rr->peer_mtu && rr->mtu != rr->peer_mtu)
		fprintf(f,
			"    MTU %u here and %u at the peer: %u used; give both ends' network "
			"devices the same MTU for the larger\n",
			rr->mtu, rr->peer_mtu, rr->mtu < rr->peer_mtu ? rr->mtu : rr->peer_mtu);
	if (rr->left_out)
		fprintf(f, "    left out at set-up: %s\n", rr->left_out_why);
	else if (rr->stripes_left_out)
		fprintf(f, "    %u of its %u stripes left out at set-up: %s\n",
			rr->stripes_left_out, rr->stripes, rr->left_out_why);
	if (rr->failed)
		fprintf(f,
			"    failed after %.1f s, its chunks sent again on the other rails: %s\n",
			rr->failed_at, rr->why);
	else if (rr->stripes_lost)
		fprintf(f, "    %u of its %u stripes failed, their chunks sent again: %s\n",
			rr->stripes_lost, rr->stripes, rr->why);
}

/* The ACK timeout exponent n as a time ("4.096 us x 2^14 = 67.1 ms"), or "rdma_cm's". */
static const char *ack_str(unsigned n, char *buf, size_t len)
{
	double us = 4.096 * (double)(1ull << (n < 40 ? n : 40));

	if (!n)
		snprintf(buf, len, "rdma_cm's");
	else if (us < 1000)
		snprintf(buf, len, "4.096 us x 2^%u = %.1f us", n, us);
	else if (us < 1e6)
		snprintf(buf, len, "4.096 us x 2^%u = %.1f ms", n, us / 1e3);
	else
		snprintf(buf, len, "4.096 us x 2^%u = %.1f s", n, us / 1e6);
	return buf;
}

/* Milliseconds as seconds for a sentence: "3600 s", "0.4 s". */
static const char *secs_str(int ms, char *buf, size_t len)
{
	if (ms % 1000 == 0)
		snprintf(buf, len, "%d s", ms / 1000);
	else
		snprintf(buf, len, "%g s", ms / 1e3);
	return buf;
}

void cli_report_print(FILE *f, const struct eng_report *r, double seconds)
{
	int node[TOPO_MAX_RAILS];
	uint64_t nb[TOPO_MAX_RAILS];
	char sz[32], ack[64], secs[32];
	unsigned i, n;

	for (i = 0; i < r->n_rails; i++) {
		cli_size_str(r->rail[i].bytes, sz, sizeof(sz));
		fprintf(f, "  rail %-10s node %-2d -> %-10s %10s  %.3f Gb/s  %.1f MiB/s\n",
			r->rail[i].name, r->rail[i].node, r->rail[i].peer, sz,
			cli_gbps(r->rail[i].bytes, seconds), cli_mibps(r->rail[i].bytes, seconds));
		rail_notes_print(f, &r->rail[i]);
	}
	n = node_totals(r, node, nb);
	for (i = 0; i < n; i++) {
		cli_size_str(nb[i], sz, sizeof(sz));
		fprintf(f, "  node %-2d %10s  %.3f Gb/s\n", node[i], sz, cli_gbps(nb[i], seconds));
	}
	cli_size_str(r->chunk, sz, sizeof(sz));
	fprintf(f, "  %u stripes (%s), %u slots of %s per stripe\n", r->n_stripes,
		strcmp(r->transport, "tcp") == 0 ? "TCP connections" : "queue pairs", r->n_slots,
		sz);
	if (r->qp.ack_timeout || r->qp.retry_count)
		fprintf(f, "  queue pairs: ACK timeout %s, %u retries\n",
			ack_str(r->qp.ack_timeout, ack, sizeof(ack)),
			r->qp.retry_count ? r->qp.retry_count : 7);
	if (r->qp.tos_set)
		fprintf(f, "  traffic class (--tos): %u\n", r->qp.tos);
	if (r->connect_timeout_ms > 0 && r->connect_timeout_ms != ENG_CONNECT_TIMEOUT_MS_DEFAULT)
		fprintf(f,
			"  each stripe connects within %s (--connect-timeout, at most --timeout)\n",
			secs_str(r->connect_timeout_ms, secs, sizeof(secs)));
	if (r->file_io[0])
		fprintf(f, "  file I/O: %s\n", r->file_io);
}

void cli_fallback_json(json_t *o, const struct eng_report *r)
{
	json_t *x;

	if (!r->fell_back)
		return;
	x = json_object();
	json_object_set_new(x, "from", json_string(r->fallback_from));
	json_object_set_new(x, "bytes", json_integer((json_int_t)r->fallback_bytes));
	json_object_set_new(x, "setup", json_boolean(r->fallback_setup));
	json_object_set_new(x, "error", cli_json_text(r->fallback_why));
	json_object_set_new(o, "fallback", x);
}

void cli_fallback_print(FILE *f, const struct eng_report *r)
{
	char moved[32], kept[32];

	if (!r->fell_back)
		return;
	if (r->fallback_setup) {
		fprintf(f, "railcp: no %s rail connected (%s): the copy went over %s\n",
			r->fallback_from, r->fallback_why, r->transport);
		return;
	}
	cli_size_str(r->fallback_bytes, moved, sizeof(moved));
	cli_size_str(r->bytes_kept, kept, sizeof(kept));
	fprintf(f,
		"railcp: every %s rail failed after %s (%s): the copy went on over %s; %s kept "
		"were confirmed by the sender (a keyed digest of each chunk) and not sent again\n",
		r->fallback_from, moved, r->fallback_why, r->transport, kept);
}

/* A rail's rate in the progress line, or that it failed. */
static const char *rate_or_failed(double rate, const struct eng_rail_report *rr)
{
	static __thread char buf[32];

	if (rr->failed)
		return "FAILED";
	if (rr->left_out)
		return "LEFT-OUT";
	snprintf(buf, sizeof(buf), "%.2f", rate * 8 / 1e9);
	return buf;
}

void cli_progress_update(struct cli_progress *p, const struct eng_report *r)
{
	uint64_t now = rcp_now_ns();
	double dt, left;
	char done[32], total[32], line[512];
	size_t o = 0;
	unsigned i;

	if (p->last_ns && now - p->last_ns < 250 * 1000000ull)
		return;
	dt = p->last_ns ? (double)(now - p->last_ns) / 1e9 : 0;
	/* Rates over the last interval, smoothed: what the link does now, not since the start. */
	if (dt > 0) {
		double inst = (double)(r->bytes - p->last_bytes) / dt;

		p->rate = p->rate > 0 ? 0.5 * p->rate + 0.5 * inst : inst;
		for (i = 0; i < r->n_rails && i < TOPO_MAX_RAILS; i++) {
			inst = (double)(r->rail[i].bytes - p->rail_last[i]) / dt;
			p->rail_rate[i] =
				p->rail_rate[i] > 0 ? 0.5 * p->rail_rate[i] + 0.5 * inst : inst;
		}
	}
	p->last_ns = now;
	p->last_bytes = r->bytes;
	for (i = 0; i < r->n_rails && i < TOPO_MAX_RAILS; i++)
		p->rail_last[i] = r->rail[i].bytes;
	cli_size_str(r->bytes, done, sizeof(done));
	cli_size_str(r->bytes_total, total, sizeof(total));
	o += (size_t)snprintf(line + o, sizeof(line) - o, "%s: %s of %s", p->label, done, total);
	if (r->files_total > r->files_skipped)
		o += (size_t)snprintf(line + o, sizeof(line) - o, "  %" PRIu64 "/%" PRIu64 " files",
				      r->files, r->files_total - r->files_skipped);
	o += (size_t)snprintf(line + o, sizeof(line) - o, "  %.2f Gb/s", p->rate * 8 / 1e9);
	left = p->rate > 0 && r->bytes_total > r->bytes
		       ? (double)(r->bytes_total - r->bytes) / p->rate
		       : 0;
	if (left > 0 && left < 360000)
		o += (size_t)snprintf(line + o, sizeof(line) - o, "  ETA %d:%02d", (int)left / 60,
				      (int)left % 60);
	for (i = 0; i < r->n_rails && i < TOPO_MAX_RAILS && o < sizeof(line); i++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s %s", i ? "  " : "  [",
				      r->rail[i].name,
				      rate_or_failed(p->rail_rate[i], &r->rail[i]));
	if (r->n_rails && o < sizeof(line))
		snprintf(line + o, sizeof(line) - o, " Gb/s]");
	fprintf(stdout, "\r\033[K%s", line);
	fflush(stdout);
}

void cli_progress_clear(const struct cli_progress *p)
{
	if (p->last_ns) {
		fputs("\r\033[K", stdout);
		fflush(stdout);
	}
}

/* "2026-11-26T12:58:48.123Z" for seconds since the epoch. */
static json_t *utc_json(double t)
{
	time_t sec = (time_t)t;
	struct tm tm;
	char buf[96];
	int ms = (int)((t - (double)sec) * 1000) % 1000;

	if (!gmtime_r(&sec, &tm))
		return json_null();
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms < 0 ? 0 : ms);
	return json_string(buf);
}

json_t *cli_session_json(const struct eng_session_record *r)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "session", json_integer(r->id));
	json_object_set_new(o, "peer", cli_json_text(r->peer));
	json_object_set_new(o, "job", cli_json_text(r->job));
	json_object_set_new(o, "what", cli_json_text(r->what));
	json_object_set_new(o, "start", utc_json(r->start));
	json_object_set_new(o, "end", utc_json(r->end));
	json_object_set_new(o, "bytes", json_integer((json_int_t)r->bytes));
	json_object_set_new(o, "seconds", json_real(r->seconds));
	json_object_set_new(o, "gbps", json_real(cli_gbps(r->bytes, r->seconds)));
	json_object_set_new(o, "result", json_string(r->err ? "failed" : "ok"));
	json_object_set_new(o, "error", cli_json_text(r->error));
	if (r->steps)
		json_object_set_new(o, "steps", cli_steps_json(r->steps));
	return o;
}

json_t *cli_queue_json(const struct eng_queue_event *ev)
{
	static const char *const event[] = {[ENG_QUEUE_JOINED] = "queued",
					    [ENG_QUEUE_ADMITTED] = "admitted",
					    [ENG_QUEUE_REFUSED] = "refused"};
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "session", json_integer(ev->id));
	json_object_set_new(o, "peer", cli_json_text(ev->peer));
	json_object_set_new(o, "event", json_string(event[ev->kind]));
	json_object_set_new(o, "time", utc_json(ev->time));
	json_object_set_new(o, "place", json_integer(ev->place));
	json_object_set_new(o, "of", json_integer(ev->of));
	if (ev->kind == ENG_QUEUE_JOINED) {
		json_object_set_new(o, "reason", cli_json_text(ev->reason));
		return o;
	}
	json_object_set_new(o, "waited_ms", json_integer((json_int_t)ev->waited_ms));
	json_object_set_new(o, "error", cli_json_text(ev->reason));
	return o;
}

/* The kept chunks' comparison (--partial, -c) in the --json object o; push: this end sends. */
void cli_hashed_json(json_t *o, const struct eng_report *r, bool push)
{
	uint64_t sb = push ? r->hashed_bytes : r->peer_hashed_bytes;
	uint64_t rb = push ? r->peer_hashed_bytes : r->hashed_bytes;
	uint64_t sn = push ? r->hash_ns : r->peer_hash_ns, rn = push ? r->peer_hash_ns : r->hash_ns;

	json_object_set_new(o, "chunks_compared", json_integer((json_int_t)r->chunks_compared));
	json_object_set_new(o, "chunks_sent", json_integer((json_int_t)r->chunks));
	json_object_set_new(o, "hashed_bytes_sender", json_integer((json_int_t)sb));
	json_object_set_new(o, "hashed_bytes_receiver", json_integer((json_int_t)rb));
	json_object_set_new(o, "hash_seconds_sender", json_real((double)sn / 1e9));
	json_object_set_new(o, "hash_seconds_receiver", json_real((double)rn / 1e9));
}

/* -c's lines of the summary; push: this end sends. */
void cli_checksum_print(FILE *f, const struct eng_report *r, bool push)
{
	char kept[32], snd[32], rcv[32];

	cli_size_str(r->bytes_kept, kept, sizeof(kept));
	cli_size_str(push ? r->hashed_bytes : r->peer_hashed_bytes, snd, sizeof(snd));
	cli_size_str(push ? r->peer_hashed_bytes : r->hashed_bytes, rcv, sizeof(rcv));
	fprintf(f,
		"railcp: -c: %llu chunks compared (a keyed digest of each at both ends), %llu "
		"sent; %s at the destination matched and were not sent\n",
		(unsigned long long)r->chunks_compared, (unsigned long long)r->chunks, kept);
	fprintf(f,
		"railcp: -c: the sender read and hashed %s in %.3f s, the receiver %s in %.3f s "
		"(its copy of the old files included)\n",
		snd, (double)(push ? r->hash_ns : r->peer_hash_ns) / 1e9, rcv,
		(double)(push ? r->peer_hash_ns : r->hash_ns) / 1e9);
}
