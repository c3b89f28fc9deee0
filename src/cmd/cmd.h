/* The subcommands. Each parses its own options and returns the process exit status. */
#ifndef HEADROOM_CMD_H
#define HEADROOM_CMD_H

int cmd_run(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_profiles(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
/* The quick doctor checks before a build; prints only problems, on stderr. */
void doctor_preflight(void);

/* Exit status for a child's wait status: its exit code, or 128 + signal. */
int cmd_status_of(int wstatus);

#endif
