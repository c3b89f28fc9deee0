#include "watch/watcher.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sys/meminfo.h"
#include "sys/procexit.h"
#include "sys/procinfo.h"
#include "sys/psi.h"
#include "util/log.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "watch/detect.h"
#include "watch/jsonl.h"

void watcher_init(struct watcher *x, const char *root, const struct watch_limits *lim)
{
	memset(x, 0, sizeof(*x));
	x->root = root;
	x->lim = *lim;
	x->notify.counts = x->w.events;
	x->notify.log = &x->w;
	x->exits_fd = -1;
	gethostname(x->w.hostname, sizeof(x->w.hostname) - 1);
}

/* The kernel's process exits: without them, the end of a process its parent reaps at
 * once (bash's `wait`, mpirun, torchrun's agent) cannot be read. */
static void exits_open(struct watcher *x)
{
	int rc = procexit_open(&x->exits_fd);

	if (!rc)
		log_info("watch: reading process exits from the kernel's process events");
	else
		log_info("watch: the kernel's process events cannot be had (%s): the end of a rank its launcher "
			 "reaps at once is unknown, never taken for a death; they are read as root (CAP_NET_ADMIN), "
			 "on a kernel with CONFIG_PROC_EVENTS",
			 rc == -ETIMEDOUT ? "no answer: a kernel without them, or another namespace" : strerror(-rc));
}

void watcher_open(struct watcher *x)
{
	const char *why;
	unsigned n = 0;

	if (nvml_open(&x->nvml, &why)) {
		log_warn("watch: %s: watching host memory only", why);
		goto out;
	}
	if (nvml_device_count(x->nvml, &n)) {
		log_warn("watch: NVML cannot count the GPUs: watching host memory only");
		nvml_close(x->nvml);
		x->nvml = NULL;
		goto out;
	}
	x->w.nvml_ok = 1;
	x->w.ngpus = n;
	x->w.gpus = xcalloc(n ? n : 1, sizeof(*x->w.gpus));
	if (!n)
		log_warn("watch: the NVIDIA driver sees no GPU: watching host memory only");
out:
	x->has_cg = !cgroup_find(x->root, 0, &x->cg);
	meminfo_oom_kills(x->root, &x->oom_prev);
	if (!*x->root)
		exits_open(x);
}

/* The whole process table is read only in a sample that meets a new GPU process (its
 * parent, its command, whether it is the command's): most samples need none of it. */
static const struct proc_table *procs(struct watcher *x)
{
	if (!x->procs_fresh) {
		proc_table_read(x->root, &x->procs);
		x->procs_fresh = 1;
	}
	return &x->procs;
}

static int in_scope(struct watcher *x, pid_t pid)
{
	return !x->child || proc_table_is_descendant(procs(x), pid, x->child);
}

/* The ancestor of pid just below init (pid itself when init is its parent), or 0 when
 * the table does not lead there (a process gone meanwhile). */
static pid_t origin_of(const struct proc_table *t, pid_t pid)
{
	for (size_t depth = 0; depth <= t->n; depth++) {
		const struct proc_entry *e = proc_table_find(t, pid);
		if (!e)
			return 0;
		if (e->ppid <= 1)
			return pid;
		pid = e->ppid;
	}
	return 0; /* a loop: the table was read while processes came and went */
}

/* Its job (watch_job_key), within its owner's and its origin's: a process whose owner or
 * origin cannot be read is no rank, since nothing says whose job it would join. */
static int job_of(struct watcher *x, pid_t pid, const struct proc_entry *e, struct wjob_id *id, int *rank)
{
	char env[32768];
	long n;
	int known;

	id->origin = origin_of(procs(x), pid);
	known = id->origin > 0 && !procinfo_uid(x->root, pid, &id->uid) &&
		!procinfo_start_ticks(x->root, id->origin, &id->origin_start);
	n = known ? procinfo_environ(x->root, pid, env, sizeof(env)) : -1;
	return watch_job_key(n > 0 ? env : NULL, n > 0 ? (size_t)n : 0, pid, x->child, e ? e->ppid : 0, &id->key,
			     rank);
}

