/* headroom exec: the launcher that build tools call for each compile job. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "govern/launch.h"
#include "sys/proc.h"
#include "sys/usock.h"
#include "util/log.h"
#include "util/path.h"
#include "util/xalloc.h"

static const char usage[] =
	"usage: headroom exec [--] TOOL [ARGS...]\n"
	"\n"
	"Run one compile job under the governor named by HEADROOM_SOCK (set by\n"
	"`headroom run`): wait until memory admits it, run it, report its memory, and run it\n"
	"again if the governor had to kill it or the kernel OOM-killed it. Without a\n"
	"governor it simply runs TOOL; output and exit status are always TOOL's own.\n"
	"\n"
	"  -h, --help   show this help\n"
	"\n"
	"`headroom-exec [--] TOOL [ARGS...]`, beside headroom, is the same launcher as a\n"
	"small program of its own: `headroom run` points the build at it.\n"
	"\n"
	"Exit status: TOOL's; 126 if TOOL cannot be executed, 127 if it is not found.\n";

/* Run argv as one compile job: under the governor HEADROOM_SOCK names, else directly. */
static noreturn void exec_job(char **argv)
{
	const char *sock = getenv("HEADROOM_SOCK");
	int fd;

	if (!sock || !*sock || getenv("HEADROOM_JOB"))
		launch_direct(argv);
	fd = usock_connect(sock);
	if (fd < 0) {
		log_debug("no governor at %s (%s): running %s directly", sock, strerror(-fd), argv[0]);
		launch_direct(argv);
	}
	launch_governed(argv, fd);
	launch_direct(argv);
}

int cmd_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* "+": stop at the first non-option, which is the tool; its options are its own. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		log_warn("exec: missing the command to run (try: headroom exec -- gcc -c x.c)");
		return EXIT_USAGE;
	}
	exec_job(argv + optind);
}

int cmd_is_shim(const char *argv0)
{
	const char *name = path_base(argv0);

	return !strcmp(name, "cc") || !strcmp(name, "c++");
}

int cmd_shim(int argc, char **argv)
{
	const char *name = path_base(argv[0]);
	const char *real = getenv(!strcmp(name, "c++") ? "HEADROOM_REAL_CXX" : "HEADROOM_REAL_CC");
	char self[4096];
	char **args;

	if (!real || !*real) {
		log_warn("%s: this is headroom's compiler shim, but HEADROOM_REAL_%s is not set: "
		      "run the build under `headroom run`, or call the compiler itself", name,
		      !strcmp(name, "c++") ? "CXX" : "CC");
		return EXIT_NOTFOUND;
	}
	/* Named as the launcher in the process table, not as the compiler the link is
	 * named after: the governor takes a compiler with no launcher above it for one
	 * that escaped. */
	if (!proc_self_exe(self, sizeof(self)))
		prctl(PR_SET_NAME, path_base(self));
	args = xcalloc((size_t)argc + 1, sizeof(*args));
	args[0] = (char *)real;
	for (int i = 1; i < argc; i++)
		args[i] = argv[i];
	exec_job(args);
}
