/* The step's live set: every tensor's block in the simulated allocator, by id, and what
 * it is for; the lists of tensors a layer keeps for its backward, let go stage by stage;
 * the breakdown at the allocated peak, and the run's result: the peaks, the least it
 * runs in, and what no placement changes (the live requests' most and the largest
 * transient, alloc.c's live_move), which model.c makes the need's interval of. */

#include <string.h>

#include "plan/alloc.h"
#include "plan/sim.h"
#include "plan/sim_internal.h"
#include "util/grow.h"

/* Take the breakdown at the allocated peak the last allocation made, once every tensor
 * alive then has its final tag (before the next allocation or free). */
static void peak_take(struct step *s)
{
	if (s->peak_pending) {
		memcpy(s->peak_parts, s->live, sizeof(s->live));
		s->peak_pending = 0;
	}
}

/* What fragmentation can pin beside the live set now: the block asked for must find a
 * hole, and at the card's edge every hole smaller than it counts against the card; a
 * block freed in this phase of the step (forward, backward with its recomputation,
 * optimizer step) can be cut again by one that lives on, pinning its segment: of the
 * larger of the two, FRAG_QUARTERS quarters; of the activations a forward saves into the
 * holes the last step's backward left, one part in PIN_PARTS; and in the optimizer step,
 * of the gradients and states made into the holes of the step before, one part in
 * OPT_PIN_PARTS. A block freed in another phase is not counted otherwise: PyTorch gives
 * back every wholly free segment before it fails. Calibrated on the runs measured at the
 * card's edge (docs/plan.md, Calibration; bench/results/gpu-edge-h100.jsonl): the holes
 * left when a run failed were up to 2.2 times the block asked for, and at the optimizer
 * step up to a tenth of the gradients and states. */
#define FRAG_QUARTERS 9
#define PIN_PARTS 16
#define OPT_PIN_PARTS 10

static const char *phase_window(const char *phase)
{
	return phase && !strcmp(phase, "recompute") ? "backward" : phase;
}

static void need_track(struct step *s, uint64_t freed, uint64_t asked)
{
	const char *w = phase_window(s->phase);
	uint64_t need, pin;

	if (w != s->window && (!w || !s->window || strcmp(w, s->window))) {
		s->window = w;
		s->window_freed = 0;
	}
	if (freed > s->window_freed)
		s->window_freed = freed;
	/* with expandable segments a pinned segment pins only its live pages: what a hole
	 * leaves is its partial pages, a block at either end */
	pin = s->a.expandable ? s->a.k.large_buffer : asked > s->window_freed ? asked : s->window_freed;
	need = s->a.live_low_bytes + FRAG_QUARTERS * pin / 4 + s->live_req[C_ACTIVATIONS] / PIN_PARTS;
	if (!s->a.expandable && w && !strcmp(w, "optimizer step"))
		need += (s->live_req[C_GRADS] + s->live_req[C_OPT_STATES]) / OPT_PIN_PARTS;
	if (need > s->need_high_bytes) {
		s->need_high_bytes = need;
		s->need_high_phase = s->phase;
	}
}

/* An accumulated gradient goes once it is added in, before anything else happens. */
void accum_settle(struct step *s)
{
	int id = s->accum_drop;

	s->accum_drop = 0;
	drop(s, id);
}

/* A tensor on a CUDA stream (0: the default one), for part. */
int tensor_for(struct step *s, int64_t bytes, int stream, int part)
{
	int id;
	uint64_t was = s->a.max_allocated_bytes;

	accum_settle(s);
	id = (int)s->ntensors;
	peak_take(s);
	ARRAY_GROW(s->block_of, s->ntensors + 1, s->cap_tensors);
	ARRAY_GROW(s->bytes_of, s->ntensors + 1, s->cap_bytes);
	ARRAY_GROW(s->part_of, s->ntensors + 1, s->cap_parts);
	s->bytes_of[id] = bytes > 0 ? bytes : 1;
	s->block_of[id] = alloc_sim_malloc_on(&s->a, (uint64_t)s->bytes_of[id], stream);
	s->part_of[id] = (unsigned char)part;
	s->live[part] += s->a.b[s->block_of[id]].size;
	s->live_req[part] += s->a.b[s->block_of[id]].req;
	need_track(s, 0, s->a.b[s->block_of[id]].req);
	if (s->a.max_allocated_bytes > was) {
		s->peak_phase = s->phase;
		s->peak_pending = 1;
	}
	s->ntensors++;
	if (s->accumulating && part == C_GRADS)
		s->accum_drop = id;
	return id;
}