static struct wproc *proc_add(struct watcher *x, pid_t pid, unsigned gpu, int64_t now)
{
	const struct proc_entry *e = proc_table_find(procs(x), pid);
	struct wjob_id id = { 0 };
	struct wproc *p;
	pid_t ns_pid;
	/* the pidfd first: read by pid after it, /proc says the same process's facts as long
	 * as that process still lives (a pid is not used again before then) */
	int rank, is_rank, alive, pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	uint64_t alive_at_ns;

	procinfo_container_pid(x->root, pid, &ns_pid);
	is_rank = job_of(x, pid, e, &id, &rank);
	alive = pidfd >= 0 && !syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0);
	/* after it was seen alive: an exit the kernel announced before this may be an
	 * earlier process's of its pid; one after, only its own */
	alive_at_ns = alive ? now_ns() : 0;
	if (!*x->root && !alive)
		is_rank = 0; /* gone meanwhile, or not to be named surely: never signalled */
	p = watch_state_add_proc(&x->w, pid, gpu, now, &id, rank);
	free(id.key);
	snprintf(p->comm, sizeof(p->comm), "%s", e ? e->comm : "?");
	p->ns_pid = ns_pid;
	p->is_rank = is_rank;
	if (procinfo_start_ticks(x->root, pid, &p->start_ticks))
		p->start_ticks = 0;
	p->alive_at_ns = *x->root ? 0 : alive_at_ns;
	/* a pidfd tells the moment it ends (pidfd_open's are close-on-exec) */
	p->pidfd = pidfd;
	return p;
}

/* Whether the kernel's exit r is that of a process watch follows: its leader's (a
 * thread's end is not its process's), announced after the process was seen alive (an
 * earlier one may be that of an earlier process of its pid). */
static int exit_is_followed(const struct watcher *x, const struct procexit_rec *r)
{
	if (r->kind != PROCEXIT_EXIT || r->pid != r->tgid)
		return 0;
	for (size_t i = 0; i < x->w.nprocs; i++) {
		const struct wproc *p = &x->w.procs[i];
		if (p->alive && p->pid == r->pid && p->alive_at_ns && r->time_ns > p->alive_at_ns)
			return 1;
	}
	return 0;
}

/* Keep the exit r of a followed process: a later one of its pid replaces it, and the one
 * read longest ago gives way when the table is full. */
static void exit_keep(struct watcher *x, const struct procexit_rec *r, int64_t now)
{
	struct wexit *slot = NULL;

	if (!exit_is_followed(x, r))
		return;
	for (size_t i = 0; i < x->nexits && !slot; i++)
		if (x->exits[i].pid == r->pid)
			slot = &x->exits[i];
	if (!slot && x->nexits < WATCH_EXITS)
		slot = &x->exits[x->nexits++];
	if (!slot) {
		slot = &x->exits[0];
		for (size_t i = 1; i < x->nexits; i++)
			if (x->exits[i].seen_ms < slot->seen_ms)
				slot = &x->exits[i];
	}
	*slot = (struct wexit){ .pid = r->pid, .status = r->status, .time_ns = r->time_ns, .seen_ms = now };
}

void watcher_read_exits(struct watcher *x, int64_t now)
{
	struct procexit_rec r[WATCH_EXITS_READ];
	int n;

	for (size_t i = 0; i < x->nexits;)
		if (now - x->exits[i].seen_ms > WATCH_EXIT_KEEP_MS)
			x->exits[i] = x->exits[--x->nexits];
		else
			i++;
	/* at most so many messages a call: a host that forks without rest cannot hold
	 * watch here; the rest wait for the next */
	for (int m = 0; x->exits_fd >= 0 && m < WATCH_EXITS_DRAIN; m++) {
		n = procexit_read(x->exits_fd, r, WATCH_EXITS_READ);
		if (n == -EAGAIN)
			break;
		if (n == -ENOBUFS) {
			if (!x->exits_lost++)
				log_info("watch: the kernel dropped process exits (watch read them too late): the "
					 "ends of those processes are unknown");
			continue;
		}
		if (n < 0) {
			log_warn("watch: reading the kernel's process exits: %s: ends reaped by a parent are "
				 "unknown from now on", strerror(-n));
			procexit_close(x->exits_fd);
			x->exits_fd = -1;
			break;
		}
		for (int i = 0; i < n; i++)
			exit_keep(x, &r[i], now);
	}
}

