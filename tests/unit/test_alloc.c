/* The caching allocator simulation (plan/alloc): rounding, pools, splitting, merging,
 * best fit with its ties, segments given back under the limit, expandable segments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "plan/alloc.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024)

/* The free block when there is exactly one (its slot in a.b), found in the blocks
 * themselves, not in the allocator's free list. */
static int only_free(const struct alloc_sim *a)
{
	int found = -1;

	for (size_t i = 0; i < a->nb; i++)
		if (a->b[i].size && a->b[i].free) {
			assert_int_equal(found, -1);
			found = (int)i;
		}
	assert_int_not_equal(found, -1);
	return found;
}

/* A small request is rounded to 512 B and split off a new 2 MiB segment; the next one
 * comes from the rest of that segment, right after it. */
static void test_small_split(void **state)
{
	struct alloc_sim a;
	(void)state;

	alloc_sim_init(&a);
	int x = alloc_sim_malloc(&a, 1000);
	assert_int_equal(a.b[x].size, 1024);
	assert_int_equal(a.b[x].off, 0);
	assert_int_equal(a.b[x].pool, 0);
	assert_int_equal(a.reserved_bytes, 2 * MiB);
	assert_int_equal(a.nfree, 1); /* the rest of the segment */
	assert_int_equal(a.b[only_free(&a)].size, 2 * MiB - 1024);
	int y = alloc_sim_malloc(&a, 1);
	assert_int_equal(a.b[y].size, 512);
	assert_int_equal(a.b[y].off, 1024);
	assert_int_equal(a.b[y].seg, a.b[x].seg);
	assert_int_equal(a.allocated_bytes, 1536);
	assert_int_equal(a.nsegs, 1);
	alloc_sim_free(&a);
}

/* Large requests: under 10 MiB a 20 MiB segment, split when more than 1 MiB is left;
 * a later request fits in that rest (best fit) rather than a new segment; from 10 MiB
 * the segment is the request rounded to 2 MiB, and a rest of 1 MiB or less stays with
 * the block. */
static void test_large_pool(void **state)
{
	struct alloc_sim a;
	(void)state;

	alloc_sim_init(&a);
	int x = alloc_sim_malloc(&a, 5 * MiB);
	assert_int_equal(a.b[x].pool, 1);
	assert_int_equal(a.reserved_bytes, 20 * MiB);
	int y = alloc_sim_malloc(&a, 12 * MiB);
	assert_int_equal(a.b[y].seg, a.b[x].seg);
	assert_int_equal(a.b[y].off, 5 * MiB);
	assert_int_equal(a.reserved_bytes, 20 * MiB);
	int z = alloc_sim_malloc(&a, 19 * MiB + 512 * KiB);
	assert_int_equal(a.b[z].size, 20 * MiB);
	assert_int_equal(a.reserved_bytes, 40 * MiB);
	assert_int_equal(a.allocated_bytes, 37 * MiB);
	assert_int_equal(a.max_allocated_bytes, 37 * MiB);
	alloc_sim_free(&a);
}

/* Freed blocks merge with free neighbours on both sides, back to the whole segment,
 * which stays cached: the next request takes it without reserving more. */
static void test_merge(void **state)
{
	struct alloc_sim a;
	(void)state;

	alloc_sim_init(&a);
	int x = alloc_sim_malloc(&a, 256 * KiB);
	int y = alloc_sim_malloc(&a, 256 * KiB);
	int z = alloc_sim_malloc(&a, 256 * KiB);
	alloc_sim_release(&a, x);
	alloc_sim_release(&a, z); /* merges with the segment's rest after it */
	assert_int_equal(a.nfree, 2);
	alloc_sim_release(&a, y); /* merges with both */
	assert_int_equal(a.nfree, 1);
	int f = only_free(&a);
	assert_int_equal(a.b[f].size, 2 * MiB);
	assert_int_equal(a.b[f].off, 0);
	assert_int_equal(a.b[f].prev, -1);
	assert_int_equal(a.b[f].next, -1);
	assert_int_equal(a.allocated_bytes, 0);
	assert_int_equal(a.reserved_bytes, 2 * MiB);
	int w = alloc_sim_malloc(&a, 1 * MiB);
	assert_int_equal(a.b[w].off, 0);
	assert_int_equal(a.reserved_bytes, 2 * MiB);
	assert_int_equal(a.max_allocated_bytes, 1 * MiB);
	alloc_sim_free(&a);
}

