#include "plan/gpus.h"

#include <string.h>

#define MIB(n) ((uint64_t)(n) << 20)

static const struct gpu_spec gpus[] = {
	{ "h200", MIB(143771) },        { "h100-80gb", MIB(81559) }, { "h100-94gb", MIB(95830) },
	{ "a100-80gb", MIB(81920) },    { "a100-40gb", MIB(40960) }, { "l40s", MIB(46068) },
	{ "rtx-pro-6000", MIB(97887) }, { "4090", MIB(24564) },      { "3090", MIB(24576) },
	{ "a10g", MIB(23028) },         { "t4", MIB(15360) },
};

const struct gpu_spec *gpus_at(size_t i)
{
	return i < sizeof(gpus) / sizeof(gpus[0]) ? &gpus[i] : NULL;
}

const struct gpu_spec *gpus_find(const char *name)
{
	const struct gpu_spec *g;

	for (size_t i = 0; (g = gpus_at(i)); i++)
		if (!strcmp(g->name, name))
			return g;
	return NULL;
}
