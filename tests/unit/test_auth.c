/*
 * test_auth.c - the session authentication primitives: the key and where
 * it may come from, HMAC-SHA256 against a published vector, and the mutual
 * challenge-response accepting the right key only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "engine/session/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Keys as railcp suggests making them: 32 random bytes in base64 (44 bytes). */
#define KEY_A "l4mUTQbQ0T0hX2mJ8cJx4QOa6Kk0t1o0m8Qm3yqT7vE="
#define KEY_FILE "f1le3d4zY1S8Uu5R5QeGmB2Jj6o0T6m1ZC2yq4gHb0A="
#define KEY_ENV "3nv9K2y0cQ1cX3cP7Qv8w0b1N5mJt4Rz9sLr2jYxW6U="
#define KEY_DEFAULT "d3fAu1tq8Fz0Yw2Xv5Jm1Kp7Rr4Ns9Lt6Hc3Qb0Ga8E="

struct fixture {
	char dir[256];
	char path[300];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	snprintf(fx->dir, sizeof(fx->dir), "/tmp/railcp-auth-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->path, sizeof(fx->path), "%s/key", fx->dir);
	unsetenv(ENG_AUTH_ENV);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char p[400];

	unlink(fx->path);
	snprintf(p, sizeof(p), "%s/railcp/key", fx->dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/railcp", fx->dir);
	rmdir(p);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

static void key_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static struct eng_auth_key *load(const char *path)
{
	static struct eng_auth_key keys[4];
	static unsigned next;
	struct eng_auth_key *k = &keys[next++ % 4];

	assert_int_equal(eng__auth_key_load(path, k), 0);
	return k;
}

/*
 * The whole mutual exchange, each side with the transcript it saw (tc the
 * client's, ts the server's; the same unless a frame was altered); returns
 * the first refusal, or 0.
 */
static int exchange_seen(const struct eng_auth_key *client, const struct eng_auth_key *server,
			 const uint8_t tc[ENG_AUTH_TRANSCRIPT_LEN],
			 const uint8_t ts[ENG_AUTH_TRANSCRIPT_LEN])
{
	uint8_t cc[ENG_AUTH_CHALLENGE_LEN], cs[ENG_AUTH_CHALLENGE_LEN];
	uint8_t rs[ENG_AUTH_RESPONSE_LEN], rc[ENG_AUTH_RESPONSE_LEN];
	int err;

	assert_int_equal(eng__auth_challenge(cc), 0);
	assert_int_equal(eng__auth_challenge(cs), 0);
	/* The client proves first (auth.h). */
	assert_int_equal(eng__auth_prove(client, ENG_AUTH_CLIENT, cc, cs, tc, rc), 0);
	err = eng__auth_check(server, ENG_AUTH_CLIENT, cs, cc, ts, rc);
	if (err)
		return err;
	assert_int_equal(eng__auth_prove(server, ENG_AUTH_SERVER, cs, cc, ts, rs), 0);
	return eng__auth_check(client, ENG_AUTH_SERVER, cc, cs, tc, rs);
}

static int exchange(const struct eng_auth_key *client, const struct eng_auth_key *server)
{
	static const uint8_t t[ENG_AUTH_TRANSCRIPT_LEN] = {1, 2, 3};

	return exchange_seen(client, server, t, t);
}

static void test_the_right_key_is_accepted_both_ways(void **state)
{
	struct fixture *fx = *state;
	struct eng_auth_key *a, *b;

	key_file(fx->path, KEY_A "\n", 0600);
	a = load(fx->path);
	b = load(fx->path);
	assert_int_equal(a->len, strlen(KEY_A)); /* the newline is not part of the key */
	assert_string_equal(a->origin, fx->path);
	assert_int_equal(exchange(a, b), 0);
}

static void test_a_wrong_key_is_refused_on_either_side(void **state)
{
	struct fixture *fx = *state;
	struct eng_auth_key *good, *bad;

	key_file(fx->path, KEY_A, 0600);
	good = load(fx->path);
	key_file(fx->path, KEY_A "x", 0600);
	bad = load(fx->path);
	assert_int_equal(exchange(bad, good), -EACCES); /* the server sees a wrong client */
	assert_non_null(strstr(rcp_err_msg(-EACCES), "does not know the shared key"));
	assert_int_equal(exchange(good, bad), -EACCES); /* the client sees a wrong server */
}

static void test_an_answer_cannot_be_reflected_as_the_other_role(void **state)
{
	struct fixture *fx = *state;
	uint8_t c1[ENG_AUTH_CHALLENGE_LEN], c2[ENG_AUTH_CHALLENGE_LEN], r[ENG_AUTH_RESPONSE_LEN];
	static const uint8_t t[ENG_AUTH_TRANSCRIPT_LEN] = {7};
	struct eng_auth_key *k;

	key_file(fx->path, KEY_A, 0600);
	k = load(fx->path);
	assert_int_equal(eng__auth_challenge(c1), 0);
	assert_int_equal(eng__auth_challenge(c2), 0);
	/* a server's own answer to c1, sent back to it as if from a client */
	assert_int_equal(eng__auth_prove(k, ENG_AUTH_SERVER, c2, c1, t, r), 0);
	assert_int_equal(eng__auth_check(k, ENG_AUTH_CLIENT, c1, c2, t, r), -EACCES);
	assert_int_equal(eng__auth_check(k, ENG_AUTH_SERVER, c1, c2, t, r), 0);
}

static void test_proofs_over_transcripts_that_differ_are_refused(void **state)
{
	struct fixture *fx = *state;
	uint8_t tc[ENG_AUTH_TRANSCRIPT_LEN] = {0}, ts[ENG_AUTH_TRANSCRIPT_LEN] = {0};
	struct eng_auth_key *k;

	key_file(fx->path, KEY_A, 0600);
	k = load(fx->path);
	assert_int_equal(exchange_seen(k, k, tc, ts), 0);
	/* One bit of what was said before the proofs differs between the sides. */
	ts[ENG_AUTH_TRANSCRIPT_LEN - 1] ^= 1;
	assert_int_equal(exchange_seen(k, k, tc, ts), -EACCES);
	assert_non_null(strstr(rcp_err_msg(-EACCES), "altered on the way"));
}

static void test_a_key_file_open_to_others_is_refused(void **state)
{
	static const mode_t bad[] = {0644, 0640, 0604, 0660, 0602, 0620};
	struct fixture *fx = *state;
	struct eng_auth_key k = {.len = 99};
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(bad); i++) {
		key_file(fx->path, KEY_A, bad[i]);
		assert_int_equal(eng__auth_key_load(fx->path, &k), -EACCES);
		assert_non_null(strstr(rcp_err_msg(-EACCES), "chmod 600"));
		assert_int_equal(k.len, 99); /* untouched on failure */
	}
	key_file(fx->path, KEY_A, 0400);
	assert_int_equal(eng__auth_key_load(fx->path, &k), 0);
	assert_int_equal(k.len, strlen(KEY_A));
	if (geteuid() == 0) { /* someone else's file, even with mode 0600 */
		assert_int_equal(chown(fx->path, 65534, 65534), 0);
		assert_int_equal(eng__auth_key_load(fx->path, &k), -EACCES);
		assert_non_null(strstr(rcp_err_msg(-EACCES), "belongs to another user"));
	}
}

static void test_an_empty_or_short_key_is_refused(void **state)
{
	struct fixture *fx = *state;
	struct eng_auth_key k = {.len = 99};

	key_file(fx->path, "", 0600);
	assert_int_equal(eng__auth_key_load(fx->path, &k), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "is 0 bytes; railcp needs at least 32"));
	key_file(fx->path, "\n\r\n", 0600);
	assert_int_equal(eng__auth_key_load(fx->path, &k), -EINVAL);
	/* A human's phrase is guessable offline from one recorded proof. */
	key_file(fx->path, "correct horse battery staple\n", 0600);
	assert_int_equal(eng__auth_key_load(fx->path, &k), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "is only 28 bytes"));
	assert_non_null(strstr(rcp_err_msg(-EINVAL), "head -c 32 /dev/urandom | base64"));
	key_file(fx->path, "0123456789abcdef0123456789abcde", 0600); /* 31 bytes */
	assert_int_equal(eng__auth_key_load(fx->path, &k), -EINVAL);
	assert_int_equal(k.len, 99); /* untouched on failure */
	key_file(fx->path, "0123456789abcdef0123456789abcdef", 0600);
	assert_int_equal(eng__auth_key_load(fx->path, &k), 0);
	assert_int_equal(k.len, ENG_AUTH_KEY_MIN);
	setenv(ENG_AUTH_ENV, "", 1);
	assert_int_equal(eng__auth_key_find(NULL, &k), -EINVAL);
	setenv(ENG_AUTH_ENV, "short", 1);
	assert_int_equal(eng__auth_key_find(NULL, &k), -EINVAL);
	assert_non_null(strstr(rcp_err_msg(-EINVAL), ENG_AUTH_ENV " is only 5 bytes"));
	unsetenv(ENG_AUTH_ENV);
}

