#include "watch/detect.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "util/parse.h"
#include "util/xalloc.h"

void series_add(struct series *s, int64_t t_ms, double v)
{
	size_t i = (s->head + s->n) % SERIES_POINTS;

	if (s->n == SERIES_POINTS) {
		i = s->head;
		s->head = (s->head + 1) % SERIES_POINTS;
	} else {
		s->n++;
	}
	s->t_ms[i] = t_ms;
	s->v[i] = v;
}

/* The least-squares line over the window, on values and times taken relative to their
 * means so that a flat series of large byte counts fits a slope of exactly 0. *t: the
 * slope in standard errors (INFINITY for a perfect rising line, 0 for none). */
static double fit(const struct series *s, int64_t now_ms, int64_t window_ms, double *t)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0, syy = 0, b, rss;
	size_t n = 0;

	*t = 0;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = (s->head + k) % SERIES_POINTS;
		if (now_ms - s->t_ms[i] > window_ms)
			continue;
		mx += (double)(s->t_ms[i] - now_ms) / 1000.0;
		my += s->v[i];
		n++;
	}
	if (n < 4)
		return 0;
	mx /= (double)n;
	my /= (double)n;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = (s->head + k) % SERIES_POINTS;
		if (now_ms - s->t_ms[i] > window_ms)
			continue;
		double x = (double)(s->t_ms[i] - now_ms) / 1000.0 - mx, y = s->v[i] - my;
		sxx += x * x, sxy += x * y, syy += y * y;
	}
	if (sxx <= 0)
		return 0;
	b = sxy / sxx;
	rss = syy - b * sxy;
	if (b > 0)
		*t = rss > 0 ? b / sqrt(rss / (double)(n - 2) / sxx) : INFINITY;
	return b;
}

double series_slope_per_s(const struct series *s, int64_t now_ms, int64_t window_ms)
{
	double t;
	return fit(s, now_ms, window_ms, &t);
}

/* The steps' projection (see series_time_to), or -1. */
static double steps_time_to(const struct series *s, int64_t now_ms, int64_t window_ms, double capacity)
{
	double min_step = capacity * SERIES_STEP_PCT / 100, size = 0, prev = 0, last = 0, free_bytes, spacing_s;
	int64_t first_ms = 0, last_ms = 0;
	int steps = 0, have = 0;

	if (min_step < SERIES_STEP_MIN_BYTES)
		min_step = SERIES_STEP_MIN_BYTES;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = (s->head + k) % SERIES_POINTS;
		if (now_ms - s->t_ms[i] > window_ms)
			continue;
		last = s->v[i];
		if (have && last - prev >= min_step) {
			if (!steps++)
				first_ms = s->t_ms[i];
			last_ms = s->t_ms[i];
			if (last - prev > size)
				size = last - prev;
		} else if (have && prev - last >= min_step) {
			return -1; /* memory given back: allocations come and go, not a climb */
		}
		prev = last;
		have = 1;
	}
	if (steps < 2)
		return -1;
	spacing_s = (double)(last_ms - first_ms) / 1000.0 / (steps - 1);
	if (spacing_s <= 0 || (double)(now_ms - last_ms) / 1000.0 > 2 * spacing_s)
		return -1; /* the climb stopped */
	free_bytes = capacity - last;
	if (free_bytes <= 0)
		return 0;
	/* the steps that still fit, then the one that does not */
	double t = (double)(last_ms - now_ms) / 1000.0 + (floor(free_bytes / size) + 1) * spacing_s;
	return t > 0 ? t : 0;
}

double series_time_to(const struct series *s, int64_t now_ms, int64_t window_ms, double capacity, double max_s)
{
	double tstat, slope = fit(s, now_ms, window_ms, &tstat), last, best = -1, st;

	if (!s->n)
		return -1;
	last = s->v[(s->head + s->n - 1) % SERIES_POINTS];
	if (slope > 0 && tstat >= SERIES_MIN_T)
		best = last >= capacity ? 0 : (capacity - last) / slope;
	st = steps_time_to(s, now_ms, window_ms, capacity);
	if (st >= 0 && (best < 0 || st < best))
		best = st;
	return best >= 0 && best <= max_s ? best : -1;
}

