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

/* Plan t with its knob k at v into *r: 0, with *too_big NULL, or past the planner's
 * limits (too large to plan: *too_big says what, r zeroed); or -EINVAL. */
static int plan_with(const struct fit *f, const struct model_shape *m, struct train_settings *t, int64_t *k,
		     int64_t v, struct plan_result *r, const char **why, const char **too_big)
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
	return rc;
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

/* One answer's search, over one need (need_low for "may fit", need_high for "surely"):
 * the values up to lo fit (min - 1: none known to), from hi on they do not (max + 1: none
 * known not to); the needs at both ends where planned (UINT64_MAX at hi: past the
 * planner's limits, or not planned), lo's plan, and the fitting value planned before lo
 * (min - 1: none) for the line through the two. */
struct bracket {
	int64_t lo, hi, prev;
	uint64_t need_lo, need_hi, need_prev;
	/* how far each end's need is from the limit, as interpolation weighs them: the end
	 * kept twice in a row weighs half (the Illinois rule: the line then crosses nearer
	 * the answer than the end that keeps moving) */
	long double off_lo, off_hi;
	int moved;                /* the end moved last: 1 lo, -1 hi, 0 none yet */
	int slow;                 /* values planned in a row that did not halve the gap */
	struct plan_result plan;
};

/* Both answers' searches: every value planned narrows both (a plan has both needs). */
struct search {
	const struct fit *f;
	const struct model_shape *m;
	struct train_settings *s;
	int64_t *k, min, max;
	uint64_t limit;
	struct bracket may, sure;
	const char **why;
	int plans;
};

static void narrow(struct bracket *b, int64_t v, uint64_t need, uint64_t limit, const struct plan_result *q)
{
	if (need <= limit && v > b->lo) {
		b->prev = b->lo, b->need_prev = b->need_lo;
		b->lo = v, b->need_lo = need, b->plan = *q;
		b->off_lo = (long double)(limit - need);
		if (b->moved > 0)
			b->off_hi /= 2;
		b->moved = 1;
	} else if (need > limit && v < b->hi) {
		b->hi = v, b->need_hi = need;
		b->off_hi = (long double)(need - limit);
		if (b->moved < 0)
			b->off_lo /= 2;
		b->moved = -1;
	}
}

/* Plan v (the search's short run) and narrow both searches by it: 0, or -EINVAL. */
static int probe(struct search *x, int64_t v)
{
	struct plan_result q;
	const char *too_big;
	int rc = plan_with(x->f, x->m, x->s, x->k, v, &q, x->why, &too_big);

	x->plans++;
	if (rc)
		return rc;
	narrow(&x->may, v, too_big ? UINT64_MAX : q.need_low_bytes, x->limit, &q);
	narrow(&x->sure, v, too_big ? UINT64_MAX : q.need_high_bytes, x->limit, &q);
	return 0;
}

/* How far one step past what fits may go, in times lo: a need that stays flat (a small
 * buffer's count) reaches the knob's largest in a few steps. */
#define GROW_MAX 16

/* Past lo, nothing known not to fit: where the line through the last two fitting values
 * crosses the limit, a little further so that it likely brackets the answer; at least
 * twice lo (never slower than doubling), at most GROW_MAX times, at most max. */
static int64_t grow(const struct bracket *b, uint64_t limit, int64_t min, int64_t max)
{
	int64_t least = b->lo > max / 2 ? max : 2 * b->lo, most = b->lo > max / GROW_MAX ? max : GROW_MAX * b->lo;
	long double at;

	if (b->prev < min)
		return least;
	if (b->need_lo <= b->need_prev)
		return most;
	at = b->lo + (long double)(limit - b->need_lo) * (long double)(b->lo - b->prev) /
			     (long double)(b->need_lo - b->need_prev);
	at += (at - b->lo) / 64 + 1;
	return at <= least ? least : at >= most ? most : (int64_t)at;
}