static void test_different_challenges_give_different_responses(void **state)
{
	struct fixture *fx = *state;
	uint8_t c1[ENG_AUTH_CHALLENGE_LEN], c2[ENG_AUTH_CHALLENGE_LEN];
	uint8_t r1[ENG_AUTH_RESPONSE_LEN], r2[ENG_AUTH_RESPONSE_LEN], r3[ENG_AUTH_RESPONSE_LEN];
	struct eng_auth_key *k;

	key_file(fx->path, KEY_A, 0600);
	k = load(fx->path);
	assert_int_equal(eng__auth_challenge(c1), 0);
	assert_int_equal(eng__auth_challenge(c2), 0);
	assert_memory_not_equal(c1, c2, sizeof(c1));
	assert_int_equal(eng__auth_response(k, c1, "ctx", 3, r1), 0);
	assert_int_equal(eng__auth_response(k, c2, "ctx", 3, r2), 0);
	assert_int_equal(eng__auth_response(k, c1, "ctx", 3, r3), 0);
	assert_memory_not_equal(r1, r2, sizeof(r1));
	assert_memory_equal(r1, r3, sizeof(r1));
}

static void test_response_is_hmac_sha256_of_challenge_and_context(void **state)
{
	/* RFC 4231 test case 4: key 0x01..0x19, data 50 bytes of 0xcd */
	static const uint8_t want[32] = {
		0x82, 0x55, 0x8a, 0x38, 0x9a, 0x44, 0x3c, 0x0e, 0xa4, 0xcc, 0x81,
		0x98, 0x99, 0xf2, 0x08, 0x3a, 0x85, 0xf0, 0xfa, 0xa3, 0xe5, 0x78,
		0xf8, 0x07, 0x7a, 0x2e, 0x3f, 0xf4, 0x67, 0x29, 0x66, 0x5b,
	};
	struct eng_auth_key k = {.len = 25};
	uint8_t ch[32], ctx[18], r[32];
	unsigned i;

	(void)state;
	for (i = 0; i < 25; i++)
		k.bytes[i] = (uint8_t)(i + 1);
	memset(ch, 0xcd, sizeof(ch));
	memset(ctx, 0xcd, sizeof(ctx));
	assert_int_equal(eng__auth_response(&k, ch, ctx, sizeof(ctx), r), 0);
	assert_memory_equal(r, want, sizeof(want));
}

