/* The fixed -j replay: the build's compile jobs replayed N at a time in the build tool's
 * order, each following its observed curve, for the end report's recommendation and its
 * side-by-side. Pure. */
#ifndef HEADROOM_FIXEDJ_H
#define HEADROOM_FIXEDJ_H

#include <stddef.h>
#include <stdint.h>

#include "profile/curve.h"

/* The simulated peak of running the jobs (curves, in their observed order) with a fixed
 * number of slots: each job starts when a slot frees, then follows its curve. */
uint64_t admit_replay_peak(const struct curve *const *jobs, size_t n, int slots);
/* The wall time of that replay: when the last job ends. 0 without jobs. */
int64_t admit_replay_wall_ms(const struct curve *const *jobs, size_t n, int slots);
/* The largest fixed job count whose replayed peak fits the budget (at least 1; n when
 * all jobs at once fit); 0 without jobs. */
int admit_safe_fixed_jobs(const struct curve *const *jobs, size_t n, uint64_t budget_bytes);
/* Is it a compile job, as the recommendation counts them: it has a source file, its tool
 * is not a linker, and it is not trivial (a version probe): it ran 100 ms or more and
 * took 32 MiB or more. */
int admit_is_compile_job(const char *tool, int has_src, int64_t duration_ms, uint64_t peak_bytes);

#endif
