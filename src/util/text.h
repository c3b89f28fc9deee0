/* Text from outside (file names, directories, keys) shown safely: on a terminal, where a
 * control character would act instead of show, and in JSON, whose strings are UTF-8. */
#ifndef HEADROOM_TEXT_H
#define HEADROOM_TEXT_H

#include <stddef.h>

/* The bytes at s that make one UTF-8 character (1 to 4), or 0 where s starts none that
 * is valid (a stray byte, an overlong form, a surrogate, past U+10FFFF). */
size_t text_utf8_char(const char *s);
/* Whether all of s is UTF-8. */
int text_is_utf8(const char *s);
/* s for a terminal, lossless, to free: control characters (C0, DEL, C1) and bytes that
 * are not UTF-8 as \xHH (\t, \n, \r, \e by name), a backslash as \\, the rest as it is. */
char *text_printable(const char *s);

#endif
