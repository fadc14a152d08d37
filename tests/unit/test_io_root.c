/*
 * test_io_root.c - the receiver: confinement beneath its root against
 * hostile names and symlinks (also swapped in after a check), atomic
 * finalize with holes, mode and mtime, cleanup on every failure, chunk
 * accounting under concurrent writers, directory metadata deepest first and
 * only on the directories the copy made (or, with --partial, a copy marked
 * with a marker of the receiver's own).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "io/io.h"
#include "io/io_int.h"
#include "test_io_tree.h"

#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define CH 4096u

struct fixture {
	char base[4096];
	char root[4096];
	char outside[4096];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	t_mkdtemp(fx->base);
	t_path(fx->root, fx->base, "root");
	t_path(fx->outside, fx->base, "outside");
	assert_int_equal(mkdir(fx->root, 0755), 0);
	assert_int_equal(mkdir(fx->outside, 0755), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	t_rm_rf(fx->base);
	free(fx);
	return 0;
}

/* An entry with its extents in one piece of test memory. */
struct fe {
	struct io_entry e;
	struct io_extent x[4];
	char path[4096];
};

static void fe_file(struct fe *f, const char *path, uint64_t size, unsigned n,
		    const uint64_t *pairs)
{
	unsigned i;

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->e = (struct io_entry){.path = f->path,
				 .type = IO_FILE,
				 .mode = 0640,
				 .size = size,
				 .ext = f->x,
				 .n_ext = n,
				 .mtime_ns = 1234567890123456789ll};
	for (i = 0; i < n; i++) {
		f->x[i] = (struct io_extent){pairs[2 * i], pairs[2 * i + 1]};
		f->e.data_bytes += pairs[2 * i + 1];
	}
}

static void fe_other(struct fe *f, enum io_type type, const char *path, const char *link)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->e = (struct io_entry){.path = f->path,
				 .type = type,
				 .mode = 0755,
				 .link = (char *)link,
				 .size = link ? strlen(link) : 0};
}

static struct io_root *root_of(const struct fixture *fx, unsigned flags)
{
	struct io_root *r = NULL;

	assert_int_equal(io_root_open(fx->root, flags, &r), 0);
	return r;
}

static int wr(struct io_wfile *f, uint64_t off, const void *data, uint32_t len, bool *done)
{
	return io_chunk_write(f, off, data, len, io_chunk_hash(data, len), done);
}

/* Nothing at all outside the root, no temporary anywhere. */
static void assert_nothing_escaped(const struct fixture *fx)
{
	DIR *d = opendir(fx->outside);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		     strcmp(de->d_name, "target");
	closedir(d);
	assert_int_equal(n, 0);
	assert_false(t_exists(fx->base, "x"));
	assert_int_equal(t_count_tmp(fx->base), 0);
}

static void expect_refused(struct io_root *r, const char *name, int err, const char *words)
{
	struct io_wfile *w = NULL;
	struct fe f;

	fe_other(&f, IO_DIR, name, NULL);
	assert_int_equal(io_root_mkdir(r, &f.e), err);
	assert_non_null(strstr(rcp_err_msg(err), words));
	fe_other(&f, IO_SYMLINK, name, "t");
	assert_int_equal(io_root_symlink(r, &f.e), err);
	assert_non_null(strstr(rcp_err_msg(err), words));
	fe_file(&f, name, 0, 0, NULL);
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), err);
	assert_non_null(strstr(rcp_err_msg(err), words));
	assert_null(w);
}

static void test_hostile_names_are_refused_before_anything_is_created(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char abs[4096];
	struct fe a;

	fe_other(&a, IO_DIR, "a", NULL);
	assert_int_equal(io_root_mkdir(r, &a.e), 0);
	t_path(abs, fx->outside, "x");
	expect_refused(r, "../x", -EINVAL, "refused \"../x\"");
	expect_refused(r, abs, -EINVAL, "is absolute");
	expect_refused(r, "a/../../x", -EINVAL, "refused \"a/../../x\"");
	io_root_close(r);
	assert_nothing_escaped(fx);
}

