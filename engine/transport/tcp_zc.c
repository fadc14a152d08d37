/*
 * tcp_zc.c - zero-copy sends on the TCP transport: MSG_ZEROCOPY.
 *
 * A sending end whose socket takes SO_ZEROCOPY sends each batch of chunks
 * with MSG_ZEROCOPY: the kernel pins the slot's pages instead of copying
 * them, and once it no longer needs them it queues a notification on the
 * socket's error queue naming a range of its per-socket send ids (one id
 * per sendmsg that carried bytes). Until then the bytes must not change, so
 * a signaled write completes only once every zero-copy send up to its own
 * was notified (completions stay in order, as a send queue's do). What a
 * chunk sends beside its payload (frame, header, tag) is kept per slot
 * (tcp_zc.outs), not on the stack, and written again only when the slot is
 * sent from next, after its credit returned: the receiver had every byte
 * by then, and the kernel let go of them (doc/design.md, "Over TCP").
 *
 * Why MSG_ZEROCOPY and not io_uring's SEND_ZC: the worker loop stays the
 * one every transport drives (poll, arm, sleep on the CQ's eventfd), and
 * the sending end's reader thread, which waits for credits anyway, waits
 * for the notifications too (poll reports POLLERR when the error queue
 * holds one); io_uring would add a ring per endpoint and a second way to
 * wait, for the same kernel path underneath.
 *
 * The kernel may copy anyway (loopback does, a device without
 * scatter-gather too) and says so (SO_EE_CODE_ZEROCOPY_COPIED); under
 * auto the end then goes back to plain sends, as the kernel's
 * msg_zerocopy.rst advises. A zero-copy send the kernel refuses for its
 * limits (ENOBUFS: optmem, locked pages) is sent again plain; under auto,
 * TCP_ZC_NOBUFS_MAX refusals in a row turn the end plain for good, so a
 * limit that holds does not cost every send two calls.
 *
 * Closing with zero-copy sends not yet notified: the kernel still holds
 * and may still send from their pages after close(). Slot memory (job.c)
 * and tcp_zc.outs are mappings of their own, given back with munmap, so
 * those pages, which the kernel's references keep alive, are never handed
 * out again by this process (malloc would); and the socket is closed with
 * a reset (SO_LINGER 0), which drops its queue, after a short wait for the
 * notifications of a healthy end.
 *
 * Threading: the owner sends and counts ids; the reader takes
 * notifications; the lock guards the notified ids and the waiting
 * completions, and is taken before the CQ's.
 */
#include "engine/transport/tcp_int.h"

#include "common/common.h"

#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

int eng__tcp_zc_mode(enum tcp_zc_mode *mode_out)
{
	const char *v = getenv(TCP_ZC_ENV);

	if (!v || !*v || !strcmp(v, "auto"))
		*mode_out = TCP_ZC_AUTO;
	else if (!strcmp(v, "on"))
		*mode_out = TCP_ZC_ON;
	else if (!strcmp(v, "off"))
		*mode_out = TCP_ZC_OFF;
	else
		return rcp_err(-EINVAL, "%s is '%s': it takes auto, on or off", TCP_ZC_ENV, v);
	return 0;
}

int eng_tcp_zerocopy_check(void)
{
	enum tcp_zc_mode m;

	return eng__tcp_zc_mode(&m);
}

/*
 * auto: zero-copy only towards another host, with slots of at least
 * TCP_ZC_MIN_SLOT. To 127.0.0.1 the kernel copies each payload when it
 * reaches the receiving socket anyway, so pinning and notifications only
 * add to that (doc/benchmarks.md); below about 10 KB a send gains nothing
 * from it (the kernel's msg_zerocopy.rst), and a slot is a chunk's most.
 */
#define TCP_ZC_MIN_SLOT (64u << 10)

static bool zc_worth(const struct tcp_ep *e)
{
	union eng_sockaddr a = {0};
	socklen_t len = sizeof(a);
	static const uint8_t mapped_lo[16] = {[10] = 0xff, [11] = 0xff, [12] = 127};

	if (e->link->slot_size < TCP_ZC_MIN_SLOT || getpeername(e->fd, &a.sa, &len) != 0)
		return false;
	if (a.sa.sa_family == AF_INET)
		return (ntohl(a.in.sin_addr.s_addr) >> 24) != 127;
	if (a.sa.sa_family == AF_INET6)
		return !IN6_IS_ADDR_LOOPBACK(&a.in6.sin6_addr) &&
		       memcmp(&a.in6.sin6_addr, mapped_lo, 13) != 0;
	return false;
}

