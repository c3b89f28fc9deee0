#include "govern/governor.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "govern/admit.h"
#include "govern/progress.h"
#include "govern/proto.h"
#include "govern/report.h"
#include "govern/signature.h"
#include "govern/tree.h"
#include "sys/cgroup.h"
#include "sys/fsutil.h"
#include "sys/meminfo.h"
#include "sys/proc.h"
#include "sys/psi.h"
#include "sys/usock.h"
#include "util/log.h"
#include "util/path.h"
#include "util/strbuf.h"
#include "util/strv.h"
#include "util/units.h"
#include "util/xalloc.h"

/* A job killed this many times is not tried again: its failure goes to the build tool. */
#define GOV_MAX_RETRIES 4
/* After an interrupt, the build gets this long to stop before everything is killed. */
#define GRACE_MS 3000

enum job_state { JOB_IDLE, JOB_WAITING, JOB_RUNNING };

struct job {
	int id;
	enum job_state state;
	struct proto_conn conn;
	char *tool, *src, *class_key, *sig_key;
	int attempt;
	pid_t pid;                  /* the tool, leader of the job's process group; 0 until started */
	int tree;                   /* found in the process tree (--tree), not through a launcher */
	int64_t t_request_ms, t_admit_ms;
	int frozen;
	int64_t frozen_at_ms, frozen_total_ms;
	const struct curve *pred;   /* points into the learned cache; NULL when unknown */
	struct curve_sample *samples;
	size_t nsamples, capsamples;
	uint64_t current_bytes, peak_bytes;
	uint64_t growth_bytes_per_s;  /* over the last tick; 0 when shrinking */
	int killed_by_us;
	uint64_t oom_at_admit;
	struct cgroup cg;           /* the job's own group, version NONE when there is none */
};

struct learned {
	enum profile_kind kind;
	char *key;
	int known, dirty;
	struct profile p;
};

struct gov {
	const struct governor_opts *o;
	int listen_fd, sig_fd;
	char *sock_dir, *sock_path;
	struct job **jobs;
	size_t njobs, capjobs;
	int next_id;
	struct learned **cache;
	size_t ncache, capcache;
	struct cgroup cg;           /* the group headroom runs in; version NONE without one */
	int cg_limited;
	int job_groups;             /* jobs get child groups of cg */
	uint64_t limit_bytes, reserve_bytes, budget_bytes;
	uint64_t oom_start;
	int have_oom;
	char *psi_path;
	pid_t build_pid;
	int build_status, build_done;
	int interrupted;
	int64_t t0_ms, deadline_ms, last_kill_ms;
	uint64_t used_prev;         /* memory in use at the last tick, for its growth rate */
	int64_t t_prev_ms;
	struct proc_table procs;
	struct report rep;
	int tree;                   /* governing the process tree (--tree, or fallen back to it) */
	pid_t *skip;                /* below a build tool, but not jobs: see tree_skipped() */
	size_t nskip, capskip;
	char self_name[16];         /* our comm, as the launcher processes show it */
	struct jobserver js;        /* style NONE without --jobserver */
	struct progress progress;   /* the live line; fd -1 when off */
	int64_t next_progress_ms;
	char *build_key;            /* directory and command: the store's key for this build */
	struct build_profile last_build; /* jobs 0 when this build was not seen before */
	char *next_class;           /* class of the last job found: what the next token is for */
	int guard_fd;               /* the guardian's pipe; -1 without one */
};

/* ---- learned profiles ---------------------------------------------------------------- */

static struct learned *cache_get(struct gov *g, enum profile_kind kind, const char *key)
{
	struct learned *l;

	for (size_t i = 0; i < g->ncache; i++)
		if (g->cache[i]->kind == kind && !strcmp(g->cache[i]->key, key))
			return g->cache[i];
	if (g->ncache == g->capcache) {
		g->capcache = g->capcache ? g->capcache * 2 : 256;
		g->cache = xrealloc(g->cache, g->capcache * sizeof(*g->cache));
	}
	/* One allocation each: jobs keep pointers to the curves. */
	l = xcalloc(1, sizeof(*l));
	g->cache[g->ncache++] = l;
	l->kind = kind;
	l->key = xstrdup(key);
	if (g->o->store && store_get(g->o->store, kind, key, &l->p) == 0)
		l->known = 1;
	return l;
}

/* The prediction for a job: its own signature's profile, else its class's. */
static void job_predict(struct gov *g, struct job *j)
{
	struct learned *l = cache_get(g, PROFILE_SIG, j->sig_key);

	if (!l->known)
		l = cache_get(g, PROFILE_CLASS, j->class_key);
	j->pred = l->known ? &l->p.curve : NULL;
}

static void learn(struct gov *g, struct job *j, const struct curve *seen)
{
	static const struct { enum profile_kind kind; int keep_pct, floor; } how[] = {
		{ PROFILE_SIG, 50, 1 }, { PROFILE_CLASS, 80, 0 },
	};

	for (size_t i = 0; i < 2; i++) {
		struct learned *l = cache_get(g, how[i].kind, how[i].kind == PROFILE_SIG ? j->sig_key : j->class_key);
		/* Without launchers a job killed for memory fails the build: classes then keep
		 * an envelope of their jobs rather than their mean. */
		curve_learn(&l->p.curve, seen, !l->known, how[i].keep_pct, how[i].floor || j->tree);
		l->p.runs++;
		l->p.updated_s = (int64_t)time(NULL);
		l->known = l->dirty = 1;
	}
}

static void save_profiles(struct gov *g)
{
	struct store *st = g->o->store;
	int n = 0;

	if (!st)
		return;
	if (store_begin(st)) {
		log_warn("could not write the profile store; what this build learned is lost");
		return;
	}
	for (size_t i = 0; i < g->ncache; i++) {
		struct learned *l = g->cache[i];
		if (l->dirty && !store_put(st, l->kind, l->key, &l->p))
			n++;
	}
	if (store_commit(st))
		log_warn("could not write the profile store; what this build learned is lost");
	else
		log_debug("saved %d profiles", n);
}

