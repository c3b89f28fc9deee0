#include "plan/hint.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plan/limits.h"
#include "plan/quant.h"
#include "plan/settings.h"

/* Each change as the setting it makes (value NULL: a whole number the change picks). */
static const struct change {
	const char *key, *value;
} changes[HINT_NCHANGES] = {
	[HINT_EXPANDABLE] = { "alloc_conf", "expandable_segments:True" },
	[HINT_FUSED] = { "optimizer", "adamw-fused" },
	[HINT_NO_CACHE] = { "use_cache", "false" },
	[HINT_LOSS_CHUNK] = { "loss_chunk", NULL },
	[HINT_GRAD_CKPT] = { "grad_ckpt", "true" },
	[HINT_BUFFER] = { "buffer", NULL },
	[HINT_BATCH] = { "batch", NULL },
	[HINT_LORA] = { "lora_rank", NULL },
	[HINT_QUANT] = { "quant", "nf4" },
};

/* The changes that keep the kind of run: all but LoRA and a quantized base. */
#define KIND_KEEPING (((1u << HINT_NCHANGES) - 1) & ~(1u << HINT_LORA) & ~(1u << HINT_QUANT))

const char *hint_key(enum hint_change c)
{
	return c < HINT_NCHANGES ? changes[c].key : "?";
}

const char *hint_value(enum hint_change c)
{
	return c < HINT_NCHANGES ? changes[c].value : NULL;
}

/* The change's value as a setting takes it: a whole number, or the buffer's spec with
 * its new count, its items' size with its unit as size_parse reads it back (MiB or MB
 * where they are whole ones, else bytes). */
static const char *value_text(const struct hint *h, enum hint_change c, int64_t value, char *buf, size_t n)
{
	uint64_t item = h->buffer_item_bytes;

	if (hint_value(c))
		return hint_value(c);
	if (c != HINT_BUFFER)
		snprintf(buf, n, "%lld", (long long)value);
	else if (!(item % (1u << 20)))
		snprintf(buf, n, "%s=%lldx%lluMiB", h->buffer_name, (long long)value, (unsigned long long)(item >> 20));
	else if (!(item % 1000000))
		snprintf(buf, n, "%s=%lldx%lluMB", h->buffer_name, (long long)value, (unsigned long long)(item / 1000000));
	else
		snprintf(buf, n, "%s=%lldx%lluB", h->buffer_name, (long long)value, (unsigned long long)item);
	return buf;
}

const char *hint_flag_text(const struct hint *h, enum hint_change c, int64_t value, char *buf, size_t n)
{
	char v[64];

	return setting_flag_text(setting_find(hint_key(c)), value_text(h, c, value, v, sizeof(v)), buf, n);
}

json_t *hint_setting_json(const struct hint *h, enum hint_change c, int64_t value)
{
	const char *v = hint_value(c);
	char b[64];

	if (c == HINT_BUFFER)
		return json_string(value_text(h, c, value, b, sizeof(b)));
	if (!v)
		return json_integer(value);
	if (!strcmp(v, "true") || !strcmp(v, "false"))
		return json_boolean(!strcmp(v, "true"));
	return json_string(v);
}

/* The buffer a hint shrinks: the largest (count x item) whose count is not locked; -1
 * none. */
static int largest_buffer(const struct train_settings *s, const char *solving, const char *const *locks,
			  size_t nlocks);
static int locked(const char *knob, const char *solving, const char *const *locks, size_t nlocks)
{
	if (solving && !strcmp(knob, solving))
		return 1;
	for (size_t i = 0; i < nlocks; i++)
		if (!strcmp(locks[i], knob))
			return 1;
	return 0;
}

static int largest_buffer(const struct train_settings *s, const char *solving, const char *const *locks,
			  size_t nlocks)
{
	int best = -1;
	char knob[48];

	for (size_t i = 0; i < s->nbuffers; i++) {
		const struct buffer_spec *b = &s->buffers[i];
		snprintf(knob, sizeof(knob), "buffer:%s", b->name);
		if (b->count > 1 && !locked(knob, solving, locks, nlocks) &&
		    (best < 0 || (double)b->count * (double)b->item_bytes >
				 (double)s->buffers[best].count * (double)s->buffers[best].item_bytes))
			best = (int)i;
	}
	return best;
}

/* s with change c applied (and *value what it was given); 0, or -1 where c does not
 * apply to s or may not change it. */
