/* What the watchdog knows: GPUs, GPU processes, jobs, host memory, event counts. Filled
 * by the watcher each sample, rendered by the outputs; the bookkeeping of its process
 * and job tables. */
#ifndef HEADROOM_WATCH_STATE_H
#define HEADROOM_WATCH_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/nvml.h"
#include "watch/detect.h"
#include "watch/event.h"

struct wgpu {
	int ok;                   /* the last read worked */
	struct nvml_dev d;
	struct series used;
	double ttoom_s;           /* -1 unknown / not rising */
	uint64_t peak_used_bytes;
	int low_free;             /* the low-free condition holds (reported once per episode) */
	int ttoom_warned;
	int fail_reported;        /* a failed read was reported; again only after a good one */
};

/* What makes processes one job: the same owner (real uid), the same origin (their
 * ancestor just below init, by pid and start time: one container's, service's or login's
 * tree; never init, so orphans are never grouped by it), and the same key, whole. A
 * process of another user or another tree with the same run id is another job. */
struct wjob_id {
	uid_t uid;
	pid_t origin;
	unsigned long long origin_start;
	char *key;                /* owned: "torchelastic:ID", "dist:ADDR:PORT", "cmd:PID", "parent:PID", "pid:PID" */
};

int wjob_id_same(const struct wjob_id *a, const struct wjob_id *b);

struct wproc {
	pid_t pid;
	unsigned gpu;
	int64_t used_bytes, peak_bytes; /* -1 unknown */
	struct wjob_id job;       /* its own copy */
	int rank;                 /* -1 unknown */
	int alive;
	int pidfd;                /* -1 when pidfd_open is not available */
	int64_t unchanged_since_ms;
	struct series trend;
	int stuck_warned, ttoom_warned;
	char comm[32];
	pid_t ns_pid;             /* the pid inside its container, 0 when the same */
	int is_rank;              /* a rank of a distributed job (watch_job_key): only ranks are stopped */
	unsigned long long start_ticks; /* its start time, to tell it from a later process of its pid; 0 unknown */
	uint64_t alive_at_ns;     /* CLOCK_MONOTONIC after it was seen alive: only an exit the kernel
	                           * announced later is its own, not an earlier process's of its pid; 0 unknown */
};

enum wjob_stop {
	STOP_NONE,
	STOP_WAITING,             /* a rank died: the survivors have until stop_at_ms to end */
	STOP_TERM_SENT,           /* SIGTERM sent to the survivors; SIGKILL at kill_at_ms */
};

/* A job: its processes on the GPUs, counted once each however many GPUs they use. */
struct wjob {
	struct wjob_id id;
	int seen, alive, ended;
	int died;                 /* ended in a death read as one (detect_end_is_death) */
	int stop_scheduled;       /* its first death scheduled the stop (--stop-job-on-partial-death) */
	int signalled;            /* headroom signalled its ranks: their deaths are its own */
	enum wjob_stop stop;
	int64_t stop_at_ms, kill_at_ms;
};

/* An event as the live view and the summary show it. */
struct wevent_rec {
	int64_t wall_ms;          /* when it was raised (Unix time) */
	enum watch_event e;
	char *msg;                /* its message, escaped for a terminal; owned */
};

/* The events kept for the view and the summary: the newest this many. */
#define WATCH_EVENT_LOG_MAX 1000

struct watch_state {
	char hostname[64];
	int nvml_ok;              /* NVML loaded and the device count read */
	struct wgpu *gpus;        /* owned, ngpus of them */
	size_t ngpus;
	struct wproc *procs;      /* owned; ended ones stay until watch_state_forget_ended */
	size_t nprocs, capprocs;
	struct wjob *jobs;        /* owned */
	size_t njobs, capjobs;
	int has_host;
	uint64_t host_total_bytes, host_available_bytes;
	int has_oom;
	uint64_t host_oom_kills;
	double psi_some_avg10, psi_full_avg10; /* < 0 unknown */
	uint64_t events[EV_COUNT];
	struct wevent_rec *log;   /* owned: the events in order, the newest WATCH_EVENT_LOG_MAX */
	size_t nlog, caplog;
	uint64_t log_dropped;     /* older ones no longer kept */
};

/* The job of id, added (no ranks yet, with a copy of id) when there is none. The pointer
 * lives until the next call that adds a job or forgets ended ones. */
struct wjob *watch_state_job(struct watch_state *w, const struct wjob_id *id);
/* The process pid on GPU gpu, or NULL. */
struct wproc *watch_state_proc(struct watch_state *w, pid_t pid, unsigned gpu);
/* A new running process on gpu since now_ms, in job (with rank, -1 unknown); the job
 * counts it as seen and alive unless it has it already (the same pid on another GPU).
 * Its memory is unknown until sampled; the caller sets comm, ns_pid, pidfd, is_rank
 * and start_ticks. The pointer lives until the next process is added. */
struct wproc *watch_state_add_proc(struct watch_state *w, pid_t pid, unsigned gpu, int64_t now_ms,
				   const struct wjob_id *job, int rank);
/* Fixed memory over a long watch: past a bound, ended processes of finished jobs and
 * the finished jobs themselves are forgotten (their events went out already). */
void watch_state_forget_ended(struct watch_state *w);
/* Keep event e, raised at wall_ms with message msg (copied, escaped for a terminal);
 * past WATCH_EVENT_LOG_MAX the oldest goes. */
void watch_state_log_event(struct watch_state *w, enum watch_event e, int64_t wall_ms, const char *msg);
/* Frees the tables and their keys (not the pidfds: the watcher closes those). */
void watch_state_free(struct watch_state *w);

/* Job grouping (the key of a wjob_id). A rank (detect_rank_from_environ on its
 * environment, NUL-separated as /proc/PID/environ; NULL when unreadable) is grouped by
 * what its environment says (torchrun's run id, the rendezvous address), else under
 * `watch -- CMD` by the command (command > 0), else by its parent, the launcher of the
 * ranks (ppid), unless that is init (ppid 1, or 0 unknown): an orphan's parent launched
 * nothing, and a rank with no launcher is a job of its own. Any other process is a job
 * of its own: a sibling under the same parent is no rank of it. *key (the caller frees):
 * "torchelastic:ID", "dist:ADDR:PORT", "cmd:PID", "parent:PID", "pid:PID"; *rank (-1
 * unknown); returns 1 for a rank. */
int watch_job_key(const char *env, size_t env_len, pid_t pid, pid_t command, pid_t ppid, char **key, int *rank);

#endif
