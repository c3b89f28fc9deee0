/* PyTorch's CUDA out-of-memory message read, and a plan said beside what the user saw. */
#include "plan/anchor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plan/limits.h"

/* What starts the message in every PyTorch version. */
static const char oom_marker[] = "CUDA out of memory";
/* How far past the marker the message's figures may lie: the longest wording is about
 * half of it, and a log's next lines are not the message's. */
#define OOM_WINDOW 1024

/* Each wording of a figure, "%S" where its size is: PyTorch 2.2 and later ("GPU 0 has a
 * total capacity of T of which F is free. Including non-PyTorch memory, this process
 * has P memory in use. Of the allocated memory A is allocated by PyTorch, and R is
 * reserved by PyTorch but unallocated."), 2.1 (its "capacty" typo, the process's figure
 * absent when unknown), and 1.x to 2.0 ("(GPU 0; T total capacity; A already allocated;
 * F free; R reserved in total by PyTorch)", before 1.4 "R cached"). */
static const struct {
	enum oom_figure figure;
	const char *pattern;
} oom_wordings[] = {
	{ OOM_ASKED, "Tried to allocate %S" },
	{ OOM_TOTAL, "has a total capacity of %S" },
	{ OOM_TOTAL, "has a total capacty of %S" },
	{ OOM_TOTAL, "; %S total capacity" },
	{ OOM_FREE, "of which %S is free" },
	{ OOM_FREE, "; %S free" },
	{ OOM_IN_USE, "this process has %S memory in use" },
	{ OOM_ALLOCATED, "Of the allocated memory %S is allocated by PyTorch" },
	{ OOM_ALLOCATED, "; %S already allocated" },
	{ OOM_RESERVED_FREE, "and %S is reserved by PyTorch but unallocated" },
	{ OOM_RESERVED, "; %S reserved in total by PyTorch" },
	{ OOM_RESERVED, "; %S cached" },
};

/* PyTorch's units (c10's format_size): bytes below a KiB, then KiB, MiB, GiB, binary. */
static const struct {
	const char *name;
	uint64_t bytes;
} oom_units[] = {
	{ "bytes", 1 }, { "KiB", 1ULL << 10 }, { "MiB", 1ULL << 20 }, { "GiB", 1ULL << 30 },
	{ "TiB", 1ULL << 40 }, { "PiB", 1ULL << 50 },
};

/* Digits of a figure: more would be past any GPU in bytes. */
#define OOM_MAX_DIGITS 15
#define OOM_MAX_DECIMALS 6

static const char *const figure_keys[OOM_NFIGURES] = {
	[OOM_ASKED] = "asked", [OOM_TOTAL] = "total", [OOM_FREE] = "free", [OOM_IN_USE] = "in_use",
	[OOM_ALLOCATED] = "allocated", [OOM_RESERVED_FREE] = "reserved_unallocated", [OOM_RESERVED] = "reserved",
};

const char *oom_figure_key(enum oom_figure f)
{
	return f >= 0 && f < OOM_NFIGURES ? figure_keys[f] : "?";
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A size as PyTorch prints it at s (end e): "4.74 GiB", "0 bytes". Its length, 0 when
 * it is not one, -ERANGE past the planner's limits. */
static long size_at(const char *s, const char *e, uint64_t *out)
{
	const char *p = s;
	uint64_t whole = 0, frac = 0, scale = 1;
	int digits = 0, decimals = 0;

	for (; p < e && is_digit(*p); p++)
		if (++digits > OOM_MAX_DIGITS)
			return -ERANGE;
		else
			whole = whole * 10 + (uint64_t)(*p - '0');
	if (!digits)
		return 0;
	if (p < e && *p == '.')
		for (p++; p < e && is_digit(*p); p++)
			if (decimals < OOM_MAX_DECIMALS) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
				decimals++;
			}
	if (p >= e || *p++ != ' ')
		return 0;
	for (size_t i = 0; i < sizeof(oom_units) / sizeof(oom_units[0]); i++) {
		size_t k = strlen(oom_units[i].name);
		uint64_t u = oom_units[i].bytes;
		if ((size_t)(e - p) < k || memcmp(p, oom_units[i].name, k))
			continue;
		if (whole > PLAN_MAX_BYTES / u)
			return -ERANGE;
		/* the decimals PyTorch prints are of the unit: rounded to the byte */
		*out = whole * u + (uint64_t)((double)frac * (double)u / (double)scale + 0.5);
		if (*out > PLAN_MAX_BYTES)
			return -ERANGE;
		return (long)(p + k - s);
	}
	return 0;
}

static const char *find(const char *s, const char *e, const char *what, size_t k)
{
	for (; (size_t)(e - s) >= k; s++)
		if (!memcmp(s, what, k))
			return s;
	return NULL;
}

/* One wording's figure in [s, e): 1 read, 0 not there, -ERANGE. */
static int wording_read(const char *s, const char *e, const char *pattern, uint64_t *out)
{
	const char *mark = strstr(pattern, "%S"), *post = mark + 2, *at;
	size_t pre = (size_t)(mark - pattern), npost = strlen(post);

	for (; (at = find(s, e, pattern, pre)); s = at + 1) {
		uint64_t v;
		long len = size_at(at + pre, e, &v);
		if (len < 0)
			return (int)len;
		if (!len || (size_t)(e - (at + pre + len)) < npost || memcmp(at + pre + len, post, npost))
			continue;
		*out = v;
		return 1;
	}
	return 0;
}

