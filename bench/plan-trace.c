/* bench/plan-trace: headroom itself, with every allocation and free of the plan's
 * allocator simulation written to stderr, one line each, in the format of
 * bench/gpu-measure.py's TRACE files ("alloc SIZE OFFSET", "free_completed SIZE OFFSET",
 * OFFSET the block's in its pool's segments, then the reserved bytes), so that a plan's
 * tensor sequence can be laid beside a recorded one.
 *   make bench/plan-trace && bench/plan-trace plan --gpu h200 --steps 3 FILE 2> sim.trace
 * Linked with --wrap (Makefile), so the plan code is the one headroom runs. Only the
 * main thread's simulation is written: with expandable segments the jittered placements
 * run on threads of their own. */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "plan/alloc.h"

int __real_alloc_sim_malloc_on(struct alloc_sim *a, uint64_t size, int stream);
void __real_alloc_sim_release(struct alloc_sim *a, int block);
int __wrap_alloc_sim_malloc_on(struct alloc_sim *a, uint64_t size, int stream);
void __wrap_alloc_sim_release(struct alloc_sim *a, int block);

static uint64_t where(const struct alloc_sim *a, int block)
{
	return (uint64_t)a->b[block].seg << 40 | a->b[block].off;
}

int __wrap_alloc_sim_malloc_on(struct alloc_sim *a, uint64_t size, int stream)
{
	int block = __real_alloc_sim_malloc_on(a, size, stream);

	if (gettid() == getpid())
		fprintf(stderr, "alloc %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", size, where(a, block), a->reserved_bytes);
	return block;
}

void __wrap_alloc_sim_release(struct alloc_sim *a, int block)
{
	uint64_t size = a->b[block].size, at = where(a, block);

	__real_alloc_sim_release(a, block);
	if (gettid() == getpid())
		fprintf(stderr, "free_completed %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", size, at, a->reserved_bytes);
}
