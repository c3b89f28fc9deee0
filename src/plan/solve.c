#include "plan/solve.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "plan/limits.h"

/* The kinds of run a plan is of (bits): a knob applies to some; solved in another it
 * would change nothing (context in a training step) or the kind of run (lora_rank in
 * full fine-tuning). Each with what it is called and how a plan of it is asked for. */
enum { RUN_FULL = 1, RUN_LORA = 2, RUN_INFERENCE = 4, RUN_ANY = 7 };
static const struct {
	unsigned bit;
	const char *is, *ask;
} runs[] = {
	{ RUN_FULL, "full fine-tuning", "plan training (without --inference)" },
	{ RUN_LORA, "LoRA training", "plan LoRA training (--lora-rank R, without --inference)" },
	{ RUN_INFERENCE, "inference", "plan inference (--inference)" },
};
#define NRUNS (sizeof(runs) / sizeof(runs[0]))

/* The whole-number settings a plan can be solved for, in the order they are listed,
 * with the range searched and the runs it applies to; the buffers' counts follow as
 * "buffer:NAME" (any run). */
static const struct knob {
	const char *name;
	size_t offset;   /* of its int64_t in struct train_settings */
	int64_t max;     /* 0: batch x seq (loss_chunk) */
	unsigned applies; /* RUN_* */
	const char *is;  /* what it sets, said when it applies to no run of the plan's kind */
} knobs[] = {
	{ "batch", offsetof(struct train_settings, batch), PLAN_MAX_BATCH, RUN_ANY, "the batch" },
	{ "seq", offsetof(struct train_settings, seq), PLAN_MAX_SEQ, RUN_ANY, "the sequence length" },
	{ "loss_chunk", offsetof(struct train_settings, loss_chunk), 0, RUN_FULL | RUN_LORA,
	  "the tokens of each chunk of the training loss" },
	{ "lora_rank", offsetof(struct train_settings, lora_rank), PLAN_MAX_LORA_RANK, RUN_LORA,
	  "the rank of the LoRA adapters trained" },
	{ "context", offsetof(struct train_settings, context), PLAN_MAX_SEQ, RUN_INFERENCE,
	  "the tokens of the KV cache" },
};

#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))
#define BUFFER_PREFIX "buffer:"

/* CUDA gives a process less than the driver's total: the H200's cudaMemGetInfo total is
 * 614 MiB short of its 143,771 MiB (bench/results/gpu-cases-28-h200.jsonl), 43 parts in
 * 10,000, taken as that share of any GPU. */
#define CUDA_HIDDEN_PER_10K 43

uint64_t fit_usable_bytes(const struct fit *f)
{
	return f->gpu_bytes - f->gpu_bytes / 10000 * CUDA_HIDDEN_PER_10K;
}

/* bytes less the CUDA context ctx, at least 1 (a limit of 0 is none) */
static uint64_t beyond_context(uint64_t bytes, uint64_t ctx)
{
	return bytes > ctx ? bytes - ctx : 1;
}

/* fit_plan, or with give_up a plan whose simulations stop where the run is known not
 * to complete (its figures then partial): the same answer to whether it does. */
static int plan_on(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
		   struct plan_result *r, const char **why, int give_up)
{
	struct train_settings on_gpu = *t;
	struct plan_result card;
	uint64_t usable = fit_usable_bytes(f), ctx = plan_context_bytes(t);
	/* what the card leaves the allocator once the context is taken */
	uint64_t card_bytes = beyond_context(usable, ctx);
	int rc;

