/*
 * bench_hash.c - which per-chunk integrity hash railcp can afford: the
 * single-thread speed on this host of ISA-L's crc32c (what chunks carried
 * before protocol 3), ISA-L's three reflected crc64s and xxHash's XXH3 in 64 and 128
 * bits. A measurement, not a test: `scons bench` builds
 * build/<variant>/tests/bench/bench_hash.
 *
 *   bench_hash [-r ROUNDS] [-t SECONDS] [-s SIZE[K|M]]... [-d]
 *
 * Design: one buffer of fixed pseudo-random bytes, warm in the cache (a
 * chunk just read with O_DIRECT may not be, so the figures are upper
 * bounds); each size (default 64 KiB, 1 MiB - railcp's chunk - and 4 MiB;
 * the first -s replaces them) hashes the buffer's first SIZE bytes. For
 * each size and hash, each of ROUNDS rounds (default 7) hashes the buffer
 * over and over for at least SECONDS (default 0.3) of the thread's CPU time
 * and gives one figure in GB/s (10^9 bytes per CPU second). Min, median
 * and max are printed, so a noisy host shows as a wide spread rather than
 * as one wrong number, with the cores the median would take at 200 and
 * 400 Gb/s (25 and 50 GB/s).
 *
 * Every hash is checked before anything is timed, and a mismatch fails the
 * bench (exit 1), since a fast wrong hash is no candidate: against a check
 * value published outside these libraries (the CRCs of "123456789", XXH3
 * of the empty input), and against a second path through the same library at
 * lengths that catch tail and alignment handling: ISA-L's table-driven
 * _base functions, xxHash's streaming API, each fed in two pieces (which
 * also pins that a hash can be carried across pieces).
 *
 * XXH3 is timed three ways, as the code differs: Debian's libxxhash builds
 * XXH3_64bits for baseline x86-64 (SSE2) and adds XXH3_64bits_dispatch,
 * which picks SSE2, AVX2 or AVX-512 at run time; "inline" is xxhash.h
 * compiled into this file (below). ISA-L always picks its code at run time.
 *
 * Threading: one thread.
 */
#include "io/io.h"

#include <isa-l.h>
#include <isa-l/crc.h>
#include <isa-l/crc64.h>
#define XXH_DISPATCH_DISABLE_REPLACE /* keep XXH3_64bits the generic build */
#include <xxhash.h>
#include <xxh_x86dispatch.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 8
#define MAX_ROUNDS 99
#define MAX_SIZE (1ull << 30)
#define CHECK_MAX (4096 + 64) /* the longest checked length but one */
#define CHECK_LONG ((1u << 20) + 13)

/* A result of up to 128 bits; a narrower hash leaves the high half 0. */
struct hash128 {
	uint64_t lo, hi;
};

struct algo {
	const char *name;
	unsigned bits;
	struct hash128 (*fn)(const uint8_t *buf, size_t len);
	/* The second path; split: how many bytes go in the first piece. */
	struct hash128 (*ref)(const uint8_t *buf, size_t len, size_t split);
	const char *vec; /* check input, and the value outside sources give */
	struct hash128 vec_out;
};

/* Every result is folded in here, so no call can be skipped as unused. */
static volatile uint64_t bench_sink;

static struct hash128 h_crc32c(const uint8_t *buf, size_t len)
{
	return (struct hash128){~crc32_iscsi((unsigned char *)buf, (int)len, ~0u), 0};
}

/* CRC-32C's usual convention (iSCSI, ext4): seed ~0, result inverted. */
static struct hash128 ref_crc32c(const uint8_t *buf, size_t len, size_t split)
{
	unsigned int crc = crc32_iscsi_base((unsigned char *)buf, (int)split, ~0u);

	crc = crc32_iscsi_base((unsigned char *)buf + split, (int)(len - split), crc);
	return (struct hash128){~crc, 0};
}

/* ISA-L's crc64s invert on entry and exit themselves: seed 0, chain by seeding. */
static struct hash128 h_crc64_ecma(const uint8_t *buf, size_t len)
{
	return (struct hash128){crc64_ecma_refl(0, buf, len), 0};
}