/* Among free blocks of the same size the lowest address wins: in a newer segment
 * (it lies lower), and within one segment the lower offset. */
static void test_best_fit_ties(void **state)
{
	struct alloc_sim a;
	(void)state;

	alloc_sim_init(&a);
	int a0 = alloc_sim_malloc(&a, 1 * MiB), a1 = alloc_sim_malloc(&a, 1 * MiB);
	int b0 = alloc_sim_malloc(&a, 1 * MiB), b1 = alloc_sim_malloc(&a, 1 * MiB);
	assert_int_equal(a.b[a1].seg, 0);
	assert_int_equal(a.b[b0].seg, 1);
	alloc_sim_release(&a, a0);
	alloc_sim_release(&a, b0);
	assert_int_equal(alloc_sim_malloc(&a, 1 * MiB), b0);
	assert_int_equal(a.b[b0].seg, 1);
	alloc_sim_release(&a, a1);
	alloc_sim_release(&a, b1);

	/* one segment of four quarters: the third and the first freed, in that order */
	struct alloc_sim c;
	alloc_sim_init(&c);
	int q[4];
	for (int i = 0; i < 4; i++)
		q[i] = alloc_sim_malloc(&c, 512 * KiB);
	alloc_sim_release(&c, q[2]);
	alloc_sim_release(&c, q[0]);
	int got = alloc_sim_malloc(&c, 512 * KiB);
	assert_int_equal(got, q[0]);
	assert_int_equal(c.b[got].off, 0);
	alloc_sim_free(&c);
	alloc_sim_free(&a);
}

/* A new segment that would pass limit_bytes first makes every wholly free segment go
 * back; when that is not enough the allocation goes on and oom says so. */
static void test_release_under_limit(void **state)
{
	struct alloc_sim a;
	(void)state;

	alloc_sim_init(&a);
	a.limit_bytes = 24 * MiB;
	int x = alloc_sim_malloc(&a, 5 * MiB);
	alloc_sim_release(&a, x);
	assert_int_equal(a.reserved_bytes, 20 * MiB); /* cached */
	int y = alloc_sim_malloc(&a, 22 * MiB);
	assert_int_equal(a.b[y].size, 22 * MiB);
	assert_int_equal(a.reserved_bytes, 22 * MiB);
	assert_int_equal(a.max_reserved_bytes, 22 * MiB);
	assert_int_equal(a.nfree, 0);
	assert_int_equal(a.oom, 0);
	/* y is in use: nothing to give back */
	alloc_sim_malloc(&a, 4 * MiB);
	assert_int_equal(a.oom, 1);
	assert_int_equal(a.reserved_bytes, 42 * MiB);
	assert_int_equal(a.max_reserved_bytes, 42 * MiB);
	alloc_sim_free(&a);
}

/* A bucket's bit in held[] says whether it holds a free block (the search skips on it). */
static void check_held(const struct alloc_sim *a)
{
	for (int p = 0; p < 2 * ALLOC_SIM_STREAMS; p++)
		for (int k = 0; k < ALLOC_SIM_BUCKETS; k++)
			assert_int_equal(!!(a->held[p][k / 64] >> (k % 64) & 1), a->freeb[p][k].n > 0);
}

/* The free list is kept in best-fit order for a binary search (it was scanned whole):
 * over random allocations and frees, with and without a limit, on one stream and on
 * several, every request gets the block a scan of all free blocks picks (the smallest
 * of its pool that holds it, the lowest address among equals), the free list stays in
 * that order and its buckets' bits say which hold a block. */
