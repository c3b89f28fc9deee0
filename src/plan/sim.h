/* A training step (or an inference batch) as the sequence of tensor allocations and
 * frees PyTorch and transformers make, run through the caching allocator simulation:
 * the peak reserved memory, fragmentation included. The sequence was written from the
 * Hugging Face code and checked against allocator histories recorded on an H200
 * (docs/plan.md). The model (model.c) calls it; it calls nothing of the model's. */
#ifndef HEADROOM_PLAN_SIM_H
#define HEADROOM_PLAN_SIM_H

#include <stdint.h>

#include "plan/component.h"
#include "plan/limits.h"
#include "plan/shape.h"

#define SIM_MAX_STEPS PLAN_SETTLE_STEPS

struct sim_result {
	uint64_t max_allocated_bytes;  /* as torch.cuda.max_memory_allocated */
	uint64_t max_reserved_bytes;   /* as torch.cuda.max_memory_reserved */
	/* the blocks allocated at the allocated peak by what they are for (C_CONTEXT and
	 * C_FRAGMENTATION 0): their sum is max_allocated_bytes */
	uint64_t parts[C_NCOMPONENTS];
	const char *peak_phase;        /* the allocated peak's: "forward", "backward", "recompute",
					* "optimizer step", "prefill", "generate" (static) */
	int oom;                       /* past t->limit_bytes even with the cache given back */
	uint64_t min_reserved_bytes;   /* the least it runs in, giving back its cache when short */
	/* what no placement changes (alloc.h): the live requests' most, rounded as the
	 * allocator rounds them, and the largest request freed in the run */
	uint64_t live_peak_bytes, largest_transient_bytes;
	uint64_t need_high_bytes; /* the live set and what fragmentation can pin beside it, at most */
	const char *need_high_phase;   /* the phase need_high is reached in (as peak_phase) */
	/* what a library's race may hold beyond the simulated run: DDP's first buckets, kept
	 * in ProcessGroupNCCL's stash through the second step when its watchdog is late */
	uint64_t race_bytes;
};

/* A loss's kernel, as the simulation replays it (sim.c's table, one row a loss_kind):
 * fused, it makes no logits tensor beyond a chunk; with the gradients in the forward,
 * the input's and lm_head's gradients are made there and kept to the backward (Liger);
 * without, the backward makes them (Cut Cross-Entropy, keeping a log-sum-exp a token). */
struct loss_row {
	const char *name;    /* the setting's word */
	int fused;           /* lm_head's product and the loss in one kernel */
	int grads_forward;   /* the gradients made in the forward, chunk by chunk */
	const char *said;    /* what the plan says it assumes (NULL: nothing) */
};

const struct loss_row *sim_loss(enum loss_kind k);
/* The loss named `name`, or -1. */
int sim_loss_find(const char *name);

/* Whether the simulation runs t's micro-batches as accumulated ones: grad_accum above 1
 * without ZeRO-2/3 (whose reduce-scatter of each micro-batch into shards is not
 * simulated: such a step is planned as one micro-batch, and said). */
int sim_accumulates(const struct train_settings *t);

/* Simulate `steps` training steps (1 to SIM_MAX_STEPS: PLAN_SETTLE_STEPS, or the run's
 * when fewer), every family. With jitter_seed > 0, each layer's forward and backward
 * also makes one tensor of a pseudo-random size up to 1, 2, 4 or 8 hidden states (by
 * the seed, in turn; batch x seq x hidden; at most 2 GiB), held until the next layer's,
 * drawn from the seed: a stand-in for the small temporaries the sequence leaves out,
 * which decide where the largest tensors land when their holes are a close fit
 * (plan_compute runs a few seeds with expandable segments, on threads: a simulation
 * shares nothing with another). 0, or -EINVAL for inference (sim_infer's) or steps
 * outside 1..SIM_MAX_STEPS. */
int sim_train(const struct model_shape *m, const struct train_settings *t, int steps, uint64_t jitter_seed,
	      struct sim_result *r);
/* The bytes of the optimizer's states a paged optimizer (plan/optimizer.h) keeps in
 * CUDA managed memory, which the driver pages out to the host under pressure: not in
 * the simulated allocator, so not in any peak (0: none paged). */
uint64_t sim_paged_bytes(const struct model_shape *m, const struct train_settings *t);
/* Simulate `steps` batches of inference (t->inference): a prefill of batch x seq tokens
 * with the KV cache, grown to t->context when that is longer; the logits of the last
 * position, or of every one (t->logits_all). 0, or -EINVAL for GPT-2 (the analytic
 * components answer) or training. */
int sim_infer(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r);

#endif
