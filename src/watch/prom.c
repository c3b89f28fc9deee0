#include "watch/prom.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/thread.h"
#include "util/units.h"
#include "util/xalloc.h"

static void head(struct strbuf *b, const char *name, const char *type, const char *help)
{
	strbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label's value, escaped (util/escape.h): the text it names may be anyone's. */
static void label(struct strbuf *b, const char *name, const char *value)
{
	strbuf_addf(b, "%s=\"", name);
	esc_prom_label(b, value);
	strbuf_add(b, "\"");
}

/* dcgm-exporter's labels, so that its dashboards and rules resolve headroom's series:
 * gpu (the NVML index), UUID, pci_bus_id, device (nvidiaN, N the index), modelName,
 * Hostname. */
static void gpu_labels(struct strbuf *b, const struct watch_state *w, size_t i)
{
	const struct nvml_dev *d = &w->gpus[i].d;

	strbuf_addf(b, "gpu=\"%zu\",", i);
	label(b, "UUID", d->uuid);
	strbuf_add(b, ",");
	label(b, "pci_bus_id", d->bus_id);
	strbuf_addf(b, ",device=\"nvidia%zu\",", i);
	label(b, "modelName", d->name);
	strbuf_add(b, ",");
	label(b, "Hostname", w->hostname);
}

/* One gauge a GPU, only for the GPUs whose last read worked (a failed read is missing
 * figures, not zero). */
static void gpu_gauge(struct strbuf *b, const struct watch_state *w, const char *name, const char *help,
		      double (*value)(const struct wgpu *G))
{
	head(b, name, "gauge", help);
	for (size_t i = 0; i < w->ngpus; i++) {
		double v = w->gpus[i].ok ? value(&w->gpus[i]) : -1;
		if (v < 0)
			continue;
		strbuf_addf(b, "%s{", name);
		gpu_labels(b, w, i);
		strbuf_addf(b, "} %.15g\n", v);
	}
}

static double fb_used_mib(const struct wgpu *G) { return (double)(G->d.used_bytes >> 20); }
static double fb_free_mib(const struct wgpu *G) { return (double)(G->d.free_bytes >> 20); }
static double util_pct(const struct wgpu *G) { return G->d.util_gpu_pct; }
static double total_bytes(const struct wgpu *G) { return (double)G->d.total_bytes; }
/* to a tenth of a second: the projection is no finer */
static double ttoom_s(const struct wgpu *G) { return G->ttoom_s >= 0 ? round(G->ttoom_s * 10) / 10 : -1; }

/* A job's labels: its key, its user and its origin tell it from another user's or
 * another tree's job of the same key. */
static void job_labels(struct strbuf *b, const struct wjob_id *id)
{
	label(b, "job", id->key);
	strbuf_addf(b, ",uid=\"%lu\",origin=\"%d\"", (unsigned long)id->uid, (int)id->origin);
}

static void job_gauges(struct strbuf *b, const struct watch_state *w, const char *host)
{
	head(b, "headroom_gpu_process_memory_bytes", "gauge", "GPU memory of a process, by host pid");
	for (size_t i = 0; i < w->nprocs; i++) {
		const struct wproc *p = &w->procs[i];
		if (!p->alive || p->used_bytes < 0 || p->gpu >= w->ngpus)
			continue;
		strbuf_add(b, "headroom_gpu_process_memory_bytes{");
		gpu_labels(b, w, p->gpu);
		strbuf_addf(b, ",pid=\"%d\",", (int)p->pid);
		job_labels(b, &p->job);
		strbuf_addf(b, "} %lld\n", (long long)p->used_bytes);
	}
	head(b, "headroom_job_ranks_alive", "gauge", "GPU processes of a job still running");
	for (size_t i = 0; i < w->njobs; i++) {
		strbuf_add(b, "headroom_job_ranks_alive{");
		job_labels(b, &w->jobs[i].id);
		strbuf_addf(b, ",Hostname=\"%s\"} %d\n", host, w->jobs[i].alive);
	}
	head(b, "headroom_job_ranks_seen", "gauge", "GPU processes of a job seen over its life");
	for (size_t i = 0; i < w->njobs; i++) {
		strbuf_add(b, "headroom_job_ranks_seen{");
		job_labels(b, &w->jobs[i].id);
		strbuf_addf(b, ",Hostname=\"%s\"} %d\n", host, w->jobs[i].seen);
	}
}

static void host_gauges(struct strbuf *b, const struct watch_state *w, const char *host)
{
	if (w->has_host) {
		head(b, "headroom_host_memory_available_bytes", "gauge",
		     "Host memory available: MemAvailable, or what the memory cgroup's limit leaves when lower");
		strbuf_addf(b, "headroom_host_memory_available_bytes{Hostname=\"%s\"} %llu\n", host,
		    (unsigned long long)w->host_available_bytes);
		head(b, "headroom_host_memory_total_bytes", "gauge",
		     "Host memory in all, read each sample: the memory cgroup's limit where it is lower than MemTotal");
		strbuf_addf(b, "headroom_host_memory_total_bytes{Hostname=\"%s\"} %llu\n", host,
		    (unsigned long long)w->host_total_bytes);
	}
	if (w->has_oom) {
		head(b, "headroom_host_oom_kills_total", "counter", "The kernel's OOM kills since boot");
		strbuf_addf(b, "headroom_host_oom_kills_total{Hostname=\"%s\"} %llu\n", host,
		    (unsigned long long)w->host_oom_kills);
	}
	if (w->psi_full_avg10 >= 0) {
		head(b, "headroom_host_memory_pressure_full_avg10", "gauge", "PSI memory full avg10 (%)");
		strbuf_addf(b, "headroom_host_memory_pressure_full_avg10{Hostname=\"%s\"} %.2f\n", host,
		    w->psi_full_avg10);
	}
}

char *prom_render(const struct watch_state *w)
{
	struct strbuf b = STRBUF_INIT, hb = STRBUF_INIT;
	const char *host;

	esc_prom_label(&hb, w->hostname);
	host = strbuf_str(&hb);
	head(&b, "headroom_up", "gauge", "1 while headroom watch runs and serves this page");
	strbuf_addf(&b, "headroom_up{Hostname=\"%s\"} 1\n", host);
	head(&b, "headroom_gpus", "gauge",
	     "GPUs the NVIDIA driver sees; 0 on a host without GPU or driver (host memory is watched alone)");
	strbuf_addf(&b, "headroom_gpus{Hostname=\"%s\"} %zu\n", host, w->ngpus);
	head(&b, "headroom_gpu_read_ok", "gauge", "1 when this GPU's last read worked");
	for (size_t i = 0; i < w->ngpus; i++) {
		strbuf_add(&b, "headroom_gpu_read_ok{");
		gpu_labels(&b, w, i);
		strbuf_addf(&b, "} %d\n", w->gpus[i].ok);
	}
	gpu_gauge(&b, w, "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", fb_used_mib);
	gpu_gauge(&b, w, "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", fb_free_mib);
	gpu_gauge(&b, w, "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", util_pct);
	gpu_gauge(&b, w, "headroom_gpu_memory_total_bytes", "GPU memory in all", total_bytes);
	gpu_gauge(&b, w, "headroom_time_to_oom_seconds",
		  "Seconds until the GPU's memory reaches its capacity at its growth; absent when it is not "
		  "significantly rising or would reach it only past 10 x --horizon",
		  ttoom_s);
	job_gauges(&b, w, host);
	head(&b, "headroom_events_total", "counter", "Events the watchdog raised, by type");
	for (int e = 0; e < EV_COUNT; e++)
		strbuf_addf(&b, "headroom_events_total{type=\"%s\",Hostname=\"%s\"} %llu\n",
		    watch_event_name((enum watch_event)e), host, (unsigned long long)w->events[e]);
	host_gauges(&b, w, host);
	strbuf_release(&hb);
	return strbuf_detach(&b);
}

#ifdef HEADROOM_NO_MHD
int prom_start(const char *addr, struct prom_server **out, const char **why)
{
	(void)addr;
	*out = NULL;
	*why = "this headroom was built without libmicrohttpd (make MHD=0)";
	return -ENOTSUP;
}

void prom_publish(struct prom_server *s, char *page)
{
	(void)s;
	free(page);
}

void prom_stop(struct prom_server *s)
{
	(void)s;
}
#else
#include <dlfcn.h>
#include <microhttpd.h>

/* libmicrohttpd is loaded when a server starts, not linked: linked, it and the TLS
 * libraries it pulls in were loaded by every headroom process, the launcher that runs
 * once per compile job included, and that loading was most of the launcher's cost. */
struct mhd {
	void *lib;
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
	__typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
	__typeof__(&MHD_add_response_header) add_response_header;
	__typeof__(&MHD_queue_response) queue_response;
	__typeof__(&MHD_destroy_response) destroy_response;
	__typeof__(&MHD_get_connection_info) get_connection_info;
};

/* A connection's clock for the request deadline: since its accept, or since the end of
 * its last request (a kept-alive connection's next one). */
struct conn {
	int fd;
	int64_t since_ms;
	int cut;                  /* shut down: its deadline passed, or it waited longest */
	int answering;            /* its request came: being answered */
	struct conn *prev, *next;
};

struct prom_server {
	struct mhd m;
	struct MHD_Daemon *d;
	pthread_mutex_t lock;     /* the page, and the connections' list */
	char *page;
	struct conn *conns;
	pthread_cond_t wake;      /* the deadline thread's: stop */
	pthread_t deadline;
	int stopping, has_deadline;
};

#define MHD_SONAME "libmicrohttpd.so.12"

static int mhd_load(struct mhd *m)
{
	m->lib = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!m->lib)
		return -ENOENT;
	*(void **)&m->start_daemon = dlsym(m->lib, "MHD_start_daemon");
	*(void **)&m->stop_daemon = dlsym(m->lib, "MHD_stop_daemon");
	*(void **)&m->create_response_from_buffer = dlsym(m->lib, "MHD_create_response_from_buffer");
	*(void **)&m->add_response_header = dlsym(m->lib, "MHD_add_response_header");
	*(void **)&m->queue_response = dlsym(m->lib, "MHD_queue_response");
	*(void **)&m->destroy_response = dlsym(m->lib, "MHD_destroy_response");
	*(void **)&m->get_connection_info = dlsym(m->lib, "MHD_get_connection_info");
	if (!m->start_daemon || !m->stop_daemon || !m->create_response_from_buffer || !m->add_response_header ||
	    !m->queue_response || !m->destroy_response || !m->get_connection_info) {
		dlclose(m->lib);
		m->lib = NULL;
		return -ENOSYS;
	}
	return 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct prom_server *s = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *copy;
	unsigned code = MHD_HTTP_OK;

	(void)version, (void)upload, (void)upload_size, (void)con_cls;
	const union MHD_ConnectionInfo *ci = s->m.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci && ci->socket_context) {
		pthread_mutex_lock(&s->lock);
		((struct conn *)ci->socket_context)->answering = 1;
		pthread_mutex_unlock(&s->lock);
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return MHD_NO;
	if (strcmp(url, "/metrics")) {
		copy = xstrdup("headroom watch: metrics are at /metrics\n");
		code = MHD_HTTP_NOT_FOUND;
	} else {
		pthread_mutex_lock(&s->lock);
		copy = xstrdup(s->page ? s->page : "");
		pthread_mutex_unlock(&s->lock);
	}
	r = s->m.create_response_from_buffer(strlen(copy), copy, MHD_RESPMEM_MUST_FREE);
	s->m.add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = s->m.queue_response(c, code, r);
	s->m.destroy_response(r);
	return ret;
}

