/* A training step replayed through the simulated caching allocator (alloc.c): the
 * weights loaded, then each step's forward, loss, backward and optimizer step as the
 * tensors PyTorch allocates and frees, until the steps repeat; the peaks it gives go to
 * model.c as a sim_result. The layers' ops are op_*.c's; the tensors' accounting
 * sim_live.c's. */

#include "plan/sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan/alloc.h"
#include "plan/dtype.h"
#include "plan/optimizer.h"
#include "plan/precision.h"
#include "plan/pytorch.h"
#include "plan/sim_internal.h"
#include "util/xalloc.h"

/* Copies of the buckets ProcessGroupNCCL's stash was seen to hold through the second
 * step, beside the live ones, when its watchdog dropped the finished work late
 * (bench/gpu/ddp-rebuild.py; h200x2-dist's DDP ranks 0) */
#define DDP_RACE_COPIES 2

static int64_t trained_bytes(struct train *tr, size_t i, int64_t *elems);

/* DeepSpeed's engine as it starts: the fp32 master partitions, flat; at stage 3 its
 * reduce bucket and the gradients' partitions, one flat buffer each, kept throughout (the
 * partitions in host memory with the optimizer offloaded). */
static void ds_start(struct train *tr)
{
	struct step *s = &tr->s;
	const struct train_settings *t = tr->t;
	int64_t n, all = 0;

	for (size_t i = 0; i < tr->trained.n; i++)
		trained_bytes(tr, i, &n), all += n;
	tr->trained_elems = all;
	if (tr->masters && all)
		push(&tr->states, tensor_as(s, all * DT_FP32, C_OPT_STATES));
	tr->bucket_elems = t->zero_stage && !t->inference ? t->reduce_bucket < 0 ? s->hidden * s->hidden
									  : t->reduce_bucket
							  : 0;
	tr->ds3 = tr->bucket_elems && t->zero_stage == 3;
	if (!tr->ds3)
		return;
	tensor_as(s, tr->bucket_elems * s->weight_bytes, C_COLLECTIVE);
	if (!t->offload_optimizer && all)
		tensor_as(s, all * s->weight_bytes, C_GRADS);
}

/* DeepSpeed's buckets at stages 1 and 2, made as a backward's first gradient is (two
 * with overlap_comm), let go as it ends. */
static void ds_buckets(struct train *tr, int make)
{
	struct step *s = &tr->s;

	if (!tr->bucket_elems || tr->ds3)
		return;
	if (!make) {
		free_all(s, &tr->ipg);
		return;
	}
	for (int i = 0; i < 1 + !!tr->t->overlap_comm; i++)
		push(&tr->ipg, tensor_as(s, tr->bucket_elems * s->weight_bytes, C_COLLECTIVE));
}

/* PEFT's modules_to_save: each module named deep-copied as get_peft_model wraps it,
 * after the adapters, in the original's dtype, and trained; the frozen original stays.
 * The copies are modules of their own, so a tied pair is tied no more. */
static void save_copies(struct train *tr)
{
	struct step *s = &tr->s;
	const unsigned bits[2] = { LORA_SAVE_EMBED, LORA_SAVE_HEAD };

	for (int i = 0; i < 2; i++) {
		if (!(tr->t->lora_save & bits[i]))
			continue;
		int id = tensor(s, s->vocab * s->hidden * s->store_bytes);
		push(&tr->params, id);
		push(&tr->trained, id);
		tr->save_ids[i] = id;
		*(i ? &tr->head_gw : &tr->embed_gw) = s->store_bytes;
		*(i ? &tr->head_trains : &tr->embed_trains) = 1;
	}
	tr->tied = 0;
}

/* Set up the run and load the model: the weights, then LoRA's adapters, fp32, tensor
 * by tensor after the model (their gradients and states are small-pool blocks, apart
 * from the activations' segments). */
