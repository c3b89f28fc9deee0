#include "govern/proto.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/grow.h"
#include "util/units.h"
#include "util/escape.h"
#include "util/xalloc.h"

/* The bytes every connection's unfinished message holds (PROTO_MAX_PARTS_HELD). */
static size_t parts_held;

void proto_conn_init(struct proto_conn *c, int fd)
{
	c->fd = fd;
	c->buf = NULL;
	c->start = c->len = 0;
	c->part = NULL;
	c->part_len = c->part_cap = 0;
}

/* Let go of the parts taken so far. */
static void parts_drop(struct proto_conn *c)
{
	parts_held -= c->part_cap;
	free(c->part);
	c->part = NULL;
	c->part_len = c->part_cap = 0;
}

void proto_conn_close(struct proto_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	parts_drop(c);
	proto_conn_init(c, -1);
}

/* Send s (len bytes, then the NUL json_dumps ends it with) as one line. */
static int send_text(int fd, char *s, size_t len)
{
	size_t off = 0;

	s[len] = '\n'; /* the NUL becomes the line end; the length covers it */
	len++;
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	return 0;
}

/* A message too long for a line, as parts of its JSON text, each cut where a UTF-8
 * sequence starts so that each piece is a JSON string of its own. Escaping at most
 * doubles a piece (json_dumps escapes every control character already). */
static int send_parts(int fd, const char *text, size_t len)
{
	if (len > PROTO_MAX_MESSAGE)
		return -E2BIG;
	for (size_t off = 0; off < len;) {
		size_t cut = len - off < PROTO_PART_BYTES ? len - off : PROTO_PART_BYTES;
		while (off + cut < len && cut > 1 && ((unsigned char)text[off + cut] & 0xc0) == 0x80)
			cut--;
		json_t *part = json_pack("{s:s, s:s%, s:b}", "type", "part", "data", text + off, cut, "more",
					 off + cut < len);
		char *line = part ? json_dumps(part, JSON_COMPACT) : NULL;
		int rc = line ? send_text(fd, line, strlen(line)) : -ENOMEM;
		free(line);
		json_decref(part);
		if (rc)
			return rc;
		off += cut;
	}
	return 0;
}

int proto_send(int fd, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	int rc;

	if (!s)
		return -ENOMEM;
	size_t len = strlen(s);
	rc = len > PROTO_MAX_LINE ? send_parts(fd, s, len) : send_text(fd, s, len);
	free(s);
	return rc;
}

/* The buffer: a whole line and its newline, never more. */
#define CONN_BUF (PROTO_MAX_LINE + 1)

