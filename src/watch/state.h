/* What the watchdog knows: GPUs, GPU processes, jobs, host memory, event counts. Filled
 * by `headroom watch` each sample, rendered by the outputs. */
#ifndef HEADROOM_WATCH_STATE_H
#define HEADROOM_WATCH_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/nvml.h"
#include "watch/detect.h"
#include "watch/event.h"

struct wgpu {
	int ok;                   /* the last read worked */
	struct nvml_dev d;
	struct series used;
	double ttoom_s;           /* -1 unknown / not rising */
	uint64_t peak_used_bytes;
	int low_free;             /* the low-free condition holds (reported once per episode) */
	int ttoom_warned;
	int fail_reported;        /* a failed read was reported; again only after a good one */
};

struct wproc {
	pid_t pid;
	unsigned gpu;
	int64_t used_bytes, peak_bytes; /* -1 unknown */
	char job[64];
	int rank;                 /* -1 unknown */
	int alive;
	int pidfd;                /* -1 when pidfd_open is not available */
	int64_t unchanged_since_ms;
	struct series trend;
	int stuck_warned, ttoom_warned;
	char comm[32];
	pid_t ns_pid;             /* the pid inside its container, 0 when the same */
};

struct wjob {
	char key[64];
	int seen, alive, ended;
	int partial_reported;
	int stopping;             /* survivors were sent SIGTERM */
	int64_t kill_at_ms;
};

struct watch_state {
	char hostname[64];
	int nvml_ok;              /* NVML loaded and the device count read */
	struct wgpu *gpus;
	size_t ngpus;
	struct wproc *procs;
	size_t nprocs, capprocs;
	struct wjob *jobs;
	size_t njobs, capjobs;
	int has_host;
	uint64_t host_total_bytes, host_available_bytes;
	int has_oom;
	uint64_t host_oom_kills;
	double psi_some_avg10, psi_full_avg10; /* < 0 unknown */
	uint64_t events[EV_COUNT];
};

#endif
