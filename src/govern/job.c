/* The job table, and what the governor does to a job's processes: hold, freeze, thaw,
 * kill, and sample their memory. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "govern/gov.h"
#include "govern/governor.h"
#include "govern/signature.h"
#include "govern/tree.h"
#include "util/grow.h"
#include "util/log.h"
#include "util/xalloc.h"

int64_t job_frozen_ms(const struct job *j, int64_t now)
{
	return j->frozen_total_ms + (j->frozen ? now - j->frozen_at_ms : 0);
}

int64_t job_elapsed(const struct job *j, int64_t now)
{
	int64_t e = now - j->t_admit_ms - job_frozen_ms(j, now);

	return e > 0 ? e : 0;
}

void job_reset_run(struct job *j)
{
	j->pid = 0;
	j->frozen = 0;
	j->frozen_total_ms = 0;
	j->nsamples = 0;
	j->current_bytes = j->peak_bytes = 0;
	j->killed_by_us = 0;
	j->passed_peak = 0;
	j->pred = NULL;
}

struct job *job_new(struct gov *g, int fd)
{
	struct job *j = xcalloc(1, sizeof(*j));

	j->id = ++g->next_id;
	proto_conn_init(&j->conn, fd);
	ARRAY_GROW(g->jobs, g->njobs + 1, g->capjobs);
	g->jobs[g->njobs++] = j;
	return j;
}

void job_drop_group(struct job *j)
{
	if (j->cg.version == CGROUP_NONE)
		return;
	cgroup_kill_all(&j->cg);
	cgroup_remove(&j->cg);
	cgroup_free(&j->cg);
}

void job_free(struct job *j)
{
	proto_conn_close(&j->conn);
	job_drop_group(j);
	free(j->tool);
	free(j->src);
	free(j->class_key);
	free(j->sig_key);
	free(j->samples);
	free(j->grouped);
	free(j);
}

/* Is pid the build, or below it? From /proc, a bounded walk up. */
static int below_build(const struct gov *g, pid_t pid)
{
	struct proc_entry e;

	for (int depth = 0; depth < ANCESTRY_MAX && pid > 1; depth++) {
		if (pid == g->build_pid)
			return 1;
		if (proc_read_one(g->o->proc_root, pid, &e))
			return 0;
		pid = e.ppid;
	}
	return 0;
}

/* A launcher's tool as the kernel says now, for a signal before any tick found it: the
 * launcher's child that leads a process group of its own, the launcher being below the
 * build. 0 when there is none. */
static pid_t tool_now(const struct gov *g, const struct job *j)
{
	pid_t kids[16];
	struct proc_entry e;
	int n;

	if (j->launcher_pid <= 0 || !below_build(g, j->launcher_pid))
		return 0;
	n = proc_children(g->o->proc_root, j->launcher_pid, kids, sizeof(kids) / sizeof(kids[0]));
	for (int i = 0; i < n; i++)
		if (!proc_read_one(g->o->proc_root, kids[i], &e) && e.ppid == j->launcher_pid && e.pgid == e.pid &&
		    e.state != 'Z')
			return e.pid;
	return 0;
}

void job_signal(struct gov *g, struct job *j, int sig)
{
	if (!j->tree && j->pid <= 0 && j->state == JOB_RUNNING)
		j->pid = tool_now(g, j);
	if (j->pid <= 0)
		return;
	if (!j->tree) {
		kill(-j->pid, sig);
		return;
	}
	/* A job found in the tree: the process and everything below it, as last seen. */
	kill(j->pid, sig);
	for (size_t i = 0; i < g->procs.n; i++)
		if (g->procs.v[i].pid != j->pid && proc_table_is_descendant(&g->procs, g->procs.v[i].pid, j->pid))
			kill(g->procs.v[i].pid, sig);
}

void job_freeze(struct gov *g, struct job *j, int64_t now)
{
	/* The process group, and in v2 the job's group too: it also holds any process
	 * that left the process group. */
	job_signal(g, j, SIGSTOP);
	cgroup_freeze(&j->cg, 1);
	j->frozen = 1;
	j->frozen_at_ms = now;
	j->frozen_growth_bytes_per_s = j->growth_bytes_per_s;
	g->rep.freezes++;
	log_info("froze job %d (%s): memory is short", j->id, j->src);
}

