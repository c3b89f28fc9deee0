/* LoRA's adapters: which projections of a decoder layer they adapt, and their
 * parameters. Pure; below both the model (which counts them) and the simulation
 * (which allocates them). */
#ifndef HEADROOM_PLAN_LORA_H
#define HEADROOM_PLAN_LORA_H

#include <stdint.h>

#include "plan/shape.h"

/* The most projections a layer has for LoRA to adapt (q, k, v, o, gate, up, down). */
#define LORA_MAX_PROJS 7

/* A projection LoRA may adapt: its LORA_* bits (a fused projection's, any of them), in
 * and out units, in the MLP or not. */
struct lora_proj {
	unsigned bit;
	int64_t in, out;
	int mlp;
};

/* The projections of one layer of m that targets (LORA_* bits) names, in module order,
 * into p (room for LORA_MAX_PROJS); returns how many. phi3's fused qkv_proj and
 * gate_up_proj are adapted as one each when any of their parts is named. */
int lora_projs(const struct model_shape *m, unsigned targets, struct lora_proj *p);
/* LoRA adapter parameters of the whole model for t's rank and targets. */
int64_t lora_params(const struct model_shape *m, const struct train_settings *t);

#endif
