#include "util/path.h"

#include <string.h>

const char *path_base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}
