/* A job's memory over its life: the largest resident set in each of CURVE_POINTS equal
 * slices of its duration. Keeping the maximum of each slice makes the curve an upper
 * envelope, so predictions made from it err on the safe side. */
#ifndef HEADROOM_CURVE_H
#define HEADROOM_CURVE_H

#include <stddef.h>
#include <stdint.h>

#define CURVE_POINTS 64

struct curve {
	int64_t duration_ms;
	uint64_t peak_bytes;
	uint64_t pts[CURVE_POINTS];
};

struct curve_sample {
	int64_t t_ms; /* since the job started */
	uint64_t rss_bytes;
};

/* Memory at t_ms after start (0 once the job is over). */
uint64_t curve_at(const struct curve *c, int64_t t_ms);
/* Largest value on [t0_ms, t1_ms]; 0 outside the job. */
uint64_t curve_max_between(const struct curve *c, int64_t t0_ms, int64_t t1_ms);
/* The largest resident set among n samples (0 for none). */
uint64_t curve_samples_max(const struct curve_sample *s, size_t n);
/* Build a curve from samples of a job that ran duration_ms. 0 or -EINVAL (no samples). */
int curve_from_samples(const struct curve_sample *s, size_t n, int64_t duration_ms, struct curve *out);
/* Learn: fold a new observation into a profile, each point (and the duration) becoming
 * keep_pct% of the old plus the rest of the new. With floor, no point falls below what
 * was just seen: a job that grew is believed at once, one that shrank gradually; that is
 * how a signature (one job) learns. A class (many different jobs) learns without it, so
 * that its profile is their running mean: admission sums many jobs, and for a sum the
 * mean is the right estimate; the jobs above it are caught as they run (seen memory
 * scales a prediction up) and by the safety net. */
void curve_learn(struct curve *profile, const struct curve *seen, int first, int keep_pct, int floor);
/* Merge two profiles learned apart (another machine, another store): the result stands
 * for runs + other_runs jobs. Each point becomes the runs-weighted mean of the two, or
 * with envelope their maximum (a signature: one job, believed at its largest); the
 * duration is the weighted mean either way. Runs must be positive. */
void curve_merge(struct curve *c, int64_t runs, const struct curve *other, int64_t other_runs, int envelope);
/* Recompute peak_bytes from pts. */
void curve_update_peak(struct curve *c);

#endif