/* ---- jobs ------------------------------------------------------------------------------ */

static int64_t job_elapsed(const struct job *j, int64_t now)
{
	int64_t e = now - j->t_admit_ms - j->frozen_total_ms;

	if (j->frozen)
		e -= now - j->frozen_at_ms;
	return e > 0 ? e : 0;
}

static void job_reset_run(struct job *j)
{
	j->pid = 0;
	j->frozen = 0;
	j->frozen_total_ms = 0;
	j->nsamples = 0;
	j->current_bytes = j->peak_bytes = 0;
	j->killed_by_us = 0;
	j->pred = NULL;
}

/* A new job in the table, with its connection (fd, or -1 for a job found in the tree). */
static struct job *job_new(struct gov *g, int fd)
{
	struct job *j = xcalloc(1, sizeof(*j));

	j->id = ++g->next_id;
	proto_conn_init(&j->conn, fd);
	if (g->njobs == g->capjobs) {
		g->capjobs = g->capjobs ? g->capjobs * 2 : 64;
		g->jobs = xrealloc(g->jobs, g->capjobs * sizeof(*g->jobs));
	}
	g->jobs[g->njobs++] = j;
	return j;
}

/* End what is left in the job's own group and remove it. */
static void job_drop_group(struct job *j)
{
	if (j->cg.version == CGROUP_NONE)
		return;
	cgroup_kill_all(&j->cg);
	cgroup_remove(&j->cg);
	cgroup_free(&j->cg);
}

static void job_free(struct job *j)
{
	proto_conn_close(&j->conn);
	job_drop_group(j);
	free(j->tool);
	free(j->src);
	free(j->class_key);
	free(j->sig_key);
	free(j->samples);
	free(j);
}

static struct proc_table *signal_procs; /* the last process table, for tree jobs */

static void job_signal(struct job *j, int sig)
{
	if (j->pid <= 0)
		return;
	if (!j->tree) {
		kill(-j->pid, sig);
		return;
	}
	/* A job found in the tree: the process and everything below it, as last seen. */
	kill(j->pid, sig);
	for (size_t i = 0; signal_procs && i < signal_procs->n; i++)
		if (signal_procs->v[i].pid != j->pid && proc_table_is_descendant(signal_procs, signal_procs->v[i].pid, j->pid))
			kill(signal_procs->v[i].pid, sig);
}

static void job_freeze(struct gov *g, struct job *j, int64_t now)
{
	/* The process group, and in v2 the job's group too: it also holds any process
	 * that left the process group. */
	job_signal(j, SIGSTOP);
	cgroup_freeze(&j->cg, 1);
	j->frozen = 1;
	j->frozen_at_ms = now;
	g->rep.freezes++;
	log_info("froze job %d (%s): memory is short", j->id, j->src);
}

static void job_thaw(struct gov *g, struct job *j, int64_t now)
{
	cgroup_freeze(&j->cg, 0);
	job_signal(j, SIGCONT);
	j->frozen = 0;
	j->frozen_total_ms += now - j->frozen_at_ms;
	g->rep.thaws++;
	log_info("thawed job %d (%s)", j->id, j->src);
}

static void job_kill(struct gov *g, struct job *j, int64_t now)
{
	job_signal(j, SIGKILL);
	job_signal(j, SIGCONT);
	if (j->cg.version != CGROUP_NONE)
		cgroup_kill_all(&j->cg);
	j->killed_by_us = 1;
	g->rep.kills++;
	g->last_kill_ms = now;
	log_warn("killed job %d (%s) to keep memory from running out; it will run again", j->id, j->src);
}

static void job_sample_value(struct job *j, int64_t t_ms, uint64_t bytes)
{
	if (j->nsamples == j->capsamples) {
		j->capsamples = j->capsamples ? j->capsamples * 2 : 256;
		j->samples = xrealloc(j->samples, j->capsamples * sizeof(*j->samples));
	}
	j->samples[j->nsamples++] = (struct curve_sample){ t_ms, bytes };
}

static void job_sample(struct gov *g, struct job *j, int64_t now, int64_t dt_ms)
{
	uint64_t before = j->current_bytes;

	if (j->state != JOB_RUNNING || j->pid <= 0)
		return;
	j->current_bytes = proc_table_tree_rss(&g->procs, j->pid);
	j->growth_bytes_per_s = j->current_bytes > before && dt_ms > 0 && before
		? (j->current_bytes - before) * 1000 / (uint64_t)dt_ms : 0;
	if (j->current_bytes > j->peak_bytes)
		j->peak_bytes = j->current_bytes;
	if (j->frozen)
		return;
	job_sample_value(j, job_elapsed(j, now), j->current_bytes);
}

/* A job that ran ran_ms to its end: learn its curve and count it in the report. A peak
 * between two samples still shows in maxrss_bytes, the largest process's (0: unknown). */
static void job_learn(struct gov *g, struct job *j, int64_t ran_ms, uint64_t maxrss_bytes)
{
	struct curve seen;

	if (!j->nsamples) /* over before its first sample */
		job_sample_value(j, 0, j->peak_bytes);
	if (curve_from_samples(j->samples, j->nsamples, ran_ms, &seen))
		return;
	if (maxrss_bytes > seen.peak_bytes) {
		for (int i = 0; i < CURVE_POINTS; i++)
			if (seen.pts[i] == seen.peak_bytes)
				seen.pts[i] = maxrss_bytes;
		seen.peak_bytes = maxrss_bytes;
	}
	learn(g, j, &seen);
	report_add_job(&g->rep, j->class_key, seen.peak_bytes, ran_ms);
}

/* ---- memory facts ------------------------------------------------------------------------ */

static uint64_t oom_count(struct gov *g)
{
	uint64_t n = 0;

	if (g->cg.version != CGROUP_NONE && !cgroup_oom_kills(&g->cg, &n))
		return n;
	if (!meminfo_oom_kills(g->o->proc_root, &n))
		return n;
	return 0;
}

