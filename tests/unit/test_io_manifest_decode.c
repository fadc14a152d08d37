/*
 * test_io_manifest_decode.c - a peer's manifest built by hand with every
 * kind of hostile input: names that lead out or are malformed, railcp's
 * temporaries' names in any case, absurd counts, bad extents, structure and
 * fields. Each is refused with a sentence that names what is wrong, and the
 * limits themselves are accepted. Each test runs on one thread, in memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"
#include "io/io.h"
#include "test_io_manifest.h"
#include "test_io_tree.h"
static void test_decode_refuses_hostile_names(void **state)
{
	static const struct {
		const char *name;
		size_t len;
		const char *words;
	} bad[] = {
		{"", 0, "is empty"},
		{"/etc/x", 6, "\"/etc/x\" is absolute"},
		{"../x", 4, "\"../x\" has a \"..\" component"},
		{"a/../../x", 9, "has a \"..\" component"},
		{"a/./b", 5, "has a \".\" component"},
		{".", 1, "has a \".\" component"},
		{"a//b", 4, "has an empty component"},
		{"a/", 2, "has an empty component"},
		{"a\0b", 3, "\"a\\x00b\" contains a NUL byte"},
		{"\x1b[31m/x", 7, "\"\\x1b[31m/x\": its directory is not listed"},
	};
	char longname[4200];
	struct mb m;
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(bad); i++) {
		mb_hdr(&m, 1, 1);
		mb_entry(&m, IO_DIR, bad[i].name, bad[i].len, 0755, 0);
		expect_bad(&m, -EBADMSG, bad[i].words);
	}
	memset(longname, 'n', sizeof(longname));
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_DIR, longname, 4096, 0755, 0);
	expect_bad(&m, -EBADMSG, "longer than 4095 bytes");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_DIR, longname, 256, 0755, 0);
	expect_bad(&m, -EBADMSG, "component longer than 255 bytes");
	mb_hdr(&m, 1, 1); /* the limits themselves are fine, and so are odd bytes */
	mb_entry(&m, IO_DIR, longname, 255, 0755, 0);
	expect_good(&m, 1);
	mb_hdr(&m, 1, 1);
	mb_dir(&m, ODD_NAME);
	expect_good(&m, 1);
}

static void test_decode_refuses_temporary_names(void **state)
{
	static const char *const fine[] = {
		"x.railcp-tmp-1",
		".railcp-tmpx",
		".railcp-tmp",
		"a/x.railcp-tmp-1",
	};
	struct mb m;
	size_t i;

	(void)state;
	mb_hdr(&m, 1, 1);
	mb_file(&m, TMP_A, 0, 0, NULL);
	expect_bad(&m, -EBADMSG,
		   "malformed at entry 0: the name \"" TMP_A "\" has a component that starts "
		   "with \".railcp-tmp-\", which is reserved for railcp's temporary files");
	mb_hdr(&m, 1, 1);
	mb_dir(&m, TMP_A);
	expect_bad(&m, -EBADMSG, "the name \"" TMP_A "\" has a component that starts with");
	mb_hdr(&m, 1, 1); /* the prefix alone is reserved too */
	mb_file(&m, ".railcp-tmp-", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "reserved for railcp's temporary files");
	mb_hdr(&m, 1, 2); /* nested: a symlink over another session's temporary */
	mb_dir(&m, "a");
	mb_entry(&m, IO_SYMLINK, "a/" TMP_A, strlen("a/" TMP_A), 0777, 4);
	mb_u(&m, 4, 2);
	memcpy(m.b + m.n, "/etc", 4);
	m.n += 4;
	expect_bad(&m, -EBADMSG,
		   "at entry 1: the name \"a/" TMP_A "\" has a component that starts with");
	mb_hdr(&m, 1, 3); /* in the middle */
	mb_dir(&m, "a");
	mb_dir(&m, "a/" TMP_A);
	mb_file(&m, "a/" TMP_A "/f", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "at entry 1: the name \"a/" TMP_A "\" has a component");
	/* only the prefix at the start of a component is reserved */
	mb_hdr(&m, 1, 1 + RCP_ARRAY_SIZE(fine));
	mb_dir(&m, "a");
	for (i = 0; i < RCP_ARRAY_SIZE(fine); i++)
		mb_file(&m, fine[i], 0, 0, NULL);
	expect_good(&m, 1 + RCP_ARRAY_SIZE(fine));
}

