/* Allocation that cannot fail: on exhaustion headroom exits (status 125). */
#ifndef HEADROOM_XALLOC_H
#define HEADROOM_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* realloc for nmemb elements of size bytes; a product that overflows is exhaustion. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
/* printf into a new string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
