/*
 * test_session_ranges.c - a railcp-mpi job's file cut into byte ranges,
 * over whole loopback sessions (protocol 17, engine/session/ranges.c): two
 * pushes, each of one range, land in the job's one temporary and never
 * under the final name; a "ranges" session puts the file in place,
 * byte-identical, once, and a place again counts it; another removes a
 * failed job's temporary, going on past one it cannot remove; a list
 * with ranges and no job is refused in one sentence and the server still
 * serves. Each test runs its own server in a scratch directory.
 */
#include "session_harness.h"

#include <openssl/sha.h>

#define JOB 0x1122334455667788ull
#define BIG (3 * 64 * KiB + 100)

struct ranges_fx {
	char src[4096], root[4096], file[4096];
	struct topo_plan plan;
	struct io_manifest *whole;
};

static void ranges_start(struct fx *fx, struct ranges_fx *r)
{
	static const unsigned loop1[] = {1};
	const char *srcs[] = {r->file};

	t_path(r->src, fx->base, "src");
	t_path(r->root, fx->base, "root");
	t_path(r->file, r->src, "big");
	assert_int_equal(mkdir(r->src, 0755), 0);
	assert_int_equal(mkdir(r->root, 0755), 0);
	pattern_write(r->src, "big", BIG, 27);
	plan_make(&fx->srv.plan, loop1, 1, 1, 1, BUDGET);
	plan_make(&r->plan, loop1, 1, 1, 1, BUDGET);
	server_start(&fx->srv, NULL, r->root, NULL);
	assert_int_equal(io_manifest_walk(NULL, srcs, 1, 0, NULL, &r->whole), 0);
	assert_int_equal(r->whole->n, 1);
}

/* The walked file as a range [off, off + len) of it. */
static struct io_manifest *range_of(const struct ranges_fx *r, uint64_t off, uint64_t len)
{
	struct io_manifest *m = NULL;

	assert_int_equal(io_manifest_pick(r->whole, NULL, &m), 0);
	m->entry[0].range = true;
	m->entry[0].ext[0] = (struct io_extent){off, len};
	m->entry[0].data_bytes = m->data_bytes = len;
	return m;
}

/* A push of m (NULL: the whole file) naming job, at step. */
static int push(struct fx *fx, const struct ranges_fx *r, const struct io_manifest *m, uint64_t job,
		enum eng_range_step step, struct eng_report *rep)
{
	const char *srcs[] = {r->file};
	struct eng_copy_opts cp = copy_opts(ENG_PUSH, srcs, 1, "");

	cp.manifest = m ? m : r->whole;
	cp.range_job = job;
	cp.range_step = step;
	memset(rep, 0, sizeof(*rep));
	return copy(&fx->srv, &r->plan, &cp, NULL, rep);
}

static void test_two_ranges_land_in_one_temporary_and_one_session_puts_it_in_place(void **state)
{
	struct fx *fx = *state;
	struct ranges_fx r;
	struct io_manifest *a, *b;
	struct eng_report rep;
	char got[4096];
	int err;

	ranges_start(fx, &r);
	a = range_of(&r, 64 * KiB, BIG - 64 * KiB);
	b = range_of(&r, 0, 64 * KiB);
	assert_int_equal(push(fx, &r, a, JOB, ENG_RANGES_LAND, &rep), 0);
	assert_int_equal(rep.bytes, BIG - 64 * KiB);
	t_path(got, r.root, "big");
	assert_false(t_exists(r.root, "big"));
	assert_int_equal(t_count_tmp(r.root), 2); /* the temporary and the job's record */
	assert_int_equal(push(fx, &r, b, JOB, ENG_RANGES_LAND, &rep), 0);
	assert_int_equal(rep.bytes, 64 * KiB);
	assert_false(t_exists(r.root, "big"));
	assert_int_equal(t_count_tmp(r.root), 2);
	assert_int_equal(push(fx, &r, NULL, JOB, ENG_RANGES_PLACE, &rep), 0);
	assert_int_equal(rep.files_total, 1);
	assert_int_equal(rep.bytes, 0); /* nothing travels */
	file_same(r.file, got, BIG);
	assert_int_equal(t_count_tmp(r.root), 0);
	/* once: the next place finds no temporary, and says so */
	err = push(fx, &r, NULL, JOB, ENG_RANGES_PLACE, &rep);
	assert_int_not_equal(err, 0);
	assert_non_null(strstr(rcp_err_msg(err), "none of its ranges landed"));
	file_same(r.file, got, BIG);
	/* a place again (its server judged gone after it placed) counts it as placed */
	assert_int_equal(push(fx, &r, NULL, JOB, ENG_RANGES_PLACE_AGAIN, &rep), 0);
	assert_int_equal(rep.files_total, 1);
	file_same(r.file, got, BIG);
	io_manifest_destroy(a);
	io_manifest_destroy(b);
	io_manifest_destroy(r.whole);
	bench_ok(&fx->srv, NULL);
}

