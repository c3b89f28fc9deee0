#include "govern/proto.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/units.h"
#include "util/xalloc.h"

void proto_conn_init(struct proto_conn *c, int fd)
{
	c->fd = fd;
	c->buf = NULL;
	c->len = 0;
}

void proto_conn_close(struct proto_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	c->fd = -1;
	c->buf = NULL;
	c->len = 0;
}

int proto_send(int fd, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	size_t len, off = 0;
	int rc = 0;

	if (!s)
		return -ENOMEM;
	len = strlen(s);
	s[len] = '\n'; /* json_dumps' NUL becomes the line end; the length covers it */
	len++;
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		off += (size_t)n;
	}
	free(s);
	return rc;
}

/* The buffer: a whole line and its newline, never more. */
#define CONN_BUF (PROTO_MAX_LINE + 1)

int proto_fill(struct proto_conn *c)
{
	ssize_t n;

	if (c->len == CONN_BUF)
		return -E2BIG;
	if (!c->buf)
		c->buf = xmalloc(CONN_BUF);
	do
		n = read(c->fd, c->buf + c->len, CONN_BUF - c->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	c->len += (size_t)n;
	return (int)n;
}

int proto_take(struct proto_conn *c, json_t **out)
{
	char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
	json_error_t err;
	json_t *msg;

	if (!nl)
		return c->len == CONN_BUF ? -E2BIG : 0;
	size_t line = (size_t)(nl - c->buf);
	msg = json_loadb(c->buf, line, 0, &err);
	memmove(c->buf, nl + 1, c->len - line - 1);
	c->len -= line + 1;
	if (!msg || !json_is_object(msg)) {
		json_decref(msg);
		return -EPROTO;
	}
	*out = msg;
	return 1;
}

int proto_recv(struct proto_conn *c, json_t **out, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	for (;;) {
		int rc = proto_take(c, out);
		if (rc == 1 || rc == -E2BIG)
			return rc;
		if (rc == -EPROTO)
			continue;
		if (deadline >= 0) {
			int64_t left = deadline - now_ms();
			struct pollfd p = { .fd = c->fd, .events = POLLIN };
			if (left <= 0)
				return -ETIMEDOUT;
			rc = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
			if (rc < 0 && errno != EINTR)
				return -errno;
			if (rc <= 0)
				continue;
		}
		rc = proto_fill(c);
		if (rc <= 0)
			return rc;
	}
}

const char *proto_type(json_t *msg)
{
	const char *t = json_string_value(json_object_get(msg, "type"));
	return t ? t : "";
}

/* The field orders below are the protocol's bytes: keep them. */

static const char *str_or_empty(json_t *msg, const char *key)
{
	const char *v = json_string_value(json_object_get(msg, key));
	return v ? v : "";
}

/* An integer field in [lo, hi]: 0, or -EINVAL when absent, no integer or out of range. */
static int int_in(json_t *msg, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
	json_t *v = json_object_get(msg, key);

	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return -EINVAL;
	*out = json_integer_value(v);
	return 0;
}

/* The same where null (or absence) means none: *has 0. */
static int int_or_null_in(json_t *msg, const char *key, int64_t lo, int64_t hi, int *has, int64_t *out)
{
	json_t *v = json_object_get(msg, key);

	*has = 0;
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	*has = 1;
	return int_in(msg, key, lo, hi, out);
}

static int job_of(json_t *msg, int64_t *job)
{
	return int_in(msg, "job", 1, PROTO_MAX_JOB, job);
}

static json_t *int_or_null(int has, int64_t v)
{
	return has ? json_integer(v) : json_null();
}

static int send_new(int fd, json_t *msg)
{
	int rc = msg ? proto_send(fd, msg) : -ENOMEM;

	json_decref(msg);
	return rc;
}

json_t *proto_request_encode(const struct proto_request *m)
{
	return json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:b, s:b}", "type", "request", "attempt",
			 (json_int_t)m->attempt, "tool", m->tool, "src", m->src, "class", m->class_key, "sig", m->sig_key,
			 "cached", m->cached, "check", m->check);
}

