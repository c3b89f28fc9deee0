/* Text from outside (a run id, a process name) made safe for where it goes: one function
 * per sink, each appending to a strbuf. Every one yields valid UTF-8: a byte that starts
 * no valid sequence (or one cut short) is replaced or shown, never passed on, so that a
 * reader that checks (Prometheus, a JSON parser) does not drop the whole record. */
#ifndef HEADROOM_ESCAPE_H
#define HEADROOM_ESCAPE_H

#include <stddef.h>

#include "util/strbuf.h"

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 when s starts none (an
 * invalid byte, an overlong or surrogate form, a sequence cut short, or the NUL). */
size_t utf8_seq_len(const char *s);
/* The longest prefix of s of at most max bytes that ends on a character boundary. */
size_t utf8_cut(const char *s, size_t max);
/* Whether all of s is valid UTF-8. */
int utf8_valid(const char *s);

/* Valid UTF-8 for a JSON string (a report, a record, a JSON line): each invalid byte
 * shown as \xHH (jansson escapes the rest). */
void esc_utf8(struct strbuf *sb, const char *s);
/* A Prometheus label value: esc_utf8, and backslash, quote and newline escaped. */
void esc_prom_label(struct strbuf *sb, const char *s);
/* For a terminal (the live view, stderr): control characters (C0, DEL, C1, and the
 * line, paragraph and bidirectional controls) and invalid bytes shown as \xHH or
 * \u{HHHH}, a backslash as \\, so that nothing written can move the cursor, set a
 * title or reorder the text. */
void esc_term(struct strbuf *sb, const char *s);
/* What sink makes of s, as a string to free. */
char *esc_dup(void (*sink)(struct strbuf *, const char *), const char *s);

#endif
