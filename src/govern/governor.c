/* The governor: setup, the tick (measure, the safety net, admission) and the loop. */
#include "govern/governor.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "govern/admit.h"
#include "govern/gov.h"
#include "govern/tree.h"
#include "sys/cpus.h"
#include "sys/fsutil.h"
#include "sys/meminfo.h"
#include "sys/psi.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/units.h"
#include "util/xalloc.h"

/* After an interrupt, the build gets this long to stop before everything is killed. */
#define GRACE_MS 3000
/* The live progress line is redrawn at most this often: faster is flicker, not news. */
#define PROGRESS_EVERY_MS 500
/* The last kill, at the start: long enough ago that the net may kill at once. */
#define KILL_LONG_AGO_MS 100000
/* A build that ran this long with no job through the launcher did compile something, so
 * the warning that none was governed is worth its line; a no-op build is not. */
#define NO_JOBS_WARN_MS 2000

int gov_tree_jobs(const struct gov *g)
{
	return g->tree && (!g->o->tree_too || g->found_tree || g->rep.tree_fallback);
}

uint64_t gov_oom_count(struct gov *g)
{
	uint64_t n = 0;

	if (g->cg.version != CGROUP_NONE && !cgroup_oom_kills(&g->cg, &n))
		return n;
	if (!meminfo_oom_kills(g->o->proc_root, &n))
		return n;
	return 0;
}

/* Memory that can still be taken now, against the tighter of the cgroup and the machine:
 * 0 and *avail set, or -errno when the source that sets the limit could not be read (out
 * of file descriptors, say). Unknown is never "nothing free": the caller then holds. */
static int mem_available(struct gov *g, uint64_t *avail)
{
	struct meminfo mi;
	uint64_t ws;
	int err = meminfo_read(g->o->proc_root, &mi);

	*avail = err ? UINT64_MAX : mi.available_bytes;
	if (g->cg_limited) {
		int e = cgroup_mem_working_set(&g->cg, &ws);
		if (e)
			return e;
		uint64_t a = g->limit_bytes > ws ? g->limit_bytes - ws : 0;
		if (a < *avail)
			*avail = a;
		return 0;
	}
	return err;
}

/* How old a reading of free memory an admission between ticks may use. A build starts its
 * jobs in bursts, and a job admitted a moment ago has not yet taken its memory: the
 * admission prices it from its prediction either way, while the running jobs' own use is
 * a tick old. Read anew for every message, a burst costs two file reads a job. */
#define AVAIL_FRESH_MS 5

/* mem_available(), reusing a reading at most max_age_ms old (0: always read). */
static int mem_available_at(struct gov *g, int64_t now, int64_t max_age_ms, uint64_t *avail)
{
	if (max_age_ms > 0 && g->avail_at_ms >= 0 && now - g->avail_at_ms <= max_age_ms) {
		*avail = g->avail_bytes;
		return 0;
	}
	int err = mem_available(g, avail);
	g->avail_at_ms = err ? -1 : now;
	g->avail_bytes = *avail;
	return err;
}

/* Descriptors kept for the governor's own reads (/proc, cgroup files, the store) beside
 * its connections: with every descriptor taken by waiting launchers it could not read
 * memory, and no job could end to give one back. */
#define FD_SPARE 32

/* Launcher connections open at once, whatever the descriptor limit: at least a few jobs
 * run under the tightest limit; past the most, no build starts more jobs at once. */
#define CONN_MIN 4
#define CONN_MAX ((size_t)1 << 20)

/* How many launcher connections may be open at once: the descriptor limit less the
 * spare (at least CONN_MIN); the rest wait in the socket's backlog. */
static size_t conn_cap(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > CONN_MAX)
		return CONN_MAX;
	return rl.rlim_cur > FD_SPARE + CONN_MIN ? (size_t)rl.rlim_cur - FD_SPARE : CONN_MIN;
}

/* Reading memory failed: say so once per spell, with what headroom does meanwhile. */
static void mem_unknown(struct gov *g, int err)
{
	if (!g->mem_unknown)
		log_warn("cannot read the memory in use (%s): no job is started, frozen or ended until it can be",
			 strerror(-err));
	g->mem_unknown = 1;
}

/* Others' memory and the reserve leave the jobs nothing of the limit (others' use read
 * at a peak of theirs, say): the jobs get this share of it (1/BUDGET_LEFT_DIV), the share
 * the ramp gives one unknown job, rather than a budget that lets nothing run. */
#define BUDGET_LEFT_DIV 4

