/* The plan of a step from the caching allocator simulation (sim.c): its peak reserved
 * memory and the context, the components the simulation tagged its blocks with at the
 * allocated peak, fragmentation what is reserved beyond them, and the least memory the
 * step runs in. */
#include "plan/model.h"

#include "plan/limits.h"
#include "plan/lora.h"
#include "plan/pytorch.h"
#include "plan/sim.h"
#include "util/thread.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* Inference batches simulated: the cache of one batch goes before the next's prefill. */
#define INFER_STEPS 3

void train_settings_init(struct train_settings *t)
{
	memset(t, 0, sizeof(*t));
	t->param_bytes = 2;
	t->opt = OPT_ADAMW;
	t->batch = 1;
	t->grad_accum = 1;
	t->seq = 2048;
	t->dp = 1;
	t->use_cache = 1;
	t->lora_targets = LORA_Q | LORA_K | LORA_V | LORA_O;
	t->freeze_last = -1;
	t->kbit_prepare = 1;
}

uint64_t plan_default_context_bytes(void)
{
	return (uint64_t)pytorch_constants()->cuda_context;
}

uint64_t plan_context_bytes(const struct train_settings *t)
{
	return (t->context_bytes ? t->context_bytes : plan_default_context_bytes()) +
	       (t->dp > 1 ? (uint64_t)pytorch_constants()->nccl_rank : 0);
}

static int64_t q_dim(const struct model_shape *m)
{
	return m->heads * m->head_dim;
}

static int64_t kv_dim(const struct model_shape *m)
{
	return m->kv_heads * m->head_dim;
}

/* A norm's parameters over dim units: its weight, and LayerNorm's bias. */
static int64_t norm_params(const struct family *f, int64_t dim)
{
	return f->norm == NORM_LAYER ? 2 * dim : dim;
}

/* A Gated DeltaNet's: in_proj_qkvz, in_proj_ba, the depthwise conv over q, k and v (no
 * bias), dt_bias and A_log a value head each, the gated norm's weight, out_proj. */
static int64_t deltanet_params(const struct model_shape *m)
{
	int64_t h = m->hidden, kd = m->lin_k_heads * m->lin_k_dim, vd = m->lin_v_heads * m->lin_v_dim;

	return h * (2 * kd + 2 * vd) + h * 2 * m->lin_v_heads + (2 * kd + vd) * m->lin_conv +
	       2 * m->lin_v_heads + m->lin_v_dim + vd * h;
}

/* The shared expert's gated MLP, and its gate's row when it has one. */
static int64_t shared_params(const struct model_shape *m)
{
	const struct family *f = model_family(m);

	if (!m->shared_inter)
		return 0;
	return 3 * m->hidden * m->shared_inter + (f->shared == SHARED_GATED_FIRST ? m->hidden : 0);
}

/* The attention's projections (and latent attention's norms). */
static int64_t attn_params(const struct model_shape *m)
{
	int64_t h = m->hidden, H = m->heads, q = q_dim(m), k = kv_dim(m);
	int64_t qr = m->q_lora_rank, kvr = m->kv_lora_rank, r = m->qk_rope_dim, n = m->qk_nope_dim;

	if (model_family(m)->attn != ATTN_MLA) /* (a gated q_proj: q and its gate) */
		return h * q * (model_family(m)->attn == ATTN_GATED_SDPA ? 2 : 1) + 2 * h * k + q * h;
	/* q_proj, or q_a_proj, its norm, q_b_proj; kv_a_proj_with_mqa, its norm, kv_b_proj; o_proj */
	return (qr ? h * qr + qr + qr * q : h * q) + h * (kvr + r) + kvr + kvr * H * (n + m->v_head_dim) +
	       H * m->v_head_dim * h;
}

