/* headroom: keep machine-learning work inside its memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <getopt.h>

#include "cmd/cmd.h"
#include "cmd/config.h"
#include "util/log.h"
#include "util/suggest.h"

#define HEADROOM_VERSION "0.1.0"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
} commands[] = {
	{ "run", cmd_run, "run a build, admitting its compile jobs by memory" },
	{ "exec", cmd_exec, "the launcher build tools call for each compile job" },
	{ "doctor", cmd_doctor, "check the machine before a big build (memory, leftovers, CUDA, tools)" },
	{ "plan", cmd_plan, "predict a training run's peak GPU memory; solve for the knob that fits" },
	{ "probe", cmd_probe, "measure this GPU's CUDA context and PyTorch overhead for plan" },
	{ "watch", cmd_watch, "watch GPU and host memory: margins, time-to-OOM, jobs that lost ranks" },
	{ "profiles", cmd_profiles, "list, show and forget what headroom learned about jobs" },
	{ "stats", cmd_stats, "what headroom has done for your builds: jobs, freezes, OOMs avoided, time saved" },
	{ "config", cmd_config, "the settings in force (files, HEADROOM_* variables) and where each came from" },
};

/* Whether the command's own options (those before "--") ask for JSON: its errors are
 * JSON then too. */
static int wants_json(int argc, char **argv)
{
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return 1;
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: headroom COMMAND [OPTIONS] [ARGS...]\n\ncommands:\n", f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].what);
	fputs("\n`headroom COMMAND --help` describes each. `headroom --version` prints the version.\n", f);
}

int main(int argc, char **argv)
{
	log_level_from_env();
	if (cmd_is_shim(argv[0]))
		return cmd_shim(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("headroom %s\n", HEADROOM_VERSION);
		return 0;
	}
	/* the commands say what was wrong with an option (opt_refused), not getopt */
	opterr = 0;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		int n = argc - 1;
		char **args = argv + 1;
		log_set_command(commands[i].name);
		log_set_json_errors(wants_json(argc, argv));
		if (commands[i].fn == cmd_exec || commands[i].fn == cmd_config)
			return commands[i].fn(n, args);
		args = config_inject(&n, args);
		int rc = commands[i].fn(n, args);
		config_inject_release(args);
		return rc;
	}
	const char *names[sizeof(commands) / sizeof(commands[0])];
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		names[i] = commands[i].name;
	const char *near = suggest_closest(argv[1], names, sizeof(names) / sizeof(names[0]));
	log_warn("unknown command '%s'%s%s%s try 'headroom --help'", argv[1], near ? "; did you mean " : ";",
		 near ? near : "", near ? "?" : "");
	return EXIT_USAGE;
}