/* The exit the kernel announced for p into *st, taken from the table: 0, or -ENOENT. */
static int exit_take(struct watcher *x, const struct wproc *p, int *st)
{
	for (size_t i = 0; i < x->nexits; i++)
		if (x->exits[i].pid == p->pid && p->alive_at_ns && x->exits[i].time_ns > p->alive_at_ns) {
			*st = x->exits[i].status;
			x->exits[i] = x->exits[--x->nexits];
			return 0;
		}
	return -ENOENT;
}

/* How p ended: known from our own reaping (our children, and orphans under
 * `watch -- CMD`), else from its zombie's stat while its parent has not reaped it, else
 * from the kernel's announcement of its exit (as root); else not known (a rise of the
 * host's OOM kills is said, but is no reading of its end: a rank that exited 0 beside
 * another process's OOM kill would be taken for dead). buf says it in words. */
static enum wend how_it_ended(struct watcher *x, const struct wproc *p, char *buf, size_t len)
{
	uint64_t oom;
	pid_t pid = p->pid;
	int st = 0, known = 0;

	for (size_t i = 0; i < x->nreaped && !known; i++)
		if (x->reaped_pid[i] == pid) {
			st = x->reaped_status[i];
			known = 1;
		}
	if (known || !procinfo_exit_status(x->root, pid, &st) || !exit_take(x, p, &st)) {
		if (WIFSIGNALED(st))
			snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
		else
			snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
		return detect_end_of_status(st);
	}
	if (!meminfo_oom_kills(x->root, &oom) && oom > x->oom_prev)
		snprintf(buf, len, "ended, status unknown (reaped before watch could read it; the host's oom_kill count "
			 "rose by %llu meanwhile): not taken for a death", (unsigned long long)(oom - x->oom_prev));
	else
		snprintf(buf, len, "ended, status unknown (reaped before watch could read it): not taken for a death");
	return WEND_UNKNOWN;
}

void watcher_reap(struct watcher *x)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		size_t i = x->nreaped < WATCH_REAPED ? x->nreaped++ : (size_t)(pid % WATCH_REAPED);
		x->reaped_pid[i] = pid;
		x->reaped_status[i] = st;
		if (pid == x->child) {
			x->child_status = st;
			x->child_done = 1;
		}
	}
}

/* Send sig to the ranks of job still running, each once (a process on several GPUs is
 * listed once a GPU): through its pidfd, which names that very process, else by pid
 * once its start time shows it is still the one seen; and only while it is still the
 * job's user's (it was grouped by its user and origin). Returns how many were signalled. */
static int signal_job(struct watcher *x, const struct wjob_id *job, int sig)
{
	int n = 0;

	for (size_t i = 0; i < x->w.nprocs; i++) {
		struct wproc *p = &x->w.procs[i];
		uid_t uid;
		int dup = 0, rc;

		if (!p->alive || !p->is_rank || !wjob_id_same(&p->job, job))
			continue;
		for (size_t k = 0; k < i && !dup; k++)
			dup = x->w.procs[k].pid == p->pid && x->w.procs[k].alive && wjob_id_same(&x->w.procs[k].job, job);
		if (dup || procinfo_uid(x->root, p->pid, &uid) || uid != job->uid)
			continue;
		/* only through the pidfd: a pid alone may name another process by now */
		if (p->pidfd < 0)
			continue;
		rc = (int)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
		n += !rc;
	}
	return n;
}

/* A job whose rank died: once the survivors' time to end on their own is over, SIGTERM
 * those still running; SIGKILL after the grace. */
static void stop_job(struct watcher *x, struct wjob *j, int64_t now)
{
	if (j->stop == STOP_WAITING && now >= j->stop_at_ms) {
		int n = j->alive ? signal_job(x, &j->id, SIGTERM) : 0;
		j->signalled |= n > 0;
		j->stop = n ? STOP_TERM_SENT : STOP_NONE;
		j->kill_at_ms = now + x->lim.grace_ms;
		if (n)
			notify_event(&x->notify, EV_JOB_STOPPED,
				     json_pack("{s:o, s:I, s:i}", "job", jsonl_str(j->id.key), "uid", (json_int_t)j->id.uid,
					       "ranks_signalled", n),
				     "sent SIGTERM to the %d ranks of job %s still running %lld s after one died (SIGKILL in "
				     "%lld s) so that its launcher can restart it",
				     n, j->id.key, (long long)(x->lim.stop_delay_ms / 1000), (long long)(x->lim.grace_ms / 1000));
	} else if (j->stop == STOP_TERM_SENT && now >= j->kill_at_ms) {
		signal_job(x, &j->id, SIGKILL);
		j->stop = STOP_NONE;
	}
}

