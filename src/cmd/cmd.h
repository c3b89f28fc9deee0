/* The subcommands. Each parses its own options and returns the process exit status. */
#ifndef HEADROOM_CMD_H
#define HEADROOM_CMD_H

int cmd_run(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_profiles(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_watch(int argc, char **argv);
/* headroom started as `cc` or `c++` (a shim `headroom run` made): run the real
 * compiler from HEADROOM_REAL_CC / HEADROOM_REAL_CXX through the launcher. */
int cmd_shim(int argc, char **argv);
/* The quick doctor checks before a build; prints only problems, on stderr. */
void doctor_preflight(void);

#endif
