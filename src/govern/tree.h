/* Process-tree governance without a launcher: which processes below a build are
 * build tools, which are compile jobs, which wrap a nested build (recursive make),
 * and which compilers escaped the launcher. Pure: takes command lines and a table. */
#ifndef HEADROOM_TREE_H
#define HEADROOM_TREE_H

#include <sys/types.h>

#include "sys/proc.h"

/* Is comm a build tool whose children are jobs (ninja, make, gmake, samu)? */
int tree_is_build_tool(const char *comm);
/* Is comm a compiler process that does the heavy work (cc1plus, cicc, ptxas, nvcc...)? */
int tree_is_compiler(const char *comm);

/* Is comm a launcher: headroom (its name self_name) or headroom-exec? */
int tree_is_launcher(const char *comm, const char *self_name);

/* Does pid or a process below it in t run a compiler (tree_is_compiler)? */
int tree_has_compiler(const struct proc_table *t, pid_t pid);

enum tree_kind {
	TREE_JOB,      /* a compile job: govern it */
	TREE_WRAPPER,  /* its program is a build tool (`cd sub && $(MAKE)`): its children's children are jobs */
	TREE_LAUNCHED, /* goes through `headroom exec`, headroom-exec, a compiler shim or a
	                * $HEADROOM_LAUNCHER not yet expanded: the launcher governs it */
};

/* What a job runs, from its argv (argv[argc] == NULL): a `sh -c "..."` has its command
 * split on blanks in place, which is enough to find the tool, the source and the flags;
 * before the tool, unexpanded $VARs (but $HEADROOM_LAUNCHER while launcher_set: the
 * launcher is set in the build's environment), VAR=value words, `:`, `&&` and `cd DIR`
 * are left out, and $HEADROOM_LAUNCHER anywhere when no launcher is set (it expands to
 * nothing). At most max - 1 words; argv[argc] = NULL. Returns the new argc. */
int tree_job_argv(int argc, char **argv, int max, int launcher_set);

/* Classify a child of a build tool from its argv (`sh -c "..."` split on blanks by
 * tree_job_argv(), which keeps a $HEADROOM_LAUNCHER word only where it launches).
 * self_name: headroom's own executable basename. */
enum tree_kind tree_classify(int argc, char *const argv[], const char *self_name);

/* How far a walk from a process up to its ancestors goes: deeper than any real build's
 * nesting (make, sh, a launcher, a compiler driver and its passes), and a bound because a
 * table read while processes come and go may hold a cycle. */
#define ANCESTRY_MAX 256

/* A compiler below `self` that no `headroom exec` launched (a build script overwrote
 * PYTORCH_NVCC or CXX, say): its pid, or 0 when every compiler is governed. One for which
 * skip(ctx, pid) says 1 (a version query, a configure check) is passed over, and the
 * search goes on; skip may be NULL. */
pid_t tree_ungoverned_compiler(const struct proc_table *t, pid_t self, const char *self_name,
			       int (*skip)(void *ctx, pid_t pid), void *ctx);

/* Memory no job owns: the resident memory of the processes below self that are not
 * below the build (every job is), that is, what a job left running when it ended
 * (`setsid daemon &`), adopted by self as the subreaper. Not self, nor its guardian
 * (guard: 0 for none). */
uint64_t tree_unowned_bytes(const struct proc_table *t, pid_t self, pid_t build, pid_t guard);

#endif
