/* Bytes an element of each dtype the simulation's tensors are held in: every size in
 * sim.c is a count of elements times one of these (or a dtype a setting chose: the
 * weights', the activations'). Pure. */
#ifndef HEADROOM_PLAN_DTYPE_H
#define HEADROOM_PLAN_DTYPE_H

enum dtype_bytes {
	DT_BOOL = 1,     /* torch.bool: masks */
	DT_UINT8 = 1,    /* dropout's masks */
	DT_BF16 = 2,     /* also fp16: the same bytes */
	DT_FP32 = 4,
	DT_INT64 = 8,    /* indices (top-k, sorting) */
};

#endif
