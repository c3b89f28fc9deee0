#include "govern/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/grow.h"
#include "util/xalloc.h"

void proto_conn_init(struct proto_conn *c, int fd)
{
	c->fd = fd;
	c->buf = NULL;
	c->len = c->cap = 0;
}

void proto_conn_close(struct proto_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	c->fd = -1;
	c->buf = NULL;
	c->len = c->cap = 0;
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

int proto_fill(struct proto_conn *c)
{
	ssize_t n;

	ARRAY_GROW(c->buf, c->len + 4096, c->cap);
	do
		n = read(c->fd, c->buf + c->len, c->cap - c->len);
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
		return c->len > PROTO_MAX_LINE ? -E2BIG : 0;
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

int proto_recv(struct proto_conn *c, json_t **out)
{
	for (;;) {
		int rc = proto_take(c, out);
		if (rc)
			return rc;
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

static int64_t int_of(json_t *msg, const char *key)
{
	return json_integer_value(json_object_get(msg, key));
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
	return json_pack("{s:s, s:I, s:I, s:s, s:s, s:s, s:s, s:b, s:b}", "type", "request", "pid", (json_int_t)m->pid,
			 "attempt", (json_int_t)m->attempt, "tool", m->tool, "src", m->src, "class", m->class_key,
			 "sig", m->sig_key, "cached", m->cached, "check", m->check);
}

void proto_request_decode(json_t *msg, struct proto_request *m)
{
	m->pid = int_of(msg, "pid");
	m->attempt = int_of(msg, "attempt");
	m->tool = str_or_empty(msg, "tool");
	m->src = str_or_empty(msg, "src");
	m->class_key = str_or_empty(msg, "class");
	m->sig_key = str_or_empty(msg, "sig");
	m->cached = json_is_true(json_object_get(msg, "cached"));
	m->check = json_is_true(json_object_get(msg, "check"));
}

json_t *proto_admit_encode(const struct proto_admit *m)
{
	return json_pack("{s:s, s:I}", "type", "admit", "job", (json_int_t)m->job);
}

void proto_admit_decode(json_t *msg, struct proto_admit *m)
{
	m->job = int_of(msg, "job");
}

json_t *proto_cgroup_encode(const struct proto_cgroup *m)
{
	/* NULL when the directory is no string in JSON (not UTF-8) */
	return json_pack("{s:s, s:I, s:s}", "type", "cgroup", "job", (json_int_t)m->job, "dir", m->dir);
}

void proto_cgroup_decode(json_t *msg, struct proto_cgroup *m)
{
	m->job = int_of(msg, "job");
	m->dir = str_or_empty(msg, "dir");
}

json_t *proto_started_encode(const struct proto_started *m)
{
	return json_pack("{s:s, s:I, s:I}", "type", "started", "job", (json_int_t)m->job, "pid", (json_int_t)m->pid);
}

void proto_started_decode(json_t *msg, struct proto_started *m)
{
	m->job = int_of(msg, "job");
	m->pid = int_of(msg, "pid");
}

json_t *proto_done_encode(const struct proto_done *m)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:o}", "type", "done", "job", (json_int_t)m->job, "duration_ms",
			 (json_int_t)m->duration_ms, "maxrss_bytes", (json_int_t)m->maxrss_bytes, "exit",
			 int_or_null(m->has_exit, m->exit_code), "signal", int_or_null(m->has_signal, m->signal),
			 "cache_hit", m->cache_hit < 0 ? json_null() : json_boolean(m->cache_hit));
}

void proto_done_decode(json_t *msg, struct proto_done *m)
{
	json_t *ex = json_object_get(msg, "exit"), *sig = json_object_get(msg, "signal");

	m->job = int_of(msg, "job");
	m->has_exit = json_is_integer(ex);
	m->exit_code = json_integer_value(ex);
	m->has_signal = json_is_integer(sig);
	m->signal = json_integer_value(sig);
	m->duration_ms = int_of(msg, "duration_ms");
	m->maxrss_bytes = (uint64_t)int_of(msg, "maxrss_bytes");
	json_t *hit = json_object_get(msg, "cache_hit");
	m->cache_hit = json_is_boolean(hit) ? json_is_true(hit) : -1;
}

json_t *proto_ack_encode(const struct proto_ack *m)
{
	return json_pack("{s:s, s:I, s:b, s:s}", "type", "ack", "job", (json_int_t)m->job, "retry", m->retry, "reason",
			 m->reason);
}

void proto_ack_decode(json_t *msg, struct proto_ack *m)
{
	m->job = int_of(msg, "job");
	m->retry = json_is_true(json_object_get(msg, "retry"));
	m->reason = str_or_empty(msg, "reason");
}

int proto_send_request(int fd, const struct proto_request *m)
{
	return send_new(fd, proto_request_encode(m));
}

int proto_send_admit(int fd, const struct proto_admit *m)
{
	return send_new(fd, proto_admit_encode(m));
}

int proto_send_cgroup(int fd, const struct proto_cgroup *m)
{
	return send_new(fd, proto_cgroup_encode(m));
}

int proto_send_started(int fd, const struct proto_started *m)
{
	return send_new(fd, proto_started_encode(m));
}

int proto_send_done(int fd, const struct proto_done *m)
{
	return send_new(fd, proto_done_encode(m));
}

int proto_send_ack(int fd, const struct proto_ack *m)
{
	return send_new(fd, proto_ack_encode(m));
}
