/*
 * test_io_partial_owner.c - what --partial keeps is trusted only if it is
 * the receiver's own (io__partial_open): whole copies over the loopback
 * transport (partial_harness.h) into a root where another user may have
 * planted, under the predictable names, a data file of hers, hard links to
 * files elsewhere, symlinks, or a log she owns. None of it is kept, read
 * through, truncated, written or mapped; the final file is the receiver's,
 * with the sender's bytes; a -c -n or --partial -n dry run counts none of
 * it as kept and removes none of it either. The tests run as root, which may open anything:
 * only the checks of owner and link count stand between it and these.
 *
 * Threading: one gated copy at a time, and a canceller thread.
 */
#include "partial_harness.h"
#include "io/io_int.h"

#include <linux/fs.h>
#include <sys/ioctl.h>

#define OTHER_UID 65534 /* nobody */

/* The whole of the file at path, in a new buffer of *len_out bytes. */
static uint8_t *slurp_path(const char *path, size_t *len_out)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY | O_NOFOLLOW);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len_out = (size_t)st.st_size;
	return buf;
}

/* What fd holds is still the len bytes at want. */
static void assert_holds(int fd, const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len + 1);
	struct stat st;

	assert_non_null(got);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, len);
	assert_int_equal(pread(fd, got, len + 1, 0), (ssize_t)len);
	assert_memory_equal(got, want, len);
	free(got);
}

/* The file at path made another user's, and held open: what the receiver does with it shows. */
static int give_to_other_user(const char *path)
{
	int fd;

	assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	return fd;
}

/* The file held open as fd is still another user's, and no longer has a name: it was removed. */
static void assert_removed_and_not_ours(int fd, struct stat *st_out)
{
	assert_int_equal(fstat(fd, st_out), 0);
	assert_int_equal(st_out->st_uid, OTHER_UID);
	assert_int_equal(st_out->st_nlink, 0);
}

