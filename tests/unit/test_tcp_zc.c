/*
 * test_tcp_zc.c - zero-copy sends on the TCP transport (tcp_zc.c) over a
 * real TCP connection on 127.0.0.1: a sending and a receiving end, the
 * test driving both as the data path does. A slot is scribbled over the
 * moment its write completes, so a completion given before the kernel let
 * go of the slot's pages shows as wrong bytes at the receiver; the
 * receiver's socket buffer is kept small, so sent bytes wait in the
 * sender's queue for a while after sendmsg returned. Sealed chunks the
 * same; a socket that refuses SO_ZEROCOPY sends plain; auto stays plain
 * to 127.0.0.1; a kernel that says it copied turns an end plain again;
 * a kernel that refuses zero-copy sends (ENOBUFS, here the locked-memory
 * limit) turns an auto end plain; an end closed with sends unnotified
 * resets its connection and gives its per-slot memory back with munmap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/transport/tcp_int.h"

#include "common/common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N_SLOTS 8
#define SLOT (128 * 1024)
#define CHUNKS 400
#define RECV_ID 0x10
#define WRITE_ID 0x20
#define STRIPE 3

/* One end: its CQ, slots and endpoint. */
struct end {
	struct eng_cq *cq;
	struct eng_link link;
	uint8_t *data;
	struct eng_chunk_hdr hdr[N_SLOTS];
	struct eng_ep *ep;
};

struct fx {
	struct end snd, rcv;
	/* the sender's view of each slot */
	bool credit[N_SLOTS], busy[N_SLOTS];
	uint64_t sent, got, completed;
};

static const uint8_t key[TCP_SEAL_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

static void end_make(struct end *x, int fd, bool receiver)
{
	x->data = aligned_alloc(4096, (size_t)N_SLOTS * SLOT);
	assert_non_null(x->data);
	memset(x->data, 0, (size_t)N_SLOTS * SLOT);
	x->link = (struct eng_link){.rail_dev = "lo",
				    .data = x->data,
				    .hdr = x->hdr,
				    .n_slots = N_SLOTS,
				    .slot_size = SLOT};
	assert_int_equal(eng__tcp_cq_create(&x->cq), 0);
	assert_int_equal(eng__tcp_ep_create(x->cq, fd, &x->link, receiver, &x->ep), 0);
}

static void end_start(struct end *x, bool sealed)
{
	if (sealed)
		assert_int_equal(eng__tcp_ep_seal(x->ep, key, STRIPE), 0);
	if (((struct tcp_ep *)x->ep->tr)->receiver)
		assert_int_equal(x->ep->ops->post_recv(x->ep, RECV_ID, N_SLOTS), 0);
	else
		assert_int_equal(x->ep->ops->post_recv(x->ep, RECV_ID, 1 << 20), 0);
	assert_int_equal(eng__tcp_ep_start(x->ep), 0);
}

static void end_free(struct end *x)
{
	eng__tcp_ep_destroy(x->ep);
	eng__tcp_cq_destroy(x->cq);
	free(x->data);
}

/*
 * A connected pair on 127.0.0.1: *s the sender's socket (a large send
 * buffer: sendmsg returns long before the bytes left), *r the receiver's
 * (a small receive buffer: they leave slowly).
 */
static void tcp_pair(int *s, int *r)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 16384, big = 8 << 20;

	assert_true(l >= 0);
	assert_int_equal(setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	*s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*s >= 0);
	assert_int_equal(setsockopt(*s, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)), 0);
	assert_int_equal(connect(*s, (struct sockaddr *)&a, sizeof(a)), 0);
	*r = accept(l, NULL, NULL);
	assert_true(*r >= 0);
	close(l);
}

static void fx_free(struct fx *f)
{
	end_free(&f->snd);
	end_free(&f->rcv);
	free(f);
}

static struct tcp_ep *snd_ep(struct fx *f)
{
	return f->snd.ep->tr;
}

static struct fx *fx_new(bool sealed, enum tcp_zc_mode mode)
{
	struct fx *f = calloc(1, sizeof(*f));
	int s, r, i;

