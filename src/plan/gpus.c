#include "plan/gpus.h"

#include <ctype.h>
#include <string.h>

#include "util/suggest.h"

#define MIB(n) ((uint64_t)(n) << 20)

/* memory.total as nvidia-smi reports it, in MiB; where each figure was seen is in
 * docs/plan.md ("The GPUs --gpu knows"). */
static const struct gpu_spec gpus[] = {
	{ "h200", MIB(143771) },        { "h100-80gb", MIB(81559) },    { "h100-94gb", MIB(95830) },
	{ "a100-80gb", MIB(81920) },    { "a100-40gb", MIB(40960) },    { "l40s", MIB(46068) },
	{ "rtx-pro-6000", MIB(97887) }, { "4090", MIB(24564) },         { "3090", MIB(24576) },
	{ "a10g", MIB(23028) },         { "t4", MIB(15360) },           { "b200", MIB(183359) },
	{ "gb200", MIB(189471) },       { "h20", MIB(97871) },          { "l4", MIB(23034) },
	{ "l40", MIB(46068) },          { "5090", MIB(32607) },         { "rtx-a6000", MIB(49140) },
	{ "rtx-6000-ada", MIB(49140) },
};

#define NGPUS (sizeof(gpus) / sizeof(gpus[0]))

/* Other spellings, squashed as squash() makes them: a bare "h100" or "a100" is the
 * 80 GB card (the output names the one taken); form factors (SXM, PCIe, NVL, Max-Q: the
 * same memory) and memory kinds as nvidia-smi writes them. */
static const struct {
	const char *alias, *name;
} aliases[] = {
	{ "h100", "h100-80gb" },       { "h100sxm", "h100-80gb" },      { "h100sxm5", "h100-80gb" },
	{ "h100pcie", "h100-80gb" },   { "h100sxm580gb", "h100-80gb" }, { "h10080gbhbm3", "h100-80gb" },
	{ "h100pcie80gb", "h100-80gb" }, { "h100nvl", "h100-94gb" },    { "h100nvl94gb", "h100-94gb" },
	{ "h200sxm", "h200" },         { "h200141gb", "h200" },         { "h200sxm141gb", "h200" },
	{ "h200nvl", "h200" },         { "a100", "a100-80gb" },         { "a100sxm480gb", "a100-80gb" },
	{ "a10080gbpcie", "a100-80gb" }, { "a100pcie80gb", "a100-80gb" }, { "a100sxm440gb", "a100-40gb" },
	{ "a100pcie40gb", "a100-40gb" }, { "l40s48gb", "l40s" },         { "rtxpro6000blackwell", "rtx-pro-6000" },
	{ "rtxpro6000blackwellserveredition", "rtx-pro-6000" },
	{ "rtxpro6000blackwellworkstationedition", "rtx-pro-6000" },
	{ "t416gb", "t4" },              { "a6000", "rtx-a6000" },        { "6000adageneration", "rtx-6000-ada" },
	{ "6000adagene", "rtx-6000-ada" }, /* nvidia-smi's table cuts the name there */
	{ "rtxpro6000maxq", "rtx-pro-6000" }, { "rtxpro6000blackwellmaxqworkstationedition", "rtx-pro-6000" },
	{ "b200sxm", "b200" },           { "b200180gb", "b200" },         { "h2096gb", "h20" },
	{ "l424gb", "l4" },              { "l4048gb", "l40" },
};

/* name lower case, letters and digits only, a word of digits and "g" as "gb" ("80G"),
 * without a leading "nvidia", "geforce" or "tesla" (nvidia-smi's "NVIDIA GeForce RTX
 * 4090") or "rtx" before a number ("rtx4090"): into out of n bytes; 0, or -1 when it
 * does not fit. */
