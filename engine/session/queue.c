/*
 * queue.c - proven sessions wait their turn at the server, in arrival order.
 *
 * A session that has proven the key but finds the server full (past
 * --max-sessions, or past --max-memory beside those running) does not make
 * its client ask again at random: it joins a FIFO here, holding its control
 * connection and its thread but no slot memory, and is admitted when it is
 * first in line and a running session has ended. Only the session at the
 * head tries to take a place, so a later one never overtakes it. Its
 * client learns its place ("queued" frames, on entry and whenever the place
 * changes; place 0: admitted) and, since each such frame restarts its wait
 * for the next message, waits as long as the queue moves.
 *
 * A session waits at most 9/10 of the client's --timeout (its hello's
 * ENG_KEY_TIMEOUT_MS, taken as at most ENG_MAX_QUEUE_WAIT_MS; so that its refusal reaches the
 * client before the client gives up by itself), then is refused with one sentence saying how long
 * the queue was. One whose client hangs up leaves its place at once; at a stop every waiting
 * session is told the server is shutting down. The queue holds at most ENG_MAX_QUEUED sessions
 * (each a thread, a descriptor and its hello: some tens of KiB); past that a session is told the
 * server is busy, and its client asks again (client.c).
 *
 * A server's session_queue callback (railcp serve --json) hears of each
 * session as it joins the queue, with its place and why it waits, and as
 * it leaves it, admitted or refused, with how long it waited.
 *
 * Threading: the queue is under srv->queue_lock; a waiting session sleeps
 * on srv->queue_cond, which eng__queue_wake broadcasts (and counts in
 * queue_gen, so that a wake-up during a try is not lost) whenever a place
 * may have freed.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

/* How often a waiting session looks whether its client is still there, or the server stops. */
#define QUEUE_SLICE_MS 100

/* w's place in the queue, 1 for its head (under queue_lock). */
static unsigned queue_place(const struct eng_server *srv, const struct eng_waiter *w)
{
	const struct eng_waiter *p;
	unsigned n = 1;

	for (p = srv->queue_head; p && p != w; p = p->next)
		n++;
	return n;
}

static void queue_leave(struct eng_server *srv, struct eng_waiter *w)
{
	struct eng_waiter **pp;

	pthread_mutex_lock(&srv->queue_lock);
	for (pp = &srv->queue_head; *pp && *pp != w; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = w->next;
	srv->queue_n--;
	pthread_mutex_unlock(&srv->queue_lock);
	eng__queue_wake(srv); /* the next one may be at the head now */
}

/* Join at the end: its place there, or 0 when the queue is full. */
static unsigned queue_join(struct eng_server *srv, struct eng_waiter *w)
{
	struct eng_waiter **pp;
	unsigned place = 0;

	pthread_mutex_lock(&srv->queue_lock);
	if (srv->queue_n < ENG_MAX_QUEUED) {
		for (pp = &srv->queue_head; *pp; pp = &(*pp)->next)
			;
		w->next = NULL;
		*pp = w;
		place = ++srv->queue_n;
	}
	pthread_mutex_unlock(&srv->queue_lock);
	return place;
}

void eng__queue_wake(struct eng_server *srv)
{
	pthread_mutex_lock(&srv->queue_lock);
	srv->queue_gen++;
	pthread_cond_broadcast(&srv->queue_cond);
	pthread_mutex_unlock(&srv->queue_lock);
}

unsigned eng__queue_length(struct eng_server *srv)
{
	unsigned n;

	pthread_mutex_lock(&srv->queue_lock);
	n = srv->queue_n;
	pthread_mutex_unlock(&srv->queue_lock);
	return n;
}

/* Tell the client its place (0: admitted); failures show at the next read or write. */
static void place_send(struct eng_ctl *ctl, unsigned place, unsigned of)
{
	json_t *m = eng__proto_msg(ENG_MSG_QUEUED, false);

	json_object_set_new(m, ENG_KEY_PLACE, json_integer(place));
	json_object_set_new(m, ENG_KEY_OF, json_integer(of));
	(void)eng__proto_send(ctl, m);
	json_decref(m);
}

/* The client hung up (or its connection broke) while waiting. */
static bool client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * Sleep on the queue for a slice or until woken, unless woken since *gen was
 * seen; this waiter's place and the queue's length.
 */
static void queue_sleep(struct eng_server *srv, struct eng_waiter *w, uint64_t *gen,
			unsigned *place, unsigned *of)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += QUEUE_SLICE_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&srv->queue_lock);
	if (srv->queue_gen == *gen)
		(void)pthread_cond_timedwait(&srv->queue_cond, &srv->queue_lock, &ts);
	*gen = srv->queue_gen;
	*place = queue_place(srv, w);
	*of = srv->queue_n;
	pthread_mutex_unlock(&srv->queue_lock);
}