/* 0, or EXIT_USAGE when the reserve leaves the jobs nothing. */
static int setup_memory(struct gov *g)
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
	/* a group used before keeps its old peak: the report's is this build's */
	if (g->cg_limited && cgroup_mem_peak_mark(&g->cg, &g->peak_mark))
		log_debug("cannot read the group's peak");
	g->psi_path = cgroup_pressure_path(&g->cg);
	if (!g->psi_path)
		g->psi_path = xasprintf("%s/proc/pressure/memory", g->o->proc_root);
	g->reserve_bytes = g->o->reserve_bytes ? g->o->reserve_bytes : net_default_reserve(g->limit_bytes);
	if (g->limit_bytes && g->reserve_bytes >= g->limit_bytes) {
		char r[32], l[32];
		size_format(g->reserve_bytes, r, sizeof(r));
		size_format(g->limit_bytes, l, sizeof(l));
		if (g->o->reserve_bytes)
			log_warn("--reserve %s is all of the memory limit, %s (%s): no job could ever run; give less",
				 r, l, g->rep.limit_source);
		else
			log_warn("the default reserve, %s (%d %% of the limit, at least %llu MiB), is all of the "
				 "memory limit, %s (%s): no job could ever run; give a smaller one with --reserve, or "
				 "run in a larger memory limit", r, RESERVE_PCT, (unsigned long long)(RESERVE_MIN_BYTES >> 20),
				 l, g->rep.limit_source);
		return EXIT_USAGE;
	}
	uint64_t avail;
	if (!mem_available(g, &avail) && g->limit_bytes > avail)
		others = g->limit_bytes - avail;
	if (g->o->budget_bytes) {
		g->budget_bytes = g->o->budget_bytes;
		if (g->limit_bytes && g->budget_bytes > g->limit_bytes) {
			char bb[32], l[32];
			log_warn("the budget, %s, is more than the memory limit, %s (%s): the limit binds first, and "
				 "the kernel may kill jobs before headroom acts; give at most %s",
				 size_format(g->budget_bytes, bb, sizeof(bb)), size_format(g->limit_bytes, l, sizeof(l)),
				 g->rep.limit_source, l);
		}
	} else {
		g->budget_bytes = g->limit_bytes > others + g->reserve_bytes ? g->limit_bytes - others - g->reserve_bytes
									      : g->limit_bytes / BUDGET_LEFT_DIV;
	}
	g->rep.limit_bytes = g->limit_bytes;
	g->rep.budget_bytes = g->budget_bytes;
	/* A fixed -jN build has no safety net for the default reserve to give time to: the
	 * recommendation may use the limit, less what others hold. Its margin is the replay's
	 * own: each curve holds its slice's maximum over the whole slice, so peaks that pass
	 * each other count as met. A budget or reserve the user gave is kept. */
	if (!g->o->budget_bytes && !g->o->reserve_bytes && g->limit_bytes > others + g->reserve_bytes)
		g->rep.fixed_budget_bytes = g->budget_bytes + g->reserve_bytes;
	g->oom_start = g->oom_tick = gov_oom_count(g);
	char a[32], b[32], c[32];
	log_info("memory limit %s (%s), in use by others %s, budget for jobs %s",
	      size_format(g->limit_bytes, a, sizeof(a)), g->rep.limit_source, size_format(others, b, sizeof(b)),
	      size_format(g->budget_bytes, c, sizeof(c)));
	return 0;
}

/* The jobs' budget less what the build left running that no job owns
 * (tree_unowned_bytes): that memory is taken from the same budget. */
static uint64_t jobs_budget(const struct gov *g)
{
	return g->budget_bytes > g->unowned_bytes ? g->budget_bytes - g->unowned_bytes : 0;
}

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
			learned_predict(g, j);
		out[n++] = (struct admit_job){ job_elapsed(j, now), j->pred, j->current_bytes, j->frozen, j->pred_own,
					       learned_pred_open(g, j), !j->passed_peak };
		*jobs_bytes += j->current_bytes;
		*running += !j->frozen;
	}
	return n;
}

/* How many tokens the jobserver should hold: admit_tokens() for jobs like the last one
 * found, on top of the admission snapshot s. */
static int jobserver_tokens(struct gov *g, const struct admit_snapshot *s, int running)
{
	const struct curve *next = NULL;
	int waiting = 0;

	for (size_t i = 0; i < g->njobs; i++)
		waiting += g->jobs[i]->state == JOB_WAITING;
	/* the class is looked up only when its curve counts */
	if (!waiting && g->next_class) {
		struct learned *l = learned_get(g, PROFILE_CLASS, g->next_class);
		next = l->known ? &l->p.curve : NULL;
	}
	return admit_tokens(s, next, running, g->o->jobs, waiting);
}

