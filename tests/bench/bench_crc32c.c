/*
 * bench_crc32c.c - how fast io_crc32c (ISA-L's crc32_iscsi) checksums on
 * this host: a measurement, not a test, so `scons test` neither builds nor
 * runs it; `scons bench` builds build/<variant>/tests/bench/bench_crc32c.
 *
 * Design: one 1 MiB buffer of fixed pseudo-random bytes, warm in the cache
 * as a chunk just read would be. Each of ROUNDS rounds checksums it over and
 * over for at least ROUND_SECONDS and gives one figure in GB/s (10^9 bytes
 * per second); the minimum, median and maximum of the rounds are printed,
 * so a noisy host shows as a wide spread rather than as one wrong number.
 *
 * Threading: one thread.
 */
#include "io/io.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BUF_LEN (1u << 20)
#define ROUNDS 5
#define ROUND_SECONDS 0.2

/* Every crc is stored here, so no call can be skipped as unused. */
static volatile uint32_t bench_sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One round: GB/s over at least ROUND_SECONDS. */
static double bench_round(const uint8_t *buf)
{
	double start = now_s(), s;
	uint64_t n = 0;

	do {
		bench_sink = io_crc32c(buf, BUF_LEN);
		n++;
		s = now_s() - start;
	} while (s < ROUND_SECONDS);
	return (double)n * BUF_LEN / s / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	double gbs[ROUNDS];
	uint32_t crc;
	uint8_t *buf = malloc(BUF_LEN);
	size_t i;

	if (!buf) {
		fprintf(stderr, "bench_crc32c: out of memory for a 1 MiB buffer\n");
		return 1;
	}
	for (i = 0; i < BUF_LEN; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 24);
	crc = io_crc32c(buf, BUF_LEN); /* warm up: page faults, caches, clock */
	for (i = 0; i < ROUNDS; i++)
		gbs[i] = bench_round(buf);
	qsort(gbs, ROUNDS, sizeof(gbs[0]), cmp_double);
	printf("crc32c (ISA-L crc32_iscsi), 1 MiB buffers, %d rounds of %.1f s: "
	       "min %.2f, median %.2f, max %.2f GB/s (buffer crc %08x)\n",
	       ROUNDS, ROUND_SECONDS, gbs[0], gbs[ROUNDS / 2], gbs[ROUNDS - 1], (unsigned)crc);
	free(buf);
	return 0;
}