void watcher_proc_ended(struct watcher *x, struct wproc *p, int64_t now)
{
	struct wjob *j = watch_state_job(&x->w, &p->job);
	char how[200];
	const char *uuid = p->gpu < x->w.ngpus ? x->w.gpus[p->gpu].d.uuid : "";
	enum wend end;

	if (!p->alive)
		return;
	/* a child of ours may be a zombie not reaped yet: its status says how it ended */
	watcher_reap(x);
	watcher_read_exits(x, now); /* queued before its pidfd said it ended */
	end = how_it_ended(x, p, how, sizeof(how));
	/* the process ended on every GPU it used */
	for (size_t i = 0; i < x->w.nprocs; i++) {
		struct wproc *q = &x->w.procs[i];
		if (q->pid != p->pid || !q->alive || !wjob_id_same(&q->job, &p->job))
			continue;
		q->alive = 0;
		if (q->pidfd >= 0)
			close(q->pidfd);
		q->pidfd = -1;
	}
	j->alive--;
	j->ended++;
	j->died += detect_end_is_death(end);
	notify_event(&x->notify, EV_PROCESS_EXIT,
		     json_pack("{s:i, s:o, s:I, s:i, s:i, s:o, s:s, s:s}", "pid", (int)p->pid, "job", jsonl_str(p->job.key),
			       "uid", (json_int_t)p->job.uid, "rank", p->rank, "gpu", (int)p->gpu, "uuid", jsonl_str(uuid),
			       "how", how, "end", detect_end_name(end)),
		     "pid %d (%s, job %s, GPU %u) %s", (int)p->pid, p->comm, p->job.key, p->gpu, how);
	/* every rank that dies on its own while others run on is news (the seed's job lost
	 * two); the ranks headroom stopped, those a launcher asks to end after the first death
	 * (torchrun ends the rest with SIGTERM), and an end not read as a death are not; and
	 * only news schedules a stop */
	if (!detect_partial_death_event(&(struct job_ranks){ j->seen, j->alive, j->died }, end, j->signalled))
		return;
	notify_event(&x->notify, EV_PARTIAL_DEATH,
		     json_pack("{s:o, s:I, s:i, s:i, s:i, s:o, s:i, s:i, s:s}", "job", jsonl_str(j->id.key), "uid",
			       (json_int_t)j->id.uid, "pid", (int)p->pid, "rank", p->rank, "gpu", (int)p->gpu, "uuid",
			       jsonl_str(uuid), "ranks_alive", j->alive, "ranks_seen", j->seen, "how", how),
		     "job %s lost rank %d (pid %d, GPU %u): %s; %d of %d ranks still running%s", j->id.key, p->rank,
		     (int)p->pid, p->gpu, how, j->alive, j->seen,
		     x->lim.stop_on_partial ? " (stopped unless they end within --stop-delay)" : "");
	if (!x->lim.stop_on_partial || j->stop_scheduled)
		return;
	j->stop_scheduled = 1;
	j->stop = STOP_WAITING;
	j->stop_at_ms = now + x->lim.stop_delay_ms;
	stop_job(x, j, now);
}

