/* The end-of-build report: what ran, how much memory it took, what headroom did. */
#ifndef HEADROOM_REPORT_H
#define HEADROOM_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct report_job {
	char *class_key;          /* owned */
	uint64_t peak_bytes;
	int64_t duration_ms;
};

/* One point of the build's timeline, taken once a second. */
struct report_point {
	int64_t t_ms;             /* since the build started */
	int running, frozen, waiting;
	uint64_t jobs_bytes;      /* the jobs' resident memory together */
	uint64_t used_bytes;      /* in use against the limit */
};

struct report {
	struct report_job *jobs;  /* completed jobs; owned */
	size_t njobs, cap;
	int failed_jobs;
	int64_t wall_ms;
	uint64_t limit_bytes;
	const char *limit_source; /* "cgroup v1", "cgroup v2", "RAM" */
	uint64_t budget_bytes;
	uint64_t peak_jobs_bytes; /* largest sum of the jobs' resident memory seen */
	int has_peak_group;       /* the cgroup's own peak could be read */
	uint64_t peak_group_bytes;
	int freezes, thaws, kills, retries, oom_kills;
	int jobs_cap;
	int exit_status;
	struct report_point *timeline; /* owned */
	size_t npoints, cappoints;
};

void report_add_point(struct report *r, const struct report_point *p);

void report_add_job(struct report *r, const char *class_key, uint64_t peak_bytes, int64_t duration_ms);
/* The largest fixed job count whose largest peaks all fit in budget together: the
 * MAX_JOBS that would have been safe even if every job peaked at once. 0 if unknown. */
int report_safe_max_jobs(const struct report *r);
/* p in [0,100] of the peaks of one class (nearest rank). */
uint64_t report_class_percentile(const struct report *r, const char *class_key, int p);
json_t *report_to_json(const struct report *r);
void report_print(const struct report *r, FILE *f);
void report_free(struct report *r);

#endif