static void test_the_key_comes_from_the_file_the_environment_or_the_default(void **state)
{
	struct fixture *fx = *state;
	struct eng_auth_key f, e, d;
	char p[400];

	key_file(fx->path, KEY_FILE "\n", 0600);
	setenv(ENG_AUTH_ENV, KEY_ENV "\n", 1);
	assert_int_equal(eng__auth_key_find(fx->path, &f), 0); /* --key-file wins */
	assert_int_equal(f.len, strlen(KEY_FILE));
	assert_memory_equal(f.bytes, KEY_FILE, strlen(KEY_FILE));
	assert_int_equal(eng__auth_key_find(NULL, &e), 0);
	assert_int_equal(e.len, strlen(KEY_ENV));
	assert_memory_equal(e.bytes, KEY_ENV, strlen(KEY_ENV));
	assert_string_equal(e.origin, ENG_AUTH_ENV);
	unsetenv(ENG_AUTH_ENV);
	setenv("XDG_CONFIG_HOME", fx->dir, 1);
	assert_int_equal(eng__auth_key_find(NULL, &d), -ENOENT);
	assert_non_null(strstr(rcp_err_msg(-ENOENT), "/railcp/key"));
	snprintf(p, sizeof(p), "%s/railcp", fx->dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/railcp/key", fx->dir);
	key_file(p, KEY_DEFAULT, 0600);
	assert_int_equal(eng__auth_key_find(NULL, &d), 0);
	assert_int_equal(d.len, strlen(KEY_DEFAULT));
	unsetenv("XDG_CONFIG_HOME");
	eng__auth_key_wipe(&d);
	assert_int_equal(d.len, 0);
	assert_int_equal(d.bytes[0], 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_the_right_key_is_accepted_both_ways),
		T(test_a_wrong_key_is_refused_on_either_side),
		T(test_an_answer_cannot_be_reflected_as_the_other_role),
		T(test_proofs_over_transcripts_that_differ_are_refused),
		T(test_a_key_file_open_to_others_is_refused),
		T(test_an_empty_or_short_key_is_refused),
		T(test_different_challenges_give_different_responses),
		T(test_response_is_hmac_sha256_of_challenge_and_context),
		T(test_the_key_comes_from_the_file_the_environment_or_the_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
