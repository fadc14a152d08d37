/*
 * test_common.c - the error convention: one recorded sentence per failure,
 * never a stale one, and one per thread; a stranger's text made fit to quote.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/common.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static void test_recorded_sentence_is_returned_for_its_code(void **state)
{
	(void)state;
	assert_int_equal(rcp_err(-ENODEV, "no device %s", "mlx5_0"), -ENODEV);
	assert_string_equal(rcp_err_msg(-ENODEV), "no device mlx5_0");
}

static void test_other_code_gets_strerror_not_stale_sentence(void **state)
{
	(void)state;
	rcp_err(-ENODEV, "no device");
	assert_string_equal(rcp_err_msg(-ENOMEM), strerror(ENOMEM));
}

static void test_clear_forgets_the_sentence(void **state)
{
	(void)state;
	rcp_err(-EIO, "read failed");
	rcp_err_clear();
	assert_string_equal(rcp_err_msg(-EIO), strerror(EIO));
}

static void test_sentence_may_wrap_the_recorded_one(void **state)
{
	int err;

	(void)state;
	err = rcp_err(-ETIMEDOUT, "no answer within %d s", 10);
	rcp_err(err, "waiting for the sender: %s", rcp_err_msg(err));
	assert_string_equal(rcp_err_msg(err), "waiting for the sender: no answer within 10 s");
}

static void *other_thread(void *arg)
{
	(void)arg;
	rcp_err(-EPIPE, "peer went away");
	return NULL;
}

static void test_sentences_are_per_thread(void **state)
{
	pthread_t t;

	(void)state;
	rcp_err(-EPIPE, "mine");
	assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
	pthread_join(t, NULL);
	assert_string_equal(rcp_err_msg(-EPIPE), "mine");
}

static void test_printable_escapes_what_could_forge_a_line(void **state)
{
	char out[32];

	(void)state;
	assert_string_equal(rcp_printable("push", out, sizeof(out)), "push");
	assert_string_equal(rcp_printable("a\nrailcp: x\x1b[0m", out, sizeof(out)),
			    "a\\x0arailcp: x\\x1b[0m");
	assert_string_equal(rcp_printable("\xc3\xa9\x7f\\", out, sizeof(out)), "\\xc3\\xa9\\x7f\\");
	/* Cut short with "...", within the room given. */
	assert_string_equal(rcp_printable("0123456789abcdefghijklmnopqrstuvwxyz", out, 16),
			    "0123456789ab...");
	assert_string_equal(rcp_printable("01234567\n\n", out, 16), "01234567\\x0a...");
	assert_string_equal(rcp_printable("abc", out, 4), "...");
}

static void test_size_text_says_whole_units_and_rounds_kib_up(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(rcp_size_text(2ull << 30, b, sizeof(b)), "2 GiB");
	assert_string_equal(rcp_size_text(1024ull << 20, b, sizeof(b)), "1 GiB");
	assert_string_equal(rcp_size_text(8ull << 20, b, sizeof(b)), "8 MiB");
	assert_string_equal(rcp_size_text(1536ull << 10, b, sizeof(b)), "1536 KiB");
	assert_string_equal(rcp_size_text(100ull << 10, b, sizeof(b)), "100 KiB");
	assert_string_equal(rcp_size_text((64ull << 10) + 1, b, sizeof(b)), "65 KiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_sentence_is_returned_for_its_code),
		cmocka_unit_test(test_other_code_gets_strerror_not_stale_sentence),
		cmocka_unit_test(test_clear_forgets_the_sentence),
		cmocka_unit_test(test_sentences_are_per_thread),
		cmocka_unit_test(test_sentence_may_wrap_the_recorded_one),
		cmocka_unit_test(test_printable_escapes_what_could_forge_a_line),
		cmocka_unit_test(test_size_text_says_whole_units_and_rounds_kib_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
