/* A growing string: appends in amortised constant time, always NUL-terminated once
 * anything was added. */
#ifndef HEADROOM_STRBUF_H
#define HEADROOM_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *s;    /* owned; NULL until the first append */
	size_t len; /* bytes before the NUL */
	size_t cap; /* bytes allocated */
};

#define STRBUF_INIT { NULL, 0, 0 }

void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_add(struct strbuf *sb, const char *s);
/* The string ("" when nothing was added); still owned by sb. */
const char *strbuf_str(const struct strbuf *sb);
/* The string, now the caller's to free (never NULL); sb is empty again. */
char *strbuf_detach(struct strbuf *sb);
void strbuf_release(struct strbuf *sb);

#endif
