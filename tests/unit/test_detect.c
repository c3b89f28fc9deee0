/* The watchdog's detectors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "watch/detect.h"

static void test_trend(void **state)
{
	(void)state;
	struct series s;

	memset(&s, 0, sizeof(s));
	/* 1 GiB a second from 10 GiB, sampled every 100 ms: 80 GiB is 69 s away */
	for (int i = 0; i <= 10; i++)
		series_add(&s, i * 100, 10.0 * (1 << 30) + i * 0.1 * (1 << 30));
	assert_true(series_slope_per_s(&s, 1000, 30000) > 0.99 * (1 << 30));
	double t = series_time_to(&s, 1000, 30000, 80.0 * (1 << 30), 1200);
	assert_true(t > 68.9 && t < 69.1);
	/* ... but not when that lies past the longest projection shown */
	assert_true(series_time_to(&s, 1000, 30000, 80.0 * (1 << 30), 60) < 0);
	/* flat or falling: no time to OOM */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 10; i++)
		series_add(&s, i * 100, 5e9 - i * 1e6);
	assert_true(series_time_to(&s, 900, 30000, 8e10, 1e9) < 0);
	/* too few points in the window: no trend */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 10; i++)
		series_add(&s, i * 1000, i * 1e9);
	assert_true(series_slope_per_s(&s, 9000, 2500) == 0);
	/* the ring keeps the last SERIES_POINTS */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 200; i++)
		series_add(&s, i, i);
	assert_int_equal(s.n, SERIES_POINTS);
}

/* Memory that only wobbles (60 GiB, then 4 MiB more, then back, ...) has no time to OOM,
 * however the window falls: its slope is not significant, and where it is (a wobble
 * caught at its rise) the projection lies far past any horizon. */
static void test_trend_wobble(void **state)
{
	(void)state;
	struct series s;
	const double gib = 1 << 30;

	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 400; i++) {
		series_add(&s, i * 100, 60 * gib + (i % 2) * 4.0 * (1 << 20));
		assert_true(series_time_to(&s, i * 100, 30000, 143 * gib, 1200) < 0);
	}
	/* flat at a large value: exactly no slope, however large the bytes */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 50; i++)
		series_add(&s, i * 100, 137438953472.0 + 12345);
	assert_true(series_slope_per_s(&s, 4900, 30000) == 0);
	assert_true(series_time_to(&s, 4900, 30000, 143 * gib, 1e12) < 0);
	/* a noisy plateau: no significant slope */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 100; i++)
		series_add(&s, i * 100, 60 * gib + (double)((i * 7919) % 13) * (1 << 20));
	assert_true(series_time_to(&s, 9900, 30000, 143 * gib, 1e12) < 0);
}

/* Growth in 8 GiB steps every 2 s on a 143 GiB GPU, sampled every 100 ms, as a rank that
 * allocates until CUDA's OOM: the steps give the time to the step that no longer fits,
 * and the warning (within a 120 s horizon) comes after the second step, long before
 * that one; a line fitted to the staircase would still say over a minute at the end. */
static void test_trend_steps(void **state)
{
	(void)state;
	struct series s;
	const double gib = 1 << 30, cap = 143 * gib;
	double first_warning_used = -1, t_before_last = -1;

	memset(&s, 0, sizeof(s));
	/* steps at 2 s, 4 s, ... up to 136 GiB (the 18th would not fit) */
	for (int i = 0; i <= 360; i++) {
		int64_t now = i * 100;
		double used = 0.5 * gib + 8 * gib * (now / 2000);
		if (used > cap)
			break;
		series_add(&s, now, used);
		double t = series_time_to(&s, now, 30000, cap, 1200);
		if (t >= 0 && t <= 120 && first_warning_used < 0)
			first_warning_used = used;
		if (now == 35900)
			t_before_last = t;
	}
	assert_true(first_warning_used > 0 && first_warning_used <= 17 * gib);
	/* 100 ms before the 18th step: 0.1 s away */
	assert_true(t_before_last >= 0 && t_before_last < 0.5);
	/* right after the second step: 15 more fit (16 GiB .. 136 GiB), the 16th fails, 32 s */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i <= 40; i++)
		series_add(&s, i * 100, 0.5 * gib + 8 * gib * (i * 100 / 2000));
	double t = series_time_to(&s, 4000, 30000, cap, 1200);
	assert_true(t > 31.9 && t < 32.1);
	/* steps given back (allocations that come and go): no climb */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 100; i++)
		series_add(&s, i * 100, 60 * gib + 8 * gib * ((i / 10) % 2));
	assert_true(series_time_to(&s, 9900, 30000, cap, 1200) < 0);
}

