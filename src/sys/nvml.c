#include "sys/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xalloc.h"

/* NVML's return codes that matter here */
#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10
#define NVML_EVENT_XID_CRITICAL 0x8ULL
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL

typedef struct nvml_device *nvml_device_t;

struct memory_v1 {
	unsigned long long total, free, used;
};

struct memory_v2 {
	unsigned version;
	unsigned long long total, reserved, free, used;
};
#define MEMORY_V2_VERSION ((unsigned)(sizeof(struct memory_v2) | (2u << 24)))

struct pci_info {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct utilization {
	unsigned gpu, memory;
};

/* nvmlProcessInfo_v1_t; v2/v3 add the GPU and compute instance ids (24 bytes); the R535
 * drivers' v3 wrote 32-byte entries (a usedGpuCcProtectedMemory field their header had) */
struct proc_v1 {
	unsigned pid;
	unsigned long long used;
};

/* nvmlEventData_t */
struct event_data {
	nvml_device_t device;
	unsigned long long type, data;
	unsigned gpu_instance, compute_instance;
};
typedef struct nvml_event_set *nvml_event_set_t;

struct nvml {
	void *lib;
	nvml_event_set_t events;  /* NULL: no XID events */
	int (*ev_free)(nvml_event_set_t);
	int (*ev_wait)(nvml_event_set_t, struct event_data *, unsigned);
	char driver[32];
	int (*init)(void), (*shutdown)(void), (*count)(unsigned *), (*handle)(unsigned, nvml_device_t *);
	int (*mem2)(nvml_device_t, struct memory_v2 *), (*mem1)(nvml_device_t, struct memory_v1 *);
	int (*uuid)(nvml_device_t, char *, unsigned), (*name)(nvml_device_t, char *, unsigned);
	int (*pci3)(nvml_device_t, struct pci_info *), (*pci)(nvml_device_t, struct pci_info *);
	int (*util)(nvml_device_t, struct utilization *);
	int (*procs[3])(nvml_device_t, unsigned *, void *); /* v3, v2, v1 */
	int (*driver_version)(char *, unsigned);
};

static void *sym(struct nvml *n, const char *name)
{
	return dlsym(n->lib, name);
}

/* XID events where the driver has them; a device that cannot register is skipped. */
static void register_xid(struct nvml *n)
{
	int (*create)(nvml_event_set_t *), (*reg)(nvml_device_t, unsigned long long, nvml_event_set_t);
	unsigned count = 0;
	int any = 0;

	*(void **)&create = sym(n, "nvmlEventSetCreate");
	*(void **)&reg = sym(n, "nvmlDeviceRegisterEvents");
	*(void **)&n->ev_free = sym(n, "nvmlEventSetFree");
	*(void **)&n->ev_wait = sym(n, "nvmlEventSetWait_v2");
	if (!create || !reg || !n->ev_free || !n->ev_wait || create(&n->events) != NVML_SUCCESS) {
		n->events = NULL;
		return;
	}
	n->count(&count);
	for (unsigned i = 0; i < count; i++) {
		nvml_device_t dev;
		if (n->handle(i, &dev) == NVML_SUCCESS && reg(dev, NVML_EVENT_XID_CRITICAL, n->events) == NVML_SUCCESS)
			any = 1;
	}
	if (!any) {
		n->ev_free(n->events);
		n->events = NULL;
	}
}

int nvml_xid_poll(struct nvml *n, struct nvml_xid *out, int cap)
{
	struct event_data e;
	int got = 0;

	if (!n->events)
		return -ENOTSUP;
	while (got < cap && n->ev_wait(n->events, &e, 0) == NVML_SUCCESS) {
		unsigned count = 0, gpu = 0;
		n->count(&count);
		for (unsigned i = 0; i < count; i++) {
			nvml_device_t dev;
			if (n->handle(i, &dev) == NVML_SUCCESS && dev == e.device)
				gpu = i;
		}
		out[got].gpu = gpu;
		out[got].code = e.data;
		got++;
	}
	return got;
}

int nvml_open(struct nvml **out, const char **why)
{
	struct nvml *n = xcalloc(1, sizeof(*n));

	*out = NULL;
	n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		*why = "libnvidia-ml.so.1 not found (no NVIDIA driver)";
		free(n);
		return -ENOENT;
	}
	*(void **)&n->init = sym(n, "nvmlInit_v2");
	if (!n->init)
		*(void **)&n->init = sym(n, "nvmlInit");
	*(void **)&n->shutdown = sym(n, "nvmlShutdown");
	*(void **)&n->count = sym(n, "nvmlDeviceGetCount_v2");
	if (!n->count)
		*(void **)&n->count = sym(n, "nvmlDeviceGetCount");
	*(void **)&n->handle = sym(n, "nvmlDeviceGetHandleByIndex_v2");
	if (!n->handle)
		*(void **)&n->handle = sym(n, "nvmlDeviceGetHandleByIndex");
	*(void **)&n->mem2 = sym(n, "nvmlDeviceGetMemoryInfo_v2");
	*(void **)&n->mem1 = sym(n, "nvmlDeviceGetMemoryInfo");
	*(void **)&n->uuid = sym(n, "nvmlDeviceGetUUID");
	*(void **)&n->name = sym(n, "nvmlDeviceGetName");
	*(void **)&n->pci3 = sym(n, "nvmlDeviceGetPciInfo_v3");
	*(void **)&n->pci = sym(n, "nvmlDeviceGetPciInfo");
	*(void **)&n->util = sym(n, "nvmlDeviceGetUtilizationRates");
	*(void **)&n->procs[0] = sym(n, "nvmlDeviceGetComputeRunningProcesses_v3");
	*(void **)&n->procs[1] = sym(n, "nvmlDeviceGetComputeRunningProcesses_v2");
	*(void **)&n->procs[2] = sym(n, "nvmlDeviceGetComputeRunningProcesses");
	*(void **)&n->driver_version = sym(n, "nvmlSystemGetDriverVersion");
	if (!n->init || !n->shutdown || !n->count || !n->handle || (!n->mem2 && !n->mem1)) {
		*why = "libnvidia-ml.so.1 lacks the core functions (init, device count, handle, memory)";
		goto fail;
	}
	if (n->init() != NVML_SUCCESS) {
		*why = "nvmlInit failed (driver not loaded, or no permission)";
		goto fail;
	}
	if (!n->driver_version || n->driver_version(n->driver, sizeof(n->driver)) != NVML_SUCCESS)
		snprintf(n->driver, sizeof(n->driver), "unknown");
	register_xid(n);
	*out = n;
	return 0;
fail:
	dlclose(n->lib);
	free(n);
	return -EIO;
}

