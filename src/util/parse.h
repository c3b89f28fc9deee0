/* Numbers from outside (flags, files): the whole string is the number, nothing before
 * or after it, and it lies in [min, max]. One parser for each kind, so that every flag
 * is checked alike where it is parsed. Each returns 0, or -EINVAL (not such a number)
 * or -ERANGE (outside [min, max]); *out is untouched on error. */
#ifndef HEADROOM_PARSE_H
#define HEADROOM_PARSE_H

#include <stdint.h>

/* A whole decimal number: "42", "-3" ("+", spaces, "0x", "1e3" are not). */
int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);
/* A finite decimal number: "0.9", "-1", "2.5e3", ".5" ("nan", "inf", hex, spaces are
 * not). Underflow to 0 is -ERANGE. */
int parse_double(const char *s, double min, double max, double *out);
/* A percentage: a finite number as parse_double, with or without a '%' after it. */
int parse_pct(const char *s, double min, double max, double *out);
/* A size as size_parse (util/units.h) reads it: "3.5G", "512M", "100MB"; -EDOM for a
 * number without its unit ("80"), as size_parse. */
int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out_bytes);

#endif
