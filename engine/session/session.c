/*
 * session.c - the session object both ends use (see session_int.h): its
 * job, the watch over the peer while the job runs, the end-of-job exchange,
 * teardown, and the TCP set-up of the control connection.
 *
 * While the job runs, the coordinator calls the watch every
 * ENG_PROGRESS_MS: a peer that closes the control connection, reports an
 * error or sends something unexpected, a link that rdma_cm reports
 * disconnected, or the cancel flag fails the job at once instead of waiting
 * for retries. A link the transport reports lost (its peer, port or device)
 * goes to the job, which takes its stripe down (failover) or fails. Each
 * stripe that went down here is told to the peer in a "lost" frame, and the
 * peer's "lost" takes ours down: the rail that failed cannot carry that
 * word, and a side with nothing to post would not notice. Beyond those, a
 * receiver expects one message, the sender's "done": it means every chunk
 * was credited back, so the receiver's job drains and ends. Once the job
 * has stopped, the watch still runs while the job waits for workers held by
 * file I/O, and then only tells the peer why this side stopped
 * (stopped_tell).
 *
 * Threading: see session_int.h.
 */
#include "engine/session/fallback.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

void eng__session_init(struct eng_session *s, enum eng_side side, const struct eng_transport *tr,
		       int fd, int timeout_ms)
{
	*s = (struct eng_session){.side = side,
				  .tr = tr,
				  .ctl = ENG_CTL_PLAIN(fd),
				  .timeout_ms = timeout_ms,
				  .peer_name = side == ENG_CLIENT ? "the server" : "the client"};
	s->ctl.peer = s->peer_name;
	rcp_steps_start(&s->steps);
}

int eng__session_rails(struct eng_session *s, const struct topo_plan *plan)
{
	if (plan->n_rails == 0)
		return rcp_err(-ENODEV, "the plan has no rail to use");
	return s->tr->rail_addrs(plan, s->addr);
}

static void setup_failed(void *ctx, unsigned link, const char *why);

int eng__session_job(struct eng_session *s, const struct topo_plan *plan, unsigned n_slots)
{
	int err = eng__job_create(s->role, plan, n_slots, s->chunk, s->tr->pinned, &s->job);
	struct eng_job_opts o = {.token = eng__seal_token(s->tokens, ENG_TOKEN_JOB, 0),
				 .failover = !s->no_failover,
				 .stall_ms = s->stall_ms > 0 ? (unsigned)s->stall_ms : 0,
				 .rail_stall_ms = s->rail_stall_ms < 0 ? 0
						  : s->rail_stall_ms > 0
							  ? (unsigned)s->rail_stall_ms
							  : ENG_RAIL_STALL_MS,
				 .watch = s->ctl.fd >= 0,
				 .watch_fd = s->ctl.fd};
	unsigned i;

	if (err)
		return err;
	eng__job_configure(s->job, &o);
	for (i = 0; i < eng__job_stripes(s->job); i++)
		s->peer_link[i] = i; /* the server's own numbers; a client's connect sets its own */
	/* The server's links are the ones asked for: each admits its own token only. */
	for (i = 0; s->side == ENG_SERVER && i < eng__job_stripes(s->job); i++)
		eng__job_link(s->job, i)->token = eng__seal_token(s->tokens, ENG_TOKEN_LINK, i);
	if (s->files)
		eng__files_attach(s->files, s->job);
	else
		eng__bench_attach(s->job, s->bench_bytes, s->chunk);
	eng__job_conn_cfg(s->job, &s->conn_cfg);
	if (!s->no_failover) { /* a link the server cannot accept is left out, not fatal */
		s->conn_cfg.link_failed = setup_failed;
		s->conn_cfg.link_failed_ctx = s;
	}
	s->conn_cfg.connect_timeout_ms = s->connect_timeout_ms;
	s->conn_cfg.qp = s->qp;
	/* Keyed, chunks are sealed where the wire needs it; a keyless session is loopback only. */
	if (s->key && (err = eng__seal_chunk_key(s->tokens, s->chunk_key)) != 0)
		return err;
	s->conn_cfg.chunk_key = s->key ? s->chunk_key : NULL;
	return s->tr->conn_create(&s->conn_cfg, &s->conn);
}

