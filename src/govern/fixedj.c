#include "govern/fixedj.h"

#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

/* Under this a job is a probe, not a compile: admit.c's noise floor for peaks. */
#define COMPILE_MIN_BYTES (32ULL << 20)
/* Under this a job is a probe (a compiler's version check), not a compile. */
#define COMPILE_MIN_MS 100

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The replay with the start times of list scheduling on `slots`; stops early, returning
 * a value over stop_above, once the sum passes it (0: never). */
static uint64_t replay(const struct curve *const *jobs, size_t n, int slots, uint64_t stop_above)
{
	int64_t *start = xmalloc(n * sizeof(*start)), *free_at = xcalloc((size_t)slots, sizeof(*free_at));
	int64_t *pts = xmalloc(n * CURVE_POINTS * sizeof(*pts));
	size_t *active = xmalloc(n * sizeof(*active)), nact = 0, next = 0, npts = 0;
	uint64_t peak = 0;

	for (size_t k = 0; k < n; k++) {
		int s = 0;
		for (int i = 1; i < slots; i++)
			if (free_at[i] < free_at[s])
				s = i;
		int64_t d = jobs[k]->duration_ms > 0 ? jobs[k]->duration_ms : 1;
		start[k] = free_at[s];
		free_at[s] += d;
		/* the curve is constant on each slice: the sum's maxima are at slice starts */
		for (int i = 0; i < CURVE_POINTS; i++)
			pts[npts++] = start[k] + d * i / CURVE_POINTS;
	}
	qsort(pts, npts, sizeof(*pts), i64_cmp);
	for (size_t p = 0; p < npts; p++) {
		int64_t t = pts[p];
		uint64_t sum = 0;

		if (p && t == pts[p - 1])
			continue;
		/* starts never decrease with k: take the started ones, drop the ended */
		while (next < n && start[next] <= t)
			active[nact++] = next++;
		for (size_t a = 0; a < nact;) {
			const struct curve *c = jobs[active[a]];
			if (start[active[a]] + (c->duration_ms > 0 ? c->duration_ms : 1) <= t) {
				active[a] = active[--nact];
				continue;
			}
			sum += curve_at(c, t - start[active[a]]);
			a++;
		}
		if (sum > peak)
			peak = sum;
		if (stop_above && peak > stop_above)
			break;
	}
	free(start);
	free(free_at);
	free(pts);
	free(active);
	return peak;
}

uint64_t admit_replay_peak(const struct curve *const *jobs, size_t n, int slots)
{
	if (!n || slots < 1)
		return 0;
	return replay(jobs, n, slots > (int)n ? (int)n : slots, 0);
}

int64_t admit_replay_wall_ms(const struct curve *const *jobs, size_t n, int slots)
{
	int64_t *free_at, end = 0;

	if (!n || slots < 1)
		return 0;
	if (slots > (int)n)
		slots = (int)n;
	free_at = xcalloc((size_t)slots, sizeof(*free_at));
	for (size_t k = 0; k < n; k++) {
		int s = 0;
		for (int i = 1; i < slots; i++)
			if (free_at[i] < free_at[s])
				s = i;
		free_at[s] += jobs[k]->duration_ms > 0 ? jobs[k]->duration_ms : 1;
		if (free_at[s] > end)
			end = free_at[s];
	}
	free(free_at);
	return end;
}

int admit_safe_fixed_jobs(const struct curve *const *jobs, size_t n, uint64_t budget_bytes)
{
	int lo = 1, hi;

	if (!n)
		return 0;
	if (replay(jobs, n, (int)n, budget_bytes) <= budget_bytes)
		return (int)n;
	/* lo fits (or is the least there is), hi does not */
	hi = (int)n;
	while (hi - lo > 1) {
		int mid = lo + (hi - lo) / 2;
		if (replay(jobs, n, mid, budget_bytes) <= budget_bytes)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int admit_is_compile_job(const char *tool, int has_src, int64_t duration_ms, uint64_t peak_bytes)
{
	static const char *const linkers[] = { "ld", "ld.bfd", "ld.gold", "ld.lld", "lld", "gold", "mold",
					       "collect2", "nvlink", "ar", "ranlib" };
	const char *base = strrchr(tool, '/');

	base = base ? base + 1 : tool;
	for (size_t i = 0; i < sizeof(linkers) / sizeof(linkers[0]); i++)
		if (!strcmp(base, linkers[i]))
			return 0;
	return has_src && duration_ms >= COMPILE_MIN_MS && peak_bytes >= COMPILE_MIN_BYTES;
}
