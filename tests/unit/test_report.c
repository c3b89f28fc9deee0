/* The end-of-build report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "govern/report.h"

static void test_report(void **state)
{
	struct report r = { .budget_bytes = 10 };

	(void)state;
	assert_int_equal(report_safe_max_jobs(&r), 0); /* nothing known */
	report_add_job(&r, "nvcc", 4, 1);
	report_add_job(&r, "nvcc", 3, 1);
	report_add_job(&r, "nvcc", 3, 1);
	report_add_job(&r, "g++", 1, 1);
	/* the largest peaks 4 + 3 + 3 = 10 fit; a fourth would not be safe if all peaked */
	assert_int_equal(report_safe_max_jobs(&r), 3);
	assert_int_equal(report_class_percentile(&r, "nvcc", 100), 4);
	assert_int_equal(report_class_percentile(&r, "nvcc", 50), 3);
	assert_int_equal(report_class_percentile(&r, "g++", 95), 1);
	assert_int_equal(report_class_percentile(&r, "ld", 50), 0);
	json_t *j = report_to_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "safe_fixed_max_jobs")), 3);
	assert_int_equal(json_array_size(json_object_get(j, "classes")), 2);
	assert_true(json_is_null(json_object_get(j, "peak_group_bytes"))); /* unknown, not 0 */
	json_decref(j);
	report_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report),
	};
	return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