static void test_openat2_alone_refuses_what_leads_out(void **state)
{
	struct fixture *fx = *state;
	char abs[4096], link[4096];
	const char *last = NULL;
	int rfd, fd = -1;

	t_path(abs, fx->outside, "x");
	t_path(link, fx->root, "out");
	assert_int_equal(symlink(fx->outside, link), 0);
	t_path(link, fx->root, "a");
	assert_int_equal(mkdir(link, 0755), 0);
	rfd = open(fx->root, O_PATH | O_DIRECTORY);
	assert_true(rfd >= 0);
	/* the lexical check is bypassed here: the kernel alone must refuse */
	assert_int_equal(io__parent_open(rfd, "../x", &fd, &last), -EXDEV);
	assert_int_equal(io__parent_open(rfd, abs, &fd, &last), -EXDEV);
	assert_int_equal(io__parent_open(rfd, "a/../../x", &fd, &last), -EXDEV);
	assert_int_equal(io__parent_open(rfd, "out/x", &fd, &last), -EXDEV);
	assert_non_null(strstr(rcp_err_msg(-EXDEV), "\"out/x\": its directory leads outside"));
	assert_int_equal(fd, -1);
	assert_int_equal(io__parent_open(rfd, "a/../a/x", &fd, &last), 0); /* stays inside */
	assert_string_equal(last, "x");
	close(fd);
	close(rfd);
}

static void test_symlinks_leading_out_are_refused(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char p[4096];

	t_path(p, fx->root, "out");
	assert_int_equal(symlink(fx->outside, p), 0);
	t_path(p, fx->root, "up");
	assert_int_equal(symlink("../outside", p), 0);
	expect_refused(r, "out/x", -EXDEV, "leads outside the root");
	expect_refused(r, "up/x", -EXDEV, "\"up/x\": its directory leads outside the root");
	io_root_close(r);
	assert_nothing_escaped(fx);
}

/* Set base/rel's mtime to ns since the epoch, not following a symlink. */
static void mtime_ns_set(const char *base, const char *rel, int64_t ns)
{
	const struct timespec ts[2] = {{ns / 1000000000, ns % 1000000000},
				       {ns / 1000000000, ns % 1000000000}};
	char p[4096];

	t_path(p, base, rel);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void test_holds_only_the_same_size_and_time_or_link_target(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	const uint64_t one[] = {0, 5};
	char p[4096];
	struct fe f;

	fe_file(&f, "f", 5, 1, one);
	assert_false(io_root_holds(r, &f.e)); /* nothing there */
	t_write(fx->root, "f", "hello", 5, 0644);
	mtime_ns_set(fx->root, "f", f.e.mtime_ns);
	assert_true(io_root_holds(r, &f.e));
	f.e.mtime_ns++; /* a nanosecond apart */
	assert_false(io_root_holds(r, &f.e));
	f.e.mtime_ns--;
	f.e.size = 6;
	assert_false(io_root_holds(r, &f.e));
	/* A directory, or a link to the file, at the name is not the file. */
	fe_file(&f, "d", 0, 0, NULL);
	t_path(p, fx->root, "d");
	assert_int_equal(mkdir(p, 0755), 0);
	assert_false(io_root_holds(r, &f.e));
	fe_other(&f, IO_DIR, "d", NULL);
	assert_false(io_root_holds(r, &f.e)); /* a directory is always looked into */
	t_path(p, fx->root, "l");
	assert_int_equal(symlink("f", p), 0);
	fe_file(&f, "l", 5, 1, one);
	mtime_ns_set(fx->root, "l", f.e.mtime_ns);
	assert_false(io_root_holds(r, &f.e));
	fe_other(&f, IO_SYMLINK, "l", "f");
	assert_true(io_root_holds(r, &f.e));
	fe_other(&f, IO_SYMLINK, "l", "g");
	assert_false(io_root_holds(r, &f.e));
	fe_other(&f, IO_SYMLINK, "l", "ff");
	assert_false(io_root_holds(r, &f.e));
	/* Beneath a missing directory, or one that leads out: not held, and no sentence left. */
	fe_file(&f, "none/f", 5, 1, one);
	assert_false(io_root_holds(r, &f.e));
	t_write(fx->outside, "f", "hello", 5, 0644);
	mtime_ns_set(fx->outside, "f", f.e.mtime_ns);
	t_path(p, fx->root, "out");
	assert_int_equal(symlink(fx->outside, p), 0);
	fe_file(&f, "out/f", 5, 1, one);
	assert_false(io_root_holds(r, &f.e));
	assert_string_equal(rcp_err_msg(-EXDEV), strerror(EXDEV)); /* openat2's refusal forgotten */
	io_root_close(r);
}

static void swap_for_symlink_out(const struct fixture *fx, const char *name)
{
	char p[4096], q[4096];

	t_path(p, fx->root, name);
	assert_true(snprintf(q, sizeof(q), "%s.real", p) < (int)sizeof(q));
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(symlink(fx->outside, p), 0);
}

static void test_symlink_swapped_in_after_a_check_is_refused(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	struct fe d, f;
	bool done = false;

	fe_other(&d, IO_DIR, "a", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	swap_for_symlink_out(fx, "a"); /* after the directory was made and checked */
	expect_refused(r, "a/x", -EXDEV, "leads outside the root");
	/* swapped while a file is being received: it still lands where it was checked */
	fe_other(&d, IO_DIR, "b", NULL);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	fe_file(&f, "b/x", 3, 1, (const uint64_t[]){0, 3});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	swap_for_symlink_out(fx, "b");
	assert_int_equal(wr(w, 0, "abc", 3, &done), 0);
	assert_true(done);
	assert_int_equal(io_wfile_finalize(w), 0);
	assert_true(t_exists(fx->root, "b.real/x"));
	io_root_close(r);
	assert_nothing_escaped(fx);
}

static void test_a_symlink_at_the_final_name_is_replaced_not_followed(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	char p[4096], l[4096], buf[16] = {0};
	bool done = false;
	struct fe f;
	int fd;

	t_write(fx->outside, "target", "secret", 6, 0644);
	t_path(p, fx->outside, "target");
	t_path(l, fx->root, "f");
	assert_int_equal(symlink(p, l), 0);
	fe_file(&f, "f", 3, 1, (const uint64_t[]){0, 3});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, "new", 3, &done), 0);
	assert_int_equal(io_wfile_finalize(w), 0);
	fd = open(p, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	assert_memory_equal(buf, "secret", 6);
	t_path(p, fx->root, "f");
	fd = open(p, O_RDONLY | O_NOFOLLOW);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 3);
	close(fd);
	assert_memory_equal(buf, "new", 3);
	io_root_close(r);
}

