/* Bytes that may or may not be UTF-8: file names and command lines are bytes, JSON
 * strings are UTF-8. */
#ifndef HEADROOM_UTF8_H
#define HEADROOM_UTF8_H

#include <stddef.h>

/* Are the n bytes of s well-formed UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF)? NUL bytes count as valid. */
int utf8_valid(const char *s, size_t n);
/* A copy of the NUL-terminated s that is valid UTF-8: each byte of an ill-formed
 * sequence shown as \xNN, so that it stays visible in JSON and on a terminal. Caller
 * frees. */
char *utf8_visible(const char *s);

#endif
