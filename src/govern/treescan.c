/* Process-tree governance (--tree, or when compilers escape the launcher): each child
 * of a build tool below us is a job, held (stopped) from the moment it is seen until
 * admission lets it go; a job whose process is gone has ended. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "govern/gov.h"
#include "govern/governor.h"
#include "govern/launch.h"
#include "govern/signature.h"
#include "govern/tree.h"
#include "util/grow.h"
#include "util/log.h"
#include "util/units.h"
#include "util/xalloc.h"

static struct job *tree_job_of(struct gov *g, pid_t pid)
{
	for (size_t i = 0; i < g->njobs; i++)
		if (g->jobs[i]->tree && g->jobs[i]->pid == pid)
			return g->jobs[i];
	return NULL;
}

/* Processes below a build tool that are not jobs: wrappers of a nested build and
 * launcher-governed commands. Pruned when they are gone. */
static int tree_skipped(struct gov *g, pid_t pid)
{
	for (size_t i = 0; i < g->nskip; i++)
		if (g->skip[i] == pid)
			return 1;
	return 0;
}

static void tree_skip(struct gov *g, pid_t pid)
{
	ARRAY_GROW(g->skip, g->nskip + 1, g->capskip);
	g->skip[g->nskip++] = pid;
}

static void tree_prune_skipped(struct gov *g)
{
	for (size_t i = 0; i < g->nskip;) {
		const struct proc_entry *e = proc_table_find(&g->procs, g->skip[i]);
		if (e && e->state != 'Z')
			i++;
		else
			g->skip[i] = g->skip[--g->nskip];
	}
}

static void tree_add_job(struct gov *g, pid_t pid, int argc, char **argv, int64_t now)
{
	struct job *j = job_new(g, -1);
	struct job_sig sig;

	job_sig_from_argv(argc, argv, &sig);
	g->found_tree = 1;
	j->tree = 1;
	j->pid = pid;
	j->tool = sig.tool;
	j->src = sig.src;
	j->class_key = sig.class_key;
	j->sig_key = sig.sig_key;
	j->cached = sig.cached;
	j->check = sig.check;
	/* A configure step (cmake -E, a shell's `:`) or a check is not learned: only compiles. */
	struct job_seen seen = { .check = sig.check, .not_compile = !sig.compiler && !*sig.src, .cache_hit = -1 };
	j->not_learned = job_seen_untrue(&seen);
	free(sig.flags);
	free(sig.via);
	j->attempt = 1;
	j->t_request_ms = now;
	j->state = JOB_WAITING;
	job_signal(g, j, SIGSTOP);
	learned_predict(g, j);
	free(g->next_class);
	g->next_class = xstrdup(j->class_key);
	log_debug("tree job %d: %s %s", j->id, j->tool, j->src);
}

/* A job that turned out to run a build tool of its own wraps a nested build, and one that
 * runs the launcher is a launcher's job: let it go and govern what that build or the
 * launcher runs instead, not the same job twice. */
static int tree_became_wrapper(struct gov *g, struct job *j, int64_t now)
{
	for (size_t i = 0; i < g->procs.n; i++) {
		const struct proc_entry *e = &g->procs.v[i];
		if (e->pid == j->pid || !(tree_is_build_tool(e->comm) || tree_is_launcher(e->comm, g->self_name)) ||
		    !proc_table_is_descendant(&g->procs, e->pid, j->pid))
			continue;
		if (j->state == JOB_RUNNING && j->frozen)
			job_thaw(g, j, now);
		else if (j->state == JOB_WAITING)
			job_signal(g, j, SIGCONT);
		log_debug("tree job %d runs %s: a nested build or the launcher, its jobs are governed instead", j->id,
			  e->comm);
		tree_skip(g, j->pid);
		return 1;
	}
	return 0;
}

/* A tree job's process is gone: what it showed is learned only when it is the whole
 * truth (its exit status went to the build tool: an interrupted build's jobs were cut). */
static void tree_job_done(struct gov *g, struct job *j, int64_t now)
{
	/* over before a sample saw it run: its memory is unknown, not 0 */
	struct job_seen seen = { .partial = g->interrupted || !j->nsamples, .cached = j->cached, .cache_hit = -1,
				 .saw_compiler = j->saw_compiler };

	if (!j->not_learned)
		j->not_learned = job_seen_untrue(&seen);
	learned_job_done(g, j, job_elapsed(j, now), 0);
	/* its exit status went to the build tool, not to us */
	job_add_span(g, j, job_elapsed(j, now), -1, 0);
}

