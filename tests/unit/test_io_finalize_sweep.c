/*
 * test_io_finalize_sweep.c - the receiver's finalize against failing
 * system calls, and the order of its calls: a final name must only ever
 * hold data the kernel accepted without an error, so every close is checked
 * and comes, with the fsync, before the rename. The directory's fsync, which
 * makes the renames survive a crash, comes once for all its files, at
 * io_root_dirs_finish (the end of the copy), not once per file.
 *
 * Design: besides alloc_fail.h's allocation wrappers (every *_sweep.c
 * binary has them), this binary is linked with --wrap for close, fsync,
 * fchmod, futimens and renameat (tests/SConscript). While a test watches,
 * each call is logged as one letter, and the Nth close or fsync can be made
 * to fail with EIO after it really ran (Linux releases a descriptor even
 * when close fails, and so does the wrapper). At a rename the wrapper also
 * counts this process's descriptors still open on the file being renamed.
 *
 * Threading: one thread; the wrappers' state is plain globals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc_fail.h"
#include "common/common.h"
#include "io/io.h"
#include "test_io_tree.h"

#include <sys/stat.h>

#define CH 4096u
#define SWEEP_LIMIT 100

int __real_close(int fd);
int __real_fsync(int fd);
int __real_fchmod(int fd, mode_t mode);
int __real_futimens(int fd, const struct timespec ts[2]);
int __real_renameat(int ofd, const char *old, int nfd, const char *new_name);
int __wrap_close(int fd);
int __wrap_fsync(int fd);
int __wrap_fchmod(int fd, mode_t mode);
int __wrap_futimens(int fd, const struct timespec ts[2]);
int __wrap_renameat(int ofd, const char *old, int nfd, const char *new_name);

static struct {
	bool on;      /* log and count */
	char ops[64]; /* 'm' fchmod, 't' futimens, 's' fsync, 'c' close, 'R' renameat */
	int fds[64];  /* the descriptor of each (renameat: its old directory) */
	unsigned n;   /* calls logged */
	char fail_op; /* 'c' or 's': fail the fail_at-th of these */
	unsigned fail_at;
	unsigned seen;	    /* calls of fail_op so far */
	int open_at_rename; /* descriptors open on the renamed file, at the last rename */
} sys;

static void sys_watch(char fail_op, unsigned fail_at)
{
	memset(&sys, 0, sizeof(sys));
	sys.on = true;
	sys.fail_op = fail_op;
	sys.fail_at = fail_at;
	sys.open_at_rename = -1;
}

static void sys_unwatch(void)
{
	sys.on = false;
}

/* Log op on fd; true if this call is to fail. */
static bool sys_log(char op, int fd)
{
	if (!sys.on)
		return false;
	if (sys.n < sizeof(sys.ops) - 1) {
		sys.ops[sys.n] = op;
		sys.fds[sys.n++] = fd;
	}
	return op == sys.fail_op && ++sys.seen == sys.fail_at;
}

/* This process's descriptors open on a file whose path ends in "/name". */
static int fds_open_on(const char *name)
{
	char link[4096];
	struct dirent *d;
	size_t len = strlen(name);
	DIR *dh = opendir("/proc/self/fd");
	ssize_t n;
	int count = 0;

	assert_non_null(dh);
	while ((d = readdir(dh))) {
		n = readlinkat(dirfd(dh), d->d_name, link, sizeof(link) - 1);
		if (n <= (ssize_t)len)
			continue;
		link[n] = '\0';
		count += link[n - (ssize_t)len - 1] == '/' && !strcmp(link + n - len, name);
	}
	closedir(dh);
	return count;
}

static int fd_count(void)
{
	struct dirent *d;
	DIR *dh = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(dh);
	while ((d = readdir(dh)))
		n += d->d_name[0] != '.';
	closedir(dh);
	return n;
}

int __wrap_close(int fd)
{
	bool fail = sys_log('c', fd);
	int r = __real_close(fd);

	if (!fail || r < 0)
		return r;
	errno = EIO; /* as NFS reports a failed write-back, with the fd released */
	return -1;
}

