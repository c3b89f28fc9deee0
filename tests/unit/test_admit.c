/* Admission and the safety net, on synthetic jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "govern/admit.h"
#include "profile/curve.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

/* A compile-like curve: ramps to peak at peak_pct of the job, then drops to a third. */
static void shape(struct curve *c, int64_t dur_ms, uint64_t peak, int peak_pct)
{
	memset(c, 0, sizeof(*c));
	c->duration_ms = dur_ms;
	for (int i = 0; i < CURVE_POINTS; i++) {
		int at = i * 100 / CURVE_POINTS;
		c->pts[i] = at <= peak_pct ? peak * (uint64_t)(at + 1) / (uint64_t)(peak_pct + 1) : peak / 3;
	}
	c->pts[peak_pct * CURVE_POINTS / 100] = peak;
	curve_update_peak(c);
}

static void test_admit_empty(void **state)
{
	struct curve c;
	struct admit_snapshot s = { .budget_bytes = 4 * GiB, .free_bytes = 4 * GiB, .unknown_bytes = GiB };
	struct admit_result r;

	(void)state;
	shape(&c, 10000, GiB, 30);
	admit_decide(&s, &c, 0, &r);
	assert_true(r.admit);
	assert_int_equal(r.worst_bytes, GiB);
	assert_false(r.short_of_free);
	/* larger than the budget: refused (the governor still runs it when nothing else runs) */
	shape(&c, 10000, 5 * GiB, 30);
	admit_decide(&s, &c, 0, &r);
	assert_false(r.admit);
	assert_false(r.short_of_free);
	/* inside the budget, but others on the machine hold part of it: refused for them */
	s.free_bytes = 2 * GiB;
	shape(&c, 10000, 3 * GiB, 30);
	admit_decide(&s, &c, 0, &r);
	assert_false(r.admit);
	assert_true(r.short_of_free);
	/* past both: the budget is named, not the others */
	shape(&c, 10000, 5 * GiB, 30);
	admit_decide(&s, &c, 0, &r);
	assert_false(r.admit);
	assert_false(r.short_of_free);
}

static void test_admit_aligned_peaks(void **state)
{
	/* Three jobs that just started will peak together with a fourth started now. */
	struct curve c;
	struct admit_job j[3];
	struct admit_snapshot s = { .budget_bytes = 3500 * MiB, .free_bytes = 3500 * MiB, .jobs = j, .njobs = 3 };
	struct admit_result r;

	(void)state;
	shape(&c, 10000, GiB, 30);
	for (int i = 0; i < 3; i++)
		j[i] = (struct admit_job){ .elapsed_ms = 0, .pred = &c, .current_bytes = 10 * MiB };
	admit_decide(&s, &c, 0, &r);
	assert_false(r.admit);
	assert_true(r.worst_bytes >= 4 * GiB - 40 * MiB);
	assert_true(r.worst_at_ms > 2000 && r.worst_at_ms < 4000);
}

static void test_admit_own_profile_closer(void **state)
{
	/* Two one-peak jobs 8 % of their length apart: a class's profile (other jobs, other
	 * shapes) cannot tell the peaks apart, a job's own profile (the same job, only its pace
	 * differs) can. */
	struct curve c;
	struct admit_job j;
	struct admit_snapshot s = { .budget_bytes = 1536 * MiB, .free_bytes = 1536 * MiB, .jobs = &j, .njobs = 1 };
	struct admit_result r;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.duration_ms = 10000;
	for (int i = 0; i < CURVE_POINTS; i++)
		c.pts[i] = 100 * MiB;
	c.pts[20] = GiB; /* 3125-3281 ms */
	curve_update_peak(&c);
	j = (struct admit_job){ .elapsed_ms = 800, .pred = &c, .current_bytes = 100 * MiB };
	admit_decide(&s, &c, 0, &r);
	assert_false(r.admit);
	assert_int_equal(r.worst_bytes, 2 * GiB);
	j.own = 1;
	admit_decide(&s, &c, ADMIT_OWN, &r);
	assert_true(r.admit);
	assert_int_equal(r.worst_bytes, GiB + 100 * MiB);
	/* one of the two a class's guess: still apart only by its wider margin */
	admit_decide(&s, &c, 0, &r);
	assert_false(r.admit);
}

/* A provisional class curve (admit_provisional): its first jobs rose for a fifth of the
 * 40 s they have run so far, to 4 GiB, and fell to a third. */
static void provisional_shape(struct curve *c)
{
	shape(c, 40000, 4 * GiB, 20);
}

static void test_admit_class_longest_last(void **state)
{
	/* A class whose larger, longer members come after its first ones: one of them still
	 * rises where the first had passed their peaks. It is taken to reach the class's peak,
	 * so a candidate that would peak beside it waits; had it passed its peak, or were the
	 * curve learned from jobs that ended, the candidate would start. */
	struct curve c;
	struct admit_job j;
	struct admit_snapshot s = { .budget_bytes = 7 * GiB, .free_bytes = 4608 * MiB, .jobs = &j, .njobs = 1 };
	struct admit_result r;

	(void)state;
	provisional_shape(&c);
	j = (struct admit_job){ .elapsed_ms = 20000, .pred = &c, .current_bytes = 2560 * MiB, .open = 1, .rising = 1 };
	assert_true(admit_job_future(&j, 0, 10000) >= 4 * GiB);
	admit_decide(&s, &c, ADMIT_OPEN, &r);
	assert_false(r.admit);
	assert_true(r.worst_bytes >= 8 * GiB);
	j.rising = 0;
	assert_true(admit_job_future(&j, 0, 10000) < 3 * GiB);
	admit_decide(&s, &c, ADMIT_OPEN, &r);
	assert_true(r.admit);
	j.rising = 1;
	j.open = 0;
	admit_decide(&s, &c, 0, &r);
	assert_true(r.admit);
	/* still ahead of the curve's peak: the curve says when it peaks, no floor needed */
	j = (struct admit_job){ .elapsed_ms = 2000, .pred = &c, .current_bytes = GiB, .open = 1, .rising = 1 };
	assert_true(admit_job_future(&j, 0, 30000) < 3 * GiB);
}

static void test_admit_open_peaks_align(void **state)
{
	/* A candidate of a class that has run 10 s so far, holding 1.5 GiB at the end of it,
	 * beside a job whose 3 GiB peak comes at 30 s: the candidate is still running then,
	 * and their peaks meet. Read as a job that ends at 10 s, it would have been let in. */
	struct curve c, b;
	struct admit_job j;
	struct admit_snapshot s = { .budget_bytes = 4 * GiB, .free_bytes = 4 * GiB, .jobs = &j, .njobs = 1 };
	struct admit_result r;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.duration_ms = 10000;
	for (int i = 0; i < CURVE_POINTS; i++)
		c.pts[i] = 1536 * MiB;
	c.pts[12] = 2 * GiB;
	curve_update_peak(&c);
	shape(&b, 60000, 3 * GiB, 50);
	j = (struct admit_job){ .elapsed_ms = 0, .pred = &b, .current_bytes = 0, .own = 1 };
	admit_decide(&s, &c, 0, &r);
	assert_true(r.admit);
	admit_decide(&s, &c, ADMIT_OPEN, &r);
	assert_false(r.admit);
	assert_true(r.worst_bytes >= 4 * GiB + 512 * MiB);
	assert_true(r.worst_at_ms >= 25000 && r.worst_at_ms <= 35000);
}

