/* headroom watch: a GPU and host memory watchdog: low margins, time-to-OOM, jobs that
 * lost some of their ranks, stuck processes. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "sys/fsutil.h"
#include "sys/meminfo.h"
#include "sys/nvml.h"
#include "sys/proc.h"
#include "sys/psi.h"
#include "util/log.h"
#include "util/units.h"
#include "util/xalloc.h"
#include "watch/detect.h"
#include "watch/prom.h"
#include "watch/state.h"

static const char usage[] =
	"usage: headroom watch [OPTIONS] [-- COMMAND [ARGS...]]\n"
	"\n"
	"Watch GPU and host memory: per GPU used/free, per process GPU memory (host pids),\n"
	"jobs (torchrun's TORCHELASTIC_RUN_ID, else the common parent), host MemAvailable,\n"
	"PSI and OOM kills. Events, each a line on stderr and a JSON record: low_free (a\n"
	"GPU's free memory under a threshold), time_to_oom (its trend reaches the capacity\n"
	"within the horizon), partial_death (a job lost some of its GPU processes while\n"
	"others run on), stuck (GPU memory held, unchanged, GPU idle past a timeout),\n"
	"process_exit, read_failed, xid (critical XID errors the driver reports). With\n"
	"COMMAND: run it, watch only its processes, exit with its status and print a\n"
	"summary. Without a GPU or driver it watches host memory.\n"
	"\n"
	"  -i, --interval MS          sampling interval when margins are wide (default 1000)\n"
	"      --min-interval MS      ... when a margin is narrow (default 100)\n"
	"      --min-free SIZE        low_free under this free memory (default 1G)\n"
	"      --min-free-pct PCT     ... or under this share of the GPU (default 5)\n"
	"      --horizon S            time_to_oom when the trend reaches capacity within S (default 120)\n"
	"      --window S             the trend's window (default 30)\n"
	"      --stuck-timeout S      stuck after S seconds unchanged and idle (default 600, 0 off)\n"
	"      --jsonl FILE           samples and events as JSON lines (- for stdout)\n"
	"      --prometheus ADDR      serve /metrics on ADDR (9400, :9400, 127.0.0.1:9400)\n"
	"      --on-event CMD         run sh -c CMD for each event, with HEADROOM_EVENT,\n"
	"                             HEADROOM_EVENT_MESSAGE, HEADROOM_EVENT_JSON in its environment\n"
	"      --stop-job-on-partial-death   SIGTERM a job's surviving ranks, SIGKILL after --grace\n"
	"      --grace S              (default 10)\n"
	"      --duration S           stop after S seconds\n"
	"  -q, --quiet                no live view (events still go to stderr)\n"
	"  -h, --help                 show this help\n"
	"\n"
	"Exit status: with COMMAND, its own (128+N for signal N); else 0, 2 on bad usage.\n";

struct wopts {
	int interval_ms, min_interval_ms;
	uint64_t min_free_bytes;
	double min_free_pct;
	int64_t horizon_ms, window_ms, stuck_ms, grace_ms, duration_ms;
	const char *jsonl_path, *prom_addr, *on_event;
	int stop_on_partial, quiet;
	char **cmd;
};

struct watcher {
	struct wopts o;
	struct watch_state w;
	struct nvml *nvml;
	FILE *jsonl;
	struct prom_server *prom;
	struct proc_table procs;
	pid_t child;              /* COMMAND, or 0 */
	int child_status, child_done;
	int tty;
	int64_t t0_ms;
	int procs_fresh;          /* the process table was read in this sample */
	uint64_t oom_prev;
	/* exit statuses of processes we reaped (our children and orphans), by pid */
	pid_t reaped_pid[64];
	int reaped_status[64];
	size_t nreaped;
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- events ----------------------------------------------------------------------- */

extern char **environ;

/* sh -c CMD with the event in its environment, not waited for (reaped with the rest).
 * The environment is built before fork: the Prometheus thread may hold malloc's lock,
 * and a forked child of a threaded process may only call async-signal-safe functions. */
