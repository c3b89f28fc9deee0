#include "govern/leftover.h"

#include <string.h>

#include "util/path.h"
#include "util/strv.h"

/* Ancestors looked at: a table read while processes come and go may hold a cycle. */
#define LEFTOVER_MAX_DEPTH 256

int leftover_is_compiler(const char *comm)
{
	static const char *const names[] = { "cicc", "ptxas", "nvcc", "cudafe++", "fatbinary", "nvlink", "cc1plus",
					     "cc1", "lto1", "ld", "ld.bfd", "ld.gold", "ld.lld", NULL };
	return strv_contains(names, comm);
}

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* A compiler driver or wrapper that a build runs a compile through. */
static int is_driver(const char *comm)
{
	static const char *const names[] = { "cc", "c++", "gcc", "g++", "clang", "clang++", "collect2", "ccache",
					     "sccache", "distcc", "icecc", "hipcc", NULL };
	/* versioned and cross drivers: gcc-12, clang++-16, x86_64-linux-gnu-g++ (whose comm,
	 * cut at 15 bytes, is x86_64-linux-gn) */
	return strv_contains(names, comm) || starts(comm, "gcc-") || starts(comm, "g++-") || starts(comm, "clang-") ||
	       starts(comm, "clang++-") || strstr(comm, "-gcc") || strstr(comm, "-g++") || strstr(comm, "-linux-");
}

/* python running setup.py, pip (also -m pip) or -m build. */
static int is_python_build(char *const argv[])
{
	for (int k = 1; argv[k]; k++) {
		const char *b = path_base(argv[k]);

		if (!strcmp(b, "setup.py") || !strcmp(b, "pip") || !strcmp(b, "pip3"))
			return 1;
		if (!strcmp(argv[k], "-m") && argv[k + 1])
			return !strcmp(argv[k + 1], "pip") || !strcmp(argv[k + 1], "build");
		if (argv[k][0] != '-')
			return 0; /* the script: what it runs is its own business */
	}
	return 0;
}

/* A shell running a command line (`sh -c "..."`, as ninja and make run each job), not a
 * script or an interactive shell: a build script run by hand is not a compile step. */
static int is_shell_command(const char *comm, char *const argv[])
{
	static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh", "busybox", NULL };

	if (!strv_contains(shells, comm))
		return 0;
	for (int k = 1; argv[k] && argv[k][0] == '-'; k++)
		if (!strcmp(argv[k], "-c") || (argv[k][1] != '-' && strchr(argv[k], 'c')))
			return 1;
	return 0;
}

unsigned leftover_role(const struct proc_entry *e, char *const argv[])
{
	static const char *const tools[] = { "ninja", "make", "gmake", "samu", "cmake", "pip", "pip3", "uv",
					     "headroom", NULL };
	static const char *const reapers[] = { "systemd", "init", "tini", "dumb-init", "docker-init", "catatonit",
					       "containerd-shim", NULL };
	unsigned r = 0;

	if (strv_contains(tools, e->comm) || (starts(e->comm, "python") && argv && is_python_build(argv)))
		r |= LEFTOVER_BUILD_TOOL;
	if (leftover_is_compiler(e->comm) || is_driver(e->comm) || (argv && argv[0] && is_shell_command(e->comm, argv)))
		r |= LEFTOVER_STEP;
	if (e->pid == 1 || strv_contains(reapers, e->comm))
		r |= LEFTOVER_REAPER;
	return r;
}

static long index_of(const struct proc_table *t, pid_t pid)
{
	const struct proc_entry *e = pid > 0 ? proc_table_find(t, pid) : NULL;

	return e ? e - t->v : -1;
}

enum leftover_kind leftover_classify(const struct proc_table *t, const unsigned *roles, size_t i, pid_t *by)
{
	long cur = (long)i, j;
	int depth;

	*by = 0;
	/* A build tool anywhere above: the build is running. */
	j = index_of(t, t->v[i].ppid);
	for (depth = 0; j >= 0 && depth < LEFTOVER_MAX_DEPTH; depth++) {
		if (roles[j] & LEFTOVER_BUILD_TOOL)
			*by = t->v[j].pid;
		if (t->v[j].pid == 1)
			break;
		j = index_of(t, t->v[j].ppid);
	}
	if (*by)
		return LEFTOVER_BUILD;
	/* Up through the compile steps: who holds the top of them? */
	for (depth = 0; depth < LEFTOVER_MAX_DEPTH; depth++) {
		pid_t parent = t->v[cur].ppid;

		j = index_of(t, parent);
		*by = parent;
		if (j < 0)
			return LEFTOVER_HELD;
		/* A step first: an init that is itself `sh -c "nvcc ..."` (a container's) runs
		 * the compile, it did not adopt it. */
		if (roles[j] & LEFTOVER_STEP) {
			cur = j;
			continue;
		}
		return roles[j] & LEFTOVER_REAPER ? LEFTOVER_ORPHAN : LEFTOVER_HELD;
	}
	return LEFTOVER_HELD;
}
