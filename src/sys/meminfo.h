/* /proc/meminfo and /proc/vmstat. root is "" for the live system or a fixture tree. */
#ifndef HEADROOM_MEMINFO_H
#define HEADROOM_MEMINFO_H

#include <stdint.h>

struct meminfo {
	uint64_t total_bytes;
	uint64_t available_bytes; /* MemAvailable: what can be allocated without swapping */
	uint64_t free_bytes;
	uint64_t swap_free_bytes;
};

/* 0, or -errno (-ENODATA when MemTotal or MemAvailable is missing). */
int meminfo_read(const char *root, struct meminfo *out);
/* Kernel OOM kills since boot (/proc/vmstat oom_kill, Linux 4.13+). 0 or -errno. */
int meminfo_oom_kills(const char *root, uint64_t *out);

#endif