/* Parameters of decoder layer l, from its family's description. */
static int64_t layer_params(const struct model_shape *m, int64_t l)
{
	const struct family *f = model_family(m);
	int64_t h = m->hidden, q = q_dim(m), k = kv_dim(m), I = m->intermediate, mlp;

	switch (model_dense_layer(m, l) ? MLP_GATED : f->mlp) {
	case MLP_MOE: /* each expert's gate, up and down, and the router's row; the shared expert */
	case MLP_DENSE_MOE:
	case MLP_MOE_CLAMPED:
		mlp = m->experts * (3 * h * m->moe_inter + h) + shared_params(m);
		if (f->expert_bias) /* gate_up's and down's */
			mlp += m->experts * (2 * m->moe_inter + h);
		if (f->router_bias)
			mlp += m->experts;
		break;
	case MLP_GELU: /* c_fc and c_proj with their biases */
		mlp = 2 * h * I + I + h;
		break;
	default:
		mlp = 3 * h * (m->experts ? m->dense_inter : I);
	}
	if (m->full_step && (l + 1) % m->full_step) /* a Gated DeltaNet layer */
		return deltanet_params(m) + mlp + 2 * norm_params(f, h);
	/* the norms before the sublayers (none: no_pre_norms) and after them (post_norms) */
	int norms = (f->no_pre_norms ? 0 : 2) + (f->post_norms ? 2 : 0);
	int64_t p = attn_params(m) + mlp + norms * norm_params(f, h);
	if (m->qkv_bias)
		p += q + 2 * k;
	if (m->o_bias)
		p += h;
	/* a head's weight each, or the projection's (the L2 norm has no weight) */
	if ((f->qk_norm != QK_NORM_NONE && f->qk_norm != QK_NORM_L2) || m->qk_norm_each)
		p += f->qk_norm_full ? q + k : 2 * m->head_dim;
	if (f->sinks)
		p += m->heads;
	return p;
}

/* Parameters of layers first..last. */
static int64_t layers_params(const struct model_shape *m, int64_t first, int64_t last)
{
	int64_t p = 0;

	for (int64_t l = first; l <= last; l++)
		p += layer_params(m, l);
	return p;
}

/* The parameters that train: all but the frozen parts (a tied embedding is frozen
 * with either of its names). */
static int64_t trained_params(const struct model_shape *m, const struct train_settings *t)
{
	int64_t p = model_params(m), vh = m->vocab * m->hidden;

	if (t->freeze_last >= t->freeze_first)
		p -= layers_params(m, t->freeze_first, t->freeze_last);
	p -= vision_params(&m->vision); /* (a text-only step gives it no gradient) */
	if (m->tied && (t->freeze_embed || t->freeze_head))
		return p - vh;
	return p - (t->freeze_embed ? vh : 0) - (t->freeze_head ? vh : 0);
}

int64_t model_params(const struct model_shape *m)
{
	const struct family *f = model_family(m);
	int64_t emb = m->vocab * m->hidden * (m->tied ? 1 : 2);

	if (f->positions == POS_LEARNED)
		emb += m->positions * m->hidden;
	return emb + layers_params(m, 0, m->layers - 1) + norm_params(f, m->hidden) + vision_params(&m->vision);
}

/* The peak with plenty of memory as the simulated layouts put it, widened by what the
 * measured runs were off by (docs/plan.md, The interval), in parts of 1000. */
#define PEAK_UNDER_PER_1000 40
#define PEAK_OVER_PER_1000 40

static void peak_interval(struct plan_result *r)
{
	uint64_t lo = r->device_peak_low_bytes ? r->device_peak_low_bytes : r->device_peak_bytes;
	uint64_t hi = r->device_peak_high_bytes ? r->device_peak_high_bytes : r->device_peak_bytes;

	lo -= lo / 1000 * PEAK_UNDER_PER_1000;
	r->peak_low_bytes = lo > r->need_low_bytes ? lo : r->need_low_bytes;
	r->peak_high_bytes = hi + hi / 1000 * PEAK_OVER_PER_1000 + r->race_bytes;
}

/* The plan from a simulation: each component as the simulation tagged its blocks at
 * the allocated peak, fragmentation what it reserved beyond them (moved by the placements'
 * spread with expandable segments), the context besides. */
