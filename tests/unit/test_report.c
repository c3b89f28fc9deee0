/* The end-of-build report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "govern/report.h"

/* A job of peak `peak` bytes held flat for dur_ms, started at start_ms. */
static struct report_job job(const char *class_key, uint64_t peak, int64_t start_ms, int64_t dur_ms, int compile)
{
	struct report_job j = { .class_key = (char *)class_key, .peak_bytes = peak, .duration_ms = dur_ms,
				.start_ms = start_ms, .compile = compile };

	j.curve.duration_ms = dur_ms;
	for (int i = 0; i < CURVE_POINTS; i++)
		j.curve.pts[i] = peak;
	j.curve.peak_bytes = peak;
	return j;
}

static void test_report(void **state)
{
	struct report r = { .budget_bytes = 10 };
	struct report_job j[] = {
		job("nvcc", 4, 0, 100, 1), job("nvcc", 3, 1, 100, 1), job("nvcc", 3, 2, 100, 1),
		job("g++", 1, 3, 100, 1),
		job("c++", 9, 4, 10, 0), /* a probe: not counted */
	};

	(void)state;
	assert_int_equal(report_safe_max_jobs(&r), 0); /* nothing known */
	for (size_t i = 0; i < sizeof(j) / sizeof(j[0]); i++)
		report_add_job(&r, &j[i]);
	/* flat curves started together: 4 + 3 + 3 = 10 fit; a fourth would not */
	assert_int_equal(report_safe_max_jobs(&r), 3);
	assert_int_equal(report_class_percentile(&r, "nvcc", 100), 4);
	assert_int_equal(report_class_percentile(&r, "nvcc", 50), 3);
	assert_int_equal(report_class_percentile(&r, "g++", 95), 1);
	assert_int_equal(report_class_percentile(&r, "ld", 50), 0);
	json_t *o = report_to_json(&r);
	assert_int_equal(json_integer_value(json_object_get(o, "safe_fixed_max_jobs")), 3);
	assert_string_equal(json_string_value(json_object_get(o, "safe_fixed_knob")), "-j");
	assert_int_equal(json_integer_value(json_object_get(o, "compile_jobs")), 4);
	assert_int_equal(json_integer_value(json_object_get(o, "other_jobs")), 1);
	assert_int_equal(json_array_size(json_object_get(o, "classes")), 3);
	assert_true(json_is_null(json_object_get(o, "peak_group_bytes"))); /* unknown, not 0 */
	json_decref(o);
	report_free(&r);
}

/* The replay follows each job's curve: jobs whose peaks do not meet allow more than
 * their peaks summed. */
static void test_report_replay(void **state)
{
	struct report r = { .budget_bytes = 10 };
	struct report_job j[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		j[i] = job("nvcc", 1, i, 640, 1);
		j[i].curve.pts[16 * i] = 6; /* a peak of 6 in its own quarter of the job */
		j[i].curve.peak_bytes = j[i].peak_bytes = 6;
		report_add_job(&r, &j[i]);
	}
	/* peaks summed: 6 + 6 > 10, so 1; replayed: 6 + 3 x 1 = 9 at any moment */
	assert_int_equal(report_safe_max_jobs(&r), 4);
	report_free(&r);
}

/* A fixed -jN build starts its jobs in the order the build tool asks for them, not in the
 * order the governor let them run: the recommendation replays the former. */
static void test_report_build_order(void **state)
{
	struct report r = { .budget_bytes = 10 };
	/* asked for: two of 5, then three of 1; the governor ran the three small ones first */
	struct report_job j[] = {
		job("nvcc", 5, 3, 100, 1), job("nvcc", 5, 4, 100, 1), job("nvcc", 1, 0, 100, 1),
		job("nvcc", 1, 1, 100, 1), job("nvcc", 1, 2, 100, 1),
	};

	(void)state;
	for (size_t i = 0; i < sizeof(j) / sizeof(j[0]); i++) {
		j[i].seq = (int)i + 1;
		report_add_job(&r, &j[i]);
	}
	/* -j3 in the build's order starts 5 + 5 + 1 = 11 together; in the governor's, 1 + 1 + 1
	 * and then 5 + 5 */
	assert_int_equal(report_safe_max_jobs(&r), 2);
	/* what a fixed build may use, when it is more than the governor's budget */
	r.fixed_budget_bytes = 11;
	assert_int_equal(report_safe_max_jobs(&r), 3);
	report_free(&r);
}