static void test_best_fit_random(void **state)
{
	enum { LIVE = 600, STEPS = 6000 };
	int live[LIVE], n = 0;
	(void)state;

	srand(13);
	for (int trial = 0; trial < 12; trial++) {
		struct alloc_sim a;
		alloc_sim_init(&a);
		a.limit_bytes = trial % 3 ? (uint64_t)(rand() % 2000 + 100) * MiB : 0;
		n = 0;
		for (int k = 0; k < STEPS; k++) {
			if (n && (n == LIVE || rand() % 2)) {
				int j = rand() % n;
				alloc_sim_release(&a, live[j]);
				live[j] = live[--n];
				continue;
			}
			int r = rand() % 10;
			uint64_t size = r < 4 ? (uint64_t)(rand() % 1100000) + 1
					: r < 8 ? (uint64_t)(rand() % (12 << 20)) + 1 : (uint64_t)(rand() % (200 << 20)) + 1;
			if (r == 9)
				size = (uint64_t)(rand() % 4 + 1) * MiB; /* equal sizes: ties by address */
			uint64_t want = size < 512 ? 512 : (size + 511) / 512 * 512;
			int stream = trial % 2 ? rand() % ALLOC_SIM_STREAMS : 0;
			int pool = (want <= MiB ? 0 : 1) + 2 * stream, best = -1;
			/* the best fit, from every free block (not the allocator's free list) */
			size_t nfree = 0;
			for (size_t f = 0; f < a.nb; f++) {
				const struct sim_block *b = &a.b[f], *c = best < 0 ? NULL : &a.b[best];
				if (!b->size || !b->free)
					continue;
				nfree++;
				if (b->pool != pool || b->size < want)
					continue;
				if (!c || b->size < c->size ||
				    (b->size == c->size && (b->seg != c->seg ? b->seg > c->seg : b->off < c->off)))
					best = (int)f;
			}
			assert_int_equal(nfree, a.nfree);
			uint64_t seg = best < 0 ? 0 : (uint64_t)a.b[best].seg, off = best < 0 ? 0 : a.b[best].off;
			live[n] = alloc_sim_malloc_on(&a, size, stream);
			if (k % 50 == 0)
				check_held(&a);
			if (best >= 0) {
				assert_int_equal(a.b[live[n]].seg, seg);
				assert_int_equal(a.b[live[n]].off, off);
			} else {
				assert_int_equal(a.b[live[n]].seg, a.nsegs - 1); /* a new segment */
			}
			n++;
		}
		alloc_sim_free(&a);
	}
}

/* Expandable segments: the pool's one segment grows by 20 MiB pages; the free block at
 * its end counts as large as it could grow, so another free block that fits is taken
 * first, even a larger one; and a large block is split whenever 512 B or more is left. */
static void test_expandable(void **state)
{
	struct alloc_sim a;
	(void)state;

	alloc_sim_init(&a);
	a.expandable = 1;
	int x = alloc_sim_malloc(&a, 30 * MiB);
	assert_int_equal(a.reserved_bytes, 40 * MiB);
	int y = alloc_sim_malloc(&a, 5 * MiB); /* only the free end: taken */
	assert_int_equal(a.b[y].off, 30 * MiB);
	alloc_sim_release(&a, x); /* 30 MiB free at 0, 5 MiB free at the end */
	int z = alloc_sim_malloc(&a, 4 * MiB);
	assert_int_equal(a.b[z].off, 0);
	assert_int_equal(a.b[z].seg, a.b[y].seg);
	int w = alloc_sim_malloc(&a, 26 * MiB - 512); /* 512 B left: split off */
	assert_int_equal(a.b[w].off, 4 * MiB);
	assert_int_equal(a.b[w].size, 26 * MiB - 512);
	assert_int_equal(a.reserved_bytes, 40 * MiB);
	assert_int_equal(a.nsegs, 1);
	alloc_sim_free(&a);
}

/* The least memory a sequence runs in: the segments holding a live block at their
 * most. A large block freed leaves its segment cached (reserved) but not needed; a
 * segment with one small live block is needed whole. */
