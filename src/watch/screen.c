#include "watch/screen.h"

#include <stdlib.h>
#include <string.h>

#include "watch/view.h"

void screen_enter(struct screen *s, FILE *out)
{
	s->out = out;
	s->on = 1;
	fputs("\033[?1049h\033[?25l", out);
	fflush(out);
}

void screen_view(struct screen *s, const struct watch_state *w, int have_driver)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return;
	view_show(m, w, have_driver);
	fclose(m);
	/* home, each line cleared to its end after it is written, the rest below cleared */
	fputs("\033[H", s->out);
	for (char *l = text, *nl; l && *l; l = nl + 1) {
		nl = strchr(l, '\n');
		if (!nl) {
			fputs(l, s->out);
			fputs("\033[K", s->out);
			break;
		}
		fwrite(l, 1, (size_t)(nl - l), s->out);
		fputs("\033[K\n", s->out);
	}
	fputs("\033[J", s->out);
	fflush(s->out);
	free(text);
}

void screen_leave(struct screen *s)
{
	if (!s->on)
		return;
	fputs("\033[?25h\033[?1049l", s->out);
	fflush(s->out);
	s->on = 0;
}
