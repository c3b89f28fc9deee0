#include "sys/cpus.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

#include "sys/cgroup.h"

/* The affinity mask's CPUs, the mask grown until the kernel's fits; 0 when unknown. */
static int affinity_cpus(void)
{
	for (int n = 1024; n <= (1 << 16); n *= 2) {
		cpu_set_t *set = CPU_ALLOC((size_t)n);
		size_t size = CPU_ALLOC_SIZE((size_t)n);
		int count = 0, rc;

		if (!set)
			return 0;
		rc = sched_getaffinity(0, size, set);
		if (!rc)
			count = CPU_COUNT_S(size, set);
		CPU_FREE(set);
		if (!rc)
			return count;
		if (errno != EINVAL)
			return 0;
	}
	return 0;
}

int cpus_usable(const char *root)
{
	int n = affinity_cpus();
	struct cgroup cg;
	uint64_t milli;

	if (n <= 0) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		n = online > 0 ? (int)online : 1;
	}
	if (!cgroup_find(root, 0, &cg)) {
		if (!cgroup_cpu_limit(&cg, &milli)) {
			uint64_t quota = (milli + 999) / 1000;
			if (quota < 1)
				quota = 1;
			if (quota < (uint64_t)n)
				n = (int)quota;
		}
		cgroup_free(&cg);
	}
	return n;
}