static void train_start(struct train *tr, const struct model_shape *m, const struct train_settings *t)
{
	struct step *s = &tr->s;

	tr->m = m;
	tr->t = t;
	tr->lora = t->lora_rank > 0;
	setup(s, m, t);
	tr->grad_bytes = tr->lora ? 0 : s->weight_bytes;
	alloc_sim_init(&s->a);
	s->a.limit_bytes = t->limit_bytes;
	s->a.expandable = t->expandable;
	s->part = C_WEIGHTS, s->phase = "load";
	tensor(s, 0); /* id 0 means none */
	tr->saved = xcalloc((size_t)s->layers, sizeof(*tr->saved));
	/* a model called for training keeps use_cache unless checkpointing turns it off */
	s->kv = t->grad_ckpt || !t->use_cache ? NULL : &tr->kv;
	tr->chunk = t->loss_chunk > 0 && t->loss_chunk < s->tokens ? t->loss_chunk : s->tokens;
	tr->shard = t->zero_stage >= 3 ? t->dp : 1;
	/* ZeRO-Offload reduces the gradients into partitions (copied to the host) at any stage */
	tr->zero2 = (t->zero_stage == 2 || (t->zero_stage == 1 && t->offload_optimizer)) && !t->inference;
	tr->masters = precision_masters(t) && !t->offload_optimizer;
	s->host_weights = t->offload_params && t->zero_stage == 3 && !t->inference;
	load(s, m, t, &tr->params, tr->lora ? NULL : &tr->trained, tr->shard);
	tr->embed_trains = !tr->lora && !t->freeze_embed && !(m->tied && t->freeze_head);
	tr->head_trains = !tr->lora && !t->freeze_head && !(m->tied && t->freeze_embed);
	tr->embed_gw = tr->embed_trains ? tr->grad_bytes : 0;
	tr->head_gw = tr->head_trains ? tr->grad_bytes : 0;
	tr->tied = m->tied;
	if (!tr->embed_trains || t->inputs_embeds)
		while (tr->no_grad_layers < s->layers && layer_frozen(t, tr->no_grad_layers))
			tr->no_grad_layers++;
	if (tr->lora)
		for (int64_t l = 0; l < s->layers; l++)
			for (int i = 0; i < s->nadapters; i++) {
				int id = tensor(s, s->adapters[i].elems * DT_FP32);
				push(&tr->params, id);
				push(&tr->trained, id);
			}
	if (tr->lora && t->lora_save)
		save_copies(tr);
	if (t->zero_stage == 3) {
		int64_t h = s->hidden;
		tr->fsdp = 1;
		tr->gathered = xcalloc((size_t)s->layers, sizeof(*tr->gathered));
		tr->issued = xcalloc((size_t)s->layers, 1);
		tr->nlayer_param = layer_gathered(s, tr->layer_param);
		/* the root's: the embedding (and learned positions), the final norm, lm_head */
		tr->root_param[tr->nroot_param++] = s->vocab * h * s->weight_bytes;
		if (s->fam->positions == POS_LEARNED)
			tr->root_param[tr->nroot_param++] = s->positions * h * s->weight_bytes;
		for (int i = 0; i < norm_tensors(s); i++)
			tr->root_param[tr->nroot_param++] = h * s->weight_bytes;
		if (!m->tied)
			tr->root_param[tr->nroot_param++] = s->vocab * h * s->weight_bytes;
		for (int i = 0; i < tr->nlayer_param; i++)
			tr->layer_bytes += tr->layer_param[i];
		for (int i = 0; i < tr->nroot_param; i++)
			tr->root_bytes += tr->root_param[i];
	}
	ds_start(tr);
	/* DDP: its construction makes the gradient buckets as one tensor */
	if (t->ddp) {
		int64_t all = 0;
		for (size_t i = 0; i < tr->trained.n; i++)
			all += tensor_bytes(s, tr->trained.v[i]);
		push(&tr->buckets, tensor_as(s, all, C_COLLECTIVE));
		tr->race_bytes = DDP_RACE_COPIES * (uint64_t)all;
	}
}

/* The first layer that trains takes an input without a gradient when the embedding does
 * not train or hidden states are fed in (the only cases in which layers before it run
 * without autograd, train_start). */
static int input_nograd(const struct train *tr, int64_t l)
{
	return l == tr->no_grad_layers && (!tr->embed_trains || tr->t->inputs_embeds);
}

/* The forward pass: the embeddings (gemma scales them: a new tensor), then the layers;
 * a checkpointed layer keeps only its input, its temporaries go as they would without
 * autograd. */
static void train_forward(struct train *tr, int step)
{
	struct step *s = &tr->s;
	int x, hs;

	s->part = C_ACTIVATIONS, s->phase = "forward";
	if (tr->t->ddp && step == 1)
		ddp_rebuild(tr);
	if (tr->fsdp) { /* the root's weights, gathered before the embedding */
		fsdp_issue(tr, tr->root_bytes);
		fsdp_copy_out(tr, &tr->root, tr->root_param, tr->nroot_param);
	}
	x = hs = tensor(s, s->resid_bytes * s->tokens * s->hidden);
	if (tr->t->inputs_embeds) { /* the caller's hidden states: the last step's go now */
		drop(s, tr->inputs);
		tr->inputs = x;
	} else if (s->fam->embed_scale) {
		int scaled = tensor(s, s->resid_bytes * s->tokens * s->hidden);
		drop(s, x);
		x = hs = scaled;
	}
	if (s->fam->positions == POS_LEARNED) { /* the positions' embeddings, added, the dropout */
		if (!step) /* (at the first layer's product) */
			cublas_workspace(s);
		int pos = tensor(s, s->resid_bytes * s->tokens * s->hidden);
		hs = dropout(s, &tr->head_saved, pos, s->tokens * s->hidden, s->resid_bytes);
	}
	model_masks(s, 0, tr->mask);
	rotary(s, &tr->rot, step);
	for (int64_t l = 0; l < s->layers; l++) {
		int out;
		layer_begin(s, l);
		fsdp_gather(tr, l, 0);
		if (l < tr->no_grad_layers) {
			out = plain_layer(s, hs, s->kv);
			if (hs != x)
				drop(s, hs);
		} else if (tr->t->grad_ckpt) {
			int base_trains = s->base_trains;
			push(&tr->ckpts, hs);
			s->ac_cache = s->autocast ? &tr->ac_cache : NULL;
			s->base_trains = base_trains && !layer_frozen(tr->t, l);
			out = plain_layer(s, hs, NULL);
			s->base_trains = base_trains;
			s->ac_cache = NULL;
		} else {
			s->nograd_in = input_nograd(tr, l);
			out = layer_forward(s, hs, &tr->saved[l], layer_frozen(tr->t, l));
			/* a bf16 layer keeps no input of its own (its norm keeps an fp32 copy) */
			if (!norm_keeps_input(s) && (s->resid_bytes == DT_BF16 || s->fam->no_pre_norms) && hs != x &&
			    !tlist_has(&tr->saved[l], hs))
				drop(s, hs);
		}
		if (!tr->t->keep_gathered)
			fsdp_reshard(tr, l);
		hs = out;
	}
	tr->emb = x;
	tr->hidden = hs;
}

