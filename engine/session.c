/*
 * session.c - pieces both ends of a session use: TCP set-up, watching the
 * peer while a job runs, and the job's report.
 */
#include "engine/session.h"
#include "engine/files.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

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

void eng__tcp_tune(int fd)
{
	int one = 1, idle = 10, intvl = 2, cnt = 3;
	unsigned user_timeout_ms = 30000; /* unacknowledged data: keepalive does not cover it */
	struct timeval snd = {.tv_sec = 30};

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof(snd)); /* a peer that never reads */
}

int eng__session_poll_msg(int fd, const char *want, json_t **msg_out)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int err;

	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	/* Something arrived, or the peer hung up: a whole frame follows quickly, if any. */
	err = eng__proto_recv(fd, 5000, want, msg_out);
	return err ? err : 1;
}

int eng__session_watch(struct eng_job *job, int fd, struct eng_verbs *vb, const char *who,
		       const char *want, json_t **msg_out)
{
	json_t *msg = NULL;
	int got;

	if (atomic_load(&job->stop))
		return 0;
	got = eng__session_poll_msg(fd, want ? want : "(nothing during the transfer)", &msg);
	if (got == 1 && want) {
		*msg_out = msg;
		return 1;
	}
	if (got == 1) {
		json_decref(msg);
		eng__job_fail(job, -EPROTO, "%s sent a message in the middle of the transfer", who);
		return 0;
	}
	if (got == 0 && vb)
		got = eng__verbs_check_events(vb);
	if (got < 0)
		eng__job_fail(job, got, "%s went away: %s", who, rcp_err_msg(got));
	return 0;
}

int eng__session_sender_end(int fd, int timeout_ms, const struct eng_job *job)
{
	json_t *done = eng__proto_msg("done", false), *res = NULL;
	uint64_t chunks = atomic_load(&job->done_chunks), got_chunks = 0, got_bytes = 0;
	struct eng_report rep;
	int err;

	eng__job_report(job, &rep);
	json_object_set_new(done, "chunks", json_integer((json_int_t)chunks));
	json_object_set_new(done, "bytes", json_integer((json_int_t)rep.bytes));
	json_object_set_new(done, "seconds", json_real(rep.seconds));
	err = eng__proto_send(fd, done);
	json_decref(done);
	if (!err)
		err = eng__proto_recv(fd, timeout_ms, "result", &res);
	if (!err && !(err = eng__proto_get_u64(res, "chunks", &got_chunks)))
		err = eng__proto_get_u64(res, "bytes", &got_bytes);
	if (!err && (got_chunks != chunks || got_bytes != rep.bytes))
		err = rcp_err(-EIO, "the receiver checked %" PRIu64 " bytes in %" PRIu64
				    " chunks, but %" PRIu64 " bytes were sent",
			      got_bytes, got_chunks, rep.bytes);
	json_decref(res);
	return err;
}

int eng__session_receiver_end(int fd, int timeout_ms, const struct eng_job *job, json_t **done,
			      struct eng_files *files)
{
	uint64_t chunks = atomic_load(&job->done_chunks), sent_chunks, sent_bytes;
	struct eng_report rep;
	json_t *m;
	int err = 0;

	eng__job_report(job, &rep);
	if (!*done)
		err = eng__proto_recv(fd, timeout_ms, "done", done);
	if (err || (err = eng__proto_get_u64(*done, "chunks", &sent_chunks)) != 0 ||
	    (err = eng__proto_get_u64(*done, "bytes", &sent_bytes)) != 0)
		return err;
	if (sent_chunks != chunks || sent_bytes != rep.bytes || sent_bytes != job->src.total)
		return rcp_err(-EIO, "the sender sent %" PRIu64 " chunks (%" PRIu64 " bytes of the %" PRIu64
				     " announced), %" PRIu64 " chunks (%" PRIu64 " bytes) arrived",
			       sent_chunks, sent_bytes, job->src.total, chunks, rep.bytes);
	if (files && (err = eng__files_finish(files)) != 0)
		return err;
	m = eng__proto_msg("result", false);
	json_object_set_new(m, "chunks", json_integer((json_int_t)chunks));
	json_object_set_new(m, "bytes", json_integer((json_int_t)rep.bytes));
	json_object_set_new(m, "files", json_integer((json_int_t)(files ? eng__files_manifest(files)->n_files : 0)));
	err = eng__proto_send(fd, m);
	json_decref(m);
	return err;
}

void eng__job_report(const struct eng_job *job, struct eng_report *r)
{
	uint64_t t0 = atomic_load(&job->t_first_post_ns), t1 = atomic_load(&job->t_last_done_ns);
	unsigned i;

	memset(r, 0, sizeof(*r));
	r->bytes_total = job->src.total;
	r->chunks = atomic_load(&job->done_chunks);
	r->seconds = t0 && t1 > t0 ? (double)(t1 - t0) / 1e9 : 0.0;
	r->chunk = job->n_stripes ? job->stripe[0].slot_size : 0;
	r->n_slots = job->n_stripes ? job->stripe[0].n_slots : 0;
	r->n_stripes = job->n_stripes;
	r->n_rails = job->n_rails;
	for (i = 0; i < job->n_rails && i < TOPO_MAX_RAILS; i++) {
		snprintf(r->rail[i].name, sizeof(r->rail[i].name), "%s", job->rail[i].name);
		r->rail[i].node = job->rail[i].node;
		r->rail[i].bytes = atomic_load(&job->rail[i].bytes);
		r->rail[i].chunks = atomic_load(&job->rail[i].chunks);
		r->bytes += r->rail[i].bytes;
	}
}
