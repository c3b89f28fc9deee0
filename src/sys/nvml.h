/* NVML through dlopen("libnvidia-ml.so.1"): headroom builds and runs without CUDA. */
#ifndef HEADROOM_NVML_H
#define HEADROOM_NVML_H

#include <stdint.h>

struct nvml_gpu {
	char name[96];
	char driver[32];
	uint64_t total_bytes, used_bytes;
};

/* GPU `index`'s name, driver version and memory. 0, -ENOENT (no driver library or no
 * such GPU) or -EIO. */
int nvml_gpu_read(unsigned index, struct nvml_gpu *g);
/* "NAME / driver VERSION": the key under which probe results are kept. Caller frees. */
char *nvml_gpu_key(const struct nvml_gpu *g);
/* Total memory of GPU `index`; as nvml_gpu_read. */
int nvml_gpu_total_bytes(unsigned index, uint64_t *total);

#endif
