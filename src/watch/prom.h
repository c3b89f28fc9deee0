/* Prometheus text exposition of the watchdog's state, and the /metrics endpoint
 * (libmicrohttpd). DCGM-compatible names for what DCGM has, headroom_* for the rest. */
#ifndef HEADROOM_PROM_H
#define HEADROOM_PROM_H

#include "watch/state.h"

/* The metrics page; caller frees. */
char *prom_render(const struct watch_state *w);

struct prom_server;
/* Serve /metrics on addr ("9400", ":9400", "127.0.0.1:9400"). 0 or -errno (*why). */
int prom_start(const char *addr, struct prom_server **out, const char **why);
/* Replace the page served (takes ownership of page). */
void prom_publish(struct prom_server *s, char *page);
void prom_stop(struct prom_server *s);

#endif
