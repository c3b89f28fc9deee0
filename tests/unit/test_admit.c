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
	admit_decide(&s, &c, &r);
	assert_true(r.admit);
	assert_int_equal(r.worst_bytes, GiB);
	/* larger than the budget: refused (the governor still runs it when nothing else runs) */
	shape(&c, 10000, 5 * GiB, 30);
	admit_decide(&s, &c, &r);
	assert_false(r.admit);
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
	admit_decide(&s, &c, &r);
	assert_false(r.admit);
	assert_true(r.worst_bytes >= 4 * GiB - 40 * MiB);
	assert_true(r.worst_at_ms > 2000 && r.worst_at_ms < 4000);
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
	admit_decide(&s, &c, &r);
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
	admit_decide(&s, &c, &r);
	assert_false(r.admit);
	s.free_bytes = 2 * GiB;
	admit_decide(&s, &c, &r);
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
	admit_decide(&s, &cand, &r);
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
	admit_decide(&s, NULL, &r);
	assert_false(r.admit);
	j.current_bytes = 300 * MiB;
	s.unknown_bytes = 512 * MiB;
	admit_decide(&s, NULL, &r);
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
	assert_int_equal(admit_unknown_need(4 * GiB, 0, NULL, 0), GiB);     /* a quarter */
	assert_int_equal(admit_unknown_need(4 * GiB, 1, NULL, 0), 2 * GiB); /* half in the tree */
	/* a known job is not counted, however large; a small unknown one changes nothing */
	assert_int_equal(admit_unknown_need(4 * GiB, 0, j, 2), GiB);
	/* an unknown job holding 1 GiB: one and a half of it */
	j[0].current_bytes = GiB;
	assert_int_equal(admit_unknown_need(4 * GiB, 0, j, 2), GiB + GiB / 2);
	assert_int_equal(admit_unknown_need(4 * GiB, 1, j, 2), 2 * GiB);
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
	run[0] = (struct admit_job){ 5000, &c, GiB, 0 };
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
		admit_decide(s, next, &r);
		if (!r.admit && s->njobs > 0)
			break;
		room[s->njobs++] = (struct admit_job){ 0, next, 0, 0 };
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
			aj[n++] = (struct admit_job){ job[i].progress_ms, &pred, cur, job[i].frozen };
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
			admit_decide(&s, &pred, &r);
			if (r.admit || n == 0) {
				job[i].state = 1;
				aj[s.njobs++] = (struct admit_job){ 0, &pred, 0, 0 };
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admit_empty),
		cmocka_unit_test(test_admit_aligned_peaks),
		cmocka_unit_test(test_admit_staggered),
		cmocka_unit_test(test_admit_free_memory),
		cmocka_unit_test(test_admit_wrong_prediction_scales),
		cmocka_unit_test(test_admit_unknown),
		cmocka_unit_test(test_net),
		cmocka_unit_test(test_unknown_need),
		cmocka_unit_test(test_thaw_need),
		cmocka_unit_test(test_thaw_fits),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_tokens_match_admit_decide),
		cmocka_unit_test(test_net_budget),
		cmocka_unit_test(test_net_freeze_done),
		cmocka_unit_test(test_safety_net_catches_wrong_predictions),
	};
	return cmocka_run_group_tests_name("admit", tests, NULL, NULL);
}
