/* The GPU table (plan/gpus): names as --gpu takes them, their memory, unknown names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
	/* issue 45: cards people rent now, as nvidia-smi's memory.total says them */
	assert_int_equal(gpus_find("b200")->memory_bytes, 183359 * MiB);
	assert_int_equal(gpus_find("gb200")->memory_bytes, 189471 * MiB);
	assert_int_equal(gpus_find("h20")->memory_bytes, 97871 * MiB);
	assert_int_equal(gpus_find("l4")->memory_bytes, 23034 * MiB);
	assert_int_equal(gpus_find("l40")->memory_bytes, 46068 * MiB);
	assert_int_equal(gpus_find("5090")->memory_bytes, 32607 * MiB);
	assert_int_equal(gpus_find("rtx-a6000")->memory_bytes, 49140 * MiB);
	assert_int_equal(gpus_find("rtx-6000-ada")->memory_bytes, 49140 * MiB);
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
		{ "NVIDIA B200", "b200" },
		{ "B200", "b200" },
		{ "NVIDIA GB200", "gb200" },
		{ "NVIDIA H20", "h20" },
		{ "NVIDIA L4", "l4" },
		{ "NVIDIA L40", "l40" },
		{ "NVIDIA GeForce RTX 5090", "5090" },
		{ "RTX 5090", "5090" },
		{ "NVIDIA RTX A6000", "rtx-a6000" },
		{ "a6000", "rtx-a6000" },
		{ "NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada" },
		{ "NVIDIA RTX 6000 Ada Gene...", "rtx-6000-ada" },
		{ "RTX 6000 Ada", "rtx-6000-ada" },
		{ "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx-pro-6000" },
		{ "RTX PRO 6000 Max-Q", "rtx-pro-6000" },
		{ "NVIDIA H100 NVL", "h100-94gb" },
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
	assert_null(gpus_find("l20"));
	assert_null(gpus_find("b300"));
}

/* Issue 45: a did-you-mean names only a card of the memory the user's may have: a slip
 * of the fingers, and only where every near name is of one memory. */
static void test_suggest(void **state)
{
	static const struct {
		const char *typed, *near; /* near NULL: no suggestion */
	} cases[] = {
		{ "h2000", "h200" },            { "rtx-pro-600", "rtx-pro-6000" }, { "rtxpro", "rtx-pro-6000" },
		{ "t44", "t4" },                { "l40x", "l40" },                 { "a100-80gbb", "a100-80gb" },
		{ "b300", NULL },  /* another card: one letter replaced */
		{ "5080", NULL },  { "l20", NULL },  { "a10", NULL },
		{ "b20", NULL },   /* b200 or h20: other memories */
		{ "h10", NULL },   /* h100 or h20 */
		{ "nosuch", NULL }, { "", NULL },
	};
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = gpus_suggest(cases[i].typed);
		if (cases[i].near ? !got || strcmp(got, cases[i].near) : got != NULL)
			fail_msg("'%s': %s, not %s", cases[i].typed, got ? got : "none",
				 cases[i].near ? cases[i].near : "none");
	}
}

/* The table in the order the usage lists it, each entry found by its own name. */
static void test_at(void **state)
{
	static const char *const names[] = { "h200", "h100-80gb", "h100-94gb", "a100-80gb", "a100-40gb",
					     "l40s", "rtx-pro-6000", "4090", "3090", "a10g",
					     "t4", "b200", "gb200", "h20", "l4",
					     "l40", "5090", "rtx-a6000", "rtx-6000-ada" };
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
					    cmocka_unit_test(test_at), cmocka_unit_test(test_suggest) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
