#include "util/escape.h"

#include <stdint.h>
#include <string.h>

/* The second byte's range for each lead byte that has a narrower one than 80..BF
 * (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF). */
static const struct {
	unsigned char lead, lo, hi;
} second[] = {
	{ 0xE0, 0xA0, 0xBF },
	{ 0xED, 0x80, 0x9F },
	{ 0xF0, 0x90, 0xBF },
	{ 0xF4, 0x80, 0x8F },
};

size_t utf8_seq_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n;

	if (s[0] && s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		n = 2;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		n = 3;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		n = 4;
	else
		return 0;
	for (size_t i = 0; i < sizeof(second) / sizeof(second[0]); i++)
		if (second[i].lead == s[0])
			lo = second[i].lo, hi = second[i].hi;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

size_t utf8_cut(const char *s, size_t max)
{
	size_t i = 0, n;

	while (s[i]) {
		n = utf8_seq_len(s + i);
		if (!n)
			n = 1; /* an invalid byte is a character of its own here */
		if (i + n > max)
			break;
		i += n;
	}
	return i;
}

int utf8_valid(const char *s)
{
	for (size_t n; *s; s += n)
		if (!(n = utf8_seq_len(s)))
			return 0;
	return 1;
}

static void add_bytes(struct strbuf *sb, const char *s, size_t n)
{
	char tmp[8];

	memcpy(tmp, s, n);
	tmp[n] = '\0';
	strbuf_add(sb, tmp);
}

void esc_utf8(struct strbuf *sb, const char *s)
{
	size_t n;

	strbuf_add(sb, "");
	for (; *s; s += n ? n : 1) {
		n = utf8_seq_len(s);
		if (n)
			add_bytes(sb, s, n);
		else
			strbuf_addf(sb, "\\x%02X", (unsigned char)*s);
	}
}

void esc_prom_label(struct strbuf *sb, const char *s)
{
	size_t n;

	strbuf_add(sb, "");
	for (; *s; s += n ? n : 1) {
		n = utf8_seq_len(s);
		if (!n)
			strbuf_addf(sb, "\\\\x%02X", (unsigned char)*s); /* \xHH, its backslash escaped */
		else if (*s == '\\')
			strbuf_add(sb, "\\\\");
		else if (*s == '"')
			strbuf_add(sb, "\\\"");
		else if (*s == '\n')
			strbuf_add(sb, "\\n");
		else
			add_bytes(sb, s, n);
	}
}

static uint32_t code_point(const unsigned char *s, size_t n)
{
	static const unsigned char lead_mask[] = { 0, 0x7F, 0x1F, 0x0F, 0x07 };
	uint32_t c = s[0] & lead_mask[n];

	for (size_t i = 1; i < n; i++)
		c = c << 6 | (s[i] & 0x3F);
	return c;
}

/* What a terminal acts on rather than shows: C0 and DEL, C1, and the Unicode line,
 * paragraph and bidirectional formatting controls. */
static const struct {
	uint32_t lo, hi;
} controls[] = {
	{ 0x00, 0x1F }, { 0x7F, 0x9F }, { 0x2028, 0x2029 }, { 0x202A, 0x202E }, { 0x2066, 0x2069 }, { 0x200E, 0x200F },
};

static int is_control(uint32_t c)
{
	for (size_t i = 0; i < sizeof(controls) / sizeof(controls[0]); i++)
		if (c >= controls[i].lo && c <= controls[i].hi)
			return 1;
	return 0;
}

void esc_term(struct strbuf *sb, const char *s)
{
	size_t n;

	strbuf_add(sb, "");
	for (; *s; s += n ? n : 1) {
		uint32_t c;
		n = utf8_seq_len(s);
		if (!n) {
			strbuf_addf(sb, "\\x%02X", (unsigned char)*s);
			continue;
		}
		c = code_point((const unsigned char *)s, n);
		if (c == '\\')
			strbuf_add(sb, "\\\\");
		else if (c < 0x80 && is_control(c))
			strbuf_addf(sb, "\\x%02X", (unsigned)c);
		else if (is_control(c))
			strbuf_addf(sb, "\\u{%04X}", (unsigned)c);
		else
			add_bytes(sb, s, n);
	}
}

char *esc_dup(void (*sink)(struct strbuf *, const char *), const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	sink(&sb, s);
	return strbuf_detach(&sb);
}
