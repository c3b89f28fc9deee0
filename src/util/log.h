/* Messages to stderr, prefixed with "headroom: " and the command's name ("headroom: plan: "),
 * and with the syslog priority ("<4>") before that when stderr is the journal's stream
 * (systemd sets JOURNAL_STREAM to its device:inode), so that journald files each line at
 * its level. */
#ifndef HEADROOM_LOG_H
#define HEADROOM_LOG_H

#include <stdnoreturn.h>

#include "util/exitcode.h"

/* 0 quiet, 1 normal, 2 verbose (-v), 3 debug (HEADROOM_DEBUG=1). */
extern int log_level;
/* Debug level when HEADROOM_DEBUG is set to anything but "" or "0". */
void log_level_from_env(void);

/* The command the messages come from: "headroom: NAME: " before each message that does
 * not begin with "NAME:" itself. A static string, or NULL. */
void log_set_command(const char *name);
/* die() calls fn with its message; what fn returns (a static string), if not NULL, is
 * added to the message: where a value the message names came from. */
void log_set_die_note(const char *(*fn)(const char *msg));
/* die() also prints {"error": MESSAGE, "status": N} on stdout (a --json command). */
void log_set_json_errors(int on);

noreturn void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Always; at -v and above; at HEADROOM_DEBUG=1. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* syslog's priorities (syslog.h's LOG_ERR...), for log_prefix. */
enum log_prio { LOG_PRIO_ERR = 3, LOG_PRIO_WARNING = 4, LOG_PRIO_INFO = 6, LOG_PRIO_DEBUG = 7 };
/* "<N>" for a line of priority prio written to stderr when stderr is the journal's
 * stream; "" otherwise. Decided at the first call. */
const char *log_prefix(enum log_prio prio);

#endif