/* The next value b plans, 0 when its answer is found (lo, hi adjacent): the least first;
 * then growing; then within the gap where the line through its ends crosses the limit
 * (the needs are close to straight lines in each knob), halving the gap instead when
 * SLOW_STEPS values in a row did not (a need with steps) or hi's need is not known. */
#define SLOW_STEPS 3

static int64_t pick(const struct bracket *b, uint64_t limit, int64_t min, int64_t max)
{
	long double at;

	if (b->hi - b->lo <= 1)
		return 0;
	if (b->lo < min)
		return min;
	if (b->hi > max)
		return grow(b, limit, min, max);
	if (b->slow >= SLOW_STEPS || b->need_hi == UINT64_MAX)
		return b->lo + (b->hi - b->lo) / 2;
	at = b->lo + b->off_lo * (long double)(b->hi - b->lo) / (b->off_lo + b->off_hi);
	return at < b->lo + 1 ? b->lo + 1 : at > b->hi - 1 ? b->hi - 1 : (int64_t)at;
}

/* Search b to its answer: 0, or -EINVAL. */
static int search_run(struct search *x, struct bracket *b)
{
	for (;;) {
		int rc;
		int64_t gap = b->hi - b->lo, v = pick(b, x->limit, x->min, x->max);
		int bracketed = b->lo >= x->min && b->hi <= x->max;

		if (!v)
			return 0;
		if ((rc = probe(x, v)))
			return rc;
		b->slow = bracketed && b->slow < SLOW_STEPS && b->hi - b->lo > gap / 2 ? b->slow + 1 : 0;
	}
}

/* The value found with the search's short run, planned as t says: the same bounds
 * (from the third step on a step asks for what the one before did), so its plan. */
static int replan(const struct fit *f, const struct model_shape *m, struct train_settings *s, int64_t *k,
		  int64_t v, struct plan_result *p, const char **why)
{
	const char *too_big;

	return plan_with(f, m, s, k, v, p, why, &too_big);
}

int solve_knob(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *knob,
	       struct solve_result *r, const char **why)
{
	struct train_settings s = *t;
	struct search x = { .f = f, .m = m, .s = &s, .k = knob_of(&s, knob), .limit = fit_limit_bytes(f), .why = why };
	int64_t may, sure;
	int rc;

	memset(r, 0, sizeof(*r));
	*why = NULL;
	if (!x.k || solve_range(f, t, knob, &x.min, &x.max, &r->max_is))
		return -ENOENT;
	x.may = (struct bracket){ .lo = x.min - 1, .hi = x.max + 1, .prev = x.min - 1, .need_hi = UINT64_MAX };
	x.sure = x.may;
	s.steps = solve_search_steps(t);
	/* "may" first: its values narrow "surely" too, which is at most it (need_high is at
	 * least need_low) */
	if ((rc = search_run(&x, &x.may)) || (rc = search_run(&x, &x.sure)))
		return rc;
	may = x.may.lo, sure = x.sure.lo;
	s.steps = t->steps;
	r->plans = x.plans + (may >= x.min) + (sure >= x.min) + (may < x.max);
	if ((may >= x.min && (rc = replan(f, m, &s, x.k, may, &r->may_plan, why))) ||
	    (sure >= x.min && (rc = replan(f, m, &s, x.k, sure, &r->plan, why))))
		return rc;
	r->may_value = may >= x.min ? may : 0;
	r->value = sure >= x.min ? sure : 0;
	r->largest = sure == x.max;
	r->may_largest = may == x.max;
	if (r->may_largest)
		return 0;
	r->next_value = may + 1;
	rc = plan_with(f, m, &s, x.k, may + 1, &r->next, why, &r->next_too_big);
	if (rc)
		return rc;
	if (may < x.min && r->next_too_big) { /* even the least cannot be planned: the input is too large */
		*why = r->next_too_big;
		return -E2BIG;
	}
	return 0;
}
