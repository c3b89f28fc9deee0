/* bench/plan/plan-trace: headroom itself, with every allocation and free of the plan's
 * allocator simulation written to stderr, one line each, in the format of
 * bench/gpu/gpu-measure.py's TRACE files ("alloc SIZE OFFSET", "free_completed SIZE OFFSET",
 * OFFSET the block's in its pool's segments, then the reserved bytes), so that a plan's
 * tensor sequence can be laid beside a recorded one.
 *   make bench/plan/plan-trace && bench/plan/plan-trace plan --gpu h200 --steps 3 FILE 2> sim.trace
 * Linked with --wrap (Makefile), so the plan code is the one headroom runs. Only the
 * plain simulations are written (inference, and training without jitter): with expandable
 * segments the jittered placements run beside them, on whichever thread takes them. */
#include <inttypes.h>
#include <stdio.h>

#include "plan/alloc.h"
#include "plan/sim.h"

int __real_alloc_sim_malloc_on(struct alloc_sim *a, uint64_t size, int stream);
void __real_alloc_sim_release(struct alloc_sim *a, int block);
int __wrap_alloc_sim_malloc_on(struct alloc_sim *a, uint64_t size, int stream);
void __wrap_alloc_sim_release(struct alloc_sim *a, int block);
int __real_sim_train(const struct model_shape *m, const struct train_settings *t, int steps, uint64_t jitter_seed,
		     struct sim_result *r);
int __wrap_sim_train(const struct model_shape *m, const struct train_settings *t, int steps, uint64_t jitter_seed,
		     struct sim_result *r);
int __real_sim_infer(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r);
int __wrap_sim_infer(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r);

static _Thread_local int tracing; /* this thread runs a plain simulation now */

int __wrap_sim_train(const struct model_shape *m, const struct train_settings *t, int steps, uint64_t jitter_seed,
		     struct sim_result *r)
{
	int rc;

	tracing = jitter_seed == 0;
	rc = __real_sim_train(m, t, steps, jitter_seed, r);
	tracing = 0;
	return rc;
}

int __wrap_sim_infer(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r)
{
	int rc;

	tracing = 1;
	rc = __real_sim_infer(m, t, steps, r);
	tracing = 0;
	return rc;
}

static uint64_t where(const struct alloc_sim *a, int block)
{
	return (uint64_t)a->b[block].seg << 40 | a->b[block].off;
}

int __wrap_alloc_sim_malloc_on(struct alloc_sim *a, uint64_t size, int stream)
{
	int block = __real_alloc_sim_malloc_on(a, size, stream);

	if (tracing)
		fprintf(stderr, "alloc %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", size, where(a, block), a->reserved_bytes);
	return block;
}

void __wrap_alloc_sim_release(struct alloc_sim *a, int block)
{
	uint64_t size = a->b[block].size, at = where(a, block);

	__real_alloc_sim_release(a, block);
	if (tracing)
		fprintf(stderr, "free_completed %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", size, at, a->reserved_bytes);
}
