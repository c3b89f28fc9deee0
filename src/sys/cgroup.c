#include "sys/cgroup.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/fsutil.h"
#include "util/xalloc.h"

/* v1 "unlimited" is LONG_MAX rounded down to the page size: treat anything this big as none. */
#define V1_UNLIMITED (1ULL << 60)

static int has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += wl)
		if ((p == list || p[-1] == ',') && (p[wl] == ',' || p[wl] == '\0' || p[wl] == ' '))
			return 1;
	return 0;
}

/* Mount point of the cgroup hierarchy: v1 with the memory controller, or cgroup2. */
static char *find_mount(const char *root, const char *pidstr, int want_v2)
{
	char path[PATH_MAX], line[4096];
	char *found = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/%s/mountinfo", root, pidstr);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], fstype[64], opts[1024];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*d %*d %*s %*s %4095s", mnt) != 1)
			continue;
		if (sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) != 2)
			continue;
		if (want_v2 && !strcmp(fstype, "cgroup2"))
			found = xasprintf("%s%s", root, mnt);
		else if (!want_v2 && !strcmp(fstype, "cgroup") && has_word(opts, "memory"))
			found = xasprintf("%s%s", root, mnt);
	}
	fclose(f);
	return found;
}

int cgroup_find(const char *root, pid_t pid, struct cgroup *out)
{
	char path[PATH_MAX], line[4096], pidstr[32];
	char v1path[PATH_MAX] = "", v2path[PATH_MAX] = "";
	int have_v1 = 0, have_v2 = 0;
	FILE *f;

	memset(out, 0, sizeof(*out));
	if (pid)
		snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	else
		snprintf(pidstr, sizeof(pidstr), "self");
	snprintf(path, sizeof(path), "%s/proc/%s/cgroup", root, pidstr);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		line[strcspn(line, "\n")] = '\0';
		*c1 = '\0';
		*c2 = '\0';
		if (!strcmp(line, "0") && c1[1] == '\0') {
			snprintf(v2path, sizeof(v2path), "%s", c2 + 1);
			have_v2 = 1;
		} else if (has_word(c1 + 1, "memory")) {
			snprintf(v1path, sizeof(v1path), "%s", c2 + 1);
			have_v1 = 1;
		}
	}
	fclose(f);

	/* The memory controller lives in one hierarchy only: v1 if it is mounted there. */
	for (int v = 1; v <= 2; v++) {
		struct stat st;
		char *mnt;

		if ((v == 1 && !have_v1) || (v == 2 && !have_v2))
			continue;
		mnt = find_mount(root, pidstr, v == 2);
		if (!mnt)
			continue;
		char *dir = xasprintf("%s%s", mnt, v == 1 ? v1path : v2path);
		/* Inside a cgroup namespace the path may be relative to a root we cannot see. */
		if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
			free(dir);
			dir = xstrdup(mnt);
		}
		char *probe = xasprintf("%s/%s", dir, v == 1 ? "memory.usage_in_bytes" : "memory.current");
		if (access(probe, R_OK) && v == 2) {
			/* v2 without the memory controller at this level (the root group has no
			 * memory.current): usable for kill/freeze, not for memory facts. */
			free(probe);
			probe = xasprintf("%s/cgroup.procs", dir);
		}
		int usable = !access(probe, R_OK);
		free(probe);
		if (!usable) {
			free(dir);
			free(mnt);
			continue;
		}
		out->version = v == 1 ? CGROUP_V1 : CGROUP_V2;
		out->dir = dir;
		out->mount = mnt;
		return 0;
	}
	return -ENOENT;
}

void cgroup_free(struct cgroup *cg)
{
	free(cg->dir);
	free(cg->mount);
	cg->dir = cg->mount = NULL;
	cg->version = CGROUP_NONE;
}

static int read_in(const char *dir, const char *file, uint64_t *out)
{
	char *path = xasprintf("%s/%s", dir, file);
	int rc = fs_read_u64(path, out);

	free(path);
	return rc;
}

/* The smallest value read(DIR/file, &v) gives on the way from cg's directory up to its
 * mount; -ENODATA when none does. */
static int min_up(const struct cgroup *cg, const char *file, int (*read)(const char *path, uint64_t *out),
		  uint64_t *out)
{
	char dir[PATH_MAX];
	uint64_t best = UINT64_MAX;
	size_t mlen = strlen(cg->mount);

	snprintf(dir, sizeof(dir), "%s", cg->dir);
	for (;;) {
		char *path = xasprintf("%s/%s", dir, file);
		uint64_t v;

		if (!read(path, &v) && v < best)
			best = v;
		free(path);
		if (strlen(dir) <= mlen)
			break;
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < mlen)
			break;
		*slash = '\0';
	}
	if (best == UINT64_MAX)
		return -ENODATA;
	*out = best;
	return 0;
}

/* A memory limit file: v2's "max" and v1's huge number both mean none. */
static int read_mem_limit(const char *path, uint64_t *out)
{
	int rc = fs_read_u64(path, out);

	return rc ? rc : *out < V1_UNLIMITED ? 0 : -ENODATA;
}

int cgroup_mem_limit(const struct cgroup *cg, uint64_t *out_bytes)
{
	if (cg->version == CGROUP_NONE)
		return -ENOENT;
	return min_up(cg, cg->version == CGROUP_V1 ? "memory.limit_in_bytes" : "memory.max", read_mem_limit,
		      out_bytes);
}

/* cpu.max: "QUOTA PERIOD" in microseconds, or "max PERIOD"; as thousandths of a CPU.
 * The kernel keeps the period within 1 ms to 1 s and the quota at 1 ms or more. */
