/* The --on-event hook: a shell command run for each event. */
#ifndef HEADROOM_WATCH_HOOK_H
#define HEADROOM_WATCH_HOOK_H

/* sh -c cmd with HEADROOM_EVENT=event, HEADROOM_EVENT_MESSAGE=msg and
 * HEADROOM_EVENT_JSON=json in its environment (replacing any inherited ones). Not
 * waited for: the caller reaps it with its other children. */
void hook_run(const char *cmd, const char *event, const char *msg, const char *json);

#endif