static void test_finalize_keeps_holes_mode_and_mtime(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_KEEP_META | IO_ROOT_FSYNC);
	uint64_t pairs[4] = {0, CH, SPARSE_FAR, 2 * CH};
	static char a[CH], z[2 * CH];
	struct io_wfile *w = NULL;
	char p[4096], buf[CH];
	bool done = true;
	struct stat st;
	struct fe f;
	int fd;

	memset(a, 'a', sizeof(a));
	memset(z, 'z', sizeof(z));
	fe_file(&f, "sparse", SPARSE_SIZE, 2, pairs);
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	/* out of order; only the last one completes the file */
	assert_int_equal(wr(w, SPARSE_FAR + CH, z + CH, CH, &done), 0);
	assert_false(done);
	assert_int_equal(wr(w, 0, a, CH, &done), 0);
	assert_false(done);
	assert_false(io__wfile_complete(w));
	assert_int_equal(io__wfile_received(w), 2 * CH);
	assert_false(t_exists(fx->root, "sparse")); /* nothing under the final name yet */
	assert_int_equal(t_count_tmp(fx->root), 1);
	assert_int_equal(wr(w, SPARSE_FAR, z, CH, &done), 0);
	assert_true(done);
	assert_true(io__wfile_complete(w));
	assert_int_equal(io_wfile_finalize(w), 0);
	assert_int_equal(t_count_tmp(fx->root), 0);
	t_path(p, fx->root, "sparse");
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, SPARSE_SIZE);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_mtim.tv_sec, 1234567890);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	assert_true(st.st_blocks * 512 < 1024 * 1024); /* 12 KiB of data, not 6 GiB */
	assert_int_equal(lseek(fd, CH, SEEK_DATA), (off_t)SPARSE_FAR);
	assert_int_equal(lseek(fd, SPARSE_FAR, SEEK_HOLE), (off_t)(SPARSE_FAR + 2 * CH));
	assert_int_equal(pread(fd, buf, CH, (off_t)(SPARSE_FAR + CH)), CH);
	assert_memory_equal(buf, z, CH);
	assert_int_equal(pread(fd, buf, CH, 0), CH);
	assert_memory_equal(buf, a, CH);
	assert_int_equal(pread(fd, buf, 1, (off_t)GIB), 1);
	assert_int_equal(buf[0], 0);
	close(fd);
	io_root_close(r);
}

static void test_finalize_without_keep_meta_uses_umask_and_never_setuid(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0), *rk = root_of(fx, IO_ROOT_KEEP_META);
	struct io_wfile *w = NULL;
	mode_t mask = umask(022);
	bool done = false;
	struct stat st;
	char p[4096];
	struct fe f;

	umask(mask);
	fe_file(&f, "plain", 1, 1, (const uint64_t[]){0, 1});
	f.e.mode = 04777;
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, "p", 1, &done), 0);
	assert_int_equal(io_wfile_finalize(w), 0);
	t_path(p, fx->root, "plain");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0777 & ~mask);
	assert_int_not_equal(st.st_mtim.tv_sec, 1234567890);
	fe_file(&f, "kept", 1, 1, (const uint64_t[]){0, 1});
	f.e.mode = 06755;
	assert_int_equal(io_wfile_open(rk, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, "k", 1, &done), 0);
	assert_int_equal(io_wfile_finalize(w), 0);
	t_path(p, fx->root, "kept");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	io_root_close(r);
	io_root_close(rk);
}

