/* The anchor (plan/anchor): PyTorch's out-of-memory messages, as the versions print them,
 * read into their figures; and a plan said beside what the user saw. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plan/anchor.h"
#include "plan/model.h"

#define KiB 1024ULL
#define MiB (1024ULL * KiB)
#define GiB (1024ULL * MiB)
/* "X.YZ GiB" as PyTorch prints it, to the byte */
#define G(hundredths) ((uint64_t)((double)(hundredths) * (double)GiB / 100.0 + 0.5))
#define M(hundredths) ((uint64_t)((double)(hundredths) * (double)MiB / 100.0 + 0.5))
#define NONE UINT64_MAX /* the figure is absent */

/* Messages as PyTorch versions print them (each seen in a public issue), and the
 * figures each gives: asked, total, free, in use, allocated, reserved but unallocated,
 * reserved in total. */
static const struct {
	const char *text;
	uint64_t want[OOM_NFIGURES];
	int gpu;
} messages[] = {
	/* 2.2 and later (the 200 MB story's) */
	{ "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.74 GiB. GPU 0 has a total capacity of "
	  "94.97 GiB of which 4.57 GiB is free. Including non-PyTorch memory, this process has 90.39 GiB memory in "
	  "use. Of the allocated memory 85.12 GiB is allocated by PyTorch, and 3.10 GiB is reserved by PyTorch but "
	  "unallocated. If reserved but unallocated memory is large try setting "
	  "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
	  { G(474), G(9497), G(457), G(9039), G(8512), G(310), NONE }, 0 },
	/* 2.2 and later, a figure in MiB */
	{ "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity "
	  "of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this process has 23.60 GiB memory "
	  "in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB is reserved by PyTorch "
	  "but unallocated.",
	  { M(2200), G(2365), M(1106), G(2360), G(2290), M(19487), NONE }, 0 },
	/* 2.1: "capacty", no process figure, "0 bytes" */
	{ "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacty of "
	  "6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB "
	  "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
	  "max_split_size_mb to avoid fragmentation.",
	  { G(170), G(600), 0, NONE, G(293), G(230), NONE }, 0 },
	/* 1.4 to 2.0: the reserved total (what of it is unallocated derived) */
	{ "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 1; 15.90 GiB total capacity; 13.13 GiB "
	  "already allocated; 415.88 MiB free; 14.80 GiB reserved in total by PyTorch)",
	  { M(51200), G(1590), M(41588), NONE, G(1313), G(1480) - G(1313), G(1480) }, 1 },
	/* before 1.4: "cached" */
	{ "RuntimeError: CUDA out of memory. Tried to allocate 12.50 MiB (GPU 0; 10.92 GiB total capacity; 8.57 MiB "
	  "already allocated; 9.28 GiB free; 4.68 MiB cached)",
	  { M(1250), G(1092), G(928), NONE, M(857), NONE /* cached below allocated: not derived */, M(468) }, 0 },
	/* cut short after what it asked */
	{ "CUDA out of memory. Tried to allocate 2.00 GiB", { 2 * GiB, NONE, NONE, NONE, NONE, NONE, NONE }, -1 },
};

static void test_messages(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
		struct oom_message o;
		const char *why = NULL;
		assert_int_equal(oom_parse(messages[i].text, strlen(messages[i].text), &o, &why), 0);
		for (int f = 0; f < OOM_NFIGURES; f++) {
			if (messages[i].want[f] == NONE) {
				if (OOM_KNOWN(&o, f))
					fail_msg("message %zu: %s read as %llu, absent in the text", i, oom_figure_key(f),
						 (unsigned long long)o.bytes[f]);
				continue;
			}
			if (!OOM_KNOWN(&o, f) || o.bytes[f] != messages[i].want[f])
				fail_msg("message %zu: %s %s %llu, want %llu", i, oom_figure_key(f),
					 OOM_KNOWN(&o, f) ? "read as" : "absent, not", (unsigned long long)o.bytes[f],
					 (unsigned long long)messages[i].want[f]);
		}
		assert_int_equal(o.gpu, messages[i].gpu);
	}
}

