/* File name helpers. */
#ifndef HEADROOM_PATH_H
#define HEADROOM_PATH_H

/* The last component of p ("/usr/bin/nvcc" -> "nvcc"); points into p. */
const char *path_base(const char *p);

#endif
