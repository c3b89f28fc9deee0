#include "util/strv.h"

#include <string.h>

int strv_contains(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return 1;
	return 0;
}
