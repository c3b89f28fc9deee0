/* The governor's state, shared by its rooms: the job table (job.c), the learned
 * profiles (learned.c), the launchers' socket (server.c), the process tree (treescan.c),
 * process hygiene (guard.c) and the loop with its tick (governor.c). Private to govern/. */
#ifndef HEADROOM_GOV_H
#define HEADROOM_GOV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "govern/jobserver.h"
#include "govern/progress.h"
#include "govern/proto.h"
#include "govern/report.h"
#include "profile/profile.h"
#include "store/store.h"
#include "sys/cgroup.h"
#include "sys/proc.h"

struct governor_opts; /* govern/governor.h: the rooms that read the options include it */

/* A job killed this many times is not tried again: its failure goes to the build tool. */
#define GOV_MAX_RETRIES 4
/* How often the loop saves what finished jobs taught (learned_save_soon). */
#define LEARNED_SAVE_EVERY_MS 1000

enum job_state { JOB_IDLE, JOB_WAITING, JOB_RUNNING };

struct job {
	int id;
	enum job_state state;
	struct proto_conn conn;
	char *tool, *src, *class_key, *sig_key;
	int attempt;
	pid_t pid;                  /* the tool, leader of the job's process group, learned from the
	                             * kernel (job_sample_all, job_signal); 0 until found */
	pid_t launcher_pid;         /* the launcher at the socket's other end (SO_PEERCRED) */
	int tree;                   /* found in the process tree (--tree), not through a launcher */
	int cached, check;          /* through a compiler cache; a configure check (job_sig's) */
	int saw_compiler;           /* a compiler process was seen below it (looked for when cached) */
	const char *not_learned;    /* why this run's curve is not learned (job_seen_untrue), or NULL */
	int64_t t_request_ms, t_admit_ms; /* since the epoch of now_ms() */
	int64_t t_told_ms;          /* when its waiting launcher last heard from us */
	int frozen;
	int64_t frozen_at_ms, frozen_total_ms;
	int64_t wait_memory_ms, wait_slot_ms; /* this wait so far (job_note_tick), not yet reported */
	enum report_held held_by;   /* what last held it (admit_waiting, job_hold_all) */
	int64_t held_ms[REPORT_HELD_N]; /* wait_memory_ms by what held it */
	const struct curve *pred;   /* points into the learned cache or at twins; NULL when unknown */
	int pred_own;               /* pred is its own signature's profile */
	struct curve twins;         /* the mean of its twins' profiles, when pred points here */
	struct curve_sample *samples;
	size_t nsamples, capsamples;
	uint64_t current_bytes, peak_bytes;
	uint64_t growth_bytes_per_s;  /* over the last tick; 0 when shrinking */
	uint64_t frozen_growth_bytes_per_s; /* frozen: how fast it grew in the tick before */
	int passed_peak;            /* admit_passed_peak() said so once: kept for this run */
	int killed_by_us;
	uint64_t oom_at_admit;
	struct cgroup cg;           /* the job's own group, version NONE when there is none */
	pid_t *grouped;             /* its processes moved into cg so far */
	size_t ngrouped, capgrouped;
};

/* A signature profile the store knows of a class: its key and peak. */
struct class_file {
	char *key;                  /* owned */
	const char *name;           /* the source's file name, in key */
	uint64_t peak_bytes;
};

struct learned {
	enum profile_kind kind;
	char *key;
	int known;
	int provisional;            /* a class not known yet: p.curve is admit_provisional()'s */
	struct profile p;
	/* a class: the store's profiles of its files, sorted by file name (for twins), read
	 * once when first needed (files_read) */
	struct class_file *files;
	size_t nfiles, capfiles;
	int files_read;
};