/* Memory that can still be taken now, against the tighter of the cgroup and the machine. */
static uint64_t mem_available(struct gov *g)
{
	struct meminfo mi;
	uint64_t avail = UINT64_MAX, ws;

	if (!meminfo_read(g->o->proc_root, &mi))
		avail = mi.available_bytes;
	if (g->cg_limited && !cgroup_mem_working_set(&g->cg, &ws)) {
		uint64_t a = g->limit_bytes > ws ? g->limit_bytes - ws : 0;
		if (a < avail)
			avail = a;
	}
	return avail == UINT64_MAX ? 0 : avail;
}

static void setup_memory(struct gov *g)
{
	struct meminfo mi;
	uint64_t lim, others = 0;
	int have_mi = !meminfo_read(g->o->proc_root, &mi);

	g->rep.limit_source = "RAM";
	g->limit_bytes = have_mi ? mi.total_bytes : 0;
	if (!cgroup_find(g->o->proc_root, 0, &g->cg) && !cgroup_mem_limit(&g->cg, &lim) &&
	    (!g->limit_bytes || lim < g->limit_bytes)) {
		g->limit_bytes = lim;
		g->cg_limited = 1;
		g->rep.limit_source = g->cg.version == CGROUP_V1 ? "cgroup v1" : "cgroup v2";
	}
	g->job_groups = cgroup_children_counted(&g->cg);
	g->psi_path = cgroup_pressure_path(&g->cg);
	if (!g->psi_path)
		g->psi_path = xasprintf("%s/proc/pressure/memory", g->o->proc_root);
	g->reserve_bytes = g->o->reserve_bytes ? g->o->reserve_bytes : net_default_reserve(g->limit_bytes);
	uint64_t avail = mem_available(g);
	if (g->limit_bytes > avail)
		others = g->limit_bytes - avail;
	if (g->o->budget_bytes) {
		g->budget_bytes = g->o->budget_bytes;
	} else {
		g->budget_bytes = g->limit_bytes > others + g->reserve_bytes ? g->limit_bytes - others - g->reserve_bytes
									      : g->limit_bytes / 4;
	}
	g->rep.limit_bytes = g->limit_bytes;
	g->rep.budget_bytes = g->budget_bytes;
	g->oom_start = oom_count(g);
	char a[32], b[32], c[32];
	log_info("memory limit %s (%s), in use by others %s, budget for jobs %s",
	      size_format(g->limit_bytes, a, sizeof(a)), g->rep.limit_source, size_format(others, b, sizeof(b)),
	      size_format(g->budget_bytes, c, sizeof(c)));
}

/* ---- process-tree governance (--tree, or when compilers escape the launcher) ---------- */

/* The job's command line: argv from /proc/PID/cmdline; a `sh -c "..."` is split on blanks,
 * which is enough to find the tool, the source and the flags. Returns argc; argv points
 * into buf. */
static int tree_argv(struct gov *g, pid_t pid, char *buf, size_t size, char **argv, int max)
{
	char path[64];
	int argc = 0;

	snprintf(path, sizeof(path), "%s/proc/%d/cmdline", g->o->proc_root, (int)pid);
	long n = fs_read(path, buf, size);
	for (long i = 0; n > 0 && i < n && argc < max - 1; i += (long)strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	if (argc >= 3 && !strcmp(argv[1], "-c")) {
		char *cmd = argv[2];
		argc = 0;
		for (char *t = strtok(cmd, " \t\n"); t && argc < max - 1; t = strtok(NULL, " \t\n")) {
			/* before the tool: variables left unexpanded, VAR=value assignments */
			if (!argc && (t[0] == '$' || strchr(t, '=')))
				continue;
			argv[argc++] = t;
		}
	}
	argv[argc] = NULL;
	return argc;
}

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
	if (g->nskip == g->capskip) {
		g->capskip = g->capskip ? g->capskip * 2 : 32;
		g->skip = xrealloc(g->skip, g->capskip * sizeof(*g->skip));
	}
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
	j->tree = 1;
	j->pid = pid;
	j->tool = sig.tool;
	j->src = sig.src;
	j->class_key = sig.class_key;
	j->sig_key = sig.sig_key;
	free(sig.flags);
	j->attempt = 1;
	j->t_request_ms = now;
	j->state = JOB_WAITING;
	job_signal(j, SIGSTOP);
	job_predict(g, j);
	free(g->next_class);
	g->next_class = xstrdup(j->class_key);
	log_debug("tree job %d: %s %s", j->id, j->tool, j->src);
}

/* A job that turned out to run a build tool of its own wraps a nested build: let it go
 * and govern what that build runs instead. */
static int tree_became_wrapper(struct gov *g, struct job *j, int64_t now)
{
	for (size_t i = 0; i < g->procs.n; i++) {
		const struct proc_entry *e = &g->procs.v[i];
		if (e->pid == j->pid || !tree_is_build_tool(e->comm) || !proc_table_is_descendant(&g->procs, e->pid, j->pid))
			continue;
		if (j->state == JOB_RUNNING && j->frozen)
			job_thaw(g, j, now);
		else if (j->state == JOB_WAITING)
			job_signal(j, SIGCONT);
		log_debug("tree job %d runs %s: a nested build, its jobs are governed instead", j->id, e->comm);
		tree_skip(g, j->pid);
		return 1;
	}
	return 0;
}

/* Each child of a build tool (ninja, make) below us is a job: held (stopped) the moment it
 * is seen until admission lets it go; a job whose process is gone has ended. */