/* Admission: the waiting jobs in admit_order() (the predicted longest first), each
 * started if it fits beside the running ones and those just admitted, so smaller jobs
 * fill the room a larger one cannot use. On a request's arrival (on_request) only while
 * admit_at_once() allows; the rest wait for the tick. snap holds the n running jobs and
 * has room for o->jobs more; *s is left as the snapshot with the admitted ones added.
 * Returns how many run now. */
static int admit_waiting(struct gov *g, int64_t now, uint64_t avail, struct admit_job *snap, size_t n, int running,
			 int on_request, struct admit_snapshot *s)
{
	struct admit_wait *w = xmalloc((g->njobs ? g->njobs : 1) * sizeof(*w));
	size_t nw = 0;
	uint64_t room = avail > g->reserve_bytes ? avail - g->reserve_bytes : 0;

	*s = (struct admit_snapshot){
		.budget_bytes = jobs_budget(g),
		.free_bytes = room,
		.unknown_bytes = admit_unknown_need(jobs_budget(g), room, gov_tree_jobs(g), g->seen_peak_bytes, snap, n),
		.jobs = snap,
		.njobs = n,
	};
	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state != JOB_WAITING)
			continue;
		if (!j->pred)
			learned_predict(g, j);
		w[nw++] = (struct admit_wait){ j->pred ? j->pred->duration_ms : -1, j->id, i };
	}
	admit_order(w, nw, g->longest_done_ms);
	for (size_t k = 0; k < nw && running < g->o->jobs; k++) {
		struct job *j = g->jobs[w[k].idx];
		struct admit_result r;

		if (on_request && !admit_at_once(s, j->pred))
			break;
		int open = learned_pred_open(g, j);
		admit_decide(s, j->pred, (j->pred_own ? ADMIT_OWN : 0) | (open ? ADMIT_OPEN : 0), &r);
		/* With nothing running, the job runs whatever its prediction: waiting
		 * cannot make room, and the safety net still watches it. */
		if (!r.admit && s->njobs > 0) {
			j->held_by = r.short_of_free ? REPORT_HELD_FREE : REPORT_HELD_BUDGET;
			continue;
		}
		server_admit(g, j, now);
		snap[s->njobs++] = (struct admit_job){ 0, j->pred, 0, 0, j->pred_own, open, 1 };
		running++;
		log_debug("admitted job %d (%s), predicted worst %llu MiB in %lld ms", j->id, j->src,
			  (unsigned long long)(r.worst_bytes >> 20), (long long)r.worst_at_ms);
	}
	free(w);
	return running;
}

void gov_admit(struct gov *g, int64_t now, int on_request)
{
	struct admit_snapshot s;
	struct admit_job *snap;
	uint64_t jobs_bytes;
	int running, waiting = 0;
	size_t n;

	for (size_t i = 0; i < g->njobs; i++)
		waiting += g->jobs[i]->state == JOB_WAITING;
	if (!waiting || g->net_act != NET_OK || g->interrupted || oldest_frozen(g))
		return;
	snap = xmalloc((g->njobs + (size_t)g->o->jobs + 1) * sizeof(*snap));
	n = snapshot(g, now, snap, &jobs_bytes, &running);
	uint64_t avail;
	int err = mem_available_at(g, now, AVAIL_FRESH_MS, &avail);
	if (err) {
		mem_unknown(g, err);
		job_hold_all(g, REPORT_HELD_NET);
	} else if (running < g->o->jobs)
		admit_waiting(g, now, avail, snap, n, running, on_request, &s);
	free(snap);
}

static void show_progress(struct gov *g, int64_t now, uint64_t jobs_bytes)
{
	struct progress_state ps = { .done = (int)g->rep.njobs, .jobs_bytes = jobs_bytes, .budget_bytes = g->budget_bytes };
	int waiting = 0;
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
			waiting++;
		} else if (j->state == JOB_RUNNING) {
			int64_t left = j->pred ? j->pred->duration_ms - job_elapsed(j, now)
					       : (in.done ? in.done_work_ms / in.done : 0);
			in.running_left_ms += left > 0 ? left : 0;
			ps.frozen += j->frozen;
			ps.running += !j->frozen;
		}
	}
	*(job_waits_for_memory(g, ps.running) ? &ps.waiting_memory : &ps.waiting_slot) = waiting;
	in.running = ps.running + ps.frozen;
	/* the last build's count, or more when this one already saw more */
	if (g->last_build.jobs) {
		int seen = ps.done + in.running + waiting;
		ps.total = g->last_build.jobs > seen ? (int)g->last_build.jobs : seen;
	}
	in.total = ps.total;
	ps.eta_ms = progress_eta(&in);
	progress_show(&g->progress, &ps);
}