static void test_a_wrong_hash_writes_nothing_and_never_finalizes(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	char p[4096], buf[8];
	bool done = false;
	struct dirent *de;
	struct fe f;
	DIR *d;
	int fd;

	fe_file(&f, "f", 8, 1, (const uint64_t[]){0, 8});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(
		io_chunk_write(w, 0, "damaged!", 8, io_chunk_hash("damaged!", 8) ^ 1, &done),
		-EBADMSG);
	assert_non_null(strstr(rcp_err_msg(-EBADMSG), "arrived damaged"));
	assert_false(io__wfile_complete(w));
	d = opendir(fx->root); /* the temporary holds no byte of it */
	while ((de = readdir(d)) && strncmp(de->d_name, ".railcp-tmp-", 12))
		;
	assert_non_null(de);
	t_path(p, fx->root, de->d_name);
	closedir(d);
	fd = open(p, O_RDONLY);
	assert_int_equal(pread(fd, buf, 8, 0), 0);
	close(fd);
	assert_int_equal(io_wfile_finalize(w), -EIO);
	assert_non_null(strstr(rcp_err_msg(-EIO), "0 of 1 chunks arrived"));
	assert_false(t_exists(fx->root, "f"));
	assert_int_equal(t_count_tmp(fx->root), 0);
	io_root_close(r);
}

static void test_abort_leaves_no_temporary_and_no_final_file(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	bool done = false;
	struct fe f;

	fe_file(&f, "f", 2 * CH, 1, (const uint64_t[]){0, 2 * CH});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, (char[CH]){1}, CH, &done), 0);
	assert_int_equal(t_count_tmp(fx->root), 1);
	io_wfile_abort(w);
	io_wfile_abort(NULL);
	assert_false(t_exists(fx->root, "f"));
	assert_int_equal(t_count_tmp(fx->root), 0);
	/* and a file with a missing chunk is refused at finalize */
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, CH, (char[CH]){2}, CH, &done), 0);
	assert_int_equal(io_wfile_finalize(w), -EIO);
	assert_false(t_exists(fx->root, "f"));
	assert_int_equal(t_count_tmp(fx->root), 0);
	io_root_close(r);
}

static void test_only_planned_chunks_are_accepted(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	static char data[CH];
	struct io_wfile *w = NULL;
	bool done = false;
	struct fe f;

	/* data [CH, 2 CH + 100) and [8 CH, 9 CH) of a 10 CH file */
	fe_file(&f, "f", 10 * CH, 2, (const uint64_t[]){CH, CH + 100, 8 * CH, CH});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, data, CH, &done), -EBADMSG);	     /* in a hole */
	assert_int_equal(wr(w, CH + 1, data, CH, &done), -EBADMSG);  /* misaligned */
	assert_int_equal(wr(w, CH, data, CH - 1, &done), -EBADMSG);  /* short */
	assert_int_equal(wr(w, 2 * CH, data, CH, &done), -EBADMSG);  /* crosses the end */
	assert_int_equal(wr(w, 2 * CH, data, 0, &done), -EBADMSG);   /* empty */
	assert_int_equal(wr(w, 10 * CH, data, CH, &done), -EBADMSG); /* beyond the size */
	assert_int_equal(wr(w, UINT64_MAX - 10, data, 5, &done), -EBADMSG);
	assert_non_null(strstr(rcp_err_msg(-EBADMSG), "not one of the planned chunks of \"f\""));
	assert_int_equal(wr(w, 2 * CH, data, 100, &done), 0);
	assert_int_equal(wr(w, 8 * CH, data, CH, &done), 0);
	assert_int_equal(wr(w, CH, data, CH, &done), 0);
	assert_true(done);
	io_wfile_abort(w);
	io_root_close(r);
}

static void test_a_repeated_chunk_counts_once(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	bool done = true;
	struct fe f;

	fe_file(&f, "f", CH + 1, 1, (const uint64_t[]){0, CH + 1});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, CH, "x", 1, &done), 0);
	assert_false(done);
	assert_int_equal(wr(w, CH, "x", 1, &done), 0);
	assert_false(done);
	assert_false(io__wfile_complete(w));
	assert_int_equal(io__wfile_received(w), 1);
	assert_int_equal(wr(w, 0, (char[CH]){0}, CH, &done), 0);
	assert_true(done);
	assert_int_equal(wr(w, 0, (char[CH]){0}, CH, &done), 0); /* late repeat */
	assert_false(done);
	assert_int_equal(io_wfile_finalize(w), 0);
	io_root_close(r);
}

#define THREADS 4
#define PER_THREAD 64

