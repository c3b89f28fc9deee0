/* Exit codes of headroom itself (a governed build's own status passes through). */
#ifndef HEADROOM_EXITCODE_H
#define HEADROOM_EXITCODE_H

enum {
	EXIT_USAGE = 2,      /* bad option or argument */
	EXIT_AT_RISK = 3,    /* plan: between fits and does not fit (placement decides) */
	EXIT_INTERNAL = 125, /* headroom could not do its job (store, socket, fork) */
	EXIT_NOEXEC = 126,   /* the command exists but could not be executed */
	EXIT_NOTFOUND = 127, /* the command was not found */
};

/* The exit status a shell would give for a child's wait status: its exit code, or
 * 128 + the signal that ended it; EXIT_INTERNAL for anything else. */
int exit_status_of(int wstatus);

#endif
