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
	assert_int_equal(size_parse("1000000B", &b), 0);
	assert_int_equal(b, 1000000);
	assert_int_equal(size_parse("3.5G", &b), 0);
	assert_int_equal(b, 3758096384ULL);
	assert_int_equal(size_parse("512M", &b), 0);
	assert_int_equal(b, 512ULL << 20);
	assert_int_equal(size_parse("2GiB", &b), 0);
	assert_int_equal(b, 2ULL << 30);
	assert_int_equal(size_parse("4 kib", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(size_parse("1T", &b), 0);
	assert_int_equal(b, 1ULL << 40);
	assert_int_equal(size_parse("7B", &b), 0);
	assert_int_equal(b, 7);
	assert_int_equal(size_parse(".5K", &b), 0);
	assert_int_equal(b, 512);
}

/* Issue 45: one convention in every option. The letters and the IEC names are binary,
 * the SI names decimal, as nvidia-smi's MiB and a spec sheet's GB are. */
static void test_size_units(void **state)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} cases[] = {
		{ "100MB", 100000000ULL },   { "100mb", 100000000ULL },  { "100M", 100ULL << 20 },
		{ "100MiB", 100ULL << 20 },  { "100mib", 100ULL << 20 }, { "80GB", 80000000000ULL },
		{ "80G", 80ULL << 30 },      { "80GiB", 80ULL << 30 },   { "4KB", 4000 },
		{ "4K", 4096 },              { "4KiB", 4096 },           { "2TB", 2000000000000ULL },
		{ "2T", 2ULL << 40 },        { "2TiB", 2ULL << 40 },     { "1.5 GB", 1500000000ULL },
	};
	uint64_t b;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b = 0;
		if (size_parse(cases[i].text, &b) || b != cases[i].bytes)
			fail_msg("'%s': %llu, not %llu", cases[i].text, (unsigned long long)b,
				 (unsigned long long)cases[i].bytes);
	}
}

/* Issue 45: "80" is 80 what? A bare number is refused, but 0, which is 0 in any unit. */
static void test_size_bare(void **state)
{
	static const char *const bare[] = { "80", "1000000", "5", "0.5", "740 ", NULL };
	uint64_t b = 42;
	char hint[128];

	(void)state;
	for (int i = 0; bare[i]; i++) {
		assert_int_equal(size_parse(bare[i], &b), -EDOM);
		assert_int_equal(b, 42);
	}
	assert_int_equal(size_parse("0", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(size_parse("0.0", &b), 0);
	assert_string_equal(size_unit_hint("80", 'G', hint, sizeof(hint)),
			    "'80' has no unit: 80 what? 80G is 80 GiB, 80GB is 80 GB");
	assert_string_equal(size_unit_hint("100", 'M', hint, sizeof(hint)),
			    "'100' has no unit: 100 what? 100M is 100 MiB, 100MB is 100 MB");
	assert_string_equal(size_unit_hint("1073741824", 'G', hint, sizeof(hint)),
			    "'1073741824' has no unit: 1073741824 what? 1073741824B is 1073741824 bytes");
}

static void test_size_parse_rejects(void **state)
{
	static const char *const bad[] = { "", "G", "-1G", "1X", "1Gx", "1GiBs", "nan", "inf", "1e30T",
					   "18446744073709551616B", "1BB", " 1G", "1Mi", "1iB", "1GBi", NULL };
	uint64_t b = 42;

	(void)state;
	for (int i = 0; bad[i]; i++) {
		if (size_parse(bad[i], &b) != -EINVAL)
			fail_msg("'%s' taken", bad[i]);
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
		cmocka_unit_test(test_size_units),
		cmocka_unit_test(test_size_bare),
		cmocka_unit_test(test_size_format),
		cmocka_unit_test(test_now_ms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
