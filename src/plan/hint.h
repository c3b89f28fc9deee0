/* When a plan does not fit the GPU, or no value of the knob solved for does: the one
 * change, of those the planner can plan, that makes it fit, and what it gives. The
 * changes are tried in the order of the table, cheapest to the run first (fused AdamW
 * and use_cache off cost nothing; a chunked loss, a line of code; checkpointing, a
 * third more compute; a smaller batch, or LoRA, change the training), each by planning
 * again; the first that fits is the answer. A knob that is locked, or solved for, is
 * never changed. Pure: plans in, plans out. */
#ifndef HEADROOM_PLAN_HINT_H
#define HEADROOM_PLAN_HINT_H

#include <stddef.h>
#include <stdint.h>

#include "plan/solve.h"

enum hint_change {
	HINT_FUSED,       /* AdamW fused=True: no foreach temporaries */
	HINT_NO_CACHE,    /* use_cache=False: no keys and values held into the next step */
	HINT_LOSS_CHUNK,  /* the loss in chunks of HINT_LOSS_CHUNK_TOKENS tokens */
	HINT_GRAD_CKPT,   /* gradient checkpointing */
	HINT_BATCH,       /* the largest smaller batch that fits (solving: batch 1) */
	HINT_LORA,        /* LoRA of rank HINT_LORA_RANK on t's targets instead of full fine-tuning */
	HINT_NCHANGES
};

/* The tokens of a loss chunk tried (or the fewest that keep to PLAN_MAX_LOSS_CHUNKS),
 * and the LoRA rank tried: common choices, one plan each. */
#define HINT_LOSS_CHUNK_TOKENS 1024
#define HINT_LORA_RANK 16

struct hint {
	int found;                /* a change makes it fit: change, value and plan say which */
	enum hint_change change;
	int64_t value;            /* the flag's value (loss chunk, batch, LoRA rank); 0 for the others */
	int64_t solved;           /* solving: the knob's largest value that fits with the change */
	struct plan_result plan;  /* with the change (at solved when solving) */
	unsigned tried;           /* bit 1 << change for each change that applies to t */
	int64_t tried_value[HINT_NCHANGES]; /* the value each was tried with (as value) */
	int all_fit;              /* no change alone fits, all of them together do: all_plan
				   * (at all_solved) */
	struct plan_result all_plan;
	int64_t all_solved;
};

/* Find the first change that makes t fit f (solving NULL), or that makes some value of
 * the knob solving fit (the knob then solved with the change). locks: the knobs that
 * must stay. When no change alone fits, all of them together are planned (all_fit).
 * 0 with *h (found or not), or -ENOENT for an unknown knob. */
int hint_find(const struct fit *f, const struct model_shape *m, const struct train_settings *t, const char *solving,
	      const char *const *locks, size_t nlocks, struct hint *h);

/* A change as a flag ("--grad-ckpt", "--loss-chunk") and as the train file's key
 * ("grad_ckpt", "loss_chunk"); static strings. */
const char *hint_flag(enum hint_change c);
const char *hint_key(enum hint_change c);
/* The key's value for a change that sets a boolean (fused true, use_cache false,
 * grad_ckpt true): 0 or 1; -1 for a change with a whole-number value. */
int hint_bool(enum hint_change c);

#endif