/* The losses' kernels. Liger's and Cut Cross-Entropy's are modelled from their code
 * (liger_kernel/ops/fused_linear_cross_entropy.py; ml-cross-entropy's cce), not
 * measured: no GPU run of either was recorded. */
static const struct loss_row losses[LOSS_KINDS] = {
	[LOSS_PLAIN] = { "plain", 0, 0, NULL },
	[LOSS_LIGER] = { "liger", 1, 1,
			 "loss: Liger's fused linear cross-entropy (chunks of about batch x seq x hidden / vocab tokens; "
			 "the input's and lm_head's gradients made in the forward; modelled, not measured)" },
	[LOSS_CCE] = { "cce", 1, 0,
		       "loss: Cut Cross-Entropy (logits only in on-chip blocks, a log-sum-exp a token kept; the "
		       "gradients made in the backward; modelled, not measured)" },
};

const struct loss_row *sim_loss(enum loss_kind k)
{
	return k >= 0 && k < LOSS_KINDS ? &losses[k] : &losses[LOSS_PLAIN];
}

int sim_loss_find(const char *name)
{
	for (int k = 0; k < LOSS_KINDS; k++)
		if (!strcmp(name, losses[k].name))
			return k;
	return -1;
}

/* Liger's chunk: batch x seq split into vocab / hidden (rounded up) parts, rounded up
 * to a power of two, so that a chunk's logits are about the size of its input. */
static int64_t liger_chunk(const struct step *s)
{
	int64_t parts = (s->vocab + s->hidden - 1) / s->hidden, want = (s->tokens + parts - 1) / parts, c = 1;

	while (c < want)
		c *= 2;
	return c;
}

/* Chunks simulated of Liger's loop: each frees what the last one made as it makes its
 * own, so from the second on every one asks for the same blocks (a shorter last one
 * less), and the third repeats the second's peak. */
#define LIGER_SIM_CHUNKS 3

/* Liger's forward (fused_linear_cross_entropy_forward): the input's gradient (the
 * input's dtype, ib bytes) and lm_head's (the weight's dtype) made whole, a loss a
 * token; then chunk by chunk the logits in the compute dtype (the next made before the
 * last goes), their gradient in place, its product with the weight copied into the
 * input's gradient, and the weight's added in: an fp32 gradient of bf16 logits through
 * addmm's out_dtype, else through an mm and its fp32 copy. */
static void liger_forward(struct train *tr, int ib)
{
	struct step *s = &tr->s;
	int64_t n = liger_chunk(s), V = s->vocab, H = s->hidden, gw = tr->head_gw;
	int prev = 0, accumulating = s->accumulating;

	tr->fused_gin = tensor(s, ib * s->tokens * H);
	s->accumulating = 0; /* (added into the resident one in the backward) */
	tr->fused_gw = gw ? tensor_as(s, gw * V * H, C_GRADS) : 0;
	s->accumulating = accumulating;
	int loss = tensor(s, DT_FP32 * s->tokens);
	for (int64_t done = 0, c = 0; done < s->tokens && c < LIGER_SIM_CHUNKS; done += n, c++) {
		int64_t k = s->tokens - done < n ? s->tokens - done : n;
		int l = tensor(s, s->act_bytes * k * V);
		drop(s, prev);
		prev = l;
		drop(s, tensor(s, s->act_bytes * k * H)); /* the input's rows, copied in */
		if (gw && !(gw == DT_FP32 && s->act_bytes != DT_FP32)) {
			int mm = tensor(s, s->act_bytes * V * H);
			int f = s->act_bytes != DT_FP32 ? tensor(s, DT_FP32 * V * H) : 0;
			drop(s, mm), drop(s, f);
		}
	}
	drop(s, prev), drop(s, loss);
}

/* The loss's forward as its row says: the plain one's logits chunk by chunk, their
 * fp32 copy, the log-softmax (kept); Liger's gradients; Cut Cross-Entropy's
 * log-sum-exp (kept, to go with the backward's temporaries). ib: the bytes of an
 * element of lm_head's input. */