static void tree_scan(struct gov *g, int64_t now)
{
	pid_t self = getpid();
	char buf[16384], *argv[512];

	tree_prune_skipped(g);
	for (size_t i = 0; i < g->procs.n; i++) {
		const struct proc_entry *e = &g->procs.v[i], *parent;

		if (e->state == 'Z' || tree_is_build_tool(e->comm) || !strcmp(e->comm, g->self_name) ||
		    tree_job_of(g, e->pid) || tree_skipped(g, e->pid))
			continue;
		parent = proc_table_find(&g->procs, e->ppid);
		if (!parent || !tree_is_build_tool(parent->comm) || !proc_table_is_descendant(&g->procs, e->pid, self))
			continue;
		int argc = tree_argv(g, e->pid, buf, sizeof(buf), argv, 512);
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
			job_learn(g, j, job_elapsed(j, now), 0);
		log_debug("tree job %d ended (%s)", j->id, j->state == JOB_RUNNING ? "ran" : "never admitted");
		j->state = JOB_IDLE; /* gone, or let go: nothing to kill */
		job_free(j);
		g->jobs[i] = g->jobs[--g->njobs];
	}
}

/* Compilers running outside the launcher (a build script overwrote PYTORCH_NVCC, or a
 * Makefile ignores CC): govern the process tree as well, from now on. */
static void tree_check_fallback(struct gov *g)
{
	pid_t pid;

	if (g->tree)
		return;
	pid = tree_ungoverned_compiler(&g->procs, getpid(), g->self_name);
	if (!pid)
		return;
	const struct proc_entry *e = proc_table_find(&g->procs, pid);
	log_warn("%s (pid %d) runs outside headroom exec (a build script may overwrite PYTORCH_NVCC, "
	      "CXX or the CMake launcher): governing the process tree as well, as with --tree",
	      e ? e->comm : "a compiler", (int)pid);
	g->tree = 1;
	g->rep.tree_fallback = 1;
}

/* ---- the safety net and admission -------------------------------------------------------- */

static struct job *youngest(struct gov *g, int want_frozen, int any)
{
	struct job *best = NULL;

	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state != JOB_RUNNING || j->pid <= 0 || j->killed_by_us)
			continue;
		if (!any && j->frozen != want_frozen)
			continue;
		/* admitted in the same tick: the later id is the younger */
		if (!best || j->t_admit_ms > best->t_admit_ms || (j->t_admit_ms == best->t_admit_ms && j->id > best->id))
			best = j;
	}
	return best;
}

static struct job *oldest_frozen(struct gov *g)
{
	struct job *best = NULL;

	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state == JOB_RUNNING && j->frozen &&
		    (!best || j->t_admit_ms < best->t_admit_ms || (j->t_admit_ms == best->t_admit_ms && j->id < best->id)))
			best = j;
	}
	return best;
}

/* What the running jobs grow by over the net's lookahead. */
static uint64_t running_growth(const struct gov *g)
{
	uint64_t growth = 0;

	for (size_t i = 0; i < g->njobs; i++) {
		const struct job *j = g->jobs[i];
		if (j->state == JOB_RUNNING && !j->frozen)
			growth += net_lookahead_growth(j->growth_bytes_per_s);
	}
	return growth;
}

/* Freeze the youngest jobs until net_freeze_done() says the rest fit. */
static void freeze_growth(struct gov *g, uint64_t avail, int running, int64_t now)
{
	int frozen = 0;

	while (!net_freeze_done(frozen, running, running_growth(g), avail, g->reserve_bytes)) {
		struct job *v = youngest(g, 0, 0);

		if (!v)
			break;
		job_freeze(g, v, now);
		running--;
		frozen++;
	}
}

static size_t snapshot(struct gov *g, int64_t now, struct admit_job *out, uint64_t *jobs_bytes, int *running)
{
	size_t n = 0;

	*jobs_bytes = 0;
	*running = 0;
	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state != JOB_RUNNING)
			continue;
		if (!j->pred)
			job_predict(g, j);
		out[n++] = (struct admit_job){ job_elapsed(j, now), j->pred, j->current_bytes, j->frozen };
		*jobs_bytes += j->current_bytes;
		*running += !j->frozen;
	}
	return n;
}

static void send_admit(struct gov *g, struct job *j, int64_t now)
{
	char name[64];

	j->state = JOB_RUNNING;
	j->t_admit_ms = now;
	j->oom_at_admit = oom_count(g);
	/* A group of its own tells an OOM kill of this job from any other; only where the
	 * limit we run under still covers it. */
	if (g->job_groups && !j->tree && j->cg.version == CGROUP_NONE) {
		snprintf(name, sizeof(name), "headroom-%d-job%d", (int)getpid(), j->id);
		if (cgroup_child_create(&g->cg, name, &j->cg))
			j->cg.version = CGROUP_NONE;
	}
	if (j->tree) {
		/* Held since it was seen: let it go. */
		job_signal(j, SIGCONT);
		return;
	}
	struct proto_admit a = { j->id, j->cg.version != CGROUP_NONE ? j->cg.dir : NULL };
	if (proto_send_admit(j->conn.fd, &a))
		log_debug("job %d: launcher gone before admission", j->id);
}

/* How many tokens the jobserver should hold: admit_tokens() for jobs like the last one
 * found. s and snap are the admission snapshot; the tokens' jobs are added to it. */
static int jobserver_tokens(struct gov *g, struct admit_snapshot *s, struct admit_job *snap, int running)
{
	const struct curve *next = NULL;
	int waiting = 0;

	for (size_t i = 0; i < g->njobs; i++)
		waiting += g->jobs[i]->state == JOB_WAITING;
	/* the class is looked up only when its curve counts */
	if (!waiting && g->next_class) {
		struct learned *l = cache_get(g, PROFILE_CLASS, g->next_class);
		next = l->known ? &l->p.curve : NULL;
	}
	return admit_tokens(s, snap, next, running, g->o->jobs, waiting);
}

