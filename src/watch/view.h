/* The live view on a terminal: host memory, each GPU, jobs and their processes. */
#ifndef HEADROOM_WATCH_VIEW_H
#define HEADROOM_WATCH_VIEW_H

#include <stdio.h>

#include "watch/state.h"

/* The events the view shows, newest first, below the figures. */
#define VIEW_EVENTS 10

/* Draws w on out, from the top (watch/screen.c puts it on a terminal), the last
 * VIEW_EVENTS events (time, kind, message) below, and the key that quits. have_driver:
 * NVML was loaded. */
void view_show(FILE *out, const struct watch_state *w, int have_driver);

#endif
