/*
 * test_tcp.c - the TCP transport's data path (engine/transport/tcp.c) on a
 * socketpair: frames that land in their slots, and the frames a hostile or
 * broken peer can send - past its credit, longer than a slot, outside the
 * slots, garbage, a header that does not match, a cut connection - each
 * refused with a sentence before a byte of it lands.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine/transport/tcp_int.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define N_SLOTS 2
#define SLOT 4096
#define RECV_ID 0x10

struct fx {
	struct eng_cq *cq;
	struct eng_link link;
	uint8_t *data;
	struct eng_chunk_hdr hdr[N_SLOTS];
	struct eng_ep *ep;
	int peer; /* the other end of the socketpair: the test is the peer */
};

static int fx_make(void **state, bool receiver)
{
	struct fx *f = calloc(1, sizeof(*f));
	int sv[2];

	assert_non_null(f);
	f->data = aligned_alloc(4096, N_SLOTS * SLOT);
	assert_non_null(f->data);
	memset(f->data, 0, N_SLOTS * SLOT);
	f->link = (struct eng_link){.rail_dev = "test0",
				    .data = f->data,
				    .hdr = f->hdr,
				    .n_slots = N_SLOTS,
				    .slot_size = SLOT};
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(eng__tcp_cq_create(&f->cq), 0);
	assert_int_equal(eng__tcp_ep_create(f->cq, sv[0], &f->link, receiver, &f->ep), 0);
	assert_int_equal(f->ep->ops->post_recv(f->ep, RECV_ID, N_SLOTS), 0);
	assert_int_equal(eng__tcp_ep_start(f->ep), 0);
	f->peer = sv[1];
	*state = f;
	return 0;
}

static int setup_receiver(void **state)
{
	return fx_make(state, true);
}

static int setup_sender(void **state)
{
	return fx_make(state, false);
}

static int teardown(void **state)
{
	struct fx *f = *state;

	eng__tcp_ep_destroy(f->ep);
	eng__tcp_cq_destroy(f->cq);
	if (f->peer >= 0)
		close(f->peer);
	free(f->data);
	free(f);
	return 0;
}

/* The next completion on cq, waited for at most 5 s. */
static struct eng_wc next_wc(struct eng_cq *cq)
{
	struct eng_wc wc;
	uint64_t end = rcp_now_ns() + 5000000000ull;

	while (cq->ops->poll(cq, &wc, 1) == 0) {
		assert_true(rcp_now_ns() < end);
		usleep(500);
	}
	return wc;
}

static void put(int fd, const void *buf, size_t len)
{
	/* A refused frame ends the connection: the rest of it may find it closed. */
	if (send(fd, buf, len, MSG_NOSIGNAL) < 0)
		return;
}

static struct eng_chunk_hdr hdr_for(uint32_t slot, uint32_t len)
{
	return (struct eng_chunk_hdr){
		.magic = ENG_HDR_MAGIC, .slot = slot, .token = 7, .seq = slot, .len = len};
}

/* A chunk frame for slot, len bytes of fill, with header h. */
static void send_chunk_hdr(int fd, uint32_t slot, uint32_t len, uint8_t fill,
			   const struct eng_chunk_hdr *h)
{
	struct tcp_frame fr = {TCP_FRAME_MAGIC, TCP_FRAME_CHUNK, slot, len};
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	memset(p, fill, len);
	put(fd, &fr, sizeof(fr));
	put(fd, h, sizeof(*h));
	put(fd, p, len);
	free(p);
}

static void send_chunk(int fd, uint32_t slot, uint32_t len, uint8_t fill)
{
	struct eng_chunk_hdr h = hdr_for(slot, len);

	send_chunk_hdr(fd, slot, len, fill, &h);
}

static void assert_refused(struct fx *f, const char *why)
{
	struct eng_wc wc = next_wc(f->cq);

	assert_int_not_equal(wc.status, 0);
	assert_int_equal(wc.op, ENG_WC_RECV_IMM);
	assert_non_null(wc.status_str);
	if (!strstr(wc.status_str, why))
		fail_msg("expected '%s' in '%s'", why, wc.status_str);
}

