/* Data parallelism's buffers in the training step: DDP's gradient buckets, rebuilt
 * after the first step; FSDP2's (ZeRO-3's) all-gathers of a layer's weights and the
 * reduce-scatters of its gradients, on streams of their own. */

#include "plan/pytorch.h"
#include "plan/sim_internal.h"

/* DDP's bucket rebuild before the second step's forward: the first iteration's buckets
 * go, and new ones are made a tensor each, in the order the gradients became ready (the
 * parameters in reverse), a bucket closed once it holds ddp_first_bucket (the first) or
 * bucket_cap_mb, ddp_bucket (the others: plan/pytorch.h). */
void ddp_rebuild(struct train *tr)
{
	struct step *s = &tr->s;
	int64_t bucket = 0, cap = pytorch_constants()->ddp_first_bucket;

	free_all(s, &tr->buckets);
	for (size_t i = tr->trained.n; i-- > 0;) {
		bucket += tensor_bytes(s, tr->trained.v[i]);
		if (bucket >= cap || !i) {
			push(&tr->buckets, tensor_as(s, bucket, C_COLLECTIVE));
			bucket = 0, cap = pytorch_constants()->ddp_bucket;
		}
	}
}

/* FSDP2's all-gathers and reduce-scatters run on streams of their own: their buffers
 * come from those streams' pools. */
enum { FSDP_ALL_GATHER = 1, FSDP_REDUCE_SCATTER = 2 };

/* FSDP2's all-gather of bytes into a buffer on its own stream; the last one's buffer
 * goes once this one has been made (FSDP2 holds it until the next all-gather). With the
 * shards in host memory (CPUOffloadPolicy) each is copied to the GPU first. */
void fsdp_issue(struct train *tr, int64_t bytes)
{
	struct step *s = &tr->s;
	/* offloaded shards are copied in first, as kept, then cast into the buffer */
	int in = s->host_weights ? tensor_for(s, (bytes / s->weight_bytes * s->store_bytes + tr->t->dp - 1) / tr->t->dp,
					      FSDP_ALL_GATHER, C_COLLECTIVE)
				 : 0;
	int b = tensor_for(s, bytes, FSDP_ALL_GATHER, C_COLLECTIVE);

	drop(s, in);
	drop(s, tr->ag);
	tr->ag = b;
}

/* The last all-gather's buffer freed (FSDP2's post-forward and post-backward of the
 * root, its pre-backward once the root's weights are copied out). */
void fsdp_ag_free(struct train *tr)
{
	drop(&tr->s, tr->ag);
	tr->ag = 0;
}

/* The all-gather's copy-out: each weight whole, a tensor of its own on the default
 * stream, into l. */
void fsdp_copy_out(struct train *tr, struct tlist *l, const int64_t *bytes, int n)
{
	for (int i = 0; i < n; i++)
		push(l, tensor_as(&tr->s, bytes[i], C_GATHERED));
}

/* Layer l's weights' bytes, whole, into w (a MoE model's dense layers have their own),
 * the layer now (cur) left as it was. How many; their sum into *total. */
static int fsdp_layer(struct train *tr, int64_t l, int64_t cur, int64_t *w, int64_t *total)
{
	struct step *s = &tr->s;
	int n;

	layer_at(s, l);
	n = layer_gathered(s, w);
	*total = 0;
	for (int i = 0; i < n; i++)
		*total += w[i];
	layer_at(s, cur);
	return n;
}

/* FSDP2 before layer l's forward or backward: its weights whole (all-gathered unless
 * already in flight, then copied out), unless kept from the forward; in the backward
 * the next layer's all-gather (dir -1) issued ahead (dir 0: none, the forward's
 * all-gathers come each at its layer's pre-forward). */
void fsdp_gather(struct train *tr, int64_t l, int dir)
{
	int64_t w[LAYER_WEIGHTS_MAX], total;

	if (!tr->fsdp)
		return;
	if (!tr->gathered[l].n) {
		int n = fsdp_layer(tr, l, l, w, &total);
		if (!tr->issued[l])
			fsdp_issue(tr, total);
		tr->issued[l] = 0;
		fsdp_copy_out(tr, &tr->gathered[l], w, n);
	}
	if (l + dir >= 0 && l + dir < tr->s.layers && !tr->gathered[l + dir].n && !tr->issued[l + dir]) {
		fsdp_layer(tr, l + dir, l, w, &total);
		fsdp_issue(tr, total);
		tr->issued[l + dir] = 1;
	}
}

void fsdp_reshard(struct train *tr, int64_t l)
{
	if (tr->fsdp)
		free_all(&tr->s, &tr->gathered[l]);
}

/* FSDP2 after a group's backward: the gradients from grads' entry `from` on, whole, are
 * copied into the reduce-scatter's input (on the default stream, in the
 * MixedPrecisionPolicy's reduce_dtype) and go; the shard comes back on the
 * reduce-scatter's stream, and is the shards' gradient where it is in their dtype (the
 * views FSDP2 hands out), else cast to it tensor by tensor. ZeRO-2 (DeepSpeed's) the
 * same way: a group's gradients copied into the reduction's bucket and let go, this
 * rank's partition kept (its bucket sized by the group, not by reduce_bucket_size;
 * modelled, not measured). */
void fsdp_reduce_scatter(struct train *tr, size_t from)
{
	struct step *s = &tr->s;
	const struct train_settings *t = tr->t;
	int64_t elems = 0, other = 0, gb = tr->grad_bytes ? tr->grad_bytes : s->weight_bytes;
	int64_t rb = t->mp_reduce_bytes ? t->mp_reduce_bytes : gb, sb = tr->lora ? gb : s->store_bytes;

	if ((!tr->fsdp && !tr->zero2) || from >= tr->grads.n)
		return;
	for (size_t i = from; i < tr->grads.n; i++) {
		int64_t b = tensor_bytes(s, tr->grads.v[i]);
		if (b % gb || tr->lora) /* LoRA's fp32 adapters reduce as they are */
			other += b;
		else
			elems += b / gb;
	}
	/* DeepSpeed's copy into its bucket, made once: no buffer of the group's own */
	int in = tr->bucket_elems ? 0 : tensor_as(s, elems * rb + other, C_COLLECTIVE);
	for (size_t i = from; i < tr->grads.n; i++)
		drop(s, tr->grads.v[i]);
	tr->grads.n = from;
	if (tr->ds3) /* reduced into the flat partitions made as it started */
		return;
	int out = tensor_for(s, (elems * rb + other + t->dp - 1) / t->dp, FSDP_REDUCE_SCATTER, C_GRADS);
	if (t->offload_optimizer) { /* copied to the host as it comes back */
		drop(s, out);
	} else if (rb != sb && elems) { /* cast to the shards' dtype */
		push(&tr->shards, tensor_as(s, (elems * sb + t->dp - 1) / t->dp, C_GRADS));
		drop(s, out);
	} else {
		push(&tr->shards, out);
	}
	drop(s, in);
}