/* A stripe's "lost" frame: the peer's number for it and why; setup: it never came up here. */
static int lost_send(struct eng_session *s, unsigned i, const char *why, bool setup)
{
	json_t *m = eng__proto_msg(ENG_MSG_LOST, false);
	int err;

	if (!m)
		return -ENOMEM;
	json_object_set_new(m, ENG_KEY_STRIPE, json_integer(s->peer_link[i]));
	json_object_set_new(m, ENG_KEY_MESSAGE, json_string(why));
	if (setup)
		json_object_set_new(m, ENG_KEY_SETUP, json_true());
	err = eng__proto_send(&s->ctl, m);
	json_decref(m);
	return err;
}

int eng__session_link_left_out(struct eng_session *s, unsigned i, const char *why)
{
	char text[256];

	if (i >= eng__job_stripes(s->job) || s->link_told[i])
		return 0;
	snprintf(text, sizeof(text), "%s", why);
	eng__job_link_unconnected(s->job, i, text);
	s->link_told[i] = true;
	return lost_send(s, i, text, true);
}

/* The transport gave up a link while accepting: left out, the client told (errors: later). */
static void setup_failed(void *ctx, unsigned link, const char *why)
{
	struct eng_session *s = ctx;

	rcp_log(RCP_LOG_INFO, "stripe %u left out at set-up: %s", link, why);
	int err = eng__session_link_left_out(s, link, why);

	if (err && !s->setup_err)
		s->setup_err = err; /* accept_all goes on; its caller fails with this */
}

int eng__session_link_heard(struct eng_session *s, uint64_t n, const char *why)
{
	char esc[256], text[320];
	unsigned i;

	for (i = 0; i < eng__job_stripes(s->job) && s->peer_link[i] != n; i++)
		;
	if (i == eng__job_stripes(s->job))
		return rcp_err(-EPROTO,
			       "%s said stripe %" PRIu64 " was lost, which it does not have",
			       s->peer_name, n);
	snprintf(text, sizeof(text), "%s gave it up: %s", s->peer_name,
		 rcp_printable(why ? why : "(no reason given)", esc, sizeof(esc)));
	if (s->no_failover)
		return rcp_err(-ECONNRESET, "stripe %u: %s", i, text);
	if (s->link_told[i])
		return 0;	/* left out here already */
	s->link_told[i] = true; /* it knows */
	if (s->tr->abandon(s->conn, i))
		eng__job_link_gone_at_setup(s->job, i, text); /* connected here, not there */
	else
		eng__job_link_unconnected(s->job, i, text);
	return 0;
}

int eng__session_any_connected(struct eng_session *s)
{
	struct eng_report r;
	char all[600];
	size_t used = 0;
	unsigned k;

	if (eng__job_stripes_alive(s->job) > 0)
		return 0;
	s->setup_down = true;
	eng__job_report(s->job, &r);
	all[0] = '\0';
	for (k = 0; k < r.n_rails && used < sizeof(all); k++)
		if (r.rail[k].left_out_why[0])
			used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s: %s",
						 used ? "; " : "", r.rail[k].name,
						 r.rail[k].left_out_why);
	return rcp_err(-ENETUNREACH, "no rail connected to %s (%s)", s->peer_name, all);
}

/* One map of the receiver's, of len bytes over n items, given to apply. */
static int map_recv(struct eng_session *s, const char *type, size_t n, size_t len, bool chunks)
{
	uint8_t *bits = malloc(len);
	int err = bits ? 0 : rcp_err(-ENOMEM, "out of memory for a map of %zu bytes", len);

	if (!err)
		err = eng__map_recv(&s->ctl, s->timeout_ms, type, n, bits, len);
	if (!err && chunks)
		err = eng__kept_confirm(s, bits);
	else if (!err)
		err = eng__files_skip(s->files, bits);
	free(bits);
	return err;
}

int eng__session_maps_recv(struct eng_session *s, bool update, bool partial)
{
	int err = 0;

	if (update)
		err = map_recv(s, ENG_MSG_SKIP, eng__files_manifest(s->files)->n,
			       eng__files_map_len(s->files), false);
	/* Over the plan as the skip left it, as the receiver made it; confirmed chunk by chunk. */
	if (!err && partial)
		err = map_recv(s, ENG_MSG_KEPT, eng__files_chunks(s->files),
			       eng__files_kept_map_len(s->files), true);
	return err;
}

