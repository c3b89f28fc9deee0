/* A multimodal config's vision tower, as far as a text-only step needs it: its weights
 * (loaded, no gradient, no optimizer state: transformers' vision tower takes no part in a
 * step fed text alone): its shape (plan/config.c reads it from the config's vision_config)
 * and its tensors in construction order. Pure data and arithmetic. */
#ifndef HEADROOM_PLAN_VISION_H
#define HEADROOM_PLAN_VISION_H

#include <stdint.h>

enum vision_kind {
	VISION_NONE,     /* no vision tower planned */
	VISION_SIGLIP,   /* gemma3's SigLIP encoder and its multimodal projector */
	VISION_QWEN2_5,  /* qwen2_5_vl's windowed ViT and its patch merger */
	VISION_KINDS
};

struct vision_shape {
	enum vision_kind kind;
	int64_t hidden, inter, layers;
	int64_t patch_elems;      /* the patch embedding's convolution weight */
	int64_t positions;        /* learned position embeddings (SigLIP's patches) */
	int64_t out;              /* the projector's (merger's) output width: the text hidden size */
	int64_t merge;            /* patches merged into one token (qwen2_5_vl: spatial_merge_size^2) */
};

/* The largest number of tensors vision_*_tensors write. */
#define VISION_TENSORS_MAX 16

/* One encoder layer's tensors (elements) into w; the tensors before the layers (before
 * 1) or after them (0) into w. How many. */
int vision_layer_tensors(const struct vision_shape *v, int64_t *w);
int vision_root_tensors(const struct vision_shape *v, int before, int64_t *w);
/* All its parameters (0 without a tower). */
int64_t vision_params(const struct vision_shape *v);

#endif