struct writer {
	struct io_wfile *w;
	unsigned t;
	_Atomic unsigned *completions;
	int err;
};

static void *writer_main(void *arg)
{
	struct writer *wr_ = arg;
	uint8_t buf[CH];
	bool done;
	unsigned i, k;

	for (i = 0; i < PER_THREAD && !wr_->err; i++) {
		k = i * THREADS + wr_->t; /* interleaved across threads */
		memset(buf, (int)(k & 0xff), sizeof(buf));
		wr_->err = wr(wr_->w, (uint64_t)k * CH, buf, CH, &done);
		if (!wr_->err && done)
			atomic_fetch_add(wr_->completions, 1);
	}
	return NULL;
}

static void test_concurrent_writers_complete_the_file_exactly_once(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	uint64_t size = (uint64_t)THREADS * PER_THREAD * CH;
	struct writer wt[THREADS];
	pthread_t th[THREADS];
	_Atomic unsigned completions = 0;
	struct io_wfile *w = NULL;
	uint8_t buf[CH];
	char p[4096];
	struct fe f;
	unsigned i;
	int fd;

	fe_file(&f, "f", size, 1, (const uint64_t[]){0, size});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	for (i = 0; i < THREADS; i++) {
		wt[i] = (struct writer){.w = w, .t = i, .completions = &completions};
		assert_int_equal(pthread_create(&th[i], NULL, writer_main, &wt[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(wt[i].err, 0);
	}
	assert_int_equal(atomic_load(&completions), 1);
	assert_int_equal(io__wfile_received(w), size);
	assert_int_equal(io_wfile_finalize(w), 0);
	t_path(p, fx->root, "f");
	fd = open(p, O_RDONLY);
	for (i = 0; i < THREADS * PER_THREAD; i++) {
		assert_int_equal(pread(fd, buf, CH, (off_t)i * CH), CH);
		assert_int_equal(buf[0], i & 0xff);
		assert_int_equal(buf[CH - 1], i & 0xff);
	}
	close(fd);
	io_root_close(r);
}

static void test_an_empty_file_is_complete_at_once(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	struct stat st;
	char p[4096];
	struct fe f;

	fe_file(&f, "empty", 0, 0, NULL);
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_true(io__wfile_complete(w));
	assert_int_equal(io_wfile_finalize(w), 0);
	t_path(p, fx->root, "empty");
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 0);
	io_root_close(r);
}

static void test_mkdir_reuses_a_directory_and_symlink_replaces_a_file(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char p[4096], target[64] = {0};
	struct fe f;

	fe_other(&f, IO_DIR, "d", NULL);
	assert_int_equal(io_root_mkdir(r, &f.e), 0);
	assert_int_equal(io_root_mkdir(r, &f.e), 0); /* cp -r into an existing directory */
	t_write(fx->root, "file", "x", 1, 0644);
	fe_other(&f, IO_DIR, "file", NULL);
	assert_int_equal(io_root_mkdir(r, &f.e), -EEXIST);
	assert_non_null(strstr(rcp_err_msg(-EEXIST), "\"file\": something else is in the way"));
	fe_other(&f, IO_SYMLINK, "file", "../../anywhere");
	assert_int_equal(io_root_symlink(r, &f.e), 0);
	t_path(p, fx->root, "file");
	assert_int_equal(readlink(p, target, sizeof(target) - 1), 14);
	assert_string_equal(target, "../../anywhere");
	assert_int_equal(t_count_tmp(fx->root), 0);
	io_root_close(r);
}

/*
 * The deepest-first order shows only where permissions are enforced: "d"
 * gets mode 0600 (no search), so had it been applied before "d/e", d/e could
 * not be reached. Run as nobody when we are root (root ignores modes).
 */
static int dirs_scenario(const char *root)
{
	struct fe d, e, f;
	struct io_root *r = NULL;
	struct io_wfile *w = NULL;
	char p[4096];
	bool done;
	struct stat st;

	fe_other(&d, IO_DIR, "d", NULL);
	d.e.mode = 0600;
	d.e.mtime_ns = 1000000000ll * 1111;
	fe_other(&e, IO_DIR, "d/e", NULL);
	e.e.mode = 0500;
	e.e.mtime_ns = 1000000000ll * 2222 + 7;
	fe_file(&f, "d/e/f", 1, 1, (const uint64_t[]){0, 1});
	if (io_root_open(root, IO_ROOT_KEEP_META, &r) || io_root_mkdir(r, &d.e) ||
	    io_root_mkdir(r, &e.e) || io_wfile_open(r, &f.e, CH, &w))
		return 10;
	if (wr(w, 0, "f", 1, &done) || io_wfile_finalize(w))
		return 11;
	if (io_root_dirs_finish(
		    r, &(struct io_manifest){.entry = (struct io_entry[]){d.e, e.e, f.e}, .n = 3}))
		return 12;
	io_root_close(r);
	if (snprintf(p, sizeof(p), "%s/d", root) >= (int)sizeof(p))
		return 16;
	if (stat(p, &st) || (st.st_mode & 07777) != 0600 || st.st_mtim.tv_sec != 1111)
		return 13;
	if (chmod(p, 0700)) /* to look inside; a chmod leaves the mtime alone */
		return 14;
	if (snprintf(p, sizeof(p), "%s/d/e", root) >= (int)sizeof(p))
		return 16;
	if (stat(p, &st) || (st.st_mode & 07777) != 0500 || st.st_mtim.tv_sec != 2222 ||
	    st.st_mtim.tv_nsec != 7)
		return 15;
	return 0;
}

static void test_directory_metadata_is_applied_after_contents_deepest_first(void **state)
{
	struct fixture *fx = *state;
	int status = -1;
	pid_t pid;

	assert_int_equal(chmod(fx->base, 0777), 0);
	assert_int_equal(chmod(fx->root, 0777), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(2);
		_exit(dirs_scenario(fx->root));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		fail_msg("the directory scenario failed at step %d", WEXITSTATUS(status));
}

static void test_dirs_finish_without_keep_meta_changes_nothing(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct stat st;
	char p[4096];
	struct fe d;

	fe_other(&d, IO_DIR, "d", NULL);
	d.e.mode = 0711;
	d.e.mtime_ns = 1000000000ll * 1111;
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	assert_int_equal(io_root_dirs_finish(r, &(struct io_manifest){.entry = &d.e, .n = 1}), 0);
	t_path(p, fx->root, "d");
	assert_int_equal(stat(p, &st), 0);
	assert_int_not_equal(st.st_mtim.tv_sec, 1111);
	io_root_close(r);
}

static void mkdir_0750(const struct fixture *fx, const char *rel)
{
	char p[4096];

	t_path(p, fx->root, rel);
	assert_int_equal(mkdir(p, 0750), 0);
	assert_int_equal(chmod(p, 0750), 0); /* whatever the umask */
}

static void assert_dir_meta(const struct fixture *fx, const char *rel, mode_t mode, long long sec,
			    long nsec)
{
	struct stat st;
	char p[4096];

	t_path(p, fx->root, rel);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, mode);
	if (sec >= 0) {
		assert_int_equal(st.st_mtim.tv_sec, sec);
		assert_int_equal(st.st_mtim.tv_nsec, nsec);
	}
}

/*
 * A peer asking for mode 0 on a directory that was there before must not get
 * it: only the directories the copy made take the peer's mode and mtime.
 */
static void test_keep_meta_changes_only_directories_the_copy_made(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_KEEP_META);
	struct io_wfile *w = NULL;
	struct fe old, kept, made, f;
	bool done = false;
	struct stat st;
	char p[4096];

	mkdir_0750(fx, "old");
	mkdir_0750(fx, "kept");
	t_mtime(fx->root, "kept", 1300000000, 42);
	fe_other(&old, IO_DIR, "old", NULL);
	old.e.mode = 0;
	old.e.mtime_ns = 1000000000ll * 1111;
	fe_other(&kept, IO_DIR, "kept", NULL);
	kept.e.mode = 0;
	kept.e.mtime_ns = 1000000000ll * 1111;
	fe_other(&made, IO_DIR, "old/made", NULL);
	made.e.mode = 0711;
	made.e.mtime_ns = 1000000000ll * 2222 + 7;
	fe_file(&f, "old/made/f", 1, 1, (const uint64_t[]){0, 1});
	assert_int_equal(io_root_mkdir(r, &old.e), 0);
	assert_int_equal(io_root_mkdir(r, &kept.e), 0);
	assert_int_equal(io_root_mkdir(r, &made.e), 0);
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, "f", 1, &done), 0);
	assert_int_equal(io_wfile_finalize(w), 0);
	assert_int_equal(
		io_root_dirs_finish(
			r,
			&(struct io_manifest){
				.entry = (struct io_entry[]){old.e, kept.e, made.e, f.e}, .n = 4}),
		0);
	/* old received a directory, so its mtime is now, but never the peer's */
	assert_dir_meta(fx, "old", 0750, -1, 0);
	t_path(p, fx->root, "old");
	assert_int_equal(stat(p, &st), 0);
	assert_int_not_equal(st.st_mtim.tv_sec, 1111);
	assert_dir_meta(fx, "kept", 0750, 1300000000, 42);
	assert_dir_meta(fx, "old/made", 0711, 2222, 7);
	io_root_close(r);
}