	if (give_up && f->gpu_bytes)
		on_gpu.give_up_bytes = card_bytes;
	/* told when its live segments pass the card, or leave less than the margin: the
	 * answer is then no, or (past the card, where the run as it goes on the card may
	 * need less) most likely no */
	if (f->gpu_bytes) {
		uint64_t room = f->gpu_bytes > f->margin_bytes ? f->gpu_bytes - f->margin_bytes : 0;
		on_gpu.past_bytes = beyond_context(room < usable ? room : usable, ctx);
	} else {
		on_gpu.past = NULL;
	}
	rc = plan_compute(m, &on_gpu, r, why);
	on_gpu.past = NULL;
	if (rc || !f->gpu_bytes)
		return rc;
	/* what its live segments need passes the card: it does not fit */
	if (r->min_device_bytes > usable) {
		r->oom = 1;
		return 0;
	}
	/* within the card the cache is never given back (in any placement simulated) */
	if (r->device_peak_bytes <= usable && r->device_peak_high_bytes <= usable)
		return 0;
	/* past it: the run as it goes on this card, its cache given back whenever a segment
	 * does not fit what the context leaves; where its blocks land then decides whether
	 * it completes (measured: a run whose plentiful live segments fit ran out of memory
	 * where this simulation did) */
	on_gpu.limit_bytes = card_bytes;
	rc = plan_compute(m, &on_gpu, &card, why);
	if (rc)
		return rc;
	if (card.oom) { /* the plan with plenty of memory, and what the card would need */
		r->oom = 1;
		r->min_device_bytes = card.device_peak_bytes > usable ? card.device_peak_bytes : usable + 1;
		return 0;
	}
	card.plentiful_peak_bytes = r->device_peak_bytes;
	/* it completes in what its live segments took on the card, or less */
	if (card.min_device_bytes > r->min_device_bytes)
		card.min_device_bytes = r->min_device_bytes;
	*r = card;
	return 0;
}

int fit_plan(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
	     struct plan_result *r, const char **why)
{
	return plan_on(f, m, t, r, why, 0);
}

int fit_check(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
	      struct plan_result *r, const char **why)
{
	return plan_on(f, m, t, r, why, 1);
}

int fit_runs(const struct fit *f, const struct plan_result *r)
{
	return !r->oom && r->min_device_bytes <= fit_usable_bytes(f);
}

/* (a margin smaller than what CUDA keeps back must not let a run that cannot complete
 * pass) */
int fit_ok(const struct fit *f, const struct plan_result *r)
{
	return fit_runs(f, r) && r->min_device_bytes + f->margin_bytes <= f->gpu_bytes;
}

const char *knob_name(size_t i)
{
	if (i < NKNOBS)
		return knobs[i].name;
	return i == NKNOBS ? BUFFER_PREFIX "NAME" : NULL;
}

int64_t *knob_of(struct train_settings *t, const char *name)
{
	size_t prefix = strlen(BUFFER_PREFIX);

	for (size_t i = 0; i < NKNOBS; i++)
		if (!strcmp(name, knobs[i].name))
			return (int64_t *)((char *)t + knobs[i].offset);
	if (!strncmp(name, BUFFER_PREFIX, prefix))
		for (size_t i = 0; i < t->nbuffers; i++)
			if (!strcmp(t->buffers[i].name, name + prefix))
				return &t->buffers[i].count;
	return NULL;
}

static unsigned run_of(const struct train_settings *t)
{
	return t->inference ? RUN_INFERENCE : t->lora_rank > 0 ? RUN_LORA : RUN_FULL;
}

int knob_applies(const struct train_settings *t, const char *name, char *why, size_t n)
{
	size_t i = 0, r, own = 0, first = NRUNS, len;

	while (i < NKNOBS && strcmp(name, knobs[i].name))
		i++;
	if (i == NKNOBS || (knobs[i].applies & run_of(t)))
		return 0;
	len = (size_t)snprintf(why, n, "%s applies to ", name);
	for (r = 0; r < NRUNS; r++) {
		if (!(knobs[i].applies & runs[r].bit))
			continue;
		if (first == NRUNS)
			first = r;
		if (len < n)
			len += (size_t)snprintf(why + len, n - len, "%s%s", first == r ? "" : " or ", runs[r].is);
	}
	while (runs[own].bit != run_of(t))
		own++;
	if (len < n)
		snprintf(why + len, n - len, " (it sets %s), not to this plan's %s; to solve it, %s", knobs[i].is,
			 runs[own].is, runs[first].ask);
	return -EINVAL;
}

int knob_locks_check(struct train_settings *t, const char *const *locks, size_t nlocks, const char *solving,
		     const char **bad)
{
	for (size_t i = 0; i < nlocks; i++) {
		*bad = locks[i];
		if (!knob_of(t, locks[i]))
			return -ENOENT;
		if (solving && !strcmp(locks[i], solving))
			return -EPERM;
	}
	*bad = NULL;
	return 0;
}

