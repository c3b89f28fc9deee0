/* An output file written whole or not at all: into a temporary file beside it, renamed
 * over it once every byte is written and synced. A write that fails (a full disk, bad
 * content) leaves the file that was there as it was, and no partial file. */
#ifndef HEADROOM_ATOMICFILE_H
#define HEADROOM_ATOMICFILE_H

#include <stdio.h>

struct atomic_file {
	FILE *f;     /* write here */
	char *path;  /* where it goes (a symlink's target) */
	char *tmp;   /* the temporary file; NULL when written in place (atomic_open) */
};

/* Start path: 0 or -errno (its directory cannot be written...). An existing file's mode
 * (and, for root, owner) is kept; a new one gets 0666 less the umask. Written in place,
 * as fopen would: a device, a FIFO, a path under /dev or /proc, the file a standard
 * stream goes to (a rename would lose its other writes), a symlink to nothing yet. */
int atomic_open(struct atomic_file *a, const char *path);
/* End it: with rc 0 (every write went well) flush, sync and rename into place; else, or
 * when that fails, remove the temporary file. Returns rc, or the -errno of what failed. */
int atomic_close(struct atomic_file *a, int rc);

#endif