/* The GPU's figures and trend: read_failed, time_to_oom and low_free, each once an episode. */
static int sample_gpu(struct watcher *x, size_t g, int64_t now)
{
	struct wgpu *G = &x->w.gpus[g];

	G->ok = !nvml_device_read(x->nvml, (unsigned)g, &G->d);
	if (!G->ok) {
		G->ttoom_s = -1;
		if (!G->fail_reported)
			notify_event(&x->notify, EV_READ_FAILED, json_pack("{s:i}", "gpu", (int)g),
				     "GPU %zu could not be read: its figures are missing until it can", g);
		G->fail_reported = 1;
		return -1;
	}
	G->fail_reported = 0;
	series_add(&G->used, now, (double)G->d.used_bytes);
	if (G->d.used_bytes > G->peak_used_bytes)
		G->peak_used_bytes = G->d.used_bytes;
	G->ttoom_s = series_time_to(&G->used, now, x->lim.window_ms, (double)G->d.total_bytes,
				    WATCH_TTOOM_HORIZONS * (double)x->lim.horizon_ms / 1000);
	if (G->ttoom_s >= 0 && G->ttoom_s * 1000 <= (double)x->lim.horizon_ms) {
		if (!G->ttoom_warned)
			notify_event(&x->notify, EV_TIME_TO_OOM,
				     json_pack("{s:i, s:o, s:f, s:I, s:I}", "gpu", (int)g, "uuid", jsonl_str(G->d.uuid), "seconds",
					       G->ttoom_s, "used_bytes", (json_int_t)G->d.used_bytes, "total_bytes",
					       (json_int_t)G->d.total_bytes),
				     "GPU %zu (%s) reaches its %.1f GiB in about %.1f s at its current growth", g,
				     G->d.uuid, (double)G->d.total_bytes / (1 << 30), G->ttoom_s);
		G->ttoom_warned = 1;
	} else {
		G->ttoom_warned = 0;
	}
	if (detect_low_free(G->d.free_bytes, G->d.total_bytes, x->lim.min_free_bytes, x->lim.min_free_pct)) {
		if (!G->low_free) {
			char a[32];
			notify_event(&x->notify, EV_LOW_FREE,
				     json_pack("{s:i, s:o, s:I, s:I}", "gpu", (int)g, "uuid", jsonl_str(G->d.uuid), "free_bytes",
					       (json_int_t)G->d.free_bytes, "total_bytes", (json_int_t)G->d.total_bytes),
				     "GPU %zu (%s) has %s free (%.1f%%)", g, G->d.uuid,
				     size_format(G->d.free_bytes, a, sizeof(a)),
				     100.0 * (double)G->d.free_bytes / (double)(G->d.total_bytes ? G->d.total_bytes : 1));
		}
		G->low_free = 1;
	} else {
		G->low_free = 0;
	}
	return 0;
}

/* The GPU's processes: new ones in scope tracked, their memory, stuck. */
static void sample_gpu_procs(struct watcher *x, size_t g, int64_t now)
{
	struct nvml_proc list[256];
	const struct wgpu *G = &x->w.gpus[g];
	unsigned n = 0;

	if (nvml_device_processes(x->nvml, (unsigned)g, list, 256, &n))
		return;
	for (unsigned i = 0; i < n; i++) {
		struct wproc *p = watch_state_proc(&x->w, (pid_t)list[i].pid, (unsigned)g);
		if (p && !p->alive)
			continue; /* a pid the driver still lists after its end */
		if (!p) {
			if (!in_scope(x, (pid_t)list[i].pid))
				continue;
			p = proc_add(x, (pid_t)list[i].pid, (unsigned)g, now);
		}
		if (list[i].used_bytes != p->used_bytes)
			p->unchanged_since_ms = now;
		p->used_bytes = list[i].used_bytes;
		if (p->used_bytes > p->peak_bytes)
			p->peak_bytes = p->used_bytes;
		if (p->used_bytes >= 0)
			series_add(&p->trend, now, (double)p->used_bytes);
		if (detect_stuck(p->used_bytes, p->unchanged_since_ms, G->d.util_gpu_pct, now, x->lim.stuck_ms)) {
			if (!p->stuck_warned)
				notify_event(&x->notify, EV_STUCK,
					     json_pack("{s:i, s:o, s:i, s:I}", "pid", (int)p->pid, "job",
						       jsonl_str(p->job.key), "gpu", (int)g, "used_bytes",
						       (json_int_t)p->used_bytes),
					     "pid %d (%s, job %s) holds GPU %zu memory, unchanged and idle for %lld s",
					     (int)p->pid, p->comm, p->job.key, g, (long long)((now - p->unchanged_since_ms) / 1000));
			p->stuck_warned = 1;
		}
	}
}

