/* Growing arrays. */
#ifndef HEADROOM_GROW_H
#define HEADROOM_GROW_H

#include "util/xalloc.h"

/* Make room in the array ptr (capacity cap elements) for at least need elements:
 * the capacity doubles (16 at first), so n appends cost O(n). ptr and cap are lvalues
 * evaluated more than once. */
#define ARRAY_GROW(ptr, need, cap)                                                      \
	do {                                                                            \
		if ((size_t)(need) > (size_t)(cap)) {                                   \
			size_t grow_cap_ = (cap) ? (size_t)(cap) * 2 : 16;               \
			if (grow_cap_ < (size_t)(need))                                 \
				grow_cap_ = (size_t)(need);                             \
			(ptr) = xreallocarray((ptr), grow_cap_, sizeof(*(ptr)));         \
			(cap) = grow_cap_;                                              \
		}                                                                       \
	} while (0)

#endif
