/* The end-of-build report: what ran, how much memory it took, what headroom did. */
#ifndef HEADROOM_REPORT_H
#define HEADROOM_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/curve.h"

/* A job that finished. */
struct report_job {
	char *class_key;          /* owned */
	uint64_t peak_bytes;
	int64_t duration_ms;
	int64_t start_ms;         /* since the build started */
	int seq;                  /* the build tool's order: the n-th job it started (job ids) */
	int compile;              /* admit_is_compile_job(): counted by the recommendation */
	struct curve curve;       /* its memory over its life */
};

/* One run of one job, for the trace and the record. */
struct report_span {
	char *name;               /* source file (or tool); owned */
	char *class_key;          /* owned */
	int64_t start_ms;         /* since the build started */
	int64_t duration_ms;
	int exit_code;            /* -1 when it died by a signal, or is unknown (a tree job's) */
	int retried;              /* killed for memory and run again */
	uint64_t peak_bytes;
	struct curve_sample *samples; /* owned; t_ms since the job's start */
	size_t nsamples;
};

/* One point of the build's timeline, taken once a second. */
struct report_point {
	int64_t t_ms;             /* since the build started */
	int running, frozen, waiting;
	uint64_t jobs_bytes;      /* the jobs' resident memory together */
	uint64_t used_bytes;      /* in use against the limit */
};

/* What held a job waiting for memory with a CPU slot free: the build's own jobs filling
 * the budget as predicted, the memory others on the machine hold (what is free now is
 * less than the budget left), or the safety net (free memory near the reserve, memory
 * rising faster than a tick can answer, the kernel stalling on reclaim, memory that
 * cannot be read). A wait's first tick, before any decision, is admission's own pace. */
enum report_held { REPORT_HELD_PACE, REPORT_HELD_BUDGET, REPORT_HELD_FREE, REPORT_HELD_NET, REPORT_HELD_N };

/* Each reason's JSON key (report_to_json's waited.memory.held_ms) and text; the pace's
 * key is NULL: it is no reason to name. */
extern const char *const report_held_key[REPORT_HELD_N];

/* What the jobs waited for, and a spell of the jobs' memory above the budget. */
struct report_waits {
	int jobs;                 /* jobs that waited for it at all */
	int64_t total_ms, longest_ms;
	int64_t held_ms[REPORT_HELD_N]; /* the waits for memory, by what held them */
};

struct report_over {
	int times;                /* spells of the jobs' memory together above the budget */
	int64_t total_ms;
	uint64_t most_bytes;      /* the most they were above it */
	char *grew_job;           /* the job furthest above its prediction then; owned, NULL none */
	uint64_t grew_bytes;      /* by how much */
	int grew_unknown;         /* it had no prediction: admitted on a guess */
	int freezes, kills;       /* what the net did meanwhile */
	int64_t alone_ms;         /* one job ran alone: the net freezes no last runner */
	int in_spell, seen_freezes, seen_kills; /* report_note_tick's own */
};

/* One tick's view of the jobs (report_note_tick). */
struct report_tick {
	int64_t dt_ms;            /* since the last tick */
	int running;              /* jobs running, not frozen */
	int frozen;
	uint64_t jobs_bytes;      /* their memory together */
	const char *grew_job;     /* the running job furthest above its prediction, or NULL */
	uint64_t grew_bytes;
	int grew_unknown;
};

/* Reasons a job is not learned (job_seen_untrue()): fewer than this. */
#define REPORT_WHY_MAX 8

struct report {
	struct report_job *jobs;  /* completed jobs; owned */
	size_t njobs, cap;
	int failed_jobs;
	int64_t wall_ms;
	uint64_t limit_bytes;
	const char *limit_source; /* "cgroup v1", "cgroup v2", "RAM" */
	uint64_t budget_bytes;
	uint64_t fixed_budget_bytes; /* what the recommended fixed -jN may use; 0: budget_bytes */
	uint64_t peak_jobs_bytes; /* largest sum of the jobs' resident memory seen */
	uint64_t peak_unowned_bytes; /* largest memory seen that jobs left running and no job owns */
	int has_peak_group;       /* the cgroup's own peak could be read */
	uint64_t peak_group_bytes;
	int freezes, thaws, kills, retries, oom_kills;
	int requeues;             /* of the kills, stalled frozen jobs run again (net_requeue_frozen) */
	int64_t frozen_ms;        /* the jobs' time frozen, summed */
	struct report_waits wait_memory; /* waited with a CPU slot free: for memory */
	struct report_waits wait_slot;   /* waited for a CPU slot (the cap was running) */
	struct report_over over;  /* the jobs' memory together above the budget */
	int jobs_cap;
	int cpus;                 /* CPUs the build could use (cpus_usable); 0 unknown */
	const char *jobs_cap_from; /* where the cap came from: "build -j8", "headroom -j4", "16 CPUs"...; NULL unknown */
	int not_learned;          /* compile jobs whose curves taught nothing: cache hits, checks, partial */
	struct report_why {       /* why, each reason (job_seen_untrue's static text) and how many */
		const char *why;
		int n;
	} not_learned_why[REPORT_WHY_MAX];
	int exit_status;
	const char *mode;         /* how jobs were found: "launcher", "tree", "jobserver"... (static) */
	const char *knob;         /* how the build sets its job count: "-j" or "MAX_JOBS" (static); NULL: "-j" */
	int tree_fallback;        /* compilers ran outside the launcher: the tree was governed too */
	struct report_point *timeline; /* owned */
	size_t npoints, cappoints;
	struct report_span *spans;     /* owned */
	size_t nspans, capspans;
};