static void loss_kernel_forward(struct train *tr, int ib)
{
	struct step *s = &tr->s;
	const struct loss_row *row = sim_loss(tr->t->loss);
	int64_t chunk = tr->chunk;

	tr->logits = 0;
	if (row->fused && row->grads_forward) {
		liger_forward(tr, ib);
		return;
	}
	if (row->fused) {
		push(&tr->tmp, tensor(s, DT_FP32 * s->tokens));
		return;
	}
	for (int64_t done = 0; done < s->tokens; done += chunk) {
		int64_t n = s->tokens - done < chunk ? s->tokens - done : chunk;
		int l1 = tensor(s, s->act_bytes * n * s->vocab);
		if (s->fam->logits_scale) /* logits / logits_scaling: a new tensor */
			l1 = remake(s, l1, s->act_bytes * n * s->vocab);
		if (s->softcap > 0) { /* logits / cap, tanh (kept), x cap */
			int d = tensor(s, s->act_bytes * n * s->vocab);
			drop(s, l1);
			push(&tr->capped, tensor(s, s->act_bytes * n * s->vocab));
			drop(s, d);
			l1 = tensor(s, s->act_bytes * n * s->vocab);
		}
		if (!tr->logits)
			tr->logits = l1;
		else
			push(&tr->tmp, l1);
		int lf = s->act_bytes != DT_FP32 ? tensor(s, DT_FP32 * n * s->vocab) : 0;
		push(&tr->lsm, tensor(s, DT_FP32 * n * s->vocab));
		drop(s, lf);
	}
}

/* The final norm, lm_head and the loss over chunks, in the forward: logits as
 * returned, their fp32 copy, the log-softmax (kept); only then does the caller drop
 * the last step's output (its logits and cache), or, as HF Trainer, this step's
 * logits (keep_outputs). */
static void loss_forward(struct train *tr)
{
	struct step *s = &tr->s;
	int yf;

	if (s->fam->norm == NORM_LAYER) { /* ln_f keeps its input */
		push(&tr->head_saved, tr->hidden);
		yf = layer_norm(s, &tr->head_saved, s->resid_bytes);
	} else {
		s->stage = S_NORM1;
		if (s->resid_bytes == DT_FP32) /* fp32: the norm keeps its input itself */
			save(s, &tr->norm_saved, tr->hidden);
		yf = norm(s, &tr->norm_saved);
		if (s->resid_bytes == DT_BF16) /* the norm keeps its own fp32 copy */
			drop(s, tr->hidden);
	}
	if (!tr->t->grad_ckpt) { /* the model's forward returns: its masks go */
		drop(s, tr->mask[0]), drop(s, tr->mask[1]);
		tr->mask[0] = tr->mask[1] = 0;
	}
	/* bf16: the model's forward returns, and with it the embeddings go, which no layer
	 * keeps (a layer's norm keeps its fp32 copy, GPT-2's the dropout's output) unless
	 * they are the first checkpoint; the caller keeps its own hidden states */
	if (s->resid_bytes == DT_BF16 && tr->emb != tr->inputs && !(tr->ckpts.n && tr->ckpts.v[0] == tr->emb) &&
	    !(tr->no_grad_layers < s->layers && tlist_has(&tr->saved[tr->no_grad_layers], tr->emb)))
		drop(s, tr->emb);

	/* lm_head's weight and input cast to bf16 under autocast; the weight's kept (for the
	 * input's gradient, frozen or not), the input's while the weight trains; the fp32
	 * norm output lives on in the model's forward until the loss is computed */
	int y32 = 0, liger = sim_loss(tr->t->loss)->grads_forward;
	s->part = C_LOGITS;
	if (s->autocast) {
		tr->head_wcast = tensor(s, DT_BF16 * s->vocab * s->hidden);
		if (liger) { /* in autocast's cache only: the input is cast chunk by chunk */
			push(&tr->ac_cache, tr->head_wcast);
			tr->head_wcast = 0;
		} else {
			y32 = yf;
			yf = tensor(s, DT_BF16 * s->tokens * s->hidden);
		}
	}
	loss_kernel_forward(tr, norm_out_bytes(s, s->resid_bytes));
	if (!tr->head_trains || liger) { /* a frozen lm_head keeps no input, nor Liger's */
		drop(s, yf);
		yf = 0;
	}
	free_all(s, &tr->ac_cache); /* the autocast region ends with the loss */
	if (tr->fsdp && !tr->t->keep_gathered) {
		/* resharding, the root's post-forward (the loss is in its forward) frees its
		 * weights too, and the last all-gather's buffer */
		free_all(s, &tr->root);
		fsdp_ag_free(tr);
	}
	drop(s, tr->prev_logits);
	drop(s, y32);
	free_all(s, &tr->prev_kv);
	if (!tr->t->keep_outputs) { /* HF Trainer: the output goes as the loss is taken */
		drop(s, tr->logits);
		tr->logits = 0;
		/* and its cache with it, unless sdpa keeps the cache's tensors (then they go
		 * with the backward, a bound from above for their layers') */
		if ((s->fam->attn == ATTN_SDPA || s->fam->attn == ATTN_GATED_SDPA) && !sdpa_keeps_cache(s))
			free_all(s, &tr->kv);
	}
	tr->final_out = yf;
}

