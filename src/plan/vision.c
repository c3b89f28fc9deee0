#include "plan/vision.h"

int vision_layer_tensors(const struct vision_shape *v, int64_t *w)
{
	int64_t h = v->hidden, I = v->inter;
	int n = 0;

	switch (v->kind) {
	case VISION_SIGLIP: /* k, v, q, out (weights, biases), layer_norm1, fc1, fc2, layer_norm2 */
		for (int i = 0; i < 4; i++)
			w[n++] = h * h, w[n++] = h;
		w[n++] = h, w[n++] = h;
		w[n++] = h * I, w[n++] = I, w[n++] = I * h, w[n++] = h;
		w[n++] = h, w[n++] = h;
		break;
	case VISION_QWEN2_5: /* norm1, norm2, qkv, proj, gate, up, down (with biases) */
		w[n++] = h, w[n++] = h;
		w[n++] = h * 3 * h, w[n++] = 3 * h, w[n++] = h * h, w[n++] = h;
		w[n++] = h * I, w[n++] = I, w[n++] = h * I, w[n++] = I, w[n++] = I * h, w[n++] = h;
		break;
	default:
		break;
	}
	return n;
}

int vision_root_tensors(const struct vision_shape *v, int before, int64_t *w)
{
	int64_t h = v->hidden, mh = h * v->merge;
	int n = 0;

	switch (v->kind) {
	case VISION_SIGLIP: /* the patch convolution and its bias, the positions; the post-norm,
			     * gemma3's projector (its weight and its RMSNorm's) */
		if (before)
			w[n++] = v->patch_elems, w[n++] = h, w[n++] = v->positions * h;
		else
			w[n++] = h, w[n++] = h, w[n++] = h * v->out, w[n++] = h;
		break;
	case VISION_QWEN2_5: /* the patch convolution; the merger's RMSNorm and its two linears */
		if (before)
			w[n++] = v->patch_elems;
		else
			w[n++] = h, w[n++] = mh * mh, w[n++] = mh, w[n++] = mh * v->out, w[n++] = v->out;
		break;
	default:
		break;
	}
	return n;
}

int64_t vision_params(const struct vision_shape *v)
{
	int64_t w[VISION_TENSORS_MAX], p = 0, layer = 0;
	int n;

	if (v->kind == VISION_NONE)
		return 0;
	n = vision_layer_tensors(v, w);
	for (int i = 0; i < n; i++)
		layer += w[i];
	for (int before = 0; before < 2; before++) {
		n = vision_root_tensors(v, before, w);
		for (int i = 0; i < n; i++)
			p += w[i];
	}
	return p + v->layers * layer;
}
