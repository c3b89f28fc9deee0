/* Sizes and clocks (util/units.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <time.h>

#include "util/units.h"

static void test_size_parse(void **state)
{
	uint64_t b = 0;

	(void)state;
	assert_int_equal(size_parse("1000000", &b), 0);
	assert_int_equal(b, 1000000);
	assert_int_equal(size_parse("3.5G", &b), 0);
	assert_int_equal(b, 3758096384ULL);
	assert_int_equal(size_parse("512M", &b), 0);
	assert_int_equal(b, 512ULL << 20);
	assert_int_equal(size_parse("2GiB", &b), 0);
	assert_int_equal(b, 2ULL << 30);
	assert_int_equal(size_parse("4 kb", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(size_parse("1T", &b), 0);
	assert_int_equal(b, 1ULL << 40);
	assert_int_equal(size_parse("7B", &b), 0);
	assert_int_equal(b, 7);
	assert_int_equal(size_parse(".5K", &b), 0);
	assert_int_equal(b, 512);
}

static void test_size_parse_rejects(void **state)
{
	static const char *const bad[] = { "", "G", "-1G", "1X", "1Gx", "1GiBs", "nan", "inf", "1e30T",
					   "18446744073709551616", "1BB", " 1G", NULL };
	uint64_t b = 42;

	(void)state;
	for (int i = 0; bad[i]; i++) {
		assert_int_equal(size_parse(bad[i], &b), -EINVAL);
		assert_int_equal(b, 42); /* untouched on error */
	}
	assert_int_equal(size_parse(NULL, &b), -EINVAL);
}

static void test_size_format(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(size_format(0, buf, sizeof(buf)), "0 B");
	assert_string_equal(size_format(1023, buf, sizeof(buf)), "1023 B");
	assert_string_equal(size_format(1024, buf, sizeof(buf)), "1.00 KiB");
	assert_string_equal(size_format(3758096384ULL, buf, sizeof(buf)), "3.50 GiB");
	assert_string_equal(size_format(5ULL << 40, buf, sizeof(buf)), "5.00 TiB");
	/* TiB is the largest unit: a petabyte stays in TiB. */
	assert_string_equal(size_format(1ULL << 50, buf, sizeof(buf)), "1024.00 TiB");
	/* Truncated, still terminated. */
	assert_string_equal(size_format(3758096384ULL, buf, 4), "3.5");
}

static void test_now_ms(void **state)
{
	struct timespec pause = { 0, 20 * 1000000 };
	int64_t t0 = now_ms(), t1;

	(void)state;
	nanosleep(&pause, NULL);
	t1 = now_ms();
	assert_true(t1 - t0 >= 20);
	assert_true(t1 - t0 < 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_parse),
		cmocka_unit_test(test_size_parse_rejects),
		cmocka_unit_test(test_size_format),
		cmocka_unit_test(test_now_ms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
