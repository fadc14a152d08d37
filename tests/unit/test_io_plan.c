/*
 * test_io_plan.c - the chunk plan at its boundaries, CRC-32C against the
 * published known answers, and the sender's chunk reads. (The checksum's
 * speed is measured by tests/bench/bench_crc32c.c, `scons bench`: a figure
 * is not a test.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "io/io.h"
#include "io/io_int.h"
#include "direct_probe.h"
#include "test_io_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CH 4096u

/* A manifest of one file of size bytes with the given extents (test memory, not freed). */
struct one {
	struct io_manifest m;
	struct io_entry e[3];
	struct io_extent x[4];
};

static void one_file(struct one *o, uint64_t size, unsigned n, const uint64_t *pairs)
{
	unsigned i;

	memset(o, 0, sizeof(*o));
	o->m.entry = o->e;
	o->m.n = 1;
	o->e[0] = (struct io_entry){
		.path = "f", .type = IO_FILE, .size = size, .ext = o->x, .n_ext = n};
	for (i = 0; i < n; i++)
		o->x[i] = (struct io_extent){pairs[2 * i], pairs[2 * i + 1]};
}

static struct io_plan *plan_of(const struct io_manifest *m, uint32_t chunk)
{
	struct io_plan *p = NULL;

	assert_int_equal(io_plan_create(m, chunk, &p), 0);
	assert_int_equal(p->chunk_size, chunk);
	return p;
}

static void assert_chunk(const struct io_plan *p, uint64_t k, uint64_t file, uint64_t off,
			 uint32_t len)
{
	assert_true(k < p->n);
	assert_int_equal(p->chunk[k].file, file);
	assert_int_equal(p->chunk[k].offset, off);
	assert_int_equal(p->chunk[k].len, len);
}

static void test_plan_of_an_empty_file_has_no_chunk(void **state)
{
	struct one o;
	struct io_plan *p;

	(void)state;
	one_file(&o, 0, 0, NULL);
	p = plan_of(&o.m, CH);
	assert_int_equal(p->n, 0);
	io_plan_destroy(p);
}

static void test_plan_at_the_chunk_boundaries(void **state)
{
	static const struct {
		uint64_t len;
		uint64_t n;
		uint32_t last;
	} c[] = {
		{1, 1, 1}, {CH - 1, 1, CH - 1}, {CH, 1, CH}, {CH + 1, 2, 1}, {3 * CH, 3, CH},
	};
	uint64_t pairs[2];
	struct io_plan *p;
	struct one o;
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(c); i++) {
		pairs[0] = 0;
		pairs[1] = c[i].len;
		one_file(&o, c[i].len, 1, pairs);
		p = plan_of(&o.m, CH);
		assert_int_equal(p->n, c[i].n);
		assert_chunk(p, 0, 0, 0, c[i].n == 1 ? c[i].last : CH);
		assert_chunk(p, p->n - 1, 0, (c[i].n - 1) * CH, c[i].last);
		io_plan_destroy(p);
	}
}

static void test_plan_offsets_beyond_4_gib(void **state)
{
	uint64_t big = 5 * GIB + 3, pairs[2] = {0, big};
	struct io_plan *p;
	struct one o;

	(void)state;
	one_file(&o, big, 1, pairs);
	p = plan_of(&o.m, 1u << 30);
	assert_int_equal(p->n, 6);
	assert_chunk(p, 4, 0, 4 * GIB, 1u << 30);
	assert_chunk(p, 5, 0, 5 * GIB, 3);
	io_plan_destroy(p);
}

static void test_plan_of_a_sparse_file_never_crosses_an_extent(void **state)
{
	/* data [0, CH + 10) and [5 GiB + CH, 5 GiB + 3 CH): the holes never travel */
	uint64_t pairs[4] = {0, CH + 10, 5 * GIB + CH, 2 * CH};
	struct io_plan *p;
	struct one o;

	(void)state;
	one_file(&o, 6 * GIB, 2, pairs);
	p = plan_of(&o.m, CH);
	assert_int_equal(p->n, 4);
	assert_chunk(p, 0, 0, 0, CH);
	assert_chunk(p, 1, 0, CH, 10);
	assert_chunk(p, 2, 0, 5 * GIB + CH, CH);
	assert_chunk(p, 3, 0, 5 * GIB + 2 * CH, CH);
	io_plan_destroy(p);
}

