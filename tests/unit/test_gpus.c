/* The GPU table (plan/gpus): names as --gpu takes them, their memory, unknown names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plan/gpus.h"

#define MiB (1024ULL * 1024)

static void test_find(void **state)
{
	(void)state;
	assert_int_equal(gpus_find("h200")->memory_bytes, 143771 * MiB);
	assert_int_equal(gpus_find("h100-80gb")->memory_bytes, 81559 * MiB);
	assert_int_equal(gpus_find("a100-40gb")->memory_bytes, 40960 * MiB);
	assert_int_equal(gpus_find("4090")->memory_bytes, 24564 * MiB);
	assert_int_equal(gpus_find("t4")->memory_bytes, 15360 * MiB);
	assert_string_equal(gpus_find("rtx-pro-6000")->name, "rtx-pro-6000");
	/* no aliases, no other spelling */
	assert_null(gpus_find("H200"));
	assert_null(gpus_find("h100"));
	assert_null(gpus_find("nosuch"));
	assert_null(gpus_find(""));
}

/* The table in the order the usage lists it, each entry found by its own name. */
static void test_at(void **state)
{
	static const char *const names[] = { "h200", "h100-80gb", "h100-94gb", "a100-80gb", "a100-40gb", "l40s",
					     "rtx-pro-6000", "4090", "3090", "a10g", "t4" };
	const size_t n = sizeof(names) / sizeof(names[0]);
	(void)state;

	for (size_t i = 0; i < n; i++) {
		assert_string_equal(gpus_at(i)->name, names[i]);
		assert_ptr_equal(gpus_find(names[i]), gpus_at(i));
	}
	assert_null(gpus_at(n));
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_find), cmocka_unit_test(test_at) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