int __wrap_fsync(int fd)
{
	if (sys_log('s', fd)) {
		errno = EIO;
		return -1;
	}
	return __real_fsync(fd);
}

int __wrap_fchmod(int fd, mode_t mode)
{
	sys_log('m', fd);
	return __real_fchmod(fd, mode);
}

int __wrap_futimens(int fd, const struct timespec ts[2])
{
	sys_log('t', fd);
	return __real_futimens(fd, ts);
}

int __wrap_renameat(int ofd, const char *old, int nfd, const char *new_name)
{
	if (sys.on)
		sys.open_at_rename = fds_open_on(old);
	sys_log('R', ofd);
	return __real_renameat(ofd, old, nfd, new_name);
}

static char base[4096];

static int setup(void **state)
{
	(void)state;
	t_mkdtemp(base);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	t_rm_rf(base);
	return 0;
}

/* A file "f" of 2 chunks and a 10-byte tail, whose data is buf. */
static struct io_extent f_ext = {0, 2 * CH + 10};
static struct io_entry f_entry = {.path = "f",
				  .type = IO_FILE,
				  .mode = 0640,
				  .size = 2 * CH + 10,
				  .ext = &f_ext,
				  .n_ext = 1,
				  .data_bytes = 2 * CH + 10,
				  .mtime_ns = 1234567890123456789ll};

/* An aligned buffer (for O_DIRECT) with the file's data. */
static uint8_t *f_data(void)
{
	uint8_t *buf = NULL;
	unsigned i;

	assert_int_equal(posix_memalign((void **)&buf, IO_DIRECT_ALIGN, 3 * CH), 0);
	for (i = 0; i < 3 * CH; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	return buf;
}

/* Open "f" and write every chunk of it: ready to finalize. */
static struct io_wfile *f_received(struct io_root *r, const uint8_t *buf)
{
	struct io_wfile *w = NULL;
	uint32_t len[3] = {CH, CH, 10};
	bool done = false;
	unsigned i;

	assert_int_equal(io_wfile_open(r, &f_entry, CH, &w), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(io_chunk_write(w, i * CH, buf + i * CH, len[i],
						io_chunk_hash(buf + i * CH, len[i]), &done),
				 0);
	assert_true(done);
	return w;
}

/* The bytes under the final name "f" are data (len bytes), exactly. */
static void assert_f_holds(const void *data, size_t len)
{
	uint8_t back[3 * CH];
	char p[4096];
	int fd;

	t_path(p, base, "f");
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, back, sizeof(back)), (ssize_t)len);
	close(fd);
	assert_memory_equal(back, data, len);
}

static void test_a_failed_close_fails_the_file_and_keeps_the_old_one(void **state)
{
	struct io_root *r = NULL;
	struct io_wfile *w;
	uint8_t *buf = f_data();
	int fds = fd_count(), err;
	unsigned n;

	(void)state;
	t_write(base, "f", "old", 3, 0644); /* an update: the old file must survive */
	/* O_DIRECT where the file system has it: two descriptors, each close swept */
	assert_int_equal(io_root_open(base, IO_ROOT_DIRECT, &r), 0);
	for (n = 1; n < SWEEP_LIMIT; n++) {
		w = f_received(r, buf);
		sys_watch('c', n);
		err = io_wfile_finalize(w);
		sys_unwatch();
		if (err == 0)
			break;
		assert_int_equal(err, -EIO);
		assert_non_null(strstr(rcp_err_msg(err), "closing \"f\" failed"));
		assert_f_holds("old", 3);
		assert_int_equal(t_count_tmp(base), 0);
		assert_int_equal(fd_count(), fds + 1); /* the root's only */
	}
	print_message("io_wfile_finalize: %u failing closes swept\n", n - 1);
	assert_true(n > 1 && n < SWEEP_LIMIT); /* at least the file's own close */
	assert_f_holds(buf, f_entry.size);
	assert_int_equal(t_count_tmp(base), 0);
	io_root_close(r);
	assert_int_equal(fd_count(), fds);
	free(buf);
}

