/*
 * test_io_range.c - a file received in byte ranges by several sessions of
 * one railcp-mpi job (io/range.c): every range lands in the job's one
 * temporary, never under the final name, until one put in place with the
 * whole file's size, mode and time; a hostile peer's path outside the root,
 * or a range beyond the file's whole size or off its chunks, is refused in
 * one sentence before anything is made; a name planted where the temporary
 * goes, or one of another size, fails the range and is neither written
 * through nor made anew; the temporary is named by SHA-256, not a CRC; a
 * failed job's temporary goes. Each test
 * runs in a scratch directory of its own, on one thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_io_root.h"

#define JOB 0x0123456789abcdefull
#define WHOLE (3 * CH + 100)

/* Entry f: path, a range [off, off + len) of a file of size bytes. */
static void fe_range(struct fe *f, const char *path, uint64_t size, uint64_t off, uint64_t len)
{
	uint64_t pair[2] = {off, len};

	fe_file(f, path, size, 1, pair);
}

/* A range's handle on r, opened as the engine opens it: start, range, the rest. */
static int range_open(struct io_root *r, const struct fe *f, uint64_t job, struct io_wfile **w_out)
{
	struct io_wfile *w = NULL;
	struct io_op op;
	int err = io_wfile_open_start(r, &f->e, CH, &w, &op);

	if (err)
		return err;
	err = io_wfile_range(w, job);
	if (err) {
		io_wfile_abort(w);
		return err;
	}
	err = io_wfile_open_rest(w, &op);
	if (!err)
		*w_out = w;
	return err;
}

static void range_write(struct io_wfile *w, const uint8_t *data, uint64_t off, uint64_t len)
{
	bool done = false;
	uint64_t at;

	for (at = off; at < off + len; at += CH) {
		uint32_t n = (uint32_t)(off + len - at < CH ? off + len - at : CH);

		assert_int_equal(wr(w, at, data + at, n, &done), 0);
	}
	assert_true(done);
}

static void test_ranges_land_in_one_temporary_and_are_put_in_place_once(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_KEEP_META | IO_ROOT_FSYNC);
	static uint8_t data[WHOLE], back[WHOLE + 1];
	struct io_wfile *a = NULL, *b = NULL;
	struct fe fa, fb, whole;
	uint64_t pair[2] = {0, WHOLE};
	char p[4096];
	struct stat st;
	size_t i;
	int fd;

	for (i = 0; i < WHOLE; i++)
		data[i] = (uint8_t)(i * 7 + i / CH);
	fe_range(&fa, "big", WHOLE, 0, 2 * CH);
	fe_range(&fb, "big", WHOLE, 2 * CH, CH + 100);
	/* the later range first, from its own handle, as another session would */
	assert_int_equal(range_open(r, &fb, JOB, &b), 0);
	range_write(b, data, 2 * CH, CH + 100);
	assert_int_equal(io_wfile_finalize(b), 0);
	assert_false(t_exists(fx->root, "big"));
	assert_int_equal(t_count_tmp(fx->root), 2); /* the temporary and the job's record */
	assert_int_equal(range_open(r, &fa, JOB, &a), 0);
	range_write(a, data, 0, 2 * CH);
	assert_int_equal(io_wfile_finalize(a), 0);
	assert_false(t_exists(fx->root, "big")); /* landed, not yet in place */
	assert_int_equal(t_count_tmp(fx->root), 2);
	fe_file(&whole, "big", WHOLE, 1, pair);
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, false), 0);
	assert_int_equal(t_count_tmp(fx->root), 0);
	t_path(p, fx->root, "big");
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, back, sizeof(back)), WHOLE);
	assert_memory_equal(back, data, WHOLE);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_mtim.tv_sec, 1234567890);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	close(fd);
	/* put in place once: a second place finds no temporary */
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, false), -ENOENT);
	assert_non_null(strstr(rcp_err_msg(-ENOENT),
			       "cannot put \"big\" in place: none of its ranges landed"));
	io_root_close(r);
}

