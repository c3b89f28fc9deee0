/* A learned job profile: what headroom knows of one job signature or one class of
 * jobs. Stored by store/, learned and used by govern/. */
#ifndef HEADROOM_PROFILE_H
#define HEADROOM_PROFILE_H

#include <stdint.h>

#include "profile/curve.h"

/* A job signature (one file compiled one way) or a class (a tool with its
 * memory-relevant flags, shared by every file compiled that way). */
enum profile_kind { PROFILE_SIG = 0, PROFILE_CLASS = 1 };

/* The most runs a profile counts: a stored profile stops counting there (merging two
 * fleets' exports may not pass it), and an import refuses more. */
#define PROFILE_MAX_RUNS 1000000000LL

struct profile {
	int64_t runs;         /* completed jobs folded in */
	struct curve curve;   /* learned envelope: duration, peak, points */
	int64_t updated_s;    /* unix time of the last update */
};

#endif
