// A memory-heavy translation unit for the real-compile tests: each instantiation of
// Node<N> is a distinct class the compiler keeps in memory to the end, so cc1plus
// grows with HEAVY_DEPTH (about 0.1 MiB per step with g++ 12).
#ifndef HEAVY_DEPTH
#define HEAVY_DEPTH 4000
#endif
#ifndef HEAVY_SEED
#define HEAVY_SEED 1
#endif

template <int N> struct Node {
	static constexpr unsigned long value = Node<N - 1>::value * 31u + N + HEAVY_SEED;
	long pad[(N % 5) + 1];
	template <int K> long at() const { return pad[K % ((N % 5) + 1)] + Node<N - 1>{}.template at<K>(); }
};

template <> struct Node<0> {
	static constexpr unsigned long value = HEAVY_SEED;
	template <int K> long at() const { return K; }
};

unsigned long heavy_value(void);
unsigned long heavy_value(void)
{
	return Node<HEAVY_DEPTH>::value + Node<HEAVY_DEPTH>{}.at<3>();
}