/* The last marker in text, or NULL. */
static const char *last_marker(const char *text, size_t n)
{
	const char *at = NULL, *p = text, *e = text + n;

	while ((p = find(p, e, oom_marker, sizeof(oom_marker) - 1)))
		at = p++;
	return at;
}

static void gpu_read(const char *s, const char *e, struct oom_message *o)
{
	const char *at = find(s, e, "GPU ", 4);
	int gpu = 0, digits = 0;

	o->gpu = -1;
	for (at = at ? at + 4 : e; at < e && is_digit(*at) && digits < 4; at++, digits++)
		gpu = gpu * 10 + (*at - '0');
	if (digits)
		o->gpu = gpu;
}

int oom_parse(const char *text, size_t n, struct oom_message *o, const char **why)
{
	const char *s = last_marker(text, n), *e;

	memset(o, 0, sizeof(*o));
	o->gpu = -1;
	if (!s)
		return -ENOENT;
	e = (size_t)(text + n - s) > OOM_WINDOW ? s + OOM_WINDOW : text + n;
	for (size_t i = 0; i < sizeof(oom_wordings) / sizeof(oom_wordings[0]); i++) {
		enum oom_figure f = oom_wordings[i].figure;
		int rc;
		if (OOM_KNOWN(o, f))
			continue;
		rc = wording_read(s, e, oom_wordings[i].pattern, &o->bytes[f]);
		if (rc < 0) {
			*why = "a figure of the out-of-memory message is past the planner's limits (1 PiB)";
			return rc;
		}
		if (rc)
			o->known |= 1u << f;
	}
	/* older versions give the reserved total: what of it is unallocated follows */
	if (!OOM_KNOWN(o, OOM_RESERVED_FREE) && OOM_KNOWN(o, OOM_RESERVED) && OOM_KNOWN(o, OOM_ALLOCATED) &&
	    o->bytes[OOM_RESERVED] >= o->bytes[OOM_ALLOCATED]) {
		o->bytes[OOM_RESERVED_FREE] = o->bytes[OOM_RESERVED] - o->bytes[OOM_ALLOCATED];
		o->known |= 1u << OOM_RESERVED_FREE;
		o->derived |= 1u << OOM_RESERVED_FREE;
	}
	gpu_read(s, e, o);
	return 0;
}

uint64_t anchor_shift(uint64_t bytes, int64_t offset)
{
	if (offset < 0) {
		uint64_t down = (uint64_t)-(offset + 1) + 1; /* (INT64_MIN negated overflows) */
		return down >= bytes ? 0 : bytes - down;
	}
	return UINT64_MAX - bytes < (uint64_t)offset ? UINT64_MAX : bytes + (uint64_t)offset;
}

/* The buffer whose items cover the shortfall with the fewest dropped (the largest items:
 * a queue of batches rather than a handful of scalars), said as from/to/frees. */
static void buffer_answer(const struct train_settings *t, struct anchor_answer *ans)
{
	const struct buffer_spec *best = NULL;

	for (size_t i = 0; i < t->nbuffers; i++) {
		const struct buffer_spec *b = &t->buffers[i];
		if (b->item_bytes && (!best || b->item_bytes > best->item_bytes))
			best = b;
	}
	if (!best || !ans->short_bytes)
		return;
	uint64_t drop = (ans->short_bytes + best->item_bytes - 1) / best->item_bytes;
	if (drop > (uint64_t)best->count)
		return;
	ans->has_buffer = 1;
	snprintf(ans->buffer_name, sizeof(ans->buffer_name), "%s", best->name);
	ans->buffer_from = best->count;
	ans->buffer_to = best->count - (int64_t)drop;
	ans->buffer_frees = drop * best->item_bytes;
}

void anchor_answer(const struct anchor *a, uint64_t likely_bytes, const struct train_settings *t,
		   struct anchor_answer *ans)
{
	const struct oom_message *o = &a->oom;

	memset(ans, 0, sizeof(*ans));
	if (a->has_observed) {
		ans->has_peak = 1;
		ans->peak_bytes = a->observed_bytes;
	} else if (a->has_oom && OOM_KNOWN(o, OOM_IN_USE) && OOM_KNOWN(o, OOM_ASKED)) {
		/* the allocation that failed was part of the step: it held at least this */
		ans->has_peak = 1;
		ans->peak_is_least = 1;
		ans->peak_bytes = o->bytes[OOM_IN_USE] + o->bytes[OOM_ASKED];
	}
	if (ans->has_peak) {
		ans->has_offset = 1;
		ans->offset_bytes = ans->peak_bytes >= likely_bytes ? (int64_t)(ans->peak_bytes - likely_bytes)
								    : -(int64_t)(likely_bytes - ans->peak_bytes);
	}
	if (!a->has_oom || !OOM_KNOWN(o, OOM_ASKED) || !OOM_KNOWN(o, OOM_FREE))
		return;
	ans->has_short = 1;
	ans->short_bytes = o->bytes[OOM_ASKED] > o->bytes[OOM_FREE] ? o->bytes[OOM_ASKED] - o->bytes[OOM_FREE] : 0;
	if (OOM_KNOWN(o, OOM_RESERVED_FREE) && !t->expandable && ans->short_bytes &&
	    o->bytes[OOM_RESERVED_FREE] >= ans->short_bytes) {
		ans->expandable = 1;
		ans->reserved_free_bytes = o->bytes[OOM_RESERVED_FREE];
	}
	buffer_answer(t, ans);
}
