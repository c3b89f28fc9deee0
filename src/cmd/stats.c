/* headroom stats: placeholder until the store keeps governed builds. */
#include "cmd/cmd.h"
#include "util/log.h"

int cmd_stats(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	die(EXIT_USAGE, "stats: not yet");
}
