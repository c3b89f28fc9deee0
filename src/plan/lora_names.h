/* PEFT's target_modules as the planner's LoRA targets (LORA_* bits of a decoder layer's
 * projections): a list of module names, each matched as PEFT matches it (the whole name
 * or its last dotted parts), across the families' namings (q_proj, query_key_value,
 * c_attn, w1, ...); or one regular expression, matched whole against the module names a
 * decoder layer's projections have in the families the planner knows. Pure. */
#ifndef HEADROOM_PLAN_LORA_NAMES_H
#define HEADROOM_PLAN_LORA_NAMES_H

#include <stddef.h>

#include "plan/shape.h"

#define LORA_ALL (LORA_Q | LORA_K | LORA_V | LORA_O | LORA_GATE | LORA_UP | LORA_DOWN)

/* The LORA_* bits of the module name (or PEFT's suffix of one, "self_attn.q_proj");
 * 0: no projection the planner models (a mixer's in_proj, a vision tower's). */
unsigned lora_name_bits(const char *name);
/* The LORA_* bits of the projections whose module names pattern (Python's syntax)
 * matches whole in a decoder of layers layers (at most PLAN_MAX_LAYERS; 0: unknown, the
 * first ones tried) into *bits, and those it matches in some of the layers only into
 * *partial. 0 (*bits may be 0: nothing the planner models), or -EINVAL with *err. */
int lora_regex_bits(const char *pattern, int layers, unsigned *bits, unsigned *partial, char **err);

/* The LORA_SAVE_* bit of a module name PEFT's modules_to_save may give (the embedding's
 * or lm_head's in the families' namings, or PEFT's suffix of one); 0: none the planner
 * models (a classifier's score, a norm). */
unsigned lora_save_bits(const char *name);
/* A list of them (commas; "none" or empty: none) as LORA_SAVE_* bits: 0, or -EINVAL at
 * a name it does not take. */
int lora_save_parse(const char *text, unsigned *bits);
/* The bits as text ("embed_tokens,lm_head") into buf. */
const char *lora_save_text(unsigned bits, char *buf, size_t n);

#endif