/*
 * Beneath a root on a case-insensitive file system (ext4 casefold, CIFS)
 * ".RAILCP-TMP-x" is railcp's ".railcp-tmp-x": the prefix is reserved in any
 * case, with the same sentence.
 */
static void test_decode_refuses_temporary_names_in_any_case(void **state)
{
	static const char *const bad[] = {
		".RAILCP-TMP-x",
		".Railcp-Tmp-x",
		".railcp-TMP-0123456789abcdef",
		"a/.rAiLcP-tMp-",
	};
	char words[512];
	struct mb m;
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(bad); i++) {
		mb_hdr(&m, 1, bad[i][0] == 'a' ? 2 : 1);
		if (bad[i][0] == 'a')
			mb_dir(&m, "a");
		mb_file(&m, bad[i], 0, 0, NULL);
		snprintf(words, sizeof(words),
			 "the name \"%s\" has a component that starts with \".railcp-tmp-\", "
			 "which is reserved for railcp's temporary files",
			 bad[i]);
		expect_bad(&m, -EBADMSG, words);
	}
}

static void test_decode_refuses_absurd_counts(void **state)
{
	uint64_t ext[2] = {0, 1};
	struct mb m;

	(void)state;
	mb_hdr(&m, 1, 1ull << 40);
	mb_dir(&m, "a");
	expect_bad(&m, -EBADMSG, "claims 1099511627776 entries");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_FILE, "f", 1, 0644, 100);
	mb_u(&m, 0xffffffffu, 4);
	expect_bad(&m, -EBADMSG, "extent count exceeds");
	mb_hdr(&m, 1, 2); /* says two entries, holds one */
	mb_file(&m, "f", 1, 1, ext);
	expect_bad(&m, -EBADMSG, "claims 2 entries");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_FILE, "f", 1, 0644, 1ull << 63);
	mb_u(&m, 0, 4);
	expect_bad(&m, -EBADMSG, "size is impossible");
}

static void test_decode_refuses_bad_extents(void **state)
{
	static const struct {
		uint64_t size;
		unsigned n;
		uint64_t pairs[4];
	} bad[] = {
		{100, 1, {90, 20}},			    /* past the size */
		{100, 1, {101, 0}},			    /* empty, and outside */
		{100, 1, {10, 0}},			    /* empty */
		{100, 2, {50, 10, 10, 10}},		    /* unsorted */
		{100, 2, {10, 20, 25, 10}},		    /* overlapping */
		{UINT64_MAX >> 1, 1, {16, UINT64_MAX - 8}}, /* off + len overflows */
	};
	uint64_t good[4] = {0, 10, 10, 90};
	struct mb m;
	size_t i;

	(void)state;
	for (i = 0; i < RCP_ARRAY_SIZE(bad); i++) {
		mb_hdr(&m, 1, 1);
		mb_file(&m, "f", bad[i].size, bad[i].n, bad[i].pairs);
		expect_bad(&m, -EBADMSG, "an extent is empty, unsorted, overlapping or outside");
	}
	mb_hdr(&m, 1, 1); /* adjacent extents that fill the file are fine */
	mb_file(&m, "f", 100, 2, good);
	expect_good(&m, 1);
}

static void test_decode_refuses_bad_structure(void **state)
{
	struct mb m;

	(void)state;
	mb_hdr(&m, 1, 1);
	mb_file(&m, "a/f", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "\"a/f\": its directory is not listed before it");
	mb_hdr(&m, 1, 2);
	mb_file(&m, "a/f", 0, 0, NULL);
	mb_dir(&m, "a");
	expect_bad(&m, -EBADMSG, "its directory is not listed before it");
	mb_hdr(&m, 1, 2); /* a symlink is no directory to write through */
	mb_entry(&m, IO_SYMLINK, "a", 1, 0777, 4);
	mb_u(&m, 4, 2);
	memcpy(m.b + m.n, "/etc", 4);
	m.n += 4;
	mb_file(&m, "a/passwd", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "its directory is not listed before it");
	mb_hdr(&m, 1, 2);
	mb_dir(&m, "a");
	mb_file(&m, "a", 0, 0, NULL);
	expect_bad(&m, -EBADMSG, "the same path appears twice");
	mb_hdr(&m, 1, 3);
	mb_dir(&m, "a");
	mb_dir(&m, "a/b");
	mb_file(&m, "a/b/c", 0, 0, NULL);
	expect_good(&m, 3);
}

