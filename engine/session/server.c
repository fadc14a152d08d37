/*
 * server.c - the server's end of one session: railcp serve receives bench
 * and push jobs and sends pull jobs; copies read and write only beneath
 * --root.
 *
 * A session checks the client's hello and proof of the key before it
 * allocates anything or touches a file; a push then takes the file list,
 * opens the destination beneath the root (refusing names that lead out) and
 * creates directories, symlinks and empty files; a pull walks its sources
 * beneath the root and sends the file list. Then it sets up its stripes
 * (server_setup.c): it pairs each client stripe with a rail of this host
 * (pairing.c), builds a job with that many stripes per rail on the rails'
 * workers, listens on the rails it uses, and answers with where each
 * stripe must connect; a stripe that cannot be accepted, or that the
 * client says it could not connect, is left out (failover) and the other
 * side told at once. Every session's end - success or failure, with its
 * reason - is one line on stderr.
 *
 * Threading: each session runs on a detached thread of its own (and its
 * job's workers); the server's state is read-only to it but for the counts.
 */
#include "engine/session/server.h"

#include "engine/session/fallback.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The session takes on the terms of the proven client's hello. */
static int hello_check(struct srv_session *ss)
{
	struct eng_server *srv = ss->srv;
	struct eng_hello_terms t;
	int err = eng__hello_terms(ss->hello, srv->root != NULL, &t);
	bool tcp = false;

	if (!err)
		err = eng__transport_pick(ss->hello, eng__transport_word(srv->tr),
					  srv->tr_tcp != NULL, &tcp);
	if (err)
		return err;
	if (tcp && strcmp(eng__transport_word(srv->tr), "tcp")) { /* auto's rdma server: tcp too */
		ss->s.tr = srv->tr_tcp;
		ss->base = srv->o->plan_tcp;
		ss->addr = srv->addr_tcp;
	}
	ss->kind = t.kind;
	ss->bytes = t.bench_bytes;
	ss->root_flags = t.root_flags;
	ss->direct = t.direct;
	if (srv->o->no_direct) { /* the server's ceiling: through the page cache, always */
		ss->root_flags &= ~(unsigned)(IO_ROOT_DIRECT | IO_ROOT_DIRECT_AUTO);
		ss->direct = ENG_DIRECT_NEVER;
	}
	ss->s.role = t.role;
	ss->s.chunk = t.chunk;
	ss->s.partial = t.partial;
	ss->s.checksum = t.checksum;
	ss->s.fallback = eng__hello_flag(ss->hello, ENG_FLAG_FALLBACK);
	ss->s.bench_bytes = t.bench_bytes;
	/* --delete: a push's server removes; a pull's client does, on its side */
	ss->s.del.on = t.delete_extra && t.role == ENG_RECEIVER;
	ss->s.del.root_too = eng__hello_flag(ss->hello, ENG_FLAG_CONTENTS);
	return 0;
}