static struct hash128 ref_crc64_ecma(const uint8_t *buf, size_t len, size_t split)
{
	uint64_t crc = crc64_ecma_refl_base(0, buf, split);

	return (struct hash128){crc64_ecma_refl_base(crc, buf + split, len - split), 0};
}

static struct hash128 h_crc64_iso(const uint8_t *buf, size_t len)
{
	return (struct hash128){crc64_iso_refl(0, buf, len), 0};
}

static struct hash128 ref_crc64_iso(const uint8_t *buf, size_t len, size_t split)
{
	uint64_t crc = crc64_iso_refl_base(0, buf, split);

	return (struct hash128){crc64_iso_refl_base(crc, buf + split, len - split), 0};
}

static struct hash128 h_crc64_jones(const uint8_t *buf, size_t len)
{
	return (struct hash128){crc64_jones_refl(0, buf, len), 0};
}

static struct hash128 ref_crc64_jones(const uint8_t *buf, size_t len, size_t split)
{
	uint64_t crc = crc64_jones_refl_base(0, buf, split);

	return (struct hash128){crc64_jones_refl_base(crc, buf + split, len - split), 0};
}

static struct hash128 h_xxh3_64(const uint8_t *buf, size_t len)
{
	return (struct hash128){XXH3_64bits(buf, len), 0};
}

static struct hash128 h_xxh3_64_disp(const uint8_t *buf, size_t len)
{
	return (struct hash128){XXH3_64bits_dispatch(buf, len), 0};
}

static struct hash128 h_xxh3_128(const uint8_t *buf, size_t len)
{
	XXH128_hash_t h = XXH3_128bits(buf, len);

	return (struct hash128){h.low64, h.high64};
}

static struct hash128 h_xxh3_128_disp(const uint8_t *buf, size_t len)
{
	XXH128_hash_t h = XXH3_128bits_dispatch(buf, len);

	return (struct hash128){h.low64, h.high64};
}

/* The streaming state, made once: main creates it before any check. */
static XXH3_state_t *xxh_state;

static int xxh_state_create(void)
{
	xxh_state = XXH3_createState();
	return xxh_state ? 0 : -1;
}

static void xxh_state_destroy(void)
{
	XXH3_freeState(xxh_state);
}

/* The version of the libxxhash in use (not of the header inlined below). */
static unsigned xxh_lib_version(void)
{
	return XXH_versionNumber();
}

static struct hash128 ref_xxh3_64(const uint8_t *buf, size_t len, size_t split)
{
	XXH3_64bits_reset(xxh_state);
	XXH3_64bits_update(xxh_state, buf, split);
	XXH3_64bits_update(xxh_state, buf + split, len - split);
	return (struct hash128){XXH3_64bits_digest(xxh_state), 0};
}

static struct hash128 ref_xxh3_128(const uint8_t *buf, size_t len, size_t split)
{
	XXH128_hash_t h;

	XXH3_128bits_reset(xxh_state);
	XXH3_128bits_update(xxh_state, buf, split);
	XXH3_128bits_update(xxh_state, buf + split, len - split);
	h = XXH3_128bits_digest(xxh_state);
	return (struct hash128){h.low64, h.high64};
}

/*
 * The same XXH3 compiled into this file with the project's flags (-O2 for
 * baseline x86-64 in release: SSE2), as railcp would have it by carrying
 * xxhash.h instead of calling libxxhash. The header goes in a second time,
 * here, after every use of the library: from here on XXH3_* and
 * XXH128_hash_t name xxHash's own private, inlined copies.
 */
#define XXH_INLINE_ALL
#include <xxhash.h>

static struct hash128 h_xxh3_64_inline(const uint8_t *buf, size_t len)
{
	return (struct hash128){XXH3_64bits(buf, len), 0};
}

/*
 * Check values: CRC-32C and CRC-64/XZ and /GO-ISO of "123456789" as the CRC
 * catalogues give them; the Jones one as a bit-at-a-time model with ISA-L's
 * convention (init and final xor all ones, reflected, polynomial
 * 0xad93d23594c935a9) gives it; XXH3 of no bytes as xxHash's own sanity
 * test (tests/sanity_test_vectors.h) gives it.
 */
