/* Messages to stderr, prefixed with "headroom: ". */
#ifndef HEADROOM_LOG_H
#define HEADROOM_LOG_H

#include <stdnoreturn.h>

#include "util/exitcode.h"

/* 0 quiet, 1 normal, 2 verbose (-v), 3 debug (HEADROOM_DEBUG=1). */
extern int log_level;

noreturn void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Always; at -v and above; at HEADROOM_DEBUG=1. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