static void show_progress(struct gov *g, int64_t now, uint64_t used)
{
	struct progress_state ps = { .done = (int)g->rep.njobs, .used_bytes = used, .limit_bytes = g->limit_bytes,
				   .jobs_cap = g->o->jobs };
	struct progress_eta_in in = {
		.elapsed_ms = now - g->t0_ms,
		.done = (int)g->rep.njobs,
		.last_wall_ms = g->last_build.wall_ms,
		.jobs_cap = g->o->jobs,
	};

	for (size_t i = 0; i < g->rep.njobs; i++)
		in.done_work_ms += g->rep.jobs[i].duration_ms;
	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state == JOB_WAITING) {
			ps.waiting++;
		} else if (j->state == JOB_RUNNING) {
			int64_t left = j->pred ? j->pred->duration_ms - job_elapsed(j, now)
					       : (in.done ? in.done_work_ms / in.done : 0);
			in.running_left_ms += left > 0 ? left : 0;
			ps.frozen += j->frozen;
			ps.running += !j->frozen;
		}
	}
	in.running = ps.running + ps.frozen;
	/* the last build's count, or more when this one already saw more */
	if (g->last_build.jobs) {
		int seen = ps.done + in.running + ps.waiting;
		ps.total = g->last_build.jobs > seen ? (int)g->last_build.jobs : seen;
	}
	in.total = ps.total;
	ps.eta_ms = progress_eta(&in);
	progress_show(&g->progress, &ps);
}

static void govern_tick(struct gov *g, int64_t now)
{
	struct admit_job *snap;
	uint64_t jobs_bytes, avail = mem_available(g);
	int running;
	struct psi psi;
	size_t n;
	int tokens = 0;

	proc_table_read(g->o->proc_root, &g->procs);
	signal_procs = &g->procs;
	tree_check_fallback(g);
	if (g->tree)
		tree_scan(g, now);
	/* room for the jobs, and for the jobs that tokens may start */
	snap = xmalloc((g->njobs + (size_t)g->o->jobs + 1) * sizeof(*snap));
	for (size_t i = 0; i < g->njobs; i++)
		job_sample(g, g->jobs[i], now, now - g->t_prev_ms);
	n = snapshot(g, now, snap, &jobs_bytes, &running);
	if (jobs_bytes > g->rep.peak_jobs_bytes)
		g->rep.peak_jobs_bytes = jobs_bytes;

	uint64_t used = g->limit_bytes > avail ? g->limit_bytes - avail : g->limit_bytes;
	struct net_state ns = {
		.limit_bytes = g->limit_bytes,
		.used_bytes = used,
		.reserve_bytes = g->reserve_bytes,
		.psi_full_avg10_pct = psi_read(g->psi_path, &psi) ? -1.0 : psi.full_avg10_pct,
		.ms_since_last_kill = now - g->last_kill_ms,
		.growth_bytes_per_s = used > g->used_prev && now > g->t_prev_ms
			? (used - g->used_prev) * 1000 / (uint64_t)(now - g->t_prev_ms) : 0,
	};
	g->used_prev = used;
	g->t_prev_ms = now;
	if (now - g->t0_ms >= (int64_t)g->rep.npoints * 1000) {
		struct report_point p = { now - g->t0_ms, running, (int)n - running, 0, jobs_bytes, used };
		for (size_t i = 0; i < g->njobs; i++)
			p.waiting += g->jobs[i]->state == JOB_WAITING;
		report_add_point(&g->rep, &p);
	}
	if (g->progress.fd >= 0 && now >= g->next_progress_ms) {
		show_progress(g, now, used);
		g->next_progress_ms = now + 500;
	}
	enum net_action act = net_apply_budget(net_decide(&ns), jobs_bytes, g->budget_bytes);

	if (act == NET_KILL) {
		/* Never the last job: alone, it would only be killed again; the kernel judges it. */
		struct job *v = youngest(g, 0, 1);
		if (v && n > 1 && v->tree && !v->frozen)
			job_freeze(g, v, now); /* no launcher to run it again: freeze, never kill */
		else if (v && n > 1 && !v->tree)
			job_kill(g, v, now);
	} else if (running == 0 && oldest_frozen(g)) {
		/* Frozen jobs alone can hold more than the budget: one must move on. */
		job_thaw(g, oldest_frozen(g), now);
	} else if (act == NET_FREEZE) {
		freeze_growth(g, avail, running, now);
	} else if (act == NET_OK) {
		struct job *f = oldest_frozen(g);
		if (f) {
			/* Thaw when the memory it is predicted to still grow by is free. */
			struct admit_job aj = { job_elapsed(f, now), f->pred, f->current_bytes, 1 };
			uint64_t need = admit_thaw_need(&aj, admit_unknown_need(g->budget_bytes, g->tree, snap, n));
			if (admit_thaw_fits(need, avail, g->reserve_bytes, jobs_bytes, g->budget_bytes))
				job_thaw(g, f, now);
		}
	}

	/* Admission: in arrival order, letting a smaller job pass one that does not fit. */
	if (act == NET_OK && !g->interrupted) {
		struct admit_snapshot s = {
			.budget_bytes = g->budget_bytes,
			.free_bytes = avail > g->reserve_bytes ? avail - g->reserve_bytes : 0,
			.unknown_bytes = admit_unknown_need(g->budget_bytes, g->tree, snap, n),
			.jobs = snap,
			.njobs = n,
		};
		int any_frozen = oldest_frozen(g) != NULL;
		for (size_t i = 0; i < g->njobs && running < g->o->jobs && !any_frozen; i++) {
			struct job *j = g->jobs[i];
			struct admit_result r;

			if (j->state != JOB_WAITING)
				continue;
			if (!j->pred)
				job_predict(g, j);
			admit_decide(&s, j->pred, &r);
			/* With nothing running, the job runs whatever its prediction: waiting
			 * cannot make room, and the safety net still watches it. */
			if (!r.admit && s.njobs > 0)
				continue;
			send_admit(g, j, now);
			snap[s.njobs++] = (struct admit_job){ 0, j->pred, 0, 0 };
			running++;
			log_debug("admitted job %d (%s), predicted worst %llu MiB in %lld ms", j->id, j->src,
			       (unsigned long long)(r.worst_bytes >> 20), (long long)r.worst_at_ms);
		}
		if (g->js.style != JOBSERVER_NONE && !any_frozen)
			tokens = jobserver_tokens(g, &s, snap, running);
	}
	if (g->js.style != JOBSERVER_NONE && jobserver_set(&g->js, tokens) < 0)
		log_debug("jobserver: %s", strerror(errno));
	free(snap);
}

