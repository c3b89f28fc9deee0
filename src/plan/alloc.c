#include "plan/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

#define MIB (1024ULL * 1024)
#define MIN_BLOCK 512ULL
#define SMALL_SIZE MIB           /* the small pool's largest request */
#define SMALL_BUFFER (2 * MIB)   /* a small pool segment */
#define LARGE_BUFFER (20 * MIB)  /* a segment for large requests under MIN_LARGE_ALLOC */
#define MIN_LARGE_ALLOC (10 * MIB)
#define ROUND_LARGE (2 * MIB)

void alloc_sim_init(struct alloc_sim *a)
{
	memset(a, 0, sizeof(*a));
}

void alloc_sim_free(struct alloc_sim *a)
{
	free(a->b);
	free(a->spare);
	free(a->freel);
	memset(a, 0, sizeof(*a));
}

static int new_block(struct alloc_sim *a)
{
	if (a->nspare)
		return a->spare[--a->nspare];
	ARRAY_GROW(a->b, a->nb + 1, a->capb);
	return (int)a->nb++;
}

static void recycle(struct alloc_sim *a, int i)
{
	ARRAY_GROW(a->spare, a->nspare + 1, a->capspare);
	a->b[i].size = 0;
	a->b[i].free = 0;
	a->spare[a->nspare++] = i;
}

static void free_add(struct alloc_sim *a, int i)
{
	ARRAY_GROW(a->freel, a->nfree + 1, a->capfree);
	a->b[i].free = 1;
	a->b[i].fpos = (int)a->nfree;
	a->freel[a->nfree++] = i;
}

static void free_del(struct alloc_sim *a, int i)
{
	int last = a->freel[--a->nfree];

	a->freel[a->b[i].fpos] = last;
	a->b[last].fpos = a->b[i].fpos;
	a->b[i].free = 0;
}

/* Give back every segment with nothing allocated in it (a free block with no
 * neighbours is a whole segment). */
static void release_cached(struct alloc_sim *a)
{
	for (size_t f = a->nfree; f-- > 0;) {
		int i = a->freel[f];
		if (a->b[i].prev < 0 && a->b[i].next < 0) {
			a->reserved_bytes -= a->b[i].size;
			free_del(a, i);
			recycle(a, i);
		}
	}
}

/* Address order: segments handed out later lie lower; then the offset within. */
static int lower(const struct sim_block *x, const struct sim_block *y)
{
	return x->seg != y->seg ? x->seg > y->seg : x->off < y->off;
}

int alloc_sim_malloc(struct alloc_sim *a, uint64_t size)
{
	int pool, best = -1;

	size = size < MIN_BLOCK ? MIN_BLOCK : (size + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
	pool = size <= SMALL_SIZE ? 0 : 1;
	/* best fit: the smallest free block of the pool that holds it */
	for (size_t f = 0; f < a->nfree; f++) {
		int i = a->freel[f];
		struct sim_block *b = &a->b[i];
		if (b->pool == pool && b->size >= size &&
		    (best < 0 || b->size < a->b[best].size || (b->size == a->b[best].size && lower(b, &a->b[best]))))
			best = i;
	}
	if (best < 0) {
		uint64_t seg = pool == 0 ? SMALL_BUFFER
			       : size < MIN_LARGE_ALLOC ? LARGE_BUFFER
							: (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
		if (a->limit_bytes && a->reserved_bytes + seg > a->limit_bytes) {
			release_cached(a);
			if (a->reserved_bytes + seg > a->limit_bytes)
				a->oom = 1; /* carried on: the peak then says by how much it misses */
		}
		best = new_block(a);
		a->b[best] = (struct sim_block){ seg, 0, a->nsegs++, pool, 0, -1, -1, 0 };
		free_add(a, best);
		a->reserved_bytes += seg;
		if (a->reserved_bytes > a->max_reserved_bytes)
			a->max_reserved_bytes = a->reserved_bytes;
	}
	uint64_t rest = a->b[best].size - size;
	if ((pool == 0 && rest >= MIN_BLOCK) || (pool == 1 && rest > SMALL_SIZE)) {
		int n = new_block(a);
		a->b[n] = (struct sim_block){ rest, a->b[best].off + size, a->b[best].seg, pool, 0, best,
					      a->b[best].next, 0 };
		free_add(a, n);
		if (a->b[best].next >= 0)
			a->b[a->b[best].next].prev = n;
		a->b[best].next = n;
		a->b[best].size = size;
	}
	free_del(a, best);
	a->allocated_bytes += a->b[best].size;
	if (a->allocated_bytes > a->max_allocated_bytes)
		a->max_allocated_bytes = a->allocated_bytes;
	return best;
}

void alloc_sim_release(struct alloc_sim *a, int i)
{
	struct sim_block *b = &a->b[i];
	int p = b->prev, n = b->next;

	a->allocated_bytes -= b->size;
	if (n >= 0 && a->b[n].free) {
		free_del(a, n);
		b->size += a->b[n].size;
		b->next = a->b[n].next;
		if (b->next >= 0)
			a->b[b->next].prev = i;
		recycle(a, n);
	}
	if (p >= 0 && a->b[p].free) {
		a->b[p].size += b->size;
		a->b[p].next = b->next;
		if (b->next >= 0)
			a->b[b->next].prev = p;
		recycle(a, i);
		return;
	}
	free_add(a, i);
}
