/*
 * bitmap.c - fixed-size sets of CPUs or NUMA nodes, and their list form
 * ("0-3,8"), the notation of numactl, taskset -c and /sys cpulist files.
 *
 * Fixed size keeps machines and plans plain data that tests can build and
 * compare with memcmp; 1024 CPUs covers today's two-socket servers.
 *
 * Threading: no shared state.
 */
#include "topology/topology.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WORD_BITS 64u
#define N_WORDS (TOPO_MAX_CPUS / 64)

void topo_bitmap_zero(struct topo_bitmap *b)
{
	memset(b, 0, sizeof(*b));
}

void topo_bitmap_set(struct topo_bitmap *b, unsigned bit)
{
	if (bit < TOPO_MAX_CPUS)
		b->w[bit / WORD_BITS] |= 1ull << (bit % WORD_BITS);
}

bool topo_bitmap_isset(const struct topo_bitmap *b, unsigned bit)
{
	return bit < TOPO_MAX_CPUS && (b->w[bit / WORD_BITS] >> (bit % WORD_BITS) & 1);
}

unsigned topo_bitmap_count(const struct topo_bitmap *b)
{
	unsigned i, n = 0;

	for (i = 0; i < N_WORDS; i++)
		n += (unsigned)__builtin_popcountll(b->w[i]);
	return n;
}

int topo_bitmap_next(const struct topo_bitmap *b, unsigned from)
{
	unsigned i;

	for (i = from; i < TOPO_MAX_CPUS; i++)
		if (topo_bitmap_isset(b, i))
			return (int)i;
	return -1;
}

void topo_bitmap_and(struct topo_bitmap *dst, const struct topo_bitmap *src)
{
	unsigned i;

	for (i = 0; i < N_WORDS; i++)
		dst->w[i] &= src->w[i];
}

bool topo_bitmap_equal(const struct topo_bitmap *a, const struct topo_bitmap *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

bool topo_bitmap_subset(const struct topo_bitmap *a, const struct topo_bitmap *b)
{
	unsigned i;

	for (i = 0; i < N_WORDS; i++)
		if (a->w[i] & ~b->w[i])
			return false;
	return true;
}

/* One decimal number below TOPO_MAX_CPUS; advances *p. */
static int parse_num(const char **p, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtoul(*p, &end, 10);
	if (errno || v >= TOPO_MAX_CPUS)
		return -EINVAL;
	*p = end;
	*out = (unsigned)v;
	return 0;
}

int topo_bitmap_parse(const char *text, struct topo_bitmap *out)
{
	struct topo_bitmap b;
	const char *p = text;
	unsigned lo, hi, i;

	topo_bitmap_zero(&b);
	while (isspace((unsigned char)*p))
		p++;
	do {
		if (parse_num(&p, &lo))
			return -EINVAL;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_num(&p, &hi) || hi < lo)
				return -EINVAL;
		}
		for (i = lo; i <= hi; i++)
			topo_bitmap_set(&b, i);
	} while (*p == ',' && *++p);
	while (isspace((unsigned char)*p))
		p++;
	if (*p != '\0')
		return -EINVAL;
	*out = b;
	return 0;
}

void topo_bitmap_format(const struct topo_bitmap *b, char *buf, size_t len)
{
	size_t used = 0;
	int lo = topo_bitmap_next(b, 0), hi;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (lo < 0) {
		snprintf(buf, len, "none");
		return;
	}
	while (lo >= 0 && used < len) {
		hi = lo;
		while (topo_bitmap_isset(b, (unsigned)hi + 1))
			hi++;
		used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? "," : "", lo);
		if (hi > lo && used < len)
			used += (size_t)snprintf(buf + used, len - used, "-%d", hi);
		lo = topo_bitmap_next(b, (unsigned)hi + 1);
	}
}