/* The backward thread's cuBLAS workspace (cublas_workspace), made once. */
static void backward_workspace(struct train *tr)
{
	if (!tr->backward_workspace) {
		tr->backward_workspace = 1;
		cublas_workspace(&tr->s);
	}
}

/* The logits' backward, chunk by chunk: the log-softmax's gradient, the logits'
 * gradient, and the bf16 cast of it (in tmp, to go once lm_head's are made). */
static void logits_backward(struct train *tr)
{
	struct step *s = &tr->s;
	int64_t chunk = tr->chunk;

	for (size_t c = 0; c < tr->lsm.n; c++) {
		int64_t n = s->tokens - (int64_t)c * chunk < chunk ? s->tokens - (int64_t)c * chunk : chunk;
		int g1 = tensor(s, DT_FP32 * n * s->vocab), g2 = tensor(s, DT_FP32 * n * s->vocab);
		drop(s, g1), drop(s, tr->lsm.v[c]);
		if (s->act_bytes != DT_FP32) {
			int gb = tensor(s, s->act_bytes * n * s->vocab);
			drop(s, g2);
			g2 = gb;
		}
		if (s->fam->logits_scale) /* the division's backward: / logits_scaling */
			g2 = remake(s, g2, s->act_bytes * n * s->vocab);
		if (c < tr->capped.n) { /* the softcap's backward: x cap, tanh's, / cap */
			int64_t b = s->act_bytes * n * s->vocab;
			int gm = tensor(s, b);
			drop(s, g2);
			int gt = tensor(s, b);
			drop(s, gm), drop(s, tr->capped.v[c]);
			g2 = tensor(s, b);
			drop(s, gt);
		}
		push(&tr->tmp, g2);
	}
	tr->lsm.n = 0;
	tr->capped.n = 0;
}

/* lm_head's backward: its weight's gradient (under autocast a bf16 one, cast to fp32
 * once the logits' gradient has gone) and its input's, which it returns (*gb: its
 * element bytes). Liger's were made in the forward: the weight's is added into the
 * resident one when accumulating, else becomes it. */
static int head_backward(struct train *tr, int *gb)
{
	struct step *s = &tr->s;
	int64_t gw = tr->head_gw;
	int gwb = 0, gh, ob = norm_out_bytes(s, s->resid_bytes);

	s->part = C_BWD_TEMP;
	tr->head_grad = 0;
	if (sim_loss(tr->t->loss)->grads_forward) {
		if (tr->fused_gw && s->accumulating)
			drop(s, tr->fused_gw);
		else if (tr->fused_gw)
			push(&tr->grads, tr->head_grad = tr->fused_gw);
		gh = tr->fused_gin;
		tr->fused_gin = tr->fused_gw = 0;
		*gb = ob;
		backward_workspace(tr); /* (the layers' first product) */
		return gh;
	}
	if (gw && s->autocast)
		gwb = tensor(s, DT_BF16 * s->vocab * s->hidden);
	else if (gw)
		push(&tr->grads, tr->head_grad = tensor_as(s, s->vocab * s->hidden * gw, C_GRADS));
	if (gw)
		backward_workspace(tr);
	gh = tensor(s, s->act_bytes * s->tokens * s->hidden);
	backward_workspace(tr);
	free_all(s, &tr->tmp);
	/* lm_head's node lets go of what it saved (the weight's cast, its input) as it
	 * returns, before its gradients go on: the input's cast back under autocast, then
	 * the weight's */
	drop(s, tr->head_wcast);
	tr->head_wcast = 0;
	drop(s, tr->final_out);
	*gb = (int)s->act_bytes;
	if (*gb != ob) /* autocast's cast for lm_head, backward */
		gh = remake(s, gh, ob * s->tokens * s->hidden), *gb = ob;
	if (gwb) {
		push(&tr->grads, tr->head_grad = tensor_as(s, s->vocab * s->hidden * gw, C_GRADS));
		drop(s, gwb);
	}
	return gh;
}

/* The loss's backward: the logits' (none for a fused loss), lm_head's, then through
 * the final norm into the residual stream's gradient. */
static void loss_backward(struct train *tr)
{
	struct step *s = &tr->s;
	int gb, gh;

	s->part = C_LOGITS, s->phase = "backward";
	/* FSDP2's root pre-backward: resharding, the root's weights gathered again (its
	 * buffer freed once copied out) and the last layer's all-gather issued ahead; kept,
	 * the forward's last all-gather buffer freed */
	if (tr->fsdp && !tr->t->keep_gathered) {
		fsdp_issue(tr, tr->root_bytes);
		fsdp_copy_out(tr, &tr->root, tr->root_param, tr->nroot_param);
		fsdp_ag_free(tr);
		fsdp_issue(tr, tr->layer_bytes);
		tr->issued[s->layers - 1] = 1;
	} else if (tr->fsdp) {
		fsdp_ag_free(tr);
	}
	ds_buckets(tr, 1);
	logits_backward(tr);
	gh = head_backward(tr, &gb);
	free_all(s, &tr->head_saved);
	if (tr->grad_bytes) /* the final norm's weight (GPT-2's ln_f: and bias) */
		for (int i = 0; i < norm_tensors(s); i++)
			push(&tr->grads, tensor_as(s, s->hidden * tr->grad_bytes, C_GRADS));
	if (s->fam->norm != NORM_LAYER) { /* the final norm's backward node by node */
		tr->grad_res = norm_backward(s, gh, gb, &tr->norm_saved, S_NORM1_W, S_NORM1, 0);
		free_all(s, &tr->norm_saved);
		return;
	}
	tr->grad_res = tensor(s, s->resid_bytes * s->tokens * s->hidden);
	drop(s, gh);
}

