#include "util/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#define KIB 1024.0 /* binary units' step */
#define KB 1000.0  /* decimal units' step */

/* Each unit a size may carry, as a user writes it (case does not matter): the letters and
 * the IEC names are powers of 1024, the SI names powers of 1000, as nvidia-smi's MiB and a
 * spec sheet's GB are. */
static const struct {
	const char *unit;
	double bytes;
} units[] = {
	{ "B", 1 },
	{ "K", KIB },       { "KiB", KIB },       { "KB", KB },
	{ "M", KIB * KIB }, { "MiB", KIB * KIB }, { "MB", KB * KB },
	{ "G", KIB * KIB * KIB }, { "GiB", KIB * KIB * KIB }, { "GB", KB * KB * KB },
	{ "T", KIB * KIB * KIB * KIB }, { "TiB", KIB * KIB * KIB * KIB }, { "TB", KB * KB * KB * KB },
};

int size_parse(const char *s, uint64_t *out_bytes)
{
	char *end;
	double v, mult = 0;

	if (!s || !*s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || !isfinite(v) || v < 0)
		return -EINVAL;
	while (*end == ' ')
		end++;
	if (!*end) { /* "80": 80 what? Only nothing needs no unit */
		if (v != 0)
			return -EDOM;
		*out_bytes = 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(end, units[i].unit))
			mult = units[i].bytes;
	if (!mult)
		return -EINVAL;
	v *= mult;
	if (v >= 18446744073709551615.0)
		return -EINVAL;
	*out_bytes = (uint64_t)v;
	return 0;
}

char *size_unit_hint(const char *s, char unit, char *buf, size_t len)
{
	double v = strtod(s, NULL);

	if (v >= 1024) /* a count of bytes, most likely */
		snprintf(buf, len, "'%s' has no unit: %s what? %sB is %s bytes", s, s, s, s);
	else
		snprintf(buf, len, "'%s' has no unit: %s what? %s%c is %s %ciB, %s%cB is %s %cB", s, s, s, unit, s, unit,
			 s, unit, s, unit);
	return buf;
}

char *size_format(uint64_t bytes, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	return buf;
}

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