/* libmicrohttpd's idle timeout restarts with every byte: a client sending a header line
 * now and then held its connection (and, with others, the slots a scrape needs) for as
 * long as it liked. Each request therefore has a whole deadline: a connection still
 * without its answer PROM_REQUEST_DEADLINE_S after its accept (or after its last
 * request ended) is shut down, and libmicrohttpd closes it. The list is kept under the
 * lock, and libmicrohttpd says a connection closed before it closes its socket, so a
 * socket shut down here is always still that connection's. */
/* Past PROM_MAX_WAITING connections still waiting for their request, the one that has
 * waited longest (the list is newest first) is shut down. Under the lock. */
static void cut_longest_waiting(struct prom_server *s)
{
	struct conn *oldest = NULL;
	int waiting = 0;

	for (struct conn *k = s->conns; k; k = k->next)
		if (!k->cut && !k->answering && k->fd >= 0) {
			waiting++;
			oldest = k;
		}
	if (waiting > PROM_MAX_WAITING && oldest) {
		shutdown(oldest->fd, SHUT_RDWR);
		oldest->cut = 1;
	}
}

static void conn_notify(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_ConnectionNotificationCode toe)
{
	struct prom_server *s = cls;
	struct conn *k = *ctx;
	const union MHD_ConnectionInfo *ci;

	pthread_mutex_lock(&s->lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = s->m.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k = xcalloc(1, sizeof(*k));
		k->fd = ci ? ci->connect_fd : -1;
		k->since_ms = now_ms();
		k->next = s->conns;
		if (s->conns)
			s->conns->prev = k;
		s->conns = k;
		*ctx = k;
		cut_longest_waiting(s);
	} else if (k) {
		if (k->prev)
			k->prev->next = k->next;
		else
			s->conns = k->next;
		if (k->next)
			k->next->prev = k->prev;
		free(k);
		*ctx = NULL;
	}
	pthread_mutex_unlock(&s->lock);
}