/* Push: the file list, the destination beneath the root, and what needs no data. */
static int push_prepare(struct srv_session *ss)
{
	struct io_manifest *m = NULL;
	uint8_t *holds = NULL, *kept = NULL;
	char *dst = NULL;
	uint64_t chunks;
	int err;

	if ((err = eng__proto_send_type(&ss->s.ctl, ENG_MSG_READY)) != 0 ||
	    (err = eng__proto_get_u64(ss->hello, ENG_KEY_CHUNKS, &chunks)) != 0 ||
	    (err = eng__proto_name(json_object_get(ss->hello, ENG_KEY_DST), "a destination",
				   &dst)) != 0)
		return err;
	io_path_printable(dst, ss->where);
	err = eng__manifest_recv(&ss->s.ctl, ss->s.timeout_ms, &m);
	if (!err && (err = eng__ranges_terms(ss->hello, m, &ss->range_job, &ss->range_step)) != 0)
		io_manifest_destroy(m);
	if (!err && ss->range_step != ENG_RANGES_LAND) { /* no data: the job's files settled */
		err = eng__ranges_answer(&ss->s, ss->srv->root, dst,
					 eng__hello_flag(ss->hello, ENG_FLAG_CONTENTS),
					 ss->root_flags, m, ss->range_job, ss->range_step);
		free(dst);
		return err;
	}
	if (!err && ss->s.del.on)
		err = eng__delete_filter_recv(&ss->s, ss->hello);
	if (!err && eng__hello_flag(ss->hello, ENG_FLAG_DRY_RUN)) {
		ss->bytes = m->data_bytes;
		err = eng__dry_answer(&ss->s, ss->srv->root, dst,
				      eng__hello_flag(ss->hello, ENG_FLAG_CONTENTS),
				      eng__hello_flag(ss->hello, ENG_FLAG_UPDATE), m);
		free(dst);
		return err;
	}
	if (!err) {
		ss->bytes = m->data_bytes;
		err = eng__dest_files(
			ss->srv->root, dst, eng__hello_flag(ss->hello, ENG_FLAG_CONTENTS),
			ss->root_flags, eng__ranges_dirs_last(ss->hello) ? ss->range_job : 0, m,
			ss->s.chunk, eng__hello_flag(ss->hello, ENG_FLAG_UPDATE) ? &holds : NULL,
			ss->s.partial ? &kept : NULL, &ss->s.files);
	}
	free(dst);
	if (!err)
		eng__files_range_job(ss->s.files, ss->range_job);
	if (!err && eng__files_chunks_all(ss->s.files) != chunks)
		err = rcp_err(-EPROTO,
			      "the sender planned %" PRIu64 " chunks, this server %" PRIu64, chunks,
			      eng__files_chunks_all(ss->s.files));
	if (!err)
		err = eng__session_maps_send(&ss->s, holds, kept);
	free(holds);
	free(kept);
	return err;
}

/* The pull's sources, names beneath the root: the client's first message after the proofs. */
static int pull_sources(struct srv_session *ss, char ***src_out, size_t *n_out,
			struct io_filter **f_out)
{
	json_t *msg = NULL, *arr;
	size_t i, n;
	char **src;
	int err = eng__proto_recv(&ss->s.ctl, ss->s.timeout_ms, ENG_MSG_SOURCES, &msg);

	if (!err && (err = eng__filter_recv(&ss->s, msg, f_out)) != 0)
		json_decref(msg);
	if (err)
		return err;
	arr = json_object_get(msg, ENG_KEY_SRC);
	n = json_array_size(arr);
	if (!json_is_array(arr) || n == 0 || n > ENG_MAX_PULL_SOURCES) {
		json_decref(msg);
		return rcp_err(-EINVAL, "a pull needs 1 to %d sources", ENG_MAX_PULL_SOURCES);
	}
	src = calloc(n, sizeof(*src));
	for (i = 0; src && i < n && !err; i++)
		err = eng__proto_name(json_array_get(arr, i), "a source", &src[i]);
	json_decref(msg);
	if (!src)
		return rcp_err(-ENOMEM, "out of memory for %zu sources", n);
	*src_out = src;
	*n_out = n;
	return err;
}

/* Pull: walk the sources beneath the root and send their file list. */
static int pull_prepare(struct srv_session *ss)
{
	struct io_manifest *m = NULL;
	struct io_root *root = NULL;
	struct io_filter *filter = NULL;
	char **src = NULL;
	size_t i, n = 0;
	int err = pull_sources(ss, &src, &n, &filter);

	if (!err) {
		io_path_printable(src[0], ss->where);
		err = io_manifest_walk_filtered(
			ss->srv->root, (const char *const *)src, n,
			eng__hello_flag(ss->hello, ENG_FLAG_RECURSIVE) ? IO_WALK_RECURSIVE : 0,
			NULL, filter, &m);
	}
	for (i = 0; i < n; i++)
		free(src[i]);
	free(src);
	io_filter_destroy(filter);
	if (!err)
		err = io_root_open_beneath(ss->srv->root, ".", &root);
	if (err) {
		io_manifest_destroy(m);
		return err;
	}
	ss->bytes = m->data_bytes;
	err = eng__files_create(ENG_SENDER, m, ss->s.chunk, root, eng__direct_io_flags(ss->direct),
				&ss->s.files);
	rcp_steps_lap(&ss->s.steps, RCP_STEP_WALK);
	if (!err)
		err = eng__manifest_send(&ss->s.ctl, eng__files_manifest(ss->s.files));
	if (!err && eng__hello_flag(ss->hello, ENG_FLAG_DRY_RUN) && !ss->s.partial)
		return 0; /* the client compares: the session ends here (-c, --partial: after the
			   * digests) */
	if (!err)
		err = eng__session_maps_recv(&ss->s, eng__hello_flag(ss->hello, ENG_FLAG_UPDATE),
					     ss->s.partial);
	return err;
}