static int squash(const char *name, char *out, size_t n)
{
	static const char *const prefixes[] = { "nvidia", "geforce", "tesla" };
	size_t len = 0;

	for (const char *p = name; *p;) {
		size_t word = 0, digits = 0;
		while (isalnum((unsigned char)p[word])) {
			digits += isdigit((unsigned char)p[word]) != 0;
			word++;
		}
		int gb = word >= 2 && digits == word - 1 && tolower((unsigned char)p[word - 1]) == 'g';
		if (len + word + (size_t)gb >= n)
			return -1;
		for (size_t i = 0; i < word; i++)
			out[len++] = (char)tolower((unsigned char)p[i]);
		if (gb)
			out[len++] = 'b';
		p += word;
		while (*p && !isalnum((unsigned char)*p))
			p++;
	}
	out[len] = '\0';
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t k = strlen(prefixes[i]);
		if (!strncmp(out, prefixes[i], k) && out[k]) {
			memmove(out, out + k, strlen(out + k) + 1);
			i = (size_t)-1; /* "nvidia geforce": from the first again */
		}
	}
	if (!strncmp(out, "rtx", 3) && isdigit((unsigned char)out[3]))
		memmove(out, out + 3, strlen(out + 3) + 1);
	return 0;
}

const struct gpu_spec *gpus_at(size_t i)
{
	return i < NGPUS ? &gpus[i] : NULL;
}

const struct gpu_spec *gpus_find(const char *name)
{
	char want[64], have[64];

	if (squash(name, want, sizeof(want)) || !*want)
		return NULL;
	for (size_t i = 0; i < NGPUS; i++)
		if (!squash(gpus[i].name, have, sizeof(have)) && !strcmp(have, want))
			return &gpus[i];
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(aliases[i].alias, want))
			for (size_t j = 0; j < NGPUS; j++)
				if (!strcmp(gpus[j].name, aliases[i].name))
					return &gpus[j];
	return NULL;
}

const char *gpus_suggest(const char *name)
{
	struct {
		const char *squashed;
		const struct gpu_spec *g;
	} known[NGPUS + sizeof(aliases) / sizeof(aliases[0])];
	char want[64], names[NGPUS][64];
	size_t n = 0, len;
	unsigned limit, best_d = ~0u;
	uint64_t memory = 0;
	const struct gpu_spec *best = NULL;

	if (squash(name, want, sizeof(want)) || !(len = strlen(want)))
		return NULL;
	for (size_t i = 0; i < NGPUS; i++)
		if (!squash(gpus[i].name, names[i], sizeof(names[i])))
			known[n].squashed = names[i], known[n++].g = &gpus[i];
	/* the short aliases ("h100"), as a user types them: not nvidia-smi's long names */
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strlen(aliases[i].alias) <= 6)
			for (size_t j = 0; j < NGPUS; j++)
				if (!strcmp(gpus[j].name, aliases[i].name))
					known[n].squashed = aliases[i].alias, known[n++].g = &gpus[j];
	limit = len / 3 < 1 ? 1 : len / 3 > 3 ? 3 : (unsigned)(len / 3);
	/* A suggestion is a slip of the fingers: letters left out, added or two swapped, or
	 * the name's start. One replaced ("b300" for "b200", "5080" for "5090") most often
	 * names another card, so is not suggested; but it is near: the slips and the names a
	 * letter away must all be cards of one memory ("b20": b200, and h20 a letter away,
	 * are not; "h10": h100 and h20), else nothing is suggested. */
	for (size_t i = 0; i < n; i++) {
		unsigned d = suggest_distance(want, known[i].squashed), slips = suggest_slips(want, known[i].squashed);
		int slip = (slips <= limit && slips == d) || !strncmp(known[i].squashed, want, len);
		if (!slip && d > 1)
			continue;
		if (memory && known[i].g->memory_bytes != memory)
			return NULL;
		memory = known[i].g->memory_bytes;
		if (slip && slips < best_d)
			best_d = slips, best = known[i].g;
	}
	return best ? best->name : NULL;
}