void nvml_close(struct nvml *n)
{
	if (!n)
		return;
	if (n->events)
		n->ev_free(n->events);
	n->shutdown();
	dlclose(n->lib);
	free(n);
}

const char *nvml_driver_version(const struct nvml *n)
{
	return n->driver;
}

int nvml_device_count(struct nvml *n, unsigned *count)
{
	return n->count(count) == NVML_SUCCESS ? 0 : -EIO;
}

int nvml_device_read(struct nvml *n, unsigned index, struct nvml_dev *d)
{
	nvml_device_t dev;
	struct memory_v2 m2 = { .version = MEMORY_V2_VERSION };
	struct memory_v1 m1;
	struct pci_info pci;
	struct utilization u;

	memset(d, 0, sizeof(*d));
	d->reserved_bytes = -1;
	d->util_gpu_pct = d->util_mem_pct = -1;
	if (n->handle(index, &dev) != NVML_SUCCESS)
		return -EIO;
	if (n->mem2 && n->mem2(dev, &m2) == NVML_SUCCESS) {
		d->total_bytes = m2.total;
		d->used_bytes = m2.used;
		d->free_bytes = m2.free;
		d->reserved_bytes = (int64_t)m2.reserved;
	} else if (n->mem1 && n->mem1(dev, &m1) == NVML_SUCCESS) {
		d->total_bytes = m1.total;
		d->used_bytes = m1.used;
		d->free_bytes = m1.free;
	} else {
		return -EIO;
	}
	if (!n->uuid || n->uuid(dev, d->uuid, sizeof(d->uuid)) != NVML_SUCCESS)
		d->uuid[0] = '\0';
	if (!n->name || n->name(dev, d->name, sizeof(d->name)) != NVML_SUCCESS)
		snprintf(d->name, sizeof(d->name), "GPU %u", index);
	if ((n->pci3 && n->pci3(dev, &pci) == NVML_SUCCESS) || (n->pci && n->pci(dev, &pci) == NVML_SUCCESS))
		snprintf(d->bus_id, sizeof(d->bus_id), "%.31s", pci.bus_id);
	if (n->util && n->util(dev, &u) == NVML_SUCCESS) {
		d->util_gpu_pct = (int)u.gpu;
		d->util_mem_pct = (int)u.memory;
	}
	return 0;
}

int nvml_device_processes(struct nvml *n, unsigned index, struct nvml_proc *out, unsigned cap, unsigned *count)
{
	nvml_device_t dev;
	/* v3 and v2 entries are 24 bytes, v1 16, the R535 drivers' v3 32 */
	static const size_t stride_of[3] = { 24, 24, 16 };
	unsigned char *buf;
	int rc = -ENOTSUP;

	*count = 0;
	if (n->handle(index, &dev) != NVML_SUCCESS)
		return -EIO;
	buf = xcalloc(cap ? cap : 1, 32);
	for (int v = 0; v < 3; v++) {
		unsigned got = cap;
		size_t stride = stride_of[v];
		int r;

		if (!n->procs[v])
			continue;
		if (v == 0 && !strncmp(n->driver, "535.", 4))
			stride = 32;
		r = n->procs[v](dev, &got, buf);
		if (r == NVML_ERROR_INSUFFICIENT_SIZE)
			got = cap; /* more than we can hold: keep the first cap */
		else if (r != NVML_SUCCESS)
			continue;
		for (unsigned i = 0; i < got && i < cap; i++) {
			const struct proc_v1 *p = (const struct proc_v1 *)(buf + i * stride);
			out[i].pid = p->pid;
			out[i].used_bytes = p->used == NVML_VALUE_NOT_AVAILABLE ? -1 : (int64_t)p->used;
		}
		*count = got < cap ? got : cap;
		rc = 0;
		break;
	}
	free(buf);
	return rc;
}

int nvml_gpu_read(unsigned index, struct nvml_gpu *g)
{
	struct nvml *n;
	struct nvml_dev d;
	const char *why;
	int rc = nvml_open(&n, &why);

	memset(g, 0, sizeof(*g));
	if (rc)
		return rc == -ENOENT ? -ENOENT : -EIO;
	rc = nvml_device_read(n, index, &d);
	if (!rc) {
		snprintf(g->name, sizeof(g->name), "%s", d.name);
		snprintf(g->uuid, sizeof(g->uuid), "%s", d.uuid);
		snprintf(g->driver, sizeof(g->driver), "%s", nvml_driver_version(n));
		g->total_bytes = d.total_bytes;
		g->used_bytes = d.used_bytes;
	} else {
		rc = -ENOENT;
	}
	nvml_close(n);
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
