/*
 * alloc_fail.h - fail the Nth allocation, for failure sweeps.
 *
 * Test binaries named test_*_sweep.c are linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=posix_memalign, so
 * every allocation made by railcp's own objects goes through these wrappers
 * (libc's internal allocations do not). Include this header in exactly one
 * file of such a binary.
 */
#ifndef RAILCP_TEST_ALLOC_FAIL_H
#define RAILCP_TEST_ALLOC_FAIL_H

#include <errno.h>
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

static unsigned alloc_fail_at; /* 0: never */
static unsigned alloc_count;

/* Fail the nth allocation from now on (0: none). */
static inline void alloc_fail_arm(unsigned nth)
{
	alloc_count = 0;
	alloc_fail_at = nth;
}

static inline int alloc_should_fail(void)
{
	return alloc_fail_at &&
	       __atomic_add_fetch(&alloc_count, 1, __ATOMIC_RELAXED) == alloc_fail_at;
}

void *__wrap_malloc(size_t n)
{
	return alloc_should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return alloc_should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return alloc_should_fail() ? NULL : __real_realloc(p, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	return alloc_should_fail() ? ENOMEM : __real_posix_memalign(p, align, n);
}

#endif