int proto_request_decode(json_t *msg, struct proto_request *m)
{
	m->tool = str_or_empty(msg, "tool");
	m->src = str_or_empty(msg, "src");
	m->class_key = str_or_empty(msg, "class");
	m->sig_key = str_or_empty(msg, "sig");
	m->cached = json_is_true(json_object_get(msg, "cached"));
	m->check = json_is_true(json_object_get(msg, "check"));
	return int_in(msg, "attempt", 1, PROTO_MAX_ATTEMPT, &m->attempt);
}

json_t *proto_wait_encode(const struct proto_wait *m)
{
	return json_pack("{s:s, s:I}", "type", "wait", "job", (json_int_t)m->job);
}

int proto_wait_decode(json_t *msg, struct proto_wait *m)
{
	return job_of(msg, &m->job);
}

json_t *proto_admit_encode(const struct proto_admit *m)
{
	return json_pack("{s:s, s:I}", "type", "admit", "job", (json_int_t)m->job);
}

int proto_admit_decode(json_t *msg, struct proto_admit *m)
{
	return job_of(msg, &m->job);
}

json_t *proto_cgroup_encode(const struct proto_cgroup *m)
{
	/* NULL when the directory is no string in JSON (not UTF-8) */
	return json_pack("{s:s, s:I, s:s}", "type", "cgroup", "job", (json_int_t)m->job, "dir", m->dir);
}

int proto_cgroup_decode(json_t *msg, struct proto_cgroup *m)
{
	m->dir = str_or_empty(msg, "dir");
	if (!*m->dir)
		return -EINVAL;
	return job_of(msg, &m->job);
}

json_t *proto_done_encode(const struct proto_done *m)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:o}", "type", "done", "job", (json_int_t)m->job, "duration_ms",
			 (json_int_t)m->duration_ms, "maxrss_bytes", (json_int_t)m->maxrss_bytes, "exit",
			 int_or_null(m->has_exit, m->exit_code), "signal", int_or_null(m->has_signal, m->signal),
			 "cache_hit", m->cache_hit < 0 ? json_null() : json_boolean(m->cache_hit));
}

int proto_done_decode(json_t *msg, struct proto_done *m)
{
	json_t *hit = json_object_get(msg, "cache_hit");
	int64_t maxrss = 0;

	m->cache_hit = json_is_boolean(hit) ? json_is_true(hit) : -1;
	if (job_of(msg, &m->job) || int_or_null_in(msg, "exit", 0, 255, &m->has_exit, &m->exit_code) ||
	    int_or_null_in(msg, "signal", 1, PROTO_MAX_SIGNAL, &m->has_signal, &m->signal) ||
	    (m->has_exit && m->has_signal) ||
	    int_in(msg, "duration_ms", 0, PROTO_MAX_DURATION_MS, &m->duration_ms) ||
	    int_in(msg, "maxrss_bytes", 0, (int64_t)PROTO_MAX_MAXRSS_BYTES, &maxrss))
		return -EINVAL;
	m->maxrss_bytes = (uint64_t)maxrss;
	return 0;
}

json_t *proto_ack_encode(const struct proto_ack *m)
{
	return json_pack("{s:s, s:I, s:b, s:s}", "type", "ack", "job", (json_int_t)m->job, "retry", m->retry, "reason",
			 m->reason);
}

int proto_ack_decode(json_t *msg, struct proto_ack *m)
{
	m->retry = json_is_true(json_object_get(msg, "retry"));
	m->reason = str_or_empty(msg, "reason");
	return job_of(msg, &m->job);
}

int proto_send_request(int fd, const struct proto_request *m)
{
	return send_new(fd, proto_request_encode(m));
}

int proto_send_wait(int fd, const struct proto_wait *m)
{
	return send_new(fd, proto_wait_encode(m));
}

int proto_send_admit(int fd, const struct proto_admit *m)
{
	return send_new(fd, proto_admit_encode(m));
}

int proto_send_cgroup(int fd, const struct proto_cgroup *m)
{
	return send_new(fd, proto_cgroup_encode(m));
}

int proto_send_done(int fd, const struct proto_done *m)
{
	return send_new(fd, proto_done_encode(m));
}

int proto_send_ack(int fd, const struct proto_ack *m)
{
	return send_new(fd, proto_ack_encode(m));
}