static void from_sim(struct plan_result *r, const struct sim_result *sr, int64_t spread_bytes)
{
	int64_t moved = (int64_t)sr->max_reserved_bytes + spread_bytes;
	uint64_t reserved = moved > (int64_t)sr->max_allocated_bytes ? (uint64_t)moved : sr->max_allocated_bytes;

	for (int c = C_WEIGHTS; c < C_FRAGMENTATION; c++)
		r->bytes[c] = sr->parts[c];
	r->bytes[C_FRAGMENTATION] = reserved - sr->max_allocated_bytes;
	r->allocated_peak_bytes = sr->max_allocated_bytes;
	r->device_peak_bytes = r->bytes[C_CONTEXT] + reserved;
	r->peak_phase = sr->peak_phase;
	r->oom = sr->oom;
	r->min_device_bytes = r->bytes[C_CONTEXT] + sr->min_reserved_bytes;
	r->plentiful_peak_bytes = r->device_peak_bytes;
	r->need_low_bytes = r->bytes[C_CONTEXT] + sr->live_peak_bytes;
	r->largest_transient_bytes = sr->largest_transient_bytes;
	r->race_bytes = sr->race_bytes;
	r->need_high_phase = sr->need_high_phase;
	r->need_high_bytes = r->bytes[C_CONTEXT] + sr->need_high_bytes + sr->race_bytes;
	/* the layout is one placement among those the interval bounds: shown within it */
	if (r->min_device_bytes < r->need_low_bytes)
		r->min_device_bytes = r->need_low_bytes;
	if (r->min_device_bytes > r->need_high_bytes)
		r->min_device_bytes = r->need_high_bytes;
}

/* Expandable segments: where the largest tensors (logits and their fp32 copies) land
 * turns on whether the holes the last step left are still whole when they come back:
 * a few measured runs grew by a logits-sized block more than the plain simulation,
 * whose sequence matches theirs, in the first three steps or (a long run) as late as
 * the seventh. So PLAN_PLACEMENTS - 1 variants with jitter (sim_train: each at its own
 * scale of temporaries) run beside the plain run, as many steps up to PLAN_JITTER_STEPS
 * (the plain run carries a long run's late growth; the variants' later steps moved the
 * measured long runs' plans little: docs/plan.md). Measured runs land on the plain
 * run's peak or on the highest placement's, far more often the first (docs/plan.md),
 * so the plan is PLAN_TOWARD_HIGH of the way from the one to the other; the extremes
 * give the range the plan reports.
 * The simulations share nothing: each has a thread of its own (the caller's among them),
 * but on one or two CPUs as many threads as CPUs take them in turn (faster there than
 * five threads: a thread's second simulation finds its memory mapped and cached;
 * bench/results/plan-speed-2cpu-pool.md). */
_Static_assert(PLAN_PLACEMENTS >= 2, "the plain run and at least one jittered one");

struct placements {
	const struct model_shape *m;
	const struct train_settings *t;
	int steps, n;              /* the plain run's steps; simulations */
	atomic_int next;           /* the next one to take */
	struct placement {
		struct sim_result r;
		int rc;
	} v[PLAN_PLACEMENTS];      /* by jitter seed: 0 the plain run */
};

static void *placements_work(void *arg)
{
	struct placements *p = arg;

	for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) {
		int steps = i && p->steps > PLAN_JITTER_STEPS ? PLAN_JITTER_STEPS : p->steps;
		p->v[i].rc = sim_train(p->m, p->t, steps, (uint64_t)i, &p->v[i].r);
	}
	return NULL;
}

int plan_cpus(void)
{
	cpu_set_t set;
	long n;

	if (!sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 && n < INT_MAX ? (int)n : 1;
}

/* How far the plan goes from the plain run's peak toward the highest placement's: two
 * fifths (docs/plan.md, Accuracy: it bounds both the runs that stay on the plain run's
 * outcome and those that take the highest within 6 %). */
#define PLAN_TOWARD_HIGH(d) ((d) * 2 / 5)

struct spread {
	int64_t plan_bytes, low_bytes, high_bytes; /* differences from the plain run's reserved peak */
};

/* The plain run into *plain and, with expandable segments, the others' spread into *sp
 * (zero without). 0, or sim_train's error. */
static int simulate(const struct model_shape *m, const struct train_settings *t, struct sim_result *plain,
		    struct spread *sp)
{
	struct placements p = { .m = m, .t = t, .steps = plan_sim_steps(t),
				.n = t->expandable && !t->one_placement ? PLAN_PLACEMENTS : 1 };
	pthread_t th[PLAN_PLACEMENTS - 1];
	int cpus = plan_cpus(), nth = 0, want = cpus <= 2 && cpus < p.n ? cpus : p.n;

	atomic_init(&p.next, 0);
	memset(sp, 0, sizeof(*sp));
	/* no thread to be had: the caller takes what is left */
	while (nth < want - 1 && !thread_start(&th[nth], placements_work, &p))
		nth++;
	placements_work(&p);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < p.n; i++)
		if (p.v[i].rc)
			return p.v[i].rc;
	*plain = p.v[0].r;
	for (int i = 1; i < p.n; i++) {
		int64_t d = (int64_t)p.v[i].r.max_reserved_bytes - (int64_t)plain->max_reserved_bytes;
		sp->low_bytes = d < sp->low_bytes ? d : sp->low_bytes;
		sp->high_bytes = d > sp->high_bytes ? d : sp->high_bytes;
	}
	sp->plan_bytes = PLAN_TOWARD_HIGH(sp->high_bytes);
	return 0;
}

