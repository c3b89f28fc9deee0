/* Pressure stall information: /proc/pressure/memory or a cgroup's memory.pressure. */
#ifndef HEADROOM_PSI_H
#define HEADROOM_PSI_H

#include <stdint.h>

struct psi {
	double some_avg10_pct; /* share of the last 10 s some task waited for memory */
	double full_avg10_pct; /* share of the last 10 s all tasks waited */
	uint64_t some_total_us;
	uint64_t full_total_us;
};

/* Parse a pressure file. 0 or -errno (-ENOENT when the kernel has no PSI). */
int psi_read(const char *path, struct psi *out);
/* Parse the text of a pressure file. 0 or -EINVAL. */
int psi_parse(const char *text, struct psi *out);

#endif
