#include "govern/net.h"

/* The band above the reserve where the net holds is at most this share of the limit. */
#define HOLD_BAND_DIV 16
/* The kernel stalling everything on reclaim: PSI full avg10 over this share of the time is
 * critical whatever free memory says. */
#define PSI_FULL_CRITICAL_PCT 20.0
/* One kill at a time: give the memory a moment to come back. */
#define KILL_GAP_MS 1000
/* Critical: less than this share of the reserve (1/CRITICAL_RESERVE_DIV) is left. A freeze
 * stops growth but frees nothing, and the net looks one reaction ahead: below a third the
 * next tick may already be past the limit. */
#define CRITICAL_RESERVE_DIV 3

uint64_t net_default_reserve(uint64_t limit_bytes)
{
	uint64_t r = limit_bytes / 100 * RESERVE_PCT;

	if (r < RESERVE_MIN_BYTES)
		r = RESERVE_MIN_BYTES;
	if (r > RESERVE_MAX_BYTES)
		r = RESERVE_MAX_BYTES;
	return r;
}

uint64_t net_hold_band(uint64_t limit_bytes, uint64_t reserve_bytes)
{
	return reserve_bytes < limit_bytes / HOLD_BAND_DIV ? reserve_bytes : limit_bytes / HOLD_BAND_DIV;
}

enum net_action net_decide(const struct net_state *s)
{
	uint64_t avail = s->limit_bytes > s->used_bytes ? s->limit_bytes - s->used_bytes : 0;
	uint64_t rise = s->growth_bytes_per_s / 1000 * NET_LOOKAHEAD_MS;
	uint64_t soon = avail > rise ? avail - rise : 0;

	/* Critical: a third of the reserve left, or the limit reached within the lookahead
	 * while already inside the reserve, or the kernel stalling everything on reclaim.
	 * One kill at a time: give the memory a moment to come back. */
	if (avail < s->reserve_bytes / CRITICAL_RESERVE_DIV || (soon == 0 && avail < s->reserve_bytes) ||
	    (s->psi_full_avg10_pct >= 0 && s->psi_full_avg10_pct > PSI_FULL_CRITICAL_PCT))
		return s->ms_since_last_kill >= KILL_GAP_MS ? NET_KILL : NET_FREEZE;
	if (soon < s->reserve_bytes)
		return NET_FREEZE;
	if (soon < s->reserve_bytes + net_hold_band(s->limit_bytes, s->reserve_bytes))
		return NET_HOLD;
	return NET_OK;
}

enum net_action net_apply_budget(enum net_action act, uint64_t jobs_bytes, uint64_t budget_bytes)
{
	return act == NET_OK && jobs_bytes > budget_bytes ? NET_FREEZE : act;
}

int net_thaw_stalled(uint64_t running_growth_bytes, uint64_t frozen_growth_bytes, uint64_t avail_bytes,
		     uint64_t reserve_bytes)
{
	uint64_t room = avail_bytes > reserve_bytes ? avail_bytes - reserve_bytes : 0;

	return room && running_growth_bytes <= room / STALL_ROOM_DIV &&
	       running_growth_bytes + frozen_growth_bytes <= room / 2;
}

int net_requeue_frozen(int64_t frozen_ms, int64_t ran_ms, int killed_before, int64_t ms_since_last_kill)
{
	return !killed_before && ms_since_last_kill >= KILL_GAP_MS && frozen_ms >= STALL_REQUEUE_MIN_MS &&
	       frozen_ms >= ran_ms;
}

uint64_t net_lookahead_growth(uint64_t bytes_per_s)
{
	return bytes_per_s / 1000 * NET_LOOKAHEAD_MS;
}

int net_freeze_done(int frozen, int running, uint64_t growth_bytes, uint64_t avail_bytes, uint64_t reserve_bytes)
{
	uint64_t room = avail_bytes > reserve_bytes / 2 ? avail_bytes - reserve_bytes / 2 : 0;

	return running <= 1 || (frozen && growth_bytes <= room);
}