/* "bench", "push of 12 files into "dst"", "pull of 3 files from "src"" for the log. */
static const char *session_what(const struct srv_session *ss, char *buf, size_t len)
{
	if (!ss->s.files)
		return ENG_JOB_BENCH;
	snprintf(buf, len, "%s of %" PRIu64 " files %s \"%s\"", ss->kind,
		 eng__files_manifest(ss->s.files)->n_files,
		 ss->s.role == ENG_SENDER ? "from" : "into", ss->where[0] ? ss->where : ".");
	return buf;
}

/* The exchange that ends a job, then the session's line in the log. */
static int session_end(struct srv_session *ss)
{
	struct eng_report rep;
	char what[IO_ESC_MAX + 64], removed[64] = "";
	double secs;
	int err = eng__session_end(&ss->s);
	unsigned up = 0, r;

	if (err)
		return err;
	eng__job_report(ss->s.job, &rep);
	for (r = 0; r < rep.n_rails; r++) /* as the start's line counts: not those left out */
		up += rep.rail[r].stripes - rep.rail[r].stripes_left_out;
	/* The sender's clock: its first post to its last credit, the transfer's real span. */
	secs = ss->s.role == ENG_SENDER
		       ? rep.seconds
		       : json_real_value(json_object_get(ss->s.done, ENG_KEY_SECONDS));
	ss->seconds = secs;
	if (ss->s.del.on)
		snprintf(removed, sizeof(removed), ", %" PRIu64 " entries removed (--delete)",
			 ss->s.del.count);
	rcp_log(RCP_LOG_NOTICE,
		"session %u from %s: %s done, %" PRIu64 " MiB over %u stripes "
		"verified%s; %.2f s, %.3f Gb/s as the sender measured",
		ss->id, ss->peer, session_what(ss, what, sizeof(what)), rep.bytes >> 20, up,
		removed, secs, secs > 0 ? rep.bytes * 8 / secs / 1e9 : 0);
	if (rep.file_io[0])
		rcp_log(RCP_LOG_INFO, "session %u: file I/O: %s", ss->id, rep.file_io);
	return 0;
}

/*
 * One more session if fewer than --max-sessions run, else false: the count
 * never passes the limit, not even for a moment (the log shows it), and a
 * session turned away is no session served (serving once goes on).
 */
static bool session_count(struct eng_server *srv)
{
	unsigned n = atomic_load(&srv->sessions);

	do {
		if (n >= srv->o->max_sessions)
			return false;
	} while (!atomic_compare_exchange_weak(&srv->sessions, &n, n + 1));
	return true;
}

double eng__wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The session's record for eng_serve_opts.session_end, before its job is gone. */
static void session_record(struct srv_session *ss, int err)
{
	const struct eng_serve_opts *o = ss->srv->o;
	struct eng_session_record rec = {.id = ss->id,
					 .peer = ss->peer,
					 .job = ss->kind,
					 .what = "",
					 .start = ss->start,
					 .err = err};
	char what[IO_ESC_MAX + 64];
	struct eng_report rep;

	if (!o->session_end)
		return;
	if (ss->kind) /* a copy that ended before its file list: its kind alone */
		rec.what = ss->s.files ? session_what(ss, what, sizeof(what)) : ss->kind;
	if (ss->s.job) {
		eng__job_report(ss->s.job, &rep);
		rec.bytes = rep.bytes;
		rec.seconds = err ? rep.seconds : ss->seconds;
	}
	rec.error = err ? rcp_err_msg(err) : NULL;
	rec.end = eng__wall_now();
	rec.steps = &ss->s.steps;
	o->session_end(&rec, o->ctx);
}

/* -v: where the session's time went, its teardown included. */
static void steps_log(struct srv_session *ss, int err)
{
	char line[512];

	rcp_steps_lap(&ss->s.steps, RCP_STEP_TEARDOWN);
	if (!err)
		rcp_log(RCP_LOG_INFO, "session %u: steps: %s", ss->id,
			rcp_steps_line(&ss->s.steps, line, sizeof(line)));
}

