/* "Did you mean": the known word nearest a mistyped one. */
#ifndef HEADROOM_SUGGEST_H
#define HEADROOM_SUGGEST_H

#include <stddef.h>

/* The edit distance (insertions, deletions, substitutions and swaps of two neighbours)
 * between a and b, counted up to 255: longer words than that are "far". */
unsigned suggest_distance(const char *a, const char *b);
/* As suggest_distance, with no letter replaced (a replacement counts as a deletion and an
 * insertion): the slips of a typing hand, where "b300" for "b200" is another word. */
unsigned suggest_slips(const char *a, const char *b);
/* Of the n words in known, the one nearest word: within a third of its length in edits
 * (at least 1, at most 3), or of which word is a prefix when only one is. NULL when none
 * is near. The result points into known. */
const char *suggest_closest(const char *word, const char *const *known, size_t n);

#endif