/* Everything the tick looks at is below the governor (the build, its jobs, and as a
 * subreaper whatever they leave): read only that, not every process on the machine. */
static void read_procs(struct gov *g)
{
	if (!g->procs_whole) {
		int rc = proc_table_read_below(g->o->proc_root, getpid(), &g->procs);
		if (rc != -ENOENT)
			return;
		log_debug("no /proc/PID/task/TID/children here: reading every process each tick");
		g->procs_whole = 1;
	}
	proc_table_read(g->o->proc_root, &g->procs);
}

/* Thaw the oldest frozen job when what it is predicted to still grow by is free (the net
 * saying OK), or when the build stalls on its frozen jobs (net_thaw_stalled). */
static void thaw_oldest(struct gov *g, enum net_action act, int64_t now, uint64_t avail, const struct admit_job *snap,
			size_t n, uint64_t jobs_bytes)
{
	struct job *f = oldest_frozen(g);

	if (!f)
		return;
	if (act == NET_OK) {
		struct admit_job aj = { job_elapsed(f, now), f->pred, f->current_bytes, 1, f->pred_own,
					learned_pred_open(g, f), !f->passed_peak };
		uint64_t room = avail > g->reserve_bytes ? avail - g->reserve_bytes : 0;
		uint64_t unknown = admit_unknown_need(jobs_budget(g), room, gov_tree_jobs(g), g->seen_peak_bytes, snap, n);
		uint64_t need = admit_thaw_need(&aj, unknown);
		if (admit_thaw_fits(need, avail, g->reserve_bytes, jobs_bytes, jobs_budget(g))) {
			job_thaw(g, f, now);
			return;
		}
	}
	/* frozen jobs holding the memory that they wait for, beside runners that barely grow */
	if (net_thaw_stalled(running_growth(g), net_lookahead_growth(f->frozen_growth_bytes_per_s), avail,
			     g->reserve_bytes))
		job_thaw(g, f, now);
}

/* A stall no thaw breaks: the frozen job that ran least, frozen for longer than it ran,
 * is killed and runs again (net_requeue_frozen); a job of the tree has no launcher to. */
static void requeue_stalled(struct gov *g, int64_t now)
{
	struct job *v = NULL;
	int64_t v_ran = 0;

	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state != JOB_RUNNING || !j->frozen || j->tree || j->pid <= 0 || j->killed_by_us)
			continue;
		int64_t ran = job_elapsed(j, now);
		if (net_requeue_frozen(job_frozen_ms(j, now), ran, j->attempt > 1, now - g->last_kill_ms) &&
		    (!v || ran < v_ran)) {
			v = j;
			v_ran = ran;
		}
	}
	if (!v)
		return;
	log_info("job %d (%s) frozen longer than it ran, beside others the memory holds back: killed, to run "
		 "again", v->id, v->src);
	job_kill(g, v, now);
	g->rep.requeues++;
}

/* Carry out the net's verdict (mem_err: memory unknown, the verdict a hold). */
static void net_carry_out(struct gov *g, enum net_action act, int64_t now, uint64_t avail, int mem_err,
			  const struct admit_job *snap, size_t n, uint64_t jobs_bytes, int running)
{
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
	} else if (act == NET_OK || (act == NET_HOLD && !mem_err)) {
		thaw_oldest(g, act, now, avail, snap, n, jobs_bytes);
	}
	if (act != NET_KILL && !g->interrupted)
		requeue_stalled(g, now);
}

/* The report's timeline, a point a second, and the progress line, on known memory. */
static void note_point(struct gov *g, int64_t now, int running, size_t n, uint64_t jobs_bytes, uint64_t used)
{
	if (now - g->t0_ms >= (int64_t)g->rep.npoints * 1000) {
		struct report_point p = { now - g->t0_ms, running, (int)n - running, 0, jobs_bytes, used };
		for (size_t i = 0; i < g->njobs; i++)
			p.waiting += g->jobs[i]->state == JOB_WAITING;
		report_add_point(&g->rep, &p);
	}
	if (g->progress.fd >= 0 && now >= g->next_progress_ms) {
		show_progress(g, now, jobs_bytes);
		g->next_progress_ms = now + PROGRESS_EVERY_MS;
	}
}

static void say_unowned(struct gov *g)
{
	char a[32], b[32];

	log_warn("processes the build's jobs left running hold %s, more than the budget of %s: one job at a "
		 "time until they end", size_format(g->unowned_bytes, a, sizeof(a)),
		 size_format(g->budget_bytes, b, sizeof(b)));
	g->said_unowned = 1;
}