static void test_occupied(void **state)
{
	struct alloc_sim a;
	(void)state;

	alloc_sim_init(&a);
	int big = alloc_sim_malloc(&a, 100 * MiB);
	int pin = alloc_sim_malloc(&a, 12 * MiB);
	assert_int_equal(a.occupied_bytes, 112 * MiB);
	alloc_sim_release(&a, big);
	assert_int_equal(a.occupied_bytes, 12 * MiB); /* the 100 MiB segment could go back */
	int half = alloc_sim_malloc(&a, 40 * MiB);    /* into the cached one: it is needed again */
	assert_int_equal(a.b[half].seg, a.b[big].seg);
	assert_int_equal(a.occupied_bytes, 112 * MiB);
	alloc_sim_release(&a, pin);
	alloc_sim_release(&a, half);
	assert_int_equal(a.occupied_bytes, 0);
	assert_int_equal(a.max_occupied_bytes, 112 * MiB);
	assert_true(a.max_reserved_bytes >= a.max_occupied_bytes);
	alloc_sim_free(&a);
}

/* Expandable segments under a limit: growing past it unmaps the free pages first (what
 * is reserved falls to what is allocated), and blocks handed out there map theirs
 * again; only what the live blocks need past the limit runs out of memory. */
static void test_expandable_unmap(void **state)
{
	struct alloc_sim a;
	(void)state;

	alloc_sim_init(&a);
	a.expandable = 1;
	a.limit_bytes = 120 * MiB;
	int x = alloc_sim_malloc(&a, 60 * MiB);
	int y = alloc_sim_malloc(&a, 20 * MiB);
	alloc_sim_release(&a, x);
	assert_int_equal(a.reserved_bytes, 80 * MiB);
	int z = alloc_sim_malloc(&a, 70 * MiB); /* 60 free at the start does not hold it */
	assert_int_equal(a.oom, 0);
	assert_true(a.reserved_bytes <= a.limit_bytes);
	assert_int_equal(a.unmapped_bytes + a.reserved_bytes, 160 * MiB);
	int w = alloc_sim_malloc(&a, 8 * MiB); /* into the unmapped start: mapped again */
	assert_int_equal(a.b[w].off, 0);
	assert_int_equal(a.oom, 0);
	alloc_sim_release(&a, z);
	alloc_sim_release(&a, w);
	alloc_sim_malloc(&a, 90 * MiB); /* with y live, 110 MiB: within it */
	assert_int_equal(a.oom, 0);
	assert_true(a.reserved_bytes <= a.limit_bytes);
	alloc_sim_malloc(&a, 30 * MiB); /* 140 MiB live: past it */
	assert_int_equal(a.oom, 1);
	(void)y;
	alloc_sim_free(&a);
}

/* The digest: the same state whatever order its blocks were made in, another when a
 * block moves. */
static void test_digest(void **state)
{
	struct alloc_sim a, b;
	(void)state;

	alloc_sim_init(&a);
	alloc_sim_init(&b);
	int a1 = alloc_sim_malloc(&a, 30 * MiB), a2 = alloc_sim_malloc(&a, 40 * MiB);
	int b1 = alloc_sim_malloc(&b, 30 * MiB), b2 = alloc_sim_malloc(&b, 40 * MiB);
	alloc_sim_release(&a, a1);
	alloc_sim_release(&b, b1);
	assert_int_equal(alloc_sim_digest(&a), alloc_sim_digest(&b));
	int a3 = alloc_sim_malloc(&a, 10 * MiB);
	assert_true(alloc_sim_digest(&a) != alloc_sim_digest(&b));
	alloc_sim_release(&a, a3);
	assert_int_equal(alloc_sim_digest(&a), alloc_sim_digest(&b)); /* merged back */
	(void)a2, (void)b2;
	alloc_sim_free(&a);
	alloc_sim_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_split),       cmocka_unit_test(test_large_pool),
		cmocka_unit_test(test_merge),             cmocka_unit_test(test_best_fit_ties),
		cmocka_unit_test(test_release_under_limit), cmocka_unit_test(test_best_fit_random),
		cmocka_unit_test(test_expandable),        cmocka_unit_test(test_occupied),
		cmocka_unit_test(test_expandable_unmap),  cmocka_unit_test(test_digest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