static void test_the_final_name_comes_after_fsync_and_close(void **state)
{
	struct io_root *r = NULL;
	struct io_wfile *w;
	uint8_t *buf = f_data();

	(void)state;
	assert_int_equal(io_root_open(base, IO_ROOT_FSYNC | IO_ROOT_KEEP_META, &r), 0);
	w = f_received(r, buf);
	sys_watch(0, 0);
	assert_int_equal(io_wfile_finalize(w), 0);
	sys_unwatch();
	/*
	 * mode, time, then fsync (covering them), close, and only then the
	 * rename; the directory is the root's, kept for the copy: not closed.
	 */
	assert_string_equal(sys.ops, "mtscR");
	assert_int_equal(sys.fds[1], sys.fds[0]);
	assert_int_equal(sys.fds[2], sys.fds[0]);
	assert_int_equal(sys.fds[3], sys.fds[0]);
	assert_int_equal(sys.open_at_rename, 0); /* nothing left open on the temporary */
	assert_f_holds(buf, f_entry.size);
	io_root_close(r);
	free(buf);
}

/*
 * Three files put in place in one directory: no directory fsync among
 * their finalizes; io_root_dirs_finish syncs the directory once (open,
 * fsync, close), and a second finish, with nothing renamed since, not again.
 */
static void test_a_directory_is_synced_once_for_all_its_files(void **state)
{
	static const struct io_manifest none = {0};
	struct io_entry e = f_entry;
	struct io_root *r = NULL;
	struct io_wfile *w = NULL;
	uint8_t *buf = f_data();
	struct stat st;
	char sub[4096];
	bool done;
	unsigned i;

	(void)state;
	t_path(sub, base, "d");
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(io_root_open(base, IO_ROOT_FSYNC, &r), 0);
	for (i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "d/f%u", i);
		e = (struct io_entry){.path = name,
				      .type = IO_FILE,
				      .mode = 0644,
				      .size = 10,
				      .ext = &(struct io_extent){0, 10},
				      .n_ext = 1,
				      .data_bytes = 10};
		assert_int_equal(io_wfile_open(r, &e, CH, &w), 0);
		assert_int_equal(io_chunk_write(w, 0, buf, 10, io_chunk_hash(buf, 10), &done), 0);
		sys_watch(0, 0);
		assert_int_equal(io_wfile_finalize(w), 0);
		sys_unwatch();
		assert_string_equal(sys.ops, "mscR"); /* no directory fsync here */
	}
	sys_watch(0, 0);
	assert_int_equal(io_root_dirs_finish(r, &none), 0);
	sys_unwatch();
	assert_string_equal(sys.ops, "sc"); /* "d" alone: nothing was renamed into the root */
	assert_int_equal(fstat(sys.fds[0], &st), -1); /* its descriptor closed after the fsync */
	sys_watch(0, 0);
	assert_int_equal(io_root_dirs_finish(r, &none), 0);
	sys_unwatch();
	assert_string_equal(sys.ops, "");
	io_root_close(r);
	free(buf);
}

static void test_a_failed_fsync_leaves_no_final_name(void **state)
{
	struct io_root *r = NULL;
	struct io_wfile *w;
	uint8_t *buf = f_data();
	int fds = fd_count(), err;

	(void)state;
	assert_int_equal(io_root_open(base, IO_ROOT_FSYNC, &r), 0);
	w = f_received(r, buf);
	sys_watch('s', 1);
	err = io_wfile_finalize(w);
	sys_unwatch();
	assert_int_equal(err, -EIO);
	assert_non_null(strstr(rcp_err_msg(err), "cannot sync \"f\""));
	assert_string_equal(sys.ops, "msc"); /* no rename; the kept directory stays open */
	assert_false(t_exists(base, "f"));
	assert_int_equal(t_count_tmp(base), 0);
	io_root_close(r);
	assert_int_equal(fd_count(), fds);
	free(buf);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_failed_close_fails_the_file_and_keeps_the_old_one),
		T(test_the_final_name_comes_after_fsync_and_close),
		T(test_a_failed_fsync_leaves_no_final_name),
		T(test_a_directory_is_synced_once_for_all_its_files),
	};

	rcp_log_set_level(RCP_LOG_SILENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