/* Each child of a build tool (ninja, make) below us is a job: held (stopped) the moment it
 * is seen until admission lets it go; a job whose process is gone has ended. */
void treescan_run(struct gov *g, int64_t now)
{
	pid_t self = getpid();
	char buf[16384], *argv[512];
	/* the build inherits ours: with --tree no launcher is set, and the variable is empty */
	const char *launcher = getenv(LAUNCH_ENV_VAR);
	int launcher_set = launcher && *launcher;

	tree_prune_skipped(g);
	for (size_t i = 0; i < g->procs.n; i++) {
		const struct proc_entry *e = &g->procs.v[i], *parent;

		if (e->state == 'Z' || tree_is_build_tool(e->comm) || tree_is_launcher(e->comm, g->self_name) ||
		    tree_job_of(g, e->pid) || tree_skipped(g, e->pid))
			continue;
		parent = proc_table_find(&g->procs, e->ppid);
		if (!parent || !tree_is_build_tool(parent->comm) || !proc_table_is_descendant(&g->procs, e->pid, self))
			continue;
		int argc = tree_job_argv(proc_cmdline(g->o->proc_root, e->pid, buf, sizeof(buf), argv, 512), argv, 512,
					 launcher_set);
		if (!argc) /* gone since the table was read: nothing to hold, nothing to name it by */
			continue;
		if (tree_classify(argc, argv, g->self_name) != TREE_JOB) {
			tree_skip(g, e->pid);
			continue;
		}
		tree_add_job(g, e->pid, argc, argv, now);
	}
	for (size_t i = 0; i < g->njobs;) {
		struct job *j = g->jobs[i];
		const struct proc_entry *e = j->tree ? proc_table_find(&g->procs, j->pid) : NULL;

		if (!j->tree || (e && e->state != 'Z' && !tree_became_wrapper(g, j, now))) {
			i++;
			continue;
		}
		/* Its exit status went to the build tool; its curve is all we learn. */
		if (e && e->state != 'Z')
			log_debug("tree job %d is a wrapper, not a job", j->id);
		else if (j->state == JOB_RUNNING)
			tree_job_done(g, j, now);
		log_debug("tree job %d ended (%s)", j->id, j->state == JOB_RUNNING ? "ran" : "never admitted");
		j->state = JOB_IDLE; /* gone, or let go: nothing to kill */
		job_free(j);
		g->jobs[i] = g->jobs[--g->njobs];
	}
}

/* Does pid compile a configure check (CMake's try_compile builds no launcher reaches)? */
static int treescan_is_check(void *ctx, pid_t pid)
{
	struct gov *g = ctx;
	char buf[16384], *argv[512];
	struct job_sig sig;
	int argc = proc_cmdline(g->o->proc_root, pid, buf, sizeof(buf), argv, 512), check;

	job_sig_from_argv(argc, argv, &sig);
	check = sig.check;
	job_sig_free(&sig);
	return check;
}

/* Compilers running outside the launcher (a build script overwrote PYTORCH_NVCC, or a
 * Makefile ignores CC): govern the process tree as well, from now on. */
void treescan_fallback(struct gov *g)
{
	pid_t pid;

	if (g->tree)
		return;
	pid = tree_ungoverned_compiler(&g->procs, getpid(), g->self_name, treescan_is_check, g);
	if (!pid)
		return;
	const struct proc_entry *e = proc_table_find(&g->procs, pid);
	log_warn("%s (pid %d) runs outside headroom exec (a build script may overwrite PYTORCH_NVCC, "
	      "CXX or the CMake launcher): governing the process tree as well, as with --tree",
	      e ? e->comm : "a compiler", (int)pid);
	g->tree = 1;
	g->rep.tree_fallback = 1;
	/* The jobs running now started ungoverned: their curves are seen only in part. */
	treescan_run(g, now_ms());
	for (size_t i = 0; i < g->njobs; i++)
		if (g->jobs[i]->tree)
			g->jobs[i]->not_learned = "observed only in part";
}