static bool all(const uint8_t *p, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void test_chunk_lands_in_its_slot(void **state)
{
	struct fx *f = *state;
	struct eng_wc wc;

	send_chunk(f->peer, 1, 100, 0xab);
	wc = next_wc(f->cq);
	assert_int_equal(wc.status, 0);
	assert_int_equal(wc.op, ENG_WC_RECV_IMM);
	assert_int_equal(wc.imm, 1);
	assert_int_equal(wc.wr_id, RECV_ID);
	assert_true(all(f->data + SLOT, 100, 0xab));
	assert_true(all(f->data, SLOT, 0)); /* slot 0 untouched */
	assert_int_equal(f->hdr[1].len, 100);
	assert_int_equal(f->hdr[1].seq, 1);
}

static void test_chunk_past_its_credit_never_lands(void **state)
{
	struct fx *f = *state;

	send_chunk(f->peer, 0, 64, 0x11);
	assert_int_equal(next_wc(f->cq).status, 0);
	send_chunk(f->peer, 0, 64, 0x22); /* the credit for slot 0 is spent */
	assert_refused(f, "a slot it held no credit for");
	assert_true(all(f->data, 64, 0x11));
}

static void test_returned_credit_opens_the_slot_again(void **state)
{
	struct fx *f = *state;
	struct tcp_frame got;

	send_chunk(f->peer, 0, 64, 0x11);
	assert_int_equal(next_wc(f->cq).status, 0);
	assert_int_equal(f->ep->ops->post_recv(f->ep, RECV_ID, 1), 0);
	assert_int_equal(f->ep->ops->send_imm(f->ep, 5, false, 0), 0);
	assert_int_equal(recv(f->peer, &got, sizeof(got), MSG_WAITALL), (ssize_t)sizeof(got));
	assert_int_equal(got.magic, TCP_FRAME_MAGIC);
	assert_int_equal(got.type, TCP_FRAME_CREDIT);
	assert_int_equal(got.imm, 0);
	send_chunk(f->peer, 0, 64, 0x33);
	assert_int_equal(next_wc(f->cq).status, 0);
	assert_true(all(f->data, 64, 0x33));
}

static void test_chunk_longer_than_its_slot_is_refused(void **state)
{
	struct fx *f = *state;

	send_chunk(f->peer, 0, SLOT + 1, 0x44);
	assert_refused(f, "longer than its slot");
	assert_true(all(f->data, 2 * SLOT, 0));
}

static void test_slot_beyond_the_last_is_refused(void **state)
{
	struct fx *f = *state;

	send_chunk(f->peer, N_SLOTS, 64, 0x55);
	assert_refused(f, "a slot that does not exist");
	assert_true(all(f->data, 2 * SLOT, 0));
}

static void test_garbage_is_refused(void **state)
{
	struct fx *f = *state;
	uint8_t junk[64];

	memset(junk, 0x5a, sizeof(junk));
	put(f->peer, junk, sizeof(junk));
	assert_refused(f, "bad magic");
	assert_true(all(f->data, 2 * SLOT, 0));
}

static void test_unknown_frame_type_is_refused(void **state)
{
	struct fx *f = *state;
	struct tcp_frame fr = {TCP_FRAME_MAGIC, 9, 0, 0};

	put(f->peer, &fr, sizeof(fr));
	assert_refused(f, "unknown type");
}

static void test_header_that_contradicts_its_frame_is_refused(void **state)
{
	struct fx *f = *state;
	struct eng_chunk_hdr h = hdr_for(0, 64);

	h.len = SLOT; /* the frame carries 64 */
	send_chunk_hdr(f->peer, 0, 64, 0x66, &h);
	assert_refused(f, "does not match its frame");
	assert_true(all(f->data, 2 * SLOT, 0));
}

static void test_cut_connection_ends_the_link(void **state)
{
	struct fx *f = *state;

	close(f->peer);
	f->peer = -1;
	assert_refused(f, "closed the connection");
}

static void test_cut_mid_chunk_ends_the_link(void **state)
{
	struct fx *f = *state;
	struct tcp_frame fr = {TCP_FRAME_MAGIC, TCP_FRAME_CHUNK, 0, 100};
	struct eng_chunk_hdr h = hdr_for(0, 100);

	put(f->peer, &fr, sizeof(fr));
	put(f->peer, &h, sizeof(h));
	put(f->peer, "abc", 3);
	close(f->peer);
	f->peer = -1;
	assert_refused(f, "mid-frame");
}

static void test_sender_end_takes_no_chunks(void **state)
{
	struct fx *f = *state;

	send_chunk(f->peer, 0, 64, 0x77);
	assert_refused(f, "the receiver sent a chunk");
	assert_true(all(f->data, 2 * SLOT, 0));
}

static void test_credits_past_the_receives_are_refused(void **state)
{
	struct fx *f = *state;
	struct tcp_frame fr = {TCP_FRAME_MAGIC, TCP_FRAME_CREDIT, 0, 0};
	int i;

	for (i = 0; i < N_SLOTS; i++) {
		put(f->peer, &fr, sizeof(fr));
		assert_int_equal(next_wc(f->cq).status, 0);
	}
	put(f->peer, &fr, sizeof(fr));
	assert_refused(f, "past the receives");
}

/* A sender's writes, through its endpoint, reach a receiver's slots. */
static void test_writes_reach_the_receivers_slots(void **state)
{
	struct fx *rx = *state;
	struct eng_link tl = rx->link;
	struct eng_cq *tcq;
	struct eng_ep *tx;
	struct eng_chunk_hdr h[2] = {hdr_for(0, 10), hdr_for(1, SLOT)};
	static uint8_t payload[2][SLOT];
	struct eng_write w[2];
	struct eng_wc wc;
	unsigned i;

	memset(payload[0], 1, SLOT);
	memset(payload[1], 2, SLOT);
	assert_int_equal(eng__tcp_cq_create(&tcq), 0);
	assert_int_equal(eng__tcp_ep_create(tcq, rx->peer, &tl, false, &tx), 0);
	rx->peer = -1; /* the sender's endpoint owns it */
	for (i = 0; i < 2; i++)
		w[i] = (struct eng_write){.wr_id = 100 + i,
					  .signaled = i == 1,
					  .hdr = &h[i],
					  .data = payload[i],
					  .len = h[i].len,
					  .imm = i};
	assert_int_equal(tx->ops->write_imm(tx, w, 2), 0);
	wc = next_wc(tcq);
	assert_int_equal(wc.status, 0);
	assert_int_equal(wc.op, ENG_WC_WRITE);
	assert_int_equal(wc.wr_id, 101); /* only the signaled one */
	for (i = 0; i < 2; i++) {
		wc = next_wc(rx->cq);
		assert_int_equal(wc.status, 0);
		assert_int_equal(wc.imm, i);
	}
	assert_true(all(rx->data, 10, 1));
	assert_true(all(rx->data + 10, SLOT - 10, 0));
	assert_true(all(rx->data + SLOT, SLOT, 2));
	eng__tcp_ep_destroy(tx);
	eng__tcp_cq_destroy(tcq);
}

/* ---- sealed chunks (a keyed session): tcp_seal.c ---- */

static const uint8_t key_a[TCP_SEAL_KEY_LEN] = "railcp-test-chunk-key-0123456789";
static const uint8_t key_b[TCP_SEAL_KEY_LEN] = "railcp-test-chunk-key-012345678X";

#define STRIPE 3

static int setup_sealed(void **state)
{
	struct fx *f;
	int sv[2];

	f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->data = aligned_alloc(4096, N_SLOTS * SLOT);
	assert_non_null(f->data);
	memset(f->data, 0, N_SLOTS * SLOT);
	f->link = (struct eng_link){.rail_dev = "test0",
				    .data = f->data,
				    .hdr = f->hdr,
				    .n_slots = N_SLOTS,
				    .slot_size = SLOT};
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(eng__tcp_cq_create(&f->cq), 0);
	assert_int_equal(eng__tcp_ep_create(f->cq, sv[0], &f->link, true, &f->ep), 0);
	assert_int_equal(eng__tcp_ep_seal(f->ep, key_a, STRIPE), 0);
	assert_int_equal(f->ep->ops->post_recv(f->ep, RECV_ID, N_SLOTS), 0);
	assert_int_equal(eng__tcp_ep_start(f->ep), 0);
	f->peer = sv[1];
	*state = f;
	return 0;
}

/*
 * A chunk for slot of len bytes of fill, sealed by seal; flip, when not
 * negative, is the byte of the sealed payload turned over on the wire.
 */
static void send_sealed(int fd, struct tcp_seal *seal, uint32_t slot, uint32_t len, uint8_t fill,
			int flip)
{
	struct tcp_frame fr = {TCP_FRAME_MAGIC, TCP_FRAME_CHUNK, slot, len};
	struct eng_chunk_hdr h = hdr_for(slot, len), hc;
	uint8_t *p = malloc(len), tag[TCP_SEAL_TAG_LEN];

	assert_non_null(p);
	memset(p, fill, len);
	assert_int_equal(eng__tcp_seal_chunk(seal, &fr, &h, &hc, p, tag), 0);
	assert_false(all(p, len, fill)); /* what travels is not the plaintext */
	if (flip >= 0)
		p[flip] ^= 1;
	put(fd, &fr, sizeof(fr));
	put(fd, &hc, sizeof(hc));
	put(fd, p, len);
	put(fd, tag, sizeof(tag));
	free(p);
}

static struct tcp_seal *sender_seal(const uint8_t *key, uint32_t stripe)
{
	struct tcp_seal *s = NULL;

	assert_int_equal(eng__tcp_seal_create(key, stripe, true, &s), 0);
	return s;
}

static void test_sealed_chunks_land_decrypted(void **state)
{
	struct fx *f = *state;
	struct tcp_seal *s = sender_seal(key_a, STRIPE);
	struct eng_wc wc;

	send_sealed(f->peer, s, 0, 100, 0xab, -1);
	send_sealed(f->peer, s, 1, SLOT, 0xcd, -1);
	wc = next_wc(f->cq);
	assert_int_equal(wc.status, 0);
	assert_int_equal(next_wc(f->cq).status, 0);
	assert_true(all(f->data, 100, 0xab));
	assert_true(all(f->data + SLOT, SLOT, 0xcd));
	assert_int_equal(f->hdr[1].len, SLOT);
	assert_int_equal(f->hdr[1].magic, ENG_HDR_MAGIC);
	eng__tcp_seal_destroy(s);
}

/* The chunk fails its tag: refused, and the data path never hears of it. */
static void assert_sealed_refused(struct fx *f)
{
	assert_refused(f, "fails its authentication");
	assert_int_equal(f->hdr[0].magic, 0); /* no header handed on */
}

static void test_a_chunk_altered_on_the_wire_is_refused(void **state)
{
	struct fx *f = *state;
	struct tcp_seal *s = sender_seal(key_a, STRIPE);

	send_sealed(f->peer, s, 0, 100, 0xab, 57);
	assert_sealed_refused(f);
	eng__tcp_seal_destroy(s);
}

static void test_a_chunk_sealed_with_another_key_is_refused(void **state)
{
	struct fx *f = *state;
	struct tcp_seal *s = sender_seal(key_b, STRIPE);

	send_sealed(f->peer, s, 0, 100, 0xab, -1);
	assert_sealed_refused(f);
	eng__tcp_seal_destroy(s);
}

static void test_a_chunk_sealed_for_another_stripe_is_refused(void **state)
{
	struct fx *f = *state;
	struct tcp_seal *s = sender_seal(key_a, STRIPE + 1);

	send_sealed(f->peer, s, 0, 100, 0xab, -1);
	assert_sealed_refused(f);
	eng__tcp_seal_destroy(s);
}

static void test_a_replayed_chunk_is_refused(void **state)
{
	struct fx *f = *state;
	struct tcp_seal *s = sender_seal(key_a, STRIPE), *again = sender_seal(key_a, STRIPE);

	send_sealed(f->peer, s, 0, 100, 0xab, -1);
	assert_int_equal(next_wc(f->cq).status, 0);
	send_sealed(f->peer, again, 1, 100, 0xab, -1); /* chunk number 0 once more */
	assert_refused(f, "fails its authentication");
	eng__tcp_seal_destroy(s);
	eng__tcp_seal_destroy(again);
}

static void test_a_chunk_in_clear_is_refused_when_sealed(void **state)
{
	struct fx *f = *state;

	send_chunk(f->peer, 0, 100, 0xab);
	send_chunk(f->peer, 1, 16, 0xab); /* the first one's tag, read from what follows */
	assert_sealed_refused(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_chunk_lands_in_its_slot, setup_receiver,
						teardown),
		cmocka_unit_test_setup_teardown(test_chunk_past_its_credit_never_lands,
						setup_receiver, teardown),
		cmocka_unit_test_setup_teardown(test_returned_credit_opens_the_slot_again,
						setup_receiver, teardown),
		cmocka_unit_test_setup_teardown(test_chunk_longer_than_its_slot_is_refused,
						setup_receiver, teardown),
		cmocka_unit_test_setup_teardown(test_slot_beyond_the_last_is_refused,
						setup_receiver, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_is_refused, setup_receiver, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_frame_type_is_refused, setup_receiver,
						teardown),
		cmocka_unit_test_setup_teardown(test_header_that_contradicts_its_frame_is_refused,
						setup_receiver, teardown),
		cmocka_unit_test_setup_teardown(test_cut_connection_ends_the_link, setup_receiver,
						teardown),
		cmocka_unit_test_setup_teardown(test_cut_mid_chunk_ends_the_link, setup_receiver,
						teardown),
		cmocka_unit_test_setup_teardown(test_sender_end_takes_no_chunks, setup_sender,
						teardown),
		cmocka_unit_test_setup_teardown(test_credits_past_the_receives_are_refused,
						setup_sender, teardown),
		cmocka_unit_test_setup_teardown(test_writes_reach_the_receivers_slots,
						setup_receiver, teardown),
		cmocka_unit_test_setup_teardown(test_sealed_chunks_land_decrypted, setup_sealed,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_chunk_altered_on_the_wire_is_refused,
						setup_sealed, teardown),
		cmocka_unit_test_setup_teardown(test_a_chunk_sealed_with_another_key_is_refused,
						setup_sealed, teardown),
		cmocka_unit_test_setup_teardown(test_a_chunk_sealed_for_another_stripe_is_refused,
						setup_sealed, teardown),
		cmocka_unit_test_setup_teardown(test_a_replayed_chunk_is_refused, setup_sealed,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_chunk_in_clear_is_refused_when_sealed,
						setup_sealed, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