#define NINE "123456789"
/* XXH3 of no bytes in 64 and 128 bits */
#define X64_0 0x2d06800538d394c2ull
#define X128_0_LO 0x6001c324468d497full
#define X128_0_HI 0x99aa06d3014798d8ull

static const struct algo algos[] = {
	{"crc32_iscsi (CRC-32C)", 32, h_crc32c, ref_crc32c, NINE, {0xe3069283, 0}},
	{"crc64_ecma_refl", 64, h_crc64_ecma, ref_crc64_ecma, NINE, {0x995dc9bbdf1939faull, 0}},
	{"crc64_iso_refl", 64, h_crc64_iso, ref_crc64_iso, NINE, {0xb90956c775a41001ull, 0}},
	{"crc64_jones_refl", 64, h_crc64_jones, ref_crc64_jones, NINE, {0x3558e8e979f60d7eull, 0}},
	{"XXH3_64bits", 64, h_xxh3_64, ref_xxh3_64, "", {X64_0, 0}},
	{"XXH3_64bits_dispatch", 64, h_xxh3_64_disp, ref_xxh3_64, "", {X64_0, 0}},
	{"XXH3_64bits inline", 64, h_xxh3_64_inline, ref_xxh3_64, "", {X64_0, 0}},
	{"XXH3_128bits", 128, h_xxh3_128, ref_xxh3_128, "", {X128_0_LO, X128_0_HI}},
	{"XXH3_128bits_dispatch", 128, h_xxh3_128_disp, ref_xxh3_128, "", {X128_0_LO, X128_0_HI}},
};

#define N_ALGOS (sizeof(algos) / sizeof(algos[0]))

static int hash_eq(struct hash128 a, struct hash128 b)
{
	return a.lo == b.lo && a.hi == b.hi;
}

static void hash_format(const struct algo *a, struct hash128 h, char *out, size_t len)
{
	if (a->bits == 128)
		snprintf(out, len, "%016llx%016llx", (unsigned long long)h.hi,
			 (unsigned long long)h.lo);
	else
		snprintf(out, len, "%0*llx", (int)(a->bits / 4), (unsigned long long)h.lo);
}

static int check_fail(const struct algo *a, const char *what, struct hash128 got,
		      struct hash128 want)
{
	char g[40], w[40];

	hash_format(a, got, g, sizeof(g));
	hash_format(a, want, w, sizeof(w));
	fprintf(stderr, "bench_hash: check failed: %s of %s gives %s, expected %s\n", a->name, what,
		g, w);
	return -1;
}

/* One hash against its check value and its second path; buf holds CHECK_LONG + 1 bytes. */
static int algo_check(const struct algo *a, const uint8_t *buf)
{
	char what[64];
	struct hash128 got;
	size_t len, off;

	got = a->fn((const uint8_t *)a->vec, strlen(a->vec));
	if (!hash_eq(got, a->vec_out))
		return check_fail(a, a->vec[0] ? a->vec : "no bytes", got, a->vec_out);
	/* Every length to CHECK_MAX, then a long one, at an aligned and an odd address. */
	for (off = 0; off < 2; off++) {
		for (len = 0; len <= CHECK_MAX + 1; len++) {
			if (len == CHECK_MAX + 1)
				len = CHECK_LONG; /* the last pass */
			got = a->fn(buf + off, len);
			if (!hash_eq(got, a->ref(buf + off, len, len / 3))) {
				snprintf(what, sizeof(what), "%zu bytes at offset %zu", len, off);
				return check_fail(a, what, got, a->ref(buf + off, len, len / 3));
			}
		}
	}
	return 0;
}

/*
 * The thread's CPU time, not the wall clock: on a shared host (other builds,
 * nice -n 19) the time the thread waits for a CPU is no cost of the hash, and
 * what railcp needs to know is how many cores a hash takes.
 */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One round: GB/s over at least seconds of CPU; the clock is read about once per MiB hashed. */
