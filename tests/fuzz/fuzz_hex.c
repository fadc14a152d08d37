/*
 * fuzz_hex.c - names and keys in hex, as they travel in control frames
 * (engine/session/proto.c): eng__proto_hex_value, eng__proto_name and
 * eng__proto_get_hex on a JSON string whose bytes are the input (NULs and
 * all, as jansson keeps a string's length), and on the input parsed as a
 * JSON document when it is one.
 *
 * Checked: what decodes is exactly the input's bytes read as lowercase hex,
 * of the length asked for, NUL-terminated; a name has no NUL; and the bytes
 * encoded by eng__proto_hex decode back to themselves.
 *
 * Threading: one thread.
 */
#include "common/common.h"
#include "engine/session/proto.h"
#include "tests/fuzz/fuzz.h"

#include <stdbool.h>

static int nibble(uint8_t c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The plain reading of hex: -1 unless every byte pair is two lowercase digits. */
static long plain_hex(const uint8_t *t, size_t n, uint8_t *out)
{
	size_t i;

	if (n % 2)
		return -1;
	for (i = 0; i < n / 2; i++) {
		int hi = nibble(t[2 * i]), lo = nibble(t[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (long)(n / 2);
}

static void value(const json_t *v, const uint8_t *raw, size_t size)
{
	static const size_t maxes[] = {0, 1, 16, 4095, 1u << 20};
	uint8_t *want = malloc(size / 2 + 1);
	long n = want && raw ? plain_hex(raw, size, want) : -1;
	char *b = NULL;
	size_t len = 0, i;

	if (!want)
		return;
	for (i = 0; i < RCP_ARRAY_SIZE(maxes); i++) {
		int err = eng__proto_hex_value(v, "a fuzzed value", maxes[i], &b, &len);

		if (raw)
			FUZZ_CHECK(!err == (n >= 0 && (size_t)n <= maxes[i]));
		if (err)
			continue;
		FUZZ_CHECK(b[len] == '\0');
		FUZZ_CHECK(!raw || ((size_t)n == len && !memcmp(b, want, len)));
		free(b);
	}
	if (eng__proto_name(v, "a fuzzed name", &b) == 0) {
		FUZZ_CHECK(strlen(b) < IO_PATH_MAX);
		FUZZ_CHECK(!raw || (size_t)n == strlen(b));
		free(b);
	}
	free(want);
}

static void in_message(json_t *v)
{
	static const size_t lens[] = {0, 1, 16, 32};
	uint8_t out[32];
	json_t *msg = json_object();
	size_t i;

	if (!msg || json_object_set(msg, "k", v)) {
		json_decref(msg);
		return;
	}
	for (i = 0; i < RCP_ARRAY_SIZE(lens); i++)
		eng__proto_get_hex(msg, "k", out, lens[i]);
	eng__proto_get_hex(msg, "missing", out, sizeof(out));
	json_decref(msg);
}

/* The input's bytes, in hex and back. */
static void round_trip(const uint8_t *data, size_t size)
{
	json_t *v = eng__proto_hex(data, size), *msg = json_object();
	char *b = NULL;
	size_t len = 0;

	if (v && msg && eng__proto_set_hex(msg, "k", data, size) == 0) {
		FUZZ_CHECK(json_string_length(v) == 2 * size);
		FUZZ_CHECK(eng__proto_hex_value(v, "a round trip", size, &b, &len) == 0);
		FUZZ_CHECK(len == size && !memcmp(b, data, size));
		free(b);
		if (size <= 64) {
			uint8_t out[64];

			FUZZ_CHECK(eng__proto_get_hex(msg, "k", out, size) == 0);
			FUZZ_CHECK(!memcmp(out, data, size));
		}
	}
	json_decref(v);
	json_decref(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = json_stringn_nocheck((const char *)data, size), *doc;
	json_error_t jerr;

	if (v) {
		value(v, data, size);
		in_message(v);
		json_decref(v);
	}
	/* A JSON document: whatever type it is, as a peer's member would be. */
	doc = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (doc) {
		value(doc, NULL, 0);
		in_message(doc);
		json_decref(doc);
	}
	round_trip(data, size);
	return 0;
}
