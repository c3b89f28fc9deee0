/* The memory cgroup that applies to a process, v1 or v2, and per-job child groups.
 * Everything here is optional: without cgroups the callers fall back to /proc. */
#ifndef HEADROOM_CGROUP_H
#define HEADROOM_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

enum cgroup_version { CGROUP_NONE = 0, CGROUP_V1 = 1, CGROUP_V2 = 2 };

struct cgroup {
	enum cgroup_version version;
	char *dir;        /* memory controller directory (v1) or unified directory (v2); owned */
	char *mount;      /* the hierarchy's mount point, to walk up to; owned */
};

/* Find the memory cgroup of pid ("self" when 0) under root ("" for the live system),
 * from root/proc/PID/cgroup and root/proc/PID/mountinfo. -ENOENT when none is usable. */
int cgroup_find(const char *root, pid_t pid, struct cgroup *out);
void cgroup_free(struct cgroup *cg);

/* The smallest memory limit on the way from cg up to its mount. -ENODATA when unlimited. */
int cgroup_mem_limit(const struct cgroup *cg, uint64_t *out_bytes);
/* The smallest CPU bandwidth limit on the way up (v2 cpu.max), in thousandths of a CPU:
 * -ENODATA when unlimited, -ENOTSUP in v1 (its cpu controller is a hierarchy of its own). */
int cgroup_cpu_limit(const struct cgroup *cg, uint64_t *out_milli);
/* Charged memory minus inactive page cache (what cannot be reclaimed cheaply). */
int cgroup_mem_working_set(const struct cgroup *cg, uint64_t *out_bytes);
/* Highest charge seen (v2 memory.peak, v1 memory.max_usage_in_bytes), over the group's
 * whole life: a group used before keeps an earlier peak. */
int cgroup_mem_peak(const struct cgroup *cg, uint64_t *out_bytes);
/* Where a window of the group's peak starts (cgroup_mem_peak_mark). */
struct cgroup_peak_mark {
	int reset;              /* the highest charge was reset to the charge now (v1, where permitted) */
	int known;              /* start_bytes could be read */
	uint64_t start_bytes;   /* the highest charge at the mark */
};
/* Start a window: reset the highest charge where the kernel lets us (a write to v1's
 * memory.max_usage_in_bytes; taken as done only when it then reads no more than the
 * charge now), and note it. 0 or -errno. */
int cgroup_mem_peak_mark(const struct cgroup *cg, struct cgroup_peak_mark *m);
/* The highest charge since the mark: -ENODATA when it cannot be told, the peak being
 * one from before the mark that was not reset and was not passed since. */
int cgroup_mem_peak_since(const struct cgroup *cg, const struct cgroup_peak_mark *m, uint64_t *out_bytes);
/* OOM kills inside this group (v2 memory.events, v1 memory.oom_control). */
int cgroup_oom_kills(const struct cgroup *cg, uint64_t *out);
/* Path of the group's pressure file (v2 only); NULL otherwise. Caller frees. */
char *cgroup_pressure_path(const struct cgroup *cg);

/* Does cg's memory usage and limit cover its child groups? Always in v2; in v1 only
 * with memory.use_hierarchy set (the default on kernels since 4.x, forced since 5.17). */
int cgroup_children_counted(const struct cgroup *cg);
/* Create child group name under cg (where permitted). 0 or -errno. */
int cgroup_child_create(const struct cgroup *cg, const char *name, struct cgroup *child);
/* Move pid into the group. */
int cgroup_attach(const struct cgroup *cg, pid_t pid);
/* SIGKILL every process in the group until it is empty (bounded). Returns how many were signalled. */
int cgroup_kill_all(const struct cgroup *cg);
/* Freeze (1) or thaw (0) every process in the group: v2 cgroup.freeze. -ENOTSUP in v1,
 * whose freezer is a hierarchy of its own. */
int cgroup_freeze(const struct cgroup *cg, int on);
/* Remove an empty group. */
int cgroup_remove(const struct cgroup *cg);

#endif
