/* Learned job profiles, kept in SQLite so that the next build starts from knowledge.
 * Two kinds of key: a job signature (one file compiled one way) and a class (a tool
 * with its memory-relevant flags, shared by every file compiled that way). */
#ifndef HEADROOM_STORE_H
#define HEADROOM_STORE_H

#include <stdint.h>

#include "profile/gpuprobe.h"
#include "profile/profile.h"

struct store;

/* Sharing. Several builds (and `headroom profiles`) may use one store at once. The file
 * is in WAL mode, so reads never wait for a writer; writes take the write lock for one
 * short transaction and wait at most STORE_WAIT_MS for it (store_flush_within: less).
 * What a build learns is folded into the stored row inside that transaction (read,
 * curve_learn, write), so builds that share a store merge what they learned instead of
 * overwriting each other. A store
 * another process keeps locked past the wait is not waited on again by this handle:
 * its later writes fail at once with -EBUSY. */
#define STORE_WAIT_MS 5000
/* What one lookup by the governor's loop may wait (store_get): a lock held that long
 * means the store is not read again by this handle, so lookups never add up. */
#define STORE_LOOKUP_WAIT_MS 50

/* The default path: $XDG_STATE_HOME/headroom/profiles.db, else ~/.local/state/...
 * Caller frees. */
char *store_default_path(void);
/* Every store headroom writes has this SQLite application_id ("HdRm"); a file with
 * another is not touched. */
#define STORE_APPLICATION_ID 0x4864526d

/* Open for reading: nothing of the file is changed, so a store that cannot be written
 * (read-only, a full disk) is still read. The first write (store_flush, store_begin,
 * store_forget, store_build_put, store_probe_add) reopens it for writing, making the
 * file and its directory when there is none yet; that write fails then with -EROFS,
 * -EACCES, -ENOSPC... and what was read stays. A file that is not headroom's (its
 * application_id, or for a store made before there was one its schema and tables, say
 * so) is refused without a write: -EMEDIUMTYPE. Also -EBUSY when another process kept it
 * locked past STORE_WAIT_MS, other -errno; *err gets a message for the user (caller
 * frees) when it fails. */
int store_open(const char *path, struct store **out, char **err);
/* Close; observations still queued (store_learn) are dropped. */
void store_close(struct store *st);
/* A lookup, cheap enough for the governor's loop (see STORE_LOOKUP_WAIT_MS).
 * 0 found, -ENOENT not known, -EBUSY locked, other -errno on failure. */
int store_get(struct store *st, enum profile_kind kind, const char *key, struct profile *out);
/* Queue one observed job for the profile of kind and key, to be folded in by
 * store_flush as curve_learn(profile, seen, first, keep_pct, floor) with runs + 1.
 * No I/O: the governor's loop may call it. */
void store_learn(struct store *st, enum profile_kind kind, const char *key, const struct curve *seen,
		 int keep_pct, int floor);
/* Fold every queued observation into the stored rows, in one transaction. 0, -EBUSY
 * when another process kept the store locked (the queue is kept), other -errno. */
int store_flush(struct store *st);
/* The same while a build runs: waits at most wait_ms for another process's lock, and
 * then gives up with -EBUSY, the queue kept, later writes still allowed. */
int store_flush_within(struct store *st, int wait_ms);
/* Inside store_begin/store_commit: merge a profile learned elsewhere into the one stored
 * for kind and key (curve_merge: a signature keeps the envelope, a class the
 * runs-weighted mean; runs add up, to PROFILE_MAX_RUNS at most), or store it as it is
 * when there is none (*added 1).
 * 0 or -errno. */
int store_merge(struct store *st, enum profile_kind kind, const char *key, const struct profile *p, int *added);
/* Call fn for every profile whose key contains substr ("" for all), in key order.
 * fn returns 0 to go on. Returns 0 or -errno. */
int store_each(struct store *st, const char *substr,
	       int (*fn)(enum profile_kind kind, const char *key, const struct profile *p, void *arg), void *arg);