/* The directory made is remembered by identity: one put under its name later is not ours. */
static void test_keep_meta_leaves_a_directory_swapped_in_after_mkdir_alone(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_KEEP_META);
	char p[4096], q[4096];
	struct fe d;

	fe_other(&d, IO_DIR, "d", NULL);
	d.e.mode = 0;
	d.e.mtime_ns = 1000000000ll * 1111;
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	t_path(p, fx->root, "d");
	t_path(q, fx->root, "d.made");
	assert_int_equal(rename(p, q), 0);
	mkdir_0750(fx, "d");
	t_mtime(fx->root, "d", 1300000000, 42);
	assert_int_equal(io_root_dirs_finish(r, &(struct io_manifest){.entry = &d.e, .n = 1}), 0);
	assert_dir_meta(fx, "d", 0750, 1300000000, 42);
	io_root_close(r);
}

/*
 * --partial: a directory a copy made keeps a marker until its metadata is
 * applied, so the copy that resumes an interrupted one treats it as made
 * by a copy (mode and mtime from the source, the marker gone), while one
 * without the marker is still the receiver's own.
 */
static void test_a_resume_gives_metadata_to_the_directories_a_cut_copy_made(void **state)
{
	const unsigned flags = IO_ROOT_KEEP_META | IO_ROOT_PARTIAL;
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, flags);
	struct fe made, own;
	char p[4096];
	struct io_manifest m;

	fe_other(&made, IO_DIR, "made", NULL);
	made.e.mode = 0711;
	made.e.mtime_ns = 1000000000ll * 2222 + 7;
	fe_other(&own, IO_DIR, "own", NULL);
	own.e.mode = 0;
	own.e.mtime_ns = 1000000000ll * 1111;
	mkdir_0750(fx, "own");
	t_mtime(fx->root, "own", 1300000000, 42);
	/* The cut copy: it made the directory, and never finished. */
	assert_int_equal(io_root_mkdir(r, &made.e), 0);
	t_path(p, fx->root, "made/.railcp-tmp-dir");
	assert_int_equal(access(p, F_OK), 0);
	io_root_close(r);
	/* The resume finds it, marked, and finishes it as its own. */
	r = root_of(fx, flags);
	assert_int_equal(io_root_mkdir(r, &made.e), 0);
	assert_int_equal(io_root_mkdir(r, &own.e), 0);
	m = (struct io_manifest){.entry = (struct io_entry[]){made.e, own.e}, .n = 2};
	assert_int_equal(io_root_dirs_finish(r, &m), 0);
	assert_int_equal(access(p, F_OK), -1);
	assert_dir_meta(fx, "made", 0711, 2222, 7);
	assert_dir_meta(fx, "own", 0750, 1300000000, 42);
	io_root_close(r);
	/* Without -p, a resume only takes the marker away. */
	t_path(p, fx->root, "made");
	t_rm_rf(p);
	t_path(p, fx->root, "made/.railcp-tmp-dir");
	r = root_of(fx, IO_ROOT_PARTIAL);
	assert_int_equal(io_root_mkdir(r, &made.e), 0);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(io_root_dirs_finish(r, &m), 0);
	assert_int_equal(access(p, F_OK), -1);
	io_root_close(r);
}

