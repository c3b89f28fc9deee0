/* The watchdog's JSON lines: one record a sample (--jsonl), one an event. */
#ifndef HEADROOM_WATCH_JSONL_H
#define HEADROOM_WATCH_JSONL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "watch/state.h"

/* The JSON sink's string: s as valid UTF-8 (an invalid byte shown as \xHH; jansson
 * refuses invalid UTF-8, and the record holding it would be lost). A new reference. */
json_t *jsonl_str(const char *s);
/* CLOCK_REALTIME in milliseconds: the time_ms of every record. */
int64_t jsonl_wall_ms(void);
/* A record's compact text as a line on out, flushed (a reader tails the file). */
void jsonl_put(FILE *out, const char *text);
/* The sample record of w at time_ms: GPUs (figures null when unknown), running GPU
 * processes, host memory. */
void jsonl_sample(FILE *out, const struct watch_state *w, int64_t time_ms);

#endif
