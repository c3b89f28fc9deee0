/* What changed between two probes of a GPU (profile/gpuprobe): two recorded probes a
 * case, as `headroom probe` kept them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "profile/gpuprobe.h"

#define MIB (1LL << 20)

/* The H200 under driver 570 and torch 2.10 (cu128), and after the upgrade. */
static void h200(struct gpu_probe *p, const char *driver, const char *torch, const char *cuda, int64_t when,
		 int64_t overhead_mib)
{
	probe_init(p);
	snprintf(p->gpu, sizeof(p->gpu), "NVIDIA H200");
	snprintf(p->uuid, sizeof(p->uuid), "GPU-5e1f0c1a");
	snprintf(p->driver, sizeof(p->driver), "%s", driver);
	snprintf(p->torch, sizeof(p->torch), "%s", torch);
	snprintf(p->cuda, sizeof(p->cuda), "%s", cuda);
	p->probed_s = when;
	p->total_bytes = 150754820096LL;
	p->context_lazy_bytes = p->context_eager_bytes = 510 * MIB;
	p->torch_overhead_bytes = overhead_mib < 0 ? -1 : overhead_mib * MIB;
}

static char *text_of(const struct gpu_probe *now, const struct gpu_probe *then, const struct probe_change *c)
{
	static char buf[1024];
	struct strbuf sb = STRBUF_INIT;

	probe_change_text(&sb, now, then, c);
	snprintf(buf, sizeof(buf), "%s", strbuf_str(&sb));
	strbuf_release(&sb);
	return buf;
}

static void test_nothing_changed(void **state)
{
	struct gpu_probe then, now;
	struct probe_change c;

	(void)state;
	h200(&then, "580.159.04", "2.11.0+cu130", "13.0", 1765000000, 758);
	h200(&now, "580.159.04", "2.11.0+cu130", "13.0", 1765100000, 758);
	now.torch_overhead_bytes += MIB; /* within a driver page: the same */
	probe_compare(&now, &then, &c);
	assert_false(c.first);
	assert_true(c.nothing_changed);
	assert_int_equal(c.context, PROBE_SAME);
	for (int v = 0; v < PROBE_NVERSIONS; v++)
		assert_int_equal(c.versions[v], PROBE_SAME);
	assert_string_equal(c.figure, "torch_overhead_bytes");
	assert_string_equal(text_of(&now, &then, &c),
			    "nothing changed since the probe (torch 2.11.0+cu130, CUDA 13.0, driver 580.159.04; "
			    "probed 2025-12-06 05:46 UTC): 759.00 MiB now, 758.00 MiB then");
}

static void test_torch_upgraded_context_grew(void **state)
{
	struct gpu_probe then, now;
	struct probe_change c;
	json_t *j;

	(void)state;
	h200(&then, "570.86.15", "2.10.0+cu128", "12.8", 1762000000, 546);
	h200(&now, "570.86.15", "2.11.0+cu130", "13.0", 1765100000, 758);
	probe_compare(&now, &then, &c);
	assert_false(c.nothing_changed);
	assert_int_equal(c.versions[PROBE_TORCH], PROBE_CHANGED);
	assert_int_equal(c.versions[PROBE_CUDA], PROBE_CHANGED);
	assert_int_equal(c.versions[PROBE_DRIVER], PROBE_SAME);
	assert_int_equal(c.context, PROBE_CHANGED);
	assert_int_equal(c.delta_bytes, 212 * MIB);
	assert_string_equal(text_of(&now, &then, &c),
			    "the context (with PyTorch's workspaces) grew 212.00 MiB since torch 2.10.0+cu128, CUDA 12.8 "
			    "(driver 570.86.15; probed 2025-11-01 12:26 UTC): 758.00 MiB now, 546.00 MiB then; "
			    "torch 2.10.0+cu128 -> 2.11.0+cu130, CUDA 12.8 -> 13.0");
	j = probe_change_json(&now, &then, &c);
	assert_int_equal(json_integer_value(json_object_get(j, "delta_bytes")), 212 * MIB);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "versions"), "torch")), "changed");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "versions"), "driver")), "same");
	json_decref(j);
}

static void test_driver_changed_context_shrank(void **state)
{
	struct gpu_probe then, now;
	struct probe_change c;

	(void)state;
	h200(&then, "570.86.15", "2.11.0+cu130", "13.0", 1762000000, 758);
	h200(&now, "580.159.04", "2.11.0+cu130", "13.0", 1765100000, 700);
	probe_compare(&now, &then, &c);
	assert_int_equal(c.versions[PROBE_DRIVER], PROBE_CHANGED);
	assert_int_equal(c.versions[PROBE_TORCH], PROBE_SAME);
	assert_int_equal(c.delta_bytes, -58 * MIB);
	assert_false(c.nothing_changed);
	assert_string_equal(text_of(&now, &then, &c),
			    "the context (with PyTorch's workspaces) shrank 58.00 MiB since driver 570.86.15 "
			    "(torch 2.11.0+cu130, CUDA 13.0; probed 2025-11-01 12:26 UTC): 700.00 MiB now, 758.00 MiB then; "
			    "driver 570.86.15 -> 580.159.04");
}

