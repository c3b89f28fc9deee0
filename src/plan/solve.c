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

/* The plan with plenty of memory: its interval decides (fit_verdict), not where one
 * simulated layout puts a block. The plain run tells t->past when its live segments
 * pass what the GPU leaves less the margin (plan_advise starts the hint then). */
int fit_plan(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
	     struct plan_result *r, const char **why)
{
	struct train_settings on_gpu = *t;
	int rc;

	if (f->gpu_bytes)
		on_gpu.past_bytes = beyond_context(fit_limit_bytes(f), plan_context_bytes(t));
	else
		on_gpu.past = NULL;
	rc = plan_compute(m, &on_gpu, r, why);
	if (!rc && f->gpu_bytes)
		r->oom = fit_verdict(f, r) == FIT_NO;
	return rc;
}


/* (a margin smaller than what CUDA keeps back must not let a run pass that CUDA
 * cannot hold) */
uint64_t fit_limit_bytes(const struct fit *f)
{
	uint64_t usable = fit_usable_bytes(f), room = f->gpu_bytes > f->margin_bytes ? f->gpu_bytes - f->margin_bytes : 0;

	return room < usable ? room : usable;
}

enum fit_verdict fit_verdict(const struct fit *f, const struct plan_result *r)
{
	uint64_t limit = fit_limit_bytes(f);

	if (r->need_high_bytes <= limit)
		return FIT_FITS;
	return r->need_low_bytes <= limit ? FIT_AT_RISK : FIT_NO;
}

int fit_runs(const struct fit *f, const struct plan_result *r)
{
	return r->need_low_bytes <= fit_usable_bytes(f);
}

int fit_ok(const struct fit *f, const struct plan_result *r)
{
	return fit_verdict(f, r) == FIT_FITS;
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

/* Plan t with its knob k at v: whether its need (need_high when surely, else need_low)
 * is within the fit's limit: 1 yes; 0 no, or past the planner's limits (*too_big then
 * says what); or -EINVAL. */
static int fits_with(const struct fit *f, const struct model_shape *m, struct train_settings *t, int64_t *k,
		     int64_t v, int surely, struct plan_result *r, const char **why, const char **too_big)
{
	int rc;

	*k = v;
	*too_big = NULL;
	rc = fit_plan(f, m, t, r, why);
	if (rc == -E2BIG) {
		*too_big = *why;
		*why = NULL;
		memset(r, 0, sizeof(*r));
		return 0;
	}
	if (rc)
		return rc;
	return (surely ? r->need_high_bytes : r->need_low_bytes) <= fit_limit_bytes(f);
}

#define SEARCH_STEPS 3

int64_t solve_search_steps(const struct train_settings *t)
{
	int run = plan_sim_steps(t);

	return run < SEARCH_STEPS ? run : SEARCH_STEPS;
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

/* The largest value in [min, max] whose need is within the fit (surely: need_high),
 * below hi (known not to, or max + 1): the bounds grow with every knob, so doubling
 * from the least then halving the gap finds it. Its plan into *p; min - 1 when none;
 * or a -errno. */
static int64_t largest(const struct fit *f, const struct model_shape *m, struct train_settings *s, int64_t *k,
		       int64_t min, int64_t hi, int surely, struct plan_result *p, const char **why)
{
	struct plan_result q;
	const char *too_big;
	int64_t lo = min - 1, max = hi - 1, try;
	int rc;

	/* powers of two from the least at or above min, so that the values tried stay the same */
	for (try = 1; try < min; try *= 2)
		;
	while (lo < max) {
		try = try < max ? try : max;
		rc = fits_with(f, m, s, k, try, surely, &q, why, &too_big);
		if (rc < 0)
			return rc;
		if (!rc) {
			hi = try;
			break;
		}
		lo = try;
		*p = q;
		try *= 2;
	}
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		rc = fits_with(f, m, s, k, mid, surely, &q, why, &too_big);
		if (rc < 0)
			return rc;
		if (rc) {
			lo = mid;
			*p = q;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/* The value found with the search's short run, planned as t says: the same bounds
 * (from the third step on a step asks for what the one before did), so its plan. */
static int replan(const struct fit *f, const struct model_shape *m, struct train_settings *s, int64_t *k,
		  int64_t v, struct plan_result *p, const char **why)
{
	const char *too_big;
	int rc = fits_with(f, m, s, k, v, 0, p, why, &too_big);

	return rc < 0 ? rc : 0;
}

int solve_knob(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *knob,
	       struct solve_result *r, const char **why)
{
	struct train_settings s = *t;
	int64_t *k = knob_of(&s, knob), min, max, may, sure;
	int rc;

	memset(r, 0, sizeof(*r));
	*why = NULL;
	if (!k || solve_range(f, t, knob, &min, &max, &r->max_is))
		return -ENOENT;
	s.steps = solve_search_steps(t);
	may = largest(f, m, &s, k, min, max + 1, 0, &r->may_plan, why);
	if (may < 0)
		return (int)may;
	/* what surely fits may fit: at most may */
	sure = may >= min ? largest(f, m, &s, k, min, may + 1, 1, &r->plan, why) : min - 1;
	if (sure < 0)
		return (int)sure;
	s.steps = t->steps;
	if ((may >= min && (rc = replan(f, m, &s, k, may, &r->may_plan, why))) ||
	    (sure >= min && (rc = replan(f, m, &s, k, sure, &r->plan, why))))
		return rc;
	r->may_value = may >= min ? may : 0;
	r->value = sure >= min ? sure : 0;
	r->largest = sure == max;
	r->may_largest = may == max;
	if (r->may_largest)
		return 0;
	r->next_value = may + 1;
	rc = fits_with(f, m, &s, k, may + 1, 0, &r->next, why, &r->next_too_big);
	if (rc < 0)
		return rc;
	if (may < min && r->next_too_big) { /* even the least cannot be planned: the input is too large */
		*why = r->next_too_big;
		return -E2BIG;
	}
	return 0;
}