/* Copies name, class (both made valid UTF-8: utf8_visible) and samples. */
void report_add_span(struct report *r, const struct report_span *s);
/* Each output file is written whole or not at all: a failure leaves what was there.
 * The report as JSON (report_to_json). 0 or -errno. */
int report_write_json(const struct report *r, const char *path);
/* Chrome/Perfetto trace (JSON): a span per job run, counters for memory. 0 or -errno. */
int report_write_trace(const struct report *r, const char *path);
/* headroom-trace/1 (see bench/build/traces): every job that finished, to replay or share.
 * cpus and mem_total_bytes describe the machine. 0 or -errno. */
int report_write_record(const struct report *r, const char *path, const char *description, int cpus,
			uint64_t mem_total_bytes);

void report_add_point(struct report *r, const struct report_point *p);
/* One job's wait, in w, when it ends (it was admitted, or its launcher left): waited_ms
 * 0 adds nothing. */
void report_add_wait(struct report_waits *w, int64_t waited_ms);
/* The same for a wait for memory, held_ms[REPORT_HELD_N] its time by what held it. */
void report_add_wait_held(struct report_waits *w, int64_t waited_ms, const int64_t *held_ms);
/* Each tick, before the net acts: the frozen time, and a spell above the budget with
 * why (the job grown furthest past its prediction since admission) and what the net did
 * (counted from the freezes and kills made while it lasts). */
void report_note_tick(struct report *r, const struct report_tick *t);

/* Copies j (and its class, made valid UTF-8: utf8_visible). */
void report_add_job(struct report *r, const struct report_job *j);
/* A compile job not learned, and why (a static text): counted under its reason. */
void report_not_learned(struct report *r, const char *why);
/* Whether the build ran to its end and succeeded (exit status 0): only such a build's
 * jobs are the whole build, to give advice from. */
int report_completed(const struct report *r);
/* The most a fixed count may name: the cap in force (jobs_cap), no more than the CPUs
 * the build could use; 0 when neither is known. */
int report_fixed_cap(const struct report *r);
/* The fixed job count a user can follow: the largest N, at most report_fixed_cap, whose
 * replay of the observed compile jobs' curves, N at a time in the order they started,
 * peaks within the budget (admit_safe_fixed_jobs). 0 (no advice) for a build that did
 * not complete, fewer than 2 compile jobs or a cap below 2: nothing to choose. */
int report_safe_max_jobs(const struct report *r);
/* Whether headroom avoided an OOM: 1 when the compile jobs replayed jobs_cap at a time
 * (the build's own -jN, or the CPUs) peak above the memory limit (RAM or cgroup: never a
 * --budget, which nothing enforces but headroom) and no OOM kill was seen; 0 when they
 * fit it; -1 unknown (a build that did not complete, no compile job, no limit). */
int report_oom_avoided(const struct report *r);
/* The compile jobs replayed `slots` at a time in the order they started (as
 * report_safe_max_jobs): their peak together and their wall time. 0 without compile jobs. */
uint64_t report_fixed_peak_bytes(const struct report *r, int slots);
int64_t report_fixed_wall_ms(const struct report *r, int slots);
/* Whether the jobs' observed durations are a fair basis for the fixed count's replayed
 * wall time: they ran at most as many at once as the CPUs (more share the CPUs, and
 * their durations, stretched, would make any fixed count look slow). */
int report_fixed_wall_fair(const struct report *r);
/* From the first compile job's start to the last one's end in this build; 0 without. */
int64_t report_compile_wall_ms(const struct report *r);
/* How a build command sets its parallelism: "MAX_JOBS" for torch builds (setup.py, pip,
 * python -m build), else "-j" (make, ninja, CMake). */
const char *report_knob_for(char *const *argv);
/* p in [0,100] of the peaks of one class (nearest rank). */
uint64_t report_class_percentile(const struct report *r, const char *class_key, int p);
/* The largest peak of one job (its sampled memory or its maxrss, whichever is more). */
uint64_t report_single_peak_bytes(const struct report *r);
json_t *report_to_json(const struct report *r);
void report_print(const struct report *r, FILE *f);
void report_free(struct report *r);

#endif
