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
	int64_t max_length;     /* the model's max_position_embeddings: seq and context are
				 * solved up to it (0: the planner's limit) */
};

/* Plan t on f's GPU: when memory is plentiful, and where that peak passes what CUDA
 * gives a process (fit_usable_bytes), as it runs on the GPU: the simulation gives cached
 * segments back when a new one does not fit beside the context, as PyTorch does
 * (r->plentiful_peak_bytes keeps the first). r->oom when the least memory it runs in
 * passes the GPU, or its run on the GPU fails even with its cache given back. 0, or
 * -EINVAL with *why from plan_compute (static string). */
int fit_plan(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
	     struct plan_result *r, const char **why);
/* fit_plan for a yes or no: the same r->oom and fit_ok, sooner where the run does not
 * complete (its simulation stops there: r's figures are then partial). */
int fit_check(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
	      struct plan_result *r, const char **why);
/* Whether r completes on the GPU with the margin to spare: the least memory it runs in
 * and the margin within the GPU's memory (what --solve and the hint ask). */
int fit_ok(const struct fit *f, const struct plan_result *r);
/* Whether r completes on the GPU: the least memory it runs in within what CUDA gives a
 * process (fit_usable_bytes), margin or not. */
int fit_runs(const struct fit *f, const struct plan_result *r);
/* The GPU's memory that CUDA gives a process: a little less than the driver's total. */
uint64_t fit_usable_bytes(const struct fit *f);

/* The knobs' names, i from 0 until NULL, the last "buffer:NAME" (the count of the
 * buffer called NAME); static strings. */
const char *knob_name(size_t i);
/* The setting called name in t, or NULL: an unknown knob, or a buffer t does not have. */
int64_t *knob_of(struct train_settings *t, const char *name);

/* Whether the knob called name applies to t's kind of run (full fine-tuning, LoRA,
 * inference): context is inference's, loss_chunk training's, lora_rank a LoRA run's;
 * solved in another kind it would change nothing of the plan (or change its kind). 0,
 * or -EINVAL with why (at most n bytes) saying what it is and how to plan a run it
 * applies to. A name that is no knob of the table (a buffer) applies. */
int knob_applies(const struct train_settings *t, const char *name, char *why, size_t n);

/* Check --lock's knobs: each a knob of t, none the one solved for (solving, or NULL).
 * 0, or -ENOENT with *bad the lock that names no knob, or -EPERM with *bad the
 * locked knob solved for. */
int knob_locks_check(struct train_settings *t, const char *const *locks, size_t nlocks, const char *solving,
		     const char **bad);

/* The range a knob is solved in: from *min to *max, *max_is saying what the largest is
 * (a static string). loss_chunk's is batch x seq, and its least makes at most
 * PLAN_MAX_LOSS_CHUNKS chunks; the others' are the planner's limits (plan/limits.h);
 * solve_knob caps seq and context at the fit's max_length.
 * 0, or -ENOENT for a knob t does not have. */
int knob_range(const struct train_settings *t, const char *name, int64_t *min, int64_t *max, const char **max_is);

/* The training steps a search plans: a short run's peak is never above a longer one's
 * (the same steps come first), so what does not fit a short run fits no longer one; the
 * run's own when fewer. */
int64_t solve_search_steps(const struct train_settings *t);

/* Values around a solved knob's answer that the result shows. */
#define SOLVE_NEAR 5

struct solve_result {
	int64_t value;                /* the largest value that fits; 0 when the least does not */
	struct plan_result plan;      /* at value; zeroed when value is 0 */
	int largest;                  /* value is the knob's largest: every value fits */
	const char *max_is;           /* what the knob's largest is (knob_range) */
	int64_t next_value;           /* value + 1 (the least when value is 0), which does not fit; 0 when largest */
	struct plan_result next;      /* at next_value; zeroed when largest or next_too_big */
	const char *next_too_big;     /* next_value passes the planner's limits: what (plan_check); else NULL */
	/* the peak is not monotonic in the knob: a smaller value than one that fits did not
	 * (cliff_value, 0 none), and value is the largest below it whose smaller neighbours
	 * (value - 1, - 2, - 4 ...) all fit */
	int64_t cliff_value;
	/* the knob a few steps either side of value (below, value, above): what each needs */
	struct solve_near {
		int64_t value;
		uint64_t min_device_bytes;
		int fits;             /* with the margin (fit_ok); -1 past the planner's limits */
	} near[SOLVE_NEAR];
	int nnear;
};

/* The largest value of t's knob (in knob_range) with which t fits f: the peak grows
 * with each knob, so it doubles from the least until it does not fit, then halves the
 * gap, planning a short run (solve_search_steps); then the value found is planned as t
 * says, and below it should it not fit so; a value past the planner's limits (too large
 * to plan) does not fit. Where the allocator's placements make the peak jump about, a
 * value below the answer may not fit: the values 1, 2, 4... below it are tried, and the
 * answer moves below any that does not (cliff_value), so that its smaller neighbours
 * fit; near[] has what the values a few steps either side need. 0, or
 * -ENOENT for an unknown knob, or -EINVAL with *why from plan_compute, or -E2BIG with
 * *why when even the least value is too large to plan. */
int solve_knob(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *knob,
	       struct solve_result *r, const char **why);

#endif
