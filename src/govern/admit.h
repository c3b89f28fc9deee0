/* Admission: pure policy. Nothing here reads the system; the governor passes a snapshot
 * in and acts on the decision that comes back. The safety net is net.h, the fixed -j
 * replay behind the recommendation fixedj.h (included here for their callers). */
#ifndef HEADROOM_ADMIT_H
#define HEADROOM_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#include "govern/fixedj.h"
#include "govern/net.h"
#include "profile/curve.h"

/* A job the governor already let run. */
struct admit_job {
	int64_t elapsed_ms;         /* time it has been running (frozen time excluded) */
	const struct curve *pred;   /* predicted curve, or NULL when nothing is known */
	uint64_t current_bytes;     /* resident memory now */
	int frozen;
	int own;                    /* pred is this job's own signature's profile, not its class's */
	int open;                   /* pred is a provisional class profile (admit_provisional): its
	                             * length is how long the class's jobs ran so far, not when
	                             * this one ends; past its peak, a job under that curve is
	                             * taken to keep its share of it */
	int rising;                 /* it has not passed its peak yet (admit_passed_peak): with
	                             * open, past the curve's peak it is taken to reach that peak */
};

struct admit_snapshot {
	uint64_t budget_bytes;      /* what the jobs may use together */
	uint64_t free_bytes;        /* what can still be taken now, the reserve already removed */
	uint64_t unknown_bytes;     /* assumed flat need of a job with no prediction */
	const struct admit_job *jobs;
	size_t njobs;
};

struct admit_result {
	int admit;                  /* 1: start it now */
	uint64_t worst_bytes;       /* largest predicted total of jobs + candidate */
	int64_t worst_at_ms;        /* when, from now */
	int short_of_free;          /* refused for what is free now (others on the machine hold
	                             * part of the budget), the budget itself never passed */
};

/* How the candidate's prediction was made, for admit_decide(): its own signature's
 * profile; a provisional class profile (admit_job's open), looked at over
 * UNKNOWN_HORIZON_MS at least and holding its last level past its end, since a job of a
 * class none of whose jobs has ended runs longer than the class has run so far. */
#define ADMIT_OWN 1
#define ADMIT_OPEN 2

/* Would the candidate (predicted curve, or NULL; cand_how: ADMIT_OWN, ADMIT_OPEN or 0)
 * fit, now and over its whole predicted life, together with the predicted rest of the
 * running jobs? */
void admit_decide(const struct admit_snapshot *s, const struct curve *cand, int cand_how, struct admit_result *r);

/* Predicted memory of a running job tau_ms from now. */
uint64_t admit_job_future(const struct admit_job *j, uint64_t unknown_bytes, int64_t tau_ms);

/* What a job of unknown shape is assumed to need: a quarter of the room (half with
 * tree, where a job killed for memory cannot run again), the room being the budget or,
 * when less, what is free now and what the jobs already hold (so that the machine's
 * other processes do not leave the fourth such job waiting), or the largest peak a job of
 * the build has passed and a quarter more (half more with tree) when that is larger:
 * a peak seen can raise the price, never lower it, since it may be another class's (a
 * version probe's, a binding's beside the kernels). A class is priced lower only by its
 * own jobs, through its provisional profile (admit_provisional). And always at least
 * twice what any running job without a prediction already holds (it may grow as much
 * again). Admission then starts unknown jobs while real free memory, less that growth
 * of the unknown jobs already running, leaves room for one more. */
uint64_t admit_unknown_need(uint64_t budget_bytes, uint64_t free_bytes, int tree, uint64_t seen_peak_bytes,
			    const struct admit_job *jobs, size_t njobs);

/* A class known from earlier builds, none of whose jobs this build has run yet, is
 * predicted from one of its files' own profiles: the one at this percentile of their
 * peaks. A class's running mean of curves of every length and size is no job's shape, and
 * prices the large files low. */
#define ADMIT_CLASS_PCT 75
/* Index of the peak at ADMIT_CLASS_PCT among peaks[0..n); 0 when n is 0. */
size_t admit_class_pick(const uint64_t *peaks, size_t n);

