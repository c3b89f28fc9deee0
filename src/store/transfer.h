/* Profiles that travel: a store's profiles as versioned JSON, so that what one machine
 * learned seeds another (a team, a CI fleet).
 *
 * Keys carry no absolute path. A class key ("tool flags") has none. A signature key
 * ("tool flags :: source") names its source as the build gave it; an absolute source
 * under the root (the checkout's top directory) is written relative to it and marked
 * "root_relative", and an import puts its own root back in front, so a profile learned
 * in /home/a/proj matches the same file built in /ci/work/proj. A signature whose source
 * lies outside the root is left out (its class still travels). */
#ifndef HEADROOM_TRANSFER_H
#define HEADROOM_TRANSFER_H

#include <stdio.h>

#include "store/store.h"

#define TRANSFER_FORMAT "headroom-profiles/1"

/* What an import takes at most: the file is read whole into memory, where it takes
 * several times its size, so its size is bounded before and while it is read. A
 * profile exports as about 1 KB (its 64-point curve most of it), so a file this size
 * holds this many profiles of a large store's; an export past either says so. */
#define TRANSFER_MAX_MIB 64
#define TRANSFER_MAX_BYTES ((long long)TRANSFER_MAX_MIB * 1024 * 1024)
#define TRANSFER_MAX_PROFILES 65536

struct transfer_counts {
	int written;  /* export: profiles written */
	int skipped;  /* export: left out, their key holding an absolute path */
	int added;    /* import: profiles the store did not know */
	int merged;   /* import: folded into a profile it knew (store_merge) */
	int refused;  /* export: left out, as an import would refuse it (a key not UTF-8 or
			 with a control character, a field out of its range) */
	char refused_why[256]; /* the first of those: its key, and what an import would say */
	long long bytes; /* export: bytes written */
};

/* Write every profile of st to f that transfer_import accepts: each is checked by the
 * import's own reader (runs past PROFILE_MAX_RUNS are written as that). root: an
 * absolute directory. 0 or -errno. */
int transfer_export(struct store *st, FILE *f, const char *root, struct transfer_counts *n);
/* Read f (named name in messages; TRANSFER_MAX_BYTES at most, TRANSFER_MAX_PROFILES
 * profiles, a regular file's size checked before it is read), check every field, then merge all its profiles into
 * st in one transaction: all or nothing. 0; -EINVAL for bad input, -errno for a store
 * that failed; *err says which file and which field (caller frees). */
int transfer_import(struct store *st, FILE *f, const char *name, const char *root, struct transfer_counts *n,
		    char **err);

#endif