int knob_range(const struct train_settings *t, const char *name, int64_t *min, int64_t *max, const char **max_is)
{
	struct train_settings copy = *t;
	int64_t tokens;

	if (__builtin_mul_overflow(t->batch, t->seq, &tokens) || tokens < 1)
		tokens = 1; /* out of range: plan_compute says so */
	if (!knob_of(&copy, name))
		return -ENOENT;
	*min = 1;
	*max = PLAN_MAX_BUFFER_COUNT;
	*max_is = "the planner's limit";
	for (size_t i = 0; i < NKNOBS; i++)
		if (!strcmp(name, knobs[i].name))
			*max = knobs[i].max;
	if (!*max) {
		/* past batch x seq the loss is one chunk all the same; below the least, too many */
		*min = (tokens - 1) / PLAN_MAX_LOSS_CHUNKS + 1;
		*max = tokens;
		*max_is = "batch x seq: the loss in one chunk";
	}
	return 0;
}

/* Plan t with its knob k at v: 1 when it fits; 0 when not, or when it passes the
 * planner's limits (*too_big then says what); or -EINVAL. The search asks yes or no
 * (fit_check: a plan that does not fit is partial); shown plans are whole (shown). */
static int fits_with(const struct fit *f, const struct model_shape *m, struct train_settings *t, int64_t *k,
		     int64_t v, struct plan_result *r, const char **why, const char **too_big, int shown)
{
	int rc;

	*k = v;
	*too_big = NULL;
	rc = shown ? fit_plan(f, m, t, r, why) : fit_check(f, m, t, r, why);
	if (rc == -E2BIG) {
		*too_big = *why;
		*why = NULL;
		memset(r, 0, sizeof(*r));
		return 0;
	}
	return rc ? rc : fit_ok(f, r);
}

#define SEARCH_STEPS 3

int64_t solve_search_steps(const struct train_settings *t)
{
	int run = plan_sim_steps(t);

	return run < SEARCH_STEPS ? run : SEARCH_STEPS;
}

/* The largest value from lo + 1 below hi that fits as t says, hi known not to fit, lo
 * known to fit (lo < min: nothing known): the value below hi first, as a search over a
 * short run leaves it one that usually fits the long run too, then by doubling steps
 * down and halving the gap. *p gets the fitting plan. Returns the value, or a -errno. */
static int64_t largest_fitting(const struct fit *f, const struct model_shape *m, struct train_settings *s,
			       int64_t *k, int64_t lo, int64_t hi, struct plan_result *p, const char **why)
{
	struct plan_result q;
	const char *too_big;
	int64_t step = 1;
	int rc;

	while (hi - lo > 1) {
		int64_t mid = hi - step > lo ? hi - step : lo + (hi - lo) / 2;
		rc = fits_with(f, m, s, k, mid, &q, why, &too_big, 0);
		if (rc < 0)
			return rc;
		if (rc) {
			lo = mid;
			*p = q;
			step = (hi - lo) / 2 > 0 ? (hi - lo) / 2 : 1;
		} else {
			hi = mid;
			step *= 2;
		}
	}
	return lo;
}

/* Cliffs: how many times the answer moves below a smaller value that does not fit. */
#define CLIFF_ROUNDS 4

/* The first of value - 1, - 2, - 4 ... (down to min) that does not fit, or 0; < 0 an
 * error. */
static int64_t below_not_fitting(const struct fit *f, const struct model_shape *m, struct train_settings *s,
				 int64_t *k, int64_t value, int64_t min, const char **why)
{
	struct plan_result q;
	const char *too_big;

	for (int64_t d = 1; value - d >= min; d *= 2) {
		int rc = fits_with(f, m, s, k, value - d, &q, why, &too_big, 0);
		if (rc < 0)
			return rc;
		if (!rc)
			return value - d;
	}
	return 0;
}

/* The answer whose smaller neighbours fit: below any that does not, the largest that
 * fits, CLIFF_ROUNDS times at most. Returns the value (min - 1: none), or < 0. */
static int64_t off_cliffs(const struct fit *f, const struct model_shape *m, struct train_settings *s, int64_t *k,
			  int64_t value, int64_t min, struct solve_result *r, const char **why)
{
	for (int round = 0; round < CLIFF_ROUNDS && value >= min; round++) {
		int64_t bad = below_not_fitting(f, m, s, k, value, min, why);
		if (bad <= 0)
			return bad < 0 ? bad : value;
		if (!r->cliff_value)
			r->cliff_value = bad;
		value = largest_fitting(f, m, s, k, min - 1, bad, &r->plan, why);
		if (value < 0)
			return value;
	}
	return value;
}

