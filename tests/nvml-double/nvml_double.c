/* A test double of NVML: built as libnvidia-ml.so.1 and found by headroom's
 * dlopen("libnvidia-ml.so.1") through LD_LIBRARY_PATH. Its GPUs and processes come from
 * the text file $NVML_DOUBLE_SCRIPT, read again at every call so that a test can change
 * them while headroom watches:
 *   driver 550.54.15
 *   gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=1000M used=100M reserved=10M util=30 memutil=5
 *   proc gpu=0 pid=1234 used=300M            (used=na: the driver does not say)
 *   fail gpu=0                               (memory reads of GPU 0 fail)
 *   nosupport util                           (utilization: NOT_SUPPORTED)
 *   xid gpu=0 code=79                        (an XID error, delivered once)
 * NVML_DOUBLE_V1=1 makes the _v2/_v3 functions answer FUNCTION_NOT_FOUND, as old drivers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXG 16
#define MAXP 256

struct gpu {
	char uuid[96], bus[32], name[96];
	unsigned long long total, used, reserved;
	unsigned util, memutil;
	int fail;
};
struct proc {
	int gpu;
	unsigned pid;
	unsigned long long used;
};
static struct gpu gpus[MAXG];
static struct proc procs[MAXP];
struct xid {
	int gpu;
	unsigned long long code;
};
static struct xid xids[64];
static int ngpus, nprocs, util_unsupported, nxids, xids_delivered;
static char driver[32];

static unsigned long long size_of(const char *v)
{
	char *end;
	double n = strtod(v, &end);
	switch (*end) {
	case 'K': return (unsigned long long)(n * 1024);
	case 'M': return (unsigned long long)(n * 1024 * 1024);
	case 'G': return (unsigned long long)(n * 1024 * 1024 * 1024);
	default: return (unsigned long long)n;
	}
}

/* The next KEY=VALUE word of the line strtok_r is walking (words without '=' are
 * skipped); 0 at its end. */
static int next_kv(char **save, char **key, char **val)
{
	char *w;

	while ((w = strtok_r(NULL, " \t\n", save))) {
		char *v = strchr(w, '=');
		if (!v)
			continue;
		*v++ = '\0';
		*key = w, *val = v;
		return 1;
	}
	return 0;
}

static void load(void)
{
	const char *path = getenv("NVML_DOUBLE_SCRIPT");
	char line[512];
	FILE *f = path ? fopen(path, "r") : NULL;

	ngpus = nprocs = util_unsupported = nxids = 0;
	strcpy(driver, "550.54.15");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *w = strtok_r(line, " \t\n", &save);
		if (!w)
			continue;
		if (!strcmp(w, "driver")) {
			w = strtok_r(NULL, " \t\n", &save);
			if (w)
				snprintf(driver, sizeof(driver), "%s", w);
		} else if (!strcmp(w, "gpu") && ngpus < MAXG) {
			struct gpu *g = &gpus[ngpus++];
			memset(g, 0, sizeof(*g));
			char *v;
			while (next_kv(&save, &w, &v)) {
				if (!strcmp(w, "uuid")) snprintf(g->uuid, sizeof(g->uuid), "%s", v);
				else if (!strcmp(w, "bus")) snprintf(g->bus, sizeof(g->bus), "%s", v);
				else if (!strcmp(w, "name")) snprintf(g->name, sizeof(g->name), "%s", v);
				else if (!strcmp(w, "total")) g->total = size_of(v);
				else if (!strcmp(w, "used")) g->used = size_of(v);
				else if (!strcmp(w, "reserved")) g->reserved = size_of(v);
				else if (!strcmp(w, "util")) g->util = (unsigned)atoi(v);
				else if (!strcmp(w, "memutil")) g->memutil = (unsigned)atoi(v);
			}
		} else if (!strcmp(w, "proc") && nprocs < MAXP) {
			struct proc *p = &procs[nprocs++];
			memset(p, 0, sizeof(*p));
			char *v;
			while (next_kv(&save, &w, &v)) {
				if (!strcmp(w, "gpu")) p->gpu = atoi(v);
				else if (!strcmp(w, "pid")) p->pid = (unsigned)atoi(v);
				else if (!strcmp(w, "used")) p->used = strcmp(v, "na") ? size_of(v) : 0xFFFFFFFFFFFFFFFFULL;
			}
		} else if (!strcmp(w, "fail")) {
			w = strtok_r(NULL, " \t\n", &save);
			int i = w && !strncmp(w, "gpu=", 4) ? atoi(w + 4) : -1;
			if (i >= 0 && i < MAXG)
				gpus[i].fail = 1;
		} else if (!strcmp(w, "xid") && nxids < 64) {
			struct xid *x = &xids[nxids++];
			memset(x, 0, sizeof(*x));
			char *v;
			while (next_kv(&save, &w, &v)) {
				if (!strcmp(w, "gpu"))
					x->gpu = atoi(v);
				else if (!strcmp(w, "code"))
					x->code = strtoull(v, NULL, 10);
			}
		} else if (!strcmp(w, "nosupport")) {
			w = strtok_r(NULL, " \t\n", &save);
			if (w && !strcmp(w, "util"))
				util_unsupported = 1;
		}
	}
	fclose(f);
}

typedef int ret;
#define OK 0
#define NOT_SUPPORTED 3
#define INVALID 2
#define INSUFFICIENT 7
#define NOT_FOUND_FN 13
#define UNKNOWN 999

static int v1_only(void)
{
	const char *e = getenv("NVML_DOUBLE_V1");
	return e && *e == '1';
}

static int dev_index(void *dev)
{
	return (int)(long)dev - 1;
}