/* Why a waiting session leaves without its turn, or 0 to go on waiting. */
static int queue_why_not(struct eng_server *srv, struct eng_waiter *w, unsigned place, unsigned of)
{
	uint64_t now = rcp_now_ns();

	if (atomic_load(&srv->stopping))
		return rcp_err(-ESHUTDOWN,
			       "the server is shutting down; this session was waiting its turn, "
			       "place %u of %u in its queue",
			       place, of);
	if (client_gone(w->fd))
		return rcp_err(-ECONNRESET,
			       "the client left while waiting its turn (place %u of %u)", place,
			       of);
	if (now >= w->end_ns)
		return rcp_err(
			-ETIMEDOUT,
			"no turn came within %.1f s (9/10 of the client's --timeout): this "
			"session waited at place %u of %u in the server's queue, %u sessions "
			"running (--max-sessions %u)",
			w->wait_ms / 1000.0, place, of, atomic_load(&srv->sessions),
			srv->o->max_sessions);
	return 0;
}

/* The server's session_queue, if it has one, hears of ev as kind. */
static void queue_tell(const struct eng_server *srv, struct eng_queue_event *ev,
		       enum eng_queue_event_kind kind, const char *reason)
{
	if (!srv->o->session_queue)
		return;
	ev->kind = kind;
	ev->time = eng__wall_now();
	ev->reason = reason;
	srv->o->session_queue(ev, srv->o->ctx);
}

/* Why a session waits: the busy sentence its client would get, without "; try again later". */
static const char *busy_reason(const char *busy, char *buf, size_t size)
{
	char *tail;

	snprintf(buf, size, "%s", busy);
	tail = strstr(buf, "; try again later");
	if (tail)
		*tail = '\0';
	return buf;
}

/* Wait until admitted (0) or refused; ev: the place and queue length last seen. */
static int queue_wait(struct eng_server *srv, struct eng_ctl *ctl, struct eng_waiter *w,
		      struct eng_queue_event *ev, int (*try_admit)(void *arg), void *arg)
{
	uint64_t gen = UINT64_MAX; /* the first look does not sleep */
	unsigned told = 0;
	int err;

	for (;;) {
		queue_sleep(srv, w, &gen, &ev->place, &ev->of);
		if (ev->place != told) {
			if (told == 0)
				rcp_log(RCP_LOG_INFO,
					"session %u from %s waits its turn: place %u of %u", ev->id,
					ev->peer, ev->place, ev->of);
			place_send(ctl, ev->place, ev->of);
			told = ev->place;
		}
		if ((err = queue_why_not(srv, w, ev->place, ev->of)) != 0)
			return err;
		if (ev->place == 1 && (err = try_admit(arg)) != -EBUSY)
			return err;
		rcp_err_clear();
	}
}

int eng__queue_admit(struct eng_server *srv, struct eng_ctl *ctl, uint64_t client_timeout_ms,
		     unsigned id, const char *peer, int (*try_admit)(void *arg), void *arg)
{
	struct eng_waiter w = {.fd = ctl->fd};
	struct eng_queue_event ev = {.id = id, .peer = peer};
	char why[256];
	uint64_t t0;
	int err = try_admit(arg);

	if (err != -EBUSY || client_timeout_ms == 0) /* admitted, refused, or an older client */
		return err;
	w.wait_ms = (int)(client_timeout_ms > INT32_MAX ? INT32_MAX : client_timeout_ms * 9 / 10);
	t0 = rcp_now_ns();
	w.end_ns = t0 + (uint64_t)w.wait_ms * 1000000u;
	if ((ev.place = ev.of = queue_join(srv, &w)) == 0)
		return rcp_err(-EBUSY,
			       "%s, and %u sessions wait their turn already; try again later",
			       rcp_err_msg(err), ENG_MAX_QUEUED);
	queue_tell(srv, &ev, ENG_QUEUE_JOINED, busy_reason(rcp_err_msg(err), why, sizeof(why)));
	rcp_err_clear();
	err = queue_wait(srv, ctl, &w, &ev, try_admit, arg);
	queue_leave(srv, &w);
	if (err == 0)
		place_send(ctl, 0, ev.of);
	ev.waited_ms = (rcp_now_ns() - t0) / 1000000u;
	queue_tell(srv, &ev, err ? ENG_QUEUE_REFUSED : ENG_QUEUE_ADMITTED,
		   err ? rcp_err_msg(err) : NULL);
	return err;
}
