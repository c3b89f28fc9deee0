#include "plan/hint.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plan/limits.h"
#include "plan/settings.h"

/* Each change as the setting it makes (value NULL: a whole number the change picks). */
static const struct change {
	const char *key, *value;
} changes[HINT_NCHANGES] = {
	[HINT_FUSED] = { "optimizer", "adamw-fused" },
	[HINT_NO_CACHE] = { "use_cache", "false" },
	[HINT_LOSS_CHUNK] = { "loss_chunk", NULL },
	[HINT_GRAD_CKPT] = { "grad_ckpt", "true" },
	[HINT_BATCH] = { "batch", NULL },
	[HINT_LORA] = { "lora_rank", NULL },
};

/* The changes that keep the kind of run: all but LoRA. */
#define KIND_KEEPING (((1u << HINT_NCHANGES) - 1) & ~(1u << HINT_LORA))

const char *hint_key(enum hint_change c)
{
	return c < HINT_NCHANGES ? changes[c].key : "?";
}

const char *hint_value(enum hint_change c)
{
	return c < HINT_NCHANGES ? changes[c].value : NULL;
}

const char *hint_flag_text(enum hint_change c, int64_t value, char *buf, size_t n)
{
	char num[24];

	snprintf(num, sizeof(num), "%lld", (long long)value);
	return setting_flag_text(setting_find(hint_key(c)), hint_value(c) ? hint_value(c) : num, buf, n);
}
static int locked(const char *knob, const char *solving, const char *const *locks, size_t nlocks)
{
	if (solving && !strcmp(knob, solving))
		return 1;
	for (size_t i = 0; i < nlocks; i++)
		if (!strcmp(locks[i], knob))
			return 1;
	return 0;
}

/* s with change c applied (and *value what it was given); 0, or -1 where c does not
 * apply to s or may not change it. */
static int apply(enum hint_change c, struct train_settings *s, const char *solving, const char *const *locks,
		 size_t nlocks, int64_t *value)
{
	int64_t tokens = s->batch * s->seq, chunk;

	*value = 0;
	if (s->inference && c != HINT_BATCH)
		return -1;
	switch (c) {
	case HINT_FUSED:
		if (s->opt != OPT_ADAMW || s->fused)
			return -1;
		s->fused = 1;
		return 0;
	case HINT_NO_CACHE:
		if (!s->use_cache || s->grad_ckpt)
			return -1;
		s->use_cache = 0;
		return 0;
	case HINT_LOSS_CHUNK:
		chunk = HINT_LOSS_CHUNK_TOKENS;
		if (chunk < (tokens - 1) / PLAN_MAX_LOSS_CHUNKS + 1)
			chunk = (tokens - 1) / PLAN_MAX_LOSS_CHUNKS + 1;
		/* (solving the batch or seq, the tokens grow past the chunk) */
		if (locked("loss_chunk", solving, locks, nlocks) || (s->loss_chunk && s->loss_chunk <= chunk) ||
		    (tokens <= chunk && !(solving && (!strcmp(solving, "batch") || !strcmp(solving, "seq")))))
			return -1;
		s->loss_chunk = *value = chunk;
		return 0;
	case HINT_GRAD_CKPT:
		if (s->grad_ckpt)
			return -1;
		s->grad_ckpt = 1;
		return 0;
	case HINT_BATCH: /* solving: batch 1; else the least, then searched below */
		if (locked("batch", solving, locks, nlocks) || s->batch <= 1)
			return -1;
		s->batch = *value = 1;
		return 0;
	case HINT_LORA:
		/* frozen parts already say what trains: LoRA with them is refused */
		if (locked("lora_rank", solving, locks, nlocks) || s->lora_rank || s->freeze_embed || s->freeze_head ||
		    s->freeze_last >= s->freeze_first)
			return -1;
		s->lora_rank = *value = HINT_LORA_RANK;
		return 0;
	case HINT_NCHANGES:
		break;
	}
	return -1;
}

/* 1 when s fits f (its plan in *r); 0 when not, or when it cannot be planned (too
 * large, or a setting that makes no sense with the change). */
static int fits(const struct fit *f, const struct model_shape *m, const struct train_settings *s,
		struct plan_result *r)
{
	const char *why;

	return !fit_plan(f, m, s, r, &why) && fit_ok(f, r);
}

/* Whether s fits f, or solving, some value of that knob: 1 (the plan, or the knob's
 * largest value and its plan, in *r and *solved), or 0. */