static void test_plan_numbers_files_and_skips_what_has_no_data(void **state)
{
	uint64_t pairs[2] = {0, 10};
	struct io_plan *p;
	struct one o;

	(void)state;
	one_file(&o, 10, 1, pairs);
	o.m.n = 3;
	o.e[1] = (struct io_entry){.path = "d", .type = IO_DIR};
	o.e[2] = o.e[0];
	o.e[2].path = "g";
	p = plan_of(&o.m, CH);
	assert_int_equal(p->n, 2);
	assert_chunk(p, 0, 0, 0, 10);
	assert_chunk(p, 1, 2, 0, 10);
	io_plan_destroy(p);
}

static void test_plan_refuses_impossible_chunk_sizes(void **state)
{
	struct io_plan *p = NULL;
	struct one o;

	(void)state;
	one_file(&o, 0, 0, NULL);
	assert_int_equal(io_plan_create(&o.m, 0, &p), -EINVAL);
	assert_int_equal(io_plan_create(&o.m, IO_CHUNK_MAX + 1, &p), -EINVAL);
	assert_null(p);
}

/* The fitted chunk holds the largest extent, rounded up; the plan's chunks are those of chunk. */
static void test_chunk_fit_holds_the_largest_extent_and_cuts_the_same_chunks(void **state)
{
	uint64_t pairs[4] = {0, 10, 3 * CH, CH + 1}; /* extents of 10 and CH + 1 bytes */
	struct io_plan *big, *fit;
	struct one o;
	uint64_t k;

	(void)state;
	one_file(&o, 8 * CH, 2, pairs);
	assert_int_equal(io_plan_chunk_fit(&o.m, 256 * CH, CH), 2 * CH);
	big = plan_of(&o.m, 256 * CH);
	fit = plan_of(&o.m, 2 * CH);
	assert_int_equal(fit->n, big->n);
	for (k = 0; k < big->n; k++)
		assert_chunk(fit, k, big->chunk[k].file, big->chunk[k].offset, big->chunk[k].len);
	io_plan_destroy(big);
	io_plan_destroy(fit);
	/* never more than chunk, never less than the unit (no data at all) */
	assert_int_equal(io_plan_chunk_fit(&o.m, CH, CH), CH);
	one_file(&o, 0, 0, NULL);
	assert_int_equal(io_plan_chunk_fit(&o.m, 256 * CH, CH), CH);
}

static void test_chunk_hash_is_crc64_xz(void **state)
{
	(void)state;
	/* The catalogue's check value of CRC-64/XZ (CRC-64/GO-ECMA). */
	assert_true(io_chunk_hash("123456789", 9) == 0x995dc9bbdf1939faull);
	assert_true(io_chunk_hash("", 0) == 0);
}

/* CRC-64/XZ bit by bit, from its definition: reflected ECMA-182 polynomial, init and xorout ~0. */
static uint64_t crc64_bitwise(const uint8_t *p, size_t len)
{
	uint64_t crc = ~0ull;
	unsigned k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (crc & 1 ? 0xc96c5795d7870f42ull : 0);
	}
	return ~crc;
}

/*
 * The vector code has head, body and tail paths by alignment and length:
 * every length up to 300 at every alignment up to 64, and a long odd one,
 * must agree with the definition.
 */
static void test_chunk_hash_agrees_with_the_definition_at_any_alignment_and_length(void **state)
{
	size_t len = 70000, off, n;
	uint8_t *buf = malloc(len);
	size_t i;

	(void)state;
	assert_true(crc64_bitwise((const uint8_t *)"123456789", 9) == 0x995dc9bbdf1939faull);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 8));
	assert_true(io_chunk_hash(buf, len) == crc64_bitwise(buf, len));
	assert_true(io_chunk_hash(buf + 3, len - 7) == crc64_bitwise(buf + 3, len - 7));
	for (off = 0; off < 64; off++)
		for (n = 0; n <= 300; n++)
			assert_true(io_chunk_hash(buf + off, n) == crc64_bitwise(buf + off, n));
	free(buf);
}

/* The read descriptor blocks as any file's does: a ring's read of it must never answer EAGAIN. */
static void test_a_source_is_read_without_o_nonblock(void **state)
{
	struct io_manifest *m = NULL;
	struct io_rfile *f = NULL;
	char base[4096], p[4096];
	const char *src[] = {p};
	struct io_op op;
	char buf[4];
	int fl;

	(void)state;
	t_mkdtemp(base);
	t_write(base, "f", "abc", 3, 0644);
	t_path(p, base, "f");
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &m), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], 0, &f), 0);
	assert_int_equal(io_chunk_read_start(f, 0, 3, buf, &op), 0);
	fl = fcntl(op.fd, F_GETFL);
	assert_true(fl >= 0);
	assert_int_equal(fl & (O_NONBLOCK | O_APPEND | O_DIRECT | O_NOATIME), 0);
	assert_int_equal(fl & O_ACCMODE, O_RDONLY);
	io_rfile_close(f);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

