/* What the watchdog reads of one process: its environment, its pid inside its
 * container, whether it still runs. root is "" for the live system or a fixture tree. */
#ifndef HEADROOM_PROCINFO_H
#define HEADROOM_PROCINFO_H

#include <stddef.h>
#include <sys/types.h>

/* /proc/PID/environ (NUL-separated KEY=VALUE strings) into buf, at most size-1 bytes,
 * NUL-terminated. Returns the bytes read or -errno. */
long procinfo_environ(const char *root, pid_t pid, char *buf, size_t size);

/* NVML gives host pids; a process in a container has another pid there: the last of
 * NSpid in /proc/PID/status (when headroom sees the host's pid namespace). *inner is
 * that pid, or 0 when it is the same or not known. 0 or -errno. */
int procinfo_container_pid(const char *root, pid_t pid, pid_t *inner);
/* The same from the text of a status file (modified: its NSpid line is cut at its end).
 * 0 when it is the same or not there. */
pid_t procinfo_parse_nspid(char *status, pid_t pid);

/* The real uid of pid (the first number of /proc/PID/status's Uid line): who started
 * it. 0 or -errno (-EINVAL: no such line). */
int procinfo_uid(const char *root, pid_t pid, uid_t *uid);
/* The same from the text of a status file. */
int procinfo_parse_uid(const char *status, uid_t *uid);

/* Is pid still running (its stat readable, not a zombie, not dead)? */
int procinfo_running(const char *root, pid_t pid);

/* pid's start time (clock ticks after boot, stat's starttime): it tells the process
 * from a later one given the same pid. 0 or -errno. */
int procinfo_start_ticks(const char *root, pid_t pid, unsigned long long *ticks);
/* How a process ended that its parent has not reaped yet (a zombie): *wstatus as
 * waitpid gives it (stat's exit_code, Linux 3.5). 0; -ESRCH when it is no zombie
 * (running, or reaped: then nothing here tells); -EINVAL when stat has no exit_code. */
int procinfo_exit_status(const char *root, pid_t pid, int *wstatus);

#endif
