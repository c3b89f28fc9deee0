/* The launchers' side of the governor: the listening socket, a job per connection,
 * and what each message does (request, done; wait, admit, cgroup and ack back). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "govern/gov.h"
#include "govern/governor.h"
#include "sys/usock.h"
#include "util/log.h"
#include "util/path.h"
#include "util/xalloc.h"

/* Connections the kernel queues before we accept them: a build tool starts its jobs in
 * a burst (ninja: one launcher a slot at once), which the loop accepts between ticks. */
#define SERVER_BACKLOG 256

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = xstrdup(v);
}

/* The launcher's report of its job's end: the governor's word on it (job_done) goes back
 * to a launcher whose tool was SIGKILLed, the only one that waits for it. */
static void on_done(struct gov *g, struct job *j, const struct proto_done *d, int64_t now)
{
	const char *reason;
	int retry = job_done(g, j, d, now, &reason);

	if (d->has_signal && d->signal == SIGKILL)
		proto_send_ack(j->conn.fd, &(struct proto_ack){ j->id, retry, reason });
	job_end_run(j);
}

static void on_message(struct gov *g, struct job *j, json_t *msg, int64_t now)
{
	const char *type = proto_type(msg);

	if (!strcmp(type, "request") && j->state == JOB_IDLE) {
		struct proto_request r;

		if (proto_request_decode(msg, &r)) {
			log_debug("job %d: a request with a number out of range, ignored", j->id);
			return;
		}
		set_str(&j->tool, r.tool);
		set_str(&j->src, r.src);
		set_str(&j->class_key, r.class_key);
		set_str(&j->sig_key, r.sig_key);
		j->attempt = (int)r.attempt;
		j->cached = r.cached;
		j->check = r.check;
		j->saw_compiler = 0;
		j->not_learned = NULL;
		j->t_request_ms = j->t_told_ms = now;
		job_reset_run(j);
		j->state = JOB_WAITING;
		learned_predict(g, j);
		/* a request that fits is answered now, not at the next tick */
		gov_admit(g, now, 1);
	} else if (!strcmp(type, "done") && j->state == JOB_RUNNING) {
		struct proto_done d;

		if (proto_done_decode(msg, &d) || d.job != j->id) {
			log_debug("job %d: a done of another job or with a number out of range, ignored", j->id);
			return;
		}
		on_done(g, j, &d, now);
		gov_admit(g, now, 0); /* its room goes to the waiting jobs at once */
	} else {
		log_debug("job %d: unexpected message '%s' ignored", j->id, type);
	}
}

/* Act on every whole line in j's buffer. -E2BIG when the buffer is full without one
 * (a line longer than the protocol allows: the caller hangs up), else 0. */
static int take_lines(struct gov *g, struct job *j, int64_t now)
{
	json_t *msg;
	int rc;

	while ((rc = proto_take(&j->conn, &msg)) != 0) {
		if (rc == -E2BIG)
			return rc;
		if (rc == -EPROTO) {
			log_debug("job %d: a line that is no JSON object, dropped", j->id);
			continue;
		}
		on_message(g, j, msg, now);
		json_decref(msg);
	}
	return 0;
}

static void hang_up(struct gov *g, struct job *j)
{
	for (size_t i = 0; i < g->njobs; i++)
		if (g->jobs[i] == j) {
			job_remove(g, i);
			return;
		}
}

void server_tell_waiting(struct gov *g, int64_t now)
{
	for (size_t i = 0; i < g->njobs; i++) {
		struct job *j = g->jobs[i];

		if (j->state != JOB_WAITING || j->tree || now - j->t_told_ms < SERVER_TELL_WAITING_MS)
			continue;
		j->t_told_ms = now;
		if (proto_send_wait(j->conn.fd, &(struct proto_wait){ j->id }))
			log_debug("job %d: its launcher is gone", j->id);
	}
}

