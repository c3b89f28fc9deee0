/* The live view on the terminal's alternate screen, redrawn in place each sample (no
 * clearing, so no flicker); the user's screen comes back when watch ends. */
#ifndef HEADROOM_SCREEN_H
#define HEADROOM_SCREEN_H

#include <stdio.h>

#include "watch/state.h"

struct screen {
	FILE *out;
	int on;
};

/* Switch out to the alternate screen, cursor hidden. */
void screen_enter(struct screen *s, FILE *out);
/* view_show's view of w, drawn over the last one. */
void screen_view(struct screen *s, const struct watch_state *w, int have_driver);
/* Back to the user's screen and cursor; nothing when not entered. */
void screen_leave(struct screen *s);

#endif
