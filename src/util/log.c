#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int log_level = 1;

void log_level_from_env(void)
{
	const char *dbg = getenv("HEADROOM_DEBUG");

	if (dbg && *dbg && strcmp(dbg, "0"))
		log_level = 3;
}
static const char *command;
static int json_errors;
static const char *(*die_note)(const char *msg);

void log_set_die_note(const char *(*fn)(const char *msg))
{
	die_note = fn;
}

void log_set_command(const char *name)
{
	command = name;
}

void log_set_json_errors(int on)
{
	json_errors = on;
}

/* Whether msg begins with "COMMAND:" already. */
static int names_command(const char *msg)
{
	size_t n = command ? strlen(command) : 0;

	return !command || (!strncmp(msg, command, n) && msg[n] == ':');
}

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
	char buf[4096];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "%sheadroom: %s%s%s\n", log_prefix(prio), names_command(buf) ? "" : command,
		names_command(buf) ? "" : ": ", buf);
}

/* s as a JSON string, on f. */
static void json_string_out(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(LOG_PRIO_ERR, fmt, ap);
	va_end(ap);
}

void die(int status, const char *fmt, ...)
{
	char buf[4096];
	const char *note;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	note = die_note ? die_note(buf) : NULL;
	if (json_errors) {
		fflush(stdout);
		fputs("{\"error\": ", stdout);
		json_string_out(stdout, buf);
		if (note) {
			fputs(", \"note\": ", stdout);
			json_string_out(stdout, note);
		}
		fprintf(stdout, ", \"status\": %d}\n", status);
		fflush(stdout);
	}
	msg("%s%s%s", buf, note ? " " : "", note ? note : "");
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
