/*
 * test_io_tree.h - scratch directories and a tree with every kind of entry,
 * for the io/ unit tests. Include it after cmocka.h (its helpers are static:
 * each file that includes it has its own).
 *
 * The tree, below <base>/top (names sorted bytewise as the walk lists them):
 *   top/                      directory, mode 0750, mtime T_TOP
 *   top/empty                 empty file, mode 0600
 *   top/fifo                  a fifo: the walk skips it
 *   top/link -> sub/deep.txt  symlink
 *   top/sparse                6 GiB: 4 KiB of data at 0, 8 KiB at 5 GiB, holes elsewhere
 *   top/sub/                  directory, mode 0755
 *   top/sub/deep.txt          "deep\n", mode 0644, mtime T_DEEP
 *   top/with space \x80\xff   "hello", mode 0640
 */
#ifndef RAILCP_TEST_IO_TREE_H
#define RAILCP_TEST_IO_TREE_H

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GIB (1024ull * 1024 * 1024)
#define ODD_NAME "with space \x80\x9a\xff"
#define T_TOP 1600000000ll
#define T_DEEP 1500000000ll
#define SPARSE_SIZE (6 * GIB)
#define SPARSE_FAR (5 * GIB)

static inline void t_path(char *out, const char *base, const char *rel)
{
	int n = snprintf(out, 4096, "%s/%s", base, rel);

	assert_true(n > 0 && n < 4096);
}

static inline void t_mkdtemp(char out[4096])
{
	snprintf(out, 4096, "/tmp/railcp-io-XXXXXX");
	assert_non_null(mkdtemp(out));
}

static inline void t_write(const char *base, const char *rel, const void *data, size_t len,
			   mode_t mode)
{
	char p[4096];
	int fd;

	t_path(p, base, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static inline void t_mtime(const char *base, const char *rel, long long sec, long nsec)
{
	struct timespec ts[2] = {{sec, nsec}, {sec, nsec}};
	char p[4096];

	t_path(p, base, rel);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static inline bool t_exists(const char *base, const char *rel)
{
	struct stat st;
	char p[4096];

	t_path(p, base, rel);
	return lstat(p, &st) == 0;
}

static int t_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		chmod(p, 0700);
	return remove(p) < 0 ? -1 : 0;
}

static int t_unlock_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || (flag == FTW_DNR && S_ISDIR(st->st_mode)))
		chmod(p, 0700);
	return 0;
}

static inline void t_rm_rf(const char *p)
{
	nftw(p, t_unlock_one, 16, FTW_PHYS);
	nftw(p, t_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Entries under dir (recursive) whose name starts with ".railcp-tmp-". */
static inline int t_count_tmp(const char *dir)
{
	struct dirent *d;
	char p[4096];
	int n = 0;
	DIR *dh = opendir(dir);

	if (!dh)
		return 0;
	while ((d = readdir(dh))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (!strncmp(d->d_name, ".railcp-tmp-", 12))
			n++;
		if (d->d_type == DT_DIR) {
			t_path(p, dir, d->d_name);
			n += t_count_tmp(p);
		}
	}
	closedir(dh);
	return n;
}

static inline void t_sparse(const char *base, const char *rel)
{
	char p[4096], buf[8192];
	int fd;

	t_path(p, base, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)SPARSE_SIZE), 0);
	memset(buf, 'a', 4096);
	assert_int_equal(pwrite(fd, buf, 4096, 0), 4096);
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(pwrite(fd, buf, sizeof(buf), (off_t)SPARSE_FAR), (ssize_t)sizeof(buf));
	close(fd);
}

static inline void t_tree(const char *base)
{
	char p[4096];

	t_path(p, base, "top");
	assert_int_equal(mkdir(p, 0750), 0);
	assert_int_equal(chmod(p, 0750), 0);
	t_path(p, base, "top/sub");
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(chmod(p, 0755), 0);
	t_write(base, "top/empty", "", 0, 0600);
	t_write(base, "top/sub/deep.txt", "deep\n", 5, 0644);
	t_write(base, "top/" ODD_NAME, "hello", 5, 0640);
	t_sparse(base, "top/sparse");
	t_path(p, base, "top/link");
	assert_int_equal(symlink("sub/deep.txt", p), 0);
	t_path(p, base, "top/fifo");
	assert_int_equal(mkfifo(p, 0600), 0);
	t_mtime(base, "top/sub/deep.txt", T_DEEP, 123456789);
	t_mtime(base, "top", T_TOP, 5);
}

#endif