/*
 * --partial: a marker counts only if it is the receiver's own. One another
 * user planted in a directory of the receiver's (a hard link to a file of
 * the receiver's elsewhere, or a file of another user) marks nothing: the
 * directory keeps its mode and mtime, the marker goes, and the file the
 * link named is left as it was.
 */
static void test_a_marker_not_the_receivers_own_marks_nothing(void **state)
{
	const unsigned flags = IO_ROOT_KEEP_META | IO_ROOT_PARTIAL;
	struct fixture *fx = *state;
	struct io_root *r;
	char marker[4096], target[4096];
	struct stat st;
	struct fe d;
	int i;

	fe_other(&d, IO_DIR, "d", NULL);
	d.e.mode = 0711;
	d.e.mtime_ns = 1000000000ll * 2222;
	t_write(fx->outside, "target", "kept", 4, 0600);
	t_path(target, fx->outside, "target");
	mkdir_0750(fx, "d");
	t_path(marker, fx->root, "d/.railcp-tmp-dir");
	for (i = 0; i < 2; i++) {
		if (i == 0) {
			assert_int_equal(link(target, marker), 0);
		} else {
			t_write(fx->root, "d/.railcp-tmp-dir", "", 0, 0600);
			assert_int_equal(chown(marker, 65534, 65534), 0);
		}
		t_mtime(fx->root, "d", 1300000000, 42);
		r = root_of(fx, flags);
		assert_int_equal(io_root_mkdir(r, &d.e), 0);
		assert_int_equal(
			io_root_dirs_finish(r, &(struct io_manifest){.entry = &d.e, .n = 1}), 0);
		io_root_close(r);
		assert_dir_meta(fx, "d", 0750, -1, 0);
		assert_int_equal(lstat(marker, &st), -1);
		assert_int_equal(stat(target, &st), 0);
		assert_int_equal(st.st_nlink, 1);
		assert_int_equal(st.st_size, 4);
	}
}

