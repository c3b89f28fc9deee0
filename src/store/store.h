/* Learned job profiles, kept in SQLite so that the next build starts from knowledge.
 * Two kinds of key: a job signature (one file compiled one way) and a class (a tool
 * with its memory-relevant flags, shared by every file compiled that way). */
#ifndef HEADROOM_STORE_H
#define HEADROOM_STORE_H

#include <stdint.h>

#include "profile/profile.h"

struct store;

/* The default path: $XDG_STATE_HOME/headroom/profiles.db, else ~/.local/state/...
 * Caller frees. */
char *store_default_path(void);
/* Open (creating the file and its directory if needed). 0 or -errno; *err gets a
 * message for the user (caller frees) when it fails. */
int store_open(const char *path, struct store **out, char **err);
void store_close(struct store *st);
/* 0 found, -ENOENT not known, other -errno on failure. */
int store_get(struct store *st, enum profile_kind kind, const char *key, struct profile *out);
int store_put(struct store *st, enum profile_kind kind, const char *key, const struct profile *p);
/* Call fn for every profile whose key contains substr ("" for all), in key order.
 * fn returns 0 to go on. Returns 0 or -errno. */
int store_each(struct store *st, const char *substr,
	       int (*fn)(enum profile_kind kind, const char *key, const struct profile *p, void *arg), void *arg);
/* Forget the profiles whose key contains substr ("" for all). Returns how many, or -errno. */
int store_forget(struct store *st, const char *substr);

/* A whole build (one command in one directory), for the progress line's total and ETA. */
struct build_profile {
	int64_t runs;         /* builds folded in */
	int64_t jobs;         /* jobs of the last complete build */
	int64_t wall_ms;      /* its wall time */
};

/* 0 found, -ENOENT not known, other -errno on failure. */
int store_build_get(struct store *st, const char *key, struct build_profile *out);
int store_build_put(struct store *st, const char *key, const struct build_profile *b);

/* What `headroom probe` measured on one GPU and driver (JSON text). value: caller frees.
 * 0, -ENOENT when not probed, other -errno. */
int store_probe_get(struct store *st, const char *key, char **value);
int store_probe_put(struct store *st, const char *key, const char *value);

int store_begin(struct store *st);
int store_commit(struct store *st);

#endif
