/* The safety net: pure policy on what memory really is, not on predictions. */
#ifndef HEADROOM_NET_H
#define HEADROOM_NET_H

#include <stdint.h>

enum net_action {
	NET_OK = 0,        /* nothing to do; may thaw */
	NET_HOLD,          /* admit nothing more */
	NET_FREEZE,        /* freeze the youngest running job */
	NET_KILL,          /* kill the youngest job and requeue it */
};

struct net_state {
	uint64_t limit_bytes;       /* the limit that applies (cgroup or RAM) */
	uint64_t used_bytes;        /* charged against it now */
	uint64_t reserve_bytes;     /* kept free for the rest of the machine */
	double psi_full_avg10_pct;  /* < 0 when unknown */
	int64_t ms_since_last_kill; /* since headroom last killed a job */
	uint64_t growth_bytes_per_s; /* how fast used_bytes rose over the last tick; 0 if falling */
};

/* How far ahead the net looks along the current growth: one reaction (a tick, a freeze
 * taking effect) must not be able to run past the limit. */
#define NET_LOOKAHEAD_MS 500

/* NET_HOLD while what is free, less the growth over the lookahead, is within this band
 * above the reserve: the reserve again (a default reserve's band), at most a sixteenth of
 * the limit, so that a large --reserve narrows what the jobs get, not stops them. */
uint64_t net_hold_band(uint64_t limit_bytes, uint64_t reserve_bytes);
enum net_action net_decide(const struct net_state *s);
/* The jobs over their budget (a --budget below the machine's limit) are short of
 * memory too: an OK becomes a freeze. */
enum net_action net_apply_budget(enum net_action act, uint64_t jobs_bytes, uint64_t budget_bytes);
/* Freezing for growth, one youngest job after another: stop once one is frozen and
 * what the unfrozen jobs grow by over NET_LOOKAHEAD_MS fits in what is free above half
 * the reserve, and never freeze the last runner. growth_bytes: net_lookahead_growth()
 * summed over the jobs still running. */
int net_freeze_done(int frozen, int running, uint64_t growth_bytes, uint64_t avail_bytes, uint64_t reserve_bytes);
/* A build stalled on its frozen jobs: they hold most of the memory, the jobs still
 * running are in their long low tails and grow by little, and admit_thaw_fits() waits for
 * room that only the frozen jobs could give back (a class's curve, made of its jobs that
 * peak sooner, predicts a frozen job far above what it will still take; under NET_HOLD
 * nothing is thawed at all). Thaw the oldest frozen job all the same, while the net holds
 * or says OK, when the running jobs' growth over NET_LOOKAHEAD_MS (running_growth_bytes)
 * is at most 1/STALL_ROOM_DIV of what is free above the reserve, and that growth with the
 * frozen job's own, at the rate it grew before it was frozen (frozen_growth_bytes), at
 * most half: the net, looking as far ahead each tick, freezes it again before the
 * reserve. */
#define STALL_ROOM_DIV 4
int net_thaw_stalled(uint64_t running_growth_bytes, uint64_t frozen_growth_bytes, uint64_t avail_bytes,
		     uint64_t reserve_bytes);
/* A build stalled on its frozen jobs that no thaw moves on (they hold the memory they
 * wait for, beside a runner in its long tail): a frozen job that has been frozen at least
 * as long as it has run, and at least STALL_REQUEUE_MIN_MS, is killed and asked for
 * again, once per job and one kill at a time. Waiting has by then cost the build more
 * than redoing the job's work will (rent or buy), and the memory it gives back lets the
 * others move. The caller picks, of the frozen jobs this allows, the one that ran least.
 * The minimum is about the time a compile job's peak takes to pass: a job frozen at its
 * start through one other job's peak is not stalled, and redoing it costs little anyway. */
#define STALL_REQUEUE_MIN_MS 10000
int net_requeue_frozen(int64_t frozen_ms, int64_t ran_ms, int killed_before, int64_t ms_since_last_kill);
/* What a job growing at bytes_per_s adds over NET_LOOKAHEAD_MS. */
uint64_t net_lookahead_growth(uint64_t bytes_per_s);
/* The default reserve: this share of the limit, kept free for the rest of the machine, at
 * least enough for a shell and sshd to work, at most what a large machine's other
 * processes need (a larger one only narrows the jobs' room). */
#define RESERVE_PCT 6
#define RESERVE_MIN_BYTES (64ULL << 20)
#define RESERVE_MAX_BYTES (2ULL << 30)
/* The reserve headroom keeps free below a limit by default: RESERVE_PCT of it, between
 * RESERVE_MIN_BYTES and RESERVE_MAX_BYTES. */
uint64_t net_default_reserve(uint64_t limit_bytes);

#endif