static void test_open_beneath_confines_the_destination(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0), *sub = NULL;
	struct io_wfile *w = NULL;
	bool done = false;
	char p[4096];
	struct fe f;

	t_path(p, fx->root, "sub");
	assert_int_equal(mkdir(p, 0755), 0);
	t_path(p, fx->root, "out");
	assert_int_equal(symlink(fx->outside, p), 0);
	assert_int_equal(io_root_open_beneath(r, "../outside", &sub), -EINVAL);
	assert_int_equal(io_root_open_beneath(r, fx->outside, &sub), -EINVAL);
	assert_int_equal(io_root_open_beneath(r, "out", &sub), -EXDEV);
	assert_int_equal(io_root_open_beneath(r, "missing", &sub), -ENOENT);
	assert_null(sub);
	assert_int_equal(io_root_open_beneath(r, "sub", &sub), 0);
	fe_file(&f, "x", 1, 1, (const uint64_t[]){0, 1});
	assert_int_equal(io_wfile_open(sub, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 0, "x", 1, &done), 0);
	assert_int_equal(io_wfile_finalize(w), 0);
	assert_true(t_exists(fx->root, "sub/x"));
	io_root_close(sub);
	assert_int_equal(io_root_open_beneath(r, ".", &sub), 0);
	io_root_close(sub);
	io_root_close(r);
	assert_nothing_escaped(fx);
}

static void test_direct_writes_give_the_same_bytes(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_DIRECT);
	uint64_t size = 2 * CH + 10;
	struct io_wfile *w = NULL;
	uint8_t *buf = NULL, back[2 * CH + 10];
	bool done = false;
	char p[4096];
	struct fe f;
	unsigned i;
	int fd;

	assert_int_equal(posix_memalign((void **)&buf, IO_DIRECT_ALIGN, 3 * CH), 0);
	for (i = 0; i < 3 * CH; i++)
		buf[i] = (uint8_t)(i * 7);
	fe_file(&f, "d", size, 1, (const uint64_t[]){0, size});
	assert_int_equal(io_wfile_open(r, &f.e, CH, &w), 0);
	assert_int_equal(wr(w, 2 * CH, buf + 2 * CH, 10, &done), 0); /* unaligned tail: buffered */
	assert_int_equal(wr(w, 0, buf, CH, &done), 0);		     /* aligned: direct */
	assert_int_equal(wr(w, CH, buf + CH, CH, &done), 0);
	assert_true(done);
	assert_int_equal(io_wfile_finalize(w), 0);
	t_path(p, fx->root, "d");
	fd = open(p, O_RDONLY);
	assert_int_equal(read(fd, back, sizeof(back)), (ssize_t)size);
	close(fd);
	assert_memory_equal(back, buf, size);
	free(buf);
	io_root_close(r);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_hostile_names_are_refused_before_anything_is_created),
		T(test_openat2_alone_refuses_what_leads_out),
		T(test_symlinks_leading_out_are_refused),
		T(test_holds_only_the_same_size_and_time_or_link_target),
		T(test_symlink_swapped_in_after_a_check_is_refused),
		T(test_a_symlink_at_the_final_name_is_replaced_not_followed),
		T(test_finalize_keeps_holes_mode_and_mtime),
		T(test_finalize_without_keep_meta_uses_umask_and_never_setuid),
		T(test_a_wrong_hash_writes_nothing_and_never_finalizes),
		T(test_abort_leaves_no_temporary_and_no_final_file),
		T(test_only_planned_chunks_are_accepted),
		T(test_a_repeated_chunk_counts_once),
		T(test_concurrent_writers_complete_the_file_exactly_once),
		T(test_an_empty_file_is_complete_at_once),
		T(test_mkdir_reuses_a_directory_and_symlink_replaces_a_file),
		T(test_directory_metadata_is_applied_after_contents_deepest_first),
		T(test_dirs_finish_without_keep_meta_changes_nothing),
		T(test_keep_meta_changes_only_directories_the_copy_made),
		T(test_keep_meta_leaves_a_directory_swapped_in_after_mkdir_alone),
		T(test_a_resume_gives_metadata_to_the_directories_a_cut_copy_made),
		T(test_a_marker_not_the_receivers_own_marks_nothing),
		T(test_open_beneath_confines_the_destination),
		T(test_direct_writes_give_the_same_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