/* The final file is the receiver's own, not the inode planted as ino, with the sender's bytes. */
static void assert_final_own(const struct pt *p, ino_t planted)
{
	char got[4096];
	struct stat st;

	t_path(got, p->root, "big");
	assert_int_equal(lstat(got, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_nlink, 1);
	assert_int_not_equal(st.st_ino, planted);
	file_same(p->big, got, PBIG);
}

/*
 * (a) A data file of another user under the partial file's name, with the
 * very bytes a cut copy left (a record of the receiver's claims them): as
 * root the receiver could open it, check its chunks, keep them and rename
 * her inode into place, which she could change later. It is removed
 * instead, every byte travels, and the file put in place is the receiver's.
 */
static void test_another_users_data_file_is_not_kept_nor_put_in_place(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char data[4096];
	struct stat st;
	struct pt p;
	int fd;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	path_of_prefix(p.root, ".railcp-tmp-p", data);
	fd = give_to_other_user(data);
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes_kept, 0);
	assert_int_equal(r.bytes, PBIG);
	assert_removed_and_not_ours(fd, &st); /* removed, not renamed into place */
	assert_final_own(&p, st.st_ino);
	close(fd);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/* What the server said (stderr) while a dry run of p ran, into log; and its count. */
static struct eng_dry_chunks dry_said(struct fx *fx, struct pt *p, char *log, size_t len)
{
	struct eng_dry_chunks c;
	char path[4096];
	int fd, saved;
	ssize_t n;

	t_path(path, fx->base, "said");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	assert_true((saved = dup(STDERR_FILENO)) >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	c = pt_dry(fx, p, ENG_PUSH);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, log, len - 1, 0);
	log[n > 0 ? n : 0] = '\0';
	close(fd);
	fputs(log, stderr);
	return c;
}

/*
 * (a') The same file, and a -c -n push: a dry run looks and removes
 * nothing, so the file, its record and its log keep their names and the
 * file its owner; its chunks are not counted as kept (the copy would
 * remove it), so all of them would travel, and the notice says why, not
 * that the file is gone.
 */
static void test_a_dry_run_with_c_removes_no_data_file_of_another_user(void **state)
{
	struct fx *fx = *state;
	struct eng_dry_chunks c;
	char data[4096], log[16384];
	struct stat st;
	struct pt p;
	int fd;

	pt_start(fx, &p, NULL);
	p.checksum = true;
	cut_push(fx, &p);
	path_of_prefix(p.root, ".railcp-tmp-p", data);
	fd = give_to_other_user(data);
	c = dry_said(fx, &p, log, sizeof(log));
	assert_int_equal(c.differ, 513);
	assert_non_null(strstr(log, "the partial record of \"big\" is ignored: its data file is "
				    "not this receiver's own (a copy would remove it)"));
	assert_null(strstr(log, "gone"));
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_uid, OTHER_UID);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(count_prefix(p.root, ".railcp-tmp-p"), 1);
	assert_int_equal(count_prefix(p.root, ".railcp-tmp-r"), 1);
	assert_int_equal(count_prefix(p.root, ".railcp-tmp-l"), 1);
	close(fd);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * (a'') The same with --partial -n (no -c): the other user's data file
 * counts for nothing, as the copy would remove it, and stays; and so do a
 * record and a log of hers beside the receiver's own data file.
 */
static void test_a_dry_run_with_partial_counts_nothing_of_another_user(void **state)
{
	struct fx *fx = *state;
	struct eng_dry_chunks c;
	char data[4096], rec[4096], lg[4096], log[16384];
	struct stat st;
	struct pt p;
	int fd, fr, fl;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	c = dry_said(fx, &p, log, sizeof(log));
	assert_true(c.differ < 513); /* the receiver's own: counted as kept */
	path_of_prefix(p.root, ".railcp-tmp-p", data);
	fd = give_to_other_user(data);
	c = dry_said(fx, &p, log, sizeof(log));
	assert_int_equal(c.differ, 513);
	assert_non_null(strstr(log, "its data file is not this receiver's own (a copy would "
				    "remove it)"));
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_uid, OTHER_UID);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(chown(data, geteuid(), getegid()), 0);
	path_of_prefix(p.root, ".railcp-tmp-r", rec);
	path_of_prefix(p.root, ".railcp-tmp-l", lg);
	fr = give_to_other_user(rec);
	fl = give_to_other_user(lg);
	c = dry_said(fx, &p, log, sizeof(log));
	assert_int_equal(c.differ, 513);
	assert_int_equal(fstat(fr, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(fstat(fl, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	close(fd);
	close(fr);
	close(fl);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * (a'') A data file of the receiver's own that it may read but not write
 * (immutable here, as root; 0400 or a read-only mount for a receiver not
 * root): the copy cannot open it to resume and sends the file whole, so a
 * --partial -n dry run counts none of it as kept either. Skipped where the
 * file system or the caller cannot make a file immutable.
 */
static void test_a_dry_run_with_partial_counts_nothing_of_a_data_file_it_cannot_write(void **state)
{
	struct fx *fx = *state;
	struct eng_dry_chunks c = {0}, again = {0};
	char data[4096], log[16384];
	struct pt p;
	int fd, fl = 0, set;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	path_of_prefix(p.root, ".railcp-tmp-p", data);
	fd = open(data, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ioctl(fd, FS_IOC_GETFLAGS, &fl), 0);
	fl |= FS_IMMUTABLE_FL;
	set = ioctl(fd, FS_IOC_SETFLAGS, &fl);
	if (set == 0) {
		c = dry_said(fx, &p, log, sizeof(log));
		fl &= ~FS_IMMUTABLE_FL; /* before any assertion: the fixture's removal needs it */
		assert_int_equal(ioctl(fd, FS_IOC_SETFLAGS, &fl), 0);
		again = dry_said(fx, &p, log, sizeof(log)); /* writable again: kept, as before */
	}
	close(fd);
	assert_int_equal(server_stop(&fx->srv), 0);
	if (set != 0)
		skip(); /* no immutable files here (tmpfs before Linux 6.0, or not root) */
	assert_int_equal(c.differ, 513);
	assert_true(again.differ < 513);
}

/*
 * (b) Hard links, planted under the data file's, the record's and the
 * log's names, to files outside the root (what fs.protected_hardlinks=0
 * lets any user make to any file): the receiver must not truncate or write
 * them. Each target keeps its bytes and its one name.
 */
static void test_hard_links_in_place_of_partial_files_are_not_written_through(void **state)
{
	static const char *const outside[] = {"out-data", "out-rec", "out-log"};
	char names[3][IO_TMP_NAME_LEN], at[4096], target[4096];
	struct fx *fx = *state;
	uint8_t *want[3];
	size_t len[3];
	struct eng_report r;
	struct stat st;
	struct pt p;
	int i, fd[3];

	pt_start(fx, &p, NULL);
	io__partial_names("big", names[0], names[1], names[2]);
	for (i = 0; i < 3; i++) {
		pattern_write(fx->base, outside[i], 5000 + i, 20 + (uint32_t)i);
		t_path(target, fx->base, outside[i]);
		want[i] = slurp_path(target, &len[i]);
		t_path(at, p.root, names[i]);
		assert_int_equal(link(target, at), 0);
		fd[i] = open(target, O_RDONLY);
		assert_true(fd[i] >= 0);
	}
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes_kept, 0);
	for (i = 0; i < 3; i++) {
		assert_holds(fd[i], want[i], len[i]);
		assert_int_equal(fstat(fd[i], &st), 0);
		assert_int_equal(st.st_nlink, 1); /* the link is gone, the file is not */
		if (i == 0)
			assert_final_own(&p, st.st_ino);
		close(fd[i]);
		free(want[i]);
	}
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * (c) Symlinks in place of the record and the log, to copies of the very
 * record and log a cut copy left, outside the root: neither is followed
 * (their targets keep their bytes) and neither stays. The next cut copy
 * makes a log and a record of its own under those names, and a copy after
 * it resumes from them.
 */
/*
 * The receiver's own record and log stand at their names (regular files of
 * this user, not the symlinks planted there): a checkpoint recorded chunks
 * that landed, so the cut keeps them. The cut waits for that rather than
 * for a temporary, which the planted names already are: under load it came
 * before the receiver had written a record, and there was none to look at.
 */
static bool own_record_and_log(const char *dir)
{
	static const char *const prefix[] = {".railcp-tmp-r", ".railcp-tmp-l"};
	char path[4096];
	struct stat st;
	size_t i;

	for (i = 0; i < RCP_ARRAY_SIZE(prefix); i++) {
		if (count_prefix(dir, prefix[i]) != 1)
			return false;
		path_of_prefix(dir, prefix[i], path);
		if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			return false;
	}
	return true;
}

static void test_symlinks_in_place_of_record_and_log_are_not_followed(void **state)
{
	static const char *const prefix[] = {".railcp-tmp-r", ".railcp-tmp-l"};
	static const char *const outside[] = {"real-rec", "real-log"};
	char at[2][4096], target[4096];
	struct fx *fx = *state;
	uint8_t *want[2];
	size_t len[2];
	struct eng_report r;
	struct stat st;
	struct pt p;
	int i, fd[2];

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	for (i = 0; i < 2; i++) {
		path_of_prefix(p.root, prefix[i], at[i]);
		t_path(target, fx->base, outside[i]);
		assert_int_equal(rename(at[i], target), 0);
		assert_int_equal(symlink(target, at[i]), 0);
		want[i] = slurp_path(target, &len[i]);
		fd[i] = open(target, O_RDONLY);
		assert_true(fd[i] >= 0);
	}
	p.cut_until = own_record_and_log;
	pt_copy(fx, &p, ENG_PUSH, gate_arm(ENG_WRITE_BATCH), true, &r);
	p.cut_until = NULL;
	server_again(fx, &p);
	assert_int_equal(r.bytes_kept, 0);
	for (i = 0; i < 2; i++) {
		assert_holds(fd[i], want[i], len[i]);
		close(fd[i]);
		free(want[i]);
		assert_int_equal(lstat(at[i], &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(st.st_uid, geteuid());
	}
	resumed_push(fx, &p, &r);
	assert_true(r.bytes_kept > 0);
	assert_int_equal(server_stop(&fx->srv), 0);
}

/*
 * (d) A log another user owns, its slots those of chunks that did land
 * (the record gone, so only the log claims them): she could truncate it
 * beneath the receiver's shared mapping and raise SIGBUS in the whole
 * server. It claims nothing and is neither mapped nor stored into: its
 * bytes stay as they were, and it is removed.
 */
static void test_a_log_another_user_owns_is_not_mapped(void **state)
{
	struct fx *fx = *state;
	struct eng_report r;
	char rec[4096], log[4096];
	uint8_t *want;
	size_t len;
	struct stat st;
	struct pt p;
	int fd;

	pt_start(fx, &p, NULL);
	cut_push(fx, &p);
	path_of_prefix(p.root, ".railcp-tmp-r", rec);
	assert_int_equal(unlink(rec), 0);
	path_of_prefix(p.root, ".railcp-tmp-l", log);
	want = slurp_path(log, &len);
	fd = give_to_other_user(log);
	resumed_push(fx, &p, &r);
	assert_int_equal(r.bytes_kept, 0);
	assert_holds(fd, want, len);
	assert_removed_and_not_ours(fd, &st);
	close(fd);
	free(want);
	assert_int_equal(server_stop(&fx->srv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_another_users_data_file_is_not_kept_nor_put_in_place),
		T(test_a_dry_run_with_c_removes_no_data_file_of_another_user),
		T(test_a_dry_run_with_partial_counts_nothing_of_another_user),
		T(test_a_dry_run_with_partial_counts_nothing_of_a_data_file_it_cannot_write),
		T(test_hard_links_in_place_of_partial_files_are_not_written_through),
		T(test_symlinks_in_place_of_record_and_log_are_not_followed),
		T(test_a_log_another_user_owns_is_not_mapped),
	};

	return cmocka_run_group_tests(tests, session_group_setup, session_group_teardown);
}
