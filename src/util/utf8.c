#include "util/utf8.h"

#include <string.h>

#include "util/strbuf.h"
#include "util/xalloc.h"

/* The length of the well-formed UTF-8 sequence at s (n bytes left), or 0 when it is none. */
static size_t seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range (RFC 3629's table) */

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f; /* no surrogates */
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f; /* nothing past U+10FFFF */
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

int utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t len = seq_len(p + i, n - i);
		if (!len)
			return 0;
		i += len;
	}
	return 1;
}

char *utf8_visible(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	struct strbuf sb = STRBUF_INIT;
	size_t n = strlen(s);

	if (utf8_valid(s, n))
		return xstrdup(s);
	strbuf_add(&sb, "");
	for (size_t i = 0; i < n;) {
		size_t len = seq_len(p + i, n - i);
		if (!len) {
			strbuf_addf(&sb, "\\x%02x", p[i]);
			i++;
			continue;
		}
		strbuf_addf(&sb, "%.*s", (int)len, s + i);
		i += len;
	}
	return strbuf_detach(&sb);
}