static void test_with_keep_meta_the_place_keeps_its_directory_time(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, IO_ROOT_KEEP_META | IO_ROOT_FSYNC);
	static uint8_t data[WHOLE];
	uint64_t pair[2] = {0, WHOLE};
	struct io_wfile *w = NULL;
	struct fe f, whole;
	char d[4096];
	struct stat st;

	t_path(d, fx->root, "d");
	assert_int_equal(mkdir(d, 0755), 0);
	fe_range(&f, "d/big", WHOLE, 0, WHOLE);
	assert_int_equal(range_open(r, &f, JOB, &w), 0);
	range_write(w, data, 0, WHOLE);
	assert_int_equal(io_wfile_finalize(w), 0);
	t_mtime(fx->root, "d", 1000000000, 5); /* as the job's sessions left it, -p's */
	fe_file(&whole, "d/big", WHOLE, 1, pair);
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, false), 0);
	assert_true(t_exists(d, "big"));
	assert_int_equal(stat(d, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
	assert_int_equal(st.st_mtim.tv_nsec, 5);
	io_root_close(r);
}

static void expect_range_refused(struct io_root *r, const struct fe *f, int err, const char *words)
{
	struct io_wfile *w = NULL;

	assert_int_equal(range_open(r, f, JOB, &w), err);
	assert_null(w);
	assert_non_null(strstr(rcp_err_msg(err), words));
	assert_null(strchr(rcp_err_msg(err), '\n')); /* one sentence, one line */
}

static void test_a_path_outside_the_root_is_refused(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char link[4096], abs[4096];
	struct fe f;

	t_path(link, fx->root, "out");
	assert_int_equal(symlink(fx->outside, link), 0);
	t_path(abs, fx->outside, "big");
	fe_range(&f, "../outside/big", WHOLE, 0, CH);
	expect_range_refused(r, &f, -EINVAL, "refused \"../outside/big\"");
	fe_range(&f, abs, WHOLE, 0, CH);
	expect_range_refused(r, &f, -EINVAL, "refused \"");
	fe_range(&f, "out/big", WHOLE, 0, CH); /* lexically fine: the kernel refuses */
	expect_range_refused(r, &f, -EXDEV, "\"out/big\": its directory leads outside");
	/* the job's own calls refuse the same paths */
	fe_range(&f, "../outside/big", WHOLE, 0, WHOLE);
	assert_int_equal(io_root_range_place(r, &f.e, JOB, false), -EINVAL);
	assert_int_equal(io_root_range_remove(r, "../outside/big", JOB), -EINVAL);
	assert_int_equal(io_root_range_remove(r, "out/big", JOB), -EXDEV);
	assert_int_equal(t_count_tmp(fx->base), 0);
	assert_false(t_exists(fx->outside, "big"));
	io_root_close(r);
}

static void test_a_range_beyond_the_whole_size_or_off_its_chunks_is_refused(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	uint64_t two[4] = {0, CH, 2 * CH + 1, CH - 1}, none[2] = {0, 0};
	struct fe f;

	fe_range(&f, "big", WHOLE, 2 * CH, 2 * CH);
	expect_range_refused(r, &f, -EINVAL, "a range ends beyond the file's whole size");
	fe_range(&f, "big", WHOLE, 4 * CH, 1);
	expect_range_refused(r, &f, -EINVAL, "a range ends beyond the file's whole size");
	fe_range(&f, "big", WHOLE, UINT64_MAX - CH + 1, CH); /* wraps past zero */
	expect_range_refused(r, &f, -EINVAL, "a range ends beyond the file's whole size");
	fe_range(&f, "big", WHOLE, 100, CH);
	expect_range_refused(r, &f, -EINVAL, "does not start on a chunk");
	fe_range(&f, "big", WHOLE, 0, CH + 1);
	expect_range_refused(r, &f, -EINVAL, "ends inside a chunk");
	fe_range(&f, "big", WHOLE, CH, 0);
	expect_range_refused(r, &f, -EINVAL, "a range is empty");
	fe_file(&f, "big", WHOLE, 2, two);
	expect_range_refused(r, &f, -EINVAL, "a range does not start on a chunk");
	fe_file(&f, "big", WHOLE, 0, none);
	expect_range_refused(r, &f, -EINVAL, "no range is given");
	assert_int_equal(t_count_tmp(fx->root), 0); /* refused before anything is made */
	io_root_close(r);
}

static void test_ranges_without_a_job_are_refused(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL;
	struct fe f;

	/* as a hostile server's list to a pull would have them: never put in place */
	fe_range(&f, "big", WHOLE, 0, CH);
	assert_int_equal(range_open(r, &f, 0, &w), -EPROTO);
	assert_null(w);
	assert_non_null(strstr(rcp_err_msg(-EPROTO), "refused the ranges of \"big\" (12388 "
						     "bytes): they name no job to gather them in"));
	assert_int_equal(t_count_tmp(fx->root), 0);
	io_root_close(r);
}

static void test_a_name_planted_at_the_temporary_is_refused_and_left(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char name[IO_RANGE_NAME_LEN], p[4096], target[4096];
	struct io_wfile *w = NULL;
	struct stat st;
	struct fe f;

	t_write(fx->outside, "victim", "keep", 4, 0644);
	t_path(target, fx->outside, "victim");
	io__range_name(JOB, "big", name);
	t_path(p, fx->root, name);
	assert_int_equal(symlink(target, p), 0);
	fe_range(&f, "big", WHOLE, 0, CH);
	/* not its own: the session fails, nothing is made anew (other ranges may be in it) */
	assert_int_equal(range_open(r, &f, JOB, &w), -EPERM);
	assert_non_null(strstr(rcp_err_msg(-EPERM), "refused the job's temporary file of \"big\": "
						    "it is a symbolic link"));
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 4);
	/* a hard link to a file outside: the same */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(link(target, p), 0);
	assert_int_equal(range_open(r, &f, JOB, &w), -EPERM);
	assert_non_null(strstr(rcp_err_msg(-EPERM), "it is hard-linked under another name"));
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(st.st_nlink, 2);
	io_root_close(r);
}

