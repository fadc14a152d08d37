/*
 * auth.h - private to engine/session/: the primitives of session
 * authentication, HMAC-SHA256 challenge-response over a shared key (the
 * exchange on the control connection is eng__session_auth, session_int.h).
 *
 * The key: eng__auth_key_find looks, in this order, at the --key-file the
 * user named, the environment variable RAILCP_KEY (its bytes are the key),
 * and the default file $XDG_CONFIG_HOME/railcp/key, which is
 * ~/.config/railcp/key when XDG_CONFIG_HOME is unset. A key file must be a
 * regular file of the user running railcp with no permission for group or
 * others (chmod 600), as ssh demands of private keys. Its bytes are the key,
 * trailing newlines removed (so `head -c 32 /dev/urandom | base64 > key`
 * and RAILCP_KEY=$(cat key) give the same key); a key shorter than
 * ENG_AUTH_KEY_MIN bytes is refused: the proofs below are HMACs of it, and
 * one recorded proof lets whoever holds it test guesses offline, which only
 * a key with that much randomness makes hopeless.
 *
 * The exchange (mutual: each side sends a fresh challenge and checks the
 * other's answer; eng__session_auth runs it on the control connection):
 *   client -> server  Cc                    (hello; 32 random bytes)
 *   server -> client  Cs                    (challenge; nothing that depends on K)
 *   client -> server  prove(CLIENT)         = HMAC(K, Cs || "railcp-auth-3 client" || Cc || T1)
 *   server            check(CLIENT); on failure it refuses the session before any
 *                     file or rail is touched, having sent nothing that depends on K
 *   server -> client  prove(SERVER)         = HMAC(K, Cc || "railcp-auth-3 server" || Cs || T2)
 *   client            check(SERVER); on failure it stops before sending anything else
 * T1 is the transcript (proto.h, seal.c) of the hello and the challenge as
 * their bytes crossed the wire, T2 that of the hello, the challenge and the
 * client's proof: whatever the hello asks (destination, flags, chunk,
 * stripes) is proven by both sides together with the key, so an on-path
 * attacker who changes a byte of it, or of the challenge frame, makes the
 * proofs fail instead of steering the session.
 * The client proves first, so a stranger who connects to a server learns
 * nothing to test a guess of the key against; a client talks only to the
 * server it named. The response covers (challenge || context): the context
 * names the role of the prover, so an answer can never be reflected back as
 * the other role's, and holds the prover's own challenge, binding the
 * answer to both fresh challenges of this session and to what was said
 * before it. Comparison is constant time (CRYPTO_memcmp).
 *
 * Threading: every function is thread-safe (no shared state; OpenSSL 3's
 * RAND_bytes and HMAC are thread-safe).
 */
#ifndef RAILCP_ENGINE_AUTH_H
#define RAILCP_ENGINE_AUTH_H

#if !defined(ENG_LAYER_SESSION) && !defined(RAILCP_TESTS)
#error "engine/session/auth.h is private to engine/session/"
#endif

#include <stddef.h>
#include <stdint.h>

#define ENG_AUTH_CHALLENGE_LEN 32
#define ENG_AUTH_RESPONSE_LEN 32 /* SHA-256 */
#define ENG_AUTH_KEY_MIN 32
#define ENG_AUTH_KEY_MAX 4096
#define ENG_AUTH_ENV "RAILCP_KEY"
#define ENG_AUTH_SSH "the key railcp serve --ssh made"

struct eng_auth_key {
	size_t len;
	unsigned char bytes[ENG_AUTH_KEY_MAX];
	char origin[256]; /* where it came from, for messages: a path or "RAILCP_KEY" */
};

enum eng_auth_role {
	ENG_AUTH_CLIENT,
	ENG_AUTH_SERVER,
};

/*
 * Load the key file path into *key_out. Refusals (-EACCES: mode or owner,
 * -EINVAL: shorter than ENG_AUTH_KEY_MIN bytes or too long, -ENOENT) carry
 * one sentence telling the user what to do.
 */
int eng__auth_key_load(const char *path, struct eng_auth_key *key_out);

/*
 * Find the key: key_file if not NULL, else RAILCP_KEY, else the default
 * file. -ENOENT (with a sentence naming where it looked) when none is
 * configured, so a server can fall back to loopback only.
 */
int eng__auth_key_find(const char *key_file, struct eng_auth_key *key_out);

/*
 * The key is the text value itself (RAILCP_KEY's, or the one a one-session
 * server made for its ssh client); origin names it in messages. -EINVAL with
 * a sentence when it is too short or too long.
 */
int eng__auth_key_text(const char *value, const char *origin, struct eng_auth_key *key_out);

/* Overwrite the key's bytes (OPENSSL_cleanse). */
void eng__auth_key_wipe(struct eng_auth_key *key);

/* ENG_AUTH_CHALLENGE_LEN fresh random bytes from OpenSSL's CSPRNG. */
int eng__auth_challenge(uint8_t challenge_out[ENG_AUTH_CHALLENGE_LEN]);

/* HMAC-SHA256(key, challenge || context): the raw primitive. */
int eng__auth_response(const struct eng_auth_key *key,
		       const uint8_t challenge[ENG_AUTH_CHALLENGE_LEN], const void *context,
		       size_t context_len, uint8_t response_out[ENG_AUTH_RESPONSE_LEN]);

#define ENG_AUTH_TRANSCRIPT_LEN 32 /* SHA-256: ENG_TRANSCRIPT_LEN of proto.h */

/*
 * The answer of role `me` to the peer's challenge `theirs`, where `mine` is
 * the challenge this side sent and transcript the frames before this proof
 * (see the exchange above).
 */
int eng__auth_prove(const struct eng_auth_key *key, enum eng_auth_role me,
		    const uint8_t mine[ENG_AUTH_CHALLENGE_LEN],
		    const uint8_t theirs[ENG_AUTH_CHALLENGE_LEN],
		    const uint8_t transcript[ENG_AUTH_TRANSCRIPT_LEN],
		    uint8_t response_out[ENG_AUTH_RESPONSE_LEN]);

/*
 * Check the peer's answer: the peer has role `peer`, `mine` is the challenge
 * this side sent, `theirs` the one the peer sent, transcript the frames
 * before the peer's proof as this side saw them. 0, or -EACCES with a
 * sentence saying the peer does not know the key or the frames before the
 * proofs were altered.
 */
int eng__auth_check(const struct eng_auth_key *key, enum eng_auth_role peer,
		    const uint8_t mine[ENG_AUTH_CHALLENGE_LEN],
		    const uint8_t theirs[ENG_AUTH_CHALLENGE_LEN],
		    const uint8_t transcript[ENG_AUTH_TRANSCRIPT_LEN],
		    const uint8_t response[ENG_AUTH_RESPONSE_LEN]);

#endif
