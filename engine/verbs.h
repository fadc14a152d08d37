/*
 * verbs.h - private to engine/: set-up of the verbs transport for a job.
 * A job's verbs state owns every rdma_cm id, QP, CQ, MR and PD it made;
 * eng__verbs_destroy frees all of them (QPs, then CQs, MRs, PDs).
 */
#ifndef RAILCP_ENGINE_VERBS_H
#define RAILCP_ENGINE_VERBS_H

#include <netinet/in.h>

#include "engine/engine_int.h"

struct eng_verbs;

int eng__verbs_create(struct eng_job *job, struct eng_verbs **vb_out);
void eng__verbs_destroy(struct eng_verbs *vb);

/* Client: connect stripe s from src (on rail_dev) to dst, as the server's stripe peer_stripe. */
int eng__verbs_connect(struct eng_verbs *vb, struct eng_stripe *s, const char *rail_dev,
		       const struct sockaddr_in *src, const struct sockaddr_in *dst,
		       uint32_t peer_stripe, int timeout_ms);

/* Server: listen on addr (port 0: any); the port is written to *port_out. */
int eng__verbs_listen(struct eng_verbs *vb, const struct sockaddr_in *addr, uint16_t *port_out);

/*
 * Server: accept one connection per stripe; rail_dev[r] is rail r's device.
 * Returns -EPIPE, without a sentence, when the client writes to or closes the
 * control connection ctl_fd meanwhile: the caller reads why.
 */
int eng__verbs_accept_all(struct eng_verbs *vb, const char *const *rail_dev, int ctl_fd,
			  int timeout_ms);

/* rdma_cm's event fd, readable when an event (e.g. a disconnect) is pending. */
int eng__verbs_event_fd(const struct eng_verbs *vb);

/* Consume pending events; -ECONNRESET with a sentence if a stripe lost its peer. */
int eng__verbs_check_events(struct eng_verbs *vb);

#endif
