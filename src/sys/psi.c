#include "sys/psi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sys/fsutil.h"

int psi_parse(const char *text, struct psi *out)
{
	int seen = 0;
	const char *line = text;

	memset(out, 0, sizeof(*out));
	while (line && *line) {
		double a10, a60, a300;
		unsigned long long total;
		char kind[8];

		if (sscanf(line, "%7s avg10=%lf avg60=%lf avg300=%lf total=%llu",
			   kind, &a10, &a60, &a300, &total) == 5) {
			if (!strcmp(kind, "some")) {
				out->some_avg10_pct = a10;
				out->some_total_us = total;
				seen |= 1;
			} else if (!strcmp(kind, "full")) {
				out->full_avg10_pct = a10;
				out->full_total_us = total;
				seen |= 2;
			}
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return (seen & 1) ? 0 : -EINVAL;
}

int psi_read(const char *path, struct psi *out)
{
	char buf[512];
	long n = fs_read(path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return psi_parse(buf, out);
}