static void test_chunk_read_returns_data_and_its_hash(void **state)
{
	struct io_manifest *m = NULL;
	struct io_rfile *f = NULL;
	char base[4096], p[4096];
	const char *src[] = {p};
	uint64_t hash = 0;
	void *buf = NULL;

	(void)state;
	t_mkdtemp(base);
	t_sparse(base, "s");
	t_path(p, base, "s");
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &m), 0);
	assert_int_equal(posix_memalign(&buf, IO_DIRECT_ALIGN, 8192), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], IO_DIRECT, &f), 0);
	assert_int_equal(io_chunk_read(f, SPARSE_FAR + 4096, 4096, buf, &hash), 0);
	assert_int_equal(((char *)buf)[4095], 'z');
	assert_true(hash == io_chunk_hash(buf, 4096));
	assert_int_equal(io_chunk_read(f, 100, 3, (char *)buf + 1, &hash), 0); /* unaligned */
	assert_memory_equal((char *)buf + 1, "aaa", 3);
	assert_true(hash == io_chunk_hash("aaa", 3));
	assert_int_equal(io_chunk_read(f, SPARSE_SIZE - 1, 2, buf, &hash), -EINVAL);
	assert_int_equal(truncate(p, 4096), 0); /* the file shrinks during the copy */
	assert_int_equal(io_chunk_read(f, SPARSE_FAR, 4096, buf, &hash), -EIO);
	assert_non_null(strstr(rcp_err_msg(-EIO), "got shorter"));
	io_rfile_close(f);
	io_manifest_destroy(m);
	free(buf);
	t_rm_rf(base);
}

/* path made IO_DIRECT_MIN + 3 bytes long, all data, and out of the page cache. */
static void t_big_uncached(const char *path)
{
	char *data = malloc(IO_DIRECT_MIN + 3);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_non_null(data);
	assert_true(fd >= 0);
	memset(data, 'b', IO_DIRECT_MIN);
	memcpy(data + IO_DIRECT_MIN, "xyz", 3);
	assert_int_equal(write(fd, data, IO_DIRECT_MIN + 3), IO_DIRECT_MIN + 3);
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
	free(data);
}

/*
 * The default's rule at the sender: a file of IO_DIRECT_MIN data bytes is
 * read with O_DIRECT where the file system is not memory and takes it (its
 * aligned chunk right, its unaligned tail too); one byte smaller, never; nor
 * a sparse file of that size with little data in it (its size is no
 * measure: its data bytes are).
 */
static void test_direct_by_default_reads_large_files_only(void **state)
{
	struct io_manifest *m = NULL;
	struct io_rfile *f = NULL;
	char base[4096], big[4096], small[4096], sparse[4096], probe[4096];
	const char *src[] = {big, small, sparse};
	uint64_t hash = 0;
	char *buf = NULL;
	bool can;
	int fd;

	(void)state;
	t_mkdtemp(base);
	t_path(probe, base, "probe");
	fd = open(probe, O_WRONLY | O_CREAT | O_DIRECT, 0600);
	can = fd >= 0 && !io__is_memfs(fd);
	if (fd >= 0)
		close(fd);
	t_path(big, base, "big");
	t_big_uncached(big);
	t_write(base, "small", "s", 1, 0644);
	t_path(small, base, "small");
	assert_int_equal(truncate(small, IO_DIRECT_MIN - 1), 0);
	t_write(base, "sparse", "s", 1, 0644);
	t_path(sparse, base, "sparse");
	assert_int_equal(truncate(sparse, 1ll << 30), 0);
	fd = open(sparse,
		  O_RDONLY); /* out of the cache: the cache is no reason to read it buffered */
	assert_true(fd >= 0);
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
	assert_int_equal(io_manifest_walk(NULL, src, 3, 0, NULL, &m), 0);
	assert_int_equal(posix_memalign((void **)&buf, IO_DIRECT_ALIGN, 8192), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], IO_DIRECT_AUTO, &f), 0);
	assert_int_equal(io_rfile_direct(f), can);
	assert_int_equal(io_chunk_read(f, 0, 4096, buf, &hash), 0);
	assert_int_equal(buf[0], 'b');
	assert_int_equal(io_chunk_read(f, IO_DIRECT_MIN, 3, buf, &hash), 0); /* the tail */
	assert_memory_equal(buf, "xyz", 3);
	io_rfile_close(f);
	assert_int_equal(io_rfile_open(NULL, &m->entry[1], IO_DIRECT_AUTO, &f), 0);
	assert_false(io_rfile_direct(f));
	io_rfile_close(f);
	if (m->entry[2].data_bytes < IO_DIRECT_MIN) { /* a file system that keeps holes */
		assert_int_equal(io_rfile_open(NULL, &m->entry[2], IO_DIRECT_AUTO, &f), 0);
		assert_false(io_rfile_direct(f));
		io_rfile_close(f);
	}
	io_manifest_destroy(m);
	free(buf);
	t_rm_rf(base);
}

