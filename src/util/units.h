/* Sizes and clocks. */
#ifndef HEADROOM_UNITS_H
#define HEADROOM_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* A size as a user gives it, a number and its unit (docs/units.md): "3.5G", "512MiB" and
 * "2GiB" are powers of 1024 (K, M, G, T and KiB, MiB, GiB, TiB), "100MB" and "80GB" powers
 * of 1000 (KB, MB, GB, TB), "7B" bytes; case does not matter. A bare number is refused,
 * for "80" could be bytes or gigabytes, but for 0, which is 0 whatever its unit.
 * Returns 0, -EDOM (a number without its unit) or -EINVAL (not a size). */
int size_parse(const char *s, uint64_t *out_bytes);
/* What to say of a number size_parse refused with -EDOM: "'80' has no unit: 80 what? 80G
 * is 80 GiB, 80GB is 80 GB" with unit the letter likeliest for the value ('G', 'M'); a
 * count of bytes is told to say B. Into buf of len bytes; returns buf. */
char *size_unit_hint(const char *s, char unit, char *buf, size_t len);

/* "3.50 GiB" into buf; returns buf. */
char *size_format(uint64_t bytes, char *buf, size_t len);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t now_ms(void);
/* CLOCK_MONOTONIC in nanoseconds: the clock the kernel's process events are stamped by. */
uint64_t now_ns(void);

#endif