/* The layers' backward, last first (a checkpointed layer runs its forward again,
 * keeping what its backward needs), then the embedding's: its own gradient, or (tied)
 * a dense one added into lm_head's. The step's output (logits, cache) stays with the
 * caller into the next step. */
/* Layer l's backward (low: the lowest trained layer using each rotary set): a
 * checkpointed layer runs its forward again first, keeping what its backward needs;
 * then what it saved goes, its checkpoint (the first's stays to the end), and FSDP2's
 * reduce-scatter and reshard. Returns the residual stream's gradient below it. */
static int layer_step_backward(struct train *tr, int64_t l, const int64_t *low, int gres)
{
	struct step *s = &tr->s;
	const struct train_settings *t = tr->t;
	struct tlist *sv = &tr->saved[l];
	int64_t first = tr->no_grad_layers;
	size_t from = tr->grads.n;

	layer_begin(s, l);
	fsdp_gather(tr, l, -1);
	if (t->grad_ckpt) {
		int in = tr->ckpts.v[l - first];
		s->nograd_in = input_nograd(tr, l);
		s->part = C_ACTIVATIONS, s->phase = "recompute";
		s->early_stop = 1;
		int out = layer_forward(s, in, sv, layer_frozen(t, l));
		s->early_stop = 0;
		s->part = C_BWD_TEMP, s->phase = "backward";
		s->nograd_in = 0;
		drop(s, out);
	}
	int k = rotary_set(s, l);
	struct tlist last = { 0 };
	if (low[k] == l && tr->rot.n >= 2 * (size_t)k + 2) /* its set's last user */
		last.v = &tr->rot.v[2 * k], last.n = 2;
	s->rot_last = last.n ? &last : NULL;
	s->recomputed = t->grad_ckpt;
	gres = layer_backward(s, gres, sv, &tr->grads, layer_frozen(t, l) ? 0 : tr->grad_bytes);
	s->recomputed = 0;
	s->rot_last = NULL;
	for (size_t i = 0; i < sv->n; i++)
		if (sv->v[i] != tr->emb)
			drop(s, sv->v[i]);
	sv->n = 0;
	if (t->grad_ckpt && l > first)
		drop(s, tr->ckpts.v[l - first]);
	fsdp_reduce_scatter(tr, from);
	fsdp_reshard(tr, l);
	return gres;
}

/* The embedding's backward from the residual stream's gradient gres (freed): its own
 * gradient, or (tied) a dense one added into lm_head's. */
static void embed_backward(struct train *tr, int gres)
{
	struct step *s = &tr->s;
	int64_t T = s->tokens;

	if (s->fam->embed_scale) /* the embeddings' scaling's backward */
		gres = remake(s, gres, s->resid_bytes * T * s->hidden);
	/* the dense gradient, then the kernel's partial sums per segment of sorted
	 * indices (as traced: a tenth more rows than tokens, fp32) */
	int ge = tensor_as(s, s->vocab * s->hidden * tr->embed_gw, C_GRADS);
	int ps = tensor(s, (T + T / pytorch_constants()->embed_partial_per) * s->hidden * DT_FP32);
	drop(s, ps), drop(s, gres);
	if (tr->tied && tr->head_grad && !s->autocast) {
		/* autograd adds the two out of place (lm_head's gradient, an mm's
		 * transpose, is not one it may add into): the sum is a new tensor;
		 * under autocast that gradient is the weight cast's backward, a new
		 * tensor of its own, and the embedding's is added into it */
		for (size_t i = 0; i < tr->grads.n; i++)
			if (tr->grads.v[i] == tr->head_grad) {
				tr->grads.v[i] = tensor_as(s, s->vocab * s->hidden * tr->head_gw, C_GRADS);
				drop(s, tr->head_grad);
			}
		drop(s, ge);
	} else if (tr->tied) {
		drop(s, ge);
	} else {
		push(&tr->grads, ge);
	}
}

/* The layers' backward, last first, then the embedding's. The step's output (logits,
 * cache) stays with the caller into the next step. */