static void test_admit_last_job_early(void **state)
{
	/* The last job of a build waits beside three jobs of its class in their long tails,
	 * past the 40 s the class has run: it starts at once, its peak beside their tails. One
	 * of them still rising behind the curve would keep it waiting. */
	struct curve c;
	struct admit_job j[3];
	struct admit_snapshot s = { .budget_bytes = 9 * GiB, .free_bytes = 5 * GiB, .jobs = j, .njobs = 3 };
	struct admit_result r;

	(void)state;
	provisional_shape(&c);
	for (int i = 0; i < 3; i++)
		j[i] = (struct admit_job){ .elapsed_ms = 50000, .pred = &c, .current_bytes = 4 * GiB / 3, .open = 1 };
	admit_decide(&s, &c, ADMIT_OPEN, &r);
	assert_true(r.admit);
	assert_true(r.worst_bytes <= 8 * GiB + 64 * MiB);
	j[2].rising = 1;
	admit_decide(&s, &c, ADMIT_OPEN, &r);
	assert_false(r.admit);
}

static void test_admit_open_tails_own_level(void **state)
{
	/* A class's provisional curve made by its larger first jobs (4 GiB peaks, tails of a
	 * third): three later jobs past their peaks hold a sixth of a GiB where the curve's
	 * tail says 1.33 GiB, an eighth of it: each is taken at a quarter of the curve, the
	 * least, so the last job starts beside them; read at the curve's tail they would fill
	 * the room. One holding half the curve keeps half. A job still rising, one not yet past
	 * the curve's own peak, or one predicted by its own profile keeps the curve as it is. */
	struct curve c;
	struct admit_job j[3];
	struct admit_snapshot s = { .budget_bytes = 7 * GiB, .free_bytes = 7 * GiB, .jobs = j, .njobs = 3 };
	struct admit_result r;

	(void)state;
	provisional_shape(&c);
	for (int i = 0; i < 3; i++)
		j[i] = (struct admit_job){ .elapsed_ms = 30000, .pred = &c, .current_bytes = GiB / 6, .open = 1 };
	uint64_t tail = admit_job_future(&j[0], 0, 5000);
	assert_true(tail <= GiB / 3 + MiB && tail >= GiB / 3 - MiB); /* a quarter of 4/3 GiB */
	admit_decide(&s, &c, ADMIT_OPEN, &r);
	assert_true(r.admit);
	j[0].current_bytes = 2 * GiB / 3;
	assert_true(admit_job_future(&j[0], 0, 5000) >= 2 * GiB / 3 - MiB);
	assert_true(admit_job_future(&j[0], 0, 5000) <= 2 * GiB / 3 + MiB);
	j[0].current_bytes = GiB / 6;
	j[0].rising = 1;
	assert_true(admit_job_future(&j[0], 0, 5000) >= 4 * GiB);
	j[0].elapsed_ms = 3000; /* rising, early, under the curve: its peak still ahead */
	assert_true(admit_job_future(&j[0], 0, 5000) >= 4 * GiB);
	j[0].rising = 0; /* past a start-up bump of its own, before the curve's peak */
	j[0].current_bytes = 100 * MiB;
	assert_true(admit_job_future(&j[0], 0, 5000) >= 4 * GiB);
	j[0].elapsed_ms = 30000;
	j[0].open = 0;
	assert_true(admit_job_future(&j[0], 0, 5000) >= 4 * GiB / 3 - MiB);
	for (int i = 0; i < 3; i++)
		j[i].open = 0;
	admit_decide(&s, &c, ADMIT_OPEN, &r);
	assert_false(r.admit);
}

static void test_admit_staggered(void **state)
{
	/* The same three jobs past their peaks hold a third each: a fourth fits, and so
	 * would a static rule never allow (4 x 1 GiB > 3.5 GiB). */
	struct curve c;
	struct admit_job j[3];
	struct admit_snapshot s = { .budget_bytes = 3500 * MiB, .free_bytes = 3500 * MiB, .jobs = j, .njobs = 3 };
	struct admit_result r;

	(void)state;
	shape(&c, 10000, GiB, 30);
	for (int i = 0; i < 3; i++)
		j[i] = (struct admit_job){ .elapsed_ms = 5000, .pred = &c, .current_bytes = GiB / 3 };
	admit_decide(&s, &c, 0, &r);
	assert_true(r.admit);
	assert_true(r.worst_bytes <= 2 * GiB + 10 * MiB);
}

static void test_admit_free_memory(void **state)
{
	/* Budget room but little free memory now (others took it): refused. */
	struct curve c;
	struct admit_snapshot s = { .budget_bytes = 8 * GiB, .free_bytes = 512 * MiB };
	struct admit_result r;

	(void)state;
	shape(&c, 10000, GiB, 30);
	admit_decide(&s, &c, 0, &r);
	assert_false(r.admit);
	s.free_bytes = 2 * GiB;
	admit_decide(&s, &c, 0, &r);
	assert_true(r.admit);
}

static void test_admit_wrong_prediction_scales(void **state)
{
	/* A job predicted at 1 GiB already holds 2 GiB at 10 %: its future is scaled. */
	struct curve c, cand;
	struct admit_job j = { .elapsed_ms = 1000, .pred = &c, .current_bytes = 2 * GiB };
	struct admit_snapshot s = { .budget_bytes = 4 * GiB, .free_bytes = 4 * GiB, .jobs = &j, .njobs = 1 };
	struct admit_result r;

	(void)state;
	shape(&c, 10000, GiB, 30);
	shape(&cand, 10000, GiB, 30);
	assert_true(admit_job_future(&j, 0, 2000) > 2 * GiB);
	admit_decide(&s, &cand, 0, &r);
	assert_false(r.admit);
}

static void test_admit_unknown(void **state)
{
	/* No prediction: a flat assumed need, and never less than what the job holds. */
	struct admit_job j = { .elapsed_ms = 1000, .pred = NULL, .current_bytes = 300 * MiB };
	struct admit_snapshot s = { .budget_bytes = 2 * GiB, .free_bytes = 2 * GiB, .unknown_bytes = GiB,
				    .jobs = &j, .njobs = 1 };
	struct admit_result r;

	(void)state;
	assert_int_equal(admit_job_future(&j, GiB, 5000), GiB);
	j.current_bytes = 1500 * MiB;
	assert_int_equal(admit_job_future(&j, GiB, 5000), 1500 * MiB);
	admit_decide(&s, NULL, 0, &r);
	assert_false(r.admit);
	j.current_bytes = 300 * MiB;
	s.unknown_bytes = 512 * MiB;
	admit_decide(&s, NULL, 0, &r);
	assert_true(r.admit);
}

