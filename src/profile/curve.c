#include "profile/curve.h"

#include <errno.h>
#include <string.h>

static int slice_of(const struct curve *c, int64_t t_ms)
{
	int64_t i = t_ms * CURVE_POINTS / c->duration_ms;

	if (i < 0)
		return 0;
	return i >= CURVE_POINTS ? CURVE_POINTS - 1 : (int)i;
}

uint64_t curve_at(const struct curve *c, int64_t t_ms)
{
	if (c->duration_ms <= 0 || t_ms < 0 || t_ms >= c->duration_ms)
		return 0;
	return c->pts[slice_of(c, t_ms)];
}

uint64_t curve_max_between(const struct curve *c, int64_t t0_ms, int64_t t1_ms)
{
	uint64_t m = 0;

	if (c->duration_ms <= 0 || t1_ms < 0 || t0_ms >= c->duration_ms || t1_ms < t0_ms)
		return 0;
	if (t0_ms < 0)
		t0_ms = 0;
	if (t1_ms >= c->duration_ms)
		t1_ms = c->duration_ms - 1;
	for (int i = slice_of(c, t0_ms), e = slice_of(c, t1_ms); i <= e; i++)
		if (c->pts[i] > m)
			m = c->pts[i];
	return m;
}

void curve_update_peak(struct curve *c)
{
	c->peak_bytes = 0;
	for (int i = 0; i < CURVE_POINTS; i++)
		if (c->pts[i] > c->peak_bytes)
			c->peak_bytes = c->pts[i];
}

int curve_from_samples(const struct curve_sample *s, size_t n, int64_t duration_ms, struct curve *out)
{
	if (!n)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->duration_ms = duration_ms > 0 ? duration_ms : 1;
	for (size_t k = 0; k < n; k++) {
		int i = slice_of(out, s[k].t_ms);
		if (s[k].rss_bytes > out->pts[i])
			out->pts[i] = s[k].rss_bytes;
	}
	/* Slices no sample fell into (short jobs, coarse sampling) take the larger neighbour
	 * before them, so the envelope has no false holes. */
	for (int i = 1; i < CURVE_POINTS; i++)
		if (!out->pts[i])
			out->pts[i] = out->pts[i - 1];
	curve_update_peak(out);
	return 0;
}

static uint64_t mix(uint64_t old, uint64_t seen, int keep_pct)
{
	return (uint64_t)(((double)old * keep_pct + (double)seen * (100 - keep_pct)) / 100.0);
}

void curve_learn(struct curve *profile, const struct curve *seen, int first, int keep_pct, int floor)
{
	if (first) {
		*profile = *seen;
		return;
	}
	for (int i = 0; i < CURVE_POINTS; i++) {
		uint64_t m = mix(profile->pts[i], seen->pts[i], keep_pct);
		profile->pts[i] = floor && seen->pts[i] > m ? seen->pts[i] : m;
	}
	profile->duration_ms = (int64_t)mix((uint64_t)profile->duration_ms, (uint64_t)seen->duration_ms, keep_pct);
	curve_update_peak(profile);
}

static uint64_t weigh(uint64_t a, int64_t wa, uint64_t b, int64_t wb)
{
	return (uint64_t)(((double)a * (double)wa + (double)b * (double)wb) / ((double)wa + (double)wb));
}

void curve_merge(struct curve *c, int64_t runs, const struct curve *other, int64_t other_runs, int envelope)
{
	for (int i = 0; i < CURVE_POINTS; i++) {
		if (envelope)
			c->pts[i] = other->pts[i] > c->pts[i] ? other->pts[i] : c->pts[i];
		else
			c->pts[i] = weigh(c->pts[i], runs, other->pts[i], other_runs);
	}
	c->duration_ms = (int64_t)weigh((uint64_t)c->duration_ms, runs, (uint64_t)other->duration_ms, other_runs);
	curve_update_peak(c);
}

uint64_t curve_samples_max(const struct curve_sample *s, size_t n)
{
	uint64_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (s[i].rss_bytes > m)
			m = s[i].rss_bytes;
	return m;
}
