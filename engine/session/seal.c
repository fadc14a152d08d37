/*
 * seal.c - what a proven key gives a session beyond the proof (auth.h):
 * the transcript of the frames before it, keys derived with HKDF-SHA256
 * (RFC 5869) from the shared key, both challenges and that transcript, the
 * tag that seals each control frame, and the tokens that admit RDMA
 * connections.
 *
 * The transcript T: every frame's exact bytes, sent or received before the
 * seal, chained as T = SHA-256(T || len || body) from 32 zero bytes (the
 * hello, the challenge and both proofs; auth.h says which part each proof
 * covers). From the key K, the challenges Cc (client's) and Cs (server's)
 * and T after the server's proof:
 *   PRK       = HKDF-Extract(salt = Cc || Cs || T, K)
 *   c2s, s2c  = HKDF-Expand(PRK, "railcp-3 client to server" / "... server to client", 32)
 *   tokens    = HKDF-Expand(PRK, "railcp-3 tokens", 32)
 * A frame's tag is HMAC-SHA256(direction's key, seq || len || body) with
 * seq the frame's number in its direction (both 8 bytes, big-endian) and
 * len the body's (4 bytes), so a frame altered, dropped, replayed,
 * reordered or reflected back fails it. Tokens are
 * HMAC-SHA256(tokens, label || index) cut to 64 bits: the job's, and one per
 * link, so that a connection request seen on the wire admits no other link.
 *
 * Threading: thread-safe, no shared state.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/kdf.h>
#include <string.h>

#define INFO_C2S "railcp-3 client to server"
#define INFO_S2C "railcp-3 server to client"
#define INFO_TOKENS "railcp-3 tokens"

int eng__seal_fold(struct eng_ctl *c, const void *body, uint32_t len)
{
	EVP_MD_CTX *h = EVP_MD_CTX_new();
	uint32_t len_be = htobe32(len);
	unsigned int n = 0;
	int ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) &&
		 EVP_DigestUpdate(h, c->transcript, sizeof(c->transcript)) &&
		 EVP_DigestUpdate(h, &len_be, sizeof(len_be)) && EVP_DigestUpdate(h, body, len) &&
		 EVP_DigestFinal_ex(h, c->transcript, &n) && n == sizeof(c->transcript);

	EVP_MD_CTX_free(h);
	return ok ? 0 : rcp_err(-EIO, "SHA-256 failed in libcrypto");
}

static int hkdf(const struct eng_auth_key *key, const uint8_t *salt, size_t salt_len,
		const char *info, uint8_t *out, size_t out_len)
{
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	OSSL_PARAM p[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key->bytes, key->len),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, strlen(info)),
		OSSL_PARAM_construct_end(),
	};
	int ok = ctx && EVP_KDF_derive(ctx, out, out_len, p) == 1;

	EVP_KDF_CTX_free(ctx);
	EVP_KDF_free(kdf);
	return ok ? 0 : rcp_err(-EIO, "HKDF-SHA256 failed in libcrypto");
}

int eng__seal_keys(const struct eng_auth_key *key, enum eng_auth_role me,
		   const uint8_t cc[ENG_AUTH_CHALLENGE_LEN],
		   const uint8_t cs[ENG_AUTH_CHALLENGE_LEN], struct eng_ctl *ctl,
		   uint8_t tokens_out[ENG_SEAL_KEY_LEN])
{
	uint8_t salt[2 * ENG_AUTH_CHALLENGE_LEN + ENG_TRANSCRIPT_LEN];
	uint8_t c2s[ENG_SEAL_KEY_LEN], s2c[ENG_SEAL_KEY_LEN];
	int err;

	memcpy(salt, cc, ENG_AUTH_CHALLENGE_LEN);
	memcpy(salt + ENG_AUTH_CHALLENGE_LEN, cs, ENG_AUTH_CHALLENGE_LEN);
	memcpy(salt + 2 * ENG_AUTH_CHALLENGE_LEN, ctl->transcript, ENG_TRANSCRIPT_LEN);
	err = hkdf(key, salt, sizeof(salt), INFO_C2S, c2s, sizeof(c2s));
	if (!err)
		err = hkdf(key, salt, sizeof(salt), INFO_S2C, s2c, sizeof(s2c));
	if (!err)
		err = hkdf(key, salt, sizeof(salt), INFO_TOKENS, tokens_out, ENG_SEAL_KEY_LEN);
	if (!err) {
		memcpy(ctl->key_out, me == ENG_AUTH_CLIENT ? c2s : s2c, ENG_SEAL_KEY_LEN);
		memcpy(ctl->key_in, me == ENG_AUTH_CLIENT ? s2c : c2s, ENG_SEAL_KEY_LEN);
		ctl->seq_out = ctl->seq_in = 0;
		ctl->sealed = true;
	}
	OPENSSL_cleanse(c2s, sizeof(c2s));
	OPENSSL_cleanse(s2c, sizeof(s2c));
	return err;
}

int eng__seal_tag(const uint8_t key[ENG_SEAL_KEY_LEN], uint64_t seq, const void *body, uint32_t len,
		  uint8_t tag_out[ENG_SEAL_TAG_LEN])
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *h = mac ? EVP_MAC_CTX_new(mac) : NULL;
	OSSL_PARAM p[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	uint64_t seq_be = htobe64(seq);
	uint32_t len_be = htobe32(len);
	size_t n = 0;
	int ok = h && EVP_MAC_init(h, key, ENG_SEAL_KEY_LEN, p) &&
		 EVP_MAC_update(h, (const uint8_t *)&seq_be, sizeof(seq_be)) &&
		 EVP_MAC_update(h, (const uint8_t *)&len_be, sizeof(len_be)) &&
		 EVP_MAC_update(h, body, len) && EVP_MAC_final(h, tag_out, &n, ENG_SEAL_TAG_LEN) &&
		 n == ENG_SEAL_TAG_LEN;

	EVP_MAC_CTX_free(h);
	EVP_MAC_free(mac);
	return ok ? 0 : rcp_err(-EIO, "HMAC-SHA256 failed in libcrypto");
}

/* HMAC-SHA256(tokens, label): a key of its own for each use of the tokens. */
static int tokens_key(const uint8_t tokens[ENG_SEAL_KEY_LEN], const char *label,
		      uint8_t key_out[ENG_SEAL_KEY_LEN])
{
	unsigned int n = 0;

	if (!HMAC(EVP_sha256(), tokens, ENG_SEAL_KEY_LEN, (const uint8_t *)label, strlen(label),
		  key_out, &n) ||
	    n != ENG_SEAL_KEY_LEN)
		return rcp_err(-EIO, "HMAC-SHA256 failed in libcrypto");
	return 0;
}

