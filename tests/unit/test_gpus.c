/* The GPU table (plan/gpus): names as --gpu takes them, their memory, unknown names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plan/gpus.h"

#define MiB (1024ULL * 1024)

static void test_find(void **state)
{
	(void)state;
	assert_int_equal(gpus_find("h200")->memory_bytes, 143771 * MiB);
	assert_int_equal(gpus_find("h100-80gb")->memory_bytes, 81559 * MiB);
	assert_int_equal(gpus_find("a100-40gb")->memory_bytes, 40960 * MiB);
	assert_int_equal(gpus_find("4090")->memory_bytes, 24564 * MiB);
	assert_int_equal(gpus_find("t4")->memory_bytes, 15360 * MiB);
	assert_string_equal(gpus_find("rtx-pro-6000")->name, "rtx-pro-6000");
	assert_null(gpus_find("nosuch"));
	assert_null(gpus_find(""));
	assert_null(gpus_find("-"));
	assert_null(gpus_find("nvidia"));
}

/* Issue 13: names as users and nvidia-smi write them. */
static void test_aliases(void **state)
{
	static const struct {
		const char *spelling, *name;
	} cases[] = {
		{ "H200", "h200" },
		{ "NVIDIA H200", "h200" },
		{ "h100", "h100-80gb" },
		{ "H100", "h100-80gb" },
		{ "H100-80GB", "h100-80gb" },
		{ "h100 80G", "h100-80gb" },
		{ "NVIDIA H100 80GB HBM3", "h100-80gb" },
		{ "h100-sxm", "h100-80gb" },
		{ "H100 PCIe", "h100-80gb" },
		{ "H100 NVL", "h100-94gb" },
		{ "a100", "a100-80gb" },
		{ "A100-80GB", "a100-80gb" },
		{ "a100-40gb", "a100-40gb" },
		{ "A100_40GB", "a100-40gb" },
		{ "NVIDIA A100-SXM4-40GB", "a100-40gb" },
		{ "NVIDIA A100-PCIE-40GB", "a100-40gb" },
		{ "NVIDIA A100 80GB PCIe", "a100-80gb" },
		{ "L40S", "l40s" },
		{ "NVIDIA L40S", "l40s" },
		{ "RTX 4090", "4090" },
		{ "NVIDIA GeForce RTX 4090", "4090" },
		{ "rtx3090", "3090" },
		{ "RTX PRO 6000", "rtx-pro-6000" },
		{ "NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000" },
		{ "NVIDIA A10G", "a10g" },
		{ "Tesla T4", "t4" },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct gpu_spec *g = gpus_find(cases[i].spelling);
		if (!g)
			fail_msg("'%s' not found", cases[i].spelling);
		assert_string_equal(g->name, cases[i].name);
	}
	/* other cards, and a near miss, stay unknown */
	assert_null(gpus_find("v100"));
	assert_null(gpus_find("a10"));
	assert_null(gpus_find("h100-40gb"));
	assert_null(gpus_find("a100-120gb"));
	assert_null(gpus_find("l40"));
}

/* The table in the order the usage lists it, each entry found by its own name. */
static void test_at(void **state)
{
	static const char *const names[] = { "h200", "h100-80gb", "h100-94gb", "a100-80gb", "a100-40gb", "l40s",
					     "rtx-pro-6000", "4090", "3090", "a10g", "t4" };
	const size_t n = sizeof(names) / sizeof(names[0]);
	(void)state;

	for (size_t i = 0; i < n; i++) {
		assert_string_equal(gpus_at(i)->name, names[i]);
		assert_ptr_equal(gpus_find(names[i]), gpus_at(i));
	}
	assert_null(gpus_at(n));
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_find), cmocka_unit_test(test_aliases),
					    cmocka_unit_test(test_at) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
