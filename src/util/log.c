#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int log_level = 1;

const char *log_prefix(enum log_prio prio)
{
	static const char *const prefix[8] = { "<0>", "<1>", "<2>", "<3>", "<4>", "<5>", "<6>", "<7>" };
	static int journal = -1;

	if (journal < 0) {
		const char *js = getenv("JOURNAL_STREAM");
		unsigned long long dev, ino;
		struct stat st;

		journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && !fstat(STDERR_FILENO, &st) &&
			  (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
	}
	return journal && (unsigned)prio < 8 ? prefix[prio] : "";
}

static void vmsg(enum log_prio prio, const char *fmt, va_list ap)
{
	fputs(log_prefix(prio), stderr);
	fputs("headroom: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(LOG_PRIO_ERR, fmt, ap);
	va_end(ap);
	exit(status);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(LOG_PRIO_WARNING, fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;

	if (log_level < 2)
		return;
	va_start(ap, fmt);
	vmsg(LOG_PRIO_INFO, fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_level < 3)
		return;
	va_start(ap, fmt);
	vmsg(LOG_PRIO_DEBUG, fmt, ap);
	va_end(ap);
}
