/*
 * test_io_collide.h - file lists built to defeat the manifest check's old
 * unkeyed hash, for tests/unit/test_io_manifest_cost.c and
 * tests/bench/bench_manifest_decode.c. No cmocka: failures return -1/NULL.
 *
 * The old check (io/codec.c before keyed hashing) put each name in a table
 * of t_old_table_slots(n) slots at FNV-1a-64(name) mod the table size, with
 * linear probing. Names whose FNV-1a agrees in those low bits all start at
 * one slot, so the i-th insert walks past the i-1 before it: about n/2
 * probes per insert, n^2/2 in all.
 *
 * Making such names is cheap: the low k bits of an FNV-1a state depend only
 * on the low k bits of the state before and on the byte (the multiplier is
 * odd, and carries only run upwards). A name is "c" and six digits (unique),
 * two search bytes, and a last byte: the last byte can set the low 8 bits
 * of the state before the final multiply freely, so the two search bytes
 * only have to hit the k - 8 bits above them (2^10 tries for k = 18), and
 * the last byte is then computed. Every byte but NUL and '/' is allowed in
 * a name, so the names are valid: one component of ten bytes.
 */
#ifndef RAILCP_TEST_IO_COLLIDE_H
#define RAILCP_TEST_IO_COLLIDE_H

#include "io/io_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_FNV_BASIS 0xcbf29ce484222325ull
#define T_FNV_PRIME 0x100000001b3ull
#define T_COLLIDE_LEN 10	    /* bytes in a colliding name */
#define T_COLLIDE_TARGET 0x2a5a5ull /* the slot they all aim at (its low bits) */

/* FNV-1a-64 as the old check hashed names, continuing from state h. */
static inline uint64_t t_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * T_FNV_PRIME;
	return h;
}

/* The old check's table size for n entries. */
static inline size_t t_old_table_slots(size_t n)
{
	size_t size = 16;

	while (size < 2 * n)
		size *= 2;
	return size;
}

/* The inverse of the odd a modulo 2^64 (Newton: each step doubles the bits). */
static inline uint64_t t_inverse64(uint64_t a)
{
	uint64_t x = a; /* right to 3 bits: a * a = 1 mod 8 for odd a */
	int i;

	for (i = 0; i < 5; i++)
		x *= 2 - a * x;
	return x;
}

/*
 * The i-th name (i < 10^6) whose FNV-1a is T_COLLIDE_TARGET modulo 2^bits
 * (8 <= bits <= 20), NUL-terminated in out; -1 if none has this prefix.
 */
static inline int t_collide_name(unsigned i, unsigned bits, char out[T_COLLIDE_LEN + 1])
{
	uint64_t mask = (1ull << bits) - 1, h0, h2;
	uint64_t c = (T_COLLIDE_TARGET * t_inverse64(T_FNV_PRIME)) & mask; /* before the last * */
	unsigned b1, b2, b3;

	if (i >= 1000000 || bits < 8 || bits > 20)
		return -1;
	snprintf(out, 8, "c%06u", i);
	h0 = t_fnv1a(T_FNV_BASIS, out, 7);
	for (b1 = 1; b1 < 256; b1++) {
		for (b2 = 1; b2 < 256; b2++) {
			if (b1 == '/' || b2 == '/')
				continue;
			h2 = (((h0 ^ b1) * T_FNV_PRIME) ^ b2) * T_FNV_PRIME;
			b3 = (unsigned)((h2 ^ c) & 0xff);
			if (((h2 ^ c) & mask & ~0xffull) || b3 == 0 || b3 == '/')
				continue;
			out[7] = (char)b1;
			out[8] = (char)b2;
			out[9] = (char)b3;
			out[10] = '\0';
			return 0;
		}
	}
	return -1;
}

/* A new manifest of the given names in order, each an empty file (NULL if out of memory). */
static inline struct io_manifest *t_manifest_of(char *const *names, size_t n)
{
	struct io_manifest *m = calloc(1, sizeof(*m));
	struct io_entry *e;
	size_t i;

	for (i = 0; m && i < n; i++) {
		if (io__manifest_add(m, &e) || !(e->path = strdup(names[i]))) {
			io_manifest_destroy(m);
			return NULL;
		}
		e->type = IO_FILE;
		e->mode = 0644;
	}
	return m;
}

/*
 * n names (n < 10^6) that all start at one slot of the old check's table
 * for n entries, each malloc'd, in a malloc'd array (NULL on failure).
 */
static inline char **t_collide_names(size_t n)
{
	unsigned bits = (unsigned)__builtin_ctzll(t_old_table_slots(n));
	char **names = calloc(n ? n : 1, sizeof(*names));
	size_t i;

	for (i = 0; names && i < n; i++) {
		names[i] = malloc(T_COLLIDE_LEN + 1);
		if (!names[i] || t_collide_name((unsigned)i, bits, names[i])) {
			free(names[i]);
			while (i--)
				free(names[i]);
			free(names);
			return NULL;
		}
	}
	return names;
}

static inline void t_names_free(char **names, size_t n)
{
	size_t i;

	for (i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

#endif
