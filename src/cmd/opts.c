/* An option getopt_long refused, said in one line. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "util/log.h"
#include "util/suggest.h"
#include "util/units.h"

void opt_refused(const char *cmd, const struct option *opts, char **argv)
{
	const char *known[64], *arg = argv[optind - 1];
	size_t n = 0;

	for (const struct option *o = opts; o->name && n < 64; o++)
		known[n++] = o->name;
	if (optopt && !(arg[0] == '-' && arg[1] == '-')) {
		/* a short option: unknown, or its value missing */
		for (const struct option *o = opts; o->name; o++)
			if (o->val == optopt && o->has_arg == required_argument)
				die(EXIT_USAGE, "%s: -%c wants a value (--%s); try 'headroom %s --help'", cmd, optopt, o->name,
				    cmd);
		die(EXIT_USAGE, "%s: unknown option '-%c'; try 'headroom %s --help'", cmd, optopt, cmd);
	}
	char name[128];
	size_t len = strcspn(arg + 2, "=");
	snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1), arg + 2);
	for (const struct option *o = opts; o->name; o++) {
		if (strcmp(o->name, name))
			continue;
		if (o->has_arg == no_argument)
			die(EXIT_USAGE, "%s: --%s takes no value ('%s'); try 'headroom %s --help'", cmd, name, arg, cmd);
		die(EXIT_USAGE, "%s: --%s wants a value; try 'headroom %s --help'", cmd, name, cmd);
	}
	/* a prefix of several options (getopt_long takes an unambiguous one) */
	size_t nmatch = 0;
	for (size_t i = 0; i < n; i++)
		nmatch += !strncmp(known[i], name, len);
	if (len && nmatch > 1)
		die(EXIT_USAGE, "%s: '%s' is the start of %zu options; try 'headroom %s --help'", cmd, arg, nmatch, cmd);
	const char *near = suggest_closest(name, known, n);
	if (near)
		die(EXIT_USAGE, "%s: unknown option '%s'; did you mean --%s? try 'headroom %s --help'", cmd, arg, near, cmd);
	die(EXIT_USAGE, "%s: unknown option '%s'; try 'headroom %s --help'", cmd, arg, cmd);
}

void opt_size_unit(const char *cmd, const char *option, const char *arg, int rc, char unit)
{
	char hint[256];

	if (rc == -EDOM)
		die(EXIT_USAGE, "%s: %s: %s", cmd, option, size_unit_hint(arg, unit, hint, sizeof(hint)));
}