static void test_thresholds(void **state)
{
	(void)state;
	assert_true(detect_low_free(500, 100000, 1000, 0));
	assert_false(detect_low_free(5000, 100000, 1000, 0));
	assert_true(detect_low_free(4000, 100000, 0, 5.0));
	assert_false(detect_low_free(6000, 100000, 0, 5.0));
	assert_true(detect_stuck(1 << 20, 0, 0, 61000, 60000));
	assert_false(detect_stuck(1 << 20, 0, 0, 59000, 60000));
	assert_false(detect_stuck(1 << 20, 0, -1, 61000, 60000)); /* utilization unknown */
	assert_false(detect_stuck(1 << 20, 0, 3, 61000, 60000));
	assert_false(detect_stuck(1 << 20, 0, 0, 61000, 0));      /* off */
}

static void test_jobs(void **state)
{
	(void)state;
	const char env[] = "PATH=/bin\0TORCHELASTIC_RUN_ID=abc\0LOCAL_RANK=1\0RANK=5\0";
	const char none[] = "PATH=/bin\0HOME=/root\0GROUP_RANK=3\0";
	char *key;
	int rank;

	assert_true(detect_rank_from_environ(env, sizeof(env), &key, &rank));
	assert_string_equal(key, "torchelastic:abc");
	assert_int_equal(rank, 5);
	free(key);
	/* torchrun's default run id "none": two such jobs on one host told apart by address */
	const char env_none[] = "TORCHELASTIC_RUN_ID=none\0RANK=1\0MASTER_ADDR=127.0.0.1\0MASTER_PORT=29400\0";
	assert_true(detect_rank_from_environ(env_none, sizeof(env_none), &key, &rank));
	assert_string_equal(key, "dist:127.0.0.1:29400");
	assert_int_equal(rank, 1);
	free(key);
	assert_false(detect_rank_from_environ(none, sizeof(none), &key, &rank));
	assert_null(key);
	assert_int_equal(rank, -1);
	assert_true(detect_partial_death(&(struct job_ranks){ 4, 2, 2 }));
	assert_false(detect_partial_death(&(struct job_ranks){ 4, 0, 4 })); /* all gone: not partial */
	assert_false(detect_partial_death(&(struct job_ranks){ 1, 0, 1 })); /* a single process */
	assert_false(detect_partial_death(&(struct job_ranks){ 2, 2, 0 }));
	/* a job's first death is news however it came; later ones unless asked to end */
	assert_true(detect_death_news(0, 1));
	assert_true(detect_death_news(0, 0));
	assert_true(detect_death_news(1, 0));
	assert_false(detect_death_news(1, 1));
}

/* A rank is what its environment says (issue 12: any sibling under a common parent was
 * taken for one): torch.distributed's variables without torchrun, grouped by the
 * rendezvous; a rank that exited 0 is no death. */
static void test_ranks(void **state)
{
	(void)state;
	const char dist[] = "MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0WORLD_SIZE=8\0RANK=3\0LOCAL_RANK=3\0";
	const char local[] = "LOCAL_RANK=2\0";
	const char world[] = "WORLD_SIZE=2\0RANK=x\0";
	char *key;
	int rank;

	assert_true(detect_rank_from_environ(dist, sizeof(dist), &key, &rank));
	assert_string_equal(key, "dist:10.0.0.1:29500");
	assert_int_equal(rank, 3);
	free(key);
	assert_true(detect_rank_from_environ(local, sizeof(local), &key, &rank));
	assert_null(key); /* a rank; its job is its launcher's */
	assert_int_equal(rank, 2);
	assert_true(detect_rank_from_environ(world, sizeof(world), &key, &rank));
	assert_int_equal(rank, -1); /* RANK=x is no rank number */
	free(key);
	/* two ranks, one exited 0 and one runs: nothing died */
	assert_false(detect_partial_death(&(struct job_ranks){ 2, 1, 0 }));
	assert_true(detect_partial_death(&(struct job_ranks){ 3, 1, 1 }));
}

/* Issue 29: a key was cut to 63 bytes, and two jobs whose rendezvous addresses differ
 * only past that were one (a rank's death stopped the other job's ranks). */