/* What holds the waiting jobs this tick, for the report: the machine's state (what the
 * net decided of it, or memory unreadable), the build's own jobs over the budget, or a
 * frozen job, which goes first, held for what froze it. */
static void hold_waiting(struct gov *g, enum net_action act, enum net_action machine, int mem_err)
{
	if (act == NET_FREEZE || act == NET_KILL)
		g->frozen_by = machine != NET_OK ? REPORT_HELD_NET : REPORT_HELD_BUDGET;
	if (mem_err || machine != NET_OK)
		job_hold_all(g, REPORT_HELD_NET);
	else if (act != NET_OK)
		job_hold_all(g, REPORT_HELD_BUDGET);
	else if (oldest_frozen(g))
		job_hold_all(g, g->frozen_by != REPORT_HELD_PACE ? g->frozen_by : REPORT_HELD_BUDGET);
}

static void govern_tick(struct gov *g, int64_t now)
{
	struct admit_job *snap;
	uint64_t jobs_bytes, avail;
	int mem_err = mem_available_at(g, now, 0, &avail);
	int running;
	struct psi psi;
	size_t n;
	int tokens = 0;

	read_procs(g);
	g->unowned_bytes = tree_unowned_bytes(&g->procs, getpid(), g->build_pid, g->guard_pid);
	if (g->unowned_bytes > g->rep.peak_unowned_bytes)
		g->rep.peak_unowned_bytes = g->unowned_bytes;
	g->oom_tick = gov_oom_count(g);
	treescan_fallback(g);
	if (g->tree)
		treescan_run(g, now);
	/* room for the running jobs and those admitted this tick */
	snap = xmalloc((g->njobs + 1) * sizeof(*snap));
	job_sample_all(g, now, now - g->t_prev_ms);
	learned_provisional(g, now);
	learned_save_soon(g, now);
	n = snapshot(g, now, snap, &jobs_bytes, &running);
	if (jobs_bytes > g->rep.peak_jobs_bytes)
		g->rep.peak_jobs_bytes = jobs_bytes;

	/* unknown: the last known use stands in for the net's inputs, which are not acted on */
	uint64_t used = mem_err ? g->used_prev : g->limit_bytes > avail ? g->limit_bytes - avail : g->limit_bytes;
	struct net_state ns = {
		.limit_bytes = g->limit_bytes,
		.used_bytes = used,
		.reserve_bytes = g->reserve_bytes,
		.psi_full_avg10_pct = psi_read(g->psi_path, &psi) ? -1.0 : psi.full_avg10_pct,
		.ms_since_last_kill = now - g->last_kill_ms,
		.growth_bytes_per_s = used > g->used_prev && now > g->t_prev_ms
			? (used - g->used_prev) * 1000 / (uint64_t)(now - g->t_prev_ms) : 0,
	};
	job_note_tick(g, now, now - g->t_prev_ms, running, jobs_bytes);
	g->used_prev = used;
	g->t_prev_ms = now;
	if (!mem_err)
		note_point(g, now, running, n, jobs_bytes, used);
	/* what jobs left running counts while jobs run; alone, however large, it must not
	 * stop the one job that always runs (it may never end: a daemon) */
	enum net_action machine = net_decide(&ns);
	enum net_action act = net_apply_budget(machine, jobs_bytes + (running ? g->unowned_bytes : 0),
					       g->budget_bytes);
	if (!running && g->unowned_bytes > g->budget_bytes && !g->said_unowned)
		say_unowned(g);
	/* The net acts on known numbers only: with memory unknown it holds, and ends or
	 * freezes nothing on a guess. */
	if (mem_err) {
		mem_unknown(g, mem_err);
		act = NET_HOLD;
	} else if (g->mem_unknown) {
		log_info("memory readable again");
		g->mem_unknown = 0;
	}

	net_carry_out(g, act, now, avail, mem_err, snap, n, jobs_bytes, running);
	g->net_act = act;
	hold_waiting(g, act, machine, mem_err);
	if (act == NET_OK && !g->interrupted && !oldest_frozen(g)) {
		struct admit_snapshot s;

		running = admit_waiting(g, now, avail, snap, n, running, 0, &s);
		if (g->js.style != JOBSERVER_NONE)
			tokens = jobserver_tokens(g, &s, running);
	}
	if (g->js.style != JOBSERVER_NONE && jobserver_set(&g->js, tokens) < 0)
		log_debug("jobserver: %s", strerror(errno));
	free(snap);
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

/* What this build did, for headroom stats: a build that ran jobs, or was interrupted. */
static void record_governed(struct gov *g)
{
	const struct report *r = &g->rep;
	struct strbuf cmd = STRBUF_INIT;
	char cwd[4096];
	int safe = report_safe_max_jobs(r), ncompile = 0, whole = report_completed(r);

	if (!g->o->store || !r->njobs || !getcwd(cwd, sizeof(cwd)))
		return;
	for (size_t i = 0; i < r->njobs; i++)
		ncompile += r->jobs[i].compile != 0;
	for (char **a = g->o->argv; *a; a++)
		strbuf_addf(&cmd, "%s%s", a == g->o->argv ? "" : " ", *a);
	struct governed_build b = {
		.dir = cwd, .command = strbuf_str(&cmd), .ended_s = (int64_t)time(NULL), .wall_ms = r->wall_ms,
		.exit_status = r->exit_status, .jobs = (int64_t)r->njobs, .compile_jobs = ncompile,
		.freezes = r->freezes, .kills = r->kills, .retries = r->retries, .oom_kills = r->oom_kills,
		.jobs_cap = r->jobs_cap, .budget_bytes = (int64_t)r->budget_bytes,
		.safe_jobs = safe ? safe : -1,
		.limit_bytes = r->limit_bytes ? (int64_t)r->limit_bytes : -1,
		/* a build cut short ran part of its jobs: no replay of it stands for the build */
		.plain_peak_bytes = whole && ncompile && r->jobs_cap > 0 ? (int64_t)report_fixed_peak_bytes(r, r->jobs_cap) : -1,
		.compile_wall_ms = ncompile ? report_compile_wall_ms(r) : -1,
		.safe_fixed_wall_ms = safe && report_fixed_wall_fair(r) ? report_fixed_wall_ms(r, safe) : -1,
	};
	if (store_governed_add(g->o->store, &b))
		log_debug("could not record the build for headroom stats");
	strbuf_release(&cmd);
}

static pid_t start_build(struct gov *g, const sigset_t *orig_mask)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	sigprocmask(SIG_SETMASK, orig_mask, NULL);
	/* the build is not the governor: its jobs are what the OOM killer should pick */
	if (g->oom_adj0[0])
		fs_write("/proc/self/oom_score_adj", g->oom_adj0);
	setpriority(PRIO_PROCESS, 0, g->nice0);
	execvp(g->o->argv[0], g->o->argv);
	int e = errno;
	log_warn("cannot run %s: %s", g->o->argv[0], strerror(e));
	_exit(e == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* --report, --trace, --record; how many could not be written. */
static int write_records(struct gov *g)
{
	const struct governor_opts *o = g->o;
	struct meminfo mi = { 0 };
	int rc, failed = 0;

	if (o->report_path && (rc = report_write_json(&g->rep, o->report_path))) {
		log_warn("cannot write the report to %s: %s", o->report_path, strerror(-rc));
		failed++;
	}
	if (o->trace_path && (rc = report_write_trace(&g->rep, o->trace_path))) {
		log_warn("cannot write the trace to %s: %s", o->trace_path, strerror(-rc));
		failed++;
	}
	if (o->record_path) {
		struct strbuf desc = STRBUF_INIT;

		strbuf_add(&desc, "recorded by headroom run:");
		for (char **a = o->argv; *a; a++)
			strbuf_addf(&desc, " %s", *a);
		meminfo_read(o->proc_root, &mi);
		rc = report_write_record(&g->rep, o->record_path, strbuf_str(&desc), cpus_usable(""),
					 mi.total_bytes);
		if (rc)
			log_warn("cannot write the record to %s: %s", o->record_path, strerror(-rc));
		failed += rc != 0;
		strbuf_release(&desc);
	}
	return failed;
}

static void on_signal(struct gov *g, int64_t now)
{
	struct signalfd_siginfo si;

	while (read(g->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			guard_reap(g);
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
			job_signal(g, g->jobs[i], (int)si.ssi_signo);
			job_signal(g, g->jobs[i], SIGCONT);
		}
	}
}

static int watch_fd(struct gov *g, int fd, void *tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tag };

	return epoll_ctl(g->ep_fd, EPOLL_CTL_ADD, fd, &ev);
}

/* The governor's own process and the launchers' socket (and the jobserver): 0, or the exit
 * status to end with. */
static int setup_self(struct gov *g)
{
	const struct governor_opts *o = g->o;
	int rc, status;

	g->t0_ms = now_ms();
	g->last_kill_ms = g->t0_ms - KILL_LONG_AGO_MS;
	g->t_prev_ms = g->t0_ms;
	g->rep.jobs_cap = o->jobs;
	g->rep.cpus = cpus_usable("");
	g->rep.jobs_cap_from = o->jobs_from;
	g->tree = o->tree || o->tree_too;
	g->rep.mode = o->tree ? "process tree" : o->tree_too ? "process tree and launcher" : "launcher";
	g->rep.knob = report_knob_for(o->argv);
	if (prctl(PR_GET_NAME, g->self_name) || !g->self_name[0])
		snprintf(g->self_name, sizeof(g->self_name), "headroom");
	status = setup_memory(g);
	if (status)
		return status;
	g->nice0 = getpriority(PRIO_PROCESS, 0);
	if (fs_read("/proc/self/oom_score_adj", g->oom_adj0, sizeof(g->oom_adj0)) <= 0)
		g->oom_adj0[0] = '\0';
	guard_lock_self();
	/* Orphans of the build (a compiler whose launcher died) become ours to end. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	rc = server_open(g);
	if (rc) {
		log_warn("cannot create the governor's socket: %s", strerror(-rc));
		return EXIT_INTERNAL;
	}
	setenv("HEADROOM_SOCK", g->sock_path, 1);
	if (o->jobserver != JOBSERVER_NONE) {
		rc = jobserver_open(&g->js, o->jobserver, g->sock_dir, o->jobs, getenv("MAKEFLAGS"));
		if (rc) {
			log_warn("cannot open a %s jobserver: %s", jobserver_style_name(o->jobserver), strerror(-rc));
			return EXIT_INTERNAL;
		}
		setenv("MAKEFLAGS", g->js.makeflags, 1);
		g->tree = 1;
		g->rep.mode = o->jobserver == JOBSERVER_PIPE ? "jobserver (pipe) and process tree"
							      : "jobserver (fifo) and process tree";
		log_debug("jobserver: MAKEFLAGS=%s", g->js.makeflags);
	}
	unsetenv("HEADROOM_JOB"); /* a build inside a job has a governor of its own: us */
	return 0;
}

/* Signals (blocked, read from a signalfd: orig keeps the mask to restore), the build, the
 * guardian and epoll: 0, or the exit status to end with. */
static int setup_build(struct gov *g, sigset_t *orig)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, orig);
	g->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (g->sig_fd < 0) {
		log_warn("signalfd: %s", strerror(errno));
		return EXIT_INTERNAL;
	}
	build_history(g);
	if (!g->o->quiet)
		progress_open(&g->progress, STDERR_FILENO);
	g->build_pid = start_build(g, orig);
	if (g->build_pid < 0) {
		log_warn("cannot start the build: %s", strerror(errno));
		return EXIT_INTERNAL;
	}
	g->guard_fd = guard_start(g);
	/* epoll: each wakeup costs the same with 8 launchers connected or 512 */
	g->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (g->ep_fd < 0 || watch_fd(g, g->listen_fd, &g->listen_fd) || watch_fd(g, g->sig_fd, &g->sig_fd)) {
		log_warn("epoll: %s", strerror(errno));
		return EXIT_INTERNAL;
	}
	return 0;
}

