/* headroom-exec: the launcher alone, the same as `headroom exec`, as a small program of
 * its own. A build starts one per compile job, so its start-up is paid per job: linked
 * statically against what the launcher needs and no more, it maps no shared library and
 * relocates nothing, where headroom loads libc, libm, jansson and SQLite first.
 * `headroom run` points the build at it when it lies beside headroom. */
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "util/log.h"
#include "util/path.h"

int main(int argc, char **argv)
{
	const char *dbg = getenv("HEADROOM_DEBUG");
	const char *name = path_base(argv[0]);

	if (dbg && *dbg && strcmp(dbg, "0"))
		log_level = 3;
	/* the cc and c++ shims of a python build link here */
	if (!strcmp(name, "cc") || !strcmp(name, "c++"))
		return cmd_shim(argc, argv);
	return cmd_exec(argc, argv);
}
