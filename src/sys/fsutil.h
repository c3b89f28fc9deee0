/* Small file readers shared by the /proc and cgroup readers. */
#ifndef HEADROOM_FSUTIL_H
#define HEADROOM_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Read up to len-1 bytes of path into buf, NUL-terminated. Returns bytes read or -errno. */
long fs_read(const char *path, char *buf, size_t len);
/* Read one unsigned decimal number. "max" gives -ENODATA. Returns 0 or -errno. */
int fs_read_u64(const char *path, uint64_t *out);
/* Find "key value" in a file of such lines (memory.stat, memory.events, vmstat). 0 or -errno. */
int fs_read_key_u64(const char *path, const char *key, uint64_t *out);
/* Write a string to a file. 0 or -errno. */
int fs_write(const char *path, const char *s);
/* The executable `name` on PATH (or name itself when it has a slash), or NULL; caller
 * frees. */
char *fs_which(const char *name);

#endif