int eng__session_maps_send(struct eng_session *s, const uint8_t *holds, const uint8_t *kept)
{
	int err = 0;

	if (holds)
		err = eng__map_send(&s->ctl, ENG_MSG_SKIP, holds, eng__files_map_len(s->files));
	if (!err && kept)
		err = eng__map_send(&s->ctl, ENG_MSG_KEPT, kept, eng__files_kept_map_len(s->files));
	if (!err && kept)
		err = eng__kept_send(s, kept);
	if (!err)
		err = eng__files_prepare(s->files);
	return err;
}

/* The transport saw a link lose its peer, port or device: the job takes it down. */
static void link_lost(void *ctx, unsigned link, const char *why)
{
	eng__job_link_lost(ctx, link, why);
}

/*
 * The peer's "lost": its side of one of our stripes went down, so ours goes
 * down too; one it gave up while it connected (flagged "setup") counts as
 * left out at set-up if it has carried nothing.
 */
static int lost_heard(struct eng_session *s, const json_t *msg)
{
	const char *why = json_string_value(json_object_get(msg, ENG_KEY_MESSAGE));
	bool setup = json_is_true(json_object_get(msg, ENG_KEY_SETUP));
	char esc[256], text[320];
	uint64_t n;
	unsigned i;
	int err = eng__proto_get_u64(msg, ENG_KEY_STRIPE, &n);

	if (err)
		return err;
	for (i = 0; i < eng__job_stripes(s->job) && s->peer_link[i] != n; i++)
		;
	if (i == eng__job_stripes(s->job))
		return rcp_err(-EPROTO,
			       "%s said stripe %" PRIu64 " was lost, which it does not have",
			       s->peer_name, n);
	s->link_told[i] = true; /* it knows */
	snprintf(text, sizeof(text), "%s %s: %s", s->peer_name,
		 setup ? "gave it up" : "lost its side",
		 rcp_printable(why ? why : "(no reason given)", esc, sizeof(esc)));
	if (setup)
		eng__job_link_gone_at_setup(s->job, i, text);
	else
		eng__job_link_lost(s->job, i, text);
	return 0;
}

/*
 * Tell the peer of each stripe that went down here since the last look: a
 * peer with nothing to post on its side of it would wait for credits.
 */
static int lost_tell(struct eng_session *s)
{
	char why[200];
	unsigned i;
	int err = 0;

	for (i = 0; i < eng__job_stripes(s->job) && !err; i++) {
		if (s->link_told[i] || !eng__job_link_down(s->job, i, why, sizeof(why)))
			continue;
		s->link_told[i] = true;
		err = lost_send(s, i, why, false);
	}
	return err;
}

/* A frame during the transfer: 0 when it was due (*kept: the message is held), else -errno. */
static int heard(struct eng_session *s, json_t *msg, bool *kept)
{
	const char *type = json_string_value(json_object_get(msg, ENG_KEY_TYPE));

	*kept = false;
	if (type && strcmp(type, ENG_MSG_LOST) == 0)
		return lost_heard(s, msg);
	if (type && strcmp(type, ENG_MSG_DONE) == 0 && s->role == ENG_RECEIVER) {
		s->done = msg;
		*kept = true;
		eng__job_drain(s->job); /* the sender has every credit back */
		return 0;
	}
	return rcp_err(-EPROTO, "%s sent a message in the middle of the transfer", s->peer_name);
}

/*
 * A receiver that has every chunk waits for the sender's "done" alone: a
 * control step, held to --timeout like the others. Without this deadline
 * the wait ended only at the stall limit (60 s, and 3 s more for the peer's
 * reason) with a sentence blaming the fabric (test_session_phases.c,
 * test_finish_client_silent).
 */
static void done_deadline(struct eng_session *s, struct eng_job *job)
{
	if (s->role != ENG_RECEIVER || s->done || eng__job_stopped(job) ||
	    eng__job_done_chunks(job) < eng__job_chunks(job))
		return;
	if (!s->all_in_ns)
		s->all_in_ns = rcp_now_ns();
	else if (rcp_now_ns() - s->all_in_ns > (uint64_t)s->timeout_ms * 1000000ull)
		eng__job_fail(job, -ETIMEDOUT, "%s did not answer in time (waiting for its '%s')",
			      s->peer_name, ENG_MSG_DONE);
}