	assert_non_null(f);
	tcp_pair(&s, &r);
	end_make(&f->snd, s, false);
	end_make(&f->rcv, r, true);
	assert_int_equal(eng__tcp_ep_zerocopy(f->snd.ep, mode), 0);
	if (mode == TCP_ZC_ON && !snd_ep(f)->zc.on) {
		fx_free(f);
		skip(); /* a kernel without SO_ZEROCOPY on TCP: nothing to test here */
	}
	end_start(&f->snd, sealed);
	end_start(&f->rcv, sealed);
	for (i = 0; i < N_SLOTS; i++)
		f->credit[i] = true;
	return f;
}

/* The byte at i of chunk seq: no two chunks alike in any slot. */
static uint8_t pat(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 9));
}

static uint32_t len_of(uint64_t seq)
{
	return SLOT - (uint32_t)(seq % 5) * 4096;
}

/* Fill slot with chunk seq and write it, signaled. */
static void send_one(struct fx *f, unsigned slot)
{
	uint8_t *p = f->snd.data + (size_t)slot * SLOT;
	uint64_t seq = f->sent++;
	struct eng_write w = {.wr_id = WRITE_ID,
			      .signaled = true,
			      .hdr = &f->snd.hdr[slot],
			      .data = p,
			      .len = len_of(seq),
			      .imm = slot};
	size_t i;

	for (i = 0; i < w.len; i++)
		p[i] = pat(seq, i);
	f->snd.hdr[slot] = (struct eng_chunk_hdr){
		.magic = ENG_HDR_MAGIC, .slot = slot, .token = 7, .seq = seq, .len = w.len};
	f->credit[slot] = false;
	f->busy[slot] = true;
	assert_int_equal(f->snd.ep->ops->write_imm(f->snd.ep, &w, 1), 0);
}

/* The receiver: a chunk landed in slot; every byte checked, then its credit back. */
static void on_chunk(struct fx *f, unsigned slot)
{
	const uint8_t *p = f->rcv.data + (size_t)slot * SLOT;
	const struct eng_chunk_hdr *h = &f->rcv.hdr[slot];
	size_t i;

	assert_int_equal(h->seq, f->got);
	assert_int_equal(h->len, len_of(h->seq));
	for (i = 0; i < h->len; i++)
		if (p[i] != pat(h->seq, i))
			fail_msg("chunk %llu, byte %zu: 0x%02x, not 0x%02x (a slot reused too "
				 "early)",
				 (unsigned long long)h->seq, i, p[i], pat(h->seq, i));
	f->got++;
	assert_int_equal(f->rcv.ep->ops->post_recv(f->rcv.ep, RECV_ID, 1), 0);
	assert_int_equal(f->rcv.ep->ops->send_imm(f->rcv.ep, 1, false, slot), 0);
}

/*
 * The sender: a write completed, so its slot is free: scribbled over at
 * once. By then the kernel must have notified every zero-copy send so far.
 */
static void on_write_done(struct fx *f)
{
	unsigned s = (unsigned)(f->completed++ % N_SLOTS); /* chunk n goes in slot n % N_SLOTS */

	if (snd_ep(f)->zc.on && snd_ep(f)->zc.used) /* used: not every send refused */
		assert_true(atomic_load(&snd_ep(f)->zc.notes) >= f->completed);
	assert_true(f->busy[s]);
	f->busy[s] = false;
	memset(f->snd.data + (size_t)s * SLOT, 0xee, SLOT);
	memset(&f->snd.hdr[s], 0xee, sizeof(f->snd.hdr[s]));
}

/* Every completion either end has now. */
static void poll_both(struct fx *f)
{
	struct eng_wc wc;

	while (f->rcv.cq->ops->poll(f->rcv.cq, &wc, 1) == 1) {
		assert_int_equal(wc.status, 0);
		on_chunk(f, wc.imm);
	}
	while (f->snd.cq->ops->poll(f->snd.cq, &wc, 1) == 1) {
		assert_int_equal(wc.status, 0);
		if (wc.op == ENG_WC_WRITE)
			on_write_done(f);
		else
			f->credit[wc.imm] = true;
	}
}

/*
 * CHUNKS chunks through N_SLOTS slots, each slot sent again as soon as its
 * credit is back and its write completed; every byte checked on arrival.
 * Slots go round in order, so completions free them in that order.
 */