/* What is known of a running job's memory so far. */
struct admit_obs {
	const struct curve_sample *samples; /* in time order, t_ms since the job's start */
	size_t nsamples;
	int64_t elapsed_ms;         /* how long it has run */
	int peaks;                  /* peaks expected of it (job_sig_peaks()); 0 or 1: one */
};

/* Has the job passed its peak: it rose and fell as many times as it is expected to peak
 * (one cicc per -gencode pass), and memory fell to under half its maximum and stayed
 * there for a quarter of the rise to that maximum, at least 5 s and at most the rise
 * itself (a job's valleys between peaks are short beside its rise)? Maxima under
 * 32 MiB are noise. */
int admit_passed_peak(const struct admit_obs *o);

/* A class's provisional profile while none of its jobs has finished: the envelope of
 * what its running jobs that passed their peak (passed[i], decided once by the caller
 * and kept, so that a job that rises again adds its later peak) have shown so far, over
 * the longest of their lives so far, scaled up to the largest memory any of the class's
 * running jobs reached (the first to pass may be the smallest). 1 when made, 0 when no
 * job passed its peak yet. */
int admit_provisional(const struct admit_obs *obs, const int *passed, size_t n, struct curve *out);

/* A job waiting for admission, for admit_order(). */
struct admit_wait {
	int64_t duration_ms;        /* predicted duration; < 0 when unknown */
	int64_t seq;                /* arrival order */
	size_t idx;                 /* the caller's index */
};

/* Order waiting jobs for admission: the predicted longest first, so that a build does
 * not end on its longest jobs alone; ties in arrival order. A job of unknown duration
 * is taken to last as long as the longest job of the build that ended (unknown_ms),
 * or, before any ended (unknown_ms < 0), longer than all (it may be the longest, and
 * running it teaches its shape): once the build has shown its jobs, a class known to
 * run long (a provisional profile's duration is how long its jobs ran so far) goes
 * before a job that is likely as short as the rest. The caller tries each in turn and
 * lets the ones that fit start, so smaller jobs fill the room a larger one cannot use. */
void admit_order(struct admit_wait *w, size_t n, int64_t unknown_ms);

/* May a request be answered the moment it arrives? A build tool starts its jobs in a
 * burst, and answering each as it comes lets the first comers take the room that the
 * longest jobs, a few milliseconds behind, need. So a job predicted to run over a second
 * waits for the tick, when the burst has arrived and admit_order() puts the longest
 * first (on the H200 flash-attn build the two shortest kernels, first to ask, took the
 * room of the longest for 27 s); a shorter or unknown one (the candidate: its curve, or
 * NULL) is answered at once while the jobs of s (running, and admitted) and it would
 * need at most half the budget at their peaks, as a small or no-op build always does. */
int admit_at_once(const struct admit_snapshot *s, const struct curve *cand);

/* How much more memory a frozen job is predicted to take once thawed: the most it
 * reaches over its predicted duration (10 s when unknown), above what it holds now.
 * j->frozen is ignored: the question is how it grows when it runs. */
uint64_t admit_thaw_need(const struct admit_job *j, uint64_t unknown_bytes);
/* Thaw it when that growth fits both in what is free above the reserve and in the
 * budget beside what the jobs hold. */
int admit_thaw_fits(uint64_t need_bytes, uint64_t avail_bytes, uint64_t reserve_bytes, uint64_t jobs_bytes,
		    uint64_t budget_bytes);

/* How many jobserver tokens to keep waiting: how many more jobs shaped like next (a
 * curve, or NULL: unknown), all starting now, admit_decide() would let in one after
 * another on top of the snapshot, up to jobs_cap running; none while a job already
 * found waits for memory. With nothing running the build tool's own slot starts the
 * first job, so that one needs no token. Its cost does not grow with jobs_cap. */
int admit_tokens(const struct admit_snapshot *s, const struct curve *next, int running, int jobs_cap,
		 int waiting);

#endif