/* A file's range flag (the entry's flags byte, bit 0) survives; it is refused off a file or beyond.
 */
static void test_decode_takes_a_range_of_a_file_only_inside_its_whole_size(void **state)
{
	uint64_t inside[2] = {4096, 4096}, beyond[2] = {4096, 8192};
	struct io_manifest *d = NULL;
	void *buf = NULL;
	size_t len = 0;
	struct mb m;

	(void)state;
	mb_hdr(&m, 1, 1);
	mb_file(&m, "big", 10000, 1, inside);
	m.b[17] = 1; /* the first entry's flags, after the 16-byte header and its type */
	assert_int_equal(io_manifest_decode(m.b, m.n, &d), 0);
	assert_true(d->entry[0].range);
	assert_int_equal(d->entry[0].size, 10000);
	assert_int_equal(d->data_bytes, 4096);
	assert_int_equal(io_manifest_encode(d, &buf, &len), 0); /* and back: the flag travels */
	io_manifest_destroy(d);
	d = NULL;
	assert_int_equal(io_manifest_decode(buf, len, &d), 0);
	assert_true(d->entry[0].range);
	free(buf);
	io_manifest_destroy(d);
	mb_hdr(&m, 1, 1);
	mb_file(&m, "big", 10000, 1, beyond);
	m.b[17] = 1;
	expect_bad(&m, -EBADMSG, "outside the file");
	mb_hdr(&m, 1, 1);
	mb_dir(&m, "a");
	m.b[17] = 1;
	expect_bad(&m, -EBADMSG, "only a file is received in ranges");
	mb_hdr(&m, 1, 1);
	mb_file(&m, "big", 10000, 1, inside);
	m.b[17] = 2;
	expect_bad(&m, -EBADMSG, "reserved bits");
}

static void test_decode_refuses_bad_fields(void **state)
{
	struct mb m;

	(void)state;
	mb_hdr(&m, 2, 0);
	expect_bad(&m, -EPROTONOSUPPORT, "version 2");
	mb_hdr(&m, 1, 0);
	m.b[0] = 'X';
	expect_bad(&m, -EBADMSG, "not a railcp manifest");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, 9, "a", 1, 0644, 0);
	expect_bad(&m, -EBADMSG, "type is unknown");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_DIR, "a", 1, 0100755, 0);
	expect_bad(&m, -EBADMSG, "reserved bits");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_DIR, "a", 1, 0755, 7);
	expect_bad(&m, -EBADMSG, "size is impossible");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_SYMLINK, "l", 1, 0777, 3);
	mb_u(&m, 3, 2);
	memcpy(m.b + m.n, "a\0b", 3);
	m.n += 3;
	expect_bad(&m, -EBADMSG, "target contains a NUL");
	mb_hdr(&m, 1, 1);
	mb_entry(&m, IO_SYMLINK, "l", 1, 0777, 5);
	mb_u(&m, 3, 2);
	memcpy(m.b + m.n, "abc", 3);
	m.n += 3;
	expect_bad(&m, -EBADMSG, "target length is wrong");
	mb_hdr(&m, 1, 1);
	mb_dir(&m, "a");
	mb_u(&m, 0, 1);
	expect_bad(&m, -EBADMSG, "1 bytes after its last entry");
	mb_hdr(&m, 1, 0);
	expect_good(&m, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_refuses_hostile_names),
		cmocka_unit_test(test_decode_refuses_temporary_names),
		cmocka_unit_test(test_decode_refuses_temporary_names_in_any_case),
		cmocka_unit_test(test_decode_refuses_absurd_counts),
		cmocka_unit_test(test_decode_refuses_bad_extents),
		cmocka_unit_test(test_decode_refuses_bad_structure),
		cmocka_unit_test(test_decode_refuses_bad_fields),
		cmocka_unit_test(test_decode_takes_a_range_of_a_file_only_inside_its_whole_size),
	};

	rcp_log_set_level(RCP_LOG_SILENT); /* the sentences are checked, not printed */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
