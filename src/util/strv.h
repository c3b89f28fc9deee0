/* Lists of strings. */
#ifndef HEADROOM_STRV_H
#define HEADROOM_STRV_H

/* Is s one of the strings of the NULL-terminated list? */
int strv_contains(const char *const *list, const char *s);

#endif
