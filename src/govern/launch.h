/* The launcher's side of the protocol: one compile job run under the governor, as
 * `headroom exec` does for the build tool that called it. */
#ifndef HEADROOM_LAUNCH_H
#define HEADROOM_LAUNCH_H

#include <stdnoreturn.h>

/* The launcher as a program of its own (src/exec_main.c), beside headroom: its file
 * name, which is also its name in the process table (15 bytes at most). */
#define LAUNCH_EXEC_NAME "headroom-exec"
/* The variable `headroom run` sets to the launcher's command, for builds to put first. */
#define LAUNCH_ENV_VAR "HEADROOM_LAUNCHER"

/* Run argv[0] with its arguments in place of this process, ungoverned. Exits 126 or 127
 * when it cannot be run. */
noreturn void launch_direct(char **argv);

/* Run argv as one job under the governor connected on fd (taken over): wait until it
 * admits the job, run it in a process group of its own, report how it ended and how
 * much memory it took, and run it again while the governor says retry. Exits the way
 * the tool last did. Returns only when the governor went away, or said nothing for
 * HEADROOM_GOVERNOR_TIMEOUT, before admitting the job, fd closed: the caller then runs
 * the tool as if ungoverned. */
void launch_governed(char **argv, int fd);

#endif
