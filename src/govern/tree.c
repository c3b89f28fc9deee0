#include "govern/tree.h"

#include <string.h>

#include "govern/launch.h"
#include "util/path.h"
#include "util/strv.h"

int tree_is_build_tool(const char *comm)
{
	static const char *const tools[] = { "ninja", "make", "gmake", "samu", NULL };
	return strv_contains(tools, comm);
}

int tree_is_compiler(const char *comm)
{
	/* The processes that hold the memory of a compile job (comm is cut at 15 bytes). */
	static const char *const compilers[] = {
		"cc1", "cc1plus", "cc1obj", "lto1", "cicc", "ptxas", "nvcc", "cudafe++",
		"clang", "clang++", "rustc", NULL,
	};
	return strv_contains(compilers, comm);
}

int tree_has_compiler(const struct proc_table *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (tree_is_compiler(t->v[i].comm) && proc_table_is_descendant(t, t->v[i].pid, pid))
			return 1;
	return 0;
}

/* Does word name the launcher's variable, not yet expanded ($HEADROOM_LAUNCHER, ${...},
 * $(...))? */
static int launcher_var_word(const char *t)
{
	return t[0] == '$' && strstr(t, LAUNCH_ENV_VAR) != NULL;
}

int tree_job_argv(int argc, char **argv, int max, int launcher_set)
{
	char *save = NULL;

	if (argc < 3 || strcmp(argv[1], "-c"))
		return argc;
	char *cmd = argv[2];
	argc = 0;
	int skip_next = 0;
	for (char *t = strtok_r(cmd, " \t\n", &save); t && argc < max - 1; t = strtok_r(NULL, " \t\n", &save)) {
		/* the launcher's variable, where no launcher is set, expands to nothing */
		if (!launcher_set && launcher_var_word(t))
			continue;
		/* before the tool: variables left unexpanded (but the launcher's, which
		 * tree_classify() looks for), VAR=value assignments, and the steps CMake's
		 * ninja rules put first (`: &&`, `cd DIR &&`) */
		if (!argc && (skip_next || (t[0] == '$' && !launcher_var_word(t)) || strchr(t, '=') || !strcmp(t, ":") ||
			      !strcmp(t, "&&") || !strcmp(t, ";") || !strcmp(t, "exec"))) {
			skip_next = 0;
			continue;
		}
		if (!argc && !strcmp(t, "cd")) {
			skip_next = 1;
			continue;
		}
		argv[argc++] = t;
	}
	argv[argc] = NULL;
	return argc;
}

int tree_is_launcher(const char *comm, const char *self_name)
{
	return !strcmp(comm, self_name) || !strcmp(comm, LAUNCH_EXEC_NAME);
}

enum tree_kind tree_classify(int argc, char *const argv[], const char *self_name)
{
	for (int i = 0; i < argc; i++) {
		const char *b = path_base(argv[i]);
		if ((!strcmp(b, self_name) && i + 1 < argc && !strcmp(argv[i + 1], "exec")) || !strcmp(b, LAUNCH_EXEC_NAME))
			return TREE_LAUNCHED;
		/* the cc and c++ shims `headroom run` makes for python builds launch too, and so
		 * does the launcher's variable, not yet expanded by the shell it is given to */
		if (strstr(argv[i], "/headroom-shims.") || launcher_var_word(argv[i]))
			return TREE_LAUNCHED;
	}
	/* A build tool it runs: the program it runs, not a word of its arguments (`echo built
	 * with make`). One it starts later (`cmd && make`) is seen when it appears below it. */
	if (argc > 0 && tree_is_build_tool(path_base(argv[0])))
		return TREE_WRAPPER;
	return TREE_JOB;
}

pid_t tree_ungoverned_compiler(const struct proc_table *t, pid_t self, const char *self_name,
			       int (*skip)(void *ctx, pid_t pid), void *ctx)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct proc_entry *e = &t->v[i], *a;
		int launched = 0, build_tool = 0;

		if (e->state == 'Z' || !tree_is_compiler(e->comm))
			continue;
		for (a = proc_table_find(t, e->ppid); a && a->pid != self; a = proc_table_find(t, a->ppid)) {
			if (tree_is_launcher(a->comm, self_name))
				launched = 1;
			/* CMake identifying the compiler runs it itself, not through a build tool:
			 * a configure step, not a job that escaped */
			if (!strcmp(a->comm, "cmake") && !build_tool)
				launched = 1;
			build_tool |= tree_is_build_tool(a->comm);
		}
		/* Below us (the walk reached self) and no launcher on the way. */
		if (a && !launched && !(skip && skip(ctx, e->pid)))
			return e->pid;
	}
	return 0;
}

uint64_t tree_unowned_bytes(const struct proc_table *t, pid_t self, pid_t build, pid_t guard)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct proc_entry *e = &t->v[i], *a = e;
		int depth;

		if (e->pid == self || e->pid == guard)
			continue;
		/* bounded: a table read while processes come and go may hold a cycle */
		for (depth = 0; depth < ANCESTRY_MAX && a && a->pid != self && a->pid != build; depth++)
			a = proc_table_find(t, a->ppid);
		if (a && a->pid == self)
			sum += e->rss_bytes;
	}
	return sum;
}