void job_thaw(struct gov *g, struct job *j, int64_t now)
{
	cgroup_freeze(&j->cg, 0);
	job_signal(g, j, SIGCONT);
	j->frozen = 0;
	j->frozen_total_ms += now - j->frozen_at_ms;
	g->rep.thaws++;
	log_info("thawed job %d (%s)", j->id, j->src);
}

void job_kill(struct gov *g, struct job *j, int64_t now)
{
	job_signal(g, j, SIGKILL);
	job_signal(g, j, SIGCONT);
	if (j->cg.version != CGROUP_NONE)
		cgroup_kill_all(&j->cg);
	j->killed_by_us = 1;
	g->rep.kills++;
	g->last_kill_ms = now;
	log_warn("killed job %d (%s) to keep memory from running out; it will run again", j->id, j->src);
}

void job_add_sample(struct job *j, int64_t t_ms, uint64_t bytes)
{
	ARRAY_GROW(j->samples, j->nsamples + 1, j->capsamples);
	j->samples[j->nsamples++] = (struct curve_sample){ t_ms, bytes };
}

/* The job's own group, made once it has run a tick; the launcher is told, to remove it
 * should the governor go away. 0 when it has one. */
static int job_group(struct gov *g, struct job *j, int64_t now)
{
	char name[64];

	if (j->cg.version != CGROUP_NONE)
		return 0;
	if (!g->job_groups || j->tree || job_elapsed(j, now) < g->o->tick_ms)
		return -EAGAIN;
	snprintf(name, sizeof(name), "headroom-%d-job%d", (int)getpid(), j->id);
	if (cgroup_child_create(&g->cg, name, &j->cg)) {
		j->cg.version = CGROUP_NONE;
		return -EPERM;
	}
	j->ngrouped = 0;
	if (proto_send_cgroup(j->conn.fd, &(struct proto_cgroup){ j->id, j->cg.dir }))
		log_debug("job %d: cannot tell its launcher its cgroup", j->id);
	return 0;
}

/* How many of a job's processes job_sample_all() remembers having moved into its group. */
#define JOB_GROUPED_MAX 256

static int grouped(const struct job *j, pid_t pid)
{
	for (size_t i = 0; i < j->ngrouped; i++)
		if (j->grouped[i] == pid)
			return 1;
	return 0;
}

struct owner {
	pid_t pid;
	struct job *j;
	uint64_t bytes;
	int in_group;
};

static int owner_cmp(const void *a, const void *b)
{
	const struct owner *x = a, *y = b;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The job whose tree e is in: its nearest ancestor (or itself) that is a job's pid. */
static struct owner *owner_of(const struct proc_table *t, const struct proc_entry *e, struct owner *o, size_t n)
{
	/* Bounded walk: a table read while processes come and go may hold a cycle. */
	for (int depth = 0; depth < ANCESTRY_MAX && e; depth++) {
		struct owner key = { .pid = e->pid }, *hit = bsearch(&key, o, n, sizeof(*o), owner_cmp);
		if (hit)
			return hit;
		e = proc_table_find(t, e->ppid);
	}
	return NULL;
}

/* One process of a job seen this tick: its memory, a compiler below a cache, its group. */
static void sample_proc(struct owner *w, const struct proc_entry *e)
{
	struct job *j = w->j;

	w->bytes += e->rss_bytes;
	/* below a compiler cache, a compiler process tells a miss from a hit */
	if (j->cached && !j->saw_compiler && tree_is_compiler(e->comm))
		j->saw_compiler = 1;
	if (!w->in_group || e->state == 'Z' || grouped(j, e->pid))
		return;
	cgroup_attach(&j->cg, e->pid);
	/* a job that started this many processes starts the list again: its processes
	 * still there are moved again, which changes nothing */
	if (j->ngrouped == JOB_GROUPED_MAX)
		j->ngrouped = 0;
	ARRAY_GROW(j->grouped, j->ngrouped + 1, j->capgrouped);
	j->grouped[j->ngrouped++] = e->pid;
}

/* The running launchers' jobs whose tool no tick has found yet: found in g->procs, the
 * launcher's child (its pid from the socket, SO_PEERCRED) that leads a process group of
 * its own, the launcher being below the build. Never from what a launcher says. */
static void find_tools(struct gov *g)
{
	struct owner *l = xmalloc((g->njobs ? g->njobs : 1) * sizeof(*l));
	size_t n = 0;

	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state == JOB_RUNNING && !j->tree && j->pid <= 0 && j->launcher_pid > 0 &&
		    proc_table_is_descendant(&g->procs, j->launcher_pid, g->build_pid))
			l[n++] = (struct owner){ .pid = j->launcher_pid, .j = j };
	}
	qsort(l, n, sizeof(*l), owner_cmp);
	for (size_t i = 0; n && i < g->procs.n; i++) {
		const struct proc_entry *e = &g->procs.v[i];
		struct owner key = { .pid = e->ppid }, *hit;

		if (e->pgid != e->pid || e->state == 'Z')
			continue;
		hit = bsearch(&key, l, n, sizeof(*l), owner_cmp);
		if (hit)
			hit->j->pid = e->pid;
	}
	free(l);
}