static void run(struct fx *f)
{
	uint64_t end = rcp_now_ns() + 60000000000ull;

	while (f->got < CHUNKS) {
		unsigned slot = (unsigned)(f->sent % N_SLOTS);

		if (f->sent < CHUNKS && f->credit[slot] && !f->busy[slot]) {
			send_one(f, slot);
			continue;
		}
		poll_both(f);
		assert_true(rcp_now_ns() < end);
	}
	while (f->completed < f->sent) {
		poll_both(f);
		assert_true(rcp_now_ns() < end);
	}
}

static void test_zero_copy_chunks_arrive_whole_with_slots_reused_at_once(void **state)
{
	struct fx *f = fx_new(false, TCP_ZC_ON);

	(void)state;
	assert_true(snd_ep(f)->zc.on);
	run(f);
	assert_true(snd_ep(f)->zc.used);
	assert_true(atomic_load(&snd_ep(f)->zc.notes) > 0);
	assert_true(snd_ep(f)->zc.on); /* on keeps zero-copy though loopback copies */
	fx_free(f);
}

static void test_sealed_zero_copy_chunks_arrive_whole(void **state)
{
	struct fx *f = fx_new(true, TCP_ZC_ON);

	(void)state;
	run(f);
	assert_true(snd_ep(f)->zc.used);
	fx_free(f);
}

static void test_plain_sends_arrive_whole(void **state)
{
	struct fx *f = fx_new(false, TCP_ZC_OFF);

	(void)state;
	run(f);
	assert_false(snd_ep(f)->zc.used);
	assert_null(snd_ep(f)->zc.outs);
	fx_free(f);
}

static void test_auto_sends_plain_to_loopback(void **state)
{
	struct fx *f = fx_new(false, TCP_ZC_AUTO);

	(void)state;
	assert_false(snd_ep(f)->zc.on);
	fx_free(f);
}

/* Under auto, the kernel's word that it copied turns zero-copy off. */
static void test_an_end_told_the_kernel_copied_goes_plain(void **state)
{
	struct fx *f = fx_new(false, TCP_ZC_ON);

	(void)state;
	snd_ep(f)->zc.keep = false; /* as auto towards a peer where the kernel copies */
	run(f);
	assert_true(atomic_load(&snd_ep(f)->zc.copied)); /* loopback copies */
	assert_false(snd_ep(f)->zc.on);
	assert_true(snd_ep(f)->zc.next < CHUNKS); /* later chunks went plain */
	fx_free(f);
}

/* A socket that refuses SO_ZEROCOPY (here a Unix one) sends plain, and says nothing. */
static void test_a_socket_that_refuses_zero_copy_sends_plain(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct eng_wc wc;
	int sv[2], i;

	(void)state;
	assert_non_null(f);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	end_make(&f->snd, sv[0], false);
	end_make(&f->rcv, sv[1], true);
	assert_int_equal(eng__tcp_ep_zerocopy(f->snd.ep, TCP_ZC_ON), 0);
	assert_false(snd_ep(f)->zc.on);
	end_start(&f->snd, false);
	end_start(&f->rcv, false);
	for (i = 0; i < N_SLOTS; i++)
		f->credit[i] = true;
	send_one(f, 0); /* plain: complete once sendmsg returned */
	assert_int_equal(f->snd.cq->ops->poll(f->snd.cq, &wc, 1), 1);
	assert_int_equal(wc.status, 0);
	on_write_done(f);
	run(f);
	fx_free(f);
}

/* Whether p's page is mapped in this process. */
static bool mapped(const void *p)
{
	unsigned char v;
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;

	return mincore((void *)page, 1, &v) == 0 || errno != ENOMEM;
}

/*
 * A zero-copy end whose peer takes nothing, destroyed with its sends still
 * in the kernel's queue: the connection is reset (not sent on from pages
 * the process may reuse), and tcp_zc.outs is unmapped, not freed to the heap.
 */
