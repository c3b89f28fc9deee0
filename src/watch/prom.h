/* Prometheus text exposition of the watchdog's state, and the /metrics endpoint
 * (libmicrohttpd). DCGM-compatible names for what DCGM has, headroom_* for the rest. */
#ifndef HEADROOM_PROM_H
#define HEADROOM_PROM_H

#include "watch/state.h"

/* The metrics page; caller frees. */
char *prom_render(const struct watch_state *w);

struct prom_server;
/* The server's limits: connections at once, of them still waiting for their request
 * (past it, a new connection cuts the one that has waited longest: a scrape's request
 * comes at once, a client that holds connections open loses its oldest), seconds a
 * connection may stay idle, seconds a request may take in all (however slowly it keeps
 * coming), and the memory of one connection (a request's headers). */
#define PROM_MAX_CONNECTIONS 256
#define PROM_MAX_WAITING 16
#define PROM_IDLE_TIMEOUT_S 5
#define PROM_REQUEST_DEADLINE_S 10
#define PROM_CONNECTION_MEMORY_BYTES (32 * 1024)
/* Serve /metrics on addr: "9400" and ":9400" on 127.0.0.1 only; "ADDR:9400" on the IPv4
 * address ADDR (0.0.0.0: every interface). 0 or -errno (*why). */
int prom_start(const char *addr, struct prom_server **out, const char **why);
/* Replace the page served (takes ownership of page). */
void prom_publish(struct prom_server *s, char *page);
void prom_stop(struct prom_server *s);

#endif
