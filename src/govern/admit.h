/* Admission and the safety net: pure policy. Nothing here reads the system; the
 * governor passes a snapshot in and acts on the decision that comes back. */
#ifndef HEADROOM_ADMIT_H
#define HEADROOM_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#include "profile/curve.h"

/* A job the governor already let run. */
struct admit_job {
	int64_t elapsed_ms;         /* time it has been running (frozen time excluded) */
	const struct curve *pred;   /* predicted curve, or NULL when nothing is known */
	uint64_t current_bytes;     /* resident memory now */
	int frozen;
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
};

/* Would the candidate (predicted curve, or NULL) fit, now and over its whole predicted
 * life, together with the predicted rest of the running jobs? */
void admit_decide(const struct admit_snapshot *s, const struct curve *cand, struct admit_result *r);

/* Predicted memory of a running job tau_ms from now. */
uint64_t admit_job_future(const struct admit_job *j, uint64_t unknown_bytes, int64_t tau_ms);

/* The safety net. It acts on what memory really is, not on predictions. */
enum net_action {
	NET_OK = 0,        /* nothing to do; may thaw */
	NET_HOLD,          /* admit nothing more */
	NET_FREEZE,        /* freeze the youngest running job */
	NET_KILL,          /* kill the youngest job and requeue it */
};

struct net_state {
	uint64_t limit_bytes;       /* the limit that applies (cgroup or RAM) */
	uint64_t used_bytes;        /* charged against it now */
	uint64_t reserve_bytes;     /* kept free for the rest of the machine */
	double psi_full_avg10_pct;  /* < 0 when unknown */
	int64_t ms_since_last_kill; /* since headroom last killed a job */
	uint64_t growth_bytes_per_s; /* how fast used_bytes rose over the last tick; 0 if falling */
};

/* How far ahead the net looks along the current growth: one reaction (a tick, a freeze
 * taking effect) must not be able to run past the limit. */
#define NET_LOOKAHEAD_MS 500

enum net_action net_decide(const struct net_state *s);
/* The reserve headroom keeps free below a limit: 6 %, between 64 MiB and 2 GiB. */
uint64_t net_default_reserve(uint64_t limit_bytes);

#endif
