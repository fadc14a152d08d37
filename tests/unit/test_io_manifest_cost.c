/*
 * test_io_manifest_cost.c - a peer's list kept within its cost bounds:
 * SipHash-2-4 checked against its published vectors and OpenSSL's, names
 * built to collide under the old unkeyed hash checked in a few probes each
 * (probes counted, not time), a run longer than the probe limit refused,
 * entry and memory limits refused with a sentence, and the decoded cost a
 * sender estimates (io_manifest_decoded_cost and _base) equal to what the
 * decoder counts. Each test runs on one thread, in memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "io/io.h"
#include "test_io_manifest.h"
#include "test_io_collide.h"

#include <errno.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
static const uint8_t sip_key[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static void test_siphash24_matches_the_published_vectors(void **state)
{
	uint8_t msg[15];
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	/* the SipHash paper, appendix A (15 bytes), and the first of its test vectors */
	assert_int_equal(io__siphash24(sip_key, msg, 15), 0xa129ca6149be45e5ull);
	assert_int_equal(io__siphash24(sip_key, msg, 0), 0x726fdb47dd0e0e31ull);
}

/* OpenSSL's SipHash-2-4 (EVP_MAC "SIPHASH", 8-byte output, little-endian). */
static uint64_t openssl_siphash24(const uint8_t key[16], const uint8_t *p, size_t n)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	size_t size = 8, got = 0;
	OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size),
			       OSSL_PARAM_END};
	uint8_t out[8];
	uint64_t v = 0;
	int i;

	assert_non_null(ctx);
	assert_int_equal(EVP_MAC_init(ctx, key, 16, params), 1);
	assert_int_equal(EVP_MAC_update(ctx, p, n), 1);
	assert_int_equal(EVP_MAC_final(ctx, out, &got, sizeof(out)), 1);
	assert_int_equal(got, 8);
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	for (i = 7; i >= 0; i--)
		v = v << 8 | out[i];
	return v;
}

static void test_siphash24_agrees_with_openssl_at_every_length(void **state)
{
	uint8_t key[16], msg[80];
	size_t n, i;

	(void)state;
	for (n = 0; n < sizeof(msg); n++) {
		for (i = 0; i < sizeof(key); i++)
			key[i] = (uint8_t)(n * 131 + i * 29 + 7);
		for (i = 0; i < n; i++)
			msg[i] = (uint8_t)(i * 2654435761u >> 13);
		assert_int_equal(io__siphash24(key, msg, n), openssl_siphash24(key, msg, n));
	}
}

#define N_COLLIDE 100000

static void test_decode_checks_names_built_against_the_old_hash_in_few_probes(void **state)
{
	size_t mask = t_old_table_slots(N_COLLIDE) - 1, i, len;
	struct io__decode_ctl ctl = {0};
	char **names = t_collide_names(N_COLLIDE);
	struct io_manifest *m, *d = NULL;
	double avg;
	void *buf;

	(void)state;
	assert_non_null(names);
	/* the attack is real: under the old check every name starts at one slot */
	for (i = 0; i < N_COLLIDE; i++)
		assert_int_equal(t_fnv1a(T_FNV_BASIS, names[i], strlen(names[i])) & mask,
				 T_COLLIDE_TARGET & mask);
	m = t_manifest_of(names, N_COLLIDE);
	assert_non_null(m);
	assert_int_equal(io_manifest_encode(m, &buf, &len), 0);
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), 0);
	assert_int_equal(d->n, N_COLLIDE);
	assert_string_equal(d->entry[N_COLLIDE - 1].path, names[N_COLLIDE - 1]);
	/* one look-up per top-level name; the old check made about N/2 probes each */
	assert_int_equal(ctl.lookups, N_COLLIDE);
	avg = (double)ctl.probes / (double)ctl.lookups;
	print_message("%d names colliding under FNV-1a mod %zu: %.3f probes per look-up, "
		      "longest %llu\n",
		      N_COLLIDE, mask + 1, avg, (unsigned long long)ctl.longest);
	assert_true(avg < 4.0);
	io_manifest_destroy(d);
	io_manifest_destroy(m);
	free(buf);
	t_names_free(names, N_COLLIDE);
}

