/*
 * test_io_root_dirs.c - the receiver's directory metadata: applied after the
 * contents, deepest first, and only with keep-meta; only on the directories
 * the copy made (remembered by identity), or, with --partial, a directory
 * marked by a marker that is the receiver's own; a railcp-mpi job's, set
 * once by its last session on the directories that hold the job's marker.
 * Each test runs on one
 * thread in a scratch directory of its own; one forks to run as nobody.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_io_root.h"

#include <grp.h>
#include <sys/wait.h>

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

/* The mode io_root_mkdir gives a directory of mode before its metadata is set: the umask's. */
static mode_t mkdir_mode(mode_t mode)
{
	mode_t mask = umask(0);

	umask(mask);
	return ((mode & 0777) | 0700) & ~mask;
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

/* ---- a railcp-mpi job's directories, set once by its last session ---- */

#define JOB 0x0123456789abcdefull
#define JOB_MARK ".railcp-tmp-dir-j0123456789abcdef"

static bool exists(const struct fixture *fx, const char *rel)
{
	char p[4096];

	t_path(p, fx->root, rel);
	return access(p, F_OK) == 0;
}

/* A session of job JOB with flags, on fx's root. */
static struct io_root *job_root(const struct fixture *fx, unsigned flags)
{
	struct io_root *r = root_of(fx, flags);

	io_root_set_job(r, JOB);
	return r;
}

/*
 * Two sessions of one job write into one directory: neither sets its mode
 * or time at its end (a read-only one would stop the second, and its file
 * would change the time); the job's last session sets both, deepest first,
 * and takes the markers away.
 */
static void test_a_jobs_last_session_sets_the_directories_its_sessions_made(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = job_root(fx, IO_ROOT_KEEP_META);
	struct fe d, e;
	struct io_manifest m;
	uint64_t count = 9;

	fe_other(&d, IO_DIR, "d", NULL);
	d.e.mode = 0555;
	d.e.mtime_ns = 1000000000ll * 1111;
	fe_other(&e, IO_DIR, "d/e", NULL);
	e.e.mode = 0500;
	e.e.mtime_ns = 1000000000ll * 2222 + 7;
	m = (struct io_manifest){.entry = (struct io_entry[]){d.e, e.e}, .n = 2};
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	assert_int_equal(io_root_mkdir(r, &e.e), 0);
	assert_int_equal(io_root_dirs_finish(r, &m), 0);
	io_root_close(r);
	assert_dir_meta(fx, "d", mkdir_mode(0555), -1, 0); /* still open to the next session */
	assert_true(exists(fx, "d/" JOB_MARK));
	assert_true(exists(fx, "d/e/" JOB_MARK));
	r = job_root(fx, IO_ROOT_KEEP_META); /* the next session finds d made */
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	t_write(fx->root, "d/later", "x", 1, 0644);
	assert_int_equal(io_root_dirs_finish(r, &m), 0);
	io_root_close(r);
	r = root_of(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_job_dirs(r, &m, JOB, true, NULL, NULL, &count), 0);
	io_root_close(r);
	assert_int_equal(count, 2);
	assert_dir_meta(fx, "d", 0555, 1111, 0);
	assert_dir_meta(fx, "d/e", 0500, 2222, 7);
	assert_false(exists(fx, "d/" JOB_MARK));
	assert_false(exists(fx, "d/e/" JOB_MARK));
}

/*
 * The last session changes only what the job made: a directory that was
 * there before (the receiver's own) and one another job made keep their
 * mode and time, and the other job's marker stays.
 */
static void test_a_jobs_last_session_leaves_what_the_job_did_not_make(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = job_root(fx, IO_ROOT_KEEP_META);
	struct fe own, other;
	struct io_manifest m;
	uint64_t count = 9;

	mkdir_0750(fx, "own");
	t_mtime(fx->root, "own", 1300000000, 42);
	fe_other(&own, IO_DIR, "own", NULL);
	own.e.mode = 0;
	own.e.mtime_ns = 1000000000ll * 1111;
	fe_other(&other, IO_DIR, "other", NULL);
	other.e.mode = 0;
	other.e.mtime_ns = 1000000000ll * 1111;
	assert_int_equal(io_root_mkdir(r, &own.e), 0);
	io_root_close(r);
	r = root_of(fx, IO_ROOT_KEEP_META);
	io_root_set_job(r, JOB + 1);
	assert_int_equal(io_root_mkdir(r, &other.e), 0);
	io_root_close(r);
	t_mtime(fx->root, "other", 1300000000, 43);
	m = (struct io_manifest){.entry = (struct io_entry[]){own.e, other.e}, .n = 2};
	r = root_of(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_job_dirs(r, &m, JOB, true, NULL, NULL, &count), 0);
	io_root_close(r);
	assert_int_equal(count, 0);
	assert_false(exists(fx, "own/" JOB_MARK));
	assert_dir_meta(fx, "own", 0750, 1300000000, 42);
	assert_dir_meta(fx, "other", 0700, 1300000000, 43); /* mkdir's: mode | 0700 */
	assert_true(exists(fx, "other/.railcp-tmp-dir-j0123456789abcdf0"));
}

/*
 * A job's marker counts only if it is the receiver's own: one planted in a
 * directory of the receiver's (a hard link to a file of the receiver's
 * elsewhere, or another user's file) gets no chmod; it goes, and the linked
 * file stays as it was.
 */
static void test_a_planted_job_marker_marks_nothing(void **state)
{
	struct fixture *fx = *state;
	char marker[4096], target[4096];
	struct io_root *r;
	struct io_manifest m;
	uint64_t count = 9;
	struct stat st;
	struct fe d;
	int i;

	fe_other(&d, IO_DIR, "d", NULL);
	d.e.mode = 0;
	d.e.mtime_ns = 1000000000ll * 2222;
	m = (struct io_manifest){.entry = &d.e, .n = 1};
	t_write(fx->outside, "target", "kept", 4, 0600);
	t_path(target, fx->outside, "target");
	mkdir_0750(fx, "d");
	t_path(marker, fx->root, "d/" JOB_MARK);
	for (i = 0; i < 2; i++) {
		if (i == 0) {
			assert_int_equal(link(target, marker), 0);
		} else {
			t_write(fx->root, "d/" JOB_MARK, "", 0, 0600);
			assert_int_equal(chown(marker, 65534, 65534), 0);
		}
		t_mtime(fx->root, "d", 1300000000, 42);
		r = root_of(fx, IO_ROOT_KEEP_META);
		assert_int_equal(io_root_job_dirs(r, &m, JOB, true, NULL, NULL, &count), 0);
		io_root_close(r);
		assert_int_equal(count, 0);
		assert_dir_meta(fx, "d", 0750, -1, 0);
		assert_int_equal(lstat(marker, &st), -1);
		assert_int_equal(stat(target, &st), 0);
		assert_int_equal(st.st_nlink, 1);
		assert_int_equal(st.st_size, 4);
	}
}

/*
 * A failed job's removal takes the job's markers and sets nothing; under
 * --partial the copy's own marker stays, so a re-run resumes the directory
 * as a copy's (and marks it for its own job).
 */
static void test_a_failed_jobs_removal_takes_only_the_markers(void **state)
{
	const unsigned flags = IO_ROOT_KEEP_META | IO_ROOT_PARTIAL;
	struct fixture *fx = *state;
	struct io_root *r = job_root(fx, flags);
	struct io_manifest m;
	uint64_t count = 9;
	struct fe d;

	fe_other(&d, IO_DIR, "d", NULL);
	d.e.mode = 0711;
	d.e.mtime_ns = 1000000000ll * 2222;
	m = (struct io_manifest){.entry = &d.e, .n = 1};
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	assert_int_equal(io_root_dirs_finish(r, &m), 0);
	io_root_close(r);
	assert_true(exists(fx, "d/.railcp-tmp-dir"));
	d.e.mode = 0500; /* what a removal must not set */
	r = root_of(fx, flags);
	assert_int_equal(io_root_job_dirs(r, &m, JOB, false, NULL, NULL, &count), 0);
	io_root_close(r);
	assert_int_equal(count, 1);
	assert_dir_meta(fx, "d", mkdir_mode(0711), -1, 0);
	assert_false(exists(fx, "d/" JOB_MARK));
	assert_true(exists(fx, "d/.railcp-tmp-dir"));
	/* The re-run's session marks it for its job, and its last session sets it. */
	r = job_root(fx, flags);
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	io_root_close(r);
	assert_true(exists(fx, "d/" JOB_MARK));
	r = root_of(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_job_dirs(r, &m, JOB, true, NULL, NULL, &count), 0);
	io_root_close(r);
	assert_dir_meta(fx, "d", 0500, 2222, 0);
	assert_false(exists(fx, "d/.railcp-tmp-dir"));
	assert_false(exists(fx, "d/" JOB_MARK));
	/* Without --partial a failed job's removal takes both. */
	assert_int_equal(chmod(fx->root, 0755), 0);
	r = job_root(fx, flags);
	fe_other(&d, IO_DIR, "e", NULL);
	m = (struct io_manifest){.entry = &d.e, .n = 1};
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	io_root_close(r);
	r = root_of(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_job_dirs(r, &m, JOB, false, NULL, NULL, &count), 0);
	io_root_close(r);
	assert_false(exists(fx, "e/.railcp-tmp-dir"));
	assert_false(exists(fx, "e/" JOB_MARK));
}

/*
 * A job's marker names its directory: one a user moved from a directory the
 * job made (which she may write) into the receiver's own directory in the
 * job's list marks nothing there; it goes, and that directory keeps its mode.
 */
static void test_a_job_marker_moved_into_another_directory_marks_nothing(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = job_root(fx, IO_ROOT_KEEP_META);
	char from[4096], to[4096];
	struct io_manifest m;
	uint64_t count = 9;
	struct fe made, own;

	fe_other(&made, IO_DIR, "made", NULL);
	made.e.mode = 0777;
	made.e.mtime_ns = 1000000000ll * 1111;
	fe_other(&own, IO_DIR, "own", NULL);
	own.e.mode = 0777;
	own.e.mtime_ns = 1000000000ll * 1111;
	mkdir_0750(fx, "own");
	t_mtime(fx->root, "own", 1300000000, 42);
	m = (struct io_manifest){.entry = (struct io_entry[]){made.e, own.e}, .n = 2};
	assert_int_equal(io_root_mkdir(r, &made.e), 0);
	assert_int_equal(io_root_mkdir(r, &own.e), 0);
	assert_int_equal(io_root_dirs_finish(r, &m), 0);
	io_root_close(r);
	t_path(from, fx->root, "made/" JOB_MARK);
	t_path(to, fx->root, "own/" JOB_MARK);
	assert_int_equal(rename(from, to), 0);
	t_mtime(fx->root, "own", 1300000000, 42);
	r = root_of(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_job_dirs(r, &m, JOB, true, NULL, NULL, &count), 0);
	io_root_close(r);
	assert_int_equal(count, 0);
	assert_dir_meta(fx, "own", 0750, -1, 0);
	assert_false(exists(fx, "own/" JOB_MARK));
	assert_false(exists(fx, "made/" JOB_MARK));
}

/*
 * A job's session that fails removes the markers it made itself, and only
 * those: a directory another session of the job made keeps its marker.
 */
static void test_a_failed_jobs_session_removes_only_its_own_markers(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = job_root(fx, IO_ROOT_KEEP_META);
	struct io_manifest m;
	struct fe x, y;

	fe_other(&x, IO_DIR, "x", NULL);
	fe_other(&y, IO_DIR, "x/y", NULL);
	m = (struct io_manifest){.entry = (struct io_entry[]){x.e, y.e}, .n = 2};
	assert_int_equal(io_root_mkdir(r, &x.e), 0);
	io_root_close(r);
	r = job_root(fx, IO_ROOT_KEEP_META); /* the next session finds x made */
	assert_int_equal(io_root_mkdir(r, &x.e), 0);
	assert_int_equal(io_root_mkdir(r, &y.e), 0);
	assert_true(exists(fx, "x/y/" JOB_MARK));
	io_root_job_abandon(r, &m);
	io_root_close(r);
	assert_false(exists(fx, "x/y/" JOB_MARK));
	assert_true(exists(fx, "x/" JOB_MARK));
	io_root_job_abandon(NULL, &m); /* nothing to do */
}

/*
 * A session judged gone while it lived (a failover): the re-run's session
 * on another server finds x made with the copy's marker (-c or --partial)
 * and the first session's job marker, so it marks nothing itself; then
 * the first session is cut and removes its job marker. The job's last
 * session still gives x its metadata, by the copy's marker, and leaves
 * no marker.
 */
static void test_a_directory_whose_job_marker_a_cut_session_took_is_set_by_the_copys(void **state)
{
	struct fixture *fx = *state;
	const unsigned flags = IO_ROOT_KEEP_META | IO_ROOT_PARTIAL;
	struct io_root *a = job_root(fx, flags), *b;
	struct io_manifest m;
	uint64_t count = 9;
	struct fe x;

	fe_other(&x, IO_DIR, "x", NULL);
	x.e.mode = 0550;
	x.e.mtime_ns = 1000000000ll * 3333;
	m = (struct io_manifest){.entry = (struct io_entry[]){x.e}, .n = 1};
	assert_int_equal(io_root_mkdir(a, &x.e), 0);
	b = job_root(fx, flags);
	assert_int_equal(io_root_mkdir(b, &x.e), 0);
	assert_int_equal(io_root_dirs_finish(b, &m), 0);
	io_root_close(b);
	io_root_job_abandon(a, &m);
	io_root_close(a);
	assert_false(exists(fx, "x/" JOB_MARK));
	assert_true(exists(fx, "x/.railcp-tmp-dir"));
	a = root_of(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_job_dirs(a, &m, JOB, true, NULL, NULL, &count), 0);
	io_root_close(a);
	assert_int_equal(count, 1);
	assert_dir_meta(fx, "x", 0550, 3333, 0);
	assert_false(exists(fx, "x/.railcp-tmp-dir"));
}

static void count_visit(void *ctx)
{
	(*(unsigned *)ctx)++;
}

/*
 * The last session's pass calls back once its directories are sorted and
 * after each directory (its server says "alive" so on a long list), those
 * without the marker too, and not after other entries.
 */
static void test_a_jobs_last_session_calls_back_after_its_sort_and_each_directory(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = job_root(fx, IO_ROOT_KEEP_META);
	struct io_manifest m;
	unsigned visits = 0;
	uint64_t count = 9;
	struct fe d, e, f;

	fe_other(&d, IO_DIR, "d", NULL);
	fe_other(&e, IO_DIR, "e", NULL);
	fe_file(&f, "d/f", 1, 1, (const uint64_t[]){0, 1});
	m = (struct io_manifest){.entry = (struct io_entry[]){d.e, e.e, f.e}, .n = 3};
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	io_root_close(r);
	r = root_of(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_job_dirs(r, &m, JOB, true, count_visit, &visits, &count), 0);
	io_root_close(r);
	assert_int_equal(count, 1);
	assert_int_equal(visits, 1 + 2);
}

/*
 * setuid and setgid never reach a directory, whichever pass sets its mode:
 * a copy's own (io_root_dirs_finish) or a job's last session's
 * (io_root_job_dirs); the sticky bit does. The peer does not choose what
 * runs as the receiver.
 */
static void test_a_directory_never_gets_setuid_or_setgid(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_KEEP_META);
	struct io_manifest m;
	uint64_t count = 9;
	struct fe d, j;

	fe_other(&d, IO_DIR, "d", NULL);
	d.e.mode = 07755;
	d.e.mtime_ns = 1000000000ll * 1111;
	assert_int_equal(io_root_mkdir(r, &d.e), 0);
	assert_int_equal(io_root_dirs_finish(r, &(struct io_manifest){.entry = &d.e, .n = 1}), 0);
	io_root_close(r);
	assert_dir_meta(fx, "d", 01755, 1111, 0);
	fe_other(&j, IO_DIR, "j", NULL);
	j.e.mode = 07750;
	j.e.mtime_ns = 1000000000ll * 2222 + 7;
	m = (struct io_manifest){.entry = &j.e, .n = 1};
	r = job_root(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_mkdir(r, &j.e), 0);
	io_root_close(r);
	r = root_of(fx, IO_ROOT_KEEP_META);
	assert_int_equal(io_root_job_dirs(r, &m, JOB, true, NULL, NULL, &count), 0);
	io_root_close(r);
	assert_int_equal(count, 1);
	assert_dir_meta(fx, "j", 01750, 2222, 7);
}

