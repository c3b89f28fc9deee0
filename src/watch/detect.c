#include "watch/detect.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "util/parse.h"

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

double series_slope_per_s(const struct series *s, int64_t now_ms, int64_t window_ms)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	size_t n = 0;

	for (size_t k = 0; k < s->n; k++) {
		size_t i = (s->head + k) % SERIES_POINTS;
		if (now_ms - s->t_ms[i] > window_ms)
			continue;
		double x = (double)(s->t_ms[i] - now_ms) / 1000.0, y = s->v[i];
		sx += x, sy += y, sxx += x * x, sxy += x * y;
		n++;
	}
	if (n < 4)
		return 0;
	double d = (double)n * sxx - sx * sx;
	return d > 0 ? ((double)n * sxy - sx * sy) / d : 0;
}

double series_time_to(const struct series *s, int64_t now_ms, int64_t window_ms, double capacity)
{
	double slope = series_slope_per_s(s, now_ms, window_ms), last;

	if (slope <= 0 || !s->n)
		return -1;
	last = s->v[(s->head + s->n - 1) % SERIES_POINTS];
	return last >= capacity ? 0 : (capacity - last) / slope;
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

int detect_rank_from_environ(const char *env, size_t len, char *key, size_t keylen, int *rank)
{
	const char *id = NULL, *r = NULL, *local = NULL, *world = NULL, *addr = NULL, *port = NULL;
	int64_t v;

	*rank = -1;
	key[0] = '\0';
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
	if (id)
		snprintf(key, keylen, "torchelastic:%s", id);
	else if (addr && port && *addr && *port)
		snprintf(key, keylen, "dist:%s:%s", addr, port);
	return 1;
}

int detect_partial_death(const struct job_ranks *j)
{
	return j->seen >= 2 && j->died > 0 && j->alive > 0;
}