/* the declarations the shared library exports, as NVML's header has them */
ret nvmlInit_v2(void);
ret nvmlShutdown(void);
ret nvmlSystemGetDriverVersion(char *v, unsigned n);
ret nvmlDeviceGetCount_v2(unsigned *n);
ret nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev);
ret nvmlDeviceGetName(void *dev, char *s, unsigned n);
ret nvmlDeviceGetUUID(void *dev, char *s, unsigned n);
struct pci { char legacy[16]; unsigned domain, bus, device, id, sub; char bus_id[32]; };
ret nvmlDeviceGetPciInfo_v3(void *dev, struct pci *p);
struct mem1 { unsigned long long total, free, used; };
struct mem2 { unsigned version; unsigned long long total, reserved, free, used; };
ret nvmlDeviceGetMemoryInfo(void *dev, struct mem1 *m);
ret nvmlDeviceGetMemoryInfo_v2(void *dev, struct mem2 *m);
struct util { unsigned gpu, memory; };
ret nvmlDeviceGetUtilizationRates(void *dev, struct util *u);
ret nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *n, void *out);
ret nvmlDeviceGetComputeRunningProcesses_v2(void *dev, unsigned *n, void *out);
ret nvmlDeviceGetComputeRunningProcesses(void *dev, unsigned *n, void *out);

ret nvmlInit_v2(void) { load(); return OK; }
ret nvmlShutdown(void) { return OK; }
ret nvmlSystemGetDriverVersion(char *v, unsigned n) { load(); snprintf(v, n, "%s", driver); return OK; }
ret nvmlDeviceGetCount_v2(unsigned *n) { load(); *n = (unsigned)ngpus; return OK; }
ret nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev)
{
	load();
	if ((int)i >= ngpus)
		return INVALID;
	*dev = (void *)(long)(i + 1);
	return OK;
}
ret nvmlDeviceGetName(void *dev, char *s, unsigned n) { snprintf(s, n, "%s", gpus[dev_index(dev)].name); return OK; }
ret nvmlDeviceGetUUID(void *dev, char *s, unsigned n) { snprintf(s, n, "%s", gpus[dev_index(dev)].uuid); return OK; }
ret nvmlDeviceGetPciInfo_v3(void *dev, struct pci *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->bus_id, sizeof(p->bus_id), "%s", gpus[dev_index(dev)].bus);
	return OK;
}
ret nvmlDeviceGetMemoryInfo(void *dev, struct mem1 *m)
{
	struct gpu *g = &gpus[dev_index(dev)];
	load();
	if (g->fail)
		return UNKNOWN;
	m->total = g->total, m->used = g->used, m->free = g->total - g->used;
	return OK;
}
ret nvmlDeviceGetMemoryInfo_v2(void *dev, struct mem2 *m)
{
	struct gpu *g = &gpus[dev_index(dev)];
	if (v1_only())
		return NOT_FOUND_FN;
	load();
	if (g->fail)
		return UNKNOWN;
	if (m->version != (unsigned)(sizeof(struct mem2) | (2u << 24)))
		return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	m->total = g->total, m->used = g->used, m->reserved = g->reserved, m->free = g->total - g->used - g->reserved;
	return OK;
}
ret nvmlDeviceGetUtilizationRates(void *dev, struct util *u)
{
	if (util_unsupported)
		return NOT_SUPPORTED;
	u->gpu = gpus[dev_index(dev)].util, u->memory = gpus[dev_index(dev)].memutil;
	return OK;
}

static ret list(void *dev, unsigned *n, void *out, size_t stride)
{
	unsigned cnt = 0, cap = *n;
	load();
	for (int i = 0; i < nprocs; i++) {
		if (procs[i].gpu != dev_index(dev))
			continue;
		if (cnt < cap) {
			unsigned char *e = (unsigned char *)out + cnt * stride;
			memset(e, 0, stride);
			memcpy(e, &procs[i].pid, sizeof(unsigned));
			memcpy(e + 8, &procs[i].used, sizeof(unsigned long long));
		}
		cnt++;
	}
	*n = cnt;
	return cnt > cap ? INSUFFICIENT : OK;
}
ret nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *n, void *out)
{
	/* the R535 drivers wrote 32-byte entries */
	return v1_only() ? NOT_FOUND_FN : list(dev, n, out, strncmp(driver, "535.", 4) ? 24 : 32);
}
ret nvmlDeviceGetComputeRunningProcesses_v2(void *dev, unsigned *n, void *out)
{
	return v1_only() ? NOT_FOUND_FN : list(dev, n, out, 24);
}
ret nvmlDeviceGetComputeRunningProcesses(void *dev, unsigned *n, void *out) { return list(dev, n, out, 16); }

/* events: one set; XIDs from the script, each delivered once */
struct event_data { void *device; unsigned long long type, data; unsigned gi, ci; };
ret nvmlEventSetCreate(void **set);
ret nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set);
ret nvmlEventSetWait_v2(void *set, struct event_data *e, unsigned timeout_ms);
ret nvmlEventSetFree(void *set);

ret nvmlEventSetCreate(void **set) { *set = (void *)1; return OK; }
ret nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set) { (void)dev, (void)types, (void)set; return OK; }
ret nvmlEventSetWait_v2(void *set, struct event_data *e, unsigned timeout_ms)
{
	(void)set, (void)timeout_ms;
	load();
	if (xids_delivered >= nxids)
		return 10; /* NVML_ERROR_TIMEOUT */
	memset(e, 0, sizeof(*e));
	e->device = (void *)(long)(xids[xids_delivered].gpu + 1);
	e->type = 0x8;
	e->data = xids[xids_delivered].code;
	xids_delivered++;
	return OK;
}
ret nvmlEventSetFree(void *set) { (void)set; return OK; }