/*
 * Two threads that each reserved a directory's id when one slot was left
 * both add theirs: the list grows for the second, so no directory the
 * session made drops out of it (and out of its metadata, its markers'
 * removal). Played in turn on one thread, which the lock makes the same.
 */
static void test_two_reservations_of_the_last_slot_keep_both_ids(void **state)
{
	struct fixture *fx = *state;
	struct io_dir_id *v = NULL;
	size_t n = 0, cap = 0, i;
	struct io_root *root;
	struct stat st = {0};

	assert_int_equal(io_root_open(fx->root, 0, &root), 0);
	do { /* filled but for one slot */
		assert_int_equal(io__dir_ids_reserve(root, &v, &n, &cap, "making", "d"), 0);
		st.st_ino = n + 1;
		io__dir_ids_add(root, &v, &n, &cap, &st);
	} while (n + 1 < cap);
	assert_int_equal(io__dir_ids_reserve(root, &v, &n, &cap, "making", "a"), 0);
	assert_int_equal(io__dir_ids_reserve(root, &v, &n, &cap, "making", "b"), 0);
	st.st_ino = 1000;
	io__dir_ids_add(root, &v, &n, &cap, &st);
	st.st_ino = 1001;
	io__dir_ids_add(root, &v, &n, &cap, &st);
	assert_true(n >= 2);
	assert_int_equal(v[n - 2].ino, 1000);
	assert_int_equal(v[n - 1].ino, 1001);
	for (i = 0; i + 2 < n; i++)
		assert_int_equal(v[i].ino, i + 1);
	free(v);
	io_root_close(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_directory_metadata_is_applied_after_contents_deepest_first),
		T(test_dirs_finish_without_keep_meta_changes_nothing),
		T(test_keep_meta_changes_only_directories_the_copy_made),
		T(test_keep_meta_leaves_a_directory_swapped_in_after_mkdir_alone),
		T(test_a_resume_gives_metadata_to_the_directories_a_cut_copy_made),
		T(test_a_marker_not_the_receivers_own_marks_nothing),
		T(test_a_jobs_last_session_sets_the_directories_its_sessions_made),
		T(test_a_jobs_last_session_leaves_what_the_job_did_not_make),
		T(test_a_planted_job_marker_marks_nothing),
		T(test_a_failed_jobs_removal_takes_only_the_markers),
		T(test_a_job_marker_moved_into_another_directory_marks_nothing),
		T(test_a_failed_jobs_session_removes_only_its_own_markers),
		T(test_a_jobs_last_session_calls_back_after_its_sort_and_each_directory),
		T(test_a_directory_whose_job_marker_a_cut_session_took_is_set_by_the_copys),
		T(test_a_directory_never_gets_setuid_or_setgid),
		T(test_two_reservations_of_the_last_slot_keep_both_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