static void test_a_temporary_of_another_size_is_refused_not_resized(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	char name[IO_RANGE_NAME_LEN], p[4096];
	struct io_wfile *w = NULL;
	struct stat st;
	struct fe f;

	io__range_name(JOB, "big", name);
	t_write(fx->root, name, "other", 5, 0600);
	fe_range(&f, "big", WHOLE, 0, CH);
	assert_int_equal(range_open(r, &f, JOB, &w), -EPERM);
	assert_non_null(strstr(rcp_err_msg(-EPERM), "it holds 5 bytes, neither none nor the "
						    "file's 12388"));
	t_path(p, fx->root, name);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 5);
	io_root_close(r);
}

static void test_two_names_never_share_a_temporary(void **state)
{
	char a[IO_RANGE_NAME_LEN], b[IO_RANGE_NAME_LEN];

	(void)state;
	/* SHA-256 of the name, cut to 128 bits: "abc"'s digest starts ba7816bf... */
	io__range_name(JOB, "abc", a);
	assert_string_equal(a, ".railcp-tmp-j0123456789abcdefba7816bf8f01cfea414140de5dae2223");
	io__range_name(JOB, "abd", b);
	assert_string_not_equal(a, b);
}

static void test_a_range_that_never_landed_is_never_put_in_place(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	static uint8_t data[WHOLE];
	uint64_t pair[2] = {0, WHOLE};
	struct io_wfile *w = NULL, *v = NULL;
	struct fe f, g, whole;

	/* the first and last ranges land; the middle one opened (sized it) and failed */
	fe_range(&f, "big", WHOLE, 0, CH);
	fe_range(&g, "big", WHOLE, CH, CH);
	assert_int_equal(range_open(r, &f, JOB, &w), 0);
	range_write(w, data, 0, CH);
	assert_int_equal(io_wfile_finalize(w), 0);
	assert_int_equal(range_open(r, &g, JOB, &v), 0);
	io_wfile_abort(v);
	fe_range(&f, "big", WHOLE, 2 * CH, CH + 100);
	assert_int_equal(range_open(r, &f, JOB, &w), 0);
	range_write(w, data, 2 * CH, CH + 100);
	assert_int_equal(io_wfile_finalize(w), 0);
	fe_file(&whole, "big", WHOLE, 1, pair);
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, false), -EIO);
	assert_non_null(strstr(rcp_err_msg(-EIO), "cannot put \"big\" in place: only its first "
						  "4096 of 12388 bytes are recorded as landed"));
	assert_false(t_exists(fx->root, "big"));
	assert_int_equal(t_count_tmp(fx->root), 0); /* the temporary and its record */
	io_root_close(r);
}

