/*
 * hash.c - SipHash-2-4 under a random key per process, for tables indexed
 * by names a peer chose.
 *
 * Design: a peer who can predict where a name lands in a table can aim
 * every name at one slot and turn each insert into a walk over all the
 * earlier ones; the manifest check once hashed with unkeyed FNV-1a, and
 * 100,000 crafted names cost it about 5 * 10^9 probes. SipHash (Aumasson
 * and Bernstein, "SipHash: a fast short-input PRF", 2012) is a
 * pseudo-random function of its 128-bit key: without the key nobody can
 * steer where a name lands. Written here from the paper's description
 * (2 compression rounds, 4 finalization rounds) and checked against its
 * test vectors in tests/unit/test_io_manifest_cost.c; OpenSSL has it too, but
 * io/ links only ISA-L, and 40 lines are cheaper than a layering change.
 *
 * The key is drawn from getrandom once per process, by the first caller
 * (pthread_once), and never leaves the process; every table shares it.
 *
 * Threading: thread-safe.
 */
#include "io/io_int.h"

#include "common/common.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The SipRound: add, rotate, xor on four 64-bit words. */
static void sip_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ROTL(v[1], 13) ^ v[0];
	v[0] = ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = ROTL(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = ROTL(v[1], 17) ^ v[2];
	v[2] = ROTL(v[2], 32);
}

static void sip_word(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sip_round(v);
	sip_round(v);
	v[0] ^= m;
}

uint64_t io__siphash24(const uint8_t key[16], const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t k0 = le64(key), k1 = le64(key + 8), last = (uint64_t)n << 56;
	uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
			 k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
	size_t i, tail = n & 7;

	for (i = 0; i + 8 <= n; i += 8)
		sip_word(v, le64(b + i));
	/* the last word: the 0..7 bytes left, and the length's low byte on top */
	while (tail--)
		last |= (uint64_t)b[i + tail] << (8 * tail);
	sip_word(v, last);
	v[2] ^= 0xff;
	for (i = 0; i < 4; i++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static uint8_t key[16];
static int key_err; /* 0, or -errno from getrandom; written once, under key_once */

static void key_draw(void)
{
	size_t got = 0;
	ssize_t r;

	/* flags 0: blocks only until the kernel's pool is first seeded, at boot */
	while (got < sizeof(key)) {
		r = getrandom(key + got, sizeof(key) - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			key_err = -errno;
			return;
		}
		got += (size_t)r;
	}
}

int io__hash_key(const uint8_t **key_out)
{
	pthread_once(&key_once, key_draw);
	if (key_err)
		return rcp_err(key_err,
			       "cannot draw a random key for checking file lists "
			       "(getrandom): %s",
			       strerror(-key_err));
	*key_out = key;
	return 0;
}