/* ---- protocol ---------------------------------------------------------------------------- */

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup(v);
}

static void on_done(struct gov *g, struct job *j, const struct proto_done *d, int64_t now)
{
	int64_t dur = d->duration_ms;
	int oom = 0, retry = 0;
	const char *reason = "finished";
	uint64_t n;

	if (d->has_signal && d->signal == SIGKILL) {
		if (j->cg.version != CGROUP_NONE && !cgroup_oom_kills(&j->cg, &n) && n > 0)
			oom = 1;
		else if (oom_count(g) > j->oom_at_admit)
			oom = 1;
	}
	if ((j->killed_by_us || oom) && j->attempt < GOV_MAX_RETRIES) {
		retry = 1;
		reason = j->killed_by_us ? "killed by headroom to save memory" : "killed by the kernel (out of memory)";
		g->rep.retries++;
		if (oom) {
			g->rep.oom_kills++;
			log_warn("job %d (%s) was OOM-killed; it will run again", j->id, j->src);
		}
	} else if (d->has_exit && d->exit_code == 0) {
		int64_t ran = job_elapsed(j, now);
		job_learn(g, j, dur > 0 && dur < ran ? dur : ran, d->maxrss_bytes);
	} else {
		g->rep.failed_jobs++;
	}
	if (g->o->trace_path || g->o->record_path) {
		int64_t ran = job_elapsed(j, now);
		struct report_span sp = {
			.name = *j->src ? j->src : j->tool,
			.class_key = j->class_key,
			.start_ms = j->t_admit_ms - g->t0_ms,
			.duration_ms = dur > 0 && dur < ran ? dur : ran,
			.exit_code = d->has_exit ? (int)d->exit_code : -1,
			.retried = retry,
			.peak_bytes = j->peak_bytes,
			.samples = j->samples,
			.nsamples = j->nsamples,
		};
		report_add_span(&g->rep, &sp);
	}
	proto_send_ack(j->conn.fd, &(struct proto_ack){ j->id, retry, reason });
	job_drop_group(j);
	job_reset_run(j);
	j->state = JOB_IDLE;
}

static void on_message(struct gov *g, struct job *j, json_t *msg, int64_t now)
{
	const char *type = proto_type(msg);

	if (!strcmp(type, "request") && j->state == JOB_IDLE) {
		struct proto_request r;

		proto_request_decode(msg, &r);
		set_str(&j->tool, r.tool);
		set_str(&j->src, r.src);
		set_str(&j->class_key, r.class_key);
		set_str(&j->sig_key, r.sig_key);
		j->attempt = (int)r.attempt;
		j->t_request_ms = now;
		job_reset_run(j);
		j->state = JOB_WAITING;
		job_predict(g, j);
	} else if (!strcmp(type, "started") && j->state == JOB_RUNNING) {
		struct proto_started st;

		proto_started_decode(msg, &st);
		j->pid = (pid_t)st.pid;
	} else if (!strcmp(type, "done") && j->state == JOB_RUNNING) {
		struct proto_done d;

		proto_done_decode(msg, &d);
		on_done(g, j, &d, now);
	} else {
		log_debug("job %d: unexpected message '%s' ignored", j->id, type);
	}
}

static void remove_job(struct gov *g, size_t i)
{
	struct job *j = g->jobs[i];

	/* A launcher that vanished mid-job leaves its tool behind: end it. */
	if (j->state == JOB_RUNNING) {
		job_signal(j, SIGKILL);
		job_signal(j, SIGCONT);
	}
	job_free(j);
	g->jobs[i] = g->jobs[--g->njobs];
}

static void accept_client(struct gov *g)
{
	int fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct job *j;

	if (fd < 0)
		return;
	j = job_new(g, fd);
	j->tool = xstrdup("");
	j->src = xstrdup("");
	j->class_key = xstrdup("");
	j->sig_key = xstrdup("");
}

/* ---- processes --------------------------------------------------------------------------- */

static void reap(struct gov *g)
{
	int st;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == g->build_pid) {
			g->build_status = st;
			g->build_done = 1;
		}
	}
}

/* A guardian: a child that sleeps on a pipe only headroom writes to. If headroom dies,
 * even by SIGKILL, the pipe reads EOF and the guardian resumes every stopped process
 * below the build, so that no held or frozen job stays stopped forever. Returns the
 * pipe's write end to keep open, or -1. */
static int start_guardian(pid_t build, const char *proc_root)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		struct proc_table t = { 0 };

		/* nothing of headroom's: not its socket (launchers would wait on it), not
		 * the jobserver, not the terminal's Ctrl-C */
		if (fds[0] > 3)
			close_range(3, (unsigned)fds[0] - 1, 0);
		close_range((unsigned)fds[0] + 1, ~0U, 0);
		setpgid(0, 0);
		prctl(PR_SET_NAME, "headroom-guard");
		for (;;) { /* headroom never writes: this returns when it is gone */
			ssize_t r = read(fds[0], &c, 1);
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		for (int round = 0; round < 3; round++) {
			proc_table_read(proc_root, &t);
			for (size_t i = 0; i < t.n; i++)
				if ((t.v[i].state == 'T' || t.v[i].state == 't') && proc_table_is_descendant(&t, t.v[i].pid, build))
					kill(t.v[i].pid, SIGCONT);
			usleep(50000);
		}
		_exit(0);
	}
	close(fds[0]);
	return fds[1];
}