int eng__seal_chunk_key(const uint8_t tokens[ENG_SEAL_KEY_LEN], uint8_t key_out[ENG_SEAL_KEY_LEN])
{
	return tokens_key(tokens, "railcp-3 tcp chunks", key_out);
}

int eng__seal_kept_key(const uint8_t tokens[ENG_SEAL_KEY_LEN], uint8_t key_out[ENG_SEAL_KEY_LEN])
{
	return tokens_key(tokens, "railcp-3 kept digests", key_out);
}

/* Poly1305 of (len_be || body) under a one-time key of 32 bytes, into out. */
static EVP_MAC
	*poly1305_mac; /* fetched once: a fetch per chunk costs more than a small chunk's MAC */
static pthread_once_t poly1305_once = PTHREAD_ONCE_INIT;

static void poly1305_fetch(void)
{
	poly1305_mac = EVP_MAC_fetch(NULL, "POLY1305", NULL);
}

static int poly1305(const uint8_t key[32], const void *body, uint32_t len, uint8_t out[16])
{
	EVP_MAC *mac = (pthread_once(&poly1305_once, poly1305_fetch), poly1305_mac);
	EVP_MAC_CTX *h = mac ? EVP_MAC_CTX_new(mac) : NULL;
	uint32_t len_be = htobe32(len);
	size_t n = 0;
	int ok = h && EVP_MAC_init(h, key, 32, NULL) &&
		 EVP_MAC_update(h, (const uint8_t *)&len_be, sizeof(len_be)) &&
		 EVP_MAC_update(h, body, len) && EVP_MAC_final(h, out, &n, 16) && n == 16;

	EVP_MAC_CTX_free(h);
	return ok ? 0 : rcp_err(-EIO, "Poly1305 failed in libcrypto");
}

int eng__seal_kept_digest(const uint8_t key[ENG_SEAL_KEY_LEN], uint64_t k, const void *buf,
			  uint32_t len, uint8_t out[16])
{
	static const char label[] = "railcp-11 kept chunk";
	uint8_t msg[sizeof(label) - 1 + 8], once[EVP_MAX_MD_SIZE];
	uint64_t k_be = htobe64(k);
	unsigned int n = 0;
	int err;

	/* Poly1305 is safe for one message a key: each chunk of each session has its own. */
	memcpy(msg, label, sizeof(label) - 1);
	memcpy(msg + sizeof(label) - 1, &k_be, sizeof(k_be));
	if (!HMAC(EVP_sha256(), key, ENG_SEAL_KEY_LEN, msg, sizeof(msg), once, &n) || n != 32)
		return rcp_err(-EIO, "HMAC-SHA256 failed in libcrypto");
	err = poly1305(once, buf, len, out);
	OPENSSL_cleanse(once, sizeof(once));
	return err;
}

uint64_t eng__seal_token(const uint8_t tokens[ENG_SEAL_KEY_LEN], const char *label, uint32_t index)
{
	uint8_t msg[64], md[EVP_MAX_MD_SIZE];
	uint32_t index_be = htobe32(index);
	size_t n = strlen(label);
	unsigned int md_len = 0;
	uint64_t t = 0;

	if (n > sizeof(msg) - sizeof(index_be))
		n = sizeof(msg) - sizeof(index_be);
	memcpy(msg, label, n);
	memcpy(msg + n, &index_be, sizeof(index_be));
	if (HMAC(EVP_sha256(), tokens, ENG_SEAL_KEY_LEN, msg, n + sizeof(index_be), md, &md_len))
		memcpy(&t, md, sizeof(t));
	OPENSSL_cleanse(md, sizeof(md));
	return t;
}
