#include "util/path.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *path_base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

const char *runtime_dir(void)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");

	return rt && *rt && !access(rt, W_OK) ? rt : "/tmp";
}
