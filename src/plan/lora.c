#include "plan/lora.h"

#include <stddef.h>

int lora_projs(const struct model_shape *m, unsigned targets, struct lora_proj *p)
{
	int64_t h = m->hidden, q = m->heads * m->head_dim, k = m->kv_heads * m->head_dim, I = m->intermediate;
	const struct lora_proj all[LORA_MAX_PROJS] = {
		{ LORA_Q, h, q, 0 }, { LORA_K, h, k, 0 },    { LORA_V, h, k, 0 },   { LORA_O, q, h, 0 },
		{ LORA_GATE, h, I, 1 }, { LORA_UP, h, I, 1 }, { LORA_DOWN, I, h, 1 },
	};
	/* phi3's fused projections (o_proj made before qkv_proj): one adapter on qkv_proj
	 * for any of q, k, v, one on gate_up_proj for gate or up */
	const struct lora_proj fused[] = {
		{ LORA_O, q, h, 0 },
		{ LORA_Q | LORA_K | LORA_V, h, q + 2 * k, 0 },
		{ LORA_GATE | LORA_UP, h, 2 * I, 1 },
		{ LORA_DOWN, I, h, 1 },
	};
	int f = model_family(m)->fused_qkv;
	const struct lora_proj *v = f ? fused : all;
	size_t nv = f ? sizeof(fused) / sizeof(fused[0]) : LORA_MAX_PROJS;
	int n = 0;

	for (size_t i = 0; i < nv; i++)
		if (targets & v[i].bit)
			p[n++] = v[i];
	return n;
}

int64_t lora_params(const struct model_shape *m, const struct train_settings *t)
{
	struct lora_proj p[LORA_MAX_PROJS];
	int64_t n = 0;

	/* each adapted matrix in x out gets A (in x r) and B (r x out) */
	for (int i = lora_projs(m, t->lora_targets, p) - 1; i >= 0; i--)
		n += t->lora_rank * (p[i].in + p[i].out);
	return n * m->layers;
}
