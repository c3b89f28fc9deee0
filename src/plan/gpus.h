/* The GPUs `headroom plan --gpu NAME` knows by name, for planning on a machine without
 * the GPU: each one's total memory as its driver reports it. */
#ifndef HEADROOM_PLAN_GPUS_H
#define HEADROOM_PLAN_GPUS_H

#include <stddef.h>
#include <stdint.h>

struct gpu_spec {
	const char *name;       /* lower case, as --gpu takes it: "h200", "a100-80gb" */
	uint64_t memory_bytes;  /* total, as the driver reports it */
};

/* The GPU called name, or NULL: case, spaces, hyphens and underscores do not matter,
 * nor a leading "NVIDIA"/"GeForce"/"Tesla"; "80G" is "80GB"; the usual other
 * spellings are aliases ("h100" and "a100" the 80 GB cards, "H100 NVL", "A100-SXM4-40GB",
 * "RTX 4090"). The table is static: never freed. */
const struct gpu_spec *gpus_find(const char *name);
/* The i-th GPU of the table in the order the usage lists them, or NULL past its end. */
const struct gpu_spec *gpus_at(size_t i);

/* The name nearest a GPU name gpus_find did not know ("h10": "h100"), or NULL. */
const char *gpus_suggest(const char *name);

#endif