static void test_net(void **state)
{
	uint64_t lim = 4 * GiB, res = net_default_reserve(lim);
	struct net_state n = { .limit_bytes = lim, .reserve_bytes = res, .psi_full_avg10_pct = -1,
			       .ms_since_last_kill = 100000 };

	(void)state;
	assert_int_equal(res, lim / 100 * 6);
	assert_int_equal(net_default_reserve(256 * MiB), 64 * MiB);
	assert_int_equal(net_default_reserve(1024 * GiB), 2 * GiB);
	n.used_bytes = GiB;
	assert_int_equal(net_decide(&n), NET_OK);
	n.used_bytes = lim - res * 3 / 2;
	assert_int_equal(net_decide(&n), NET_HOLD);
	n.used_bytes = lim - res / 2;
	assert_int_equal(net_decide(&n), NET_FREEZE);
	n.used_bytes = lim - res / 4;
	assert_int_equal(net_decide(&n), NET_KILL);
	n.ms_since_last_kill = 200; /* one kill at a time */
	assert_int_equal(net_decide(&n), NET_FREEZE);
	n.used_bytes = GiB;
	n.psi_full_avg10_pct = 40; /* the kernel already stalls: critical whatever the numbers */
	n.ms_since_last_kill = 5000;
	assert_int_equal(net_decide(&n), NET_KILL);
}

/* A --reserve of half the limit or more narrows the jobs' room, never closes it: 12 GiB
 * kept free of 24 GiB, 2 GiB in use, holds only within a sixteenth of the limit above
 * the reserve (a hold band of the reserve again held everything, for ever). */
static void test_net_big_reserve(void **state)
{
	struct net_state n = { .limit_bytes = 24 * GiB, .reserve_bytes = 12 * GiB, .psi_full_avg10_pct = -1,
			       .ms_since_last_kill = 100000, .used_bytes = 2 * GiB };

	(void)state;
	assert_int_equal(net_hold_band(24 * GiB, 12 * GiB), 24 * GiB / 16);
	assert_int_equal(net_hold_band(4 * GiB, net_default_reserve(4 * GiB)), net_default_reserve(4 * GiB));
	assert_int_equal(net_decide(&n), NET_OK);
	n.used_bytes = 11 * GiB; /* 13 GiB free: within 1.5 GiB of the reserve */
	assert_int_equal(net_decide(&n), NET_HOLD);
}

static void flat(struct curve *c, int64_t dur_ms, uint64_t bytes)
{
	memset(c, 0, sizeof(*c));
	c->duration_ms = dur_ms;
	for (int i = 0; i < CURVE_POINTS; i++)
		c->pts[i] = bytes;
	curve_update_peak(c);
}

static void test_unknown_need(void **state)
{
	struct curve c;
	struct admit_job j[2] = { { .elapsed_ms = 1000, .pred = NULL, .current_bytes = 100 * MiB },
				  { .elapsed_ms = 1000, .pred = &c, .current_bytes = 3 * GiB } };

	(void)state;
	flat(&c, 10000, 3 * GiB);
	/* no job has shown its peak yet: a quarter, half in the tree */
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 0, 0, NULL, 0), GiB);
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 1, 0, NULL, 0), 2 * GiB);
	/* a known job is not counted, however large; a small unknown one changes nothing */
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 0, 0, j, 2), GiB);
	/* an unknown job holding 1 GiB may grow as much again */
	j[0].current_bytes = GiB;
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 0, 0, j, 2), 2 * GiB);
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 1, 0, j, 2), 2 * GiB);
	/* a peak seen raises the price, a quarter more (half in the tree) ... */
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 0, 2 * GiB, NULL, 0), 2560 * MiB);
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 1, 2 * GiB, NULL, 0), 3 * GiB);
	/* ... but never lowers it: a version probe's or a binding's small peak says nothing of
	 * the kernels beside it (a flash-attn build started all seven at once that way) */
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 0, 10 * MiB, NULL, 0), GiB);
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 1, 400 * MiB, NULL, 0), 2 * GiB);
	assert_int_equal(admit_unknown_need(4 * GiB, 4 * GiB, 0, 819 * MiB, NULL, 0), GiB);
	/* the room is the budget, or less when the machine's other processes hold part of it:
	 * 3 GiB free and nothing running gives a quarter of 3 GiB; what jobs hold counts as
	 * room they already have */
	assert_int_equal(admit_unknown_need(4 * GiB, 3 * GiB, 0, 0, NULL, 0), 768 * MiB);
	j[1].current_bytes = GiB;
	assert_int_equal(admit_unknown_need(4 * GiB, 2 * GiB, 0, 0, &j[1], 1), 768 * MiB);
	assert_int_equal(admit_unknown_need(4 * GiB, 8 * GiB, 0, 0, &j[1], 1), GiB);
}

/* The ramp: unknown jobs start while real free memory, less what the unknown jobs
 * already running may still grow by, leaves room for one more. */
static void test_ramp(void **state)
{
	struct admit_job j[8];
	struct admit_snapshot s = { .budget_bytes = 4 * GiB, .free_bytes = 4 * GiB, .jobs = j };
	struct admit_result r;
	int started = 0;

	(void)state;
	/* before any peak is seen: a quarter each, so four start, not five */
	s.unknown_bytes = admit_unknown_need(s.budget_bytes, 4 * GiB, 0, 0, NULL, 0);
	for (;;) {
		admit_decide(&s, NULL, 0, &r);
		if (!r.admit)
			break;
		j[s.njobs++] = (struct admit_job){ 0, NULL, 0, 0, 0, 0, 0 };
		started++;
	}
	assert_int_equal(started, 4);
	/* other processes hold 300 MiB of the budget: still four, each priced at a quarter of
	 * what is left, where a quarter of the budget would let only three in */
	s.njobs = 0;
	s.free_bytes = 4 * GiB - 300 * MiB;
	s.unknown_bytes = admit_unknown_need(s.budget_bytes, s.free_bytes, 0, 0, NULL, 0);
	for (started = 0;; started++) {
		admit_decide(&s, NULL, 0, &r);
		if (!r.admit)
			break;
		j[s.njobs++] = (struct admit_job){ 0, NULL, 0, 0, 0, 0, 0 };
	}
	assert_int_equal(started, 4);
	s.free_bytes = 4 * GiB;
	/* a job of another class passed a 300 MiB peak: the price stays; two running unknown
	 * jobs hold 100 MiB each and may grow to it, and free memory is what decides */
	s.njobs = 2;
	j[0] = (struct admit_job){ 5000, NULL, 100 * MiB, 0, 0, 0, 0 };
	j[1] = (struct admit_job){ 5000, NULL, 100 * MiB, 0, 0, 0, 0 };
	s.unknown_bytes = admit_unknown_need(s.budget_bytes, 4 * GiB, 0, 300 * MiB, j, 2);
	assert_int_equal(s.unknown_bytes, GiB);
	/* growth 2 x 924 + 1024 = 2872 MiB */
	s.free_bytes = 2872 * MiB;
	admit_decide(&s, NULL, 0, &r);
	assert_true(r.admit);
	s.free_bytes = 2871 * MiB;
	admit_decide(&s, NULL, 0, &r);
	assert_false(r.admit);
	/* one of them grows past half the price: it may double, and so may the next */
	j[0].current_bytes = 1536 * MiB;
	assert_int_equal(admit_unknown_need(s.budget_bytes, 4 * GiB, 0, 300 * MiB, j, s.njobs), 3 * GiB);
}

