/* What a byte of the plan is for: the components a plan is broken into. The simulation
 * (sim.c) tags every tensor with one and sums them at the allocated peak, so that every
 * allocated byte there has a name; the CUDA context lies outside PyTorch's allocator, and
 * fragmentation is reserved memory less allocated memory, nothing else. */
#ifndef HEADROOM_PLAN_COMPONENT_H
#define HEADROOM_PLAN_COMPONENT_H

enum plan_component {
	C_CONTEXT,      /* CUDA context and NCCL, outside the allocator */
	C_WEIGHTS,      /* the weights (a ZeRO-3 rank's shard), LoRA's adapters */
	C_GATHERED,     /* ZeRO-3/FSDP2: weights all-gathered whole for a layer's forward or backward */
	C_GRADS,        /* the weights' gradients (a ZeRO-2/3 rank's shards) */
	C_OPT_STATES,   /* the optimizer's states */
	C_OPT_TEMP,     /* the optimizer step's temporaries (foreach AdamW's sqrt copy) */
	C_ACTIVATIONS,  /* the forward's tensors: saved for the backward, checkpoints, recomputed */
	C_BWD_TEMP,     /* the backward's: gradients of activations in flight, its temporaries */
	C_LOGITS,       /* lm_head's logits and the loss's tensors, forward and backward */
	C_KV_CACHE,     /* keys and values cached (inference; training with use_cache) */
	C_COLLECTIVE,   /* DDP's gradient buckets, FSDP2's all-gather and reduce-scatter buffers */
	C_WORKSPACE,    /* cuBLAS's workspaces, made through the allocator */
	C_BUFFERS,      /* the user's extra device buffers (--buffer) */
	C_FRAGMENTATION, /* reserved and not allocated at the peak */
	C_NCOMPONENTS
};

#endif
