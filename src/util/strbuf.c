#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/xalloc.h"

static void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list copy;
	int need;

	va_copy(copy, ap);
	need = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (need < 0)
		return;
	ARRAY_GROW(sb->s, sb->len + (size_t)need + 1, sb->cap);
	vsnprintf(sb->s + sb->len, sb->cap - sb->len, fmt, ap);
	sb->len += (size_t)need;
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

void strbuf_add(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s);

	ARRAY_GROW(sb->s, sb->len + n + 1, sb->cap);
	memcpy(sb->s + sb->len, s, n + 1);
	sb->len += n;
}

const char *strbuf_str(const struct strbuf *sb)
{
	return sb->s ? sb->s : "";
}

char *strbuf_detach(struct strbuf *sb)
{
	char *s = sb->s ? sb->s : xstrdup("");

	sb->s = NULL;
	sb->len = sb->cap = 0;
	return s;
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->s);
	sb->s = NULL;
	sb->len = sb->cap = 0;
}
