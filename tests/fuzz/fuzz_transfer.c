/* libFuzzer target: `headroom profiles import`, a headroom-profiles/1 file read, checked
 * and merged into a store (in memory: nothing is written to disk). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/store.h"
#include "store/transfer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct store *st;
	static unsigned runs;
	struct transfer_counts n;
	char *err = NULL;
	FILE *f;

	if (!st && store_open(":memory:", &st, &err))
		abort();
	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	transfer_import(st, f, "fuzz", "/work/proj", &n, &err);
	free(err);
	fclose(f);
	/* Now and then an empty store again: imports merge into what earlier ones left, and
	 * memory does not grow with the run. */
	if (++runs % 256 == 0)
		store_forget(st, "");
	return 0;
}