/* Call fn for each signature profile of the class class_key (keys "class_key :: src"),
 * with its key and peak, in key order: a range of the primary key, not a scan of the
 * table. fn returns 0 to go on. Returns 0 or -errno. */
int store_each_file(struct store *st, const char *class_key,
		    int (*fn)(const char *key, uint64_t peak_bytes, void *arg), void *arg);
/* Forget the profiles whose key contains substr ("" for all). Returns how many, or -errno. */
int store_forget(struct store *st, const char *substr);

/* A write transaction: 0, -EBUSY (locked past the wait), -EIO. */
int store_begin(struct store *st);
int store_commit(struct store *st);
void store_rollback(struct store *st);

/* A whole build (one command in one directory), for the progress line's total and ETA. */
struct build_profile {
	int64_t runs;         /* builds folded in */
	int64_t jobs;         /* jobs of the last complete build */
	int64_t wall_ms;      /* its wall time */
};

/* 0 found, -ENOENT not known, other -errno on failure. */
int store_build_get(struct store *st, const char *key, struct build_profile *out);
int store_build_put(struct store *st, const char *key, const struct build_profile *b);

/* One build headroom governed, for `headroom stats`. Values that were not known: -1. */
struct governed_build {
	const char *dir;             /* its working directory */
	const char *command;         /* its command line, words joined by spaces */
	int64_t ended_s;             /* Unix time */
	int64_t wall_ms;
	int exit_status;
	int64_t jobs, compile_jobs;  /* jobs admitted; of them, compile jobs */
	int64_t freezes, kills, retries, oom_kills;
	int64_t jobs_cap;            /* the most jobs at once it asked for (its -jN, the CPUs) */
	int64_t budget_bytes;
	int64_t limit_bytes;         /* the memory limit (RAM or cgroup); -1 unknown (schema < 5) */
	int64_t safe_jobs;           /* the largest fixed -j whose replay fits the budget */
	int64_t plain_peak_bytes;    /* the compile jobs replayed jobs_cap at a time */
	int64_t compile_wall_ms;     /* first compile job's start to the last one's end */
	int64_t safe_fixed_wall_ms;  /* the compile jobs replayed safe_jobs at a time */
};

/* 0 or -errno; store_governed_each calls fn for each build recorded, oldest first (a
 * store older than schema 4 has none), until fn returns non-zero, which it returns. */
int store_governed_add(struct store *st, const struct governed_build *b);
int store_governed_each(struct store *st, int (*fn)(const struct governed_build *b, void *arg), void *arg);

/* What headroom did for the builds of one directory, summed by store_governed_tally. */
struct governed_tally {
	const char *dir;             /* the directory, byte for byte as recorded */
	int64_t builds, jobs, freezes, kills, retries, oom_kills;
	int64_t avoided;             /* builds whose plain_peak_bytes passed their limit_bytes, no OOM kill */
	int64_t saved_ms;            /* safe_fixed_wall_ms less compile_wall_ms, summed over */
	int64_t saved_builds;        /* the builds where both are known, and the limit (schema 5) */
};

/* Call fn for each directory's tally, in the order of its first build (grouped by the
 * database: the table is never read row by row). fn returns non-zero to stop, which is
 * returned; else 0 or -errno. A store older than schema 4 has no build. */
int store_governed_tally(struct store *st, int (*fn)(const struct governed_tally *t, void *arg), void *arg);

/* What `headroom probe` measured: every probe a row (schema 6), a GPU's history. A
 * store of schema 3 to 5 kept one a GPU and driver: they are its first rows. */
int store_probe_add(struct store *st, const struct gpu_probe *p);
/* The newest probe of gpu's GPU (probe_same_gpu: its name, and its UUID where both
 * know one); with_torch: the newest with PyTorch's figure. 0, -ENOENT none, -errno. */
int store_probe_latest(struct store *st, const struct gpu_probe *gpu, int with_torch, struct gpu_probe *out);
/* Call fn for every probe, by GPU name and then oldest first, until fn returns non-zero,
 * which is returned; else 0 or -errno. */
int store_probe_each(struct store *st, int (*fn)(const struct gpu_probe *p, void *arg), void *arg);

#endif