static int apply(enum hint_change c, struct train_settings *s, const char *solving, const char *const *locks,
		 size_t nlocks, int64_t *value)
{
	int64_t tokens = s->batch * s->seq, chunk;
	int b;

	*value = 0;
	if (s->inference && c != HINT_BATCH && c != HINT_BUFFER && c != HINT_EXPANDABLE && c != HINT_QUANT)
		return -1;
	switch (c) {
	case HINT_EXPANDABLE:
		if (s->expandable)
			return -1;
		s->expandable = 1;
		return 0;
	case HINT_BUFFER: /* its least count; the largest that fits searched below */
		b = largest_buffer(s, solving, locks, nlocks);
		if (b < 0)
			return -1;
		s->buffers[b].count = *value = 1;
		return 0;
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
		if (locked("loss_chunk", solving, locks, nlocks) || s->loss != LOSS_PLAIN ||
		    (s->loss_chunk && s->loss_chunk <= chunk) ||
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
	case HINT_QUANT: /* with LoRA (tried before it) or in inference */
		if (locked("quant", solving, locks, nlocks) || s->quant)
			return -1;
		s->quant = QUANT_NF4;
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
	struct train_settings one = *s;
	const char *why;

	/* (its verdict and interval are the plain placement's: the others would cost time) */
	one.one_placement = 1;
	return !fit_plan(f, m, &one, r, &why) && fit_ok(f, r);
}

/* Whether s fits f, or solving, some value of that knob: 1 (the plan, or the knob's
 * largest value and its plan, in *r and *solved), or 0. */
static int fits_or_solves(const struct fit *f, const struct model_shape *m, const struct train_settings *s,
			  const char *solving, struct plan_result *r, int64_t *solved)
{
	struct solve_result sr;
	const char *why;

	struct train_settings one = *s;

	if (!solving)
		return fits(f, m, s, r);
	one.one_placement = 1;
	if (solve_knob(f, m, &one, solving, &sr, &why) || !sr.value)
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

/* s fits with *knob 1 (its plan in *r): the largest value below was that fits with the
 * other changes (a batch, a buffer's count), its plan into *r. */
static int64_t largest_below(const struct fit *f, const struct model_shape *m, int64_t was, int64_t *knob,
			     struct train_settings *s, struct plan_result *r)
{
	struct plan_result q;
	int64_t lo = 1, hi = was;

	while (hi - lo > 1) {
		*knob = lo + (hi - lo) / 2;
		if (fits(f, m, s, &q)) {
			lo = *knob;
			*r = q;
		} else {
			hi = *knob;
		}
	}
	*knob = lo;
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
	int b = largest_buffer(t, solving, locks, nlocks);

	if (apply_set(set, &s, solving, locks, nlocks, value) || !fits_or_solves(f, m, &s, solving, &r, &solved))
		return 0;
	/* at the least count or batch it fits: the largest below t's that does, the buffer's
	 * first (a batch kept is the run kept) */
	if (!solving && (set & (1u << HINT_BUFFER)))
		value[HINT_BUFFER] = largest_below(f, m, t->buffers[b].count, &s.buffers[b].count, &s, &r);
	if (!solving && (set & (1u << HINT_BATCH)))
		value[HINT_BATCH] = largest_below(f, m, t->batch, &s.batch, &s, &r);
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

	int b = largest_buffer(t, solving, locks, nlocks);

	memset(h, 0, sizeof(*h));
	if (solving && !knob_of(&all, solving))
		return -ENOENT;
	h->buffer = b;
	if (b >= 0) {
		memcpy(h->buffer_name, t->buffers[b].name, sizeof(h->buffer_name));
		h->buffer_item_bytes = t->buffers[b].item_bytes;
	}
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
	/* the kind of run kept, then LoRA alone and with them, then a 4-bit base (with LoRA
	 * where the run trains the whole model) */
	unsigned lora = h->tried & (1u << HINT_LORA), quant = h->tried & (1u << HINT_QUANT);
	h->found = fewest(f, m, t, solving, locks, nlocks, h->tried & KIND_KEEPING, 0, h) ||
		   (lora && fewest(f, m, t, solving, locks, nlocks, h->tried & KIND_KEEPING, lora, h)) ||
		   (quant && fewest(f, m, t, solving, locks, nlocks, h->tried & KIND_KEEPING, lora | quant, h));
	return 0;
}
