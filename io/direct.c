/*
 * direct.c - when a file is read or written with O_DIRECT, and with what
 * alignment.
 *
 * --direct's default (IO_DIRECT_AUTO) gives a file an O_DIRECT descriptor
 * when it holds IO_DIRECT_MIN data bytes or more (its holes cost no I/O),
 * does not live on a memory file system, and, for reads, is not mostly in
 * the page cache already: there a buffered read copies from memory and a
 * direct one goes to the disk. The cache is asked with cachestat(2) (Linux
 * 6.5); where that is missing (ENOSYS) or refused (EPERM: a file the
 * caller neither owns nor may write), one page at each of a few offsets is
 * read with preadv2(RWF_NOWAIT), which fails with EAGAIN when the page is
 * not cached.
 *
 * The alignment a direct I/O needs comes from statx(STATX_DIOALIGN) (Linux
 * 6.1, ext4, XFS, block devices): a file system that reports 0 does no
 * direct I/O, and one that does not say gets IO_DIRECT_ALIGN. A direct I/O
 * the kernel still refuses with EINVAL is redone through the page cache by
 * the caller (io_chunk_read_redo, io_chunk_write_redo), so O_DIRECT is never
 * a reason to fail.
 *
 * Threading: all functions are thread-safe; io__dio_override is for tests,
 * before any I/O.
 */
#include "io/io_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

bool io_direct_pays(uint64_t size, bool memfs)
{
	return !memfs && size >= IO_DIRECT_MIN;
}

/* cachestat(2), Linux 6.5, number 451 on every architecture but alpha; not in older headers. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct io__cache_range {
	uint64_t off, len; /* len 0: to the end */
};
struct io__cache_stat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* Pages read with RWF_NOWAIT where cachestat cannot answer. */
#define IO_CACHE_PROBES 8

/*
 * Whether most of IO_CACHE_PROBES pages spread over size bytes are cached:
 * a one-byte preadv2(RWF_NOWAIT) of each (EAGAIN: not in the cache).
 */
static bool nowait_cached(int fd, uint64_t size, long page)
{
	unsigned i, hits = 0;
	char c;

	for (i = 0; i < IO_CACHE_PROBES; i++) {
		uint64_t off = size / IO_CACHE_PROBES * i / (uint64_t)page * (uint64_t)page;
		struct iovec iov = {&c, 1};

		if (preadv2(fd, &iov, 1, (off_t)off, RWF_NOWAIT) == 1)
			hits++;
		else if (errno != EAGAIN)
			return false; /* no RWF_NOWAIT here: as if not cached */
	}
	return hits * 2 > IO_CACHE_PROBES;
}

bool io__mostly_cached(int fd, uint64_t data_bytes, uint64_t size)
{
	struct io__cache_range range = {0, 0};
	struct io__cache_stat cs;
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		return false;
	if (syscall(__NR_cachestat, fd, &range, &cs, 0) == 0)
		return cs.nr_cache * (uint64_t)page >= data_bytes / 2;
	if (errno != ENOSYS && errno != EPERM)
		return false;
	return nowait_cached(fd, size, page);
}

bool io__direct_wanted(unsigned flags, const struct io_entry *e, int fd)
{
	if (flags & IO_DIRECT)
		return true;
	/* the size first: the file system and the cache are asked only of a file large enough */
	return (flags & IO_DIRECT_AUTO) && io_direct_pays(e->data_bytes, false) &&
	       !io__is_memfs(fd) && !io__mostly_cached(fd, e->data_bytes, e->size);
}

static struct io__dio dio_override;

void io__dio_override(const struct io__dio *dio)
{
	dio_override = dio ? *dio : (struct io__dio){0, 0};
}

bool io__dio_align(int fd, struct io__dio *out)
{
	struct statx sx;

	if (dio_override.off) {
		*out = dio_override;
		return true;
	}
	*out = (struct io__dio){IO_DIRECT_ALIGN, IO_DIRECT_ALIGN};
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) != 0 ||
	    !(sx.stx_mask & STATX_DIOALIGN))
		return true; /* not said: the usual, and EINVAL's fallback */
	if (!sx.stx_dio_offset_align || !sx.stx_dio_mem_align)
		return false; /* no direct I/O on this file */
	/* a slot is IO_DIRECT_ALIGN-aligned: a stricter memory alignment cannot be met */
	if (sx.stx_dio_mem_align > IO_DIRECT_ALIGN)
		return false;
	out->off = sx.stx_dio_offset_align;
	out->mem = sx.stx_dio_mem_align;
	return true;
}

bool io__dio_fits(const struct io__dio *dio, uint64_t off, uint32_t len, const void *buf,
		  bool whole)
{
	uint64_t room = ((uint64_t)len + IO_DIRECT_ALIGN - 1) / IO_DIRECT_ALIGN * IO_DIRECT_ALIGN;
	uint64_t want = ((uint64_t)len + dio->off - 1) / dio->off * dio->off;

	if (off % dio->off || (uintptr_t)buf % dio->mem)
		return false;
	/* a write must be whole blocks; a read may round up, within the slot's room */
	return whole ? len % dio->off == 0 : want <= room;
}