int proto_fill(struct proto_conn *c)
{
	ssize_t n;

	if (c->start) { /* what was taken goes once a read, not once a line */
		memmove(c->buf, c->buf + c->start, c->len - c->start);
		c->len -= c->start;
		c->start = 0;
	}
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

/* Take a part into c->part: 1 when it was the last (*whole: the message), 0 when more
 * follow, -EPROTO for a part without its data, -E2BIG past PROTO_MAX_MESSAGE. */
static int take_part(struct proto_conn *c, json_t *part, json_t **whole)
{
	json_t *data = json_object_get(part, "data");
	size_t n = json_string_length(data);
	json_error_t err;

	if (!json_is_string(data) || c->part_len + n > PROTO_MAX_MESSAGE) {
		parts_drop(c);
		return json_is_string(data) ? -E2BIG : -EPROTO;
	}
	if (c->part_len + n > c->part_cap) { /* doubling, but never past the message's limit */
		size_t cap = c->part_cap * 2 > c->part_len + n ? c->part_cap * 2 : c->part_len + n;
		cap = cap < PROTO_MAX_MESSAGE ? cap : PROTO_MAX_MESSAGE;
		if (parts_held - c->part_cap + cap > PROTO_MAX_PARTS_HELD) {
			parts_drop(c);
			return -E2BIG;
		}
		c->part = xrealloc(c->part, cap);
		parts_held += cap - c->part_cap;
		c->part_cap = cap;
	}
	memcpy(c->part + c->part_len, json_string_value(data), n);
	c->part_len += n;
	if (json_is_true(json_object_get(part, "more")))
		return 0;
	*whole = json_loadb(c->part, c->part_len, 0, &err);
	parts_drop(c);
	if (!*whole || !json_is_object(*whole) || !strcmp(proto_type(*whole), "part")) {
		json_decref(*whole);
		return -EPROTO;
	}
	return 1;
}

int proto_take(struct proto_conn *c, json_t **out)
{
	for (;;) {
		char *nl = c->len > c->start ? memchr(c->buf + c->start, '\n', c->len - c->start) : NULL;
		json_error_t err;
		json_t *msg;

		if (!nl)
			return c->len - c->start == CONN_BUF ? -E2BIG : 0;
		size_t line = (size_t)(nl - (c->buf + c->start));
		msg = json_loadb(c->buf + c->start, line, 0, &err);
		c->start += line + 1;
		if (c->start == c->len)
			c->start = c->len = 0;
		if (!msg || !json_is_object(msg)) {
			json_decref(msg);
			return -EPROTO;
		}
		if (strcmp(proto_type(msg), "part")) {
			*out = msg;
			return 1;
		}
		json_t *whole = NULL;
		int rc = take_part(c, msg, &whole);
		json_decref(msg);
		if (rc == 1)
			*out = whole;
		if (rc)
			return rc;
	}
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

/* A string of bytes: a JSON string when it is UTF-8, else {"hex":H}. NULL for NULL. */
static json_t *bytes_json(const char *s)
{
	static const char digits[] = "0123456789abcdef";

	if (!s)
		return NULL;
	size_t n = strlen(s);
	if (utf8_valid(s))
		return json_stringn(s, n);
	char *hex = xmalloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[(unsigned char)s[i] >> 4];
		hex[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	hex[2 * n] = '\0';
	json_t *v = json_pack("{s:s}", "hex", hex);
	free(hex);
	return v;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string field of bytes_json(): its bytes, decoded into msg (where *out then points);
 * "" when absent or of another type. -EINVAL when the hex is malformed or holds a NUL,
 * which no C string can. */
static int bytes_field(json_t *msg, const char *key, const char **out)
{
	json_t *v = json_object_get(msg, key);
	const char *hex;
	size_t n;

	*out = "";
	if (json_is_string(v)) {
		*out = json_string_value(v);
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	hex = json_string_value(json_object_get(v, "hex"));
	n = hex ? strlen(hex) : 1;
	if (n % 2)
		return -EINVAL;
	char *b = xmalloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0 || (!hi && !lo)) {
			free(b);
			return -EINVAL;
		}
		b[i] = (char)(hi << 4 | lo);
	}
	json_t *str = json_stringn_nocheck(b, n / 2);
	free(b);
	if (!str || json_object_set_new(msg, key, str))
		return -ENOMEM;
	*out = json_string_value(json_object_get(msg, key));
	return 0;
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
	return json_pack("{s:s, s:I, s:o, s:o, s:o, s:o, s:b, s:b}", "type", "request", "attempt",
			 (json_int_t)m->attempt, "tool", bytes_json(m->tool), "src", bytes_json(m->src), "class",
			 bytes_json(m->class_key), "sig", bytes_json(m->sig_key), "cached", m->cached, "check", m->check);
}

int proto_request_decode(json_t *msg, struct proto_request *m)
{
	m->cached = json_is_true(json_object_get(msg, "cached"));
	m->check = json_is_true(json_object_get(msg, "check"));
	if (bytes_field(msg, "tool", &m->tool) || bytes_field(msg, "src", &m->src) ||
	    bytes_field(msg, "class", &m->class_key) || bytes_field(msg, "sig", &m->sig_key))
		return -EINVAL;
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
	return json_pack("{s:s, s:I, s:o}", "type", "cgroup", "job", (json_int_t)m->job, "dir", bytes_json(m->dir));
}

int proto_cgroup_decode(json_t *msg, struct proto_cgroup *m)
{
	if (bytes_field(msg, "dir", &m->dir) || !*m->dir)
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
	return json_pack("{s:s, s:I, s:b, s:o}", "type", "ack", "job", (json_int_t)m->job, "retry", m->retry, "reason",
			 bytes_json(m->reason));
}

int proto_ack_decode(json_t *msg, struct proto_ack *m)
{
	m->retry = json_is_true(json_object_get(msg, "retry"));
	if (bytes_field(msg, "reason", &m->reason))
		return -EINVAL;
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
