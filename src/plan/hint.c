#include "plan/hint.h"

#include <errno.h>
#include <string.h>

#include "plan/limits.h"

static const struct change {
	const char *flag, *key;
	int bool_value; /* -1: a whole number */
} changes[HINT_NCHANGES] = {
	[HINT_FUSED] = { "--optimizer adamw-fused", "fused", 1 },
	[HINT_NO_CACHE] = { "--no-cache", "use_cache", 0 },
	[HINT_LOSS_CHUNK] = { "--loss-chunk", "loss_chunk", -1 },
	[HINT_GRAD_CKPT] = { "--grad-ckpt", "grad_ckpt", 1 },
	[HINT_BATCH] = { "--batch", "batch", -1 },
	[HINT_LORA] = { "--lora-rank", "lora_rank", -1 },
};

const char *hint_flag(enum hint_change c)
{
	return c < HINT_NCHANGES ? changes[c].flag : "?";
}

const char *hint_key(enum hint_change c)
{
	return c < HINT_NCHANGES ? changes[c].key : "?";
}

int hint_bool(enum hint_change c)
{
	return c < HINT_NCHANGES ? changes[c].bool_value : -1;
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

	return !fit_check(f, m, s, r, &why) && fit_ok(f, r);
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

/* The first change alone that makes t fit (or solves the knob): 1 with h->change,
 * value, plan (and solved), or 0. */
static int one_change(const struct fit *f, const struct model_shape *m, const struct train_settings *t,
		      const char *solving, const char *const *locks, size_t nlocks, struct hint *h)
{
	struct plan_result r;
	int64_t value;

	for (int c = 0; c < HINT_NCHANGES; c++) {
		struct train_settings s = *t;

		if (!(h->tried & (1u << c)) || apply(c, &s, solving, locks, nlocks, &value))
			continue;
		if (solving) {
			if (!fits_or_solves(f, m, &s, solving, &h->plan, &h->solved))
				continue;
		} else {
			if (!fits(f, m, &s, &r))
				continue;
			h->plan = r;
			if (c == HINT_BATCH) { /* batch 1 fits: the largest below t's that does */
				int64_t lo = 1, hi = t->batch;
				while (hi - lo > 1) {
					s.batch = lo + (hi - lo) / 2;
					if (fits(f, m, &s, &r)) {
						lo = s.batch;
						h->plan = r;
					} else {
						hi = s.batch;
					}
				}
				value = lo;
			}
		}
		h->change = c;
		h->value = value;
		return 1;
	}
	return 0;
}

int hint_find(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *solving,
	      const char *const *locks, size_t nlocks, struct hint *h)
{
	struct train_settings all = *t;
	struct plan_result r;
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
	h->found = one_change(f, m, t, solving, locks, nlocks, h);
	/* none alone: what all of them together give */
	if (!h->found && fits_or_solves(f, m, &all, solving, &r, &value)) {
		h->all_fit = 1;
		h->all_plan = r;
		h->all_solved = value;
	}
	return 0;
}
