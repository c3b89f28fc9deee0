/* The progress line: its text and its ETA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "govern/progress.h"

#define GiB (1024ULL * 1024 * 1024)

static void test_format(void **state)
{
	(void)state;
	char buf[256];
	struct progress_state s = { .done = 37, .total = 96, .running = 14, .waiting_memory = 3,
				    .jobs_bytes = 81 * GiB, .budget_bytes = 110 * GiB, .eta_ms = 6 * 60 * 1000 - 500 };

	progress_format(&s, 1, buf, sizeof(buf));
	assert_string_equal(buf, "[37/96] running 14 \u00b7 3 waiting for memory \u00b7 jobs 81.00 GiB/110.00 GiB budget \u00b7 ETA 6m");
	s.total = 0;
	s.eta_ms = -1;
	s.waiting_memory = 0;
	s.frozen = 2;
	progress_format(&s, 0, buf, sizeof(buf));
	assert_string_equal(buf, "[37 done] running 14, 2 frozen, jobs 81.00 GiB/110.00 GiB budget");
	/* at the job cap, jobs wait for a slot, not for memory */
	s.frozen = 0;
	s.running = 16;
	s.waiting_slot = 5;
	progress_format(&s, 0, buf, sizeof(buf));
	assert_non_null(strstr(buf, ", 5 waiting for a CPU slot, "));
	assert_null(strstr(buf, "for memory"));
}

static void test_eta(void **state)
{
	(void)state;
	/* 10 of 30 done in 50 s, 100 s of work: parallelism 2; 4 running with 20 s left in all,
	 * 16 not started at 10 s each: (20 + 160) / 2 = 90 s */
	struct progress_eta_in in = { 50000, 100000, 10, 30, 4, 20000, 0, 8 };
	assert_int_equal(progress_eta(&in), 90000);
	/* parallelism is capped by the job cap */
	in.jobs_cap = 1;
	assert_int_equal(progress_eta(&in), 180000);
	/* nothing done yet: the last build's wall time, less what passed */
	struct progress_eta_in first = { 5000, 0, 0, 30, 4, 0, 65000, 8 };
	assert_int_equal(progress_eta(&first), 60000);
	first.last_wall_ms = 0;
	assert_int_equal(progress_eta(&first), -1);
	/* total unknown: no ETA */
	in.total = 0;
	assert_int_equal(progress_eta(&in), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_format), cmocka_unit_test(test_eta) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
