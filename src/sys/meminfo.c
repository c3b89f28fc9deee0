#include "sys/meminfo.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "sys/fsutil.h"

int meminfo_read(const char *root, struct meminfo *out)
{
	char path[PATH_MAX], line[256];
	int have = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/meminfo", root);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	memset(out, 0, sizeof(*out));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;
		char key[64];

		if (sscanf(line, "%63[^:]: %llu", key, &kb) != 2)
			continue;
		if (!strcmp(key, "MemTotal")) {
			out->total_bytes = kb * 1024;
			have |= 1;
		} else if (!strcmp(key, "MemAvailable")) {
			out->available_bytes = kb * 1024;
			have |= 2;
		} else if (!strcmp(key, "MemFree")) {
			out->free_bytes = kb * 1024;
		} else if (!strcmp(key, "SwapFree")) {
			out->swap_free_bytes = kb * 1024;
		}
	}
	fclose(f);
	return have == 3 ? 0 : -ENODATA;
}

int meminfo_oom_kills(const char *root, uint64_t *out)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/proc/vmstat", root);
	return fs_read_key_u64(path, "oom_kill", out);
}