/*
 * Called once the job has stopped. A job stopped by this side's own failure (its disk stalled, a
 * file failed, an interruption) tells the peer at once, while eng__job_run still waits for its
 * workers: one held by a hung disk can keep this side there far past the peer's stall limit, and
 * the peer should end with this side's reason, not with its own symptom. A failure on the fabric is
 * told after the join by eng__session_run, which also waits for the peer's reason; one the peer
 * reported (ECONNABORTED) needs no answer. (To a peer that went away the send fails, as it would
 * after the join.)
 */
static void stopped_tell(struct eng_session *s, struct eng_job *job)
{
	char text[ENG_JOB_ERR_LEN];
	int err;

	if (s->err_sent || s->ctl.fd < 0)
		return;
	err = eng__job_error(job, text, sizeof(text));
	if (!err || eng__job_fabric_err(job) || err == -ECONNABORTED)
		return;
	eng__session_send_error(s, rcp_err(err, "%s", text));
}

static void session_watch(struct eng_job *job, void *ctx)
{
	struct eng_session *s = ctx;
	json_t *msg = NULL;
	bool from_peer = true, kept;
	unsigned frames = 0;
	int got = 0;

	if (s->cancel && atomic_load(s->cancel) && !eng__job_stopped(job))
		eng__job_fail(job, s->cancel_err, "%s", s->cancel_why);
	if (eng__job_stopped(job)) {
		/* Nothing else once stopped: a checkpoint or the progress could wait on the disk.
		 */
		stopped_tell(s, job);
		return;
	}
	/*
	 * After "done", only the drain is left. A "lost" per stripe and a "done"
	 * at most are due: a peer that sends more waits for the next look.
	 */
	while (!eng__job_stopped(job) && !s->done && frames++ <= eng__job_stripes(job) &&
	       (got = eng__proto_poll(&s->ctl, NULL, &msg)) == 1) {
		int bad = heard(s, msg, &kept);

		if (!kept)
			json_decref(msg);
		got = 0;
		if (bad) { /* a message out of turn: not the peer going away */
			eng__job_fail(job, bad, "%s", rcp_err_msg(bad));
			break;
		}
	}
	if (got == 0 && !eng__job_stopped(job)) {
		got = s->tr->check_events(s->conn, link_lost, job);
		from_peer = false;
	}
	if (got == 0 && !eng__job_stopped(job) && !s->done)
		got = lost_tell(s);
	if (got == 0)
		done_deadline(s, job);
	/* The peer's own sentence ("the server says: ...") needs no more; else it went away. */
	if (got < 0 &&
	    !(from_peer && got == -ECONNABORTED ? eng__job_fail(job, got, "%s", rcp_err_msg(got))
						: eng__job_fail(job, got, "%s went away: %s",
								s->peer_name, rcp_err_msg(got))) &&
	    from_peer && eng__job_fabric_err(job) && !s->peer_err) {
		/* Our rails failed as the peer failed: its own sentence names the cause. */
		s->peer_err = got;
		snprintf(s->peer_why, sizeof(s->peer_why), "%s", rcp_err_msg(got));
	}
	if (s->partial && s->role == ENG_RECEIVER && s->files && !s->checkpoint_ns)
		s->checkpoint_ns = rcp_now_ns(); /* the first, a period into the job */
	if (s->partial && s->role == ENG_RECEIVER && s->files &&
	    rcp_now_ns() - s->checkpoint_ns >= ENG_CHECKPOINT_MS * 1000000ull) {
		eng__files_checkpoint(s->files);
		s->checkpoint_ns = rcp_now_ns();
	}
	if (s->progress)
		s->progress(s, s->ctx);
}

/*
 * A job that failed on the fabric (a work completion error, a post that
 * failed, a stall) mostly shows that the peer failed first and tore its side
 * down; the peer says why on the control connection right after. Its
 * sentence names the cause, ours only the symptom, so it is waited for, a
 * little: a side that failed for a reason of its own sends at once. Ours
 * goes first, so that two sides that both failed on the fabric (every rail
 * down) do not each wait out the other.
 */