int eng__tcp_ep_zerocopy(struct eng_ep *ep, enum tcp_zc_mode mode)
{
	struct tcp_ep *e = ep->tr;
	int one = 1;

	if (e->receiver || mode == TCP_ZC_OFF || (mode == TCP_ZC_AUTO && !zc_worth(e)))
		return 0;
	if (setsockopt(e->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) != 0)
		return 0; /* refused (not TCP, an old kernel): plain sends */
	/* its own mapping: see the top of this file */
	e->zc.outs_len = (e->link->n_slots ? e->link->n_slots : 1) * sizeof(*e->zc.outs);
	e->zc.outs = mmap(NULL, e->zc.outs_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	if (e->zc.outs == MAP_FAILED) {
		e->zc.outs = NULL;
		return -ENOMEM;
	}
	e->zc.on = true;
	e->zc.keep = mode == TCP_ZC_ON;
	rcp_log(RCP_LOG_DEBUG, "%s: zero-copy sends (MSG_ZEROCOPY)", e->desc);
	return 0;
}

int eng__tcp_zc_flags(struct tcp_ep *e)
{
	bool room;

	if (e->zc.on && !e->zc.keep && atomic_load(&e->zc.copied))
		e->zc.on = false; /* the kernel copies on this path: pinning only adds */
	if (!e->zc.on)
		return MSG_NOSIGNAL;
	pthread_mutex_lock(&e->zc.lock);
	room = e->zc.next - e->zc.done < TCP_ZC_RING;
	pthread_mutex_unlock(&e->zc.lock);
	return room ? MSG_NOSIGNAL | MSG_ZEROCOPY : MSG_NOSIGNAL;
}

void eng__tcp_zc_sent(struct tcp_ep *e, int flags)
{
	if (flags & MSG_ZEROCOPY) {
		e->zc.next++;
		e->zc.used = true;
		e->zc.nobufs = 0;
	}
}

void eng__tcp_zc_nobufs(struct tcp_ep *e)
{
	if (++e->zc.nobufs < TCP_ZC_NOBUFS_MAX || e->zc.keep || !e->zc.on)
		return;
	e->zc.on = false;
	rcp_log(RCP_LOG_DEBUG, "%s: the kernel refused %u zero-copy sends in a row: plain sends",
		e->desc, TCP_ZC_NOBUFS_MAX);
}

static bool zc_ready(const struct tcp_zc *z, uint32_t need)
{
	return (int32_t)(z->done - need) >= 0;
}

/* Room for one more waiting completion: 0 or -ENOMEM. */
static int wait_grow(struct tcp_zc *z)
{
	size_t cap = z->cap_wait ? z->cap_wait * 2 : 16;
	struct tcp_zc_wait *w;

	if (z->n_wait < z->cap_wait)
		return 0;
	if (!(w = realloc(z->wait, cap * sizeof(*w))))
		return -ENOMEM;
	z->wait = w;
	z->cap_wait = cap;
	return 0;
}

int eng__tcp_zc_complete(struct tcp_ep *e, const struct eng_wc *wc)
{
	struct tcp_zc *z = &e->zc;
	int err;

	if (!z->used)
		return eng__tcp_cq_push(e->cq, wc);
	pthread_mutex_lock(&z->lock);
	if (z->n_wait == 0 && zc_ready(z, z->next))
		err = eng__tcp_cq_push(e->cq, wc);
	else if ((err = wait_grow(z)) == 0)
		z->wait[z->n_wait++] = (struct tcp_zc_wait){*wc, z->next};
	pthread_mutex_unlock(&z->lock);
	return err;
}

/* Ids lo to hi notified: completions they free go to the CQ. Under the lock. */
static const char *zc_note(struct tcp_ep *e, uint32_t lo, uint32_t hi)
{
	struct tcp_zc *z = &e->zc;
	uint32_t id, k = 0;
	size_t i = 0;

	if (hi - lo >= TCP_ZC_RING)
		return "the kernel notified zero-copy sends never made";
	for (id = lo; k <= hi - lo; id++, k++)
		if (id - z->done < TCP_ZC_RING) /* below done: notified before */
			z->seen[id % TCP_ZC_RING / 64] |= 1ull << (id % 64);
	while (z->seen[z->done % TCP_ZC_RING / 64] & (1ull << (z->done % 64))) {
		z->seen[z->done % TCP_ZC_RING / 64] &= ~(1ull << (z->done % 64));
		z->done++;
	}
	atomic_fetch_add(&z->notes, (uint64_t)(hi - lo) + 1);
	for (; i < z->n_wait && zc_ready(z, z->wait[i].need); i++)
		if (eng__tcp_cq_push(e->cq, &z->wait[i].wc))
			return "out of memory for a completion";
	if (i > 0) { /* wait may still be NULL, and memmove must not see it */
		memmove(z->wait, z->wait + i, (z->n_wait - i) * sizeof(*z->wait));
		z->n_wait -= i;
	}
	return NULL;
}

/* One notification's message: NULL, or why the link ends. */
static const char *zc_take(struct tcp_ep *e, struct msghdr *m)
{
	struct cmsghdr *cm;
	const char *bad = NULL;

	if (m->msg_flags & MSG_CTRUNC)
		return "reading the kernel's zero-copy notifications failed (truncated)";
	for (cm = CMSG_FIRSTHDR(m); cm && !bad; cm = CMSG_NXTHDR(m, cm)) {
		struct sock_extended_err ee;

		if (!((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
		      (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
			continue;
		memcpy(&ee, CMSG_DATA(cm), sizeof(ee));
		if (ee.ee_origin != SO_EE_ORIGIN_ZEROCOPY || ee.ee_errno != 0)
			return "the kernel reported an error on a zero-copy send";
		if ((ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED) &&
		    !atomic_exchange(&e->zc.copied, true))
			rcp_log(RCP_LOG_DEBUG, "%s: the kernel copied a zero-copy send", e->desc);
		pthread_mutex_lock(&e->zc.lock);
		bad = zc_note(e, ee.ee_info, ee.ee_data);
		pthread_mutex_unlock(&e->zc.lock);
	}
	return bad;
}

/* Every notification queued now: NULL, or why the link ends; *got whether any. */
static const char *zc_drain(struct tcp_ep *e, bool *got)
{
	for (*got = false;;) {
		union {
			char buf[CMSG_SPACE(sizeof(struct sock_extended_err) +
					    sizeof(struct sockaddr_in6))];
			struct cmsghdr align;
		} ctl;
		struct msghdr m = {.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
		const char *bad;

		if (recvmsg(e->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN
				       ? NULL
				       : "reading the kernel's zero-copy notifications failed";
		}
		*got = true;
		if ((bad = zc_take(e, &m)) != NULL)
			return bad;
	}
}

const char *eng__tcp_zc_wait(struct tcp_ep *e)
{
	for (;;) {
		struct pollfd p = {.fd = e->fd, .events = POLLIN};
		const char *bad;
		bool got = false;

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return "waiting on the connection failed";
		}
		if ((p.revents & POLLERR) && (bad = zc_drain(e, &got)) != NULL)
			return bad;
		/* POLLERR with nothing queued is the socket's own error: recv says it */
		if ((p.revents & (POLLIN | POLLHUP | POLLNVAL)) || ((p.revents & POLLERR) && !got))
			return NULL;
	}
}

/* Whether zero-copy sends are not yet notified. */
static bool zc_pending(struct tcp_ep *e)
{
	bool pending;

	pthread_mutex_lock(&e->zc.lock);
	pending = e->zc.done != e->zc.next;
	pthread_mutex_unlock(&e->zc.lock);
	return pending;
}

void eng__tcp_zc_close(struct tcp_ep *e)
{
	struct timespec nap = {0, 5000000};
	struct linger reset = {1, 0};
	bool got;
	int i;

	if (!e->zc.used)
		return;
	for (i = 0; i < TCP_ZC_CLOSE_WAIT_MS / 5 && zc_pending(e); i++)
		if (zc_drain(e, &got) != NULL || (!got && nanosleep(&nap, NULL) != 0))
			break;
	if (zc_pending(e) && setsockopt(e->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)) != 0)
		rcp_log(RCP_LOG_DEBUG, "%s: no reset for the zero-copy sends pending: %s", e->desc,
			strerror(errno));
}

void eng__tcp_zc_fini(struct tcp_zc *z)
{
	pthread_mutex_destroy(&z->lock);
	if (z->outs)
		munmap(z->outs, z->outs_len);
	free(z->wait);
}
