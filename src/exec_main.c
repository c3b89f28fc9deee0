/* headroom-exec: the launcher alone, the same as `headroom exec`, as a small program of
 * its own. A build starts one per compile job, so its start-up is paid per job: linked
 * statically against what the launcher needs and no more, it maps no shared library and
 * relocates nothing, where headroom loads libc, libm, jansson and SQLite first.
 * `headroom run` points the build at it when it lies beside headroom. */
#include "cmd/cmd.h"
#include "util/log.h"

int main(int argc, char **argv)
{
	log_level_from_env();
	/* the cc and c++ shims of a python build link here */
	if (cmd_is_shim(argv[0]))
		return cmd_shim(argc, argv);
	return cmd_exec(argc, argv);
}
