/* bench/plan/alloc-replay: run a real allocation history (bench/gpu/gpu-measure.py's TRACE file,
 * lines "ACTION SIZE ADDR [WHERE]") through headroom's caching allocator simulation and print
 * the real and the simulated peaks. If they agree, the simulation of the allocator is
 * right and any error of a plan lies in the tensor sequence the planner writes out.
 * With --expandable, the simulation's expandable segments (a history recorded without
 * them, replayed as if PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True had been set).
 *   make bench/plan/alloc-replay && bench/plan/alloc-replay [--expandable] FILE.trace */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/alloc.h"
#include "util/xalloc.h"

struct slot {
	uint64_t addr;
	int block;                /* -1: empty */
};

static size_t find(struct slot *t, size_t cap, uint64_t addr)
{
	size_t i = (size_t)(addr >> 9) * 11400714819323198485ull % cap;

	while (t[i].block >= 0 && t[i].addr != addr)
		i = (i + 1) % cap;
	return i;
}

int main(int argc, char **argv)
{
	size_t cap = 1 << 22;
	struct slot *t;
	struct alloc_sim a;
	char action[64], line[1024];
	uint64_t size, addr, real = 0, real_max = 0, alloc = 0, alloc_max = 0;
	FILE *f;

	int expandable = argc == 3 && !strcmp(argv[1], "--expandable");

	if (argc != 2 && !expandable) {
		fprintf(stderr, "usage: alloc-replay [--expandable] FILE.trace\n");
		return 2;
	}
	f = fopen(argv[argc - 1], "r");
	if (!f) {
		perror(argv[argc - 1]);
		return 2;
	}
	t = xmalloc(cap * sizeof(*t));
	for (size_t i = 0; i < cap; i++)
		t[i].block = -1;
	alloc_sim_init(&a);
	a.expandable = expandable;
	while (fgets(line, sizeof(line), f)) {
		/* "ACTION SIZE ADDR", perhaps followed by where it was allocated */
		if (sscanf(line, "%63s %" SCNu64 " %" SCNu64, action, &size, &addr) != 3)
			continue;
		size_t i = find(t, cap, addr);
		if (!strcmp(action, "alloc")) {
			t[i].addr = addr;
			t[i].block = alloc_sim_malloc(&a, size);
			alloc += size;
			alloc_max = alloc > alloc_max ? alloc : alloc_max;
		} else if (!strcmp(action, "free_completed") && t[i].block >= 0) {
			alloc_sim_release(&a, t[i].block);
			alloc -= size;
			/* leave a tombstone-free table: re-insert the run after the hole */
			t[i].block = -1;
			for (size_t j = (i + 1) % cap; t[j].block >= 0; j = (j + 1) % cap) {
				struct slot s = t[j];
				t[j].block = -1;
				t[find(t, cap, s.addr)] = s;
			}
		} else if (!strcmp(action, "segment_alloc") || !strcmp(action, "segment_map")) {
			real += size;
			real_max = real > real_max ? real : real_max;
		} else if (!strcmp(action, "segment_free") || !strcmp(action, "segment_unmap")) {
			real -= size;
		}
	}
	fclose(f);
	printf("allocated peak: real %.3f GiB, replayed %.3f GiB\n", alloc_max / 1073741824.0,
	       a.max_allocated_bytes / 1073741824.0);
	printf("reserved peak (segments seen in the trace): real %.3f GiB, simulated %.3f GiB\n",
	       real_max / 1073741824.0, a.max_reserved_bytes / 1073741824.0);
	alloc_sim_free(&a);
	free(t);
	return 0;
}
