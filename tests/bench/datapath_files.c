/*
 * datapath_files.c - bench_datapath.c's sources and the checks of its
 * copies. The pattern of a file depends on its seed and on the offset, so
 * a chunk written at the wrong place or into the wrong file shows; a
 * comparison reads both files IO_BLOCK bytes at a time and names the first
 * byte that differs. Threading: none of its own; the caller's buffers are
 * its scratch, so one caller at a time.
 */
#include "tests/bench/datapath_files.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/unit/test_io_tree.h"

#include <inttypes.h>

/* Fill buf with bytes that depend on seed and on the offset (pos), so misplaced data shows. */
static void pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t pos)
{
	uint64_t x;
	size_t i;

	for (i = 0; i < len; i += 8) {
		x = (seed + 1) * 0x9e3779b97f4a7c15ull ^
		    ((pos + i) / 8 + 1) * 0xbf58476d1ce4e5b9ull;
		x ^= x >> 31;
		x *= 0x94d049bb133111ebull;
		x ^= x >> 29;
		memcpy(buf + i, &x, len - i < 8 ? len - i : 8);
	}
}

int file_make(const char *path, uint64_t size, uint64_t seed, uint8_t *buf)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint64_t off;
	size_t len;

	if (fd < 0)
		return -errno;
	for (off = 0; off < size; off += len) {
		len = size - off < IO_BLOCK ? (size_t)(size - off) : IO_BLOCK;
		pattern_fill(buf, len, seed, off);
		if (write(fd, buf, len) != (ssize_t)len) {
			close(fd);
			return errno ? -errno : -EIO;
		}
	}
	return close(fd) ? -errno : 0;
}

/* dir/tree: files of size bytes spread over TREE_DIRS directories. */
int tree_make_flat(const char *tree, uint64_t files, uint64_t size, uint8_t *buf)
{
	char p[4096];
	uint64_t i;
	int err;

	if (mkdir(tree, 0755))
		return -errno;
	for (i = 0; i < TREE_DIRS; i++) {
		snprintf(p, sizeof(p), "%s/d%02" PRIu64, tree, i);
		if (mkdir(p, 0755))
			return -errno;
	}
	for (i = 0; i < files; i++) {
		snprintf(p, sizeof(p), "%s/d%02" PRIu64 "/f%06" PRIu64, tree, i % TREE_DIRS, i);
		if ((err = file_make(p, size, i + 1, buf)) != 0)
			return err;
	}
	return 0;
}

/* Up to len bytes from fd, short only at the end of the file; -1 on an error. */
static ssize_t read_full(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got < len && (n = read(fd, buf + got, len - got)) != 0) {
		if (n < 0 && errno != EINTR)
			return -1;
		got += n > 0 ? (size_t)n : 0;
	}
	return (ssize_t)got;
}

/* a and b have the same bytes; else a sentence on stdout, with the first byte that differs. */
bool file_equal(const char *a, const char *b, uint8_t *ba, uint8_t *bb)
{
	int fa = open(a, O_RDONLY | O_CLOEXEC), fb = open(b, O_RDONLY | O_CLOEXEC);
	uint64_t off = 0;
	ssize_t na = 0, nb = 0, i;
	bool same = fa >= 0 && fb >= 0;

	while (same) {
		na = read_full(fa, ba, IO_BLOCK);
		nb = read_full(fb, bb, IO_BLOCK);
		same = na == nb && na >= 0 && !memcmp(ba, bb, (size_t)(na > 0 ? na : 0));
		if (!same || na == 0)
			break;
		off += (uint64_t)na;
	}
	for (i = 0; !same && i < na && i < nb && ba[i] == bb[i]; i++)
		;
	if (!same)
		printf("    WRONG COPY: %s differs from %s at byte %" PRIu64 "%s\n", b, a,
		       off + (uint64_t)(i > 0 ? i : 0), fa < 0 || fb < 0 ? " (cannot open)" : "");
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return same;
}

static uint64_t dir_entries(const char *dir)
{
	DIR *dh = opendir(dir);
	struct dirent *d;
	uint64_t n = 0;

	while (dh && (d = readdir(dh)))
		n += strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
	if (dh)
		closedir(dh);
	return n;
}

/* Trees a and b hold the same entries and bytes, and b nothing else; files counted. */
bool tree_equal(const char *a, const char *b, uint8_t *ba, uint8_t *bb, uint64_t *files)
{
	char pa[4096], pb[4096];
	struct stat sa, sb;
	struct dirent *d;
	DIR *dh = opendir(a);
	bool same = dh != NULL;

	while (same && (d = readdir(dh))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		t_path(pa, a, d->d_name);
		t_path(pb, b, d->d_name);
		if (lstat(pa, &sa) || lstat(pb, &sb) ||
		    (sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) {
			printf("    WRONG COPY: %s is missing or of another type\n", pb);
			same = false;
		} else if (S_ISDIR(sa.st_mode)) {
			same = tree_equal(pa, pb, ba, bb, files);
		} else {
			same = file_equal(pa, pb, ba, bb);
			*files += same;
		}
	}
	if (dh)
		closedir(dh);
	if (same && dir_entries(a) != dir_entries(b)) {
		printf("    WRONG COPY: %s holds other entries than %s\n", b, a);
		same = false;
	}
	return same;
}