/* While a job of the tree is young (admitted less than a tick ago) the ticks come this
 * many times faster: a compile shorter than a tick would otherwise end before any sample
 * saw it run, and could never be learned (a launcher's job reports its own peak). */
#define YOUNG_TICK_DIV 5

static int64_t tick_interval(const struct gov *g, int64_t now)
{
	for (size_t i = 0; i < g->njobs; i++) {
		const struct job *j = g->jobs[i];
		if (j->tree && j->state == JOB_RUNNING && now - j->t_admit_ms < g->o->tick_ms)
			return g->o->tick_ms / YOUNG_TICK_DIV > 0 ? g->o->tick_ms / YOUNG_TICK_DIV : 1;
	}
	return g->o->tick_ms;
}

/* Until the build ends (or, interrupted, its grace runs out): launchers' messages and
 * signals as they come, the tick every tick_ms (more often while a tree job is young). */
static void run_loop(struct gov *g)
{
	int64_t next_tick = now_ms();

	g->max_conns = conn_cap();
	while (!g->build_done) {
		struct epoll_event ev[64];
		int64_t now = now_ms();
		int timeout = next_tick > now ? (int)(next_tick - now) : 0;
		int n = epoll_wait(g->ep_fd, ev, (int)(sizeof(ev) / sizeof(ev[0])), timeout);

		if (n < 0 && errno != EINTR) {
			log_warn("epoll_wait: %s", strerror(errno));
			break;
		}
		now = now_ms();
		for (int k = 0; k < n; k++) {
			if (ev[k].data.ptr == &g->sig_fd)
				on_signal(g, now);
			else if (ev[k].data.ptr == &g->listen_fd)
				server_accept(g);
			else
				server_read(g, ev[k].data.ptr, now);
		}
		server_listen_again(g);
		if (now >= next_tick) {
			govern_tick(g, now);
			server_tell_waiting(g, now);
			next_tick = now + tick_interval(g, now);
		}
		if (g->interrupted && now >= g->deadline_ms)
			break;
	}
}

