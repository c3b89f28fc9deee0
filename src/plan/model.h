/* The GPU memory planner's model: what a training (or inference) step of a decoder-only
 * transformer holds on the device, per component, at its peak, from the allocator
 * simulation (plan/sim.h). Pure: a model shape and
 * settings in, bytes out. Constants are explained in model.c. */
#ifndef HEADROOM_PLAN_MODEL_H
#define HEADROOM_PLAN_MODEL_H

#include <stdint.h>

#include "plan/component.h"
#include "plan/shape.h"

/* Placements simulated with expandable segments: the plain run and jittered variants
 * (model.c says why). */
#define PLAN_PLACEMENTS 5
/* The most steps a jittered placement runs (the plain run runs the plan's). */
#define PLAN_JITTER_STEPS 3

struct plan_result {
	uint64_t bytes[C_NCOMPONENTS]; /* at the peak phase */
	uint64_t device_peak_bytes;     /* their sum */
	uint64_t allocated_peak_bytes;  /* what torch.cuda.max_memory_allocated would say */
	/* expandable segments: device_peak_bytes with the most and the least favourable of
	 * the placements simulated (model.c says why); both 0 when one was simulated */
	uint64_t device_peak_low_bytes, device_peak_high_bytes;
	const char *peak_phase;         /* the allocated peak's: "forward", "backward", "recompute",
					 * "optimizer step", "prefill", "generate" (sim.h) */
	int64_t params, trainable_params;
	/* the least GPU memory the step runs in (the context, and the segments holding live
	 * blocks at their most: PyTorch gives back wholly free segments when cudaMalloc
	 * fails, and unmaps free pages with expandable segments), and the device peak when
	 * memory is plentiful (no limit: the cache never given back) */
	uint64_t min_device_bytes, plentiful_peak_bytes;
	int oom;                        /* runs out of memory: past t->limit_bytes even with the
					 * cache given back (fit_plan: on the GPU it was fitted to) */
	/* the interval every placement lies in (docs/plan.md, The interval): need_low the
	 * context and the live requests' most as the allocator rounds them, which no
	 * placement escapes; need_high that and what fragmentation can add, a bound from the
	 * largest transient block, for the least memory the run completes in (a peak with
	 * plenty of memory, its cache kept, may pass it). Neither depends on where a block
	 * lands. */
	uint64_t need_low_bytes, need_high_bytes;
	uint64_t largest_transient_bytes;
	uint64_t race_bytes;        /* sim_result's: in need_high and the peak's high end */
	const char *need_high_phase; /* sim_result's */
	/* the peak with plenty of memory: the simulated layouts' (plentiful_peak_bytes one of
	 * them), widened by what measured runs were off by; its low at least need_low */
	uint64_t peak_low_bytes, peak_high_bytes;
};

/* Fill defaults for what settings leave unset. */
void train_settings_init(struct train_settings *t);
int64_t model_params(const struct model_shape *m);
/* Whether t can be planned for m, without planning it: 0, or -EINVAL with *why naming
 * the setting that makes no sense (ZeRO without dp > 1, or dp > 1 without ZeRO, LoRA on
 * gpt2, among them), or -E2BIG naming what passes the planner's limits (plan/limits.h)
 * (static strings). */
int plan_settings_check(const struct model_shape *m, const struct train_settings *t, const char **why);
/* CPUs this process may run on (those online when its mask cannot be read), at least 1. */
int plan_cpus(void);

/* The training steps the simulation runs for t: the run's, at most PLAN_SETTLE_STEPS. */
int plan_sim_steps(const struct train_settings *t);
/* The plan: plan_settings_check's answers, or 0 and *r. */
int plan_compute(const struct model_shape *m, const struct train_settings *t, struct plan_result *r,
		 const char **why);
/* A component's name as the table prints it ("CUDA context + workspaces"), and its
 * key in JSON ("context_bytes"). Static strings. */
const char *plan_component_name(enum plan_component c);
const char *plan_component_key(enum plan_component c);
/* The CUDA context and library workspaces when nothing was measured on this machine. */
uint64_t plan_default_context_bytes(void);
/* What t's plan counts for them (NCCL's too over more than one rank). */
uint64_t plan_context_bytes(const struct train_settings *t);

#endif