/* Advice only names what the machine runs, only from a whole build, only where there is
 * a choice; an OOM avoided is against the memory limit, never the budget. */
static void test_report_advice_bounds(void **state)
{
	struct report r = { .budget_bytes = 100, .limit_bytes = 10, .jobs_cap = 8, .cpus = 2 };
	struct report_job one = job("nvcc", 3, 0, 100, 1);

	(void)state;
	report_add_job(&r, &one);
	assert_int_equal(report_safe_max_jobs(&r), 0); /* one compile job: nothing to choose */
	for (int i = 1; i < 6; i++) {
		struct report_job j = job("nvcc", 3, i, 100, 1);
		report_add_job(&r, &j);
	}
	/* all six fit the budget at once; the machine runs two */
	assert_int_equal(report_safe_max_jobs(&r), 2);
	/* eight at once on two CPUs: durations stretched, no replayed wall time from them */
	assert_false(report_fixed_wall_fair(&r));
	json_t *w = report_to_json(&r);
	assert_true(json_is_null(json_object_get(w, "safe_fixed_wall_ms")));
	json_decref(w);
	r.jobs_cap = 2;
	assert_true(report_fixed_wall_fair(&r));
	r.jobs_cap = 8;
	/* -j8 replayed: 18 above the limit of 10, not above the budget of 100 */
	assert_int_equal(report_oom_avoided(&r), 1);
	r.limit_bytes = 20;
	assert_int_equal(report_oom_avoided(&r), 0);
	r.limit_bytes = 10;
	r.oom_kills = 1;
	assert_int_equal(report_oom_avoided(&r), 0);
	r.cpus = 1;
	assert_int_equal(report_safe_max_jobs(&r), 0); /* one at a time is no advice */
	r.cpus = 4;
	r.exit_status = 130; /* cut short */
	assert_int_equal(report_safe_max_jobs(&r), 0);
	assert_int_equal(report_oom_avoided(&r), -1);
	json_t *o = report_to_json(&r);
	assert_true(json_is_null(json_object_get(o, "safe_fixed_max_jobs")));
	assert_true(json_is_null(json_object_get(o, "oom_avoided")));
	assert_true(json_is_false(json_object_get(o, "completed")));
	json_decref(o);
	report_free(&r);
}

/* A spell over the budget: counted once, with the job furthest above its prediction at
 * its worst and the freezes made while it lasted; waits keep their longest. */
