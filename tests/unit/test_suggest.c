/* "Did you mean" (util/suggest.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "util/suggest.h"

static void test_distance(void **state)
{
	(void)state;
	assert_int_equal(suggest_distance("", ""), 0);
	assert_int_equal(suggest_distance("budget", "budget"), 0);
	assert_int_equal(suggest_distance("budgt", "budget"), 1);      /* a letter left out */
	assert_int_equal(suggest_distance("bduget", "budget"), 1);     /* two swapped */
	assert_int_equal(suggest_distance("grad-chkpt", "grad-ckpt"), 1);
	assert_int_equal(suggest_distance("abc", ""), 3);
	assert_int_equal(suggest_distance("kitten", "sitting"), 3);
	char longw[100];
	memset(longw, 'a', sizeof(longw) - 1);
	longw[sizeof(longw) - 1] = '\0';
	assert_int_equal(suggest_distance(longw, "a"), 255);
}

static void test_closest(void **state)
{
	static const char *const opts[] = { "grad-ckpt", "gpu", "gpu-memory", "batch", "seq", "json", "margin" };
	size_t n = sizeof(opts) / sizeof(opts[0]);

	(void)state;
	assert_string_equal(suggest_closest("grad-chkpt", opts, n), "grad-ckpt");
	assert_string_equal(suggest_closest("gradckpt", opts, n), "grad-ckpt");
	assert_string_equal(suggest_closest("btach", opts, n), "batch");
	assert_string_equal(suggest_closest("jsno", opts, n), "json");
	assert_string_equal(suggest_closest("gpu-mem", opts, n), "gpu-memory"); /* the one it begins */
	assert_null(suggest_closest("frobnicate", opts, n));
	assert_null(suggest_closest("", opts, n));
	assert_null(suggest_closest("x", opts, 0));
	/* "g" begins three of them and is near none: no guess */
	assert_null(suggest_closest("g", opts, n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distance),
		cmocka_unit_test(test_closest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
