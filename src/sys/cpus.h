/* How many CPUs this process may use: its affinity mask (taskset, a container's cpuset),
 * less where a cgroup v2 CPU quota (cpu.max) allows fewer. */
#ifndef HEADROOM_CPUS_H
#define HEADROOM_CPUS_H

/* root is "" for the live system or a fixture tree (for the cgroup; the affinity mask is
 * always this process's). At least 1. */
int cpus_usable(const char *root);

#endif
