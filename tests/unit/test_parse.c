/* Numbers from outside, checked where they are parsed (util/parse.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>

#include "util/parse.h"

static void test_int64(void **state)
{
	static const char *const bad[] = { "", " 1", "1 ", "+1", "0x10", "1e3", "1.0", "abc", "1abc", "-", "--1", NULL };
	int64_t v = 42;

	(void)state;
	assert_int_equal(parse_int64("7", 0, 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(parse_int64("-3", -5, 5, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(parse_int64("9223372036854775807", 0, INT64_MAX, &v), 0);
	assert_true(v == INT64_MAX);
	for (int i = 0; bad[i]; i++) {
		v = 42;
		assert_int_equal(parse_int64(bad[i], INT64_MIN, INT64_MAX, &v), -EINVAL);
		assert_int_equal(v, 42);
	}
	/* past int64 (strtoll's ERANGE), and past the caller's range: both ranges */
	assert_int_equal(parse_int64("99999999999999999999", 0, INT64_MAX, &v), -ERANGE);
	assert_int_equal(parse_int64("4294967297", 0, 3, &v), -ERANGE);
	assert_int_equal(parse_int64("0", 1, 10, &v), -ERANGE);
	assert_int_equal(v, 42);
	assert_int_equal(parse_int64(NULL, 0, 1, &v), -EINVAL);
}

static void test_double(void **state)
{
	static const char *const bad[] = { "", "nan", "NaN", "inf", "-inf", "infinity", "0x1p3", " 1", "1 ", "1.5.2",
					   ".", "e5", "1e", "1e+", "abc", "1abc", "0.5%", NULL };
	double v = 42;

	(void)state;
	assert_int_equal(parse_double("0.9", 0, 1, &v), 0);
	assert_true(v == 0.9);
	assert_int_equal(parse_double(".5", 0, 1, &v), 0);
	assert_true(v == 0.5);
	assert_int_equal(parse_double("2.5e3", 0, 1e4, &v), 0);
	assert_true(v == 2500);
	assert_int_equal(parse_double("-1", -1, 0, &v), 0);
	assert_true(v == -1);
	for (int i = 0; bad[i]; i++) {
		v = 42;
		assert_int_equal(parse_double(bad[i], -1e300, 1e300, &v), -EINVAL);
		assert_true(v == 42);
	}
	assert_int_equal(parse_double("1e400", 0, INFINITY, &v), -ERANGE); /* overflows to inf */
	assert_int_equal(parse_double("1e-400", 0, 1, &v), -ERANGE);       /* underflows */
	assert_int_equal(parse_double("1e308", 0, 1, &v), -ERANGE);
	assert_int_equal(parse_double("1", 0, nextafter(1.0, 0.0), &v), -ERANGE);
	assert_true(v == 42);
}

static void test_pct(void **state)
{
	double v = 42;

	(void)state;
	assert_int_equal(parse_pct("5%", 0, 100, &v), 0);
	assert_true(v == 5);
	assert_int_equal(parse_pct("2.5", 0, 100, &v), 0);
	assert_true(v == 2.5);
	v = 42;
	assert_int_equal(parse_pct("abc%", 0, 100, &v), -EINVAL);
	assert_int_equal(parse_pct("nan%", 0, 100, &v), -EINVAL);
	assert_int_equal(parse_pct("nan", 0, 100, &v), -EINVAL);
	assert_int_equal(parse_pct("%", 0, 100, &v), -EINVAL);
	assert_int_equal(parse_pct("5%%", 0, 100, &v), -EINVAL);
	assert_int_equal(parse_pct("100%", 0, 99.9, &v), -ERANGE);
	assert_int_equal(parse_pct("-1%", 0, 100, &v), -ERANGE);
	assert_true(v == 42);
}

static void test_size(void **state)
{
	uint64_t v = 42;

	(void)state;
	assert_int_equal(parse_size("2G", 1, 1ULL << 40, &v), 0);
	assert_true(v == 2ULL << 30);
	v = 42;
	assert_int_equal(parse_size("x1G", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(parse_size("2T", 0, 1ULL << 40, &v), -ERANGE);
	assert_int_equal(parse_size("0", 1, 10, &v), -ERANGE);
	assert_int_equal(parse_size("80", 0, UINT64_MAX, &v), -EDOM); /* 80 what? */
	assert_true(v == 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int64),
		cmocka_unit_test(test_double),
		cmocka_unit_test(test_pct),
		cmocka_unit_test(test_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