static void run_hook(const char *cmd, const char *event, const char *msg, const char *json)
{
	size_t n = 0;
	char **envp, *argv[] = { "sh", "-c", (char *)cmd, NULL };

	while (environ[n])
		n++;
	envp = xcalloc(n + 4, sizeof(*envp));
	envp[0] = xasprintf("HEADROOM_EVENT=%s", event);
	envp[1] = xasprintf("HEADROOM_EVENT_MESSAGE=%s", msg);
	envp[2] = xasprintf("HEADROOM_EVENT_JSON=%s", json);
	for (size_t i = 0, k = 3; i < n; i++)
		if (strncmp(environ[i], "HEADROOM_EVENT", 14))
			envp[k++] = environ[i];
	if (fork() == 0) {
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	for (int i = 0; i < 3; i++)
		free(envp[i]);
	free(envp);
}

static void emit(struct watcher *x, enum watch_event e, json_t *rec, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void emit(struct watcher *x, enum watch_event e, json_t *rec, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	char *txt;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	x->w.events[e]++;
	json_object_set_new(rec, "type", json_string("event"));
	json_object_set_new(rec, "event", json_string(watch_event_name(e)));
	json_object_set_new(rec, "time_ms", json_integer(wall_ms()));
	json_object_set_new(rec, "message", json_string(msg));
	txt = json_dumps(rec, JSON_COMPACT);
	fprintf(stderr, "headroom watch: %s: %s\n", watch_event_name(e), msg);
	if (x->jsonl && txt) {
		fprintf(x->jsonl, "%s\n", txt);
		fflush(x->jsonl);
	}
	if (x->o.on_event && txt)
		run_hook(x->o.on_event, watch_event_name(e), msg, txt);
	free(txt);
	json_decref(rec);
}

/* ---- processes and jobs ------------------------------------------------------------ */

/* The whole process table is read only in a sample that meets a new GPU process (its
 * parent, its command, whether it is the command's): most samples need none of it. */
static const struct proc_table *procs(struct watcher *x)
{
	if (!x->procs_fresh) {
		proc_table_read("", &x->procs);
		x->procs_fresh = 1;
	}
	return &x->procs;
}

/* Is pid still running (not gone, not a zombie)? */
static int running(pid_t pid)
{
	char path[64], buf[1024];
	struct proc_entry e;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (fs_read(path, buf, sizeof(buf)) <= 0 || proc_parse_stat(buf, sysconf(_SC_PAGESIZE), &e))
		return 0;
	return e.state != 'Z' && e.state != 'X';
}

static struct wjob *job_get(struct watcher *x, const char *key)
{
	for (size_t i = 0; i < x->w.njobs; i++)
		if (!strcmp(x->w.jobs[i].key, key))
			return &x->w.jobs[i];
	if (x->w.njobs == x->w.capjobs) {
		x->w.capjobs = x->w.capjobs ? x->w.capjobs * 2 : 16;
		x->w.jobs = xrealloc(x->w.jobs, x->w.capjobs * sizeof(*x->w.jobs));
	}
	struct wjob *j = &x->w.jobs[x->w.njobs++];
	memset(j, 0, sizeof(*j));
	snprintf(j->key, sizeof(j->key), "%s", key);
	return j;
}

/* torchrun's run id where the environment says it, else the parent (the launcher of
 * the ranks) or, under `watch -- CMD`, the command itself. */
static void job_of(struct watcher *x, pid_t pid, char *key, size_t len, int *rank)
{
	char path[64], env[32768];
	long n;
	const struct proc_entry *e = proc_table_find(procs(x), pid);

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	n = fs_read(path, env, sizeof(env));
	if (n > 0 && detect_job_from_environ(env, (size_t)n, key, len, rank))
		return;
	*rank = -1;
	if (x->child)
		snprintf(key, len, "cmd:%d", (int)x->child);
	else
		snprintf(key, len, "parent:%d", e ? (int)e->ppid : 0);
}

static struct wproc *proc_get(struct watcher *x, pid_t pid, unsigned gpu)
{
	for (size_t i = 0; i < x->w.nprocs; i++)
		if (x->w.procs[i].pid == pid && x->w.procs[i].gpu == gpu)
			return &x->w.procs[i];
	return NULL;
}

/* NVML gives host pids; a process in a container has another pid there: the last of
 * NSpid in /proc/PID/status (when headroom sees the host's pid namespace). 0: the same. */
static pid_t container_pid(pid_t pid)
{
	char path[64], buf[4096], *l;
	long n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	n = fs_read(path, buf, sizeof(buf));
	l = n > 0 ? strstr(buf, "\nNSpid:") : NULL;
	if (!l)
		return 0;
	l += 7;
	char *end = strchr(l, '\n');
	if (end)
		*end = '\0';
	char *last = strrchr(l, '\t') ? strrchr(l, '\t') + 1 : l;
	pid_t inner = (pid_t)atoi(last);
	return inner > 0 && inner != pid ? inner : 0;
}

static struct wproc *proc_add(struct watcher *x, pid_t pid, unsigned gpu, int64_t now)
{
	struct wproc *p;
	const struct proc_entry *e = proc_table_find(procs(x), pid);

	if (x->w.nprocs == x->w.capprocs) {
		x->w.capprocs = x->w.capprocs ? x->w.capprocs * 2 : 32;
		x->w.procs = xrealloc(x->w.procs, x->w.capprocs * sizeof(*x->w.procs));
	}
	p = &x->w.procs[x->w.nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->gpu = gpu;
	p->alive = 1;
	p->used_bytes = p->peak_bytes = -1;
	p->unchanged_since_ms = now;
	snprintf(p->comm, sizeof(p->comm), "%s", e ? e->comm : "?");
	p->ns_pid = container_pid(pid);
	job_of(x, pid, p->job, sizeof(p->job), &p->rank);
	/* a pidfd tells the moment it ends */
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct wjob *j = job_get(x, p->job);
	j->seen++;
	j->alive++;
	return p;
}

static const char *how_it_ended(struct watcher *x, pid_t pid, char *buf, size_t len)
{
	uint64_t oom;

	for (size_t i = 0; i < x->nreaped; i++)
		if (x->reaped_pid[i] == pid) {
			int st = x->reaped_status[i];
			if (WIFSIGNALED(st))
				snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
			else
				snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
			return buf;
		}
	if (!meminfo_oom_kills("", &oom) && oom > x->oom_prev)
		snprintf(buf, len, "ended as the host's OOM killer struck (oom_kill count rose by %llu)",
			 (unsigned long long)(oom - x->oom_prev));
	else
		snprintf(buf, len, "ended (not our child: its exit status is unknown)");
	return buf;
}

static void reap(struct watcher *x)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		size_t i = x->nreaped < 64 ? x->nreaped++ : (size_t)(pid % 64);
		x->reaped_pid[i] = pid;
		x->reaped_status[i] = st;
		if (pid == x->child) {
			x->child_status = st;
			x->child_done = 1;
		}
	}
}

/* A GPU process ended: its job may have lost a rank while others run on. */
static void proc_ended(struct watcher *x, struct wproc *p, int64_t now)
{
	struct wjob *j = job_get(x, p->job);
	char how[160];
	const char *uuid = p->gpu < x->w.ngpus ? x->w.gpus[p->gpu].d.uuid : "";

	if (!p->alive)
		return;
	/* a child of ours may be a zombie not reaped yet: its status says how it ended */
	reap(x);
	p->alive = 0;
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	j->alive--;
	j->ended++;
	how_it_ended(x, p->pid, how, sizeof(how));
	emit(x, EV_PROCESS_EXIT,
	     json_pack("{s:i, s:s, s:i, s:i, s:s, s:s}", "pid", (int)p->pid, "job", p->job, "rank", p->rank, "gpu",
		       (int)p->gpu, "uuid", uuid, "how", how),
	     "pid %d (%s, job %s, GPU %u) %s", (int)p->pid, p->comm, p->job, p->gpu, how);
	if (!detect_partial_death(&(struct job_ranks){ j->seen, j->alive, j->ended }) || j->partial_reported)
		return;
	j->partial_reported = 1;
	emit(x, EV_PARTIAL_DEATH,
	     json_pack("{s:s, s:i, s:i, s:i, s:s, s:i, s:i, s:s}", "job", j->key, "pid", (int)p->pid, "rank", p->rank,
		       "gpu", (int)p->gpu, "uuid", uuid, "ranks_alive", j->alive, "ranks_seen", j->seen, "how", how),
	     "job %s lost rank %d (pid %d, GPU %u): %s; %d of %d ranks still running", j->key, p->rank, (int)p->pid,
	     p->gpu, how, j->alive, j->seen);
	if (!x->o.stop_on_partial)
		return;
	for (size_t i = 0; i < x->w.nprocs; i++)
		if (x->w.procs[i].alive && !strcmp(x->w.procs[i].job, j->key))
			kill(x->w.procs[i].pid, SIGTERM);
	j->stopping = 1;
	j->kill_at_ms = now + x->o.grace_ms;
	emit(x, EV_JOB_STOPPED, json_pack("{s:s, s:i}", "job", j->key, "ranks_signalled", j->alive),
	     "sent SIGTERM to the %d surviving ranks of job %s (SIGKILL in %lld s) so that its launcher can restart it",
	     j->alive, j->key, (long long)(x->o.grace_ms / 1000));
}

/* ---- sampling ------------------------------------------------------------------------ */

static int in_scope(struct watcher *x, pid_t pid)
{
	return !x->child || proc_table_is_descendant(procs(x), pid, x->child);
}

static void sample_gpus(struct watcher *x, int64_t now)
{
	struct nvml_proc list[256];

	for (size_t g = 0; g < x->w.ngpus; g++) {
		struct wgpu *G = &x->w.gpus[g];
		unsigned n = 0;

		G->ok = !nvml_device_read(x->nvml, (unsigned)g, &G->d);
		if (!G->ok) {
			G->ttoom_s = -1;
			if (!G->fail_reported)
				emit(x, EV_READ_FAILED, json_pack("{s:i}", "gpu", (int)g),
				     "GPU %zu could not be read: its figures are missing until it can", g);
			G->fail_reported = 1;
			continue;
		}
		G->fail_reported = 0;
		series_add(&G->used, now, (double)G->d.used_bytes);
		if (G->d.used_bytes > G->peak_used_bytes)
			G->peak_used_bytes = G->d.used_bytes;
		G->ttoom_s = series_time_to(&G->used, now, x->o.window_ms, (double)G->d.total_bytes);
		if (G->ttoom_s >= 0 && G->ttoom_s * 1000 <= (double)x->o.horizon_ms) {
			if (!G->ttoom_warned)
				emit(x, EV_TIME_TO_OOM,
				     json_pack("{s:i, s:s, s:f, s:I, s:I}", "gpu", (int)g, "uuid", G->d.uuid, "seconds",
					       G->ttoom_s, "used_bytes", (json_int_t)G->d.used_bytes, "total_bytes",
					       (json_int_t)G->d.total_bytes),
				     "GPU %zu (%s) reaches its %.1f GiB in about %.0f s at its current growth", g, G->d.uuid,
				     (double)G->d.total_bytes / (1 << 30), G->ttoom_s);
			G->ttoom_warned = 1;
		} else {
			G->ttoom_warned = 0;
		}
		if (detect_low_free(G->d.free_bytes, G->d.total_bytes, x->o.min_free_bytes, x->o.min_free_pct)) {
			if (!G->low_free) {
				char a[32];
				emit(x, EV_LOW_FREE,
				     json_pack("{s:i, s:s, s:I, s:I}", "gpu", (int)g, "uuid", G->d.uuid, "free_bytes",
					       (json_int_t)G->d.free_bytes, "total_bytes", (json_int_t)G->d.total_bytes),
				     "GPU %zu (%s) has %s free (%.1f%%)", g, G->d.uuid, size_format(G->d.free_bytes, a, sizeof(a)),
				     100.0 * (double)G->d.free_bytes / (double)(G->d.total_bytes ? G->d.total_bytes : 1));
			}
			G->low_free = 1;
		} else {
			G->low_free = 0;
		}
		if (nvml_device_processes(x->nvml, (unsigned)g, list, 256, &n))
			continue;
		for (unsigned i = 0; i < n; i++) {
			struct wproc *p = proc_get(x, (pid_t)list[i].pid, (unsigned)g);
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
			if (detect_stuck(p->used_bytes, p->unchanged_since_ms, G->d.util_gpu_pct, now, x->o.stuck_ms)) {
				if (!p->stuck_warned)
					emit(x, EV_STUCK,
					     json_pack("{s:i, s:s, s:i, s:I}", "pid", (int)p->pid, "job", p->job, "gpu", (int)g,
						       "used_bytes", (json_int_t)p->used_bytes),
					     "pid %d (%s, job %s) holds GPU %zu memory, unchanged and idle for %lld s", (int)p->pid,
					     p->comm, p->job, g, (long long)((now - p->unchanged_since_ms) / 1000));
				p->stuck_warned = 1;
			}
		}
	}
}

/* Fixed memory over a long watch: past a bound, ended processes of finished jobs and
 * the finished jobs themselves are forgotten (their events went out already). */
#define KEEP_ENDED 256
static void forget_ended(struct watcher *x)
{
	size_t k = 0;

	if (x->w.nprocs <= KEEP_ENDED && x->w.njobs <= KEEP_ENDED)
		return;
	for (size_t i = 0; i < x->w.nprocs; i++) {
		struct wproc *p = &x->w.procs[i];
		if (p->alive || job_get(x, p->job)->alive)
			x->w.procs[k++] = *p;
	}
	x->w.nprocs = k;
	k = 0;
	for (size_t i = 0; i < x->w.njobs; i++)
		if (x->w.jobs[i].alive)
			x->w.jobs[k++] = x->w.jobs[i];
	x->w.njobs = k;
}

static void sample(struct watcher *x, int64_t now)
{
	struct meminfo mi;
	struct psi psi;
	char path[64];

	x->procs_fresh = 0;
	x->w.has_host = !meminfo_read("", &mi);
	if (x->w.has_host) {
		x->w.host_total_bytes = mi.total_bytes;
		x->w.host_available_bytes = mi.available_bytes;
	}
	x->w.has_oom = !meminfo_oom_kills("", &x->w.host_oom_kills);
	x->w.psi_some_avg10 = x->w.psi_full_avg10 = -1;
	snprintf(path, sizeof(path), "/proc/pressure/memory");
	if (!psi_read(path, &psi)) {
		x->w.psi_some_avg10 = psi.some_avg10_pct;
		x->w.psi_full_avg10 = psi.full_avg10_pct;
	}
	if (x->nvml) {
		struct nvml_xid xid[16];
		int n;

		sample_gpus(x, now);
		n = nvml_xid_poll(x->nvml, xid, 16);
		for (int i = 0; i < n; i++)
			emit(x, EV_XID,
			     json_pack("{s:i, s:s, s:I}", "gpu", (int)xid[i].gpu,
				       "uuid", xid[i].gpu < x->w.ngpus ? x->w.gpus[xid[i].gpu].d.uuid : "", "xid",
				       (json_int_t)xid[i].code),
			     "GPU %u reported XID %llu", xid[i].gpu, xid[i].code);
	}
	/* processes gone without a pidfd to say so */
	for (size_t i = 0; i < x->w.nprocs; i++) {
		struct wproc *p = &x->w.procs[i];
		if (p->alive && !running(p->pid))
			proc_ended(x, p, now);
	}
	if (x->w.has_oom)
		x->oom_prev = x->w.host_oom_kills;
	forget_ended(x);
	/* survivors that ignored SIGTERM */
	for (size_t i = 0; i < x->w.njobs; i++) {
		struct wjob *j = &x->w.jobs[i];
		if (!j->stopping || now < j->kill_at_ms)
			continue;
		for (size_t k = 0; k < x->w.nprocs; k++)
			if (x->w.procs[k].alive && !strcmp(x->w.procs[k].job, j->key))
				kill(x->w.procs[k].pid, SIGKILL);
		j->stopping = 0;
	}
}

/* ---- outputs ------------------------------------------------------------------------- */

static void write_sample(struct watcher *x)
{
	json_t *s = json_object(), *gpus = json_array(), *procs = json_array();
	char *txt;

	json_object_set_new(s, "type", json_string("sample"));
	json_object_set_new(s, "time_ms", json_integer(wall_ms()));
	json_object_set_new(s, "host_available_bytes",
			    x->w.has_host ? json_integer((json_int_t)x->w.host_available_bytes) : json_null());
	json_object_set_new(s, "host_oom_kills", x->w.has_oom ? json_integer((json_int_t)x->w.host_oom_kills) : json_null());
	json_object_set_new(s, "psi_full_avg10", x->w.psi_full_avg10 >= 0 ? json_real(x->w.psi_full_avg10) : json_null());
	for (size_t g = 0; g < x->w.ngpus; g++) {
		struct wgpu *G = &x->w.gpus[g];
		json_t *o = json_pack("{s:i, s:s, s:s, s:b}", "gpu", (int)g, "uuid", G->d.uuid, "pci_bus_id", G->d.bus_id,
				      "ok", G->ok);
		json_object_set_new(o, "used_bytes", G->ok ? json_integer((json_int_t)G->d.used_bytes) : json_null());
		json_object_set_new(o, "free_bytes", G->ok ? json_integer((json_int_t)G->d.free_bytes) : json_null());
		json_object_set_new(o, "total_bytes", G->ok ? json_integer((json_int_t)G->d.total_bytes) : json_null());
		json_object_set_new(o, "reserved_bytes",
				    G->ok && G->d.reserved_bytes >= 0 ? json_integer(G->d.reserved_bytes) : json_null());
		json_object_set_new(o, "util_pct", G->ok && G->d.util_gpu_pct >= 0 ? json_integer(G->d.util_gpu_pct) : json_null());
		json_object_set_new(o, "time_to_oom_s", G->ok && G->ttoom_s >= 0 ? json_real(G->ttoom_s) : json_null());
		json_array_append_new(gpus, o);
	}
	for (size_t i = 0; i < x->w.nprocs; i++) {
		struct wproc *p = &x->w.procs[i];
		if (!p->alive)
			continue;
		json_t *o = json_pack("{s:i, s:i, s:s, s:s}", "pid", (int)p->pid, "gpu", (int)p->gpu, "job", p->job, "comm",
				      p->comm);
		json_object_set_new(o, "used_bytes", p->used_bytes >= 0 ? json_integer(p->used_bytes) : json_null());
		json_object_set_new(o, "rank", p->rank >= 0 ? json_integer(p->rank) : json_null());
		json_object_set_new(o, "container_pid", p->ns_pid ? json_integer(p->ns_pid) : json_null());
		json_array_append_new(procs, o);
	}
	json_object_set_new(s, "gpus", gpus);
	json_object_set_new(s, "processes", procs);
	txt = json_dumps(s, JSON_COMPACT);
	if (txt) {
		fprintf(x->jsonl, "%s\n", txt);
		fflush(x->jsonl);
	}
	free(txt);
	json_decref(s);
}

static void show(struct watcher *x)
{
	char a[32], b[32], c[32];

	printf("\033[H\033[2J");
	if (x->w.has_host)
		printf("host: %s available of %s", size_format(x->w.host_available_bytes, a, sizeof(a)),
		       size_format(x->w.host_total_bytes, b, sizeof(b)));
	if (x->w.psi_full_avg10 >= 0)
		printf(", memory pressure full %.1f%%", x->w.psi_full_avg10);
	if (x->w.has_oom)
		printf(", OOM kills %llu", (unsigned long long)x->w.host_oom_kills);
	printf("\n%s\n", x->nvml ? "" : "no NVIDIA driver: host memory only");
	if (x->w.ngpus)
		printf("%-4s %-22s %12s %12s %7s %5s %9s\n", "GPU", "name", "free", "used", "free%", "util", "to OOM");
	for (size_t g = 0; g < x->w.ngpus; g++) {
		struct wgpu *G = &x->w.gpus[g];
		if (!G->ok) {
			printf("%-4zu %-22.22s   (read failed: figures unknown)\n", g, G->d.name);
			continue;
		}
		printf("%-4zu %-22.22s %12s %12s %6.1f%% ", g, G->d.name, size_format(G->d.free_bytes, a, sizeof(a)),
		       size_format(G->d.used_bytes, b, sizeof(b)),
		       100.0 * (double)G->d.free_bytes / (double)(G->d.total_bytes ? G->d.total_bytes : 1));
		if (G->d.util_gpu_pct >= 0)
			printf("%4d%% ", G->d.util_gpu_pct);
		else
			printf("%5s ", "-");
		if (G->ttoom_s >= 0)
			printf("%8.0fs\n", G->ttoom_s);
		else
			printf("%9s\n", "-");
	}
	for (size_t i = 0; i < x->w.njobs; i++)
		printf("job %-40s %d of %d ranks alive\n", x->w.jobs[i].key, x->w.jobs[i].alive, x->w.jobs[i].seen);
	for (size_t i = 0; i < x->w.nprocs; i++) {
		struct wproc *p = &x->w.procs[i];
		if (p->alive)
			printf("  pid %-8d %-16s GPU %-2u %12s (peak %s)\n", (int)p->pid, p->comm, p->gpu,
			       p->used_bytes >= 0 ? size_format((uint64_t)p->used_bytes, a, sizeof(a)) : "?",
			       p->peak_bytes >= 0 ? size_format((uint64_t)p->peak_bytes, c, sizeof(c)) : "?");
	}
	fflush(stdout);
}

static void summary(struct watcher *x)
{
	char a[32];

	fprintf(stderr, "headroom watch: %s after %.1f s\n",
		x->child ? "the command ended" : "stopped", (double)(now_ms() - x->t0_ms) / 1000.0);
	for (size_t g = 0; g < x->w.ngpus; g++)
		fprintf(stderr, "  GPU %zu (%s): peak used %s\n", g, x->w.gpus[g].d.uuid,
			size_format(x->w.gpus[g].peak_used_bytes, a, sizeof(a)));
	for (size_t i = 0; i < x->w.nprocs; i++) {
		struct wproc *p = &x->w.procs[i];
		fprintf(stderr, "  pid %d (%s, job %s) on GPU %u: peak %s\n", (int)p->pid, p->comm, p->job, p->gpu,
			p->peak_bytes >= 0 ? size_format((uint64_t)p->peak_bytes, a, sizeof(a)) : "unknown");
	}
	fprintf(stderr, "  events:");
	for (int e = 0; e < EV_COUNT; e++)
		if (x->w.events[e])
			fprintf(stderr, " %s %llu", watch_event_name(e), (unsigned long long)x->w.events[e]);
	fprintf(stderr, "%s\n", x->w.events[0] + x->w.events[1] + x->w.events[2] + x->w.events[3] ? "" : " no warnings");
}

/* Like earlyoom: sample faster as the narrowest margin shrinks. */
static int next_interval(struct watcher *x)
{
	double worst = 1.0; /* 1: wide; 0: at a threshold */

	for (size_t g = 0; g < x->w.ngpus; g++) {
		struct wgpu *G = &x->w.gpus[g];
		if (!G->ok || !G->d.total_bytes)
			continue;
		double pct = 100.0 * (double)G->d.free_bytes / (double)G->d.total_bytes;
		double m = (pct - x->o.min_free_pct) / (4 * (x->o.min_free_pct > 0 ? x->o.min_free_pct : 5));
		if (G->ttoom_s >= 0)
			m = m < G->ttoom_s * 1000 / (double)(4 * x->o.horizon_ms) ? m : G->ttoom_s * 1000 / (double)(4 * x->o.horizon_ms);
		if (m < worst)
			worst = m;
	}
	if (worst < 0)
		worst = 0;
	return x->o.min_interval_ms + (int)((x->o.interval_ms - x->o.min_interval_ms) * worst);
}

/* ---- the loop ------------------------------------------------------------------------ */


static int64_t seconds_ms(const char *opt, const char *v)
{
	char *end;
	double s = strtod(v, &end);
	if (*end || !*v || s < 0 || s > 1e7)
		die(EXIT_USAGE, "watch: %s wants seconds, not '%s'", opt, v);
	return (int64_t)(s * 1000);
}

static void parse(int argc, char **argv, struct wopts *o)
{
	enum { O_MINI = 256, O_MINFREE, O_MINPCT, O_HORIZON, O_WINDOW, O_STUCK, O_JSONL, O_PROM, O_ONEV, O_STOP, O_GRACE, O_DUR };
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },     { "min-interval", required_argument, NULL, O_MINI },
		{ "min-free", required_argument, NULL, O_MINFREE }, { "min-free-pct", required_argument, NULL, O_MINPCT },
		{ "horizon", required_argument, NULL, O_HORIZON }, { "window", required_argument, NULL, O_WINDOW },
		{ "stuck-timeout", required_argument, NULL, O_STUCK }, { "jsonl", required_argument, NULL, O_JSONL },
		{ "prometheus", required_argument, NULL, O_PROM }, { "on-event", required_argument, NULL, O_ONEV },
		{ "stop-job-on-partial-death", no_argument, NULL, O_STOP }, { "grace", required_argument, NULL, O_GRACE },
		{ "duration", required_argument, NULL, O_DUR },   { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },               { NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	*o = (struct wopts){ .interval_ms = 1000, .min_interval_ms = 100, .min_free_bytes = 1ULL << 30,
			     .min_free_pct = 5, .horizon_ms = 120000, .window_ms = 30000, .stuck_ms = 600000,
			     .grace_ms = 10000 };
	while ((c = getopt_long(argc, argv, "+i:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
		case O_MINI: {
			long v = strtol(optarg, &end, 10);
			if (*end || v < 10 || v > 3600000)
				die(EXIT_USAGE, "watch: %s wants milliseconds from 10, not '%s'",
				    c == 'i' ? "--interval" : "--min-interval", optarg);
			if (c == 'i')
				o->interval_ms = (int)v;
			else
				o->min_interval_ms = (int)v;
			break;
		}
		case O_MINFREE:
			if (size_parse(optarg, &o->min_free_bytes))
				die(EXIT_USAGE, "watch: --min-free wants a size such as 2G, not '%s'", optarg);
			break;
		case O_MINPCT:
			o->min_free_pct = strtod(optarg, &end);
			if (*end || o->min_free_pct < 0 || o->min_free_pct >= 100)
				die(EXIT_USAGE, "watch: --min-free-pct wants a percentage below 100, not '%s'", optarg);
			break;
		case O_HORIZON: o->horizon_ms = seconds_ms("--horizon", optarg); break;
		case O_WINDOW: o->window_ms = seconds_ms("--window", optarg); break;
		case O_STUCK: o->stuck_ms = seconds_ms("--stuck-timeout", optarg); break;
		case O_GRACE: o->grace_ms = seconds_ms("--grace", optarg); break;
		case O_DUR: o->duration_ms = seconds_ms("--duration", optarg); break;
		case O_JSONL: o->jsonl_path = optarg; break;
		case O_PROM: o->prom_addr = optarg; break;
		case O_ONEV: o->on_event = optarg; break;
		case O_STOP: o->stop_on_partial = 1; break;
		case 'q': o->quiet = 1; break;
		case 'h': fputs(usage, stdout); exit(0);
		default: fputs(usage, stderr); exit(EXIT_USAGE);
		}
	}
	if (o->min_interval_ms > o->interval_ms)
		o->min_interval_ms = o->interval_ms;
	o->cmd = optind < argc ? argv + optind : NULL;
}

static void setup_gpus(struct watcher *x)
{
	const char *why;
	unsigned n = 0;
	int rc = nvml_open(&x->nvml, &why);

	if (rc) {
		log_warn("watch: %s: watching host memory only", why);
		return;
	}
	if (nvml_device_count(x->nvml, &n)) {
		log_warn("watch: NVML cannot count the GPUs: watching host memory only");
		nvml_close(x->nvml);
		x->nvml = NULL;
		return;
	}
	x->w.nvml_ok = 1;
	x->w.ngpus = n;
	x->w.gpus = xcalloc(n ? n : 1, sizeof(*x->w.gpus));
	if (!n)
		log_warn("watch: the NVIDIA driver sees no GPU: watching host memory only");
}

int cmd_watch(int argc, char **argv)
{
	struct watcher x = { 0 };
	sigset_t mask, orig;
	int sfd, status = 0;

	parse(argc, argv, &x.o);
	x.t0_ms = now_ms();
	gethostname(x.w.hostname, sizeof(x.w.hostname) - 1);
	if (x.o.jsonl_path) {
		x.jsonl = strcmp(x.o.jsonl_path, "-") ? fopen(x.o.jsonl_path, "a") : stdout;
		if (!x.jsonl)
			die(EXIT_USAGE, "watch: cannot write %s: %s", x.o.jsonl_path, strerror(errno));
	}
	if (x.o.prom_addr) {
		const char *why;
		if (prom_start(x.o.prom_addr, &x.prom, &why))
			die(EXIT_USAGE, "watch: --prometheus %s: %s", x.o.prom_addr, why);
	}
	x.tty = !x.o.quiet && isatty(STDOUT_FILENO) && x.jsonl != stdout;
	setup_gpus(&x);
	meminfo_oom_kills("", &x.oom_prev);

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &orig);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die(EXIT_INTERNAL, "watch: signalfd: %s", strerror(errno));
	if (x.o.cmd) {
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		x.child = fork();
		if (x.child == 0) {
			sigprocmask(SIG_SETMASK, &orig, NULL);
			execvp(x.o.cmd[0], x.o.cmd);
			log_warn("watch: cannot run %s: %s", x.o.cmd[0], strerror(errno));
			_exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
		}
		if (x.child < 0)
			die(EXIT_INTERNAL, "watch: fork: %s", strerror(errno));
	}

	int interrupted = 0;
	while (!interrupted) {
		int64_t now = now_ms();
		sample(&x, now);
		if (x.jsonl)
			write_sample(&x);
		if (x.prom)
			prom_publish(x.prom, prom_render(&x.w));
		if (x.tty)
			show(&x);
		if ((x.child && x.child_done) || (x.o.duration_ms && now - x.t0_ms >= x.o.duration_ms))
			break;
		/* wait for the next sample, a signal, or a watched process's end */
		size_t npf = 1;
		struct pollfd *pf = xcalloc(x.w.nprocs + 1, sizeof(*pf));
		pf[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (size_t i = 0; i < x.w.nprocs; i++)
			if (x.w.procs[i].alive && x.w.procs[i].pidfd >= 0)
				pf[npf++] = (struct pollfd){ .fd = x.w.procs[i].pidfd, .events = POLLIN };
		int64_t until = now + next_interval(&x);
		while ((now = now_ms()) < until && !interrupted) {
			if (poll(pf, (nfds_t)npf, (int)(until - now)) <= 0)
				continue;
			if (pf[0].revents) {
				struct signalfd_siginfo si;
				while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
					if (si.ssi_signo == SIGCHLD)
						reap(&x);
					else if (x.child && !x.child_done)
						kill(x.child, (int)si.ssi_signo); /* the command decides; we follow it */
					else
						interrupted = (int)si.ssi_signo;
				}
			}
			int ended = 0;
			for (size_t k = 1; k < npf; k++)
				if (pf[k].revents) {
					for (size_t i = 0; i < x.w.nprocs; i++)
						if (x.w.procs[i].pidfd == pf[k].fd)
							proc_ended(&x, &x.w.procs[i], now_ms());
					ended = 1;
				}
			if (ended || (x.child && x.child_done))
				break; /* sample now: the set of processes changed */
		}
		free(pf);
	}
	if (x.child) {
		while (!x.child_done) { /* interrupted: the command was signalled; wait for it */
			int st;
			if (waitpid(x.child, &st, 0) == x.child) {
				x.child_status = st;
				x.child_done = 1;
			}
		}
		status = exit_status_of(x.child_status);
	} else if (interrupted) {
		status = 0;
	}
	if (x.child || !x.o.quiet)
		summary(&x);
	for (size_t i = 0; i < x.w.nprocs; i++)
		if (x.w.procs[i].pidfd >= 0)
			close(x.w.procs[i].pidfd);
	prom_stop(x.prom);
	if (x.jsonl && x.jsonl != stdout)
		fclose(x.jsonl);
	nvml_close(x.nvml);
	free(x.w.gpus);
	free(x.w.procs);
	free(x.w.jobs);
	proc_table_free(&x.procs);
	close(sfd);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return status;
}