int plan_sim_steps(const struct train_settings *t)
{
	return t->steps > 0 && t->steps < PLAN_SETTLE_STEPS ? (int)t->steps : PLAN_SETTLE_STEPS;
}

/* FSDP's policy, DeepSpeed's buckets and offload: each with the ZeRO stage it is of. */
static int dist_settings_check(const struct train_settings *t, const char **why)
{
	if ((t->mp_param_bytes || t->mp_reduce_bytes) && t->zero_stage != 3) {
		*why = "--fsdp-param-dtype and --fsdp-reduce-dtype are FSDP2's MixedPrecisionPolicy: with --zero-stage 3";
		return -EINVAL;
	}
	if (t->mp_reduce_bytes && !t->mp_param_bytes) {
		*why = "--fsdp-reduce-dtype without --fsdp-param-dtype: give the policy's param_dtype (bf16 or fp16)";
		return -EINVAL;
	}
	if (!t->inference && ((t->offload_optimizer && !t->zero_stage) || (t->offload_params && t->zero_stage != 3) ||
			      (t->offload_params && !t->offload_optimizer))) {
		*why = "--offload optimizer is ZeRO's (--zero-stage 1, 2 or 3), --offload params ZeRO-3's or FSDP2's "
		       "and with the optimizer's (--offload optimizer,params)";
		return -EINVAL;
	}
	if (t->reduce_bucket && !t->zero_stage && !t->inference) {
		*why = "--reduce-bucket-size is DeepSpeed ZeRO's: with --zero-stage 1, 2 or 3";
		return -EINVAL;
	}
	return 0;
}

int plan_settings_check(const struct model_shape *m, const struct train_settings *t, const char **why)
{
	*why = NULL;
	if (t->batch < 1 || t->seq < 1) {
		*why = "batch and seq must be at least 1";
		return -EINVAL;
	}
	if (t->param_bytes != 2 && t->param_bytes != 4) {
		*why = "param dtype must be fp32, bf16 or fp16";
		return -EINVAL;
	}
	if (t->dp < 1 || t->zero_stage < 0 || t->zero_stage > 3) {
		*why = "zero stage must be 0..3 and dp at least 1";
		return -EINVAL;
	}
	/* dp divides only what ZeRO shards: either without the other plans one GPU while
	 * the input says more (DDP's gradient buckets are not modelled) */
	/* (one rank: FSDP2 over one GPU, or ZeRO-Offload's single-GPU recipe) */
	if (t->zero_stage && t->dp == 1 && t->zero_stage != 3 && !t->offload_optimizer) {
		*why = "ZeRO shards over data-parallel ranks: add --dp N (\"dp\": N), N > 1 ranks, or plan one GPU "
		       "without --zero (over one GPU: --zero-stage 3, or --offload optimizer)";
		return -EINVAL;
	}
	if (t->ddp && (t->zero_stage || t->dp == 1 || t->inference)) {
		*why = "DDP (--ddp, \"ddp\") trains over --dp N, N > 1 ranks, without ZeRO";
		return -EINVAL;
	}
	if (!t->zero_stage && !t->ddp && t->dp > 1) {
		*why = "--dp wants --zero 1, 2 or 3 (\"zero_stage\": ZeRO, 3 = FSDP2 fully_shard) or --ddp (\"ddp\": "
		       "true, a whole replica a rank)";
		return -EINVAL;
	}
	if (dist_settings_check(t, why))
		return -EINVAL;
	if (t->keep_gathered && t->zero_stage != 3) {
		*why = "reshard_after_forward=False (--no-reshard) is FSDP2's: with --zero 3";
		return -EINVAL;
	}
	if (t->logits_all && !t->inference) {
		*why = "\"logits\": \"all\" is for inference (training keeps every position's logits anyway)";
		return -EINVAL;
	}
	if (t->lora_rank && (t->freeze_embed || t->freeze_head || t->freeze_last >= t->freeze_first)) {
		*why = "freeze with LoRA: LoRA already freezes every base weight";
		return -EINVAL;
	}
	if (t->lora_save && (!t->lora_rank || t->inference)) {
		*why = "lora_save: the copies modules_to_save trains are LoRA's (with --lora-rank R), in training";
		return -EINVAL;
	}
	if (t->lora_save && t->zero_stage == 3) {
		*why = "lora_save: modules_to_save's copies under FSDP or ZeRO-3 (sharded beside the adapters) are not "
		       "modelled: plan without it for the adapters' part";
		return -EINVAL;
	}
	if (t->quant && !t->lora_rank && !t->inference) {
		*why = "quantized base weights do not train: QLoRA is --quant with --lora-rank R (\"lora_rank\"); "
		       "or plan --inference";
		return -EINVAL;
	}
	if (t->quant && model_family(m)->layer == LAYER_GPT2) {
		*why = "quantized weights are planned for decoder families but gpt2";
		return -EINVAL;
	}
	if (model_family(m)->layer == LAYER_GPT2 && (t->freeze_embed || t->freeze_head ||
						     t->freeze_last >= t->freeze_first || t->inputs_embeds || t->lora_rank)) {
		/* GPT-2's fused c_attn and Conv1D layers have none of the projections LoRA's
		 * targets name, and the simulation of its block has no adapters */
		*why = "freeze, inputs_embeds and LoRA are modelled for every family but gpt2";
		return -EINVAL;
	}
	/* past the limits a product below could wrap: checked before any is computed */
	return plan_check(m, t, why);
}