/* What the values a few steps either side of value need (value - 2 step, - step,
 * value, + 1, + step; step a 64th of it, at least 1), within [min, max]. */
static void near_values(const struct fit *f, const struct model_shape *m, struct train_settings *s, int64_t *k,
			int64_t value, int64_t min, int64_t max, struct solve_result *r)
{
	int64_t step = value / 64 > 1 ? value / 64 : 1;
	const int64_t vs[SOLVE_NEAR] = { value - 2 * step, value - step, value, value + 1, value + step };
	const char *why, *too_big;
	struct plan_result q;

	r->nnear = 0;
	for (int i = 0; i < SOLVE_NEAR; i++) {
		if (vs[i] < min || vs[i] > max || (i && vs[i] <= vs[i - 1]))
			continue;
		int rc = fits_with(f, m, s, k, vs[i], &q, &why, &too_big, 1);
		if (rc < 0)
			continue;
		r->near[r->nnear++] = (struct solve_near){ vs[i], q.min_device_bytes, too_big ? -1 : rc };
	}
}

/* knob_range, the lengths capped at the model's: a model is not run past its positions,
 * so lengths beyond them are not answered. */
static int solve_range(const struct fit *f, const struct train_settings *t, const char *knob, int64_t *min,
		       int64_t *max, const char **max_is)
{
	if (knob_range(t, knob, min, max, max_is))
		return -ENOENT;
	if (f->max_length && (!strcmp(knob, "seq") || !strcmp(knob, "context")) && *max > f->max_length) {
		*max = f->max_length;
		*max_is = "the model's max_position_embeddings";
	}
	return 0;
}

int solve_knob(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *knob,
	       struct solve_result *r, const char **why)
{
	struct train_settings s = *t;
	struct plan_result p;
	int64_t *k = knob_of(&s, knob), min, max, lo, hi;
	const char *too_big; /* a value past the limits does not fit, as one too large for the GPU */
	int rc;

	memset(r, 0, sizeof(*r));
	*why = NULL;
	if (!k || solve_range(f, t, knob, &min, &max, &r->max_is))
		return -ENOENT;
	s.steps = solve_search_steps(t);
	/* lo fits (min - 1: nothing known to), hi is tried next: powers of two from the
	 * least at or above min, whatever min is, so that the values tried stay the same */
	lo = min - 1;
	for (hi = 1; hi < min; hi *= 2)
		;
	if (hi > max)
		hi = max;
	for (;;) {
		rc = fits_with(f, m, &s, k, hi, &p, why, &too_big, 0);
		if (rc < 0)
			return rc;
		if (!rc)
			break;
		lo = hi;
		r->plan = p;
		if (hi == max) { /* every value fits */
			hi = max + 1;
			break;
		}
		hi = hi > max / 2 ? max : hi * 2;
	}
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		rc = fits_with(f, m, &s, k, mid, &p, why, &too_big, 0);
		if (rc < 0)
			return rc;
		if (rc) {
			lo = mid;
			r->plan = p;
		} else {
			hi = mid;
		}
	}
	/* the run as given: the value found, and below it should it not fit that */
	s.steps = t->steps;
	if (lo >= min) {
		int64_t v = largest_fitting(f, m, &s, k, min - 1, lo + 1, &r->plan, why);
		if (v < 0)
			return (int)v;
		v = off_cliffs(f, m, &s, k, v, min, r, why);
		if (v < 0)
			return (int)v;
		lo = v;
		if (lo >= min)
			near_values(f, m, &s, k, lo, min, max, r);
		if (lo == max) {
			r->value = max;
			r->largest = 1;
			return 0;
		}
	}
	r->next_value = lo + 1;
	rc = fits_with(f, m, &s, k, lo + 1, &r->next, why, &r->next_too_big, 1);
	if (rc < 0)
		return rc;
	if (lo < min && r->next_too_big) { /* even the least cannot be planned: the input is too large */
		*why = r->next_too_big;
		return -E2BIG;
	}
	r->value = lo >= min ? lo : 0;
	if (!r->value)
		memset(&r->plan, 0, sizeof(r->plan));
	return 0;
}
