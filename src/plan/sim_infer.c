/* Inference replayed through the simulated caching allocator: the weights, a prefill
 * of batch x seq tokens without autograd (each layer's keys and values into the cache),
 * the logits, then the cache grown to the context. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan/alloc.h"
#include "plan/sim.h"
#include "plan/sim_internal.h"

/* A cache tensor (id) grown to ctx tokens a sequence: keys' and values' as sdpa has them
 * (kv_bytes), latent attention's latents as they were made. */
static int64_t cache_grown(const struct step *s, int id, int64_t ctx)
{
	if (s->fam->attn == ATTN_MLA)
		return s->bytes_of[id] / s->seq * ctx;
	return kv_bytes(s) * s->batch * ctx * s->kv_dim;
}

/* An inference prefill's embeddings, held by the model's forward to its end (into *emb;
 * scaled: a new tensor, see embed_scale_kind), and GPT-2's learned positions'
 * embeddings (one sequence's, held too, into *pos; 0 for others) and their sum. Returns
 * the first layer's input. */
static int infer_embeddings(struct step *s, int step, int *emb, int *pos)
{
	int64_t bytes = s->weight_bytes * s->tokens * s->hidden;
	int x = *emb = tensor(s, bytes);

	*pos = 0;
	if (s->fam->embed_scale) {
		x = tensor(s, bytes);
		if (s->fam->embed_scale == EMBED_SCALED_REPLACES) {
			drop(s, *emb);
			*emb = x;
		}
	}
	if (s->fam->positions == POS_LEARNED) {
		if (!step)
			cublas_workspace(s);
		*pos = tensor(s, s->weight_bytes * s->seq * s->hidden);
		x = tensor(s, bytes);
	}
	return x;
}

int sim_infer(const struct model_shape *m, const struct train_settings *t, int steps, struct sim_result *r)
{
	struct step s = { 0 };
	struct tlist params = { 0 }, cache = { 0 }, rot = { 0 };
	int64_t ctx = t->context > t->seq ? t->context : t->seq;

	if (!t->inference)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	setup(&s, m, t);
	s.eval = 1;
	alloc_sim_init(&s.a);
	s.a.limit_bytes = t->limit_bytes;
	s.a.expandable = t->expandable;
	s.part = C_WEIGHTS, s.phase = "load";
	tensor(&s, 0);
	load(&s, m, t, &params, NULL, 1);
	for (int step = 0; step < steps; step++) {
		s.part = C_ACTIVATIONS, s.phase = "prefill";
		/* the prefill of batch x seq tokens: the embeddings, the masks, rotary cos
		 * and sin, the layers */
		int emb, pos, x = infer_embeddings(&s, step, &emb, &pos), em[2];
		model_masks(&s, 1, em);
		rotary(&s, &rot, step);
		for (int64_t l = 0; l < s.layers; l++) {
			layer_begin(&s, l);
			int out = plain_layer(&s, x, &cache);
			if (x != emb)
				drop(&s, x);
			x = out;
		}
		/* the final norm, lm_head over the last position only (generate()) or over
		 * every position (model(input_ids)) */
		int yf = s.fam->norm == NORM_LAYER ? layer_norm(&s, NULL, s.resid_bytes)
						   : plain_norm(&s, s.tokens, s.hidden, s.resid_bytes);
		drop(&s, x), drop(&s, pos), free_all(&s, &rot), drop(&s, emb), drop(&s, em[0]), drop(&s, em[1]);
		int64_t lb = s.act_bytes * (t->logits_all ? s.tokens : s.batch) * s.vocab;
		s.part = C_LOGITS;
		int logits = tensor(&s, lb);
		drop(&s, yf);
		if (s.fam->logits_scale) /* logits / logits_scaling */
			logits = remake(&s, logits, lb);
		/* gemma2's final softcapping: / cap, tanh, x cap, each a new tensor while the
		 * last one still lives */
		for (int i = 0; s.softcap > 0 && i < 3; i++) {
			int next = tensor(&s, lb);
			drop(&s, logits);
			logits = next;
		}
		/* generating up to the context: each layer's cache grows by concatenation;
		 * its last growth holds the old and the new tensor at once */
		s.phase = "generate";
		if (ctx > s.seq)
			for (size_t i = 0; i < cache.n; i++) {
				/* (a hybrid model's Gated DeltaNet states keep their size) */
				if (s.full_step && s.bytes_of[cache.v[i]] != kv_bytes(&s) * s.tokens * s.kv_dim)
					continue;
				int grown = tensor_as(&s, cache_grown(&s, cache.v[i], ctx), C_KV_CACHE);
				drop(&s, cache.v[i]);
				cache.v[i] = grown;
			}
		/* the caller drops the output (cache and logits) before the next batch */
		free_all(&s, &cache);
		drop(&s, logits);
	}
	step_result(&s, r);
	free(params.v), free(cache.v), free(rot.v), free(rot.tag);
	free(s.block_of), free(s.bytes_of), free(s.part_of);
	alloc_sim_free(&s.a);
	return 0;
}
