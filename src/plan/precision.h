/* Precision as users name it, and the dtypes a plan's settings assume. The presets map
 * onto the settings the model and the simulation already take (param_bytes, autocast):
 *   bf16      bf16 weights, gradients and optimizer states, no fp32 master copy (the
 *             planner's default: a model loaded in bf16 and trained as it is)
 *   fp16      the same in fp16 (the same bytes)
 *   amp-bf16  fp32 weights, gradients and states, the forward under bf16 autocast (HF
 *             Trainer's bf16=True)
 *   fp32      fp32 throughout (sdpa then runs its math kernel)
 * Pure. */
#ifndef HEADROOM_PLAN_PRECISION_H
#define HEADROOM_PLAN_PRECISION_H

#include "plan/shape.h"

/* Set t's weights' dtype and autocast as the preset called name says. 0, or -EINVAL
 * for a name that is none of them (t untouched). */
int precision_apply(struct train_settings *t, const char *name);
/* The preset t's settings are ("bf16", "fp16", "amp-bf16", "fp32"), or NULL when they
 * are none (16-bit weights under autocast). A static string. */
const char *precision_name(const struct train_settings *t);

/* What each kind of tensor is held in: "fp32", "bf16" or "fp16", or "none" where the
 * plan has none of them. Static strings. */
struct precision_dtypes {
	const char *weights;           /* the model's weights (LoRA: the frozen base) */
	const char *compute;           /* the forward's matmuls: bf16 under autocast */
	const char *master_weights;    /* an fp32 copy the optimizer updates: the fp32
					* weights themselves (or LoRA's adapters), else none */
	const char *gradients;         /* none in inference */
	const char *optimizer_states;  /* none without states (SGD without momentum); the
					* optimizer's row may say "8-bit" */
};
void precision_dtypes(const struct train_settings *t, struct precision_dtypes *d);

/* The bytes of an element of the weights left unquantized: in QLoRA training PEFT's
 * prepare_model_for_kbit_training casts them to fp32 (kbit_prepare); else param_bytes. */
int precision_weight_bytes(const struct train_settings *t);
/* The bytes of an element of the weights the layers compute with: FSDP2's gathered
 * ones under a MixedPrecisionPolicy's param_dtype, else as kept. */
int precision_compute_bytes(const struct train_settings *t);
/* Whether the optimizer steps an fp32 copy of 16-bit trained weights (master_weights
 * in full 16-bit training; LoRA's adapters and fp32 weights are their own). */
int precision_masters(const struct train_settings *t);

#endif