static double bench_round(const struct algo *a, const uint8_t *buf, size_t len, double seconds)
{
	size_t batch = len < (1u << 20) ? (1u << 20) / len : 1, i;
	double start = now_s(), s;
	struct hash128 h;
	uint64_t n = 0;

	do {
		for (i = 0; i < batch; i++) {
			h = a->fn(buf, len);
			bench_sink ^= h.lo ^ h.hi;
		}
		n += batch;
		s = now_s() - start;
	} while (s < seconds);
	return (double)n * (double)len / s / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void size_format(size_t len, char *out, size_t n)
{
	if (len >= (1u << 20) && len % (1u << 20) == 0)
		snprintf(out, n, "%zu MiB", len >> 20);
	else if (len >= 1024 && len % 1024 == 0)
		snprintf(out, n, "%zu KiB", len >> 10);
	else
		snprintf(out, n, "%zu B", len);
}

struct opts {
	unsigned rounds, n_sizes;
	int dirty; /* -d: no vzeroupper before each hash */
	double seconds;
	size_t sizes[MAX_SIZES];
};

/*
 * ISA-L's AVX-512 crcs and libxxhash's AVX-512 XXH3 return without
 * vzeroupper (ISA-L leaves it to the caller: intel/isa-l issue 24). Legacy
 * SSE code run after them in the same thread, such as the SSE2 XXH3s here,
 * then pays for the dirty upper vector state: about 4x slower on the AMD
 * host this was written on. So each hash is timed from a clean state, as
 * the first in its thread would be, unless -d asks to see the penalty.
 */
static void vector_state_clean(void)
{
	if (__builtin_cpu_supports("avx"))
		__asm__ volatile("vzeroupper" ::: "memory");
}

static const char *vector_state_name(int dirty)
{
	if (!__builtin_cpu_supports("avx"))
		return "no AVX, nothing to clean";
	return dirty ? "as the previous hash left it (-d)" : "vzeroupper before each hash";
}

/* All hashes on the first len bytes of buf: one table row each. */
static void size_bench(const uint8_t *buf, size_t len, const struct opts *o)
{
	double gbs[MAX_ROUNDS], med;
	char size[32], val[40];
	struct hash128 h;
	size_t i, r;

	size_format(len, size, sizeof(size));
	for (i = 0; i < N_ALGOS; i++) {
		if (!o->dirty)
			vector_state_clean();
		h = algos[i].fn(buf, len); /* warm up: page faults, caches, clock */
		for (r = 0; r < o->rounds; r++)
			gbs[r] = bench_round(&algos[i], buf, len, o->seconds);
		qsort(gbs, o->rounds, sizeof(gbs[0]), cmp_double);
		r = o->rounds / 2;
		med = o->rounds % 2 ? gbs[r] : (gbs[r - 1] + gbs[r]) / 2;
		hash_format(&algos[i], h, val, sizeof(val));
		printf("%-8s %-24s %4u %7.2f %7.2f %7.2f %7.2f %7.2f  %s\n", size, algos[i].name,
		       algos[i].bits, gbs[0], med, gbs[o->rounds - 1], 25 / med, 50 / med, val);
		fflush(stdout);
	}
}

/* The CPU's model and the flags these hashes' code paths depend on, from /proc/cpuinfo. */
static void cpu_describe(void)
{
	static const char *const want[] = {"sse2",	 "sse4_2",  "pclmulqdq", "avx",
					   "avx2",	 "avx512f", "avx512bw",	 "avx512vl",
					   "vpclmulqdq", "sha_ni"};
	char line[8192], model[256] = "unknown", tok[32];
	FILE *f = fopen("/proc/cpuinfo", "r");
	size_t i;

	printf("cpu: ");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10) && strchr(line, ':'))
			snprintf(model, sizeof(model), "%s", strchr(line, ':') + 2);
		if (strncmp(line, "flags", 5))
			continue;
		model[strcspn(model, "\n")] = 0;
		line[strcspn(line, "\n")] = ' '; /* so the last flag ends in a space too */
		printf("%s;", model);
		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			snprintf(tok, sizeof(tok), " %s ", want[i]);
			printf(" %s%s", strstr(line, tok) ? "+" : "-", want[i]);
		}
		break;
	}
	printf("\n");
	if (f)
		fclose(f);
}