static void layers_backward(struct train *tr)
{
	struct step *s = &tr->s;
	const struct train_settings *t = tr->t;
	int gres = tr->grad_res;
	int64_t low[2] = { -1, -1 }; /* the lowest trained layer using each rotary set */

	for (int64_t l = tr->no_grad_layers; l < s->layers; l++) {
		int k = rotary_set(s, l);
		if (low[k] < 0 && (!s->nope_step || (l + 1) % s->nope_step)) /* (a layer without rotary: none) */
			low[k] = l;
	}
	for (int64_t l = s->layers - 1; l >= tr->no_grad_layers; l--)
		gres = layer_step_backward(tr, l, low, gres);
	if (t->grad_ckpt && tr->ckpts.n && tr->ckpts.v[0] != tr->emb)
		drop(s, tr->ckpts.v[0]);
	tr->ckpts.n = 0;
	free_all(s, &tr->rot);
	drop(s, tr->mask[0]), drop(s, tr->mask[1]);
	tr->mask[0] = tr->mask[1] = 0;
	if (s->fam->positions == POS_LEARNED && tr->grad_bytes) /* wpe's */
		push(&tr->grads, tensor_as(s, s->positions * s->hidden * tr->grad_bytes, C_GRADS));
	if (tr->embed_gw) {
		embed_backward(tr, gres);
		gres = 0;
	}
	drop(s, gres), drop(s, tr->hidden);
	if (tr->emb != tr->inputs)
		drop(s, tr->emb);
	if (tr->fsdp) { /* the root's gradients reduce-scattered, its weights resharded */
		fsdp_reduce_scatter(tr, 0);
		for (int64_t l = 0; l < s->layers; l++)
			fsdp_reshard(tr, l);
		free_all(s, &tr->root);
		fsdp_ag_free(tr);
		struct tlist whole = tr->grads;
		tr->grads = tr->shards;
		tr->shards = whole;
		tr->shards.n = 0;
	} else if (tr->zero2) { /* the rest reduced; the partitions are the gradients now */
		fsdp_reduce_scatter(tr, 0);
		struct tlist whole = tr->grads;
		tr->grads = tr->shards;
		tr->shards = whole;
		tr->shards.n = 0;
	}
	ds_buckets(tr, 0);
	tr->prev_logits = tr->logits;
	if (!tr->t->keep_outputs) { /* the cache sdpa kept goes with the backward */
		free_all(s, &tr->kv);
		return;
	}
	struct tlist held = tr->prev_kv;
	tr->prev_kv = tr->kv;
	tr->kv = held;
}

/* One trained tensor's elements and bytes (a ZeRO-1 rank's 1/dp share). */
static int64_t trained_bytes(struct train *tr, size_t i, int64_t *elems)
{
	const struct train_settings *t = tr->t;
	int64_t zd = t->zero_stage >= 1 ? t->dp : 1, shard = tr->lora ? 1 : tr->shard;
	int id = tr->trained.v[i];
	int64_t b = tensor_bytes(&tr->s, id) * shard / zd;
	int copy = id == tr->save_ids[0] || id == tr->save_ids[1];

	*elems = b / (tr->lora && !copy ? DT_FP32 : tr->s.store_bytes);
	return b;
}

/* The optimizer's states, made at the first step, per trained tensor as its row keeps
 * them (plan/optimizer.h); those in managed memory counted, not allocated. */
static uint64_t make_states(struct train *tr, int alloc)
{
	const struct optimizer_row *o = optimizer_row(tr->t);
	struct opt_states st;
	uint64_t paged = 0;
	int64_t n;

	if (tr->t->offload_optimizer) /* in host memory */
		return 0;
	if (alloc && o->qmap_bytes)
		push(&tr->states, tensor_as(&tr->s, o->qmap_bytes, C_OPT_STATES));
	for (size_t i = 0; i < tr->trained.n; i++) {
		int64_t b = trained_bytes(tr, i, &n);
		if (tr->masters) /* the states are the fp32 copy's */
			b = n * DT_FP32;
		optimizer_tensor_states(o, tr->t, n, b, tr->s.hidden, &st);
		for (int j = 0; alloc && j < st.n; j++)
			push(&tr->states, tensor_as(&tr->s, st.bytes[j], C_OPT_STATES));
		paged += (uint64_t)st.paged_bytes;
	}
	return paged;
}

/* The optimizer step: the states at the first; the step's temporaries (foreach AdamW's
 * sqrt copy of exp_avg_sq, all at once; others a tensor's at a time); then the
 * gradients go. */
static void optimizer_step(struct train *tr)
{
	struct step *s = &tr->s;
	const struct optimizer_row *o = optimizer_row(tr->t);
	struct tlist one = { 0 };
	int64_t n, each = 0;
	int g32 = 0;

	s->part = C_OPT_TEMP, s->phase = "optimizer step";
	if (tr->t->offload_optimizer) { /* the step runs on the host */
		free_all(s, &tr->grads);
		return;
	}
	if (!tr->states_made) {
		tr->states_made = 1;
		make_states(tr, 1);
	}
	if (tr->masters && tr->trained_elems) /* the gradients' partition cast to fp32 for the master copy's step */
		g32 = tensor_as(s, tr->trained_elems * DT_FP32, C_OPT_TEMP);
	for (size_t i = 0; o->temps != OT_NONE && i < tr->trained.n; i++) {
		int64_t b = trained_bytes(tr, i, &n);
		int k = optimizer_temps(o, n, tr->masters ? n * DT_FP32 : b, &each);
		for (int j = 0; j < k; j++)
			push(o->temps == OT_FOREACH ? &tr->tmp : &one, tensor_as(s, each, C_OPT_TEMP));
		free_all(s, &one);
	}
	if (o->temps == OT_FOREACH)
		free_all(s, &tr->tmp);
	free(one.v);
	drop(s, g32);
	free_all(s, &tr->grads);
}

