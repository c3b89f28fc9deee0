/* What the user saw, as an anchor for a plan: PyTorch's CUDA out-of-memory message (its
 * figures read from the text as PyTorch prints it, in any of the versions' wordings) or
 * a peak the user observed for these settings. The plan is then said beside it: how far
 * its point estimate is from what the run held, what the card lacked, and what recovers
 * it. Pure: text and structs in, structs out. */
#ifndef HEADROOM_PLAN_ANCHOR_H
#define HEADROOM_PLAN_ANCHOR_H

#include <stddef.h>
#include <stdint.h>

#include "plan/shape.h"

/* The figures of an out-of-memory message; each may be absent (an older PyTorch, or a
 * message cut short), never 0 for unknown. */
enum oom_figure {
	OOM_ASKED,         /* "Tried to allocate X" */
	OOM_TOTAL,         /* the GPU's total capacity */
	OOM_FREE,          /* free on the GPU when it failed */
	OOM_IN_USE,        /* "this process has X memory in use" (non-PyTorch memory included) */
	OOM_ALLOCATED,     /* allocated by PyTorch (older: "already allocated") */
	OOM_RESERVED_FREE, /* reserved by PyTorch but unallocated (older: reserved less allocated) */
	OOM_RESERVED,      /* older versions' "reserved in total by PyTorch" (or "cached") */
	OOM_NFIGURES
};

struct oom_message {
	uint64_t bytes[OOM_NFIGURES];
	unsigned known;    /* bit 1 << figure for each figure read */
	unsigned derived;  /* bit 1 << figure for each figure worked out from others */
	int gpu;           /* "GPU N", or -1 */
};

#define OOM_KNOWN(o, f) (((o)->known >> (f)) & 1u)

/* The figure's name as JSON keys and text say it: "asked", "reserved_free"... */
const char *oom_figure_key(enum oom_figure f);

/* The last CUDA out-of-memory message in text (n bytes, any NULs), its figures into *o:
 * 0, -ENOENT when there is none, -ERANGE with *why when a figure is past the planner's
 * limits. */
int oom_parse(const char *text, size_t n, struct oom_message *o, const char **why);

/* An anchor: the message's figures, or an observed peak, or both. */
struct anchor {
	int has_oom;
	struct oom_message oom;
	int has_observed;
	uint64_t observed_bytes;
};

/* The plan beside its anchor. Every figure has its has_ flag: absent, never 0. */
struct anchor_answer {
	int has_peak;
	uint64_t peak_bytes;      /* what the run held: the observed peak, or at least the
				   * message's in use plus what it asked for */
	int peak_is_least;        /* peak_bytes is a lower bound (from the message) */
	int has_offset;
	int64_t offset_bytes;     /* peak_bytes less the plan's likely layout */
	int has_short;
	uint64_t short_bytes;     /* asked less free: what the card lacked (0: it had it) */
	int expandable;           /* expandable segments would likely have served it */
	uint64_t reserved_free_bytes;
	int has_buffer;           /* dropping items of the largest buffer covers the shortfall */
	char buffer_name[32];
	int64_t buffer_from, buffer_to;
	uint64_t buffer_frees;
};

/* The answer of the plan whose likely layout is likely_bytes, under t's settings (its
 * buffers, its expandable segments), beside a. */
void anchor_answer(const struct anchor *a, uint64_t likely_bytes, const struct train_settings *t,
		   struct anchor_answer *ans);

/* bytes shifted by an offset, clamped to 0 and to UINT64_MAX. */
uint64_t anchor_shift(uint64_t bytes, int64_t offset);

#endif
