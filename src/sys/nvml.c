#include "sys/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "util/xalloc.h"

/* Only what is used, as the NVML headers lay it out. */
typedef struct nvml_device *nvml_device_t;
struct nvml_memory {
	unsigned long long total, free, used;
};

int nvml_gpu_read(unsigned index, struct nvml_gpu *g)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(void), (*shutdown)(void), (*handle)(unsigned, nvml_device_t *);
	int (*meminfo)(nvml_device_t, struct nvml_memory *), (*name)(nvml_device_t, char *, unsigned);
	int (*driver)(char *, unsigned);
	nvml_device_t dev;
	struct nvml_memory mem;
	int rc = -EIO;

	memset(g, 0, sizeof(*g));
	if (!lib)
		return -ENOENT;
	*(void **)&init = dlsym(lib, "nvmlInit_v2");
	*(void **)&shutdown = dlsym(lib, "nvmlShutdown");
	*(void **)&handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&meminfo = dlsym(lib, "nvmlDeviceGetMemoryInfo");
	*(void **)&name = dlsym(lib, "nvmlDeviceGetName");
	*(void **)&driver = dlsym(lib, "nvmlSystemGetDriverVersion");
	if (!init || !shutdown || !handle || !meminfo || init() != 0)
		goto out;
	if (handle(index, &dev) != 0) {
		rc = -ENOENT;
	} else if (meminfo(dev, &mem) == 0) {
		g->total_bytes = mem.total;
		g->used_bytes = mem.used;
		if (!name || name(dev, g->name, sizeof(g->name)) != 0)
			strcpy(g->name, "unknown GPU");
		if (!driver || driver(g->driver, sizeof(g->driver)) != 0)
			strcpy(g->driver, "unknown");
		rc = 0;
	}
	shutdown();
out:
	dlclose(lib);
	return rc;
}

int nvml_gpu_total_bytes(unsigned index, uint64_t *total)
{
	struct nvml_gpu g;
	int rc = nvml_gpu_read(index, &g);

	if (!rc)
		*total = g.total_bytes;
	return rc;
}

char *nvml_gpu_key(const struct nvml_gpu *g)
{
	return xasprintf("%s / driver %s", g->name, g->driver);
}
