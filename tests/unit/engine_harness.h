/*
 * engine_harness.h - a sender job and a receiver job joined by the loopback
 * transport, for the engine's unit tests. Header-only so each test binary
 * that needs it stays one file plus this.
 *
 * Both jobs run in threads; the harness stops one when the other fails, as
 * a session does through its control connection, and drains the receiver
 * once the sender has every credit back.
 */
#ifndef RAILCP_TEST_ENGINE_HARNESS_H
#define RAILCP_TEST_ENGINE_HARNESS_H

#include "engine/transport/loopback.h"
#include "engine/datapath/datapath_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define H_MAX_STRIPES 64

struct harness {
	struct topo_plan plan;
	struct eng_job *snd, *rcv;
	struct eng_ep *snd_ep[H_MAX_STRIPES], *rcv_ep[H_MAX_STRIPES];
	int snd_err, rcv_err;
	char snd_msg[512], rcv_msg[512];
};

/* A plan of n_workers workers with rails_per_worker rails of qps QPs each. */
static inline void h_plan(struct topo_plan *p, unsigned n_workers, unsigned rails_per_worker,
			  unsigned qps)
{
	unsigned w, r;

	memset(p, 0, sizeof(*p));
	p->qps_per_rail = qps;
	p->n_workers = n_workers;
	for (w = 0; w < n_workers; w++) {
		p->worker[w].node = (int)w;
		p->worker[w].first_rail = w * rails_per_worker;
		p->worker[w].n_rails = rails_per_worker;
		for (r = 0; r < rails_per_worker; r++) {
			struct topo_plan_rail *pr = &p->rail[p->n_rails++];

			snprintf(pr->dev, sizeof(pr->dev), "loop%u", w * rails_per_worker + r);
			pr->port = 1;
			pr->worker = w;
			pr->qps = qps;
			pr->numa_node = (int)w;
		}
	}
}

/*
 * Build both jobs over h->plan: slots of slot_size bytes, total bytes of
 * bench pattern; gbps[r] simulates rail r's speed (NULL: unlimited).
 */
static inline int h_create(struct harness *h, unsigned n_slots, uint32_t slot_size, uint64_t total,
			   const double *gbps)
{
	unsigned i;
	int err;

	err = eng__job_create(ENG_SENDER, &h->plan, n_slots, slot_size, false, &h->snd);
	if (err)
		return err;
	err = eng__job_create(ENG_RECEIVER, &h->plan, n_slots, slot_size, false, &h->rcv);
	if (err)
		return err;
	for (i = 0; i < h->snd->n_workers; i++) {
		h->snd->worker[i].bind = h->rcv->worker[i].bind = false;
		if ((err = eng__loop_cq_create(&h->snd->worker[i].tr.cq[0])) != 0 ||
		    (err = eng__loop_cq_create(&h->rcv->worker[i].tr.cq[0])) != 0)
			return err;
		h->snd->worker[i].tr.n_cqs = h->rcv->worker[i].tr.n_cqs = 1;
	}
	h->snd->token = h->rcv->token = 0x5eed;
	h->snd->busy_poll_us = h->rcv->busy_poll_us = 1000;
	eng__bench_attach(h->snd, total, slot_size);
	eng__bench_attach(h->rcv, total, slot_size);
	for (i = 0; i < h->snd->n_stripes; i++) {
		struct eng_stripe *s = &h->snd->stripe[i], *r = &h->rcv->stripe[i];
		unsigned w = h->plan.rail[s->rail].worker;

		err = eng__loop_connect(h->snd->worker[w].tr.cq[0], h->rcv->worker[w].tr.cq[0],
					gbps ? gbps[s->rail] : 0, &h->snd_ep[i], &h->rcv_ep[i]);
		if (err)
			return err;
		s->link.ep = h->snd_ep[i];
		r->link.ep = h->rcv_ep[i];
		s->link.peer_data = (struct eng_remote){(uintptr_t)r->link.data, 0};
		s->link.peer_hdr = (struct eng_remote){(uintptr_t)r->link.hdr, 0};
		if ((err = eng__stripe_init_receiver(r)) != 0 ||
		    (err = eng__stripe_init_sender(s)) != 0)
			return err;
	}
	return 0;
}

struct h_run {
	struct eng_job *job;
	int err;
	char msg[512];
	_Atomic bool done;
};

static inline void *h_thread(void *arg)
{
	struct h_run *r = arg;

	r->err = eng__job_run(r->job, NULL, NULL);
	if (r->err)
		snprintf(r->msg, sizeof(r->msg), "%s", rcp_err_msg(r->err));
	atomic_store(&r->done, true);
	return NULL;
}

/* Run both jobs to the end; results in h->snd_err/rcv_err and their messages. */
static inline void h_run(struct harness *h)
{
	struct h_run s = {.job = h->snd}, r = {.job = h->rcv};
	pthread_t ts, tr;

	pthread_create(&tr, NULL, h_thread, &r);
	pthread_create(&ts, NULL, h_thread, &s);
	while (!atomic_load(&s.done)) {
		struct timespec ts_ = {0, 1000 * 1000};

		if (atomic_load(&r.done))
			eng__job_stop(h->snd); /* the receiver failed: the session ends */
		nanosleep(&ts_, NULL);
	}
	if (s.err) /* the sender failed: the session ends */
		eng__job_stop(h->rcv);
	else /* the sender has every credit back: the receiver drains, as a session's does */
		eng__job_drain(h->rcv);
	pthread_join(ts, NULL);
	pthread_join(tr, NULL);
	h->snd_err = s.err;
	h->rcv_err = r.err;
	memcpy(h->snd_msg, s.msg, sizeof(s.msg));
	memcpy(h->rcv_msg, r.msg, sizeof(r.msg));
}

static inline void h_destroy(struct harness *h)
{
	unsigned i;

	for (i = 0; i < H_MAX_STRIPES; i++) {
		eng__loop_ep_destroy(h->snd_ep[i]);
		eng__loop_ep_destroy(h->rcv_ep[i]);
	}
	for (i = 0; h->snd && i < h->snd->n_workers; i++)
		eng__loop_cq_destroy(h->snd->worker[i].tr.cq[0]);
	for (i = 0; h->rcv && i < h->rcv->n_workers; i++)
		eng__loop_cq_destroy(h->rcv->worker[i].tr.cq[0]);
	eng__job_destroy(h->snd);
	eng__job_destroy(h->rcv);
	memset(h, 0, sizeof(*h));
}

#endif
