/* The build governor: runs the build command, serves the launcher protocol, admits
 * jobs by predicted memory, and keeps the machine out of trouble when predictions miss. */
#ifndef HEADROOM_GOVERNOR_H
#define HEADROOM_GOVERNOR_H

#include <stdint.h>

#include "govern/jobserver.h"
#include "store/store.h"

struct governor_opts {
	char **argv;              /* the build command */
	int jobs;                 /* CPU cap: jobs running at once */
	const char *jobs_from;    /* where the cap came from ("build -j8", "MAX_JOBS=4"...), or NULL */
	uint64_t budget_bytes;    /* 0: derive from the limit that applies */
	uint64_t reserve_bytes;   /* 0: net_default_reserve() */
	struct store *store;      /* learned profiles; may be NULL */
	const char *report_path;  /* JSON report, or NULL */
	const char *trace_path;   /* Chrome/Perfetto trace, or NULL */
	const char *record_path;  /* headroom-trace/1 record, or NULL */
	const char *proc_root;    /* "" for the live system */
	const char *shim_dir;     /* the cc/c++ shims' directory, to remove should the governor die; or NULL */
	int quiet;
	int tree;                 /* govern the children of ninja/make found in the process tree */
	int tree_too;             /* the same, beside the launcher (whose jobs the tree leaves alone) */
	enum jobserver_style jobserver; /* serve a make jobserver (implies tree); NONE: not */
	int tick_ms;
};

/* Run the build to its end. Returns the exit status to leave with: the build's own,
 * 128 + signal when headroom was interrupted, or EXIT_INTERNAL. */
int governor_run(const struct governor_opts *o);

#endif