static void test_an_end_closed_with_sends_pending_resets_and_unmaps(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct timeval tv = {10, 0};
	uint8_t buf[65536];
	void *outs;
	ssize_t k;
	int s, r, i;

	(void)state;
	assert_non_null(f);
	tcp_pair(&s, &r);
	end_make(&f->snd, s, false);
	assert_int_equal(eng__tcp_ep_zerocopy(f->snd.ep, TCP_ZC_ON), 0);
	if (!snd_ep(f)->zc.on) {
		end_free(&f->snd);
		close(r);
		free(f);
		skip(); /* a kernel without SO_ZEROCOPY on TCP */
	}
	end_start(&f->snd, false);
	for (i = 0; i < N_SLOTS; i++)
		send_one(f, (unsigned)i);
	assert_true(snd_ep(f)->zc.used);
	outs = snd_ep(f)->zc.outs;
	assert_true(mapped(outs));
	end_free(&f->snd);
	assert_false(mapped(outs));
	assert_int_equal(setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	while ((k = recv(r, buf, sizeof(buf), 0)) > 0)
		;
	assert_int_equal(k, -1); /* 0: the queue was sent out and closed plainly */
	assert_int_equal(errno, ECONNRESET);
	close(r);
	free(f);
}

/* This thread's CAP_IPC_LOCK (which lifts the locked-memory limit) on or off. */
static void ipc_lock_cap(bool on)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	assert_int_equal(syscall(SYS_capget, &h, d), 0);
	if (on)
		d[0].effective |= d[0].permitted & (1u << CAP_IPC_LOCK);
	else
		d[0].effective &= ~(1u << CAP_IPC_LOCK);
	assert_int_equal(syscall(SYS_capset, &h, d), 0);
}

/* A run with every zero-copy send over the locked-memory limit: ENOBUFS. */
static struct fx *run_over_the_limit(bool keep)
{
	struct rlimit old, none;
	struct fx *f = fx_new(false, TCP_ZC_ON);

	snd_ep(f)->zc.keep = keep; /* false: as auto */
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &old), 0);
	none = (struct rlimit){0, old.rlim_max};
	ipc_lock_cap(false);
	assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &none), 0);
	run(f);
	assert_int_equal(setrlimit(RLIMIT_MEMLOCK, &old), 0);
	ipc_lock_cap(true);
	return f;
}

/* auto gives up zero-copy after TCP_ZC_NOBUFS_MAX refusals in a row; on keeps trying. */
static void test_refused_zero_copy_sends_turn_an_auto_end_plain(void **state)
{
	struct fx *f = run_over_the_limit(true);

	(void)state;
	if (snd_ep(f)->zc.nobufs == 0) {
		fx_free(f);
		skip(); /* this kernel pinned the pages anyway: nothing refused */
	}
	assert_true(snd_ep(f)->zc.on);
	assert_true(snd_ep(f)->zc.nobufs > TCP_ZC_NOBUFS_MAX);
	fx_free(f);
	f = run_over_the_limit(false);
	assert_false(snd_ep(f)->zc.on);
	assert_int_equal(snd_ep(f)->zc.nobufs, TCP_ZC_NOBUFS_MAX);
	fx_free(f);
}

static void test_the_mode_is_read_from_the_environment(void **state)
{
	enum tcp_zc_mode m = TCP_ZC_OFF;

	(void)state;
	assert_int_equal(unsetenv(TCP_ZC_ENV), 0);
	assert_int_equal(eng__tcp_zc_mode(&m), 0);
	assert_int_equal(m, TCP_ZC_AUTO);
	assert_int_equal(setenv(TCP_ZC_ENV, "on", 1), 0);
	assert_int_equal(eng__tcp_zc_mode(&m), 0);
	assert_int_equal(m, TCP_ZC_ON);
	assert_int_equal(setenv(TCP_ZC_ENV, "off", 1), 0);
	assert_int_equal(eng__tcp_zc_mode(&m), 0);
	assert_int_equal(m, TCP_ZC_OFF);
	assert_int_equal(setenv(TCP_ZC_ENV, "yes", 1), 0);
	assert_int_equal(eng__tcp_zc_mode(&m), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "it takes auto, on or off"));
	assert_int_equal(m, TCP_ZC_OFF);
	unsetenv(TCP_ZC_ENV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_copy_chunks_arrive_whole_with_slots_reused_at_once),
		cmocka_unit_test(test_sealed_zero_copy_chunks_arrive_whole),
		cmocka_unit_test(test_plain_sends_arrive_whole),
		cmocka_unit_test(test_auto_sends_plain_to_loopback),
		cmocka_unit_test(test_an_end_told_the_kernel_copied_goes_plain),
		cmocka_unit_test(test_a_socket_that_refuses_zero_copy_sends_plain),
		cmocka_unit_test(test_an_end_closed_with_sends_pending_resets_and_unmaps),
		cmocka_unit_test(test_refused_zero_copy_sends_turn_an_auto_end_plain),
		cmocka_unit_test(test_the_mode_is_read_from_the_environment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