int eng__session_run(struct eng_session *s)
{
	int err = eng__job_run(s->job, session_watch, s), peer;
	char mine[512];

	if (!err || !eng__job_fabric_err(s->job) || s->ctl.fd < 0)
		return err;
	if (s->peer_err)
		return rcp_err(s->peer_err, "%s", s->peer_why);
	snprintf(mine, sizeof(mine), "%s", rcp_err_msg(err));
	eng__session_send_error(s, err);
	peer = eng__proto_peer_failed(&s->ctl, ENG_PEER_REASON_MS, s->peer_name);
	return peer ? peer : rcp_err(err, "%s", mine);
}

/* The files the peer's done or result says it opened O_DIRECT; 0 from an older peer. */
static uint64_t peer_direct(const json_t *m)
{
	json_int_t n = json_integer_value(json_object_get(m, ENG_KEY_DIRECT));

	return n > 0 ? (uint64_t)n : 0;
}

static int sender_end(struct eng_session *s)
{
	json_t *done = eng__proto_msg(ENG_MSG_DONE, false), *res = NULL;
	uint64_t got_chunks = 0, got_bytes = 0;
	struct eng_report rep;
	int err;

	eng__job_report(s->job, &rep);
	json_object_set_new(done, ENG_KEY_CHUNKS, json_integer((json_int_t)rep.chunks));
	json_object_set_new(done, ENG_KEY_BYTES, json_integer((json_int_t)rep.bytes));
	json_object_set_new(done, ENG_KEY_SECONDS, json_real(rep.seconds));
	if (s->files)
		json_object_set_new(done, ENG_KEY_DIRECT,
				    json_integer((json_int_t)eng__files_direct(s->files)));
	err = eng__proto_send(&s->ctl, done);
	json_decref(done);
	if (!err && s->del.on) /* a push's server removes the extras before its result */
		err = eng__delete_heard(s);
	if (!err)
		err = eng__proto_recv(&s->ctl, s->timeout_ms, ENG_MSG_RESULT, &res);
	if (!err && !(err = eng__proto_get_u64(res, ENG_KEY_CHUNKS, &got_chunks)))
		err = eng__proto_get_u64(res, ENG_KEY_BYTES, &got_bytes);
	if (!err)
		s->peer_files_direct = peer_direct(res);
	if (!err && (got_chunks != rep.chunks || got_bytes != rep.bytes))
		err = rcp_err(-EIO,
			      "the receiver checked %" PRIu64 " bytes in %" PRIu64
			      " chunks, but %" PRIu64 " bytes were sent",
			      got_bytes, got_chunks, rep.bytes);
	json_decref(res);
	return err;
}

static int receiver_end(struct eng_session *s)
{
	uint64_t sent_chunks, sent_bytes, total;
	struct eng_report rep;
	json_t *m;
	int err = 0;

	eng__job_report(s->job, &rep);
	total = rep.bytes_total;
	if (!s->done)
		err = eng__proto_recv(&s->ctl, s->timeout_ms, ENG_MSG_DONE, &s->done);
	if (err || (err = eng__proto_get_u64(s->done, ENG_KEY_CHUNKS, &sent_chunks)) != 0 ||
	    (err = eng__proto_get_u64(s->done, ENG_KEY_BYTES, &sent_bytes)) != 0)
		return err;
	s->peer_files_direct = peer_direct(s->done);
	if (sent_chunks != rep.chunks || sent_bytes != rep.bytes || sent_bytes != total)
		return rcp_err(-EIO,
			       "the sender sent %" PRIu64 " chunks (%" PRIu64
			       " bytes of the %" PRIu64 " announced), %" PRIu64 " chunks (%" PRIu64
			       " bytes) arrived",
			       sent_chunks, sent_bytes, total, rep.chunks, rep.bytes);
	rcp_steps_lap(&s->steps, RCP_STEP_END);
	err = s->files ? eng__files_finish(s->files) : 0;
	rcp_steps_lap(&s->steps, RCP_STEP_FINALIZE); /* a failed one too: not the end's */
	if (!err && s->del.on && s->files) /* every file is in: only now do the extras go */
		err = eng__delete_run(s, eng__files_root(s->files), eng__files_manifest(s->files),
				      false);
	if (err)
		return err;
	m = eng__proto_msg(ENG_MSG_RESULT, false);
	json_object_set_new(m, ENG_KEY_CHUNKS, json_integer((json_int_t)rep.chunks));
	json_object_set_new(m, ENG_KEY_BYTES, json_integer((json_int_t)rep.bytes));
	json_object_set_new(
		m, ENG_KEY_FILES,
		json_integer((json_int_t)(s->files ? eng__files_manifest(s->files)->n_files : 0)));
	if (s->files)
		json_object_set_new(m, ENG_KEY_DIRECT,
				    json_integer((json_int_t)eng__files_direct(s->files)));
	err = eng__proto_send(&s->ctl, m);
	json_decref(m);
	return err;
}