static void test_report_ticks(void **state)
{
	struct report r = { .budget_bytes = 100 };
	struct report_tick t = { .dt_ms = 100, .running = 2, .jobs_bytes = 90 };

	(void)state;
	report_note_tick(&r, &t);
	t.jobs_bytes = 120, t.grew_job = "a.cu", t.grew_bytes = 30;
	report_note_tick(&r, &t);
	r.freezes++; /* the net acts after the note */
	t.jobs_bytes = 110, t.grew_job = "b.cu", t.frozen = 1, t.running = 1;
	report_note_tick(&r, &t);
	t.jobs_bytes = 80;
	report_note_tick(&r, &t);
	assert_int_equal(r.over.times, 1);
	assert_int_equal(r.over.total_ms, 200);
	assert_int_equal(r.over.most_bytes, 20);
	assert_string_equal(r.over.grew_job, "a.cu");
	assert_int_equal(r.over.grew_bytes, 30);
	assert_int_equal(r.over.freezes, 1);
	assert_int_equal(r.over.alone_ms, 100);
	assert_int_equal(r.frozen_ms, 200);
	t.jobs_bytes = 101;
	report_note_tick(&r, &t);
	assert_int_equal(r.over.times, 2);
	report_add_wait(&r.wait_memory, 300);
	report_add_wait(&r.wait_memory, 0);
	report_add_wait(&r.wait_memory, 500);
	assert_int_equal(r.wait_memory.jobs, 2);
	assert_int_equal(r.wait_memory.total_ms, 800);
	assert_int_equal(r.wait_memory.longest_ms, 500);
	/* a wait for memory keeps what held it, each reason summed over the jobs */
	int64_t held[REPORT_HELD_N] = { [REPORT_HELD_PACE] = 50, [REPORT_HELD_BUDGET] = 400, [REPORT_HELD_NET] = 150 };
	report_add_wait_held(&r.wait_memory, 600, held);
	report_add_wait_held(&r.wait_memory, 0, held);
	held[REPORT_HELD_BUDGET] = 0;
	held[REPORT_HELD_FREE] = 200;
	report_add_wait_held(&r.wait_memory, 400, held);
	assert_int_equal(r.wait_memory.jobs, 4);
	assert_int_equal(r.wait_memory.held_ms[REPORT_HELD_BUDGET], 400);
	assert_int_equal(r.wait_memory.held_ms[REPORT_HELD_FREE], 200);
	assert_int_equal(r.wait_memory.held_ms[REPORT_HELD_NET], 300);
	FILE *f = tmpfile();
	char text[4096];
	assert_non_null(f);
	report_print(&r, f);
	rewind(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	assert_non_null(strstr(text, "waited for memory (a CPU slot free): 4 jobs, 1.8 s in all, longest 0.6 s "
				     "(held by: the budget 0.4 s, memory others hold 0.2 s, the safety net 0.3 s)"));
	report_free(&r);
	assert_null(r.over.grew_job);
}

/* Jobs not learned are counted under their reasons, each reason once however often. */
static void test_not_learned_why(void **state)
{
	static const char partial[] = "observed only in part", check[] = "a configure check";
	struct report r;
	FILE *f = tmpfile();
	char text[4096];
	size_t n;

	(void)state;
	memset(&r, 0, sizeof(r));
	report_not_learned(&r, partial);
	report_not_learned(&r, check);
	report_not_learned(&r, partial);
	assert_int_equal(r.not_learned, 3);
	assert_string_equal(r.not_learned_why[0].why, partial);
	assert_int_equal(r.not_learned_why[0].n, 2);
	assert_int_equal(r.not_learned_why[1].n, 1);
	assert_null(r.not_learned_why[2].why);
	/* more reasons than the table holds: the last row takes the rest, none is lost */
	static const char *const more[] = { "a", "b", "c", "d", "e", "f", "g", "h" };
	for (size_t i = 0; i < sizeof(more) / sizeof(*more); i++)
		report_not_learned(&r, more[i]);
	int sum = 0;
	for (size_t i = 0; i < REPORT_WHY_MAX; i++)
		sum += r.not_learned_why[i].n;
	assert_int_equal(sum, r.not_learned);
	assert_non_null(f);
	report_print(&r, f);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	assert_non_null(strstr(text, "11 jobs not learned (2 observed only in part, 1 a configure check"));
}

static void test_knob(void **state)
{
	char *setup[] = { "python3", "setup.py", "build_ext", NULL };
	char *pip[] = { "/usr/bin/pip3", "install", ".", NULL };
	char *mpip[] = { "python", "-m", "pip", "install", ".", NULL };
	char *mbuild[] = { "python", "-m", "build", NULL };
	char *ninja[] = { "ninja", "-j8", NULL };
	char *cmake[] = { "cmake", "--build", "build", NULL };

	(void)state;
	assert_string_equal(report_knob_for(setup), "MAX_JOBS");
	assert_string_equal(report_knob_for(pip), "MAX_JOBS");
	assert_string_equal(report_knob_for(mpip), "MAX_JOBS");
	assert_string_equal(report_knob_for(mbuild), "MAX_JOBS");
	assert_string_equal(report_knob_for(ninja), "-j");
	assert_string_equal(report_knob_for(cmake), "-j");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_report_replay),
		cmocka_unit_test(test_report_build_order),
		cmocka_unit_test(test_report_advice_bounds),
		cmocka_unit_test(test_report_ticks),
		cmocka_unit_test(test_not_learned_why),
		cmocka_unit_test(test_knob),
	};
	return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
