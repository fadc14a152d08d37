/*
 * engine_harness.h - a sender job and a receiver job joined by the loopback
 * transport, for the engine's unit tests. The functions are in
 * engine_harness.c, compiled once and linked into each test that includes
 * this (tests/SConscript).
 *
 * Both jobs run in threads; the harness stops one when the other fails, as
 * a session does through its control connection, and drains the receiver
 * once the sender has every credit back.
 */
#ifndef RAILCP_TEST_ENGINE_HARNESS_H
#define RAILCP_TEST_ENGINE_HARNESS_H

#include "engine/transport/loopback.h"
#include "engine/datapath/datapath_int.h"

#include "wait_for.h"

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
void h_plan(struct topo_plan *p, unsigned n_workers, unsigned rails_per_worker, unsigned qps);

/*
 * Build both jobs over h->plan: slots of slot_size bytes, total bytes of
 * bench pattern; gbps[r] simulates rail r's speed (NULL: unlimited).
 */
int h_create(struct harness *h, unsigned n_slots, uint32_t slot_size, uint64_t total,
	     const double *gbps);

/* Run both jobs to the end; results in h->snd_err/rcv_err and their messages. */
void h_run(struct harness *h);

/* Both jobs, their endpoints and CQs destroyed; h zeroed. Accepts a harness half made. */
void h_destroy(struct harness *h);

#endif
