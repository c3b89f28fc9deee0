/* Fitting a plan to a GPU, and solving for a knob: the largest value of one whole-number
 * setting (the batch, the sequence length, a buffer's count...) whose plan still fits.
 * Pure: shapes and settings in, plans out. */
#ifndef HEADROOM_PLAN_SOLVE_H
#define HEADROOM_PLAN_SOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "plan/model.h"

/* What a plan must fit in. */
struct fit {
	uint64_t gpu_bytes;     /* the GPU's memory; 0: none given (plans, never fits) */
	uint64_t margin_bytes;  /* kept free besides the plan's device peak */
};

/* Plan t on f's GPU: near its size the simulation gives cached segments back, as
 * PyTorch does, at what the allocator has under the margin and the context. 0, or
 * -EINVAL with *why from plan_compute (static string). */
int fit_plan(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
	     struct plan_result *r, const char **why);
/* Whether r's device peak and the margin fit the GPU. */
int fit_ok(const struct fit *f, const struct plan_result *r);

/* The knobs' names, i from 0 until NULL, the last "buffer:NAME" (the count of the
 * buffer called NAME); static strings. */
const char *knob_name(size_t i);
/* The setting called name in t, or NULL: an unknown knob, or a buffer t does not have. */
int64_t *knob_of(struct train_settings *t, const char *name);

/* Check --lock's knobs: each a knob of t, none the one solved for (solving, or NULL).
 * 0, or -ENOENT with *bad the lock that names no knob, or -EPERM with *bad the
 * locked knob solved for. */
int knob_locks_check(struct train_settings *t, const char *const *locks, size_t nlocks, const char *solving,
		     const char **bad);

struct solve_result {
	int64_t value;                /* the largest value that fits; 0 when 1 does not */
	struct plan_result plan;      /* at value; zeroed when value is 0 */
	struct plan_result next;      /* at value + 1, which does not fit */
};

/* The largest value of t's knob (below 2^30) with which t fits f: the peak grows with
 * each knob, so it doubles until it does not fit, then halves the gap. 0, or -ENOENT
 * for an unknown knob, or -EINVAL with *why from plan_compute. */
int solve_knob(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *knob,
	       struct solve_result *r, const char **why);

#endif
