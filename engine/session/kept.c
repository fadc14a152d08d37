/*
 * kept.c - the chunks a --partial copy keeps from an earlier one, confirmed
 * by the sender before they are left out.
 *
 * The receiver's own check of a kept chunk (partial.c: its bytes read back
 * against the CRC-64 its record holds) proves only that its disk still says
 * what it wrote. Whoever wrote it may have lied: a key holder who pushed a
 * forged file with the real one's size and mtime and cut the copy, or a
 * hostile server of an earlier pull; CRC-64 collisions are anyone's to make.
 * So the receiver sends, for each kept chunk k in plan order, a digest of
 * what its disk holds, ENG_KEPT_DIGEST_LEN bytes (eng__seal_kept_digest:
 * Poly1305 of length as 4 bytes big-endian || bytes, under a one-time key
 * of chunk k's own, HMAC-SHA256(K, label || k)), and the sender computes the
 * same over its own read of chunk k. Only the chunks whose digests match
 * leave the plan on both sides (the sender's "confirmed" map); every other
 * one is received again, written over what was kept. The receiver sends its
 * map before it reads anything (-c: io/checksum.c), and each end reads and
 * hashes on threads of its own (engine/datapath/files_kept.c), so the two
 * ends' reads overlap. K is derived from the session's keys
 * (eng__seal_kept_key), so an observer of the control connection cannot
 * test guesses of the content against the digests, and forged bytes
 * written before the session cannot be made to match: Poly1305 is a
 * universal hash under a key that did not exist yet, two different chunks
 * of up to 1 GiB collide with a chance below 2^-76. Poly1305 rather than
 * HMAC-SHA256 for the bytes themselves: about 7 GB/s a core against 1.8
 * (SHA-NI), the difference between hashing and reading a file.
 * Without a key K is zero: such a session runs between two processes of one
 * user on one host, where no third party sees the frames. But then every
 * chunk's one-time key is public, and under a known key Poly1305 is linear:
 * whoever may write the destination could make other bytes with the source
 * chunk's digest. So a keyless session's digests are HMAC-SHA256(0, k ||
 * length || bytes) cut short (eng__seal_tag's form), which no one can make
 * collide with or without the key; they cost SHA-256's speed, on one host.
 *
 * The cost is one local read of every kept chunk at the sender (the
 * receiver reads them back already, or with -c reads them once from the old
 * file into the new one), and the digests' frames: 16 bytes a chunk. Then each side tells the other
 * how many bytes it read and hashed for this and how long it took ("hashed" frames: the sender's
 * first), so either end's report has both.
 *
 * -c (io/checksum.c) goes the same way: its kept chunks are those of the
 * receiver's old files.
 *
 * Threading: the session's thread, before the job; the digests are made on
 * the pass's threads, each in its own place.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#define ENG_KEPT_DIGEST_LEN 16
#define KEPT_WAIT_RATE (50ull << 20) /* bytes a second the slowest peer reads kept chunks */

struct digests {
	uint8_t key[ENG_SEAL_KEY_LEN];
	bool keyed; /* Poly1305 under K's one-time keys; else HMAC-SHA256 under zero (above) */
	uint8_t *d; /* ENG_KEPT_DIGEST_LEN bytes per kept chunk, in plan order */
	size_t n;   /* kept chunks */
	uint8_t *confirmed; /* the map of those that match: the sender's, as the receiver got it */
	uint64_t differ;    /* sender: those that do not */
};

/*
 * How long to wait for the peer's digests or its answer to ours: the step's
 * limit, plus a second for each KEPT_WAIT_RATE bytes kept, as the peer
 * reads and hashes them all first (tens of GB of old files would pass 30 s).
 */
