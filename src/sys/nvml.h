/* NVML through dlopen("libnvidia-ml.so.1"): headroom builds and runs without CUDA. */
#ifndef HEADROOM_NVML_H
#define HEADROOM_NVML_H

#include <stdint.h>

/* Total memory of GPU `index`. 0, -ENOENT (no driver library or no such GPU) or -EIO. */
int nvml_gpu_total_bytes(unsigned index, uint64_t *total);

#endif
