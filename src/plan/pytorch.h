/* PyTorch's constants the simulation depends on: workspaces, bucket sizes, the sizes of
 * kernels' temporaries, as the allocator histories of the torch version they were
 * measured on show them (docs/plan.md). One row per torch version; the simulation takes
 * the row it models (pytorch_constants). A new torch that moves one is a new row. Pure. */
#ifndef HEADROOM_PLAN_PYTORCH_H
#define HEADROOM_PLAN_PYTORCH_H

#include <stdint.h>

/* The CUDA caching allocator's (c10/cuda/CUDACachingAllocator.cpp's k* constants). */
struct pytorch_allocator {
	uint64_t min_block;              /* every request rounded up to a multiple */
	uint64_t small_size;             /* the small pool's largest request */
	uint64_t small_buffer;           /* a small pool's segment */
	uint64_t large_buffer;           /* a segment for large requests under min_large_alloc */
	uint64_t min_large_alloc;
	uint64_t round_large;            /* larger segments rounded up to a multiple */
};

struct pytorch_constants {
	const char *torch;               /* the version measured (with transformers') */
	/* outside the caching allocator, as nvidia-smi sees it beyond torch's reserved memory
	 * (`headroom probe` measures the context per machine) */
	int64_t cuda_context;            /* the CUDA context with cuBLAS/cuBLASLt workspaces and
					  * the allocator's bookkeeping: 15 of the 17 H200 fixture
					  * cases (the two fused-AdamW ones a little less) */
	int64_t nccl_rank;               /* a data-parallel rank's NCCL communicator and buffers
					  * beyond one GPU's context (the two-GPU H200 cases, DDP
					  * and FSDP2: bench/results/gpu-dist-h200x2.jsonl) */
	struct pytorch_allocator alloc;
	/* through the caching allocator */
	int64_t cublas_workspace;        /* a cuBLAS handle's workspace on Hopper, through the
					  * caching allocator (CUBLAS_WORKSPACE_CONFIG changes it) */
	int64_t ddp_first_bucket;        /* DDP's first gradient bucket after its rebuild */
	int64_t ddp_bucket;              /* bucket_cap_mb: the others */
	int64_t sum_staging_max;         /* a reduction's staging buffer's cap (a norm weight's
					  * gradient summed over the tokens) */
	int64_t sum_staging_rows;        /* ... in rows of this many */
	int64_t flash_bwd_extra;         /* flash attention's backward workspace beyond its
					  * dq, dk, dv and row sums */
	int64_t embed_partial_per;       /* the embedding's backward: partial sums over a tenth
					  * more rows than tokens (T + T / embed_partial_per) */
};

/* The row the simulation models: the newest measured. */
const struct pytorch_constants *pytorch_constants(void);

#endif