static void train_finish(struct train *tr, struct sim_result *r)
{
	struct step *s = &tr->s;

	step_result(s, r);
	r->race_bytes = tr->race_bytes;
	for (int64_t l = 0; l < s->layers; l++)
		free(tr->saved[l].v), free(tr->saved[l].tag);
	free(tr->saved);
	free(tr->params.v), free(tr->trained.v), free(tr->states.v), free(tr->grads.v), free(tr->ckpts.v), free(tr->tmp.v);
	free(tr->head_saved.v), free(tr->head_saved.tag), free(tr->norm_saved.v), free(tr->norm_saved.tag);
	free(tr->rot.v), free(tr->rot.tag);
	free(tr->lsm.v), free(tr->capped.v);
	free(tr->kv.v), free(tr->prev_kv.v), free(tr->ac_cache.v), free(tr->shards.v), free(tr->buckets.v);
	free(tr->ipg.v);
	for (int64_t l = 0; tr->gathered && l < s->layers; l++)
		free(tr->gathered[l].v);
	free(tr->gathered), free(tr->issued), free(tr->root.v);
	free(s->block_of), free(s->bytes_of), free(s->part_of);
	alloc_sim_free(&s->a);
}

/* The first step (counting from 0) that repeats the one before it when it starts where
 * that one did. */
#define STEADY_FROM 2

/* The caller is told once when the plain run's live segments pass t->past_bytes (a
 * jittered run's peak is a spread: it tells nothing). */
static void tell_past(struct train *tr, uint64_t jitter_seed)
{
	const struct alloc_sim *a = &tr->s.a;

	if (tr->t->past && !jitter_seed && !tr->past_told && a->max_occupied_bytes > tr->t->past_bytes) {
		tr->past_told = 1;
		tr->t->past(tr->t->past_ctx);
	}
}

int sim_accumulates(const struct train_settings *t)
{
	return t->grad_accum > 1 && !t->inference && t->zero_stage < 2 && !t->offload_optimizer;
}

/* Micro-batches simulated of an accumulated step: from the second every one asks for
 * the same blocks (the gradients resident, each new one added in and let go). */
#define ACCUM_MICRO 2

/* A forward and backward of one micro-batch; after the first of a step, the gradients
 * the parameters hold stay and each one made is added into them. */
static void micro_step(struct train *tr, int step, int64_t micro, uint64_t jitter_seed)
{
	struct step *s = &tr->s;
	struct tlist held = tr->grads;

	if (micro) { /* the new gradients in a list of their own, each let go once added */
		tr->grads = (struct tlist){ 0 };
		s->accumulating = 1;
	}
	tell_past(tr, jitter_seed);
	train_forward(tr, step);
	tell_past(tr, jitter_seed);
	loss_forward(tr);
	loss_backward(tr);
	tell_past(tr, jitter_seed);
	layers_backward(tr);
	if (micro) {
		accum_settle(s);
		s->accumulating = 0;
		free(tr->grads.v);
		tr->grads = held;
	}
}

uint64_t sim_paged_bytes(const struct model_shape *m, const struct train_settings *t)
{
	struct train tr = { 0 };
	struct sim_result r;
	uint64_t paged;

	if (t->inference || !optimizer_row(t)->paged_min)
		return 0;
	train_start(&tr, m, t);
	paged = make_states(&tr, 0);
	train_finish(&tr, &r);
	return paged;
}

int sim_train(const struct model_shape *m, const struct train_settings *t, int steps, uint64_t jitter_seed,
	      struct sim_result *r)
{
	struct train tr = { 0 };

	if (t->inference)
		return -EINVAL;
	if (steps < 1 || steps > SIM_MAX_STEPS)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	train_start(&tr, m, t);
	/* the seed mixed (splitmix64's constant), so that neighbouring seeds start apart */
	tr.s.jitter = jitter_seed ? 1 << ((jitter_seed - 1) % 4) : 0;
	tr.s.jitter_state = jitter_seed * 0x9E3779B97F4A7C15ULL;
	uint64_t ended[SIM_MAX_STEPS];
	for (int step = 0; step < steps; step++) {
		for (int64_t micro = 0; micro < (sim_accumulates(t) ? ACCUM_MICRO : 1); micro++)
			micro_step(&tr, step, micro, jitter_seed);
		optimizer_step(&tr);
		/* from the third step on every step asks for the same blocks (the first makes
		 * the states, DDP rebuilds its buckets in the second): once one ends where an
		 * earlier one from the second on did, the rest of the run goes round the steps
		 * between (often two: the last step's output in one hole, then in another), and
		 * its peaks are known */
		if (jitter_seed) /* a jittered run's steps differ: it runs them all */
			continue;
		ended[step] = alloc_sim_digest(&tr.s.a);
		int again = 0;
		for (int j = STEADY_FROM - 1; j < step; j++)
			again |= ended[j] == ended[step];
		if (again)
			break;
	}
	train_finish(&tr, r);
	return 0;
}