/* Samples of a job: rss_at(t) every 100 ms up to elapsed_ms. */
static size_t sampled(struct curve_sample *out, int64_t elapsed_ms, uint64_t (*rss_at)(int64_t))
{
	size_t n = 0;

	for (int64_t t = 0; t <= elapsed_ms; t += 100)
		out[n++] = (struct curve_sample){ t, rss_at(t) };
	return n;
}

/* One peak: up to 1 GiB at 3 s, down to 300 MiB from 4 s. */
static uint64_t one_peak(int64_t t)
{
	if (t <= 3000)
		return 10 * MiB + (GiB - 10 * MiB) * (uint64_t)t / 3000;
	return t < 4000 ? 600 * MiB : 300 * MiB;
}

/* Two peaks (a cicc + ptxas per -gencode): 1 GiB at 2 s, 200 MiB from 2.5 s to 4 s,
 * 1 GiB again at 5 s. */
static uint64_t two_peaks(int64_t t)
{
	if (t <= 2000)
		return 10 * MiB + (GiB - 10 * MiB) * (uint64_t)t / 2000;
	if (t < 2500 || (t >= 4000 && t < 5500))
		return t < 4000 ? 700 * MiB : (t < 5000 ? 600 * MiB : GiB);
	return 200 * MiB;
}

static uint64_t small_peak(int64_t t)
{
	return t < 1000 ? 200 * MiB : 50 * MiB;
}

static uint64_t tiny(int64_t t)
{
	return t < 500 ? 20 * MiB : MiB;
}

/* A long rise, as cicc's: up to 2 GiB at 40 s, then 500 MiB (ptxas) to the end. */
static uint64_t long_rise(int64_t t)
{
	if (t <= 40000)
		return 10 * MiB + (2 * GiB - 10 * MiB) * (uint64_t)t / 40000;
	return 500 * MiB;
}

/* After a long rise the valley is confirmed after a quarter of the rise (10 s), not after
 * the whole rise; a job expected to peak twice has not passed after its first. */
static void test_passed_peak_timing(void **state)
{
	static struct curve_sample sm[1000];
	struct admit_obs o = { sm, 0, 0, 1 };

	(void)state;
	o.nsamples = sampled(sm, 49000, long_rise);
	o.elapsed_ms = 49000;
	assert_false(admit_passed_peak(&o));
	o.nsamples = sampled(sm, 51000, long_rise);
	o.elapsed_ms = 51000;
	assert_true(admit_passed_peak(&o));
	/* a rise shorter than 5 s is confirmed after 5 s all the same (a start-up bump rises
	 * for a second or two): one_peak rose for 3 s and held half its peak or more until
	 * 3.9 s */
	o.nsamples = sampled(sm, 8800, one_peak);
	o.elapsed_ms = 8800;
	assert_false(admit_passed_peak(&o));
	o.nsamples = sampled(sm, 9000, one_peak);
	o.elapsed_ms = 9000;
	assert_true(admit_passed_peak(&o));
	/* expected to peak twice (two -gencode passes, one thread): one peak is not enough */
	o.peaks = 2;
	o.nsamples = sampled(sm, 51000, long_rise);
	o.elapsed_ms = 51000;
	assert_false(admit_passed_peak(&o));
	o.nsamples = sampled(sm, 4000, two_peaks);
	o.elapsed_ms = 4000;
	assert_false(admit_passed_peak(&o));
	/* after its second fall (at 5.5 s), once its valley lasted 5 s: passed */
	o.nsamples = sampled(sm, 10300, two_peaks);
	o.elapsed_ms = 10300;
	assert_false(admit_passed_peak(&o));
	o.nsamples = sampled(sm, 10500, two_peaks);
	o.elapsed_ms = 10500;
	assert_true(admit_passed_peak(&o));
}

static void test_passed_peak(void **state)
{
	static struct curve_sample sm[200];
	struct admit_obs o = { sm, 0, 0, 1 };

	(void)state;
	/* fell at 4 s: 3 s low, as long as its rise, is not yet the 5 s the least confirmation */
	o.nsamples = sampled(sm, 7100, one_peak);
	o.elapsed_ms = 7100;
	assert_false(admit_passed_peak(&o));
	/* low from 4 s to 9 s: passed */
	o.nsamples = sampled(sm, 9000, one_peak);
	o.elapsed_ms = 9000;
	assert_true(admit_passed_peak(&o));
	/* still rising */
	o.nsamples = sampled(sm, 2500, one_peak);
	o.elapsed_ms = 2500;
	assert_false(admit_passed_peak(&o));
	/* two peaks: the valley after the first is shorter than the rise, so it is not taken
	 * for the end of the job's growth */
	o.nsamples = sampled(sm, 4000, two_peaks);
	o.elapsed_ms = 4000;
	assert_false(admit_passed_peak(&o));
	/* and once it rises again, it has not passed anything */
	o.nsamples = sampled(sm, 5000, two_peaks);
	o.elapsed_ms = 5000;
	assert_false(admit_passed_peak(&o));
	/* a maximum under 32 MiB is noise */
	o.nsamples = sampled(sm, 10000, tiny);
	o.elapsed_ms = 10000;
	assert_false(admit_passed_peak(&o));
}

/* nvcc's start: its preprocessing rises to 200 MiB in half a second and falls before cicc
 * starts its long rise. */
static uint64_t startup_bump(int64_t t)
{
	if (t <= 500)
		return 40 * MiB + 160 * MiB * (uint64_t)t / 500;
	if (t < 1500)
		return 30 * MiB;
	return 30 * MiB + 100 * MiB * (uint64_t)(t - 1500) / 1000;
}

/* The bump is not the job's peak: taken for one, it made a provisional profile of 200 MiB
 * for a class of 5 GiB kernels, and every waiting kernel was let in at once. */
static void test_passed_peak_startup_bump(void **state)
{
	static struct curve_sample sm[200];
	struct admit_obs o = { sm, 0, 0, 1 };

	(void)state;
	for (int64_t t = 1000; t <= 1400; t += 100) {
		o.nsamples = sampled(sm, t, startup_bump);
		o.elapsed_ms = t;
		assert_false(admit_passed_peak(&o));
	}
	/* and once the job rises again past half the bump, it has passed nothing */
	o.nsamples = sampled(sm, 8000, startup_bump);
	o.elapsed_ms = 8000;
	assert_false(admit_passed_peak(&o));
}