static int read_cpu_max(const char *path, uint64_t *out_milli)
{
	char buf[64], *end;
	unsigned long long quota, period;
	FILE *f = fopen(path, "re");
	int rc = -ENODATA;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f) || !strncmp(buf, "max", 3))
		goto out;
	errno = 0;
	quota = strtoull(buf, &end, 10);
	if (errno || end == buf || *end != ' ')
		goto out;
	period = strtoull(end + 1, &end, 10);
	if (errno || (*end != '\n' && *end) || period < 1000 || period > 1000000 || quota < 1000 ||
	    quota > (1ULL << 40))
		goto out;
	*out_milli = quota * 1000 / period;
	rc = 0;
out:
	fclose(f);
	return rc;
}

int cgroup_cpu_limit(const struct cgroup *cg, uint64_t *out_milli)
{
	if (cg->version == CGROUP_NONE)
		return -ENOENT;
	if (cg->version == CGROUP_V1)
		return -ENOTSUP;
	return min_up(cg, "cpu.max", read_cpu_max, out_milli);
}

int cgroup_mem_working_set(const struct cgroup *cg, uint64_t *out_bytes)
{
	char path[PATH_MAX];
	uint64_t usage, inactive = 0;
	int rc;

	if (cg->version == CGROUP_NONE)
		return -ENOENT;
	rc = read_in(cg->dir, cg->version == CGROUP_V1 ? "memory.usage_in_bytes" : "memory.current", &usage);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/memory.stat", cg->dir);
	fs_read_key_u64(path, cg->version == CGROUP_V1 ? "total_inactive_file" : "inactive_file", &inactive);
	*out_bytes = usage > inactive ? usage - inactive : 0;
	return 0;
}

int cgroup_mem_peak(const struct cgroup *cg, uint64_t *out_bytes)
{
	if (cg->version == CGROUP_NONE)
		return -ENOENT;
	return read_in(cg->dir, cg->version == CGROUP_V1 ? "memory.max_usage_in_bytes" : "memory.peak", out_bytes);
}

int cgroup_mem_peak_mark(const struct cgroup *cg, struct cgroup_peak_mark *m)
{
	char path[PATH_MAX];
	uint64_t usage;
	int rc;

	memset(m, 0, sizeof(*m));
	if (cg->version == CGROUP_NONE)
		return -ENOENT;
	if (cg->version == CGROUP_V1) {
		snprintf(path, sizeof(path), "%s/memory.max_usage_in_bytes", cg->dir);
		m->reset = !fs_write(path, "0");
	}
	rc = cgroup_mem_peak(cg, &m->start_bytes);
	m->known = !rc;
	/* the kernel resets it to the charge now: anything above is the old peak still */
	if (m->reset && (rc || read_in(cg->dir, "memory.usage_in_bytes", &usage) || m->start_bytes > usage))
		m->reset = 0;
	return rc;
}

int cgroup_mem_peak_since(const struct cgroup *cg, const struct cgroup_peak_mark *m, uint64_t *out_bytes)
{
	uint64_t peak;
	int rc = cgroup_mem_peak(cg, &peak);

	if (rc)
		return rc;
	if (!m->reset && (!m->known || peak <= m->start_bytes))
		return -ENODATA;
	*out_bytes = peak;
	return 0;
}

int cgroup_oom_kills(const struct cgroup *cg, uint64_t *out)
{
	char path[PATH_MAX];

	if (cg->version == CGROUP_NONE)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", cg->dir, cg->version == CGROUP_V1 ? "memory.oom_control" : "memory.events");
	return fs_read_key_u64(path, "oom_kill", out);
}

char *cgroup_pressure_path(const struct cgroup *cg)
{
	if (cg->version != CGROUP_V2)
		return NULL;
	return xasprintf("%s/memory.pressure", cg->dir);
}

int cgroup_children_counted(const struct cgroup *cg)
{
	uint64_t v;

	if (cg->version == CGROUP_V2)
		return 1;
	if (cg->version == CGROUP_V1)
		return !read_in(cg->dir, "memory.use_hierarchy", &v) && v == 1;
	return 0;
}

int cgroup_child_create(const struct cgroup *cg, const char *name, struct cgroup *child)
{
	char *dir;

	if (cg->version == CGROUP_NONE)
		return -ENOENT;
	dir = xasprintf("%s/%s", cg->dir, name);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		int e = errno;
		free(dir);
		return -e;
	}
	child->version = cg->version;
	child->dir = dir;
	child->mount = xstrdup(cg->mount);
	return 0;
}

int cgroup_attach(const struct cgroup *cg, pid_t pid)
{
	char path[PATH_MAX], num[32];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg->dir);
	snprintf(num, sizeof(num), "%d", (int)pid);
	return fs_write(path, num);
}

int cgroup_kill_all(const struct cgroup *cg)
{
	char path[PATH_MAX];
	int signalled = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg->dir);
	for (int round = 0; round < 50; round++) {
		char buf[8192];
		int any = 0;

		if (fs_read(path, buf, sizeof(buf)) < 0)
			break;
		for (char *p = buf; *p;) {
			char *end;
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0) {
				signalled++;
				any = 1;
			}
			p = end;
			while (*p == '\n')
				p++;
		}
		if (!any)
			break;
		usleep(10000);
	}
	return signalled;
}

int cgroup_freeze(const struct cgroup *cg, int on)
{
	char *path;
	int rc;

	if (cg->version != CGROUP_V2)
		return -ENOTSUP;
	path = xasprintf("%s/cgroup.freeze", cg->dir);
	rc = fs_write(path, on ? "1" : "0");
	free(path);
	return rc;
}

int cgroup_remove(const struct cgroup *cg)
{
	/* Killed processes leave the group only once the kernel has torn them down. */
	for (int i = 0; i < 100; i++) {
		if (!rmdir(cg->dir))
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(10000);
	}
	return -EBUSY;
}