int detect_low_free(uint64_t free_bytes, uint64_t total_bytes, uint64_t min_free_bytes, double min_free_pct)
{
	if (min_free_bytes && free_bytes < min_free_bytes)
		return 1;
	return min_free_pct > 0 && total_bytes && (double)free_bytes * 100.0 / (double)total_bytes < min_free_pct;
}

int detect_stuck(int64_t used_bytes, int64_t unchanged_since_ms, int util_pct, int64_t now_ms, int64_t timeout_ms)
{
	/* util unknown (-1) is not evidence of idleness */
	return timeout_ms > 0 && used_bytes > 0 && util_pct == 0 && now_ms - unchanged_since_ms >= timeout_ms;
}

int detect_rank_from_environ(const char *env, size_t len, char **key, int *rank)
{
	const char *id = NULL, *r = NULL, *local = NULL, *world = NULL, *addr = NULL, *port = NULL;
	int64_t v;

	*rank = -1;
	*key = NULL;
	for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
		const char *e = env + i;
		if (!strncmp(e, "TORCHELASTIC_RUN_ID=", 20))
			id = e + 20;
		else if (!strncmp(e, "RANK=", 5))
			r = e + 5;
		else if (!strncmp(e, "LOCAL_RANK=", 11))
			local = e + 11;
		else if (!strncmp(e, "WORLD_SIZE=", 11))
			world = e + 11;
		else if (!strncmp(e, "MASTER_ADDR=", 12))
			addr = e + 12;
		else if (!strncmp(e, "MASTER_PORT=", 12))
			port = e + 12;
	}
	if (!id && !r && !local && !world)
		return 0;
	if ((r && !parse_int64(r, 0, INT_MAX, &v)) || (local && !parse_int64(local, 0, INT_MAX, &v)))
		*rank = (int)v;
	/* torchrun's run id is "none" unless --rdzv-id is given: two such jobs on one host
	 * would be one job, so the rendezvous address tells them apart first */
	int id_shared = id && (!*id || !strcmp(id, "none"));
	if (id && !(id_shared && addr && port && *addr && *port))
		*key = xasprintf("torchelastic:%s", id);
	else if (addr && port && *addr && *port)
		*key = xasprintf("dist:%s:%s", addr, port);
	return 1;
}

/* Knowledge by ending kind: its name and whether it is a death. */
static const struct {
	const char *name;
	int death;
} wend_kinds[WEND_COUNT] = {
	[WEND_CLEAN] = { "clean", 0 },
	[WEND_FAILED] = { "failed", 1 },
	[WEND_ASKED] = { "asked", 1 },
	[WEND_UNKNOWN] = { "unknown", 0 }, /* exit 0 as likely as a death: never acted on */
};

enum wend detect_end_of_status(int wait_status)
{
	if (WIFSIGNALED(wait_status)) {
		int sig = WTERMSIG(wait_status);
		return sig == SIGTERM || sig == SIGINT || sig == SIGHUP ? WEND_ASKED : WEND_FAILED;
	}
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status) ? WEND_FAILED : WEND_CLEAN;
	return WEND_UNKNOWN; /* stopped or continued: no end at all */
}

const char *detect_end_name(enum wend e)
{
	return (unsigned)e < WEND_COUNT ? wend_kinds[e].name : "?";
}

int detect_end_is_death(enum wend e)
{
	return (unsigned)e < WEND_COUNT && wend_kinds[e].death;
}

int detect_partial_death(const struct job_ranks *j)
{
	return j->seen >= 2 && j->died > 0 && j->alive > 0;
}

int detect_death_news(int died_before, int asked_to_end)
{
	return !died_before || !asked_to_end;
}

int detect_partial_death_event(const struct job_ranks *j, enum wend end, int job_signalled)
{
	return detect_end_is_death(end) && !job_signalled && detect_partial_death(j) &&
	       detect_death_news(j->died > 1, end == WEND_ASKED);
}