/* A build stalled on its frozen jobs is thawed while the runners barely grow. */
static void test_thaw_stalled(void **state)
{
	(void)state;
	/* runners flat, 1 GiB free above the reserve, the frozen job grew 200 MiB per lookahead */
	assert_true(net_thaw_stalled(0, 200 * MiB, GiB + 512 * MiB, 512 * MiB));
	/* runners growing by more than a quarter of the room: they may need it */
	assert_false(net_thaw_stalled(300 * MiB, 0, GiB + 512 * MiB, 512 * MiB));
	assert_true(net_thaw_stalled(256 * MiB, 0, GiB + 512 * MiB, 512 * MiB));
	/* the frozen job's own growth and theirs past half the room */
	assert_false(net_thaw_stalled(100 * MiB, 425 * MiB, GiB + 512 * MiB, 512 * MiB));
	assert_true(net_thaw_stalled(100 * MiB, 412 * MiB, GiB + 512 * MiB, 512 * MiB));
	/* inside the reserve: never */
	assert_false(net_thaw_stalled(0, 0, 512 * MiB, 512 * MiB));
	assert_false(net_thaw_stalled(0, 0, 100 * MiB, 512 * MiB));
}

/* A stall no thaw breaks: a frozen job is requeued once it has waited as long as it ran
 * (waiting then costs more than redoing it), never twice, one kill at a time. */
static void test_requeue_frozen(void **state)
{
	(void)state;
	/* ran 30 s, frozen 20 s: waiting is still cheaper than redoing it */
	assert_false(net_requeue_frozen(20000, 30000, 0, 60000));
	/* frozen as long as it ran */
	assert_true(net_requeue_frozen(30000, 30000, 0, 60000));
	assert_true(net_requeue_frozen(40000, 30000, 0, 60000));
	/* a job frozen just after it started: not for a passing peak of the others */
	assert_false(net_requeue_frozen(STALL_REQUEUE_MIN_MS - 1, 2000, 0, 60000));
	assert_true(net_requeue_frozen(STALL_REQUEUE_MIN_MS, 2000, 0, 60000));
	/* killed once already: it waits, never killed twice */
	assert_false(net_requeue_frozen(90000, 30000, 1, 60000));
	/* one kill at a time */
	assert_false(net_requeue_frozen(40000, 30000, 0, 0));
}

static void test_provisional(void **state)
{
	static struct curve_sample a[200], b[200], c2[200];
	struct admit_obs o[2];
	int passed[2] = { 1, 0 };
	struct curve c;

	(void)state;
	/* nothing passed its peak: no profile */
	o[0] = (struct admit_obs){ a, sampled(a, 3000, one_peak), 3000, 1 };
	passed[0] = 0;
	assert_int_equal(admit_provisional(o, passed, 1, &c), 0);
	/* one passed: its curve so far, over its life so far */
	o[0] = (struct admit_obs){ a, sampled(a, 8000, one_peak), 8000, 1 };
	passed[0] = 1;
	assert_int_equal(admit_provisional(o, passed, 1, &c), 1);
	assert_int_equal(c.duration_ms, 8000);
	assert_int_equal(c.peak_bytes, GiB);
	assert_int_equal(curve_at(&c, 7900), 300 * MiB);
	assert_true(curve_at(&c, 1000) < GiB / 2);
	/* a class whose first job is its smallest: the first to pass its peak took 200 MiB,
	 * but another of the class, still rising, already holds 1 GiB. The profile is scaled
	 * to it, and a new job is predicted at 1 GiB, not at 200 MiB. */
	o[0] = (struct admit_obs){ a, sampled(a, 6000, small_peak), 6000, 1 };
	o[1] = (struct admit_obs){ b, sampled(b, 3000, one_peak), 3000, 1 };
	passed[0] = 1;
	passed[1] = 0;
	assert_true(admit_passed_peak(&o[0]));
	assert_false(admit_passed_peak(&o[1]));
	assert_int_equal(admit_provisional(o, passed, 2, &c), 1);
	assert_true(c.peak_bytes >= GiB - MiB);
	struct admit_snapshot s = { .budget_bytes = 4 * GiB, .free_bytes = 4 * GiB, .unknown_bytes = GiB };
	struct admit_result r;
	admit_decide(&s, &c, 0, &r);
	assert_true(r.worst_bytes >= GiB - MiB);
	/* later peaks are kept: a job taken as past its peak that rises again (its flag is
	 * kept by the caller) adds the new peak to the profile, in its place in time */
	o[0] = (struct admit_obs){ c2, sampled(c2, 6000, two_peaks), 6000, 1 };
	passed[0] = 1;
	assert_int_equal(admit_provisional(o, passed, 1, &c), 1);
	assert_int_equal(curve_at(&c, 5200), GiB);
	assert_int_equal(curve_at(&c, 3000), 200 * MiB);
}

/* A request is answered on arrival while the jobs would need at most half the budget at
 * their peaks; past that it waits for the tick, when a burst is sorted longest first. */
static void test_at_once(void **state)
{
	struct curve big, small;
	struct admit_job j[4];
	struct admit_snapshot s = { .budget_bytes = 8 * GiB, .free_bytes = 8 * GiB, .unknown_bytes = 2 * GiB, .jobs = j };

	(void)state;
	flat(&big, 100000, 3 * GiB);
	flat(&small, 1000, 10 * MiB);
	/* a job known to run long waits for the tick, however much room there is: the
	 * longer ones of its burst may be a few milliseconds behind it */
	assert_false(admit_at_once(&s, &big));
	assert_true(admit_at_once(&s, NULL)); /* unknown: its price, 2 GiB */
	j[s.njobs++] = (struct admit_job){ 0, &big, 0, 0, 0, 0, 0 };
	assert_true(admit_at_once(&s, &small));  /* 3 GiB + 10 MiB */
	assert_false(admit_at_once(&s, NULL));   /* 3 + 2 GiB: past half of 8 */
	s.budget_bytes = 10 * GiB;
	assert_true(admit_at_once(&s, NULL));    /* 5 GiB of 10: at once */
	s.budget_bytes = 8 * GiB;
	/* a running job that holds more than its prediction counts what it holds */
	s.njobs = 1;
	j[0].current_bytes = 4 * GiB;
	assert_false(admit_at_once(&s, &small));
	/* a build of tiny jobs never waits for the tick */
	s.njobs = 0;
	for (int i = 0; i < 4; i++)
		j[s.njobs++] = (struct admit_job){ 0, &small, 0, 0, 0, 0, 0 };
	assert_true(admit_at_once(&s, &small));
}

static void test_order(void **state)
{
	struct admit_wait w[5] = {
		{ 5000, 3, 0 }, { -1, 4, 1 }, { 20000, 5, 2 }, { 5000, 1, 3 }, { 100, 2, 4 },
	};
	struct admit_wait v[5];

	(void)state;
	memcpy(v, w, sizeof(v));
	admit_order(w, 5, -1);
	/* before any job ended: unknown first, then the longest; ties in arrival order */
	assert_int_equal(w[0].idx, 1);
	assert_int_equal(w[1].idx, 2);
	assert_int_equal(w[2].idx, 3);
	assert_int_equal(w[3].idx, 0);
	assert_int_equal(w[4].idx, 4);
	/* once jobs of the build ended, the longest after 6 s: the unknown job is taken to be
	 * as long, after the 20 s class, before the 5 s ones */
	admit_order(v, 5, 6000);
	assert_int_equal(v[0].idx, 2);
	assert_int_equal(v[1].idx, 1);
	assert_int_equal(v[2].idx, 3);
	assert_int_equal(v[3].idx, 0);
	assert_int_equal(v[4].idx, 4);
}

