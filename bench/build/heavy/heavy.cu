// A memory-heavy CUDA source for bench/build/realbuild: HEAVY_KERNELS template kernels, each
// a distinct function that cicc and ptxas hold to the end of the compile, so memory
// grows with the count (about 0.65 MiB a kernel with nvcc 13, sm_90) and peaks late.
#include <utility>
#ifndef HEAVY_KERNELS
#define HEAVY_KERNELS 500
#endif
#ifndef HEAVY_SEED
#define HEAVY_SEED 0
#endif

template <int N> __global__ void kern(float *p)
{
	float acc = p[threadIdx.x];
#pragma unroll
	for (int i = 0; i < 16; i++)
		acc = acc * (N + i + HEAVY_SEED) + __sinf(acc + i);
	p[threadIdx.x + N] = acc;
}

template <int... Is> void launch_all(float *p, std::integer_sequence<int, Is...>)
{
	(kern<Is><<<1, 32>>>(p), ...);
}

void heavy_launch(float *p)
{
	launch_all(p, std::make_integer_sequence<int, HEAVY_KERNELS>{});
}