/*
 * The session's places: one of --max-sessions, then its share of
 * --max-memory; -EBUSY (holding neither) when the server is full.
 */
static int places_take(void *arg)
{
	struct srv_session *ss = arg;
	struct eng_server *srv = ss->srv;
	int err;

	if (!session_count(srv))
		return rcp_err(-EBUSY, "the server is busy with %u sessions; try again later",
			       srv->o->max_sessions);
	*ss->counted = true;
	err = eng__admit_memory(srv, ss->base, ss->hello, ss->s.chunk, &ss->admit);
	if (err == -EBUSY) {
		*ss->counted = false;
		atomic_fetch_sub(&srv->sessions, 1);
	}
	return err;
}

/*
 * Hello and proof by the pre-auth deadline; then the session counts against
 * --max-sessions and --max-memory, waiting its turn when the server is full.
 */
static int session_admit(struct srv_session *ss, bool *counted)
{
	struct eng_server *srv = ss->srv;
	uint64_t wait_ms = 0;
	int err = eng__proto_recv_max(&ss->s.ctl, eng__proto_ms_left(ss->s.auth_end_ns),
				      ENG_MSG_HELLO, ENG_PROTO_MAX_HELLO, &ss->hello);

	if (!err)
		err = eng__proto_check_hello(ss->hello);
	if (!err)
		err = eng__session_auth(&ss->s, ss->hello);
	eng__server_pending_release(srv, ss->slot, ss->slot_gen);
	if (err)
		return err;
	if (!srv->o->any_name &&
	    (err = eng__identity_check(srv->o->names, srv->port, ss->s.ctl.fd, ss->hello)) != 0)
		return err;
	/* Only a proven client counts: strangers cannot hold the slots. */
	if ((err = hello_check(ss)) != 0) {
		/* Serving once, it ends the server; but a client sent to tcp comes back. */
		if (err != ENG_ERR_OTHER_TRANSPORT)
			*counted = session_count(srv);
		return err;
	}
	if (eng__proto_get_u64(ss->hello, ENG_KEY_TIMEOUT_MS, &wait_ms) != 0)
		rcp_err_clear(); /* a client that does not wait its turn: it asks again */
	wait_ms = wait_ms < ENG_MAX_QUEUE_WAIT_MS ? wait_ms : ENG_MAX_QUEUE_WAIT_MS;
	ss->counted = counted;
	return eng__queue_admit(srv, &ss->s.ctl, wait_ms, ss->id, ss->peer, places_take, ss);
}

/* What a "ranges" session did, for its line. */
static const char *step_said(enum eng_range_step step)
{
	switch (step) {
	case ENG_RANGES_REMOVE:
		return "ranged files removed";
	case ENG_RANGES_DIRS:
		return "directories given their metadata";
	case ENG_RANGES_DIRS_REMOVE:
		return "directories' markers removed";
	default:
		return "ranged files put in place";
	}
}

