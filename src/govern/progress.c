#include "govern/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/units.h"

int64_t progress_eta(const struct progress_eta_in *in)
{
	if (in->total <= 0 || in->done >= in->total)
		return in->total > 0 ? 0 : -1;
	if (in->done == 0) /* nothing learned in this build yet: the last one's pace */
		return in->last_wall_ms > in->elapsed_ms ? in->last_wall_ms - in->elapsed_ms : -1;
	int64_t mean = in->done_work_ms / in->done;
	int not_started = in->total - in->done - in->running;
	int64_t left = in->running_left_ms + (not_started > 0 ? not_started : 0) * mean;
	/* the parallelism this build reached so far, 1 to the job cap */
	double par = in->elapsed_ms > 0 ? (double)in->done_work_ms / (double)in->elapsed_ms : 1.0;
	if (par < 1.0)
		par = 1.0;
	if (in->jobs_cap > 0 && par > in->jobs_cap)
		par = in->jobs_cap;
	return (int64_t)((double)left / par);
}

static void format_duration(int64_t ms, char *buf, size_t size)
{
	int64_t s = (ms + 999) / 1000;

	if (s < 60)
		snprintf(buf, size, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, size, "%lldm", (long long)((s + 59) / 60));
	else
		snprintf(buf, size, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
}

void progress_format(const struct progress_state *s, int utf8, char *buf, size_t size)
{
	const char *sep = utf8 ? " \u00b7 " : ", ";
	char count[48], wait[64] = "", slot[64] = "", frozen[48] = "", used[32], lim[32], eta[32] = "";

	if (s->total > 0)
		snprintf(count, sizeof(count), "[%d/%d]", s->done, s->total > s->done ? s->total : s->done);
	else
		snprintf(count, sizeof(count), "[%d done]", s->done);
	if (s->waiting_memory)
		snprintf(wait, sizeof(wait), "%s%d waiting for memory", sep, s->waiting_memory);
	if (s->waiting_slot)
		snprintf(slot, sizeof(slot), "%s%d waiting for a CPU slot", sep, s->waiting_slot);
	if (s->frozen)
		snprintf(frozen, sizeof(frozen), "%s%d frozen", sep, s->frozen);
	if (s->eta_ms >= 0) {
		char d[24];
		format_duration(s->eta_ms, d, sizeof(d));
		snprintf(eta, sizeof(eta), "%sETA %s", sep, d);
	}
	snprintf(buf, size, "%s running %d%s%s%s%sjobs %s/%s budget%s", count, s->running, wait, slot, frozen, sep,
		 size_format(s->jobs_bytes, used, sizeof(used)), size_format(s->budget_bytes, lim, sizeof(lim)), eta);
}

static int term_rows(int fd, int *cols)
{
	struct winsize ws;

	if (ioctl(fd, TIOCGWINSZ, &ws) || ws.ws_row < 3 || ws.ws_col < 20)
		return 0;
	*cols = ws.ws_col;
	return ws.ws_row;
}

/* One write per update, so that the sequence is not split by the build's output. */
static void put(struct progress *p, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t w = write(p->fd, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* Room for the line: a new line, then a scroll region of all rows but the last. */
static void set_region(struct progress *p, int rows)
{
	char seq[64];

	snprintf(seq, sizeof(seq), "\n\0337\033[1;%dr\0338\033[1A", rows - 1);
	put(p, seq);
	p->rows = rows;
}

void progress_open(struct progress *p, int fd)
{
	const char *term = getenv("TERM"), *lang;
	int cols, rows;

	p->fd = -1;
	p->rows = 0;
	if (!isatty(fd) || !term || !*term || !strcmp(term, "dumb"))
		return;
	rows = term_rows(fd, &cols);
	if (!rows)
		return;
	lang = getenv("LC_ALL");
	if (!lang || !*lang)
		lang = getenv("LC_CTYPE");
	if (!lang || !*lang)
		lang = getenv("LANG");
	p->utf8 = lang && (strstr(lang, "UTF-8") || strstr(lang, "utf8") || strstr(lang, "UTF8"));
	p->fd = fd;
	set_region(p, rows);
}

void progress_show(struct progress *p, const struct progress_state *s)
{
	char line[256], seq[384];
	int cols, rows;

	if (p->fd < 0)
		return;
	rows = term_rows(p->fd, &cols);
	if (!rows)
		return;
	if (rows != p->rows)
		set_region(p, rows);
	progress_format(s, p->utf8, line, sizeof(line));
	/* cut to the width (bytes; the "·" only makes it shorter on screen) */
	if ((int)strlen(line) > cols - 1)
		line[cols - 1] = '\0';
	snprintf(seq, sizeof(seq), "\0337\033[%d;1H\033[2K%s\0338", rows, line);
	put(p, seq);
}

void progress_close(struct progress *p)
{
	char seq[64];

	if (p->fd < 0)
		return;
	/* the whole screen scrolls again; the status row is cleared */
	snprintf(seq, sizeof(seq), "\0337\033[r\033[%d;1H\033[2K\0338", p->rows);
	put(p, seq);
	p->fd = -1;
}
