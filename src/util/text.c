#include "util/text.h"

#include <stdint.h>

#include "util/strbuf.h"

size_t text_utf8_char(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;
	uint32_t c;

	if (u[0] < 0x80)
		return 1;
	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		n = 2, c = u[0] & 0x1f;
	else if (u[0] >= 0xe0 && u[0] <= 0xef)
		n = 3, c = u[0] & 0x0f;
	else if (u[0] >= 0xf0 && u[0] <= 0xf4)
		n = 4, c = u[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0; /* also the NUL that ends s */
		c = c << 6 | (u[i] & 0x3f);
	}
	/* the shortest form only, no surrogate, nothing past Unicode */
	if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	return n;
}

int text_is_utf8(const char *s)
{
	for (size_t n; *s; s += n)
		if (!(n = text_utf8_char(s)))
			return 0;
	return 1;
}

char *text_printable(const char *s)
{
	static const char named[][2] = { { '\t', 't' }, { '\n', 'n' }, { '\r', 'r' }, { 27, 'e' }, { '\\', '\\' } };
	struct strbuf sb = STRBUF_INIT;

	while (*s) {
		unsigned char b = (unsigned char)*s;
		size_t n = text_utf8_char(s);
		size_t k;

		for (k = 0; k < sizeof(named) / sizeof(named[0]) && named[k][0] != *s; k++)
			;
		if (k < sizeof(named) / sizeof(named[0])) {
			strbuf_addf(&sb, "\\%c", named[k][1]);
			n = 1;
		} else if (!n || b < 0x20 || b == 0x7f || (n == 2 && b == 0xc2 && (unsigned char)s[1] < 0xa0)) {
			/* not UTF-8, or a control character: each byte */
			n = n ? n : 1;
			for (size_t i = 0; i < n; i++)
				strbuf_addf(&sb, "\\x%02x", (unsigned char)s[i]);
		} else {
			strbuf_addf(&sb, "%.*s", (int)n, s);
		}
		s += n;
	}
	return strbuf_detach(&sb);
}