/* A tensor for what the step does now (s->part). */
int tensor(struct step *s, int64_t bytes)
{
	return tensor_for(s, bytes, 0, s->part);
}

/* A tensor for another component than the phase's. */
int tensor_as(struct step *s, int64_t bytes, enum plan_component part)
{
	return tensor_for(s, bytes, 0, (int)part);
}

void drop(struct step *s, int id)
{
	if (s->accum_drop && s->accum_drop != id)
		accum_settle(s);
	if (id > 0 && s->block_of[id] >= 0) {
		uint64_t req = s->a.b[s->block_of[id]].req;

		peak_take(s);
		s->live[s->part_of[id]] -= s->a.b[s->block_of[id]].size;
		s->live_req[s->part_of[id]] -= req;
		alloc_sim_release(&s->a, s->block_of[id]);
		s->block_of[id] = -1;
		need_track(s, req, 0);
	}
}

/* A tensor made from x (a cast, a copy, a sum) of bytes: x goes once it exists. */
int remake(struct step *s, int x, int64_t bytes)
{
	int c = tensor(s, bytes);

	drop(s, x);
	return c;
}

/* x replaced by n, made from it: x goes once n exists. Returns n. */
int remade_by(struct step *s, int x, int n)
{
	drop(s, x);
	return n;
}

void push(struct tlist *l, int id)
{
	ARRAY_GROW(l->v, l->n + 1, l->cap);
	l->v[l->n++] = id;
}

/* Keep a tensor for the backward pass, freed at the current stage. */
void save(struct step *s, struct tlist *l, int id)
{
	ARRAY_GROW(l->tag, l->n + 1, l->cap_tag);
	l->tag[l->n] = (unsigned char)s->stage;
	push(l, id);
}

/* Free what a layer saved for one stage of its backward. */
void release(struct step *s, struct tlist *l, enum stage st)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->tag[i] == st)
			drop(s, l->v[i]);
}

void free_all(struct step *s, struct tlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		drop(s, l->v[i]);
	l->n = 0;
}

/* Whether l holds tensor id (a layer kept it). */
int tlist_has(const struct tlist *l, int id)
{
	for (size_t i = 0; id && i < l->n; i++)
		if (l->v[i] == id)
			return 1;
	return 0;
}

/* A node of the backward has run: its incoming gradient g goes, and what it saved (sv's
 * stage st). A checkpointed layer's saved tensors were unpacked into the node's locals,
 * which go as it returns, before its argument g (and before autograd sums a broadcast
 * operand's gradient); others' the engine releases after the node. */
void node_done(struct step *s, struct tlist *sv, enum stage st, int g)
{
	if (s->recomputed)
		release(s, sv, st);
	drop(s, g);
	release(s, sv, st);
}

/* The bytes a live tensor asked for (its block may be larger: the allocator keeps a
 * small remainder in it). */
int64_t tensor_bytes(const struct step *s, int id)
{
	return s->bytes_of[id];
}

/* The run's peaks and the breakdown at its allocated peak. */
void step_result(struct step *s, struct sim_result *r)
{
	peak_take(s);
	r->max_allocated_bytes = s->a.max_allocated_bytes;
	r->max_reserved_bytes = s->a.max_reserved_bytes;
	memcpy(r->parts, s->peak_parts, sizeof(r->parts));
	r->peak_phase = s->peak_phase;
	r->oom = s->a.oom;
	r->min_reserved_bytes = s->a.max_occupied_bytes;
	r->live_peak_bytes = s->a.max_live_low_bytes;
	r->largest_transient_bytes = s->a.max_freed_bytes;
	r->need_high_bytes = s->need_high_bytes > s->a.max_live_low_bytes ? s->need_high_bytes
									  : s->a.max_live_low_bytes;
	r->need_high_phase = s->need_high_phase;
}