/*
 * Were the key to leak, names could be aimed at one slot again: the probe
 * limit still refuses the list at the first look-up that would examine
 * more than 512 slots, rather than check it in quadratic time.
 */
static void test_check_refuses_a_run_longer_than_the_probe_limit(void **state)
{
	enum { N = 520 };
	size_t mask = t_old_table_slots(N) - 1, i, len; /* the new table is sized alike */
	struct io_manifest *m, *d = NULL;
	char *names[N], name[16];
	const uint8_t *key;
	unsigned k = 0;
	void *buf;

	(void)state;
	assert_int_equal(io__hash_key(&key), 0);
	for (i = 0; i < N; i++) {
		do
			snprintf(name, sizeof(name), "k%07u", k++);
		while ((io__siphash24(key, name, strlen(name)) & mask) != 0);
		names[i] = strdup(name);
		assert_non_null(names[i]);
	}
	m = t_manifest_of(names, N);
	assert_non_null(m);
	assert_int_equal(io_manifest_encode(m, &buf, &len), 0);
	assert_int_equal(io_manifest_decode(buf, len, &d), -EOVERFLOW);
	assert_null(d);
	assert_non_null(strstr(rcp_err_msg(-EOVERFLOW), "manifest entry 512 \""));
	assert_non_null(strstr(rcp_err_msg(-EOVERFLOW),
			       "more than 512 names share its place in the duplicate check"));
	/* 512 of them are still fine: the limit is on one look-up's slots */
	io_manifest_destroy(m);
	m = t_manifest_of(names, 512);
	assert_non_null(m);
	assert_int_equal(io__manifest_check(m, NULL), 0);
	io_manifest_destroy(m);
	free(buf);
	for (i = 0; i < N; i++)
		free(names[i]);
}

/* n files "f<i>", encoded. */
static void *files_encoded(size_t n, size_t *len_out)
{
	char **names = calloc(n, sizeof(*names));
	struct io_manifest *m;
	void *buf;
	size_t i;

	assert_non_null(names);
	for (i = 0; i < n; i++) {
		names[i] = malloc(16);
		assert_non_null(names[i]);
		snprintf(names[i], 16, "f%zu", i);
	}
	m = t_manifest_of(names, n);
	assert_non_null(m);
	assert_int_equal(io_manifest_encode(m, &buf, len_out), 0);
	io_manifest_destroy(m);
	t_names_free(names, n);
	return buf;
}

static void test_decode_refuses_more_entries_than_the_limit(void **state)
{
	size_t over = IO_MANIFEST_MAX_ENTRIES + 1, len = 16 + over * 24;
	struct io__decode_ctl ctl = {.max_entries = 999};
	struct io_manifest *d = NULL;
	uint8_t *big = calloc(1, len); /* zero pages: only the header is read */
	struct mb hdr;
	void *buf;

	(void)state;
	assert_non_null(big);
	mb_hdr(&hdr, 1, over); /* bytes enough for that many entries, so the limit speaks */
	memcpy(big, hdr.b, hdr.n);
	assert_int_equal(io_manifest_decode(big, len, &d), -EFBIG);
	assert_string_equal(rcp_err_msg(-EFBIG),
			    "the file list has 4194305 entries, more than the 4194304 one copy "
			    "may have: copy the tree in parts");
	assert_null(d);
	free(big);
	/* a real list one entry over a lower limit, and one at it */
	buf = files_encoded(1000, &len);
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "has 1000 entries, more than the 999"));
	assert_null(d);
	ctl.max_entries = 1000;
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), 0);
	assert_int_equal(d->n, 1000);
	/* the check itself, as a walk uses it, holds the same limit */
	ctl.max_entries = 999;
	assert_int_equal(io__manifest_check(d, &ctl), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "more than the 999 one copy may have"));
	ctl.max_entries = 0;
	assert_int_equal(io__manifest_check(d, &ctl), 0);
	io_manifest_destroy(d);
	free(buf);
}