/* Longest first, and the room it cannot use goes to smaller ones: a 2 GiB job runs in a
 * 4 GiB budget; waiting are a long 3 GiB job and two short 1 GiB ones. */
static void test_longest_first_fill(void **state)
{
	struct curve run, big, small;
	struct admit_job j[4];
	struct admit_snapshot s = { .budget_bytes = 4 * GiB, .free_bytes = 4 * GiB, .unknown_bytes = GiB, .jobs = j };
	struct admit_wait w[3];
	const struct curve *pred[3] = { &small, &big, &small };
	int admitted[3] = { 0 };

	(void)state;
	flat(&run, 60000, 2 * GiB);
	flat(&big, 50000, 3 * GiB);
	flat(&small, 5000, GiB);
	j[s.njobs++] = (struct admit_job){ 1000, &run, 2 * GiB, 0, 0, 0, 0 };
	for (size_t i = 0; i < 3; i++)
		w[i] = (struct admit_wait){ pred[i]->duration_ms, (int64_t)i, i };
	admit_order(w, 3, -1);
	assert_int_equal(w[0].idx, 1); /* the long one is tried first */
	for (size_t k = 0; k < 3; k++) {
		struct admit_result r;
		admit_decide(&s, pred[w[k].idx], 0, &r);
		if (!r.admit)
			continue;
		admitted[w[k].idx] = 1;
		j[s.njobs++] = (struct admit_job){ 0, pred[w[k].idx], 0, 0, 0, 0, 0 };
	}
	/* it does not fit (never admitted unsafely); both small ones fill the room */
	assert_false(admitted[1]);
	assert_true(admitted[0] && admitted[2]);
	/* with the 2 GiB job gone, the long one goes first and one small one fills */
	s.njobs = 0;
	memset(admitted, 0, sizeof(admitted));
	for (size_t k = 0; k < 3; k++) {
		struct admit_result r;
		admit_decide(&s, pred[w[k].idx], 0, &r);
		if (!r.admit)
			continue;
		admitted[w[k].idx] = 1;
		j[s.njobs++] = (struct admit_job){ 0, pred[w[k].idx], 0, 0, 0, 0, 0 };
	}
	assert_true(admitted[1]);
	assert_int_equal(admitted[0] + admitted[2], 1);
}

/* The recommendation replays the observed curves N at a time in their order. */
static void test_recommendation(void **state)
{
	static struct curve c[12];
	const struct curve *v[12];

	(void)state;
	/* twelve jobs that peak at 1 GiB 30 % in, then hold a third; lengths 6..17 s */
	for (int i = 0; i < 12; i++) {
		shape(&c[i], 6000 + 1000 * i, GiB, 30);
		v[i] = &c[i];
	}
	/* one at a time: its own peak */
	assert_int_equal(admit_replay_peak(v, 12, 1), GiB);
	/* the peak grows with N, never above N peaks */
	uint64_t prev = 0;
	for (int n = 1; n <= 12; n++) {
		uint64_t p = admit_replay_peak(v, 12, n);
		assert_true(p >= prev);
		assert_true(p <= (uint64_t)n * GiB);
		prev = p;
	}
	/* wall time: list scheduling; one slot is the sum, twelve the longest */
	int64_t sum = 0;
	for (int i = 0; i < 12; i++)
		sum += 6000 + 1000 * i;
	assert_int_equal(admit_replay_wall_ms(v, 12, 1), sum);
	assert_int_equal(admit_replay_wall_ms(v, 12, 12), 17000);
	assert_int_equal(admit_replay_wall_ms(v, 12, 99), 17000);
	/* two slots: 6,8,10,12,14,16 on one (66 s), 7,9,...,17 on the other (72 s) */
	assert_int_equal(admit_replay_wall_ms(v, 12, 2), 72000);
	assert_int_equal(admit_replay_wall_ms(v, 0, 2), 0);
	/* the recommended N fits and N + 1 does not */
	uint64_t budget = 3 * GiB + 512 * MiB;
	int n = admit_safe_fixed_jobs(v, 12, budget);
	assert_true(n >= 3); /* what "every job peaking at once" would allow */
	assert_true(admit_replay_peak(v, 12, n) <= budget);
	assert_true(admit_replay_peak(v, 12, n + 1) > budget);
	/* peaks that do not coincide let more run than peaks summed: staggered starts */
	static struct curve late[4];
	const struct curve *lv[4];
	for (int i = 0; i < 4; i++) {
		/* 100 MiB with a 1 GiB peak in its own eighth of the job (a cicc, say) */
		flat(&late[i], 10000, 100 * MiB);
		for (int k = 0; k < CURVE_POINTS / 8; k++)
			late[i].pts[i * CURVE_POINTS / 4 + k] = GiB;
		curve_update_peak(&late[i]);
		lv[i] = &late[i];
	}
	assert_int_equal(admit_safe_fixed_jobs(lv, 4, 2 * GiB), 4);
	assert_true(admit_replay_peak(lv, 4, 4) <= 2 * GiB);
	/* everything at once fits: all of them; nothing fits: still one; none: 0 */
	assert_int_equal(admit_safe_fixed_jobs(v, 12, 64 * GiB), 12);
	assert_int_equal(admit_safe_fixed_jobs(v, 12, GiB / 2), 1);
	assert_int_equal(admit_safe_fixed_jobs(v, 0, GiB), 0);
}

static void test_compile_job(void **state)
{
	(void)state;
	assert_true(admit_is_compile_job("nvcc", 1, 90000, 3 * GiB));
	assert_true(admit_is_compile_job("/usr/bin/c++", 1, 2000, 200 * MiB));
	/* a version probe: no source, or trivial */
	assert_false(admit_is_compile_job("c++", 0, 2000, 200 * MiB));
	assert_false(admit_is_compile_job("c++", 1, 30, 2 * MiB));
	assert_false(admit_is_compile_job("nvcc", 1, 5000, 10 * MiB));
	/* links */
	assert_false(admit_is_compile_job("/usr/bin/ld", 1, 5000, GiB));
	assert_false(admit_is_compile_job("collect2", 1, 5000, GiB));
	assert_false(admit_is_compile_job("nvlink", 1, 5000, GiB));
}

