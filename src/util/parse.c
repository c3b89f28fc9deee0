#include "util/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	const char *d = s && *s == '-' ? s + 1 : s;
	char *end;
	long long v;

	/* strtoll would take leading spaces, '+' and an empty string */
	if (!d || !isdigit((unsigned char)*d))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* Does s hold exactly a decimal number: [-+]digits[.digits][e[-+]digits], with at least
 * one digit before the exponent? */
static int decimal(const char *s, size_t len)
{
	size_t i = 0, digits = 0;

	if (i < len && (s[i] == '-' || s[i] == '+'))
		i++;
	for (; i < len && isdigit((unsigned char)s[i]); i++)
		digits++;
	if (i < len && s[i] == '.')
		for (i++; i < len && isdigit((unsigned char)s[i]); i++)
			digits++;
	if (!digits)
		return 0;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '-' || s[i] == '+'))
			i++;
		if (i == len || !isdigit((unsigned char)s[i]))
			return 0;
		while (i < len && isdigit((unsigned char)s[i]))
			i++;
	}
	return i == len;
}

/* The first len bytes of s as a number in [min, max]. */
static int parse_number(const char *s, size_t len, double min, double max, double *out)
{
	char buf[64], *end;
	double v;

	if (!len || len >= sizeof(buf) || !decimal(s, len))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || !isfinite(v) || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_double(const char *s, double min, double max, double *out)
{
	return s ? parse_number(s, strlen(s), min, max, out) : -EINVAL;
}

int parse_pct(const char *s, double min, double max, double *out)
{
	size_t len = s ? strlen(s) : 0;

	if (len && s[len - 1] == '%')
		len--;
	return s ? parse_number(s, len, min, max, out) : -EINVAL;
}

int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out_bytes)
{
	uint64_t v;
	int rc = size_parse(s, &v);

	if (rc)
		return rc;
	if (v < min || v > max)
		return -ERANGE;
	*out_bytes = v;
	return 0;
}