static void request_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct prom_server *s = cls;
	const union MHD_ConnectionInfo *ci = s->m.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci ? ci->socket_context : NULL;

	(void)con_cls, (void)toe;
	pthread_mutex_lock(&s->lock);
	if (k) { /* kept alive: waiting for its next request */
		k->since_ms = now_ms();
		k->answering = 0;
	}
	pthread_mutex_unlock(&s->lock);
}

static void *deadline_main(void *arg)
{
	struct prom_server *s = arg;
	struct timespec ts;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		int64_t now = now_ms();
		for (struct conn *k = s->conns; k; k = k->next)
			if (!k->cut && k->fd >= 0 && now - k->since_ms >= PROM_REQUEST_DEADLINE_S * 1000LL) {
				shutdown(k->fd, SHUT_RDWR);
				k->cut = 1;
			}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 250 * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&s->wake, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The lock, and the deadline thread's condition on the monotonic clock. 0 or -errno. */
static int server_init(struct prom_server *s)
{
	pthread_condattr_t a;
	int rc;

	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	rc = -pthread_cond_init(&s->wake, &a);
	pthread_condattr_destroy(&a);
	if (rc)
		pthread_mutex_destroy(&s->lock);
	return rc;
}

/* Stops the deadline thread first, then the daemon (which says each connection closed). */
static void server_fini(struct prom_server *s)
{
	if (s->has_deadline) {
		pthread_mutex_lock(&s->lock);
		s->stopping = 1;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->deadline, NULL);
	}
	if (s->d)
		s->m.stop_daemon(s->d);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	dlclose(s->m.lib);
	free(s->page);
	free(s);
}

