/* A training step (or an inference batch) as the sequence of tensor allocations and
 * frees PyTorch and transformers make, run through the caching allocator simulation:
 * the peak reserved memory, fragmentation included. The sequence was written from the
 * Hugging Face code and checked against allocator histories recorded on an H200
 * (docs/plan.md). The model (model.c) calls it; it calls nothing of the model's. */
#ifndef HEADROOM_PLAN_SIM_H
#define HEADROOM_PLAN_SIM_H

#include <stdint.h>

#include "plan/shape.h"

struct sim_result {
	uint64_t max_allocated_bytes;  /* as torch.cuda.max_memory_allocated */
	uint64_t max_reserved_bytes;   /* as torch.cuda.max_memory_reserved */
};

/* Simulate `steps` training steps (PLAN_SETTLE_STEPS, or the run's when fewer), every family.
 * 0, or -EINVAL for inference (sim_infer's). */
int sim_train(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r);
/* Simulate `steps` batches of inference (t->inference): a prefill of batch x seq tokens
 * with the KV cache, grown to t->context when that is longer; the logits of the last
 * position, or of every one (t->logits_all). 0, or -EINVAL for GPT-2 (the analytic
 * components answer) or training. */
int sim_infer(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r);

#endif
