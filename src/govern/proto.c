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
