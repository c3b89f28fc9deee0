/* NVML through dlopen("libnvidia-ml.so.1"): headroom builds and runs without CUDA.
 * Only the types used are declared here, laid out as NVML's headers lay them out; the
 * newest symbols are preferred with fallbacks; only init, count, handle and memory are
 * required, everything else (UUID, PCI, utilization, processes) may be missing or
 * NOT_SUPPORTED, which is information, not an error. */
#ifndef HEADROOM_NVML_H
#define HEADROOM_NVML_H

#include <stdint.h>

struct nvml;

struct nvml_dev {
	char uuid[96];            /* "GPU-..." or "" when unknown */
	char bus_id[32];          /* "00000000:04:00.0" or "" */
	char name[96];
	uint64_t total_bytes, used_bytes, free_bytes;
	int64_t reserved_bytes;   /* -1 unknown (memory info v1) */
	int util_gpu_pct;         /* -1 unknown / not supported */
	int util_mem_pct;
};

struct nvml_proc {
	unsigned pid;             /* host pid */
	int64_t used_bytes;       /* -1 when the driver does not say (no permission, MIG) */
};

/* Load and initialise. 0; -ENOENT no library (no driver); -EIO it failed (*why says). */
int nvml_open(struct nvml **out, const char **why);
void nvml_close(struct nvml *n);
const char *nvml_driver_version(const struct nvml *n);
int nvml_device_count(struct nvml *n, unsigned *count);
/* 0 or -EIO (the core memory query failed). */
int nvml_device_read(struct nvml *n, unsigned index, struct nvml_dev *d);
/* Compute processes on a device: at most cap into out, *count set. 0, -ENOTSUP when the
 * driver cannot list them, -EIO. */
int nvml_device_processes(struct nvml *n, unsigned index, struct nvml_proc *out, unsigned cap, unsigned *count);

/* XID errors the driver reports (critical ones), through an NVML event set registered
 * on every device at nvml_open. Fills at most cap (gpu index, xid code) pairs without
 * waiting; returns how many, or -ENOTSUP when the driver has no events. */
struct nvml_xid {
	unsigned gpu;
	unsigned long long code;
};
int nvml_xid_poll(struct nvml *n, struct nvml_xid *out, int cap);

/* One-shot helpers for plan and probe. */
struct nvml_gpu {
	char name[96];
	char uuid[96];            /* "" when the driver does not say */
	char driver[32];
	uint64_t total_bytes, used_bytes;
};
int nvml_gpu_read(unsigned index, struct nvml_gpu *g);
int nvml_gpu_total_bytes(unsigned index, uint64_t *total);

#endif
