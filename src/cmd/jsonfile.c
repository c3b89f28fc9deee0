/* A JSON file named on the command line, or a message that says what is wrong with it
 * (a directory, a device or a socket, a FIFO nothing was written to, empty, not JSON);
 * bytes from outside put into JSON output. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#include "sys/fsutil.h"
#include "util/escape.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* Does it look like a Hugging Face hub id ("meta-llama/Llama-3.1-8B"): one slash, no
 * file of that name, no ".json"? */
static int looks_like_hub_id(const char *path)
{
	const char *slash = strchr(path, '/');
	size_t n = strlen(path);

	return slash && slash != path && slash[1] && !strchr(slash + 1, '/') && path[0] != '.' &&
	       !(n > 5 && !strcmp(path + n - 5, ".json"));
}

json_t *json_file_load(const char *cmd, const char *path)
{
	const char *kind;
	struct stat st;
	json_error_t e;
	json_t *j;
	FILE *f;
	int rc;

	if (!strcmp(path, "-")) {
		j = json_loadf(stdin, 0, &e);
		if (!j)
			die(EXIT_USAGE, "%s: standard input is not JSON: %s (line %d, column %d)", cmd, e.text, e.line,
			    e.column);
		return j;
	}
	if ((rc = fs_open_input(path, &f, &st, &kind))) {
		if (rc == -ENOENT && looks_like_hub_id(path))
			die(EXIT_USAGE, "%s: %s: no such file; it looks like a Hugging Face hub id: download its config.json "
			    "first (huggingface-cli download %s config.json) and give that file", cmd, path, path);
		if (rc == -EINVAL && S_ISDIR(st.st_mode))
			die(EXIT_USAGE, "%s: %s is a directory: give the config.json in it (%s/config.json)", cmd, path,
			    path);
		if (rc == -EINVAL)
			die(EXIT_USAGE, "%s: %s is %s, not a file: give a config.json", cmd, path, kind);
		die(EXIT_USAGE, "%s: cannot read %s: %s", cmd, path, strerror(-rc));
	}
	if (S_ISREG(st.st_mode) && !st.st_size)
		die(EXIT_USAGE, "%s: %s is empty, not JSON", cmd, path);
	j = json_loadf(f, 0, &e);
	fclose(f);
	if (!j && !e.position && kind) /* a pipe nothing was written to */
		die(EXIT_USAGE, "%s: %s is %s and nothing was written to it: give a config.json", cmd, path, kind);
	if (!j) {
		if (e.line < 1)
			die(EXIT_USAGE, "%s: cannot read %s: %s", cmd, path, e.text);
		die(EXIT_USAGE, "%s: %s is not JSON: %s (line %d, column %d)", cmd, path, e.text, e.line, e.column);
	}
	return j;
}

void json_set_bytes(json_t *o, const char *name, const char *s)
{
	struct strbuf hex = STRBUF_INIT;
	char *shown, *key;

	if (utf8_valid(s)) {
		json_object_set_new(o, name, json_string(s));
		return;
	}
	shown = esc_dup(esc_utf8, s);
	json_object_set_new(o, name, json_string(shown));
	free(shown);
	for (const unsigned char *b = (const unsigned char *)s; *b; b++)
		strbuf_addf(&hex, "%02x", *b);
	key = xasprintf("%s_hex", name);
	json_object_set_new(o, key, json_string(strbuf_str(&hex)));
	free(key);
	strbuf_release(&hex);
}
