/* A job's memory curve: reading it, building it from samples, and learning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "profile/curve.h"

#define MiB (1ULL << 20)

/* pts[i] = (i + 1) MiB over dur_ms: each slice tells which one was read. */
static void ramp(struct curve *c, int64_t dur_ms)
{
	memset(c, 0, sizeof(*c));
	c->duration_ms = dur_ms;
	for (int i = 0; i < CURVE_POINTS; i++)
		c->pts[i] = (uint64_t)(i + 1) * MiB;
	curve_update_peak(c);
}

static void flat(struct curve *c, int64_t dur_ms, uint64_t bytes)
{
	memset(c, 0, sizeof(*c));
	c->duration_ms = dur_ms;
	for (int i = 0; i < CURVE_POINTS; i++)
		c->pts[i] = bytes;
	curve_update_peak(c);
}

static void test_at(void **state)
{
	struct curve c;

	(void)state;
	ramp(&c, 1000);
	assert_int_equal(curve_at(&c, 0), 1 * MiB);
	assert_int_equal(curve_at(&c, 500), 33 * MiB);  /* 500 * 64 / 1000 = slice 32 */
	assert_int_equal(curve_at(&c, 999), 64 * MiB);
	assert_int_equal(curve_at(&c, 1000), 0);        /* over */
	assert_int_equal(curve_at(&c, -1), 0);          /* not started */
	c.duration_ms = 0;
	assert_int_equal(curve_at(&c, 0), 0);           /* no duration: nothing known */
}

static void test_max_between(void **state)
{
	struct curve c;

	(void)state;
	ramp(&c, 1000);
	assert_int_equal(curve_max_between(&c, 100, 200), 13 * MiB);  /* slices 6..12 */
	assert_int_equal(curve_max_between(&c, -500, 15), 1 * MiB);   /* clipped to the start */
	assert_int_equal(curve_max_between(&c, 900, 5000), 64 * MiB); /* clipped to the end */
	assert_int_equal(curve_max_between(&c, 300, 200), 0);         /* empty interval */
	assert_int_equal(curve_max_between(&c, 1000, 2000), 0);       /* after the job */
	assert_int_equal(curve_max_between(&c, -10, -1), 0);          /* before it */
}

static void test_from_samples(void **state)
{
	struct curve_sample s[] = { { 0, 10 * MiB }, { 400, 80 * MiB }, { 500, 100 * MiB }, { 900, 20 * MiB } };
	struct curve_sample same[] = { { 0, 5 * MiB }, { 1, 7 * MiB }, { 2, 6 * MiB } };
	struct curve c;

	(void)state;
	assert_int_equal(curve_samples_max(s, 4), 100 * MiB);
	assert_int_equal(curve_samples_max(same, 3), 7 * MiB);
	assert_int_equal(curve_samples_max(s, 0), 0);
	assert_int_equal(curve_from_samples(s, 4, 1000, &c), 0);
	assert_int_equal(c.duration_ms, 1000);
	assert_int_equal(c.peak_bytes, 100 * MiB);
	assert_int_equal(c.pts[0], 10 * MiB);
	assert_int_equal(c.pts[25], 80 * MiB);  /* 400 * 64 / 1000 */
	assert_int_equal(c.pts[32], 100 * MiB);
	assert_int_equal(c.pts[57], 20 * MiB);
	/* slices between samples take the value before them: no holes */
	assert_int_equal(c.pts[12], 10 * MiB);
	assert_int_equal(c.pts[40], 100 * MiB);
	assert_int_equal(c.pts[63], 20 * MiB);
	/* samples in one slice: the largest */
	assert_int_equal(curve_from_samples(same, 3, 1000, &c), 0);
	assert_int_equal(c.pts[0], 7 * MiB);
	assert_int_equal(c.peak_bytes, 7 * MiB);
	/* a job over before it took time still has a duration */
	assert_int_equal(curve_from_samples(s, 1, 0, &c), 0);
	assert_int_equal(c.duration_ms, 1);
	assert_int_equal(curve_from_samples(s, 0, 1000, &c), -EINVAL);
}

static void test_learn_floor(void **state)
{
	struct curve p, small, big, tiny;

	(void)state;
	flat(&small, 1000, 100 * MiB);
	flat(&big, 2000, 200 * MiB);
	flat(&tiny, 1000, 50 * MiB);
	curve_learn(&p, &small, 1, 50, 1);
	assert_memory_equal(&p, &small, sizeof(p)); /* the first run is the profile */
	/* a job that grew is believed at once; the duration moves halfway */
	curve_learn(&p, &big, 0, 50, 1);
	assert_int_equal(p.pts[0], 200 * MiB);
	assert_int_equal(p.peak_bytes, 200 * MiB);
	assert_int_equal(p.duration_ms, 1500);
	/* one that shrank, halfway: (200 + 50) / 2 */
	curve_learn(&p, &tiny, 0, 50, 1);
	assert_int_equal(p.pts[63], 125 * MiB);
	assert_int_equal(p.peak_bytes, 125 * MiB);
	assert_int_equal(p.duration_ms, 1250);
}

static void test_learn_mean(void **state)
{
	struct curve p, small, big;

	(void)state;
	flat(&small, 1000, 100 * MiB);
	flat(&big, 2000, 200 * MiB);
	/* without the floor (classes): a running mean, keep 80 % of the old */
	curve_learn(&p, &small, 1, 80, 0);
	curve_learn(&p, &big, 0, 80, 0);
	assert_int_equal(p.pts[0], 120 * MiB);
	assert_int_equal(p.peak_bytes, 120 * MiB);
	assert_int_equal(p.duration_ms, 1200);
	/* halfway with keep 50 */
	curve_learn(&p, &small, 1, 50, 0);
	curve_learn(&p, &big, 0, 50, 0);
	assert_int_equal(p.peak_bytes, 150 * MiB);
}

static void test_update_peak(void **state)
{
	struct curve c;

	(void)state;
	ramp(&c, 1000);
	assert_int_equal(c.peak_bytes, 64 * MiB);
	c.pts[17] = 999 * MiB;
	curve_update_peak(&c);
	assert_int_equal(c.peak_bytes, 999 * MiB);
	memset(c.pts, 0, sizeof(c.pts));
	curve_update_peak(&c);
	assert_int_equal(c.peak_bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_at),
		cmocka_unit_test(test_max_between),
		cmocka_unit_test(test_from_samples),
		cmocka_unit_test(test_learn_floor),
		cmocka_unit_test(test_learn_mean),
		cmocka_unit_test(test_update_peak),
	};
	return cmocka_run_group_tests_name("curve", tests, NULL, NULL);
}
