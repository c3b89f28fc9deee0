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

/* A plan against a GPU: its interval [need_low, need_high] (plan/model.h) against what
 * CUDA gives a process less the margin (fit_limit_bytes). Where one simulated layout
 * puts a block decides nothing: near the card that is what the run's own placements
 * decide. */
enum fit_verdict {
	FIT_FITS,     /* need_high within the limit: fits in any placement */
	FIT_AT_RISK,  /* need_low within it, need_high past it: placement decides */
	FIT_NO,       /* need_low past it: no placement fits */
};

/* Plan t for f's GPU (with plenty of memory: the interval and one likely layout);
 * r->oom when it does not fit (FIT_NO). 0, or -EINVAL with *why from plan_compute
 * (static string). */
int fit_plan(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
	     struct plan_result *r, const char **why);
/* What a plan must fit in: what CUDA gives a process, less the margin. */
uint64_t fit_limit_bytes(const struct fit *f);
enum fit_verdict fit_verdict(const struct fit *f, const struct plan_result *r);
/* Whether r surely fits the GPU with the margin to spare (FIT_FITS: what --solve's
 * "surely fits" and the hint ask). */
int fit_ok(const struct fit *f, const struct plan_result *r);
/* Whether r may run on the GPU: need_low within what CUDA gives a process, margin or
 * not. */
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

struct solve_result {
	int64_t value;                /* the largest value that surely fits (need_high within
				       * the limit); 0 when the least does not */
	struct plan_result plan;      /* at value; zeroed when value is 0 */
	int largest;                  /* value is the knob's largest: every value surely fits */
	int64_t may_value;            /* the largest value that may fit (need_low within it) */
	struct plan_result may_plan;  /* at may_value; zeroed when it is 0 */
	int may_largest;              /* may_value is the knob's largest */
	const char *max_is;           /* what the knob's largest is (knob_range) */
	int64_t next_value;           /* may_value + 1, which does not fit; 0 when may_largest */
	struct plan_result next;      /* at next_value; zeroed when may_largest or next_too_big */
	const char *next_too_big;     /* next_value passes the planner's limits: what (plan_check); else NULL */
	int plans;                    /* the plans the search and its answers took */
};

/* The largest values of t's knob (in knob_range) that surely fit f and that may: need_low
 * and need_high grow with every knob, so each is where one need crosses the limit. One
 * search plans a short run (solve_search_steps: from its third step a step asks for what
 * the one before did, so the needs are the long run's) at values that narrow both: the
 * least, then growing at least twice as far each time along the line through the last
 * two, then where the line through the ends of the gap crosses the limit (the needs are
 * close to straight lines in a knob; halving the gap where that is slow). Each answer is
 * then planned as t says. A value past the planner's limits does not fit. 0, or -ENOENT
 * for an unknown knob, or -EINVAL with *why from plan_compute, or -E2BIG with *why when
 * even the least value is too large to plan. */
int solve_knob(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *knob,
	       struct solve_result *r, const char **why);

#endif
