#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int log_level = 1;

static void vmsg(const char *fmt, va_list ap)
{
	fputs("headroom: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
	exit(status);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_level < 2)
		return;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_level < 3)
		return;
	va_start(ap, fmt);
	vmsg(fmt, ap);
	va_end(ap);
}