void job_sample_all(struct gov *g, int64_t now, int64_t dt_ms)
{
	struct owner *o = xmalloc((g->njobs ? g->njobs : 1) * sizeof(*o));
	size_t n = 0;

	find_tools(g);
	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state == JOB_RUNNING && j->pid > 0)
			o[n++] = (struct owner){ j->pid, j, 0, !job_group(g, j, now) };
	}
	qsort(o, n, sizeof(*o), owner_cmp);
	/* one pass over the table, each process to its job: the work grows with the
	 * processes, not with processes times jobs */
	for (size_t i = 0; n && i < g->procs.n; i++) {
		struct owner *w = owner_of(&g->procs, &g->procs.v[i], o, n);
		if (w)
			sample_proc(w, &g->procs.v[i]);
	}
	for (size_t k = 0; k < n; k++) {
		struct job *j = o[k].j;
		uint64_t before = j->current_bytes;

		j->current_bytes = o[k].bytes;
		j->growth_bytes_per_s = j->current_bytes > before && dt_ms > 0 && before
			? (j->current_bytes - before) * 1000 / (uint64_t)dt_ms : 0;
		if (j->current_bytes > j->peak_bytes)
			j->peak_bytes = j->current_bytes;
		if (!j->frozen)
			job_add_sample(j, job_elapsed(j, now), j->current_bytes);
	}
	free(o);
}

/* A wait that ended: into the report. A tick or less is admission's own pace (a burst
 * sorted before its long jobs start, a slot freed between ticks), not a wait for it. */
static void report_wait(struct gov *g, struct job *j)
{
	/* a wait no decision held (a tick late on a loaded machine) is the pace too */
	if (j->wait_memory_ms > g->o->tick_ms && j->wait_memory_ms > j->held_ms[REPORT_HELD_PACE])
		report_add_wait_held(&g->rep.wait_memory, j->wait_memory_ms, j->held_ms);
	if (j->wait_slot_ms > g->o->tick_ms)
		report_add_wait(&g->rep.wait_slot, j->wait_slot_ms);
	j->wait_memory_ms = j->wait_slot_ms = 0;
	j->held_by = REPORT_HELD_PACE;
	memset(j->held_ms, 0, sizeof(j->held_ms));
}

int job_waits_for_memory(const struct gov *g, int running)
{
	return running < g->o->jobs;
}

void job_hold_all(struct gov *g, enum report_held why)
{
	for (size_t i = 0; i < g->njobs; i++)
		if (g->jobs[i]->state == JOB_WAITING)
			g->jobs[i]->held_by = why;
}

