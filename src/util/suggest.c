#include "util/suggest.h"

#include <string.h>

enum { FAR = 255, MAXLEN = 64 };

/* The optimal-string-alignment distance, a substitution costing sub (2: as a deletion
 * and an insertion, so that none is counted). */
static unsigned distance(const char *a, const char *b, unsigned sub)
{
	size_t la = strlen(a), lb = strlen(b);
	/* three rows of the optimal-string-alignment table */
	unsigned rows[3][MAXLEN + 1], *pp = rows[0], *p = rows[1], *c = rows[2];

	if (la > MAXLEN || lb > MAXLEN)
		return FAR;
	for (size_t j = 0; j <= lb; j++)
		p[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		c[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned cost = a[i - 1] != b[j - 1] ? sub : 0, v = p[j - 1] + cost;
			if (p[j] + 1 < v)
				v = p[j] + 1;
			if (c[j - 1] + 1 < v)
				v = c[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < v)
				v = pp[j - 2] + 1;
			c[j] = v;
		}
		unsigned *t = pp;
		pp = p;
		p = c;
		c = t;
	}
	return p[lb] < FAR ? p[lb] : FAR;
}

unsigned suggest_distance(const char *a, const char *b)
{
	return distance(a, b, 1);
}

unsigned suggest_slips(const char *a, const char *b)
{
	return distance(a, b, 2);
}

const char *suggest_closest(const char *word, const char *const *known, size_t n)
{
	size_t len = strlen(word), nprefix = 0;
	unsigned limit = (unsigned)(len / 3), best_d = FAR;
	const char *best = NULL, *prefixed = NULL;

	if (!len)
		return NULL;
	if (limit < 1)
		limit = 1;
	if (limit > 3)
		limit = 3;
	for (size_t i = 0; i < n; i++) {
		unsigned d = suggest_distance(word, known[i]);
		if (d < best_d) {
			best_d = d;
			best = known[i];
		}
		if (!strncmp(known[i], word, len)) {
			nprefix++;
			prefixed = known[i];
		}
	}
	if (best && best_d <= limit)
		return best;
	return nprefix == 1 ? prefixed : NULL;
}
