#include "plan/pytorch.h"

#include <stddef.h>

#define MiB (1LL << 20)

static const struct pytorch_constants rows[] = {
	{
		.torch = "2.11 (transformers 5.17, CUDA 13.0), H200",
		.cuda_context = 740 * MiB,
		.nccl_rank = 862 * MiB,
		.alloc = { .min_block = 512, .small_size = 1 * MiB, .small_buffer = 2 * MiB, .large_buffer = 20 * MiB,
			   .min_large_alloc = 10 * MiB, .round_large = 2 * MiB },
		.cublas_workspace = 32 * MiB,
		.ddp_first_bucket = 1 * MiB,
		.ddp_bucket = 25 * MiB,
		.sum_staging_max = 132 * MiB,
		.sum_staging_rows = 128,
		.flash_bwd_extra = 512,
		.embed_partial_per = 10,
	},
};

const struct pytorch_constants *pytorch_constants(void)
{
	return &rows[sizeof(rows) / sizeof(rows[0]) - 1];
}