int eng__session_end(struct eng_session *s)
{
	int err = s->role == ENG_SENDER ? sender_end(s) : receiver_end(s);

	rcp_steps_lap(&s->steps, RCP_STEP_END);
	return err;
}

void eng__session_report(const struct eng_session *s, struct eng_report *r)
{
	eng__job_report(s->job, r);
	r->qp = s->qp;
	r->connect_timeout_ms = s->connect_timeout_ms;
	r->steps = s->steps;
	r->chunks_compared = s->compared;
	r->peer_hashed_bytes = s->peer_hashed_bytes;
	r->peer_hash_ns = s->peer_hash_ns;
	r->deleted = s->del.count;
	r->peer_files_direct = s->peer_files_direct;
	snprintf(r->transport, sizeof(r->transport), "%s", eng__transport_word(s->tr));
	if (s->files) {
		r->files = eng__files_done(s->files);
		r->files_total = eng__files_manifest(s->files)->n_files;
		eng__files_skipped(s->files, &r->files_skipped, &r->bytes_skipped);
		r->bytes_kept = eng__files_kept_bytes(s->files);
		r->files_direct = eng__files_direct(s->files);
		eng__files_hashed(s->files, &r->hashed_bytes, &r->hash_ns);
	}
}

void eng__session_send_error(struct eng_session *s, int err)
{
	if (s->err_sent || s->ctl.fd < 0)
		return;
	s->err_sent = true;
	/* A client says so when it goes on over tcp: on its own word, or the server's. */
	s->ctl.rails_down =
		eng__session_own_rails_down(s) || (s->side == ENG_CLIENT && s->ctl.peer_rails_down);
	eng__proto_send_error(&s->ctl, err,
			      err == -ECONNABORTED || (s->job && eng__job_fabric_err(s->job)));
}

void eng__session_fini(struct eng_session *s)
{
	/*
	 * The files first: workers and io helpers are joined (eng__job_run), so
	 * unfinished temporaries go, or with --partial (and in a copy that may go
	 * on over tcp) the records are written and the locks dropped, before the
	 * connections' teardown, which over RDMA can outlast the 2 s the next
	 * copy (the continuation over tcp, a re-run) waits for them (io/partial.c).
	 */
	eng__files_destroy(s->files);
	if (s->tr)
		s->tr->conn_destroy(s->conn);
	eng__job_destroy(s->job);
	json_decref(s->done);
	eng__delete_fini(&s->del);
	if (s->ctl.fd >= 0)
		close(s->ctl.fd);
	s->conn = NULL;
	s->job = NULL;
	s->files = NULL;
	s->done = NULL;
	OPENSSL_cleanse(&s->ctl, sizeof(s->ctl));
	OPENSSL_cleanse(s->tokens, sizeof(s->tokens));
	OPENSSL_cleanse(s->chunk_key, sizeof(s->chunk_key));
	s->ctl.fd = -1;
}

int eng__tcp_connect_timeout(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
	int flags = fcntl(fd, F_GETFL), soerr = 0, r;
	socklen_t sl = sizeof(soerr);
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};

	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	r = connect(fd, sa, len);
	if (r < 0 && errno == EINPROGRESS) {
		r = poll(&pfd, 1, timeout_ms);
		if (r == 0) {
			errno = ETIMEDOUT;
			r = -1;
		} else if (r > 0) {
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			errno = soerr;
			r = soerr ? -1 : 0;
		}
	}
	fcntl(fd, F_SETFL, flags);
	return r;
}

void eng__tcp_tune(int fd, int timeout_ms)
{
	int one = 1, idle = 10, intvl = 2, cnt = 3;
	unsigned user_timeout_ms = 30000; /* unacknowledged data: keepalive does not cover it */
	struct timeval snd = {.tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000};

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd)); /* a peer that stops reading */
}