static void sample_host(struct watcher *x)
{
	struct meminfo mi;
	struct psi psi;
	char path[PATH_MAX];

	uint64_t limit, ws;

	x->w.has_host = !meminfo_read(x->root, &mi);
	if (x->w.has_host) {
		x->w.host_total_bytes = mi.total_bytes;
		x->w.host_available_bytes = mi.available_bytes;
		if (x->has_cg && !cgroup_mem_limit(&x->cg, &limit) && limit < mi.total_bytes) {
			x->w.host_total_bytes = limit;
			if (!cgroup_mem_working_set(&x->cg, &ws) && (ws < limit ? limit - ws : 0) < mi.available_bytes)
				x->w.host_available_bytes = ws < limit ? limit - ws : 0;
		}
	}
	x->w.has_oom = !meminfo_oom_kills(x->root, &x->w.host_oom_kills);
	x->w.psi_some_avg10 = x->w.psi_full_avg10 = -1;
	snprintf(path, sizeof(path), "%s/proc/pressure/memory", x->root);
	if (!psi_read(path, &psi)) {
		x->w.psi_some_avg10 = psi.some_avg10_pct;
		x->w.psi_full_avg10 = psi.full_avg10_pct;
	}
}

static void sample_xids(struct watcher *x)
{
	struct nvml_xid xid[16];
	int n = nvml_xid_poll(x->nvml, xid, 16);

	for (int i = 0; i < n; i++)
		notify_event(&x->notify, EV_XID,
			     json_pack("{s:i, s:o, s:I}", "gpu", (int)xid[i].gpu, "uuid",
				       jsonl_str(xid[i].gpu < x->w.ngpus ? x->w.gpus[xid[i].gpu].d.uuid : ""), "xid",
				       (json_int_t)xid[i].code),
			     "GPU %u reported XID %llu", xid[i].gpu, xid[i].code);
}

void watcher_sample(struct watcher *x, int64_t now)
{
	x->procs_fresh = 0;
	watcher_read_exits(x, now);
	sample_host(x);
	if (x->nvml) {
		for (size_t g = 0; g < x->w.ngpus; g++)
			if (!sample_gpu(x, g, now))
				sample_gpu_procs(x, g, now);
		sample_xids(x);
	}
	/* processes gone without a pidfd to say so */
	for (size_t i = 0; i < x->w.nprocs; i++) {
		struct wproc *p = &x->w.procs[i];
		if (p->alive && !procinfo_running(x->root, p->pid))
			watcher_proc_ended(x, p, now);
	}
	if (x->w.has_oom)
		x->oom_prev = x->w.host_oom_kills;
	watch_state_forget_ended(&x->w);
	/* survivors of a rank's death: past --stop-delay SIGTERM, past --grace SIGKILL */
	for (size_t i = 0; i < x->w.njobs; i++)
		stop_job(x, &x->w.jobs[i], now);
}

int watcher_next_interval_ms(const struct watcher *x)
{
	double worst = 1.0; /* 1: wide; 0: at a threshold */

	for (size_t g = 0; g < x->w.ngpus; g++) {
		const struct wgpu *G = &x->w.gpus[g];
		if (!G->ok || !G->d.total_bytes)
			continue;
		double pct = 100.0 * (double)G->d.free_bytes / (double)G->d.total_bytes;
		double m = (pct - x->lim.min_free_pct) / (4 * (x->lim.min_free_pct > 0 ? x->lim.min_free_pct : 5));
		if (G->ttoom_s >= 0) {
			double t = G->ttoom_s * 1000 / (double)(4 * x->lim.horizon_ms);
			m = m < t ? m : t;
		}
		if (m < worst)
			worst = m;
	}
	if (worst < 0)
		worst = 0;
	return x->lim.min_interval_ms + (int)((x->lim.interval_ms - x->lim.min_interval_ms) * worst);
}

void watcher_free(struct watcher *x)
{
	for (size_t i = 0; i < x->w.nprocs; i++)
		if (x->w.procs[i].pidfd >= 0)
			close(x->w.procs[i].pidfd);
	procexit_close(x->exits_fd);
	x->exits_fd = -1;
	nvml_close(x->nvml);
	x->nvml = NULL;
	if (x->has_cg)
		cgroup_free(&x->cg);
	x->has_cg = 0;
	watch_state_free(&x->w);
	proc_table_free(&x->procs);
}