struct gov {
	const struct governor_opts *o;
	int listen_fd, sig_fd;
	int ep_fd;                  /* epoll: the listening socket, the signals, each launcher */
	char *sock_dir, *sock_path;
	struct job **jobs;
	size_t njobs, capjobs;
	int next_id;
	struct learned **cache;
	size_t ncache, capcache;
	struct cgroup cg;           /* the group headroom runs in; version NONE without one */
	int cg_limited;
	int job_groups;             /* jobs get child groups of cg */
	struct cgroup_peak_mark peak_mark; /* cg's peak when the build started: the report's is since */
	uint64_t limit_bytes, reserve_bytes, budget_bytes;
	uint64_t seen_peak_bytes;   /* the largest peak a job of this build passed; 0: none yet */
	size_t max_conns;           /* launcher connections open at most (descriptors less a spare) */
	int listen_paused;          /* at max_conns: the listening socket is out of the epoll set */
	int mem_unknown;            /* the last read of memory in use failed (warned once) */
	int64_t last_save_ms;       /* learned_save_soon's last try */
	int saves_off;              /* the store cannot be written: no more tries in the loop */
	int64_t longest_done_ms;    /* the longest run of a job of this build that ended; -1: none yet */
	int net_act;                /* the safety net's last decision (enum net_action) */
	enum report_held frozen_by; /* what the last freeze answered: the machine or the budget */
	uint64_t oom_start;
	uint64_t oom_tick;          /* the OOM-kill count read at the last tick */
	uint64_t avail_bytes;       /* memory that could be taken, read at avail_at_ms */
	int64_t avail_at_ms;        /* -1: not read yet */
	char *psi_path;
	pid_t build_pid;
	int build_status, build_done;
	int interrupted;
	int64_t t0_ms, deadline_ms, last_kill_ms;
	uint64_t used_prev;         /* memory in use at the last tick, for its growth rate */
	int64_t t_prev_ms;
	struct proc_table procs;    /* the processes below the governor, read each tick */
	int procs_whole;            /* no children lists here: procs is the whole table */
	struct report rep;
	int tree;                   /* governing the process tree (--tree, or fallen back to it) */
	int found_tree, found_launcher; /* jobs were found in the tree; came through the launcher */
	pid_t *skip;                /* below a build tool, but not jobs: see treescan.c */
	size_t nskip, capskip;
	char self_name[16];         /* our comm, as the launcher processes show it */
	struct jobserver js;        /* style NONE without --jobserver */
	struct progress progress;   /* the live line; fd -1 when off */
	int64_t next_progress_ms;
	char *build_key;            /* directory and command: the store's key for this build */
	struct build_profile last_build; /* jobs 0 when this build was not seen before */
	char *next_class;           /* class of the last job found: what the next token is for */
	int guard_fd;               /* the guardian's pipe; -1 without one */
	pid_t guard_pid;            /* the guardian; 0 without one */
	uint64_t unowned_bytes;     /* what processes the build left below us hold (tree_unowned_bytes) */
	int said_unowned;           /* warned that it alone passes the budget */
	int nice0;                  /* niceness and OOM score adjustment headroom started with, */
	char oom_adj0[16];          /* given back to the build: guard_lock_self() changes ours */
};

/* ---- job.c: the job table, and what is done to a job's processes ---- */

/* A new job in the table, with its connection (fd, or -1 for a job found in the tree). */
struct job *job_new(struct gov *g, int fd);
/* Take job i out of the table and free it; a running job's tool is killed first. */
void job_remove(struct gov *g, size_t i);
void job_free(struct job *j);
/* End what is left in the job's own group and remove it. */
void job_drop_group(struct job *j);
/* Forget the last run's pid, samples and prediction, for the next attempt. */
void job_reset_run(struct job *j);
/* How long it has run, in ms: frozen time left out. */
int64_t job_elapsed(const struct job *j, int64_t now);
/* How long it has been frozen since it was admitted, in ms. */
int64_t job_frozen_ms(const struct job *j, int64_t now);
/* Send sig to the job: its process group, or for a job found in the tree its process
 * and everything below it in g->procs (the last table read). Only to a process group
 * the governor verified as the job's (the launcher's child leading a group of its own,
 * the launcher below the build): when no tick has found it yet, it is looked up now,
 * and a job whose tool cannot be found is not signalled. */
void job_signal(struct gov *g, struct job *j, int sig);
void job_freeze(struct gov *g, struct job *j, int64_t now);
void job_thaw(struct gov *g, struct job *j, int64_t now);
/* Kill it to save memory; its launcher runs it again. */
void job_kill(struct gov *g, struct job *j, int64_t now);
void job_add_sample(struct job *j, int64_t t_ms, uint64_t bytes);
/* A run of the job that ended, for the trace and the record (when either was asked for),
 * whoever found it: a launcher's, or the tree's. exit_code -1: unknown or a signal. */
void job_add_span(struct gov *g, struct job *j, int64_t duration_ms, int exit_code, int retried);
/* A job's end as its launcher reported it (d): run it again, 1, when headroom killed it or
 * the kernel's OOM killer did and it has attempts left (*reason says which, for the ack);
 * else 0, learned when it succeeded, counted failed when it did not; a span either way. */
int job_done(struct gov *g, struct job *j, const struct proto_done *d, int64_t now, const char **reason);
/* The run is over: its group removed, its state idle, ready to be asked for again. */
void job_end_run(struct job *j);
/* Read the running jobs' memory from g->procs (each process counts for the job it is
 * below); dt_ms since the last tick, for their growth. A launcher's job that has run a
 * tick gets a cgroup of its own (where g->job_groups), and each tick its new processes
 * are moved into it: made at admission, a group would cost every job, the many that
 * end within a tick too, a mkdir and an rmdir in the loop. */
void job_sample_all(struct gov *g, int64_t now, int64_t dt_ms);
/* Whether the waiting jobs wait for memory rather than a CPU slot: fewer than the cap
 * run (unfrozen), so admission, a frozen job or the safety net holds them. */
int job_waits_for_memory(const struct gov *g, int running);
/* Every waiting job held, this tick, for why (the net or a frozen job holds them all). */
void job_hold_all(struct gov *g, enum report_held why);
/* The tick's accounting for the report (report_note_tick): each waiting job's wait for
 * memory or a slot, reported once it ends; the frozen; the jobs' memory together and
 * the running job furthest above its prediction. Before the net acts. */