/* SIZE with an optional K or M (binary) suffix; 0 if malformed or out of range. */
static size_t size_parse(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s || *s == '-')
		return 0;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	return *end || v > MAX_SIZE ? 0 : (size_t)v;
}

static int args_parse(int argc, char **argv, struct opts *o)
{
	int c, sized = 0;
	char *end;

	while ((c = getopt(argc, argv, "r:t:s:dh")) != -1) {
		if (c == 'd') {
			o->dirty = 1;
		} else if (c == 'r' && atoi(optarg) >= 1 && atoi(optarg) <= MAX_ROUNDS) {
			o->rounds = (unsigned)atoi(optarg);
		} else if (c == 't') {
			o->seconds = strtod(optarg, &end);
			if (*end || !(o->seconds >= 0.001 && o->seconds <= 60))
				return -1;
		} else if (c == 's' && size_parse(optarg)) {
			if (!sized++)
				o->n_sizes = 0; /* the first -s replaces the defaults */
			if (o->n_sizes == MAX_SIZES)
				return -1;
			o->sizes[o->n_sizes++] = size_parse(optarg);
		} else {
			return -1;
		}
	}
	return optind < argc ? -1 : 0;
}

static void buf_fill(uint8_t *buf, size_t len)
{
	uint64_t x = 0x9e3779b97f4a7c15ull; /* xorshift64: bytes with nothing to elide */
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (uint8_t)(x >> 56);
	}
}

int main(int argc, char **argv)
{
	struct opts o = {.rounds = 7, .n_sizes = 3, .seconds = 0.3};
	size_t i, max = CHECK_LONG + 1;
	uint8_t *buf = NULL;
	int err = 0;
	unsigned v;

	o.sizes[0] = 64u << 10, o.sizes[1] = 1u << 20, o.sizes[2] = 4u << 20;
	if (args_parse(argc, argv, &o)) {
		fprintf(stderr,
			"usage: bench_hash [-r ROUNDS (1-%d, default 7)] [-t SECONDS per round "
			"(default 0.3)] [-s SIZE[K|M] (up to %d, default 64K 1M 4M)]... [-d]\n",
			MAX_ROUNDS, MAX_SIZES);
		return 2;
	}
	for (i = 0; i < o.n_sizes; i++)
		max = o.sizes[i] > max ? o.sizes[i] : max;
	if (xxh_state_create() || posix_memalign((void **)&buf, 4096, max)) {
		fprintf(stderr, "bench_hash: out of memory for a %zu-byte buffer\n", max);
		xxh_state_destroy();
		return 1;
	}
	buf_fill(buf, max);
	for (i = 0; i < N_ALGOS && !err; i++)
		err = algo_check(&algos[i], buf);
	if (!err) {
		v = xxh_lib_version();
		printf("bench_hash: ISA-L %d.%d, libxxhash %u.%u.%u; one thread, buffers warm in "
		       "the cache; %u rounds of at least %.2f CPU s; GB/s = 10^9 bytes/s\n",
		       ISAL_MAJOR_VERSION, ISAL_MINOR_VERSION, v / 10000, v / 100 % 100, v % 100,
		       o.rounds, o.seconds);
		cpu_describe();
		printf("checks: %zu hashes agree with their check values and second paths\n",
		       N_ALGOS);
		printf("vector state: %s\n\n", vector_state_name(o.dirty));
		printf("%-8s %-24s %4s %7s %7s %7s %7s %7s  %s\n", "size", "hash", "bits", "min",
		       "median", "max", "c@200G", "c@400G", "hash of the buffer");
		for (i = 0; i < o.n_sizes; i++)
			size_bench(buf, o.sizes[i], &o);
	}
	xxh_state_destroy();
	free(buf);
	return err ? 1 : 0;
}
