/* Sizes and clocks. */
#ifndef HEADROOM_UNITS_H
#define HEADROOM_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Parse "3.5G", "512M", "2GiB", "1000000" (bytes; K/M/G/T are powers of 1024).
 * Returns 0 or -EINVAL. */
int size_parse(const char *s, uint64_t *out_bytes);

/* "3.50 GiB" into buf; returns buf. */
char *size_format(uint64_t bytes, char *buf, size_t len);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t now_ms(void);
/* CLOCK_MONOTONIC in nanoseconds: the clock the kernel's process events are stamped by. */
uint64_t now_ns(void);

#endif