int plan_compute(const struct model_shape *m, const struct train_settings *t, struct plan_result *r,
		 const char **why)
{
	struct sim_result sr;
	struct spread sp = { 0 };
	int rc;

	memset(r, 0, sizeof(*r));
	rc = plan_settings_check(m, t, why);
	if (rc)
		return rc;
	r->params = model_params(m);
	r->trainable_params = t->inference ? 0 : t->lora_rank ? lora_params(m, t) : trained_params(m, t);
	/* modules_to_save's copies: each its own vocab x hidden weight, untied */
	r->trainable_params += !t->inference && t->lora_rank ? m->vocab * m->hidden *
								       (!!(t->lora_save & LORA_SAVE_EMBED) +
									!!(t->lora_save & LORA_SAVE_HEAD))
							     : 0;
	r->bytes[C_CONTEXT] = plan_context_bytes(t);
	/* inference: a prefill, then the cache grown to the context; three batches */
	rc = t->inference ? sim_infer(m, t, INFER_STEPS, &sr) : simulate(m, t, &sr, &sp);
	if (rc) {
		*why = "the allocator simulation does not cover this step";
		return -EINVAL;
	}
	from_sim(r, &sr, sp.plan_bytes);
	if (t->expandable && !t->inference) {
		r->device_peak_low_bytes = r->device_peak_bytes - (uint64_t)(sp.plan_bytes - sp.low_bytes);
		r->device_peak_high_bytes = r->device_peak_bytes + (uint64_t)(sp.high_bytes - sp.plan_bytes);
	}
	peak_interval(r);
	return 0;
}

const char *plan_component_name(enum plan_component c)
{
	static const char *const names[C_NCOMPONENTS] = {
		"CUDA context", "weights", "gathered parameters", "gradients", "optimizer states",
		"optimizer step temporaries", "activations", "backward temporaries", "logits + loss",
		"KV cache", "collective buffers", "cuBLAS workspaces", "buffers", "allocator fragmentation",
	};
	return c < C_NCOMPONENTS ? names[c] : "?";
}

const char *plan_component_key(enum plan_component c)
{
	static const char *const keys[C_NCOMPONENTS] = {
		"context_bytes", "weights_bytes", "gathered_params_bytes", "gradients_bytes",
		"optimizer_states_bytes", "optimizer_temporaries_bytes", "activations_bytes",
		"backward_temporaries_bytes", "logits_bytes", "kv_cache_bytes", "collective_bytes",
		"workspace_bytes", "buffers_bytes", "fragmentation_bytes",
	};
	return c < C_NCOMPONENTS ? keys[c] : "?";
}
