/* The watchdog's sampling: each sample reads host memory, the GPUs (sys/nvml) and their
 * processes, groups the processes into jobs, follows their ends, and raises events. */
#ifndef HEADROOM_WATCH_WATCHER_H
#define HEADROOM_WATCH_WATCHER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/cgroup.h"
#include "sys/nvml.h"
#include "sys/proc.h"
#include "watch/notify.h"
#include "watch/state.h"

/* The thresholds and timings of the options. */
struct watch_limits {
	int interval_ms;          /* sampling interval when margins are wide */
	int min_interval_ms;      /* ... when a margin is at a threshold */
	uint64_t min_free_bytes;  /* low_free under this free memory (0 off) */
	double min_free_pct;      /* ... or under this share of the GPU (0 off) */
	int64_t horizon_ms;       /* time_to_oom when the trend reaches capacity within this */
	int64_t window_ms;        /* the trend's window */
	int64_t stuck_ms;         /* stuck after this long unchanged and idle (0 off) */
	int stop_on_partial;      /* stop a job's surviving ranks after a partial death: */
	int64_t stop_delay_ms;    /* ... SIGTERM those still running this long after it... */
	int64_t grace_ms;         /* ... and SIGKILL them this much later */
};

/* The time to OOM is shown (JSON, /metrics, live view) only within this many horizons:
 * beyond, a projection says nothing worth acting on. */
#define WATCH_TTOOM_HORIZONS 10
#define WATCH_REAPED 64
/* Exits the kernel announced (sys/procexit) for processes watch follows, kept until
 * their pidfd or a sample tells watch of the end: a few at once, never for long. */
#define WATCH_EXITS 64
#define WATCH_EXIT_KEEP_MS 60000
#define WATCH_EXITS_READ 8        /* records parsed from one message */
#define WATCH_EXITS_DRAIN 4096    /* messages read in one call at most */

struct wexit {
	pid_t pid;
	int status;               /* a wait status */
	uint64_t time_ns;         /* when it exited (CLOCK_MONOTONIC) */
	int64_t seen_ms;          /* when watch read it: it expires WATCH_EXIT_KEEP_MS later */
};

struct watcher {
	const char *root;         /* "" for the live system */
	struct watch_limits lim;
	struct watch_state w;
	struct nvml *nvml;        /* owned; NULL: host memory only */
	struct notifier notify;   /* its counts are w.events: a watcher is not copied */
	struct proc_table procs;  /* read only in a sample that meets a new GPU process */
	int procs_fresh;          /* the process table was read in this sample */
	pid_t child;              /* the command watched (`watch -- CMD`), or 0 */
	int child_status, child_done;
	uint64_t oom_prev;        /* the host's OOM kills at the last sample */
	struct cgroup cg;         /* the memory cgroup we run in (found at watcher_open) */
	int has_cg;
	/* exit statuses of processes we reaped (our children and orphans), by pid */
	pid_t reaped_pid[WATCH_REAPED];
	int reaped_status[WATCH_REAPED];
	size_t nreaped;
	/* the kernel's process exits (sys/procexit; -1 without: not root, or a kernel
	 * without them), for the ends of processes reaped before their zombie was read */
	int exits_fd;
	struct wexit exits[WATCH_EXITS];
	size_t nexits;
	unsigned long exits_lost; /* times the kernel dropped some (its buffer full) */
};

/* No GPUs yet, no outputs: set x->notify's jsonl and hook_cmd, then watcher_open. */
void watcher_init(struct watcher *x, const char *root, const struct watch_limits *lim);
/* Load NVML (a warning and host memory only without it or without GPUs), find the memory
 * cgroup we run in and note the host's OOM kills so far; on the live system, subscribe
 * to the kernel's process exits (said at -v when they cannot be had). */
void watcher_open(struct watcher *x);
/* One sample at now_ms (monotonic): refreshes x->w and raises what it shows. Host memory
 * is read afresh each time (a VM's MemTotal can grow as it is used); where a cgroup
 * limit lower than MemTotal applies, it is the total, and what it leaves above the
 * group's working set bounds the available. */
void watcher_sample(struct watcher *x, int64_t now_ms);
/* Collect ended children without waiting (SIGCHLD): their statuses say how watched
 * processes ended; the command's ends the watch. */
void watcher_reap(struct watcher *x);
/* Read the process exits the kernel queued (exits_fd), without waiting: those of the
 * processes watch follows are kept for how their end is told. */
void watcher_read_exits(struct watcher *x, int64_t now_ms);
/* The process p ended (its pidfd said so, or it no longer runs): process_exit (how it
 * ended, or that its status could not be read), and partial_death when it died (a
 * non-zero status or a killing signal read: detect_partial_death_event) and its job runs
 * on without it; with stop_on_partial the survivors are stopped (job_stopped) once
 * stop_delay_ms has passed and they still run. An end not read (its parent reaped it
 * first) is no death: nothing is acted on. Nothing when it was known to have ended. */
void watcher_proc_ended(struct watcher *x, struct wproc *p, int64_t now_ms);
/* Like earlyoom: the next sample comes sooner as the narrowest margin shrinks, from
 * interval_ms (wide) down to min_interval_ms (at a threshold). */
int watcher_next_interval_ms(const struct watcher *x);
/* Close the pidfds, the exits' socket and NVML, free the tables. */
void watcher_free(struct watcher *x);

#endif