static void test_a_grown_file_is_never_put_in_place(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	static uint8_t data[WHOLE];
	uint64_t pair[2] = {0, WHOLE + CH};
	struct io_wfile *w = NULL;
	struct fe f, other;

	fe_range(&f, "big", WHOLE, 0, WHOLE);
	assert_int_equal(range_open(r, &f, JOB, &w), 0);
	range_write(w, data, 0, WHOLE);
	assert_int_equal(io_wfile_finalize(w), 0);
	fe_file(&other, "big", WHOLE + CH, 1, pair); /* the file grew: not the job's */
	assert_int_equal(io_root_range_place(r, &other.e, JOB, false), -EIO);
	assert_non_null(strstr(rcp_err_msg(-EIO), "only its first 12388 of 16484 bytes"));
	assert_false(t_exists(fx->root, "big"));
	assert_int_equal(t_count_tmp(fx->root), 0);
	io_root_close(r);
}

static void test_a_place_again_counts_what_an_earlier_place_put(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	static uint8_t data[WHOLE];
	uint64_t pair[2] = {0, WHOLE};
	struct io_wfile *w = NULL;
	char rec[IO_RANGE_NAME_LEN], p[4096];
	struct fe f, whole;

	fe_range(&f, "big", WHOLE, 0, WHOLE);
	assert_int_equal(range_open(r, &f, JOB, &w), 0);
	range_write(w, data, 0, WHOLE);
	assert_int_equal(io_wfile_finalize(w), 0);
	fe_file(&whole, "big", WHOLE, 1, pair);
	/* an earlier place renamed it and stopped before removing the record: its inode */
	io__range_name(JOB, "big", rec);
	rec[sizeof(".railcp-tmp-") - 1] = 'k';
	t_path(p, fx->root, rec);
	assert_int_equal(access(p, F_OK), 0);
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, false), 0);
	assert_int_equal(t_count_tmp(fx->root), 0);
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, false), -ENOENT);
	/* again: the final name is what a place put (no record now: a file of its size) */
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, true), 0);
	/* but not a file of another size */
	t_write(fx->root, "big", "short", 5, 0644);
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, true), -ENOENT);
	assert_non_null(strstr(rcp_err_msg(-ENOENT), "none of its ranges landed"));
	io_root_close(r);
}

static void test_a_place_again_finds_the_record_of_what_it_renamed(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	static uint8_t data[WHOLE];
	uint64_t pair[2] = {0, WHOLE};
	struct io_wfile *w = NULL;
	char tmp[IO_RANGE_NAME_LEN], a[4096], b[4096];
	struct fe f, whole;

	fe_range(&f, "big", WHOLE, 0, WHOLE);
	assert_int_equal(range_open(r, &f, JOB, &w), 0);
	range_write(w, data, 0, WHOLE);
	assert_int_equal(io_wfile_finalize(w), 0);
	fe_file(&whole, "big", WHOLE, 1, pair);
	/* as if an earlier place renamed it and its server was gone before the record went */
	io__range_name(JOB, "big", tmp);
	t_path(a, fx->root, tmp);
	t_path(b, fx->root, "big");
	assert_int_equal(rename(a, b), 0);
	assert_int_equal(io_root_range_place(r, &whole.e, JOB, true), 0);
	assert_int_equal(t_count_tmp(fx->root), 0); /* the record went */
	io_root_close(r);
}

