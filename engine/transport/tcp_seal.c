/*
 * tcp_seal.c - the TCP transport's chunks under AES-256-GCM, when the
 * session has a key: each chunk frame's 64-byte header and payload are
 * encrypted and authenticated, the frame itself (magic, type, slot,
 * length) is authenticated in clear, and a 16-byte tag follows the
 * payload.
 *
 * The key is the session's own (derived by the session from its key
 * exchange, eng_conn_cfg.chunk_key), so no two sessions share one. The
 * nonce is the stripe's number as the server counts it (4 bytes) and the
 * chunk's number on that stripe (8 bytes): each stripe has one sending end,
 * which counts up, and the receiving end expects the next number, so a
 * chunk replayed, dropped, reordered or moved to another stripe fails its
 * tag. The sender encrypts the payload in place in its slot (the slot is
 * read again from the source before any other use) and the header into a
 * copy, since its own header stays in use until the credit returns; the
 * receiver decrypts both in place and hands nothing to the data path
 * before the tag has been checked.
 *
 * Credit frames are not sealed: one forged or replayed names a slot whose
 * chunk is still out, and the receiver then refuses the next chunk for
 * that slot, which ends the stripe; an attacker who can inject segments can
 * reset the connection anyway.
 *
 * Threading: a seal belongs to one endpoint (its worker sends, its reader
 * receives; an endpoint does one of the two).
 */
#include "engine/transport/tcp_int.h"

#include "common/common.h"

#include <endian.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

struct tcp_seal {
	EVP_CIPHER_CTX *ctx;
	uint32_t stripe;
	uint64_t seq; /* the next chunk's number */
};

int eng__tcp_seal_create(const uint8_t key[TCP_SEAL_KEY_LEN], uint32_t stripe, bool sender,
			 struct tcp_seal **seal_out)
{
	struct tcp_seal *s = calloc(1, sizeof(*s));
	int ok;

	if (!s)
		return -ENOMEM;
	s->ctx = EVP_CIPHER_CTX_new();
	ok = s->ctx && (sender ? EVP_EncryptInit_ex(s->ctx, EVP_aes_256_gcm(), NULL, key, NULL)
			       : EVP_DecryptInit_ex(s->ctx, EVP_aes_256_gcm(), NULL, key, NULL));
	if (!ok) {
		EVP_CIPHER_CTX_free(s->ctx);
		free(s);
		return rcp_err(-EIO, "AES-256-GCM is not available in libcrypto");
	}
	s->stripe = stripe;
	*seal_out = s;
	return 0;
}

void eng__tcp_seal_destroy(struct tcp_seal *s)
{
	if (!s)
		return;
	EVP_CIPHER_CTX_free(s->ctx); /* cleanses the key schedule */
	free(s);
}

static void nonce_of(const struct tcp_seal *s, uint8_t iv[12])
{
	uint32_t stripe = htobe32(s->stripe);
	uint64_t seq = htobe64(s->seq);

	memcpy(iv, &stripe, sizeof(stripe));
	memcpy(iv + 4, &seq, sizeof(seq));
}

int eng__tcp_seal_chunk(struct tcp_seal *s, const struct tcp_frame *f,
			const struct eng_chunk_hdr *h, struct eng_chunk_hdr *h_out, uint8_t *data,
			uint8_t tag_out[TCP_SEAL_TAG_LEN])
{
	uint8_t iv[12];
	int n = 0, ok;

	nonce_of(s, iv);
	ok = EVP_EncryptInit_ex(s->ctx, NULL, NULL, NULL, iv) &&
	     EVP_EncryptUpdate(s->ctx, NULL, &n, (const uint8_t *)f, sizeof(*f)) &&
	     EVP_EncryptUpdate(s->ctx, (uint8_t *)h_out, &n, (const uint8_t *)h, sizeof(*h)) &&
	     EVP_EncryptUpdate(s->ctx, data, &n, data, (int)f->len) &&
	     EVP_EncryptFinal_ex(s->ctx, data + f->len, &n) &&
	     EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_GET_TAG, TCP_SEAL_TAG_LEN, tag_out);
	s->seq++;
	return ok ? 0 : -EIO;
}

int eng__tcp_open_begin(struct tcp_seal *s, const struct tcp_frame *f)
{
	uint8_t iv[12];
	int n = 0;

	nonce_of(s, iv);
	s->seq++;
	return EVP_DecryptInit_ex(s->ctx, NULL, NULL, NULL, iv) &&
			       EVP_DecryptUpdate(s->ctx, NULL, &n, (const uint8_t *)f, sizeof(*f))
		       ? 0
		       : -EIO;
}

int eng__tcp_open_update(struct tcp_seal *s, void *buf, uint32_t len)
{
	int n = 0;

	return EVP_DecryptUpdate(s->ctx, buf, &n, buf, (int)len) ? 0 : -EIO;
}

bool eng__tcp_open_end(struct tcp_seal *s, const uint8_t tag[TCP_SEAL_TAG_LEN])
{
	uint8_t t[TCP_SEAL_TAG_LEN], rest[16];
	int n = 0;

	memcpy(t, tag, sizeof(t));
	return EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_SET_TAG, TCP_SEAL_TAG_LEN, t) &&
	       EVP_DecryptFinal_ex(s->ctx, rest, &n) > 0;
}
