/* A simulation of PyTorch's CUDA caching allocator (native, or with expandable segments):
 * sizes rounded to 512 B; a small pool (requests up to 1 MiB, 2 MiB segments) and a
 * large pool (20 MiB segments for requests under 10 MiB, else the request rounded to
 * 2 MiB); best fit, the lowest address among equals (a newer segment lies lower, as
 * cudaMalloc gave them on the H200); a block is split when what is left is worth keeping (>= 512 B small,
 * > 1 MiB large); freed blocks merge with free neighbours of their segment; segments
 * are given back only under memory pressure: when a new segment would pass limit_bytes
 * (what the device has for it), every wholly free segment is released and the segment
 * tried again, as PyTorch does before it raises OutOfMemoryError. With expandable
 * segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) each pool has one segment
 * that grows at its end, by pages of 20 MiB (large) or 2 MiB (small), when no free block
 * fits: a free block at its end is grown rather than a new segment made; best fit counts
 * that end block as large as it could grow (any other free block that fits goes first),
 * and a large block is split when 512 B or more is left. Under memory pressure the pages
 * of every free block are unmapped (PyTorch's release of cached blocks) and mapped again
 * as blocks are handed out there.
 * What it gives is the peak of reserved memory a sequence of tensor allocations and
 * frees leads to, and the least memory the sequence runs in: the most that segments
 * holding a live block (with expandable segments, live blocks' pages) ever took, which
 * is what is left when every wholly free segment is given back. */
#ifndef HEADROOM_PLAN_ALLOC_H
#define HEADROOM_PLAN_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "plan/pytorch.h"

/* CUDA streams the simulation tells apart: a block allocated on one stream is reused
 * only by that stream's allocations (each stream has its own pools), as PyTorch does. */
#define ALLOC_SIM_STREAMS 3
#define ALLOC_SIM_BUCKETS 1024     /* a size's highest bit, and the four below it */

struct sim_block {
	uint64_t size;
	uint64_t off;              /* offset in its segment */
	int seg, pool, free;       /* pool: 0 small, 1 large, + 2 x the stream */
	int prev, next;            /* neighbours in the segment, -1 none */
	uint64_t req;              /* live: the request as rounded (size may hold an unsplit rest) */
};

struct alloc_sim {
	struct pytorch_allocator k; /* the allocator's constants (plan/pytorch.h) */
	struct sim_block *b;       /* owned; blocks by index, merged ones recycled */
	size_t nb, capb;
	int *spare;                /* indices of recycled block slots */
	size_t nspare, capspare;
	/* the free blocks by pool and by size (its highest five bits), each bucket in
	 * best-fit order: by size, then address (lowest first), with their keys, so that a
	 * search reads the bucket alone */
	struct sim_bucket {
		struct sim_free {
			uint64_t size, off;
			int seg, block;
		} *v;
		size_t n, cap;
	} freeb[2 * ALLOC_SIM_STREAMS][ALLOC_SIM_BUCKETS];
	/* which of a pool's buckets hold a block, a bit each, so that a search skips the
	 * empty ones */
	uint64_t held[2 * ALLOC_SIM_STREAMS][ALLOC_SIM_BUCKETS / 64];
	size_t nfree;              /* free blocks in all */
	int nsegs;
	uint64_t limit_bytes;      /* 0: no limit */
	int expandable;            /* expandable segments: set before the first malloc */
	int tail[2 * ALLOC_SIM_STREAMS]; /* expandable: each pool's block at its segment's end, -1 none */
	int oom;                   /* a segment passed limit_bytes even after the release */
	uint64_t reserved_bytes, allocated_bytes, max_reserved_bytes, max_allocated_bytes;
	/* segments holding a live block: each segment's live blocks, and their sizes' sum */
	int *seg_live;
	uint64_t *seg_bytes;
	size_t cap_seg_live, cap_seg_bytes;
	uint64_t occupied_bytes, max_occupied_bytes;
	uint64_t unmapped_bytes;   /* expandable: free blocks' pages given back, not yet mapped again */
	/* what no placement escapes: each pool's live requests (rounded to MIN_BLOCK), a small
	 * pool's rounded up to whole segments (with expandable segments, any pool's to whole
	 * pages), summed; its most over the run; and the largest request ever freed (the
	 * step's transients: logits, their fp32 copies, gradients) */
	uint64_t pool_live[2 * ALLOC_SIM_STREAMS];
	uint64_t live_low_bytes, max_live_low_bytes, max_freed_bytes;
};

void alloc_sim_init(struct alloc_sim *a);
void alloc_sim_free(struct alloc_sim *a);
/* Allocate size bytes on the default stream; returns a block index (>= 0). */
int alloc_sim_malloc(struct alloc_sim *a, uint64_t size);
/* The same on stream 0 to ALLOC_SIM_STREAMS - 1 (0: the default stream). */
int alloc_sim_malloc_on(struct alloc_sim *a, uint64_t size, int stream);
void alloc_sim_release(struct alloc_sim *a, int block);
/* A digest of the allocator's state: its segments and every block's place, size and
 * whether it is free, whatever the order blocks were made in. Two states with the same
 * digest hand out the same blocks for the same requests (barring a collision). */
uint64_t alloc_sim_digest(const struct alloc_sim *a);

#endif