/* After the loop: the last jobs' ends, everything left ended, the store, the report and
 * the records. Returns the exit status. */
static int finish(struct gov *g)
{
	int status = EXIT_INTERNAL;

	if (g->build_done)
		server_drain(g, now_ms());
	if (g->tree && g->build_done) {
		/* The last jobs ended with the build, after the last tick: learn them too. */
		read_procs(g);
		treescan_run(g, now_ms());
	}
	progress_close(&g->progress);
	/* the guardian is below us too: guard_kill_everything ends it with the rest */
	guard_kill_everything(g);
	g->rep.wall_ms = now_ms() - g->t0_ms;
	if (g->interrupted)
		status = 128 + g->interrupted;
	else if (g->build_done)
		status = exit_status_of(g->build_status);
	g->rep.exit_status = status;
	/* Kills in the jobs' own groups do not show in ours: count the larger. */
	uint64_t group_ooms = gov_oom_count(g) - g->oom_start;
	if (group_ooms > (uint64_t)g->rep.oom_kills)
		g->rep.oom_kills = (int)group_ooms;
	if (g->cg_limited && !cgroup_mem_peak_since(&g->cg, &g->peak_mark, &g->rep.peak_group_bytes))
		g->rep.has_peak_group = 1;
	learned_save(g);
	record_governed(g);
	if (status == 0 && g->build_key && g->rep.njobs) {
		struct build_profile b = { g->last_build.runs + 1, (int64_t)g->rep.njobs, g->rep.wall_ms };
		if (store_build_put(g->o->store, g->build_key, &b))
			log_debug("could not save the build's job count");
	}
	/* Both ways were open: say the one the jobs took. */
	if (g->o->tree_too && !g->rep.tree_fallback && g->found_tree != g->found_launcher)
		g->rep.mode = g->found_tree ? "process tree" : "launcher";
	if (!g->o->quiet)
		report_print(&g->rep, stderr);
	if (!g->o->quiet && !g->next_id && !g->tree && g->rep.wall_ms > NO_JOBS_WARN_MS)
		log_warn("no compile job came through headroom exec, so none was governed: does the build use "
			 "$HEADROOM_LAUNCHER, CMAKE_<LANG>_COMPILER_LAUNCHER or PYTORCH_NVCC (a build script may "
			 "overwrite them)?");
	/* a build that went well but whose outputs were not written is not a success */
	if (write_records(g) && !status)
		status = EXIT_INTERNAL;
	return status;
}