/*
 * A direct read the kernel refuses (EINVAL: an alignment the file system
 * wants and did not say, here a buffer off by one byte that io__dio_override
 * lets through) is redone through the page cache, in halves (a ring's
 * completion: io_chunk_read_redo) and whole (io_chunk_read).
 */
static void test_a_refused_direct_read_is_redone_buffered(void **state)
{
	struct io_manifest *m = NULL;
	struct io_rfile *f = NULL;
	char base[4096], p[4096], data[8192];
	const char *src[] = {p};
	uint64_t hash = 0;
	struct io_op op;
	char *buf = NULL;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 5 + 1);
	t_mkdtemp(base);
	t_write(base, "f", data, sizeof(data), 0644);
	t_path(p, base, "f");
	if (!direct_probe_refuses_misaligned(base)) {
		t_rm_rf(base);
		skip(); /* no O_DIRECT here, or one that takes any alignment: nothing to refuse */
	}
	assert_int_equal(posix_memalign((void **)&buf, IO_DIRECT_ALIGN, 3 * 4096), 0);
	io__dio_override(&(struct io__dio){1, 1});
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &m), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], IO_DIRECT, &f), 0);
	assert_true(io_rfile_direct(f));
	assert_int_equal(io_chunk_read_start(f, 0, 4096, buf + 1, &op), 0);
	assert_true(io_chunk_read_redo(f, &op, io_op_run(&op, buf + 1)));
	assert_int_equal(io_chunk_read_start(f, 0, 4096, buf + 1, &op), 0);
	assert_false(io_chunk_read_redo(f, &op, io_op_run(&op, buf + 1))); /* buffered now */
	assert_memory_equal(buf + 1, data, 4096);
	io_rfile_close(f);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], IO_DIRECT, &f), 0);
	assert_int_equal(io_chunk_read(f, 4096, 4096, buf + 1, &hash), 0);
	assert_memory_equal(buf + 1, data + 4096, 4096);
	assert_int_equal(hash, io_chunk_hash(data + 4096, 4096));
	io__dio_override(NULL);
	io_rfile_close(f);
	io_manifest_destroy(m);
	free(buf);
	t_rm_rf(base);
}

/*
 * io__mostly_cached of fd as uid 65534 (a forked child), who neither owns
 * the file nor may write it: cachestat refuses it (EPERM), so RWF_NOWAIT
 * reads answer. The caller is root.
 */
static bool cached_as_nobody(int fd)
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(setuid(65534) != 0				    ? 2
		      : io__mostly_cached(fd, IO_DIRECT_MIN, IO_DIRECT_MIN) ? 0
									    : 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 2);
	return WEXITSTATUS(status) == 0;
}

/*
 * A file at the threshold that is mostly in the page cache (just written) is
 * read through it by the default's rule, whether the kernel has cachestat or
 * not, and as a user cachestat refuses; once its pages are dropped, with
 * O_DIRECT (where the file system takes it).
 */