/* A log: the last message is the one read; none, -ENOENT; a figure past 1 PiB, -ERANGE. */
static void test_log(void **state)
{
	static const char log[] = "step 1\nRuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; "
				  "8.00 GiB total capacity)\nretrying\ntorch.OutOfMemoryError: CUDA out of memory. "
				  "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 16.00 GiB of which 1.00 GiB "
				  "is free.\nTraceback follows; 7.00 GiB free\n";
	struct oom_message o;
	const char *why = NULL;
	(void)state;

	assert_int_equal(oom_parse(log, sizeof(log) - 1, &o, &why), 0);
	assert_int_equal(o.bytes[OOM_ASKED], 2 * GiB);
	assert_int_equal(o.bytes[OOM_TOTAL], 16 * GiB);
	assert_int_equal(o.bytes[OOM_FREE], 1 * GiB);
	assert_int_equal(oom_parse("all fine\n", 9, &o, &why), -ENOENT);
	assert_int_equal(oom_parse("", 0, &o, &why), -ENOENT);
	static const char big[] = "CUDA out of memory. Tried to allocate 2048.00 TiB";
	assert_int_equal(oom_parse(big, sizeof(big) - 1, &o, &why), -ERANGE);
	assert_non_null(why);
	static const char digits[] = "CUDA out of memory. Tried to allocate 12345678901234567890 bytes";
	assert_int_equal(oom_parse(digits, sizeof(digits) - 1, &o, &why), -ERANGE);
	static const char garbled[] = "CUDA out of memory. Tried to allocate lots. of which 3 GB is free";
	assert_int_equal(oom_parse(garbled, sizeof(garbled) - 1, &o, &why), 0);
	assert_int_equal(o.known, 0);
}

static struct anchor story(void)
{
	struct anchor a = { .has_oom = 1 };
	const char *why;
	const char *text = messages[0].text;

	assert_int_equal(oom_parse(text, strlen(text), &a.oom, &why), 0);
	return a;
}

/* The story: short by asked less free; the reserved-but-unallocated covers it; the
 * queue of 100 MiB batches gives back enough with two fewer; the offset from the
 * plan's likely layout to in use plus asked. */
static void test_story_answer(void **state)
{
	struct anchor a = story();
	struct train_settings t;
	struct anchor_answer ans;
	(void)state;

	train_settings_init(&t);
	t.nbuffers = 1;
	strcpy(t.buffers[0].name, "queue");
	t.buffers[0].count = 50;
	t.buffers[0].item_bytes = 100 * MiB;
	anchor_answer(&a, 100 * GiB, &t, &ans);
	assert_true(ans.has_short);
	assert_int_equal(ans.short_bytes, G(474) - G(457));
	assert_true(ans.expandable);
	assert_int_equal(ans.reserved_free_bytes, G(310));
	assert_true(ans.has_buffer);
	assert_int_equal(ans.buffer_from, 50);
	assert_int_equal(ans.buffer_to, 48);
	assert_int_equal(ans.buffer_frees, 200 * MiB);
	assert_true(ans.has_peak && ans.peak_is_least);
	assert_int_equal(ans.peak_bytes, G(9039) + G(474));
	assert_true(ans.has_offset);
	assert_int_equal(ans.offset_bytes, -(int64_t)(100 * GiB - G(9039) - G(474)));

	/* already on expandable segments: not offered again */
	t.expandable = 1;
	anchor_answer(&a, 100 * GiB, &t, &ans);
	assert_false(ans.expandable);
}

/* What is absent stays absent: no free figure, no shortfall; an observed peak is the
 * anchor's peak, exact. */
static void test_absent_and_observed(void **state)
{
	struct anchor a = { .has_oom = 1 };
	struct train_settings t;
	struct anchor_answer ans;
	const char *why, *text = messages[5].text;
	(void)state;

	train_settings_init(&t);
	assert_int_equal(oom_parse(text, strlen(text), &a.oom, &why), 0);
	anchor_answer(&a, 10 * GiB, &t, &ans);
	assert_false(ans.has_short);
	assert_false(ans.has_peak);
	assert_false(ans.has_offset);
	assert_false(ans.expandable);

	struct anchor seen = { .has_observed = 1, .observed_bytes = 12 * GiB };
	anchor_answer(&seen, 10 * GiB, &t, &ans);
	assert_true(ans.has_peak);
	assert_false(ans.peak_is_least);
	assert_int_equal(ans.offset_bytes, (int64_t)(2 * GiB));
	assert_false(ans.has_short);
	assert_int_equal(anchor_shift(5 * GiB, -(int64_t)(2 * GiB)), 3 * GiB);
	assert_int_equal(anchor_shift(1 * GiB, -(int64_t)(2 * GiB)), 0);
	assert_int_equal(anchor_shift(1, INT64_MIN), 0);
	assert_int_equal(anchor_shift(UINT64_MAX - 1, 5), UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_log),
		cmocka_unit_test(test_story_answer),
		cmocka_unit_test(test_absent_and_observed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