void server_accept(struct gov *g)
{
	int fd;

	/* the whole backlog (a build tool starts its jobs in bursts), up to the cap */
	while (g->njobs < g->max_conns && (fd = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct job *j;
		pid_t peer;

		/* the launcher's pid from the kernel: what it runs is found below it */
		if (usock_peer_pid(fd, &peer)) {
			log_warn("a launcher's connection is refused: the kernel does not say who it is");
			close(fd);
			continue;
		}
		j = job_new(g, fd);
		g->found_launcher = 1;
		j->launcher_pid = peer;
		ev.data.ptr = j;

		j->tool = xstrdup("");
		j->src = xstrdup("");
		j->class_key = xstrdup("");
		j->sig_key = xstrdup("");
		if (epoll_ctl(g->ep_fd, EPOLL_CTL_ADD, fd, &ev)) {
			log_warn("epoll: %s: a launcher's connection is refused", strerror(errno));
			job_remove(g, g->njobs - 1);
		}
	}
}

/* At the cap, the listening socket leaves the epoll set (level-triggered, it would wake
 * the loop for ever) and the launchers wait in its backlog; it comes back once a
 * connection has ended. */
static int listen_watch(struct gov *g, int on)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &g->listen_fd };

	return epoll_ctl(g->ep_fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, g->listen_fd, &ev);
}

void server_listen_again(struct gov *g)
{
	if (!g->listen_paused && g->njobs >= g->max_conns && !listen_watch(g, 0)) {
		g->listen_paused = 1;
		log_debug("%zu launchers connected: the rest wait until one ends", g->njobs);
	} else if (g->listen_paused && g->njobs < g->max_conns && !listen_watch(g, 1)) {
		g->listen_paused = 0;
	}
}

int server_open(struct gov *g)
{
	char *tmpl = xasprintf("%s/headroom.XXXXXX", runtime_dir());
	int fd;

	if (!mkdtemp(tmpl)) {
		int e = errno;
		free(tmpl);
		return -e;
	}
	g->sock_dir = tmpl;
	g->sock_path = xasprintf("%s/gov.sock", tmpl);
	fd = usock_listen(g->sock_path, SERVER_BACKLOG);
	if (fd < 0)
		return fd;
	g->listen_fd = fd;
	return 0;
}

void server_read(struct gov *g, struct job *j, int64_t now)
{
	int rc = proto_fill(&j->conn);

	if (take_lines(g, j, now) == -E2BIG || rc == -E2BIG) {
		log_warn("job %d: its launcher sent a line longer than %d bytes, or a message past %d MiB (or the "
			 "messages in parts of every launcher passed %d MiB): hanging up", j->id, PROTO_MAX_LINE,
			 PROTO_MAX_MESSAGE >> 20, PROTO_MAX_PARTS_HELD >> 20);
		hang_up(g, j);
	} else if (rc == 0 || (rc < 0 && rc != -EAGAIN && rc != -EINTR)) {
		hang_up(g, j);
	}
}

void server_drain(struct gov *g, int64_t now)
{
	for (size_t i = 0; i < g->njobs;) {
		struct job *j = g->jobs[i];
		int rc = 1;

		if (j->conn.fd < 0) {
			i++;
			continue;
		}
		while (rc > 0) {
			rc = proto_fill(&j->conn);
			if (take_lines(g, j, now))
				rc = -E2BIG;
		}
		if (rc != -EAGAIN && rc != -EINTR)
			job_remove(g, i);
		else
			i++;
	}
}

void server_admit(struct gov *g, struct job *j, int64_t now)
{
	j->state = JOB_RUNNING;
	j->t_admit_ms = now;
	/* the last tick's count: a kill since then can only make a SIGKILLed job run again */
	j->oom_at_admit = g->oom_tick;
	if (j->tree) {
		/* Held since it was seen: let it go. */
		job_signal(g, j, SIGCONT);
		return;
	}
	if (proto_send_admit(j->conn.fd, &(struct proto_admit){ j->id }))
		log_debug("job %d: launcher gone before admission", j->id);
}
