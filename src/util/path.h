/* File name helpers. */
#ifndef HEADROOM_PATH_H
#define HEADROOM_PATH_H

/* The last component of p ("/usr/bin/nvcc" -> "nvcc"); points into p. */
const char *path_base(const char *p);

/* Where headroom makes its private directories (sockets, shims): $XDG_RUNTIME_DIR when
 * it is set and writable, else /tmp. Points into the environment or a literal. */
const char *runtime_dir(void);

#endif
