/*
 * session.h - private to engine/: what both ends of a session share.
 */
#ifndef RAILCP_ENGINE_SESSION_H
#define RAILCP_ENGINE_SESSION_H

#include <arpa/inet.h>
#include <sys/socket.h>

#include "engine/engine_int.h"
#include "engine/proto.h"
#include "engine/rails.h"
#include "engine/verbs.h"

/* connect(2) with a timeout; -1 and errno on failure, like connect. */
int eng__tcp_connect_timeout(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms);

/*
 * No Nagle delay; keepalive probes that notice a dead peer machine in about
 * 16 s (idle 10 s, then 3 probes 2 s apart); and sends that give up after
 * 30 s on a peer that stops reading or acknowledging.
 */
void eng__tcp_tune(int fd);

/*
 * Without blocking: 0 when nothing arrived on fd, 1 with *msg_out when a
 * frame of type want arrived, or -errno with a sentence when the peer closed
 * the connection, reported an error or sent something else.
 */
int eng__session_poll_msg(int fd, const char *want, json_t **msg_out);

/*
 * For a coordinator's progress callback: fail the job when the peer closed
 * the control connection or sent something unexpected, or when rdma_cm
 * reports a stripe disconnected; who names the peer in the sentence. Returns
 * 1 with *msg_out when a frame of type want arrived, else 0. With want NULL
 * no frame is expected, and any frame fails the job (msg_out is unused).
 */
int eng__session_watch(struct eng_job *job, int fd, struct eng_verbs *vb, const char *who,
		       const char *want, json_t **msg_out);

/*
 * The sender's end of a job: send "done" with the chunks and bytes the
 * receiver consumed and seconds (the sender's clock), receive the
 * receiver's "result" and hold it against that.
 */
int eng__session_sender_end(int fd, int timeout_ms, const struct eng_job *job);

struct eng_files;

/*
 * The receiver's end: take the sender's "done" (*done, received here when
 * the watch did not already), hold it against what arrived and what the job
 * announced (job->src.total), put files in place (files may be NULL), then
 * send "result" with chunks, bytes and files.
 */
int eng__session_receiver_end(int fd, int timeout_ms, const struct eng_job *job, json_t **done,
			      struct eng_files *files);

/* The figures of a job so far, or at its end. */
void eng__job_report(const struct eng_job *job, struct eng_report *r);

#endif
