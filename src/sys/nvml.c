#include "sys/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

/* Only what is used, as the NVML headers lay it out. */
typedef struct nvml_device *nvml_device_t;
struct nvml_memory {
	unsigned long long total, free, used;
};

int nvml_gpu_total_bytes(unsigned index, uint64_t *total)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(void), (*shutdown)(void), (*handle)(unsigned, nvml_device_t *);
	int (*meminfo)(nvml_device_t, struct nvml_memory *);
	nvml_device_t dev;
	struct nvml_memory mem;
	int rc = -EIO;

	if (!lib)
		return -ENOENT;
	*(void **)&init = dlsym(lib, "nvmlInit_v2");
	*(void **)&shutdown = dlsym(lib, "nvmlShutdown");
	*(void **)&handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&meminfo = dlsym(lib, "nvmlDeviceGetMemoryInfo");
	if (!init || !shutdown || !handle || !meminfo || init() != 0)
		goto out;
	if (handle(index, &dev) != 0)
		rc = -ENOENT;
	else if (meminfo(dev, &mem) == 0) {
		*total = mem.total;
		rc = 0;
	}
	shutdown();
out:
	dlclose(lib);
	return rc;
}