/* libmicrohttpd's own messages, kept (not printed) to be said in headroom's words: the
 * last one starting the daemon, and every one at HEADROOM_DEBUG=1. */
static char mhd_said[256];

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	vsnprintf(mhd_said, sizeof(mhd_said), fmt, ap);
	mhd_said[strcspn(mhd_said, "\n")] = '\0';
	log_debug("watch: libmicrohttpd: %s", mhd_said);
}

/* The daemon and its thread, which takes no signal: they are the main thread's (its
 * signalfd), and one left unblocked here would end watch by its default action. */
static struct MHD_Daemon *daemon_start(struct prom_server *s, uint16_t port, struct sockaddr_in *sa)
{
	struct MHD_Daemon *d;
	sigset_t saved;

	signals_hold(&saved);
	/* Bounded: idle connections are closed after PROM_IDLE_TIMEOUT_S, every request has
	 * PROM_REQUEST_DEADLINE_S in all, and at most PROM_MAX_WAITING wait for theirs (no
	 * limit by address: every local user shares 127.0.0.1 with the scraper, and one that
	 * holds its share would keep the scraper out). */
	d = s->m.start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, port, NULL, NULL, answer, s,
			      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)sa,
			      MHD_OPTION_CONNECTION_LIMIT, (unsigned int)PROM_MAX_CONNECTIONS,
			      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)PROM_IDLE_TIMEOUT_S,
			      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)PROM_CONNECTION_MEMORY_BYTES,
			      MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s,
			      MHD_OPTION_NOTIFY_COMPLETED, request_done, s,
			      MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
			      MHD_OPTION_END);
	signals_release(&saved);
	return d;
}

