#include "plan/alloc.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

/* PyTorch's allocator constants, as the torch version modelled has them */
#define MIN_BLOCK (a->k.min_block)
#define SMALL_SIZE (a->k.small_size)
#define SMALL_BUFFER (a->k.small_buffer)
#define LARGE_BUFFER (a->k.large_buffer)
#define MIN_LARGE_ALLOC (a->k.min_large_alloc)
#define ROUND_LARGE (a->k.round_large)
#define FREE_SHIFT_LOOP 16       /* entries a bucket shifts by a loop, past which memmove */

_Static_assert(ALLOC_SIM_BUCKETS % 64 == 0, "held[] has a bit a bucket, 64 a word");

void alloc_sim_init(struct alloc_sim *a)
{
	memset(a, 0, sizeof(*a));
	a->k = pytorch_constants()->alloc;
	for (size_t i = 0; i < sizeof(a->tail) / sizeof(a->tail[0]); i++)
		a->tail[i] = -1;
}


void alloc_sim_free(struct alloc_sim *a)
{
	free(a->b);
	free(a->spare);
	free(a->seg_live);
	free(a->seg_bytes);
	for (size_t p = 0; p < 2 * ALLOC_SIM_STREAMS; p++)
		for (size_t k = 0; k < ALLOC_SIM_BUCKETS; k++)
			free(a->freeb[p][k].v);
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

/* A bucket's order: by size, then address (lower first; segments handed out later lie
 * lower, then the offset within), so that the best fit for a request is the first entry
 * at least its size of its bucket or of a later one. Keys are unique: no two blocks
 * share an address. */
static int before(const struct sim_free *e, uint64_t size, int seg, uint64_t off)
{
	if (e->size != size)
		return e->size < size;
	return e->seg != seg ? e->seg > seg : e->off < off;
}

/* A size's bucket: its highest bit and the four below it, so that a later bucket holds
 * only larger sizes (sizes are 512 B at least). */
static int bucket(uint64_t size)
{
	int h = 63 - __builtin_clzll(size);

	return h * 16 + (int)(size >> (h - 4) & 15);
}

static struct sim_bucket *bucket_of(struct alloc_sim *a, int pool, uint64_t size)
{
	return &a->freeb[pool][bucket(size)];
}

/* The place of a block of that key in bucket q, or where it goes: the first entry not
 * before it. */
static size_t free_place(const struct sim_bucket *q, uint64_t size, int seg, uint64_t off)
{
	size_t lo = 0, hi = q->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (before(&q->v[mid], size, seg, off))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* n free-list entries from src to dst (overlapping, a place apart): most buckets hold a
 * few blocks, where a loop beats memmove's call; a large model's many equal weights and
 * gradients fill some with hundreds */
static void entries_move(struct sim_free *dst, const struct sim_free *src, size_t n)
{
	if (n > FREE_SHIFT_LOOP)
		memmove(dst, src, n * sizeof(*dst));
	else if (dst > src)
		for (size_t j = n; j-- > 0;)
			dst[j] = src[j];
	else
		for (size_t j = 0; j < n; j++)
			dst[j] = src[j];
}

static void free_add(struct alloc_sim *a, int i)
{
	const struct sim_block *x = &a->b[i];
	struct sim_bucket *q = bucket_of(a, x->pool, x->size);
	size_t f;

	ARRAY_GROW(q->v, q->n + 1, q->cap);
	f = free_place(q, x->size, x->seg, x->off);
	entries_move(&q->v[f + 1], &q->v[f], q->n - f);
	q->v[f] = (struct sim_free){ x->size, x->off, x->seg, i };
	if (!q->n++) {
		int k = bucket(a->b[i].size);
		a->held[a->b[i].pool][k / 64] |= 1ULL << (k % 64);
	}
	a->nfree++;
	a->b[i].free = 1;
}

static void free_remove_at(struct alloc_sim *a, struct sim_bucket *q, size_t f)
{
	const struct sim_block *x = &a->b[q->v[f].block];

	if (!--q->n) { /* x's size is still its bucket's key */
		int k = bucket(x->size);
		a->held[x->pool][k / 64] &= ~(1ULL << (k % 64));
	}
	a->b[q->v[f].block].free = 0;
	a->nfree--;
	entries_move(&q->v[f], &q->v[f + 1], q->n - f);
}

/* Take block i off the free list (before its size changes: the size is its key). */
static void free_del(struct alloc_sim *a, int i)
{
	const struct sim_block *x = &a->b[i];
	struct sim_bucket *q = bucket_of(a, x->pool, x->size);

	free_remove_at(a, q, free_place(q, x->size, x->seg, x->off));
}

/* The first bucket from k on that holds a block, or ALLOC_SIM_BUCKETS. */
static int next_held(const struct alloc_sim *a, int pool, int k)
{
	for (int w = k / 64; w < ALLOC_SIM_BUCKETS / 64; w++) {
		uint64_t bits = a->held[pool][w] & (w == k / 64 ? ~0ULL << (k % 64) : ~0ULL);
		if (bits)
			return w * 64 + __builtin_ctzll(bits);
	}
	return ALLOC_SIM_BUCKETS;
}

/* A free block's place in the free lists: its bucket and its index there. */
struct free_at {
	int block;                 /* -1: none */
	int k;
	size_t f;
};

/* The free block of the pool that best fits size into *best, and the one after it in
 * best-fit order into *next (block -1: none). */
static void best_fit(struct alloc_sim *a, int pool, uint64_t size, struct free_at *best, struct free_at *next)
{
	best->block = next->block = -1;
	for (int k = next_held(a, pool, bucket(size)); k < ALLOC_SIM_BUCKETS; k = next_held(a, pool, k + 1)) {
		struct sim_bucket *q = &a->freeb[pool][k];
		size_t f = best->block < 0 ? free_place(q, size, INT_MAX, 0) : 0;

		if (f >= q->n)
			continue;
		if (best->block >= 0) {
			*next = (struct free_at){ q->v[f].block, k, f };
			return;
		}
		*best = (struct free_at){ q->v[f].block, k, f };
		if (f + 1 < q->n) {
			*next = (struct free_at){ q->v[f + 1].block, k, f + 1 };
			return;
		}
	}
}

/* Give back every segment with nothing allocated in it (a free block with no
 * neighbours is a whole segment). */
static void release_cached(struct alloc_sim *a)
{
	for (size_t p = 0; p < 2 * ALLOC_SIM_STREAMS; p++)
		for (size_t k = 0; k < ALLOC_SIM_BUCKETS; k++) {
			struct sim_bucket *q = &a->freeb[p][k];

			for (size_t f = q->n; f-- > 0;) {
				int i = q->v[f].block;
				if (a->b[i].prev < 0 && a->b[i].next < 0) {
					a->reserved_bytes -= a->b[i].size;
					free_remove_at(a, q, f);
					recycle(a, i);
				}
			}
		}
}

/* A new segment of bytes; its number. */
static int new_segment(struct alloc_sim *a, uint64_t bytes)
{
	ARRAY_GROW(a->seg_live, (size_t)a->nsegs + 1, a->cap_seg_live);
	ARRAY_GROW(a->seg_bytes, (size_t)a->nsegs + 1, a->cap_seg_bytes);
	a->seg_live[a->nsegs] = 0;
	a->seg_bytes[a->nsegs] = bytes;
	return a->nsegs++;
}

static void reserve(struct alloc_sim *a, uint64_t bytes)
{
	a->reserved_bytes += bytes;
	if (a->reserved_bytes > a->max_reserved_bytes)
		a->max_reserved_bytes = a->reserved_bytes;
}

/* Expandable segments under pressure: every free page is unmapped (at most what is
 * reserved beyond the live blocks); then, if growing by add still passes the limit, the
 * run is out of memory. */
static void unmap_free(struct alloc_sim *a, uint64_t add)
{
	if (!a->limit_bytes || a->reserved_bytes + add <= a->limit_bytes)
		return;
	uint64_t spare = a->reserved_bytes - a->allocated_bytes;
	a->unmapped_bytes += spare;
	a->reserved_bytes -= spare;
	if (a->reserved_bytes + add > a->limit_bytes)
		a->oom = 1;
}

/* Expandable: size bytes handed out of free blocks whose pages may have been unmapped
 * map them again (as many as were unmapped, at most). */
static void remap(struct alloc_sim *a, uint64_t size, uint64_t page)
{
	uint64_t want = (size + page - 1) / page * page;

	if (!a->unmapped_bytes)
		return;
	want = want < a->unmapped_bytes ? want : a->unmapped_bytes;
	unmap_free(a, want);
	a->unmapped_bytes -= want;
	reserve(a, want);
}

/* Expandable segments: the pool's segment grows by whole pages to hold size at its
 * end, into its free tail block or a new one after its last. Returns the block (off the
 * free list, size at least size). */
static int grow_segment(struct alloc_sim *a, int pool, uint64_t size)
{
	uint64_t page = pool % 2 == 0 ? SMALL_BUFFER : LARGE_BUFFER, have = 0, add;
	int t = a->tail[pool], best;

	if (t >= 0 && a->b[t].free) {
		have = a->b[t].size;
		free_del(a, t);
	}
	add = (size - have + page - 1) / page * page;
	unmap_free(a, add);
	if (have)
		remap(a, have, page);
	if (t >= 0 && have) {
		best = t;
		a->b[best].size += add;
	} else {
		best = new_block(a);
		if (t >= 0) {
			a->b[best] = (struct sim_block){ add, a->b[t].off + a->b[t].size, a->b[t].seg, pool, 0, t, -1, 0 };
			a->b[t].next = best;
		} else {
			a->b[best] = (struct sim_block){ add, 0, new_segment(a, 0), pool, 0, -1, -1, 0 };
		}
		a->tail[pool] = best;
	}
	reserve(a, add);
	return best;
}

/* A block of segment seg taken (+1) or freed (-1): a segment holding a live block
 * counts whole (with expandable segments, which give back any free page, the live blocks
 * alone do). */
static void occupy(struct alloc_sim *a, int seg, int d)
{
	int was = a->seg_live[seg];

	a->seg_live[seg] += d;
	if (a->expandable)
		a->occupied_bytes = a->allocated_bytes;
	else if (!was && d > 0)
		a->occupied_bytes += a->seg_bytes[seg];
	else if (was && !a->seg_live[seg])
		a->occupied_bytes -= a->seg_bytes[seg];
	if (a->occupied_bytes > a->max_occupied_bytes)
		a->max_occupied_bytes = a->occupied_bytes;
}

/* The live requests' bound after pool's live bytes moved by d (a request, or minus one):
 * a small pool's in whole segments, with expandable segments each pool's in whole pages
 * (a live block's page is mapped), a large native pool's as they are. */
static uint64_t pool_live_rounded(const struct alloc_sim *a, int pool)
{
	uint64_t unit = pool % 2 == 0 ? SMALL_BUFFER : a->expandable ? LARGE_BUFFER : MIN_BLOCK;

	return (a->pool_live[pool] + unit - 1) / unit * unit;
}

static void live_move(struct alloc_sim *a, int pool, uint64_t req, int d)
{
	/* the other pools' rounded bytes stand as they were: only this one's moves */
	a->live_low_bytes -= pool_live_rounded(a, pool);
	a->pool_live[pool] = d > 0 ? a->pool_live[pool] + req : a->pool_live[pool] - req;
	a->live_low_bytes += pool_live_rounded(a, pool);
	if (a->live_low_bytes > a->max_live_low_bytes)
		a->max_live_low_bytes = a->live_low_bytes;
	if (d < 0 && req > a->max_freed_bytes)
		a->max_freed_bytes = req;
}

int alloc_sim_malloc(struct alloc_sim *a, uint64_t size)
{
	return alloc_sim_malloc_on(a, size, 0);
}

int alloc_sim_malloc_on(struct alloc_sim *a, uint64_t size, int stream)
{
	int pool, best;
	struct free_at fit, next;

	size = size < MIN_BLOCK ? MIN_BLOCK : (size + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
	pool = (size <= SMALL_SIZE ? 0 : 1) + 2 * (stream >= 0 && stream < ALLOC_SIM_STREAMS ? stream : 0);
	best_fit(a, pool, size, &fit, &next);
	/* expandable: the free block at the segment's end counts as large as it could grow,
	 * so any other block that fits goes first */
	if (a->expandable && fit.block >= 0 && fit.block == a->tail[pool] && next.block >= 0)
		fit = next;
	best = fit.block;
	if (best >= 0) {
		free_remove_at(a, &a->freeb[pool][fit.k], fit.f);
		if (a->expandable)
			remap(a, size, pool % 2 == 0 ? SMALL_BUFFER : LARGE_BUFFER);
	} else if (a->expandable) {
		best = grow_segment(a, pool, size);
	} else {
		uint64_t seg = pool % 2 == 0 ? SMALL_BUFFER
			       : size < MIN_LARGE_ALLOC ? LARGE_BUFFER
							: (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
		if (a->limit_bytes && a->reserved_bytes + seg > a->limit_bytes) {
			release_cached(a);
			if (a->reserved_bytes + seg > a->limit_bytes)
				a->oom = 1; /* carried on: the peak then says by how much it misses */
		}
		best = new_block(a);
		a->b[best] = (struct sim_block){ seg, 0, new_segment(a, seg), pool, 0, -1, -1, 0 };
		reserve(a, seg);
	}
	uint64_t rest = a->b[best].size - size;
	if (((pool % 2 == 0 || a->expandable) && rest >= MIN_BLOCK) || (pool % 2 == 1 && rest > SMALL_SIZE)) {
		int n = new_block(a);
		a->b[n] = (struct sim_block){ rest, a->b[best].off + size, a->b[best].seg, pool, 0, best,
					      a->b[best].next, 0 };
		if (a->tail[pool] == best)
			a->tail[pool] = n;
		free_add(a, n);
		if (a->b[best].next >= 0)
			a->b[a->b[best].next].prev = n;
		a->b[best].next = n;
		a->b[best].size = size;
	}
	a->b[best].req = size;
	live_move(a, pool, size, 1);
	a->allocated_bytes += a->b[best].size;
	if (a->allocated_bytes > a->max_allocated_bytes)
		a->max_allocated_bytes = a->allocated_bytes;
	occupy(a, a->b[best].seg, 1);
	return best;
}

/* splitmix64's finalizer: a word mixed so that sums of mixed words rarely collide */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

uint64_t alloc_sim_digest(const struct alloc_sim *a)
{
	uint64_t d = mix(a->reserved_bytes) ^ mix(a->allocated_bytes + 1) ^ mix(a->unmapped_bytes + 2) ^
		     mix((uint64_t)a->nsegs + 3) ^ mix((uint64_t)a->oom + 4);

	for (size_t i = 0; i < a->nb; i++) {
		const struct sim_block *x = &a->b[i];
		if (x->size)
			d += mix(mix(mix(x->size) ^ x->off) ^ ((uint64_t)x->seg << 8 | (uint64_t)x->pool << 1 | (uint64_t)x->free));
	}
	return d;
}

void alloc_sim_release(struct alloc_sim *a, int i)
{
	struct sim_block *b = &a->b[i];
	int p = b->prev, n = b->next;

	a->allocated_bytes -= b->size;
	live_move(a, b->pool, b->req, -1);
	b->req = 0;
	occupy(a, b->seg, -1);
	if (n >= 0 && a->b[n].free) {
		free_del(a, n);
		b->size += a->b[n].size;
		b->next = a->b[n].next;
		if (b->next >= 0)
			a->b[b->next].prev = i;
		if (a->tail[b->pool] == n)
			a->tail[b->pool] = i;
		recycle(a, n);
	}
	if (p >= 0 && a->b[p].free) {
		free_del(a, p); /* its size, its key in the free list, grows */
		a->b[p].size += b->size;
		a->b[p].next = b->next;
		if (b->next >= 0)
			a->b[b->next].prev = p;
		if (a->tail[b->pool] == i)
			a->tail[b->pool] = p;
		recycle(a, i);
		free_add(a, p);
		return;
	}
	free_add(a, i);
}