static void gov_free(struct gov *g)
{
	while (g->njobs)
		job_remove(g, g->njobs - 1);
	free(g->jobs);
	free(g->skip);
	free(g->next_class);
	free(g->build_key);
	progress_close(&g->progress);
	if (g->js.style != JOBSERVER_NONE)
		jobserver_close(&g->js);
	learned_free(g);
	if (g->guard_fd >= 0)
		close(g->guard_fd);
	if (g->listen_fd >= 0)
		close(g->listen_fd);
	if (g->sig_fd >= 0)
		close(g->sig_fd);
	if (g->ep_fd >= 0)
		close(g->ep_fd);
	if (g->sock_path)
		unlink(g->sock_path);
	if (g->sock_dir)
		rmdir(g->sock_dir);
	free(g->sock_path);
	free(g->sock_dir);
	free(g->psi_path);
	cgroup_free(&g->cg);
	proc_table_free(&g->procs);
	report_free(&g->rep);
}

int governor_run(const struct governor_opts *o)
{
	struct gov g = { .o = o, .longest_done_ms = -1, .avail_at_ms = -1, .listen_fd = -1, .sig_fd = -1, .ep_fd = -1, .js = { .rfd = -1, .wfd = -1, .own_fd = -1 },
			 .progress = { .fd = -1 }, .guard_fd = -1 };
	sigset_t orig;
	int status = setup_self(&g);

	if (!status) {
		status = setup_build(&g, &orig);
		if (!status) {
			run_loop(&g);
			status = finish(&g);
		}
		sigprocmask(SIG_SETMASK, &orig, NULL);
	}
	gov_free(&g);
	return status;
}