int prom_start(const char *addr, struct prom_server **out, const char **why)
{
	/* A port alone (or ":PORT") is this machine's only: /metrics names pids, jobs and
	 * memory. Another interface is served only when its address is given. */
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const char *colon = strrchr(addr, ':'), *port_s = colon ? colon + 1 : addr;
	char host[64];
	char *end;
	long port;
	struct prom_server *s;
	int rc;

	*out = NULL;
	errno = 0;
	port = strtol(port_s, &end, 10);
	if (errno || end == port_s || *end || port < 1 || port > 65535) {
		*why = "the port must be a number from 1 to 65535";
		return -EINVAL;
	}
	if (colon && colon > addr) {
		if ((size_t)(colon - addr) >= sizeof(host)) {
			*why = "the address must be an IPv4 address such as 127.0.0.1";
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
		if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
			*why = "the address must be an IPv4 address such as 127.0.0.1";
			return -EINVAL;
		}
	}
	sa.sin_port = htons((uint16_t)port);
	s = xcalloc(1, sizeof(*s));
	rc = mhd_load(&s->m);
	if (rc) {
		free(s);
		*why = rc == -ENOENT ? "cannot load " MHD_SONAME " (Debian: apt install libmicrohttpd12)"
				     : MHD_SONAME " lacks a function headroom uses";
		return -ENOTSUP;
	}
	if (server_init(s)) {
		dlclose(s->m.lib);
		free(s);
		*why = "cannot start its thread";
		return -ENOMEM;
	}
	s->d = daemon_start(s, (uint16_t)port, &sa);
	if (!s->d) {
		server_fini(s);
		*why = strstr(mhd_said, "in use") ? "cannot listen there: the address is in use (another watch, or "
						    "another server: give another port)"
		       : strstr(mhd_said, "ermission") ? "cannot listen there: not allowed (a port below 1024 needs root)"
						     : "cannot listen there (HEADROOM_DEBUG=1 says why)";
		return -EADDRINUSE;
	}
	s->has_deadline = !thread_start(&s->deadline, deadline_main, s);
	if (!s->has_deadline) {
		server_fini(s);
		*why = "cannot start its thread";
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void prom_publish(struct prom_server *s, char *page)
{
	if (!s) {
		free(page);
		return;
	}
	pthread_mutex_lock(&s->lock);
	free(s->page);
	s->page = page;
	pthread_mutex_unlock(&s->lock);
}

void prom_stop(struct prom_server *s)
{
	if (s)
		server_fini(s);
}
#endif