void job_note_tick(struct gov *g, int64_t now, int64_t dt_ms, int running, uint64_t jobs_bytes)
{
	struct report_tick t = { .dt_ms = dt_ms, .running = running, .jobs_bytes = jobs_bytes };
	int for_memory = job_waits_for_memory(g, running);

	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];
		if (j->state == JOB_WAITING) {
			int64_t from = j->t_request_ms > now - dt_ms ? j->t_request_ms : now - dt_ms;
			*(for_memory ? &j->wait_memory_ms : &j->wait_slot_ms) += now - from;
			if (for_memory)
				j->held_ms[j->held_by] += now - from;
			continue;
		}
		if (j->wait_memory_ms || j->wait_slot_ms)
			report_wait(g, j);
		if (j->state != JOB_RUNNING)
			continue;
		t.frozen += j->frozen;
		/* what it holds past what it was admitted on: its prediction now, or all of it */
		uint64_t pred = j->pred ? curve_at(j->pred, job_elapsed(j, now)) : 0;
		if (!j->frozen && j->current_bytes > pred && j->current_bytes - pred > t.grew_bytes) {
			t.grew_bytes = j->current_bytes - pred;
			t.grew_job = *j->src ? j->src : j->tool;
			t.grew_unknown = !j->pred;
		}
	}
	report_note_tick(&g->rep, &t);
}

void job_remove(struct gov *g, size_t i)
{
	struct job *j = g->jobs[i];

	report_wait(g, j);
	/* A launcher that vanished mid-job leaves its tool behind: end it. */
	if (j->state == JOB_RUNNING) {
		job_signal(g, j, SIGKILL);
		job_signal(g, j, SIGCONT);
	}
	job_free(j);
	g->jobs[i] = g->jobs[--g->njobs];
}

void job_add_span(struct gov *g, struct job *j, int64_t duration_ms, int exit_code, int retried)
{
	if (!g->o->trace_path && !g->o->record_path)
		return;
	struct report_span sp = {
		.name = *j->src ? j->src : j->tool,
		.class_key = j->class_key,
		.start_ms = j->t_admit_ms - g->t0_ms,
		.duration_ms = duration_ms,
		.exit_code = exit_code,
		.retried = retried,
		.peak_bytes = j->peak_bytes,
		.samples = j->samples,
		.nsamples = j->nsamples,
	};
	report_add_span(&g->rep, &sp);
}

/* Was the job's SIGKILL the kernel's OOM killer's: its own group's count, else the
 * group's or the machine's counter since it was admitted. */
static int job_oom_killed(struct gov *g, struct job *j, const struct proto_done *d)
{
	uint64_t n;

	if (!d->has_signal || d->signal != SIGKILL)
		return 0;
	if (j->cg.version != CGROUP_NONE && !cgroup_oom_kills(&j->cg, &n) && n > 0)
		return 1;
	return gov_oom_count(g) > j->oom_at_admit;
}

int job_done(struct gov *g, struct job *j, const struct proto_done *d, int64_t now, const char **reason)
{
	int64_t dur = d->duration_ms, ran = job_elapsed(j, now);
	int oom = job_oom_killed(g, j, d), retry = 0;

	*reason = "finished";
	/* a job we killed that ended on its own just before is done, not run again */
	if (((j->killed_by_us && d->has_signal && d->signal == SIGKILL) || oom) && j->attempt < GOV_MAX_RETRIES) {
		retry = 1;
		*reason = j->killed_by_us ? "killed by headroom to save memory" : "killed by the kernel (out of memory)";
		g->rep.retries++;
		if (oom) {
			g->rep.oom_kills++;
			log_warn("job %d (%s) was OOM-killed; it will run again", j->id, j->src);
		}
	} else if (d->has_exit && d->exit_code == 0) {
		struct job_seen seen = { .check = j->check, .cached = j->cached, .cache_hit = d->cache_hit,
					 .saw_compiler = j->saw_compiler };
		j->not_learned = job_seen_untrue(&seen);
		learned_job_done(g, j, dur > 0 && dur < ran ? dur : ran, d->maxrss_bytes);
	} else {
		g->rep.failed_jobs++;
	}
	job_add_span(g, j, dur > 0 && dur < ran ? dur : ran, d->has_exit ? (int)d->exit_code : -1, retry);
	return retry;
}

void job_end_run(struct job *j)
{
	job_drop_group(j);
	job_reset_run(j);
	j->state = JOB_IDLE;
}