static void test_decode_refuses_more_memory_than_the_limit(void **state)
{
	struct io__decode_ctl ctl = {0};
	struct io_manifest *d = NULL;
	uint64_t need;
	size_t len;
	void *buf = files_encoded(1000, &len);

	(void)state;
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), 0);
	need = ctl.memory;
	/* entries, a name and an extent array each, the table of 2048 slots */
	assert_true(need >= 1000 * (sizeof(struct io_entry) + 32 + 32) + 2048 * 8);
	assert_true(need <= 1000 * (sizeof(struct io_entry) + 32 + 32) + 2048 * 8 + 1024);
	io_manifest_destroy(d);
	d = NULL;
	ctl = (struct io__decode_ctl){.max_memory = need};
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), 0);
	assert_int_equal(ctl.memory, need);
	io_manifest_destroy(d);
	d = NULL;
	ctl.max_memory = need - 1;
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "decoding the file list would take more than "
						    "the 0 MiB of memory one copy may use (at "
						    "entry 999): copy the tree in parts"));
	assert_null(d);
	ctl.max_memory = 1000; /* not even the entries fit: refused before any is read */
	assert_int_equal(io__manifest_decode(buf, len, &ctl, &d), -EFBIG);
	assert_non_null(strstr(rcp_err_msg(-EFBIG), "(at entry 0)"));
	free(buf);
}

/*
 * Lists of n = 1 to 50 entries (the table's size steps at 8, 16 and 32): a
 * directory, then files of 0 to 3 extents and symlinks, names of 3 to 60
 * bytes and targets of 3 to 48 (malloc's rounding steps every 16); what
 * the decoder counts is exactly the estimate, so a list cut by it decodes
 * within the limit.
 */
static void test_the_decoded_cost_estimate_is_what_decode_counts(void **state)
{
	static const uint64_t pairs[6] = {0, 10, 20, 5, 40, 1};
	struct io__decode_ctl ctl;
	struct io_manifest *d;
	struct mb m;
	char name[80], target[64];
	size_t n, i, k;
	uint64_t est;

	(void)state;
	for (n = 1; n <= 50; n++) {
		mb_hdr(&m, 1, n);
		mb_dir(&m, "d");
		for (i = 1; i < n; i++) {
			k = (i * 7) % 58;
			snprintf(name, sizeof(name), "d/%0*zu", (int)k + 1, i);
			if (i % 3 ==
			    0) { /* targets of i bytes: 24 and 40 are where len + 1 rounds up */
				snprintf(target, sizeof(target), "%0*u", (int)i, 0u);
				mb_entry(&m, IO_SYMLINK, name, strlen(name), 0777, strlen(target));
				mb_u(&m, strlen(target), 2);
				memcpy(m.b + m.n, target, strlen(target));
				m.n += strlen(target);
			} else {
				mb_file(&m, name, 64, (unsigned)(i % 4), pairs);
			}
		}
		ctl = (struct io__decode_ctl){0};
		d = NULL;
		assert_int_equal(io__manifest_decode(m.b, m.n, &ctl, &d), 0);
		est = io_manifest_decoded_base(d->n);
		for (i = 0; i < d->n; i++)
			est += io_manifest_decoded_cost(&d->entry[i]);
		assert_int_equal(est, ctl.memory);
		io_manifest_destroy(d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash24_matches_the_published_vectors),
		cmocka_unit_test(test_siphash24_agrees_with_openssl_at_every_length),
		cmocka_unit_test(test_decode_checks_names_built_against_the_old_hash_in_few_probes),
		cmocka_unit_test(test_check_refuses_a_run_longer_than_the_probe_limit),
		cmocka_unit_test(test_decode_refuses_more_entries_than_the_limit),
		cmocka_unit_test(test_decode_refuses_more_memory_than_the_limit),
		cmocka_unit_test(test_the_decoded_cost_estimate_is_what_decode_counts),
	};

	rcp_log_set_level(RCP_LOG_SILENT); /* the sentences are checked, not printed */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