static void test_a_failed_job_s_temporary_is_removed(void **state)
{
	struct fx *fx = *state;
	struct ranges_fx r;
	struct io_manifest *a;
	struct eng_report rep;

	ranges_start(fx, &r);
	a = range_of(&r, 0, 64 * KiB);
	assert_int_equal(push(fx, &r, a, JOB, ENG_RANGES_LAND, &rep), 0);
	assert_int_equal(t_count_tmp(r.root), 2); /* the temporary and the job's record */
	assert_int_equal(push(fx, &r, NULL, JOB + 1, ENG_RANGES_REMOVE, &rep), 0); /* not its job */
	assert_int_equal(t_count_tmp(r.root), 2);
	assert_int_equal(push(fx, &r, NULL, JOB, ENG_RANGES_REMOVE, &rep), 0);
	assert_int_equal(t_count_tmp(r.root), 0);
	assert_false(t_exists(r.root, "big"));
	io_manifest_destroy(a);
	io_manifest_destroy(r.whole);
}

/* The job's temporary's name of a file named last (io/range.c's, for a test outside io/). */
static void tmp_name(uint64_t job, const char *last, char out[80])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	int n = snprintf(out, 80, ".railcp-tmp-j%016llx", (unsigned long long)job), i;

	SHA256((const unsigned char *)last, strlen(last), md);
	for (i = 0; i < 16; i++)
		n += snprintf(out + n, 80 - (size_t)n, "%02x", md[i]);
}

static void test_a_removal_goes_on_past_a_temporary_it_cannot_remove(void **state)
{
	struct fx *fx = *state;
	struct ranges_fx r;
	struct io_manifest *a;
	struct io_entry e[2];
	struct io_manifest two;
	struct eng_report rep;
	char name[80], d[4096], sub[4096];

	ranges_start(fx, &r);
	a = range_of(&r, 0, 64 * KiB);
	assert_int_equal(push(fx, &r, a, JOB, ENG_RANGES_LAND, &rep), 0);
	assert_int_equal(t_count_tmp(r.root), 2);
	/* "stuck" first in the list: a directory, not empty, holds its temporary's name */
	tmp_name(JOB, "stuck", name);
	t_path(d, r.root, name);
	t_path(sub, d, "x");
	assert_int_equal(mkdir(d, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	e[0] = e[1] = r.whole->entry[0];
	e[0].path = "stuck";
	two = (struct io_manifest){.entry = e, .n = 2, .n_files = 2, .data_bytes = 2 * BIG};
	assert_int_not_equal(push(fx, &r, &two, JOB, ENG_RANGES_REMOVE, &rep), 0);
	assert_int_equal(t_count_tmp(r.root), 1); /* big's temporary and record went all the same */
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(rmdir(d), 0);
	io_manifest_destroy(a);
	io_manifest_destroy(r.whole);
}

static void test_ranges_without_a_job_are_refused(void **state)
{
	struct fx *fx = *state;
	struct ranges_fx r;
	struct io_manifest *a;
	struct eng_report rep;
	int err;

	ranges_start(fx, &r);
	a = range_of(&r, 0, 64 * KiB);
	err = push(fx, &r, a, 0, ENG_RANGES_LAND, &rep);
	assert_int_not_equal(err, 0);
	assert_non_null(strstr(rcp_err_msg(err), "has byte ranges of files but names no job"));
	assert_null(strchr(rcp_err_msg(err), '\n'));
	assert_true(dir_empty(r.root));
	io_manifest_destroy(a);
	io_manifest_destroy(r.whole);
	bench_ok(&fx->srv, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_two_ranges_land_in_one_temporary_and_one_session_puts_it_in_place,
			fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_a_failed_job_s_temporary_is_removed, fx_setup,
						fx_teardown),
		cmocka_unit_test_setup_teardown(
			test_a_removal_goes_on_past_a_temporary_it_cannot_remove, fx_setup,
			fx_teardown),
		cmocka_unit_test_setup_teardown(test_ranges_without_a_job_are_refused, fx_setup,
						fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
