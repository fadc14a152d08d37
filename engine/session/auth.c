/*
 * auth.c - the shared key, HMAC-SHA256 challenge-response (see auth.h for
 * the exchange and where the key comes from), and both halves of the
 * exchange on a session's control connection.
 *
 * The key file is checked on the open descriptor (fstat after open with
 * O_NOFOLLOW), so the file checked is the file read. Key bytes live only in
 * the caller's struct and in local buffers that are cleansed before return.
 *
 * Threading: thread-safe, no shared state.
 */
#include "engine/session/session_int.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(ENG_AUTH_TRANSCRIPT_LEN == ENG_TRANSCRIPT_LEN, "the proofs cover the transcript");

#define LABEL_CLIENT "railcp-auth-3 client"
#define LABEL_SERVER "railcp-auth-3 server"

void eng__auth_key_wipe(struct eng_auth_key *key)
{
	OPENSSL_cleanse(key->bytes, sizeof(key->bytes));
	key->len = 0;
}

static int key_file_check(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return rcp_err(-errno, "cannot stat the key file %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return rcp_err(-EACCES, "the key file %s is not a regular file", path);
	if (st.st_uid != geteuid())
		return rcp_err(-EACCES,
			       "the key file %s belongs to another user; it must be yours "
			       "(chown it, then chmod 600 %s)",
			       path, path);
	if (st.st_mode & 077)
		return rcp_err(-EACCES,
			       "the key file %s is open to group or others (mode %04o); "
			       "run chmod 600 %s",
			       path, (unsigned)(st.st_mode & 07777), path);
	return 0;
}

/* Drop trailing newlines; refuse what is left if it is shorter than ENG_AUTH_KEY_MIN. */
static int key_finish(struct eng_auth_key *key, const char *origin)
{
	while (key->len && (key->bytes[key->len - 1] == '\n' || key->bytes[key->len - 1] == '\r'))
		key->len--;
	if (key->len < ENG_AUTH_KEY_MIN)
		return rcp_err(
			-EINVAL,
			"the key in %s is %s%zu bytes; railcp needs at least %d random bytes: "
			"make one with 'head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE'",
			origin, key->len ? "only " : "", key->len, ENG_AUTH_KEY_MIN);
	snprintf(key->origin, sizeof(key->origin), "%s", origin);
	return 0;
}

static int key_read(int fd, const char *path, struct eng_auth_key *key)
{
	ssize_t n;

	key->len = 0;
	for (;;) {
		n = read(fd, key->bytes + key->len, sizeof(key->bytes) - key->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rcp_err(-errno, "cannot read the key file %s: %s", path,
				       strerror(errno));
		if (n == 0)
			return 0;
		key->len += (size_t)n;
		if (key->len == sizeof(key->bytes))
			return rcp_err(-EINVAL, "the key file %s is longer than %d bytes", path,
				       ENG_AUTH_KEY_MAX - 1);
	}
}

int eng__auth_key_load(const char *path, struct eng_auth_key *key_out)
{
	struct eng_auth_key *key;
	int fd, err;

	key = malloc(sizeof(*key)); /* aside: *key_out is written only on success */
	if (!key)
		return rcp_err(-ENOMEM, "out of memory reading the key file %s", path);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = rcp_err(-errno, "cannot open the key file %s: %s", path, strerror(errno));
		goto out_free;
	}
	err = key_file_check(fd, path);
	err = err ? err : key_read(fd, path, key);
	err = err ? err : key_finish(key, path);
	close(fd);
	if (!err)
		memcpy(key_out, key, sizeof(*key));
out_free:
	OPENSSL_cleanse(key, sizeof(*key));
	free(key);
	return err;
}

int eng__auth_key_text(const char *value, const char *origin, struct eng_auth_key *key_out)
{
	size_t len = strlen(value);
	struct eng_auth_key *key;
	int err;

	if (len >= ENG_AUTH_KEY_MAX)
		return rcp_err(-EINVAL, "%s is longer than %d bytes", origin, ENG_AUTH_KEY_MAX - 1);
	key = malloc(sizeof(*key));
	if (!key)
		return rcp_err(-ENOMEM, "out of memory reading %s", origin);
	memcpy(key->bytes, value, len);
	key->len = len;
	err = key_finish(key, origin);
	if (!err)
		memcpy(key_out, key, sizeof(*key));
	OPENSSL_cleanse(key, sizeof(*key));
	free(key);
	return err;
}

int eng__auth_key_find(const char *key_file, struct eng_auth_key *key_out)
{
	const char *env = getenv(ENG_AUTH_ENV), *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char path[4096];

	if (key_file)
		return eng__auth_key_load(key_file, key_out);
	if (env)
		return eng__auth_key_text(env, ENG_AUTH_ENV, key_out);
	if (xdg && xdg[0])
		snprintf(path, sizeof(path), "%s/railcp/key", xdg);
	else if (home && home[0])
		snprintf(path, sizeof(path), "%s/.config/railcp/key", home);
	else
		return rcp_err(-ENOENT, "no key: neither --key-file, %s nor HOME is set",
			       ENG_AUTH_ENV);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return rcp_err(-ENOENT, "no key: no --key-file, no %s and no %s", ENG_AUTH_ENV,
			       path);
	return eng__auth_key_load(path, key_out);
}

int eng__auth_challenge(uint8_t challenge_out[ENG_AUTH_CHALLENGE_LEN])
{
	uint8_t c[ENG_AUTH_CHALLENGE_LEN];

	if (RAND_bytes(c, sizeof(c)) != 1)
		return rcp_err(-EIO, "the random generator failed to make a challenge");
	memcpy(challenge_out, c, sizeof(c));
	return 0;
}

int eng__auth_response(const struct eng_auth_key *key,
		       const uint8_t challenge[ENG_AUTH_CHALLENGE_LEN], const void *context,
		       size_t context_len, uint8_t response_out[ENG_AUTH_RESPONSE_LEN])
{
	uint8_t msg[ENG_AUTH_CHALLENGE_LEN + 256], md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	if (key->len == 0)
		return rcp_err(-EINVAL, "no key to answer a challenge with");
	if (context_len > sizeof(msg) - ENG_AUTH_CHALLENGE_LEN)
		return rcp_err(-EINVAL, "an authentication context of %zu bytes is too long",
			       context_len);
	memcpy(msg, challenge, ENG_AUTH_CHALLENGE_LEN);
	memcpy(msg + ENG_AUTH_CHALLENGE_LEN, context, context_len);
	if (!HMAC(EVP_sha256(), key->bytes, (int)key->len, msg,
		  ENG_AUTH_CHALLENGE_LEN + context_len, md, &md_len) ||
	    md_len != ENG_AUTH_RESPONSE_LEN)
		return rcp_err(-EIO, "HMAC-SHA256 failed in libcrypto");
	memcpy(response_out, md, ENG_AUTH_RESPONSE_LEN);
	OPENSSL_cleanse(md, sizeof(md));
	return 0;
}

/* context = the prover's role label || the prover's own challenge || the transcript */
static int role_response(const struct eng_auth_key *key, enum eng_auth_role prover,
			 const uint8_t answered[ENG_AUTH_CHALLENGE_LEN],
			 const uint8_t provers_own[ENG_AUTH_CHALLENGE_LEN],
			 const uint8_t transcript[ENG_AUTH_TRANSCRIPT_LEN],
			 uint8_t response_out[ENG_AUTH_RESPONSE_LEN])
{
	const char *label = prover == ENG_AUTH_SERVER ? LABEL_SERVER : LABEL_CLIENT;
	uint8_t ctx[64 + ENG_AUTH_CHALLENGE_LEN + ENG_AUTH_TRANSCRIPT_LEN];
	size_t n = strlen(label);

	memcpy(ctx, label, n);
	memcpy(ctx + n, provers_own, ENG_AUTH_CHALLENGE_LEN);
	memcpy(ctx + n + ENG_AUTH_CHALLENGE_LEN, transcript, ENG_AUTH_TRANSCRIPT_LEN);
	return eng__auth_response(key, answered, ctx,
				  n + ENG_AUTH_CHALLENGE_LEN + ENG_AUTH_TRANSCRIPT_LEN,
				  response_out);
}

int eng__auth_prove(const struct eng_auth_key *key, enum eng_auth_role me,
		    const uint8_t mine[ENG_AUTH_CHALLENGE_LEN],
		    const uint8_t theirs[ENG_AUTH_CHALLENGE_LEN],
		    const uint8_t transcript[ENG_AUTH_TRANSCRIPT_LEN],
		    uint8_t response_out[ENG_AUTH_RESPONSE_LEN])
{
	return role_response(key, me, theirs, mine, transcript, response_out);
}

int eng__auth_check(const struct eng_auth_key *key, enum eng_auth_role peer,
		    const uint8_t mine[ENG_AUTH_CHALLENGE_LEN],
		    const uint8_t theirs[ENG_AUTH_CHALLENGE_LEN],
		    const uint8_t transcript[ENG_AUTH_TRANSCRIPT_LEN],
		    const uint8_t response[ENG_AUTH_RESPONSE_LEN])
{
	uint8_t want[ENG_AUTH_RESPONSE_LEN];
	int err, same;

	err = role_response(key, peer, mine, theirs, transcript, want);
	if (err)
		return err;
	same = CRYPTO_memcmp(want, response, sizeof(want)) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	if (!same)
		return rcp_err(-EACCES, "the peer does not know the shared key, or a frame before "
					"the proofs was altered on the way (its answer to our "
					"challenge is wrong)");
	return 0;
}

/* Send {"type": type, key: hex of len bytes}. */
static int send_hex(struct eng_ctl *c, const char *type, const char *key, const void *bytes,
		    size_t len)
{
	json_t *m = eng__proto_msg(type, false);
	int err = m ? eng__proto_set_hex(m, key, bytes, len) : -ENOMEM;

	if (!err)
		err = eng__proto_send(c, m);
	json_decref(m);
	return err;
}

/*
 * Receive a message of type want carrying key as hex of len bytes, with the
 * small frame limit of a peer that has not proven the key yet.
 */
static int recv_hex(struct eng_ctl *c, int timeout_ms, const char *want, const char *key,
		    void *bytes_out, size_t len)
{
	json_t *m = NULL;
	int err = eng__proto_recv_max(c, timeout_ms, want, ENG_PROTO_MAX_HELLO, &m);

	if (!err)
		err = eng__proto_get_hex(m, key, bytes_out, len);
	json_decref(m);
	return err;
}

/* The client's half: take the server's challenge, prove the key, check the server's proof. */
static int auth_client(struct eng_session *s)
{
	uint8_t theirs[ENG_AUTH_CHALLENGE_LEN], proof[ENG_AUTH_RESPONSE_LEN];
	uint8_t before[ENG_TRANSCRIPT_LEN];
	int err;

	err = recv_hex(&s->ctl, s->timeout_ms, ENG_MSG_CHALLENGE, ENG_KEY_CHALLENGE, theirs,
		       sizeof(theirs));
	if (err == -EPROTO)
		err = rcp_err(-EACCES, "the server did not answer with a challenge (it has no "
				       "key?): refusing to send to it");
	/* The hello and the challenge, as they crossed the wire. */
	if (!err)
		err = eng__auth_prove(s->key, ENG_AUTH_CLIENT, s->challenge, theirs,
				      s->ctl.transcript, proof);
	if (!err)
		err = send_hex(&s->ctl, ENG_MSG_PROOF, ENG_KEY_PROOF, proof, sizeof(proof));
	/* ...and this proof: what the server's covers. */
	if (!err)
		memcpy(before, s->ctl.transcript, sizeof(before));
	if (!err)
		err = recv_hex(&s->ctl, s->timeout_ms, ENG_MSG_PROOF, ENG_KEY_PROOF, proof,
			       sizeof(proof));
	/* Nothing but the proof went out before the server proved the key too. */
	if (!err)
		err = eng__auth_check(s->key, ENG_AUTH_SERVER, s->challenge, theirs, before, proof);
	/* From here on every frame is sealed. */
	if (!err)
		err = eng__seal_keys(s->key, ENG_AUTH_CLIENT, s->challenge, theirs, &s->ctl,
				     s->tokens);
	return err;
}

/*
 * The server's half: a challenge only, then the client's proof, checked
 * before anything that depends on the key leaves this side; then ours.
 */
static int auth_server(struct eng_session *s, const json_t *hello)
{
	uint8_t mine[ENG_AUTH_CHALLENGE_LEN], theirs[ENG_AUTH_CHALLENGE_LEN];
	uint8_t proof[ENG_AUTH_RESPONSE_LEN], before[ENG_TRANSCRIPT_LEN];
	int err;

	if ((err = eng__proto_get_hex(hello, ENG_KEY_CHALLENGE, theirs, sizeof(theirs))) != 0 ||
	    (err = eng__auth_challenge(mine)) != 0 ||
	    (err = send_hex(&s->ctl, ENG_MSG_CHALLENGE, ENG_KEY_CHALLENGE, mine, sizeof(mine))) !=
		    0)
		return err;
	/* The client's proof covers the hello and the challenge as they crossed the wire. */
	memcpy(before, s->ctl.transcript, sizeof(before));
	/* Not yet authenticated: the hello's small frame limit, by the hello's deadline. */
	err = recv_hex(&s->ctl, eng__proto_ms_left(s->auth_end_ns), ENG_MSG_PROOF, ENG_KEY_PROOF,
		       proof, sizeof(proof));
	if (!err)
		err = eng__auth_check(s->key, ENG_AUTH_CLIENT, mine, theirs, before, proof);
	/* Ours covers the client's proof too. */
	if (!err)
		err = eng__auth_prove(s->key, ENG_AUTH_SERVER, mine, theirs, s->ctl.transcript,
				      proof);
	if (!err)
		err = send_hex(&s->ctl, ENG_MSG_PROOF, ENG_KEY_PROOF, proof, sizeof(proof));
	/* From here on every frame is sealed. */
	if (!err)
		err = eng__seal_keys(s->key, ENG_AUTH_SERVER, theirs, mine, &s->ctl, s->tokens);
	return err;
}

static int session_auth(struct eng_session *s, const json_t *hello)
{
	bool offered = json_object_get(hello, ENG_KEY_CHALLENGE) != NULL;

	if (s->side == ENG_CLIENT)
		return s->key ? auth_client(s) : 0;
	if (!s->key)
		return offered ? rcp_err(-EACCES, "this server has no key and cannot prove one: "
						  "configure the same key on both sides")
			       : 0;
	if (!offered)
		return rcp_err(-EACCES, "this server requires a key: give the sender the same key "
					"(--key-file, RAILCP_KEY or ~/.config/railcp/key)");
	return auth_server(s, hello);
}

int eng__session_auth(struct eng_session *s, const json_t *hello)
{
	int err = session_auth(s, hello);

	/* Proven (or keyless, past the hello): the peer's word counts (ENG_KEY_RAILS_DOWN). */
	s->ctl.trusted = !err;
	return err;
}