static void test_key_whole(void **state)
{
	char env[512], *key;
	const char *addr = "a-rendezvous-host-with-a-long-name.cluster.example.org.internal.x";
	int rank;

	(void)state;
	int n = snprintf(env, sizeof(env), "RANK=0%cMASTER_ADDR=%s%cMASTER_PORT=29501%c", 0, addr, 0, 0);
	assert_true(detect_rank_from_environ(env, (size_t)n, &key, &rank));
	assert_true(strlen(key) > 64);
	assert_string_equal(key + strlen(key) - 6, ":29501");
	assert_memory_equal(key, "dist:", 5);
	free(key);
}

/* Issue 43: a rank its own parent reaped (bash's `wait`, mpirun) ended in a way watch
 * could not read, and was taken for dead: --stop-job-on-partial-death sent SIGTERM to
 * the healthy rank beside one that had exited 0. Only an end read as a death is one. */
static void test_endings(void **state)
{
	(void)state;
	assert_int_equal(detect_end_of_status(W_EXITCODE(0, 0)), WEND_CLEAN);
	assert_int_equal(detect_end_of_status(W_EXITCODE(3, 0)), WEND_FAILED);
	assert_int_equal(detect_end_of_status(W_EXITCODE(0, SIGKILL)), WEND_FAILED);
	assert_int_equal(detect_end_of_status(W_EXITCODE(0, SIGSEGV)), WEND_FAILED);
	assert_int_equal(detect_end_of_status(W_EXITCODE(0, SIGTERM)), WEND_ASKED);
	assert_int_equal(detect_end_of_status(W_EXITCODE(0, SIGINT)), WEND_ASKED);
	assert_int_equal(detect_end_of_status(W_EXITCODE(0, SIGHUP)), WEND_ASKED);
	assert_int_equal(detect_end_of_status(W_STOPCODE(SIGSTOP)), WEND_UNKNOWN); /* no end */
	assert_string_equal(detect_end_name(WEND_CLEAN), "clean");
	assert_string_equal(detect_end_name(WEND_FAILED), "failed");
	assert_string_equal(detect_end_name(WEND_ASKED), "asked");
	assert_string_equal(detect_end_name(WEND_UNKNOWN), "unknown");
	assert_string_equal(detect_end_name(WEND_COUNT), "?");
	assert_false(detect_end_is_death(WEND_CLEAN));
	assert_true(detect_end_is_death(WEND_FAILED));
	assert_true(detect_end_is_death(WEND_ASKED));
	assert_false(detect_end_is_death(WEND_UNKNOWN));
	assert_false(detect_end_is_death(WEND_COUNT));

	/* two ranks, rank 1 gone: counted as the watcher counts (died only for a death) */
	assert_false(detect_partial_death_event(&(struct job_ranks){ 2, 1, 0 }, WEND_CLEAN, 0));
	assert_false(detect_partial_death_event(&(struct job_ranks){ 2, 1, 0 }, WEND_UNKNOWN, 0));
	assert_true(detect_partial_death_event(&(struct job_ranks){ 2, 1, 1 }, WEND_FAILED, 0));
	assert_true(detect_partial_death_event(&(struct job_ranks){ 2, 1, 1 }, WEND_ASKED, 0));
	/* an unknown end acts on nothing, even in a job with an earlier death */
	assert_false(detect_partial_death_event(&(struct job_ranks){ 3, 1, 1 }, WEND_UNKNOWN, 0));
	assert_false(detect_partial_death_event(&(struct job_ranks){ 3, 1, 2 }, WEND_UNKNOWN, 0));
	/* a later death is news unless asked to end; none after headroom signalled the job */
	assert_true(detect_partial_death_event(&(struct job_ranks){ 3, 1, 2 }, WEND_FAILED, 0));
	assert_false(detect_partial_death_event(&(struct job_ranks){ 3, 1, 2 }, WEND_ASKED, 0));
	assert_false(detect_partial_death_event(&(struct job_ranks){ 3, 1, 1 }, WEND_FAILED, 1));
	/* the last rank's death leaves nothing running: not partial */
	assert_false(detect_partial_death_event(&(struct job_ranks){ 2, 0, 2 }, WEND_FAILED, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trend),
		cmocka_unit_test(test_trend_wobble),
		cmocka_unit_test(test_trend_steps), cmocka_unit_test(test_thresholds), cmocka_unit_test(test_jobs),
		cmocka_unit_test(test_ranks), cmocka_unit_test(test_key_whole), cmocka_unit_test(test_endings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