static void *session_main(void *arg)
{
	struct srv_session *ss = arg;
	struct eng_server *srv = ss->srv;
	char what[IO_ESC_MAX + 64];
	bool counted = false, back;
	int err = session_admit(ss, &counted);

	rcp_steps_lap(&ss->s.steps, RCP_STEP_CONTROL);
	if (!err && !strcmp(ss->kind, ENG_JOB_PUSH))
		err = push_prepare(ss);
	if (!err && !strcmp(ss->kind, ENG_JOB_PULL))
		err = pull_prepare(ss);
	rcp_steps_lap(&ss->s.steps, RCP_STEP_MANIFEST);
	if (!err && eng__hello_flag(ss->hello, ENG_FLAG_DRY_RUN)) {
		rcp_log(RCP_LOG_NOTICE, "session %u from %s: dry run of a %s, nothing written",
			ss->id, ss->peer, session_what(ss, what, sizeof(what)));
		goto end;
	}
	if (!err && ss->range_step != ENG_RANGES_LAND) {
		rcp_log(RCP_LOG_NOTICE, "session %u from %s: a job's %s in \"%s\"", ss->id,
			ss->peer, step_said(ss->range_step), ss->where[0] ? ss->where : ".");
		goto end;
	}
	if (!err)
		err = eng__server_setup(ss);
	rcp_steps_lap(&ss->s.steps, RCP_STEP_CONNECT);
	if (!err) {
		unsigned all = eng__job_stripes(ss->s.job), up = eng__job_stripes_up(ss->s.job);
		char out[48] = "";

		if (up < all) /* the client's word or ours: see the lines above */
			snprintf(out, sizeof(out), " (%u left out at set-up)", all - up);
		rcp_log(RCP_LOG_NOTICE,
			"session %u from %s: %s, %" PRIu64
			" MiB over %u %sstripes%s (%u sessions running, %u waiting, %u connections "
			"waiting their turn, %" PRIu64 " MiB of slots reserved)",
			ss->id, ss->peer, session_what(ss, what, sizeof(what)), ss->bytes >> 20, up,
			ss->s.tr != srv->tr ? "tcp " : "" /* auto's rdma server, tcp too */, out,
			atomic_load(&srv->sessions), eng__queue_length(srv),
			atomic_load(&srv->parked), atomic_load(&srv->mem_held) >> 20);
		err = eng__session_run(&ss->s);
		rcp_steps_lap(&ss->s.steps, RCP_STEP_DATA);
	}
	if (!err)
		err = session_end(ss);
	if (err) {
		eng__session_send_error(&ss->s, err);
		rcp_log(RCP_LOG_NOTICE, "session %u from %s failed: %s", ss->id, ss->peer,
			rcp_err_msg(err));
	}
end:
	/* Its rails all failed: the client goes on over tcp, in a session of its own. */
	back = err && ss->s.fallback && eng__session_falls(&ss->s);
	session_record(ss, err);
	eng__session_fallback_drop(&ss->s, err);
	eng__session_fini(&ss->s);
	steps_log(ss, err);
	eng__admit_release(srv, &ss->admit); /* its pools are freed */
	json_decref(ss->hello);
	if (counted) {
		uint64_t never = 0;
		int none = 0;

		/*
		 * Serving once, it waits for that session (listener.c), once per
		 * run: another such session counts, so no client holds it open.
		 */
		if (!back ||
		    !atomic_compare_exchange_strong(&srv->again_ns, &never, rcp_now_ns())) {
			atomic_compare_exchange_strong(&srv->served_err, &none, err);
			atomic_fetch_add(&srv->served, 1);
		}
		atomic_fetch_sub(&srv->sessions, 1);
	}
	eng__queue_wake(srv); /* its places are free: the next in line */
	atomic_fetch_sub(&srv->active, 1);
	free(ss);
	return NULL;
}

int eng__server_session_start(struct eng_server *srv, int fd, const char *who, unsigned slot,
			      uint32_t gen)
{
	struct srv_session *ss = calloc(1, sizeof(*ss));
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (!ss)
		return -ENOMEM;
	ss->srv = srv;
	ss->start = eng__wall_now();
	ss->id = atomic_fetch_add(&srv->next_id, 1) + 1;
	ss->slot = slot;
	ss->slot_gen = gen;
	snprintf(ss->peer, sizeof(ss->peer), "%s", who);
	eng__session_init(&ss->s, ENG_SERVER, srv->tr, fd, srv->o->timeout_ms);
	ss->base = srv->o->plan; /* unless the hello asks for tcp of a server serving both */
	ss->addr = srv->addr;
	ss->s.no_failover = srv->o->no_failover;
	ss->s.stall_ms = srv->o->stall_ms;
	ss->s.rail_stall_ms = srv->o->rail_stall_ms;
	ss->s.qp = srv->o->qp;
	ss->s.connect_timeout_ms =
		eng__connect_timeout(srv->o->connect_timeout_ms, srv->o->timeout_ms);
	ss->s.auth_end_ns = rcp_now_ns() + (uint64_t)eng__preauth_ms(srv->o->timeout_ms) * 1000000u;
	ss->s.key = srv->keyed ? &srv->key : NULL;
	ss->s.cancel = &srv->stopping;
	ss->s.ctl.stop = &srv->stopping; /* a session waiting for its peer ends at a stop too */
	ss->s.cancel_err = -ESHUTDOWN;
	ss->s.cancel_why = "the server is shutting down";
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = -pthread_create(&t, &attr, session_main, ss);
	pthread_attr_destroy(&attr);
	if (err)
		free(ss); /* the caller still owns fd */
	return err;
}