static void test_thaw_need(void **state)
{
	struct curve c, drop;
	struct admit_job j = { .elapsed_ms = 1000, .pred = &c, .current_bytes = 400 * MiB, .frozen = 1 };

	(void)state;
	flat(&c, 10000, GiB);
	/* it will grow to its prediction: the frozen flag is no reason to expect less */
	assert_int_equal(admit_thaw_need(&j, 0), GiB - 400 * MiB);
	/* unknown: it may grow to the assumed need */
	j.pred = NULL;
	j.current_bytes = 300 * MiB;
	assert_int_equal(admit_thaw_need(&j, GiB), GiB - 300 * MiB);
	j.current_bytes = 2 * GiB; /* already above it: nothing more */
	assert_int_equal(admit_thaw_need(&j, GiB), 0);
	/* past its peak: its rest is lower than what it holds */
	flat(&drop, 10000, 200 * MiB);
	for (int i = 0; i < CURVE_POINTS / 2; i++)
		drop.pts[i] = GiB;
	curve_update_peak(&drop);
	j = (struct admit_job){ .elapsed_ms = 6000, .pred = &drop, .current_bytes = 200 * MiB, .frozen = 1 };
	assert_int_equal(admit_thaw_need(&j, GiB), 0);
	j.elapsed_ms = 1000; /* before it: up to the peak */
	assert_int_equal(admit_thaw_need(&j, GiB), GiB - 200 * MiB);
}

static void test_thaw_fits(void **state)
{
	(void)state;
	/* free above the reserve 768 MiB; budget room 1 GiB */
	assert_true(admit_thaw_fits(500 * MiB, GiB, 256 * MiB, GiB, 2 * GiB));
	assert_true(admit_thaw_fits(768 * MiB, GiB, 256 * MiB, GiB, 2 * GiB));
	assert_false(admit_thaw_fits(769 * MiB, GiB, 256 * MiB, GiB, 2 * GiB));
	/* inside the reserve: not even a job that needs nothing more */
	assert_false(admit_thaw_fits(0, 200 * MiB, 256 * MiB, 0, 2 * GiB));
	/* free memory, but the jobs would pass their budget */
	assert_false(admit_thaw_fits(500 * MiB, 4 * GiB, 256 * MiB, 1600 * MiB, 2 * GiB));
	assert_true(admit_thaw_fits(400 * MiB, 4 * GiB, 256 * MiB, 1600 * MiB, 2 * GiB));
}

static void test_tokens(void **state)
{
	struct curve c, small;
	struct admit_job run[1];
	struct admit_snapshot s = { .budget_bytes = 4 * GiB, .free_bytes = 4 * GiB, .unknown_bytes = GiB };

	(void)state;
	flat(&c, 10000, GiB);
	/* four 1 GiB jobs fit in 4 GiB; with nothing running the tool's own slot starts one */
	assert_int_equal(admit_tokens(&s, &c, 0, 8, 0), 3);
	assert_int_equal(admit_tokens(&s, &c, 1, 8, 0), 4);
	/* the CPU cap counts the running jobs */
	assert_int_equal(admit_tokens(&s, &c, 1, 3, 0), 2);
	assert_int_equal(admit_tokens(&s, &c, 3, 3, 0), 0);
	/* a job found already waits for memory: no token */
	assert_int_equal(admit_tokens(&s, &c, 1, 8, 1), 0);
	/* a running job's predicted memory takes its room */
	run[0] = (struct admit_job){ 5000, &c, GiB, 0, 0, 0, 0 };
	s.jobs = run;
	s.njobs = 1;
	assert_int_equal(admit_tokens(&s, &c, 1, 8, 0), 3);
	/* free memory bounds what the tokens' jobs may add to what the jobs hold now */
	s.free_bytes = 2 * GiB + GiB / 2;
	assert_int_equal(admit_tokens(&s, &c, 1, 8, 0), 2);
	s.free_bytes = 4 * GiB;
	s.njobs = 0;
	/* unknown shape: priced at the unknown need */
	s.unknown_bytes = 2 * GiB;
	assert_int_equal(admit_tokens(&s, NULL, 1, 8, 0), 2);
	/* small jobs under a huge cap: memory, then the cap, decides */
	flat(&small, 1000, MiB);
	assert_int_equal(admit_tokens(&s, &small, 1, 100000, 0), 4096);
	assert_int_equal(admit_tokens(&s, &small, 1, 3000, 0), 2999);
	/* nothing fits, nothing runs: still one job, and it needs no token */
	s.budget_bytes = 512 * MiB;
	assert_int_equal(admit_tokens(&s, &c, 0, 8, 0), 0);
}

/* The tokens are what admit_decide() gives, one job like next after another. */
static int tokens_one_by_one(struct admit_snapshot *s, struct admit_job *room, const struct curve *next,
			     int running, int jobs_cap)
{
	struct admit_result r;
	int want = 0;

	while (running + want < jobs_cap) {
		admit_decide(s, next, 0, &r);
		if (!r.admit && s->njobs > 0)
			break;
		room[s->njobs++] = (struct admit_job){ 0, next, 0, 0, 0, 0, 0 };
		want++;
	}
	return running == 0 && want > 0 ? want - 1 : want;
}

static void test_tokens_match_admit_decide(void **state)
{
	struct curve curves[4];
	struct admit_job room[64];
	unsigned seed = 11;

	(void)state;
	shape(&curves[0], 10000, 700 * MiB, 30);
	shape(&curves[1], 3000, 300 * MiB, 80);
	flat(&curves[2], 20000, 150 * MiB);
	shape(&curves[3], 90000, 2 * GiB, 20);
	for (int round = 0; round < 300; round++) {
		struct admit_snapshot s = { .jobs = room };
		int cap, running = 0, pick;
		size_t n;
		const struct curve *next;

		s.budget_bytes = (uint64_t)(1 + rand_r(&seed) % 16) * GiB / 2;
		s.free_bytes = (uint64_t)(rand_r(&seed) % 8192) * MiB;
		s.unknown_bytes = (uint64_t)(64 + rand_r(&seed) % 1024) * MiB;
		n = (size_t)(rand_r(&seed) % 6);
		cap = 1 + rand_r(&seed) % 40;
		pick = rand_r(&seed) % 5;
		next = pick < 4 ? &curves[pick] : NULL;
		for (size_t i = 0; i < n; i++) {
			struct admit_job *j = &room[i];
			pick = rand_r(&seed) % 5;
			j->pred = pick < 4 ? &curves[pick] : NULL;
			j->elapsed_ms = rand_r(&seed) % (j->pred ? (int)j->pred->duration_ms * 2 : 5000);
			j->current_bytes = (uint64_t)(rand_r(&seed) % 1024) * MiB;
			j->frozen = rand_r(&seed) % 6 == 0;
			running += !j->frozen;
		}
		s.njobs = n;
		int fast = admit_tokens(&s, next, running, cap, 0);
		assert_int_equal(fast, tokens_one_by_one(&s, room, next, running, cap));
	}
}

static void test_net_budget(void **state)
{
	(void)state;
	assert_int_equal(net_apply_budget(NET_OK, 3 * GiB, 2 * GiB), NET_FREEZE);
	assert_int_equal(net_apply_budget(NET_OK, 2 * GiB, 2 * GiB), NET_OK);
	assert_int_equal(net_apply_budget(NET_HOLD, 3 * GiB, 2 * GiB), NET_HOLD);
	assert_int_equal(net_apply_budget(NET_KILL, 3 * GiB, 2 * GiB), NET_KILL);
	assert_int_equal(net_apply_budget(NET_KILL, 0, 2 * GiB), NET_KILL);
}

