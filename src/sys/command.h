/* Running a program to read what it prints: by argv through fork and execvp, never
 * through a shell, so no value (an environment variable, a path) reaches a shell's
 * parser. */
#ifndef HEADROOM_COMMAND_H
#define HEADROOM_COMMAND_H

#include <stddef.h>

/* The most of a program's output that is kept; the rest is read and dropped. */
#define COMMAND_OUTPUT_MAX 65536

/* What argv (argv[0] found on PATH) prints on standard output, at most
 * COMMAND_OUTPUT_MAX - 1 bytes, NUL-terminated; NULL when it printed nothing or could
 * not run. It runs in the directory cwd (NULL: this process's), with standard input and
 * standard error on /dev/null; it is waited for. Caller frees. */
char *command_output(char *const argv[], const char *cwd);
/* The first line of command_output (without its newline), or NULL when it is empty. */
char *command_first_line(char *const argv[], const char *cwd);

#endif
