/* When a plan does not fit the GPU, or no value of the knob solved for does: the change,
 * or the fewest changes together, of those the planner can plan, that make it fit, and
 * what they give. Changes that keep the kind of run come first: each alone in the order
 * of the table, cheapest to the run first (expandable segments, fused AdamW and
 * use_cache off cost nothing; a chunked loss, a line of code; checkpointing, a third
 * more compute; fewer items in a buffer, what the script keeps; a smaller batch, more
 * steps of accumulation), then their combinations, fewest first; only then LoRA
 * (another kind of run), alone and with them. Each by planning again; the first that
 * fits is the answer. A knob that is locked, or solved for, is never changed. Pure:
 * plans in, plans out. */
#ifndef HEADROOM_PLAN_HINT_H
#define HEADROOM_PLAN_HINT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "plan/solve.h"

enum hint_change {
	HINT_EXPANDABLE,  /* expandable segments: a pinned segment pins only its live pages */
	HINT_FUSED,       /* AdamW fused=True: no foreach temporaries */
	HINT_NO_CACHE,    /* use_cache=False: no keys and values held into the next step */
	HINT_LOSS_CHUNK,  /* the loss in chunks of HINT_LOSS_CHUNK_TOKENS tokens */
	HINT_GRAD_CKPT,   /* gradient checkpointing */
	HINT_BUFFER,      /* the largest smaller count of the largest buffer that fits */
	HINT_BATCH,       /* the largest smaller batch that fits (solving: batch 1) */
	HINT_LORA,        /* LoRA of rank HINT_LORA_RANK on t's targets instead of full fine-tuning */
	HINT_QUANT,       /* the base's projections in 4-bit NF4 (QLoRA; in inference, a 4-bit model) */
	HINT_NCHANGES
};

/* The tokens of a loss chunk tried (or the fewest that keep to PLAN_MAX_LOSS_CHUNKS),
 * and the LoRA rank tried: common choices, one plan each. */
#define HINT_LOSS_CHUNK_TOKENS 1024
#define HINT_LORA_RANK 16

struct hint {
	int found;                /* changes make it fit: changes, value and plan say which */
	unsigned changes;         /* bit 1 << change of each change made (together) */
	int64_t value[HINT_NCHANGES]; /* each change's value (loss chunk, batch, LoRA rank); 0 else */
	int64_t solved;           /* solving: the knob's largest value that fits with them */
	struct plan_result plan;  /* with the changes (at solved when solving) */
	int buffer;               /* HINT_BUFFER: which of t's buffers */
	char buffer_name[32];     /* its name and its items' bytes, for the change's text */
	uint64_t buffer_item_bytes;
	unsigned tried;           /* bit 1 << change for each change that applies to t */
	int64_t tried_value[HINT_NCHANGES]; /* the value each was tried with (as value) */
};

/* Find the first change, or fewest changes together, that make t fit f (solving NULL),
 * or that make some value of the knob solving fit (the knob then solved with them).
 * locks: the knobs that must stay. 0 with *h (found or not), or -ENOENT for an unknown
 * knob. */
int hint_find(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *solving,
	      const char *const *locks, size_t nlocks, struct hint *h);

/* A change as the setting it makes (plan/settings.h): the key ("grad_ckpt",
 * "optimizer") and its value ("true", "adamw-fused"; NULL: the change's whole number). */
const char *hint_key(enum hint_change c);
const char *hint_value(enum hint_change c);
/* A change of h as typed, with its value where it has one: "--grad-ckpt", "--batch 3",
 * "--buffer queue=30x100MB" (the buffer h changes). */
const char *hint_flag_text(const struct hint *h, enum hint_change c, int64_t value, char *buf, size_t n);
/* A change's setting as its JSON value: 3, true, "adamw-fused", "queue=30x100MB". */
json_t *hint_setting_json(const struct hint *h, enum hint_change c, int64_t value);

#endif