/* End every process below headroom: the jobs first, then anything the build left. */
static void kill_everything(struct gov *g)
{
	pid_t self = getpid();

	for (size_t i = 0; i < g->njobs; i++) {
		job_signal(g->jobs[i], SIGKILL);
		job_signal(g->jobs[i], SIGCONT);
		if (g->jobs[i]->cg.version != CGROUP_NONE)
			cgroup_kill_all(&g->jobs[i]->cg);
	}
	for (int round = 0; round < 100; round++) {
		int found = 0;

		proc_table_read(g->o->proc_root, &g->procs);
		for (size_t i = 0; i < g->procs.n; i++) {
			const struct proc_entry *e = &g->procs.v[i];
			if (e->pid == self || e->state == 'Z' || !proc_table_is_descendant(&g->procs, e->pid, self))
				continue;
			kill(e->pid, SIGKILL);
			kill(e->pid, SIGCONT);
			found = 1;
		}
		reap(g);
		if (!found)
			break;
		usleep(20000);
	}
	reap(g);
}

/* What the store knows of this build (its directory and command): the progress line's
 * total and first ETA. */
static void build_history(struct gov *g)
{
	struct strbuf key = STRBUF_INIT;
	char cwd[4096];

	if (!g->o->store || !getcwd(cwd, sizeof(cwd)))
		return;
	strbuf_addf(&key, "%s ::", cwd);
	for (char **a = g->o->argv; *a; a++)
		strbuf_addf(&key, " %s", *a);
	g->build_key = strbuf_detach(&key);
	if (store_build_get(g->o->store, g->build_key, &g->last_build))
		memset(&g->last_build, 0, sizeof(g->last_build));
}

