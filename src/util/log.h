/* Messages to stderr, prefixed with "headroom: ". */
#ifndef HEADROOM_LOG_H
#define HEADROOM_LOG_H

#include <stdnoreturn.h>

/* Exit codes of headroom itself (a governed build's own status passes through). */
enum {
	EXIT_USAGE = 2,      /* bad option or argument */
	EXIT_INTERNAL = 125, /* headroom could not do its job (store, socket, fork) */
	EXIT_NOEXEC = 126,   /* the command exists but could not be executed */
	EXIT_NOTFOUND = 127, /* the command was not found */
};

/* 0 quiet, 1 normal, 2 verbose (-v), 3 debug (HEADROOM_DEBUG=1). */
extern int log_level;

noreturn void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void infox(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void debugx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