static void test_an_aborted_range_leaves_the_temporary_for_the_job_to_remove(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	struct io_wfile *w = NULL, *v = NULL;
	struct fe f, g;

	fe_range(&f, "big", WHOLE, 0, CH);
	fe_range(&g, "big", WHOLE, CH, CH);
	assert_int_equal(range_open(r, &f, JOB, &w), 0);
	assert_int_equal(range_open(r, &g, JOB + 1, &v), 0); /* another job: its own name */
	assert_int_equal(t_count_tmp(fx->root), 2);
	io_wfile_abort(w);
	io_wfile_abort(v);
	assert_int_equal(t_count_tmp(fx->root), 2); /* other ranges may be landing there */
	assert_int_equal(io_root_range_remove(r, "big", JOB), 0);
	assert_int_equal(t_count_tmp(fx->root), 1);
	assert_int_equal(io_root_range_remove(r, "big", JOB), 0); /* none left: no error */
	assert_int_equal(io_root_range_remove(r, "no/such/dir/big", JOB), 0);
	assert_int_equal(io_root_range_remove(r, "big", JOB + 1), 0);
	assert_int_equal(t_count_tmp(fx->root), 0);
	assert_false(t_exists(fx->root, "big"));
	io_root_close(r);
}

/*
 * A failed job's removal while a range is landing: the range's record is
 * not made anew beside a temporary that is gone, so nothing of the job
 * outlives it (host/mpi_ranges' --no-failover case left such a record).
 */
static void test_a_range_landing_after_its_job_was_removed_leaves_no_record(void **state)
{
	struct fixture *fx = *state;
	struct io_root *r = root_of(fx, 0);
	static uint8_t data[WHOLE];
	struct io_wfile *w = NULL;
	struct fe f;

	fe_range(&f, "big", WHOLE, 0, CH);
	assert_int_equal(range_open(r, &f, JOB, &w), 0);
	range_write(w, data, 0, CH);
	assert_int_equal(io_root_range_remove(r, "big", JOB), 0);
	assert_int_equal(t_count_tmp(fx->root), 0);
	assert_int_equal(io_wfile_finalize(w), -ECANCELED);
	assert_non_null(strstr(rcp_err_msg(-ECANCELED), "the job's temporary file of \"big\" was "
							"removed: the job failed elsewhere"));
	assert_int_equal(t_count_tmp(fx->root), 0);
	assert_false(t_exists(fx->root, "big"));
	io_root_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_ranges_land_in_one_temporary_and_are_put_in_place_once),
		T(test_with_keep_meta_the_place_keeps_its_directory_time),
		T(test_a_path_outside_the_root_is_refused),
		T(test_a_range_beyond_the_whole_size_or_off_its_chunks_is_refused),
		T(test_ranges_without_a_job_are_refused),
		T(test_a_name_planted_at_the_temporary_is_refused_and_left),
		T(test_a_temporary_of_another_size_is_refused_not_resized),
		T(test_two_names_never_share_a_temporary),
		T(test_a_range_that_never_landed_is_never_put_in_place),
		T(test_a_grown_file_is_never_put_in_place),
		T(test_a_place_again_counts_what_an_earlier_place_put),
		T(test_a_place_again_finds_the_record_of_what_it_renamed),
		T(test_an_aborted_range_leaves_the_temporary_for_the_job_to_remove),
		T(test_a_range_landing_after_its_job_was_removed_leaves_no_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