static pid_t start_build(struct gov *g, const sigset_t *orig_mask)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	sigprocmask(SIG_SETMASK, orig_mask, NULL);
	execvp(g->o->argv[0], g->o->argv);
	int e = errno;
	log_warn("cannot run %s: %s", g->o->argv[0], strerror(e));
	_exit(e == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

static int open_socket(struct gov *g)
{
	char *tmpl = xasprintf("%s/headroom.XXXXXX", runtime_dir());
	int fd;

	if (!mkdtemp(tmpl)) {
		int e = errno;
		free(tmpl);
		return -e;
	}
	g->sock_dir = tmpl;
	g->sock_path = xasprintf("%s/gov.sock", tmpl);
	fd = usock_listen(g->sock_path, 256);
	if (fd < 0)
		return fd;
	g->listen_fd = fd;
	return 0;
}

static void lock_self(void)
{
	struct rlimit rl;

#ifdef __SANITIZE_ADDRESS__
	return; /* the sanitizer's shadow memory is terabytes of address space */
#endif
	/* Paged out, the governor could not act when it matters most. Only where the
	 * limit allows all of it: a partial lock would make later allocations fail. */
	if (geteuid() != 0 &&
	    (getrlimit(RLIMIT_MEMLOCK, &rl) || (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (256u << 20)))) {
		log_debug("not locking memory: RLIMIT_MEMLOCK too small");
		return;
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		log_debug("mlockall: %s", strerror(errno));
	/* Make the kernel's OOM killer pick anything but the governor (root only). */
	fs_write("/proc/self/oom_score_adj", "-900");
}

static void write_records(struct gov *g)
{
	const struct governor_opts *o = g->o;
	struct meminfo mi = { 0 };
	int rc;

	if (o->trace_path && (rc = report_write_trace(&g->rep, o->trace_path)))
		log_warn("cannot write the trace to %s: %s", o->trace_path, strerror(-rc));
	if (o->record_path) {
		char *desc = xasprintf("recorded by headroom run:");
		for (char **a = o->argv; *a; a++) {
			char *d = xasprintf("%s %s", desc, *a);
			free(desc);
			desc = d;
		}
		meminfo_read(o->proc_root, &mi);
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		rc = report_write_record(&g->rep, o->record_path, desc, cpus > 0 ? (int)cpus : 1, mi.total_bytes);
		if (rc)
			log_warn("cannot write the record to %s: %s", o->record_path, strerror(-rc));
		free(desc);
	}
}

/* ---- the loop ---------------------------------------------------------------------------- */

static void handle_clients(struct gov *g, struct pollfd *pf, size_t npf, int64_t now)
{
	for (size_t k = 0; k < npf; k++) {
		if (!pf[k].revents)
			continue;
		for (size_t i = 0; i < g->njobs; i++) {
			struct job *j = g->jobs[i];
			json_t *msg;
			int rc;

			if (j->conn.fd != pf[k].fd)
				continue;
			rc = proto_fill(&j->conn);
			while (proto_take(&j->conn, &msg) == 1) {
				on_message(g, j, msg, now);
				json_decref(msg);
			}
			if (rc == 0 || (rc < 0 && rc != -EAGAIN && rc != -EINTR))
				remove_job(g, i);
			break;
		}
	}
}

static void on_signal(struct gov *g, int64_t now)
{
	struct signalfd_siginfo si;

	while (read(g->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(g);
			continue;
		}
		if (!g->interrupted) {
			g->interrupted = (int)si.ssi_signo;
			g->deadline_ms = now + GRACE_MS;
			if (!g->o->quiet)
				log_warn("interrupted: stopping the build");
		}
		if (g->build_pid > 0 && !g->build_done)
			kill(g->build_pid, (int)si.ssi_signo);
		for (size_t i = 0; i < g->njobs; i++) {
			job_signal(g->jobs[i], (int)si.ssi_signo);
			job_signal(g->jobs[i], SIGCONT);
		}
	}
}

int governor_run(const struct governor_opts *o)
{
	struct gov g = { .o = o, .listen_fd = -1, .sig_fd = -1, .js = { .rfd = -1, .wfd = -1, .own_fd = -1 },
			 .progress = { .fd = -1 }, .guard_fd = -1 };
	sigset_t mask, orig;
	int rc, status = EXIT_INTERNAL;

	g.t0_ms = now_ms();
	g.last_kill_ms = g.t0_ms - 100000;
	g.t_prev_ms = g.t0_ms;
	g.rep.jobs_cap = o->jobs;
	g.tree = o->tree;
	g.rep.mode = o->tree ? "process tree" : "launcher";
	if (prctl(PR_GET_NAME, g.self_name) || !g.self_name[0])
		snprintf(g.self_name, sizeof(g.self_name), "headroom");
	setup_memory(&g);
	lock_self();
	/* Orphans of the build (a compiler whose launcher died) become ours to end. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	rc = open_socket(&g);
	if (rc) {
		log_warn("cannot create the governor's socket: %s", strerror(-rc));
		goto out;
	}
	setenv("HEADROOM_SOCK", g.sock_path, 1);
	if (o->jobserver != JOBSERVER_NONE) {
		rc = jobserver_open(&g.js, o->jobserver, g.sock_dir, o->jobs, getenv("MAKEFLAGS"));
		if (rc) {
			log_warn("cannot open a %s jobserver: %s", jobserver_style_name(o->jobserver), strerror(-rc));
			goto out;
		}
		setenv("MAKEFLAGS", g.js.makeflags, 1);
		g.tree = 1;
		g.rep.mode = o->jobserver == JOBSERVER_PIPE ? "jobserver (pipe) and process tree"
							     : "jobserver (fifo) and process tree";
		log_debug("jobserver: MAKEFLAGS=%s", g.js.makeflags);
	}
	unsetenv("HEADROOM_JOB"); /* a build inside a job has a governor of its own: us */

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	g.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (g.sig_fd < 0) {
		log_warn("signalfd: %s", strerror(errno));
		goto out_mask;
	}
	build_history(&g);
	if (!o->quiet)
		progress_open(&g.progress, STDERR_FILENO);
	g.build_pid = start_build(&g, &orig);
	if (g.build_pid < 0) {
		log_warn("cannot start the build: %s", strerror(errno));
		goto out_mask;
	}
	g.guard_fd = start_guardian(g.build_pid, o->proc_root);

	int64_t next_tick = now_ms();
	while (!g.build_done) {
		size_t npf = g.njobs + 2;
		struct pollfd *pf = xcalloc(npf, sizeof(*pf));
		int64_t now = now_ms();
		int timeout = next_tick > now ? (int)(next_tick - now) : 0;

		pf[0] = (struct pollfd){ .fd = g.listen_fd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = g.sig_fd, .events = POLLIN };
		for (size_t i = 0; i < g.njobs; i++)
			pf[i + 2] = (struct pollfd){ .fd = g.jobs[i]->conn.fd, .events = POLLIN };
		if (poll(pf, (nfds_t)npf, timeout) < 0 && errno != EINTR) {
			free(pf);
			log_warn("poll: %s", strerror(errno));
			break;
		}
		now = now_ms();
		if (pf[1].revents)
			on_signal(&g, now);
		if (pf[0].revents)
			accept_client(&g);
		handle_clients(&g, pf + 2, npf - 2, now);
		free(pf);
		if (now >= next_tick) {
			govern_tick(&g, now);
			next_tick = now + o->tick_ms;
		}
		if (g.interrupted && now >= g.deadline_ms)
			break;
	}
	if (g.tree && g.build_done) {
		/* The last jobs ended with the build, after the last tick: learn them too. */
		proc_table_read(o->proc_root, &g.procs);
		tree_scan(&g, now_ms());
	}
	progress_close(&g.progress);
	/* the guardian is below us too: kill_everything ends it with the rest */
	kill_everything(&g);
	g.rep.wall_ms = now_ms() - g.t0_ms;
	if (g.interrupted)
		status = 128 + g.interrupted;
	else if (g.build_done)
		status = exit_status_of(g.build_status);
	g.rep.exit_status = status;
	/* Kills in the jobs' own groups do not show in ours: count the larger. */
	uint64_t group_ooms = oom_count(&g) - g.oom_start;
	if (group_ooms > (uint64_t)g.rep.oom_kills)
		g.rep.oom_kills = (int)group_ooms;
	if (g.cg_limited && !cgroup_mem_peak(&g.cg, &g.rep.peak_group_bytes))
		g.rep.has_peak_group = 1;
	save_profiles(&g);
	if (status == 0 && g.build_key && g.rep.njobs) {
		struct build_profile b = { g.last_build.runs + 1, (int64_t)g.rep.njobs, g.rep.wall_ms };
		if (store_build_put(o->store, g.build_key, &b))
			log_debug("could not save the build's job count");
	}
	if (!o->quiet)
		report_print(&g.rep, stderr);
	if (!o->quiet && !g.next_id && !g.tree && g.rep.wall_ms > 2000)
		log_warn("no compile job came through headroom exec, so none was governed: does the build use "
		      "$HEADROOM_LAUNCHER, CMAKE_<LANG>_COMPILER_LAUNCHER or PYTORCH_NVCC (a build script may "
		      "overwrite them)?");
	write_records(&g);
	if (o->report_path) {
		json_t *j = report_to_json(&g.rep);
		if (json_dump_file(j, o->report_path, JSON_INDENT(2)))
			log_warn("cannot write the report to %s", o->report_path);
		json_decref(j);
	}
out_mask:
	sigprocmask(SIG_SETMASK, &orig, NULL);
out:
	while (g.njobs)
		remove_job(&g, g.njobs - 1);
	free(g.jobs);
	free(g.skip);
	free(g.next_class);
	free(g.build_key);
	progress_close(&g.progress);
	if (g.js.style != JOBSERVER_NONE)
		jobserver_close(&g.js);
	for (size_t i = 0; i < g.ncache; i++) {
		free(g.cache[i]->key);
		free(g.cache[i]);
	}
	free(g.cache);
	if (g.guard_fd >= 0)
		close(g.guard_fd);
	if (g.listen_fd >= 0)
		close(g.listen_fd);
	if (g.sig_fd >= 0)
		close(g.sig_fd);
	if (g.sock_path)
		unlink(g.sock_path);
	if (g.sock_dir)
		rmdir(g.sock_dir);
	free(g.sock_path);
	free(g.sock_dir);
	free(g.psi_path);
	cgroup_free(&g.cg);
	proc_table_free(&g.procs);
	report_free(&g.rep);
	return status;
}