static int fits_or_solves(const struct fit *f, const struct model_shape *m, const struct train_settings *s,
			  const char *solving, struct plan_result *r, int64_t *solved)
{
	struct solve_result sr;
	const char *why;

	if (!solving)
		return fits(f, m, s, r);
	if (solve_knob(f, m, s, solving, &sr, &why) || !sr.value)
		return 0;
	*solved = sr.value;
	*r = sr.plan;
	return 1;
}

/* s with the changes in set applied in the table's order (each one's value into
 * value[]): 0, or -1 when one of them does not apply. */
static int apply_set(unsigned set, struct train_settings *s, const char *solving, const char *const *locks,
		     size_t nlocks, int64_t *value)
{
	for (int c = 0; c < HINT_NCHANGES; c++)
		if ((set & (1u << c)) && apply(c, s, solving, locks, nlocks, &value[c]))
			return -1;
	return 0;
}

/* s fits at batch 1 (its plan in *r): the largest batch below batch that fits with the
 * other changes, its plan into *r. */
static int64_t largest_batch(const struct fit *f, const struct model_shape *m, int64_t batch,
			     struct train_settings *s, struct plan_result *r)
{
	struct plan_result q;
	int64_t lo = 1, hi = batch;

	while (hi - lo > 1) {
		s->batch = lo + (hi - lo) / 2;
		if (fits(f, m, s, &q)) {
			lo = s->batch;
			*r = q;
		} else {
			hi = s->batch;
		}
	}
	s->batch = lo;
	return lo;
}

/* Whether the changes in set together make t fit (or solve the knob): 1 with h's
 * changes, value, plan (and solved), or 0. */
static int try_set(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
		   const char *solving, const char *const *locks, size_t nlocks, unsigned set, struct hint *h)
{
	struct train_settings s = *t;
	int64_t value[HINT_NCHANGES] = { 0 }, solved = 0;
	struct plan_result r;

	if (apply_set(set, &s, solving, locks, nlocks, value) || !fits_or_solves(f, m, &s, solving, &r, &solved))
		return 0;
	if (!solving && (set & (1u << HINT_BATCH))) /* batch 1 fits: the largest below t's that does */
		value[HINT_BATCH] = largest_batch(f, m, t->batch, &s, &r);
	h->changes = set;
	memcpy(h->value, value, sizeof(value));
	h->plan = r;
	h->solved = solved;
	return 1;
}

/* The fewest changes of pool, with those of with always made, that make t fit: each
 * alone first, then (when all of them together fit) pairs, threes..., the sets whose
 * dearest change is cheapest first. 1 with h's changes, or 0. */
static int fewest(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
		  const char *solving, const char *const *locks, size_t nlocks, unsigned pool, unsigned with,
		  struct hint *h)
{
	int n = __builtin_popcount(pool);

	for (int k = with ? 0 : 1; k <= n; k++) {
		if (k == 2 && !try_set(f, m, t, solving, locks, nlocks, pool | with, h))
			return 0; /* not even all of them: no fewer */
		if (k >= 2 && k == n)
			return 1; /* all of them, planned above and still in h (try_set writes h only when it fits) */
		for (unsigned set = 0; set < 1u << HINT_NCHANGES; set++)
			if ((set & pool) == set && __builtin_popcount(set) == k &&
			    try_set(f, m, t, solving, locks, nlocks, set | with, h))
				return 1;
	}
	return 0;
}

int hint_find(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *solving,
	      const char *const *locks, size_t nlocks, struct hint *h)
{
	struct train_settings all = *t;
	int64_t value;

	memset(h, 0, sizeof(*h));
	if (solving && !knob_of(&all, solving))
		return -ENOENT;
	for (int c = 0; c < HINT_NCHANGES; c++) {
		struct train_settings before = all;
		const char *why;

		if (apply(c, &all, solving, locks, nlocks, &value))
			continue;
		if (plan_settings_check(m, &all, &why) == -EINVAL) { /* no change this model takes (LoRA on gpt2) */
			all = before;
			continue;
		}
		h->tried |= 1u << c;
		h->tried_value[c] = value;
	}
	if (!h->tried)
		return 0;
	/* the kind of run kept, then LoRA alone and with them */
	h->found = fewest(f, m, t, solving, locks, nlocks, h->tried & KIND_KEEPING, 0, h) ||
		   ((h->tried & (1u << HINT_LORA)) &&
		    fewest(f, m, t, solving, locks, nlocks, h->tried & KIND_KEEPING, 1u << HINT_LORA, h));
	return 0;
}
