/* The planner's limits: the largest model, step and plan it accepts. Each field of
 * config.json and each setting is range-checked where it is read (plan/config.c,
 * cmd/plan.c) against these; plan_check checks them again for every plan and bounds,
 * in overflow-checked arithmetic, every size the model (model.c) and the simulation
 * (sim.c) go on to compute: past it none of their products could wrap. The simulation's
 * time grows with the layers, the loss chunks and the buffers' items, hence their
 * limits. docs/plan.md lists them. */
#ifndef HEADROOM_PLAN_LIMITS_H
#define HEADROOM_PLAN_LIMITS_H

#include "plan/shape.h"

#define PLAN_MAX_BYTES (1ULL << 50)        /* 1 PiB: a plan, a GPU's memory, a margin */
#define PLAN_MAX_WIDTH 4194304             /* hidden_size, intermediate_size */
#define PLAN_MAX_LAYERS 1024               /* num_hidden_layers */
#define PLAN_MAX_HEADS 65536               /* attention and key/value heads, head_dim */
#define PLAN_MAX_EXPERTS 65536             /* num_experts, num_experts_per_tok */
#define PLAN_MAX_VOCAB 16777216            /* vocab_size, GPT-2's positions */
#define PLAN_MAX_BATCH 1048576
#define PLAN_MAX_SEQ 16777216              /* seq, context */
/* max_position_embeddings: it only caps seq and context, so a model's past PLAN_MAX_SEQ
 * is taken; one past this is no length. */
#define PLAN_MAX_POSITIONS 1073741824
#define PLAN_MAX_DP 1048576
#define PLAN_MAX_LORA_RANK 65536
#define PLAN_MAX_LOSS_CHUNKS 4096          /* batch x seq / loss_chunk, rounded up */
#define PLAN_MAX_BUFFER_COUNT 65536        /* items of one buffer */
#define PLAN_MAX_STEPS 1000000000          /* a run's training steps */
#define PLAN_MAX_GRAD_ACCUM 65536           /* micro-batches a step */
#define PLAN_MAX_BUCKET 17179869184         /* DeepSpeed bucket elements (2^34) */
/* Training steps simulated for a long run: with a step's tensors the same every step,
 * PyTorch's allocator still grew its segments in the 5th step of measured runs (the
 * simulation in the 7th) and in none after. */
#define PLAN_SETTLE_STEPS 8
#define PLAN_MAX_ITEM_BYTES (1ULL << 40)   /* 1 TiB: a buffer's item, context_bytes */
/* a vision tower's (vision_config): within them its weights' products cannot wrap */
#define PLAN_MAX_IMAGE 65536               /* image_size */
#define PLAN_MAX_PATCH 1024                /* patch_size */
#define PLAN_MAX_TEMPORAL 64               /* temporal_patch_size */
#define PLAN_MAX_MERGE 8                   /* spatial_merge_size */

/* Whether m and t are within the limits: 0; -EINVAL with *why (a static string) naming
 * the field or setting out of its range; or -E2BIG naming what of the plan would pass
 * PLAN_MAX_BYTES or PLAN_MAX_LOSS_CHUNKS (too large to plan: larger than any GPU). */
int plan_check(const struct model_shape *m, const struct train_settings *t, const char **why);

#endif