static void test_direct_by_default_reads_a_cached_file_through_the_cache(void **state)
{
	struct io_manifest *m = NULL;
	struct io_rfile *f = NULL;
	char base[4096], p[4096];
	const char *src[] = {p};
	char *data = malloc(IO_DIRECT_MIN);
	bool can, cachestat;
	int fd;

	(void)state;
	assert_non_null(data);
	memset(data, 'c', IO_DIRECT_MIN);
	t_mkdtemp(base);
	t_write(base, "cached", data, IO_DIRECT_MIN, 0644);
	free(data);
	t_path(p, base, "cached");
	fd = open(p, O_RDONLY | O_DIRECT);
	can = fd >= 0 && !io__is_memfs(fd);
	if (fd >= 0)
		close(fd);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	cachestat = syscall(451, fd, &(uint64_t[2]){0, 0}, &(uint64_t[5]){0}, 0) == 0;
	print_message("cachestat %s: %s\n", cachestat ? "works" : "does not",
		      cachestat ? "it is asked, and as another user RWF_NOWAIT"
				: "RWF_NOWAIT reads are asked");
	/* asked with cachestat, or (a kernel without it) with RWF_NOWAIT reads */
	assert_true(io__mostly_cached(fd, IO_DIRECT_MIN, IO_DIRECT_MIN));
	if (getuid() == 0)
		assert_true(cached_as_nobody(fd));
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &m), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], IO_DIRECT_AUTO, &f), 0);
	assert_false(io_rfile_direct(f));
	io_rfile_close(f);
	/* out of the cache: written back, then dropped */
	assert_int_equal(fsync(fd), 0);
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	/* tmpfs keeps its pages */
	assert_false(io__mostly_cached(fd, IO_DIRECT_MIN, IO_DIRECT_MIN) && can);
	if (getuid() == 0 && can)
		assert_false(cached_as_nobody(fd));
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], IO_DIRECT_AUTO, &f), 0);
	assert_int_equal(io_rfile_direct(f), can);
	io_rfile_close(f);
	close(fd);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

/* A file replaced or changed between the walk and the read is refused, never read as planned. */
static void test_a_source_changed_after_the_walk_is_refused(void **state)
{
	struct io_manifest *m = NULL;
	struct io_rfile *f = NULL;
	char base[4096], p[4096], q[4096];
	const char *src[] = {p};
	struct timespec ts[2] = {{0, 0}, {1000000, 0}};

	(void)state;
	t_mkdtemp(base);
	t_write(base, "f", "0123456789", 10, 0644);
	t_path(p, base, "f");
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &m), 0);
	/* Appended to: its size differs. */
	t_write(base, "f", "0123456789abc", 13, 0644);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], 0, &f), -ESTALE);
	assert_non_null(strstr(rcp_err_msg(-ESTALE), "changed after it was listed"));
	/* Same size, another time: rewritten. */
	t_write(base, "f", "9876543210", 10, 0644);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], 0, &f), -ESTALE);
	/* Replaced by another file of the same size and time: another inode. */
	io_manifest_destroy(m);
	assert_int_equal(io_manifest_walk(NULL, src, 1, 0, NULL, &m), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], 0, &f), 0); /* as listed: read */
	io_rfile_close(f);
	f = NULL;
	t_write(base, "g", "abcdefghij", 10, 0644);
	t_path(q, base, "g");
	assert_int_equal(utimensat(AT_FDCWD, q, ts, 0), 0);
	assert_int_equal(rename(q, p), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], 0, &f), -ESTALE);
	assert_non_null(strstr(rcp_err_msg(-ESTALE), "replaced"));
	/* A FIFO in its place: refused at once, never waited on for a writer. */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(io_rfile_open(NULL, &m->entry[0], 0, &f), -EIO);
	assert_non_null(strstr(rcp_err_msg(-EIO), "no longer a regular file"));
	assert_null(f);
	io_manifest_destroy(m);
	t_rm_rf(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_of_an_empty_file_has_no_chunk),
		cmocka_unit_test(test_plan_at_the_chunk_boundaries),
		cmocka_unit_test(test_plan_offsets_beyond_4_gib),
		cmocka_unit_test(test_plan_of_a_sparse_file_never_crosses_an_extent),
		cmocka_unit_test(test_plan_numbers_files_and_skips_what_has_no_data),
		cmocka_unit_test(test_plan_refuses_impossible_chunk_sizes),
		cmocka_unit_test(test_chunk_fit_holds_the_largest_extent_and_cuts_the_same_chunks),
		cmocka_unit_test(test_chunk_hash_is_crc64_xz),
		cmocka_unit_test(
			test_chunk_hash_agrees_with_the_definition_at_any_alignment_and_length),
		cmocka_unit_test(test_chunk_read_returns_data_and_its_hash),
		cmocka_unit_test(test_direct_by_default_reads_large_files_only),
		cmocka_unit_test(test_a_refused_direct_read_is_redone_buffered),
		cmocka_unit_test(test_direct_by_default_reads_a_cached_file_through_the_cache),
		cmocka_unit_test(test_a_source_changed_after_the_walk_is_refused),
		cmocka_unit_test(test_a_source_is_read_without_o_nonblock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
