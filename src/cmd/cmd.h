/* The subcommands. Each parses its own options and returns the process exit status. */
#ifndef HEADROOM_CMD_H
#define HEADROOM_CMD_H

#include <stdnoreturn.h>

int cmd_run(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_profiles(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_stats(int argc, char **argv);
/* headroom started as `cc` or `c++` (a shim `headroom run` made): run the real
 * compiler from HEADROOM_REAL_CC / HEADROOM_REAL_CXX through the launcher. */
int cmd_shim(int argc, char **argv);
/* Whether argv0 names a shim (cc or c++): then main runs cmd_shim. */
int cmd_is_shim(const char *argv0);
/* The quick doctor checks before a build; prints only problems, on stderr. */
void doctor_preflight(void);

/* The JSON in the file at path ("-": standard input) for command cmd, or die saying
 * what is wrong: no such file (and a Hugging Face hub id given for one), a directory,
 * empty, not JSON (where). The caller owns the result. */
typedef struct json_t json_t;
json_t *json_file_load(const char *cmd, const char *path);
/* Bytes from outside (a directory, a profile's key) as JSON: o[name] shows them
 * (esc_utf8: each byte that is not UTF-8 as \xHH), and where they are not UTF-8,
 * o[name + "_hex"] gives them exactly. */
void json_set_bytes(json_t *o, const char *name, const char *s);
/* An option getopt_long refused (returned '?'; main.c sets opterr to 0): one line that
 * says what was wrong, the nearest known option and `headroom CMD --help`; exits 2. */
struct option;
noreturn void opt_refused(const char *cmd, const struct option *opts, char **argv);
/* A size option's bare number (rc -EDOM from size_parse/parse_size) refused, saying what
 * to write instead ("run: --budget: '10' has no unit: 10 what? 10G is 10 GiB, ..."), unit
 * the letter likeliest meant; any other rc returns, for the option's own message. */
void opt_size_unit(const char *cmd, const char *option, const char *arg, int rc, char unit);

#endif