static void test_net_freeze_done(void **state)
{
	(void)state;
	assert_int_equal(net_lookahead_growth(2000), 1000);
	assert_int_equal(net_lookahead_growth(1999), 500); /* whole kB/ms */
	/* never the last runner */
	assert_true(net_freeze_done(0, 1, 8 * GiB, 0, 512 * MiB));
	/* at least one, even when the growth already fits */
	assert_false(net_freeze_done(0, 3, 0, GiB, 512 * MiB));
	/* then until the growth fits above half the reserve: 1 GiB - 256 MiB */
	assert_true(net_freeze_done(1, 2, 768 * MiB, GiB, 512 * MiB));
	assert_false(net_freeze_done(1, 2, 768 * MiB + 1, GiB, 512 * MiB));
	assert_false(net_freeze_done(2, 3, 1, 100 * MiB, 512 * MiB));
	assert_true(net_freeze_done(2, 3, 0, 100 * MiB, 512 * MiB));
}

/* A small world: jobs follow their real curve (not their prediction) while running,
 * stand still while frozen, and the policy decides each 100 ms tick. Predictions are
 * four times too low; the safety net must keep real memory under the limit, and every
 * job must finish. */
#define SIM_JOBS 12
static void test_safety_net_catches_wrong_predictions(void **state)
{
	struct curve real, pred;
	struct { int state; int64_t progress_ms; int frozen; } job[SIM_JOBS] = { 0 }; /* 0 wait 1 run 2 done */
	uint64_t limit = 3 * GiB, reserve = net_default_reserve(limit), max_used = 0;
	int64_t last_kill = -100000, t;
	uint64_t used_prev = 0;
	int done = 0, kills = 0, freezes = 0;

	(void)state;
	shape(&real, 8000, 900 * MiB, 30);
	shape(&pred, 8000, 225 * MiB, 30);
	for (t = 0; t < 600000 && done < SIM_JOBS; t += 100) {
		struct admit_job aj[SIM_JOBS];
		size_t n = 0;
		uint64_t used = 0;
		int running = 0, youngest = -1;

		for (int i = 0; i < SIM_JOBS; i++) {
			if (job[i].state != 1)
				continue;
			if (!job[i].frozen)
				job[i].progress_ms += 100;
			if (job[i].progress_ms >= real.duration_ms) {
				job[i].state = 2;
				done++;
				continue;
			}
			uint64_t cur = curve_at(&real, job[i].progress_ms);
			used += cur;
			aj[n++] = (struct admit_job){ job[i].progress_ms, &pred, cur, job[i].frozen, 0, 0, 0 };
			running += !job[i].frozen;
			youngest = i;
		}
		if (used > max_used)
			max_used = used;
		struct net_state ns = { limit, used, reserve, -1, t - last_kill,
					used > used_prev ? (used - used_prev) * 10 : 0 };
		used_prev = used;
		enum net_action a = net_decide(&ns);
		if (a == NET_KILL && youngest >= 0 && n > 1) {
			memset(&job[youngest], 0, sizeof(job[youngest])); /* requeued: starts over */
			last_kill = t;
			kills++;
			continue;
		}
		if (a == NET_FREEZE) {
			for (int i = SIM_JOBS - 1; i >= 0; i--)
				if (job[i].state == 1 && !job[i].frozen && running > 1) {
					job[i].frozen = 1;
					freezes++;
					break;
				}
			continue;
		}
		if (a != NET_OK)
			continue;
		for (int i = 0; i < SIM_JOBS; i++) /* thaw the oldest first */
			if (job[i].state == 1 && job[i].frozen) {
				job[i].frozen = 0;
				break;
			}
		struct admit_snapshot s = { limit - reserve, limit - reserve - used, 256 * MiB, aj, n };
		for (int i = 0; i < SIM_JOBS && running < 16; i++) {
			struct admit_result r;
			if (job[i].state != 0)
				continue;
			admit_decide(&s, &pred, 0, &r);
			if (r.admit || n == 0) {
				job[i].state = 1;
				aj[s.njobs++] = (struct admit_job){ 0, &pred, 0, 0, 0, 0, 0 };
				running++;
			}
			break; /* one start per tick: starting jobs show no memory yet */
		}
	}
	print_message("sim: %d done, max used %llu MiB of %llu, %d freezes, %d kills, %lld ms\n", done,
		      (unsigned long long)(max_used / MiB), (unsigned long long)(limit / MiB), freezes, kills,
		      (long long)t);
	assert_int_equal(done, SIM_JOBS);
	assert_true(max_used <= limit);
	assert_true(freezes + kills > 0); /* the net had to act: predictions were wrong */
}

static void test_class_pick(void **state)
{
	const uint64_t peaks[] = { 50, 10, 40, 20, 30 };
	const uint64_t same[] = { 7, 7, 7, 7 };
	const uint64_t one[] = { 9 };

	(void)state;
	/* (5 - 1) x 75 % = the fourth smallest: 40, at index 2 */
	assert_int_equal(admit_class_pick(peaks, 5), 2);
	assert_int_equal(admit_class_pick(same, 4), 2);
	assert_int_equal(admit_class_pick(one, 1), 0);
	assert_int_equal(admit_class_pick(NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admit_empty),
		cmocka_unit_test(test_admit_aligned_peaks),
		cmocka_unit_test(test_admit_own_profile_closer),
		cmocka_unit_test(test_admit_staggered),
		cmocka_unit_test(test_admit_open_tails_own_level),
		cmocka_unit_test(test_admit_free_memory),
		cmocka_unit_test(test_admit_wrong_prediction_scales),
		cmocka_unit_test(test_admit_unknown),
		cmocka_unit_test(test_net),
		cmocka_unit_test(test_unknown_need),
		cmocka_unit_test(test_ramp),
		cmocka_unit_test(test_net_big_reserve),
		cmocka_unit_test(test_passed_peak),
		cmocka_unit_test(test_passed_peak_timing),
		cmocka_unit_test(test_passed_peak_startup_bump),
		cmocka_unit_test(test_thaw_stalled),
		cmocka_unit_test(test_requeue_frozen),
		cmocka_unit_test(test_provisional),
		cmocka_unit_test(test_at_once),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_longest_first_fill),
		cmocka_unit_test(test_recommendation),
		cmocka_unit_test(test_compile_job),
		cmocka_unit_test(test_thaw_need),
		cmocka_unit_test(test_thaw_fits),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_tokens_match_admit_decide),
		cmocka_unit_test(test_admit_class_longest_last),
		cmocka_unit_test(test_admit_open_peaks_align),
		cmocka_unit_test(test_admit_last_job_early),
		cmocka_unit_test(test_net_budget),
		cmocka_unit_test(test_net_freeze_done),
		cmocka_unit_test(test_safety_net_catches_wrong_predictions),
		cmocka_unit_test(test_class_pick),
	};
	return cmocka_run_group_tests_name("admit", tests, NULL, NULL);
}
