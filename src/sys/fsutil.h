/* Small file readers shared by the /proc and cgroup readers. */
#ifndef HEADROOM_FSUTIL_H
#define HEADROOM_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

/* Read up to len-1 bytes of path into buf, NUL-terminated. Returns bytes read or -errno. */
long fs_read(const char *path, char *buf, size_t len);
/* Read one unsigned decimal number. "max" gives -ENODATA. Returns 0 or -errno. */
int fs_read_u64(const char *path, uint64_t *out);
/* Find "key value" in a file of such lines (memory.stat, memory.events, vmstat). 0 or -errno. */
int fs_read_key_u64(const char *path, const char *key, uint64_t *out);
/* Write a string to a file. 0 or -errno. */
int fs_write(const char *path, const char *s);
/* What a file of this mode is, said for a message ("a character device", "a FIFO"), or
 * NULL for a regular file. */
const char *fs_kind(mode_t mode);
/* A file named by the user, opened for reading (*f, to fclose), with *st its stat: a
 * regular file, or a pipe or FIFO (what `<(command)` names), opened without waiting for
 * a writer (with none, it reads as empty). Anything else is refused before it is
 * opened: -EINVAL with *kind what it is (fs_kind: a directory, a device, a socket), and
 * -errno for a file that cannot be opened. 0 otherwise. */
int fs_open_input(const char *path, FILE **f, struct stat *st, const char **kind);
/* The executable `name` on PATH (or name itself when it has a slash), or NULL; caller
 * frees. */
char *fs_which(const char *name);

#endif