static void test_first_probe(void **state)
{
	struct gpu_probe now;
	struct probe_change c;
	json_t *j;

	(void)state;
	h200(&now, "580.159.04", "2.11.0+cu130", "13.0", 1765100000, 758);
	probe_compare(&now, NULL, &c);
	assert_true(c.first);
	assert_false(c.nothing_changed);
	assert_null(c.figure);
	assert_int_equal(c.versions[PROBE_TORCH], PROBE_UNKNOWN);
	assert_string_equal(text_of(&now, NULL, &c), "the first probe of this GPU: nothing earlier to compare with");
	j = probe_change_json(&now, NULL, &c);
	assert_true(json_is_null(json_object_get(j, "delta_bytes")));
	assert_true(json_is_null(json_object_get(j, "then_bytes")));
	json_decref(j);
}

/* A probe without --torch knows no torch, CUDA or PyTorch figure: absent, never 0. The
 * figures both know (the CUDA context) are compared instead, and the versions only one
 * probe knows are said as unknown, never as changed or the same. */
static void test_unknown_fields(void **state)
{
	struct gpu_probe then, now;
	struct probe_change c;
	json_t *j;

	(void)state;
	h200(&then, "580.159.04", "", "", 1762000000, -1);
	h200(&now, "580.159.04", "2.11.0+cu130", "13.0", 1765100000, 758);
	now.context_lazy_bytes = 530 * MIB;
	probe_compare(&now, &then, &c);
	assert_int_equal(c.versions[PROBE_TORCH], PROBE_UNKNOWN);
	assert_int_equal(c.versions[PROBE_CUDA], PROBE_UNKNOWN);
	assert_int_equal(c.versions[PROBE_DRIVER], PROBE_SAME);
	assert_string_equal(c.figure, "context_lazy_bytes");
	assert_int_equal(c.delta_bytes, 20 * MIB);
	assert_false(c.nothing_changed);
	assert_string_equal(text_of(&now, &then, &c),
			    "the CUDA context (lazy loading) grew 20.00 MiB since the probe (driver 580.159.04; "
			    "probed 2025-11-01 12:26 UTC): 530.00 MiB now, 510.00 MiB then; "
			    "torch unknown then, 2.11.0+cu130 now, CUDA unknown then, 13.0 now");
	j = probe_json(&then);
	assert_true(json_is_null(json_object_get(j, "torch_overhead_bytes")));
	assert_true(json_is_null(json_object_get(j, "torch_version")));
	assert_string_equal(json_string_value(json_object_get(j, "uuid")), "GPU-5e1f0c1a");
	json_decref(j);

	/* nothing measured by both: no figure compared, no delta */
	then.context_lazy_bytes = then.context_eager_bytes = -1;
	then.probed_s = -1;
	probe_compare(&now, &then, &c);
	assert_null(c.figure);
	assert_int_equal(c.context, PROBE_UNKNOWN);
	assert_int_equal(c.delta_bytes, 0);
	assert_false(c.nothing_changed);
	assert_string_equal(text_of(&now, &then, &c),
			    "no figure measured by both this probe and the last one to compare since the probe "
			    "(driver 580.159.04; probed an unknown date); torch unknown then, 2.11.0+cu130 now, "
			    "CUDA unknown then, 13.0 now");
}

static void test_same_gpu_and_said(void **state)
{
	struct gpu_probe a, b;
	struct strbuf sb = STRBUF_INIT;

	(void)state;
	h200(&a, "580.159.04", "2.11.0+cu130", "13.0", 1765100000, 758);
	b = a;
	assert_true(probe_same_gpu(&a, &b));
	snprintf(b.uuid, sizeof(b.uuid), "GPU-other");
	assert_false(probe_same_gpu(&a, &b));
	b.uuid[0] = '\0'; /* kept before UUIDs were: a card of that name */
	assert_true(probe_same_gpu(&a, &b));
	snprintf(b.gpu, sizeof(b.gpu), "NVIDIA H100 80GB HBM3");
	assert_false(probe_same_gpu(&a, &b));
	probe_said(&sb, &a);
	assert_string_equal(strbuf_str(&sb), "probed 2025-12-07 09:33 UTC (torch 2.11.0+cu130, CUDA 13.0, driver 580.159.04)");
	strbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_changed),
		cmocka_unit_test(test_torch_upgraded_context_grew),
		cmocka_unit_test(test_driver_changed_context_shrank),
		cmocka_unit_test(test_first_probe),
		cmocka_unit_test(test_unknown_fields),
		cmocka_unit_test(test_same_gpu_and_said),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