static int kept_wait_ms(const struct eng_session *s, const uint8_t *kept)
{
	uint64_t ms = (uint64_t)s->timeout_ms +
		      eng__files_bits_bytes(s->files, kept) / (KEPT_WAIT_RATE / 1000);

	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static size_t bits_count(const uint8_t *bits, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += (size_t)__builtin_popcount(bits[i]);
	return n;
}

/*
 * d (zeroed) for session s and kept, a map of len bytes: the digests' key
 * (zero without a key), room for one digest per kept chunk, an empty
 * confirmed map.
 */
static int digests_init(const struct eng_session *s, const uint8_t *kept, size_t len,
			struct digests *d)
{
	int err = s->key ? eng__seal_kept_key(s->tokens, d->key) : 0;

	d->keyed = s->key != NULL;
	d->n = bits_count(kept, len);
	if (!err && (!(d->d = malloc(d->n ? d->n * ENG_KEPT_DIGEST_LEN : 1)) ||
		     !(d->confirmed = calloc(len, 1))))
		err = rcp_err(-ENOMEM, "out of memory for %zu digests", d->n);
	return err;
}

static void digests_fini(struct digests *d)
{
	OPENSSL_cleanse(d->key, sizeof(d->key));
	free(d->d);
	free(d->confirmed);
}

/* This side's "hashed" frame: the bytes its files read and hashed for the digests, and the time. */
static int hashed_send(struct eng_session *s)
{
	json_t *m = eng__proto_msg(ENG_MSG_HASHED, false);
	uint64_t bytes, ns;
	int err;

	if (!m)
		return rcp_err(-ENOMEM, "out of memory");
	eng__files_hashed(s->files, &bytes, &ns);
	json_object_set_new(m, ENG_KEY_BYTES, json_integer((json_int_t)bytes));
	json_object_set_new(m, ENG_KEY_NS, json_integer((json_int_t)ns));
	err = eng__proto_send(&s->ctl, m);
	json_decref(m);
	return err;
}

/* The peer's "hashed" frame, into s. */
static int hashed_recv(struct eng_session *s)
{
	json_t *m = NULL;
	int err = eng__proto_recv(&s->ctl, s->timeout_ms, ENG_MSG_HASHED, &m);

	if (!err)
		err = eng__proto_get_u64(m, ENG_KEY_BYTES, &s->peer_hashed_bytes);
	if (!err)
		err = eng__proto_get_u64(m, ENG_KEY_NS, &s->peer_hash_ns);
	json_decref(m);
	return err;
}

/*
 * The digest of kept chunk i (plan chunk k) as this side reads it (the
 * receiver's disk, the sender's source): on the pass's threads, each in its
 * own place.
 */
static int digest_make(void *ctx, uint64_t i, uint64_t k, const void *buf, uint32_t len)
{
	struct digests *d = ctx;
	uint8_t tag[ENG_SEAL_TAG_LEN];
	int err;

	if (i >= d->n)
		return rcp_err(-EPROTO, "more kept chunks than the map counts");
	if (d->keyed)
		return eng__seal_kept_digest(d->key, k, buf, len, d->d + i * ENG_KEPT_DIGEST_LEN);
	err = eng__seal_tag(d->key, k, buf, len, tag);
	if (!err)
		memcpy(d->d + i * ENG_KEPT_DIGEST_LEN, tag, ENG_KEPT_DIGEST_LEN);
	OPENSSL_cleanse(tag, sizeof(tag));
	return err;
}

/*
 * Sender: each kept chunk (bits, in plan order) confirmed when the
 * receiver's digest (theirs) is that of our read (mine).
 */
static void digests_compare(struct digests *theirs, const struct digests *mine, const uint8_t *bits,
			    size_t len)
{
	size_t k, i = 0;

	for (k = 0; k < len * 8 && i < theirs->n; k++) {
		if (!(bits[k / 8] >> (k % 8) & 1))
			continue;
		if (CRYPTO_memcmp(theirs->d + i * ENG_KEPT_DIGEST_LEN,
				  mine->d + i * ENG_KEPT_DIGEST_LEN, ENG_KEPT_DIGEST_LEN) == 0)
			theirs->confirmed[k / 8] |= (uint8_t)(1u << (k % 8));
		else
			theirs->differ++;
		i++;
	}
}

int eng__kept_send(struct eng_session *s, const uint8_t *kept)
{
	size_t len = eng__files_kept_map_len(s->files), i;
	struct digests d = {0};
	uint64_t forgot;
	int err = digests_init(s, kept, len, &d);

	if (!err)
		err = eng__files_kept_each(s->files, kept, digest_make, &d);
	if (!err)
		err = eng__map_send(&s->ctl, ENG_MSG_KEPT_DIGESTS, d.d, d.n * ENG_KEPT_DIGEST_LEN);
	if (!err)
		err = eng__map_recv(&s->ctl, kept_wait_ms(s, kept), ENG_MSG_CONFIRMED,
				    eng__files_chunks(s->files), d.confirmed, len);
	/* Only what was kept can be confirmed: anything else would be a chunk nobody sends. */
	for (i = 0; !err && i < len; i++)
		if (d.confirmed[i] & ~kept[i])
			err = rcp_err(-EPROTO,
				      "the sender confirmed a chunk this side did not keep");
	if (!err) {
		forgot = eng__files_kept_settle(s->files, kept, d.confirmed);
		if (forgot && s->checksum)
			rcp_log(RCP_LOG_INFO,
				"-c: %" PRIu64 " of %zu chunks compared differ from the sender's",
				forgot, d.n);
		else if (forgot)
			rcp_log(RCP_LOG_NOTICE,
				"%" PRIu64 " chunks kept from an earlier copy differ from the "
				"sender's: they are received again",
				forgot);
	}
	s->compared = d.n;
	if (!err)
		err = hashed_recv(s);
	if (!err)
		err = hashed_send(s);
	digests_fini(&d);
	return err;
}

int eng__kept_confirm(struct eng_session *s, const uint8_t *kept)
{
	size_t len = eng__files_kept_map_len(s->files);
	struct digests d = {0}, mine = {0};
	int err = digests_init(s, kept, len, &d);

	/* Ours first, while the receiver makes its own: the two ends read at once. */
	if (!err)
		err = digests_init(s, kept, len, &mine);
	if (!err)
		err = eng__files_kept_each(s->files, kept, digest_make, &mine);
	if (!err)
		err = eng__map_recv(&s->ctl, kept_wait_ms(s, kept), ENG_MSG_KEPT_DIGESTS,
				    d.n * ENG_KEPT_DIGEST_LEN * 8, d.d, d.n * ENG_KEPT_DIGEST_LEN);
	if (!err)
		digests_compare(&d, &mine, kept, len);
	if (!err)
		err = eng__map_send(&s->ctl, ENG_MSG_CONFIRMED, d.confirmed, len);
	if (!err) {
		eng__files_drop(s->files, d.confirmed);
		if (d.differ && s->checksum)
			rcp_log(RCP_LOG_INFO,
				"-c: %" PRIu64 " of %zu chunks compared differ at the receiver",
				d.differ, d.n);
		else if (d.differ)
			rcp_log(RCP_LOG_NOTICE,
				"%" PRIu64 " chunks the receiver kept from an earlier copy differ "
				"from the source: they are sent again",
				d.differ);
	}
	s->compared = d.n;
	if (!err)
		err = hashed_send(s);
	if (!err)
		err = hashed_recv(s);
	digests_fini(&mine);
	digests_fini(&d);
	return err;
}