void job_note_tick(struct gov *g, int64_t now, int64_t dt_ms, int running, uint64_t jobs_bytes);

/* ---- learned.c: the profiles the store knows and this build learns ---- */

/* The cached profile of kind and key, read from the store the first time (known 0
 * when there is none yet). Never NULL; the cache owns it and it never moves. */
struct learned *learned_get(struct gov *g, enum profile_kind kind, const char *key);
/* Set j->pred: its own signature's profile, else the mean of its twins' (the same file
 * name in another directory, compiled the same way: job_src_twins()) known so far, else
 * its class's (learned, else provisional), else NULL. A job's twin learned later while it
 * waits or runs updates its prediction (learned_job_done). */
void learned_predict(struct gov *g, struct job *j);
/* j->pred is its class's provisional profile (admit_job's open): no job of the class has
 * ended yet. */
int learned_pred_open(struct gov *g, const struct job *j);
/* After sampling: mark the running jobs that passed their peak, and give each class
 * not known yet its provisional profile from its running jobs. */
void learned_provisional(struct gov *g, int64_t now);
/* A job that ran ran_ms to its end: learn its curve (unless j->not_learned says why
 * not) and count it in the report.
 * maxrss_bytes: its largest process's peak (0: unknown). */
void learned_job_done(struct gov *g, struct job *j, int64_t ran_ms, uint64_t maxrss_bytes);
/* Fold what this build learned into the store, in one transaction, after the loop. */
void learned_save(struct gov *g);
/* While the build runs, at most every LEARNED_SAVE_EVERY_MS: the same, waiting for
 * another process's lock no longer than a lookup does, so that a build killed (SIGKILL,
 * a lost machine) keeps what its finished jobs taught. */
void learned_save_soon(struct gov *g, int64_t now);
void learned_free(struct gov *g);

/* ---- server.c: the launchers' socket ---- */

/* Listen on a new socket in a private directory of runtime_dir(). 0 or -errno. */
int server_open(struct gov *g);
/* Take the launchers' new connections: each a job without a request yet, watched by
 * g->ep_fd with the job as its tag. */
void server_accept(struct gov *g);
/* Take the listening socket out of the loop at the connection cap, back below it. */
void server_listen_again(struct gov *g);
/* Read and act on what job j's launcher sent (its connection polled readable): each
 * whole line (one that is no JSON object, or whose numbers are out of range, is
 * dropped); a launcher that sends a line longer than PROTO_MAX_LINE is hung up on. */
void server_read(struct gov *g, struct job *j, int64_t now);
/* A waiting launcher hears from the governor at least this often (a wait message), so
 * that it can tell a governor that makes it wait from one that stopped answering. */
#define SERVER_TELL_WAITING_MS 5000
/* Send the waiting launchers that have not heard from us for that long a wait. */
void server_tell_waiting(struct gov *g, int64_t now);
/* After the build: take what the launchers sent before they exited (a launcher does
 * not wait for the answer to a job that ended by itself), so every job is counted. */
void server_drain(struct gov *g, int64_t now);
/* Let a waiting job run: admit it (a launcher's) or resume it (a tree job's). */
void server_admit(struct gov *g, struct job *j, int64_t now);

/* ---- treescan.c: jobs found in the process tree ---- */

/* Find the new jobs below the build tools in g->procs (held until admitted), and end
 * the jobs whose process is gone. */
void treescan_run(struct gov *g, int64_t now);
/* Compilers that escaped the launcher: govern the process tree as well from now on. */
void treescan_fallback(struct gov *g);

/* ---- guard.c: process hygiene ---- */

/* Start the guardian, which should headroom die (even by SIGKILL) resumes every stopped
 * process below the build, says on stderr that the build runs on ungoverned, removes
 * the socket's directory, and once the build has ended the shims' (g->o->shim_dir).
 * Returns the pipe end to keep open, or -1. */
int guard_start(struct gov *g);
/* Collect exited children; the build's status goes to g. */
void guard_reap(struct gov *g);
/* End every process below headroom: the jobs first, then anything the build left. */
void guard_kill_everything(struct gov *g);
/* Keep the governor in memory, out of the OOM killer's way and ahead of the compilers
 * for the CPU, where permitted. */
void guard_lock_self(void);

/* ---- governor.c ---- */

/* OOM kills seen so far: our cgroup's, else the machine's. */
uint64_t gov_oom_count(struct gov *g);
/* Are the build's jobs the tree's, which nothing can run again once killed, so that
 * unknown ones are priced with more caution and classes keep their jobs' envelope?
 * Governing the tree beside the launcher, only once a job was found in the tree. */
int gov_tree_jobs(const struct gov *g);
/* Admit the waiting jobs that fit now, the predicted longest first; nothing while the
 * last tick's safety net did not say OK or a job is frozen. Called as soon as a job ends,
 * and as a request arrives (on_request: only while admit_at_once() allows; the tick
 * admits the rest). */
void gov_admit(struct gov *g, int64_t now, int on_request);

#endif
