/* lib/jsonlex.h — the one JSON lexer: token-level primitives (whitespace,
 * strings and their escapes, numbers, whole values) over a text t[0..n)
 * addressed by byte offsets. The parsers and scanners of api/ build on it;
 * it allocates nothing but what a caller's ki_buf receives. What an upload
 * runs for every token is defined here, inline: a call per string costs
 * the fast parser more than the string's own bytes. */
#ifndef JSONLEX_H
#define JSONLEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/ki.h"

/* An offset that says "no such token": the text ends first or breaks the
 * grammar. */
#define JSONLEX_NONE SIZE_MAX

/* The offset of the first byte at or after i that is not JSON whitespace
 * (space, tab, LF, CR); n when there is none. */
static inline size_t
jsonlex_ws(const unsigned char *t, size_t n, size_t i)
{
	while (i < n && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' ||
	    t[i] == '\t'))
		i++;
	return i;
}

/* The offset just past the closing quote of the string whose opening
 * quote is at t[i]: the first quote after it not escaped (an odd run of
 * backslashes before it). JSONLEX_NONE when the text ends first. Nothing
 * else is checked. */
static inline size_t
jsonlex_string_end(const unsigned char *t, size_t n, size_t i)
{
	for (i++; i < n;) {
		const unsigned char *q = memchr(t + i, '"', n - i), *b;

		if (q == NULL)
			return JSONLEX_NONE;
		for (b = q; b > t + i && b[-1] == '\\'; b--)
			;
		if ((q - b) % 2 == 0)
			return (size_t)(q - t) + 1;
		i = (size_t)(q - t) + 1;
	}
	return JSONLEX_NONE;
}

/* Decodes the escape whose backslash is at t[i]. Returns its length (2;
 * 6 for \uXXXX; 12 for a surrogate pair, a high \u escape directly
 * followed by a low one) with the code point in *cp, or 0 when it is
 * malformed. A lone surrogate escape (a low one, or a high one not
 * followed by a low one) has length 6 and its own value in *cp
 * (0xD800..0xDFFF): what it means is the caller's choice. */
size_t jsonlex_escape(const unsigned char *t, size_t n, size_t i,
	uint32_t *cp);

/* jsonlex_string's flags. */
enum {
	/* Refuse what RFC 8259 and json-c do not agree on, or what this
	 * project never takes in a string: a raw control character,
	 * malformed UTF-8 (RFC 3629), \u0000 and lone surrogate escapes.
	 * Without it only the escapes' grammar is checked (the text is one
	 * json-c accepted) and a lone surrogate escape reads as U+FFFD, as
	 * json-c reads it. */
	JSONLEX_STRICT = 1,
};

/* What jsonlex_string read. */
typedef struct jsonlex_str {
	size_t end;    /* just past the closing quote */
	size_t lone;   /* the first lone surrogate escape, or JSONLEX_NONE */
	int decoded;   /* 1: the contents were decoded into out */
} jsonlex_str;

/* Reads the string whose opening quote is at t[i] (see the flags). When
 * out is non-NULL and the string holds an escape, its decoded contents
 * are appended to out and s->decoded is 1; otherwise out is untouched and
 * the contents are t[i + 1 .. s->end - 1). Returns 0, KI_EINVAL (not
 * closed, a malformed escape, or what JSONLEX_STRICT refuses) or
 * KI_ENOMEM (out's). */
static inline int
jsonlex_string(const unsigned char *t, size_t n, size_t i, int flags,
	ki_buf *out, jsonlex_str *s)
{
	const int strict = flags & JSONLEX_STRICT;
	size_t run = ++i;

	s->lone = JSONLEX_NONE;
	s->decoded = 0;
	for (;;) {
		unsigned char c;
		uint32_t u;
		size_t elen;
		uint64_t x;

		/* Plain ASCII runs are the common case: eight bytes a test. */
		if (i + 8 <= n) {
			memcpy(&x, t + i, 8);
			if (!ki_word_needs_look(x)) {
				i += 8;
				continue;
			}
		}
		if (i >= n)
			return KI_EINVAL;
		c = t[i];
		if (c == '"')
			break;
		if (c != '\\') {
			if (strict && c >= 0x80) {
				size_t k = ki_utf8_len(t + i, n - i);

				if (k == 0)
					return KI_EINVAL;
				i += k;
				continue;
			}
			if (strict && c < 0x20)
				return KI_EINVAL;
			i++;
			continue;
		}
		if ((elen = jsonlex_escape(t, n, i, &u)) == 0)
			return KI_EINVAL;
		if (u >= 0xD800 && u <= 0xDFFF) {
			if (strict)
				return KI_EINVAL;
			if (s->lone == JSONLEX_NONE)
				s->lone = i;
			u = 0xFFFD;
		} else if (u == 0 && strict) {
			return KI_EINVAL;
		}
		if (out != NULL) {
			if (ki_buf_append(out, t + run, i - run) != KI_OK ||
			    ki_buf_put_utf8(out, u) != KI_OK)
				return KI_ENOMEM;
			s->decoded = 1;
		}
		i += elen;
		run = i;
	}
	if (s->decoded && ki_buf_append(out, t + run, i - run) != KI_OK)
		return KI_ENOMEM;
	s->end = i + 1;
	return KI_OK;
}

/* What jsonlex_number read. */
typedef struct jsonlex_num {
	size_t end;        /* just past the literal */
	size_t digits;     /* of the integer part */
	int neg;           /* a leading '-' */
	int is_int;        /* no fraction and no exponent */
} jsonlex_num;

/* Reads the number literal at t[i] by JSON's grammar:
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. Returns 0, or
 * KI_EINVAL when there is none (num->end then says nothing). */
int jsonlex_number(const unsigned char *t, size_t n, size_t i,
	jsonlex_num *num);

/* The end of the scalar at t[i] taken loosely, as json-c's tokens run:
 * the first ',', ']', '}', whitespace or NUL at or after i, or n (a number,
 * true, false, null, or json-c's NaN and Infinity). */
static inline size_t
jsonlex_scalar_end(const unsigned char *t, size_t n, size_t i)
{
	while (i < n && t[i] != ',' && t[i] != ']' && t[i] != '}' &&
	    t[i] != ' ' && t[i] != '\t' && t[i] != '\n' && t[i] != '\r' &&
	    t[i] != '\0')
		i++;
	return i;
}

/* The end of the value at t[i], without checking it: a string's just past
 * its closing quote, a container's just past its matching bracket
 * (strings inside skipped whole, at most max_depth containers deep), a
 * scalar's as jsonlex_scalar_end's (i itself when t[i] ends it).
 * JSONLEX_NONE when i is at the end, when a string or container is not
 * closed, or when containers nest deeper. */
static inline size_t
jsonlex_value_end(const unsigned char *t, size_t n, size_t i, int max_depth)
{
	int depth = 0;

	if (i >= n)
		return JSONLEX_NONE;
	if (t[i] == '"')
		return jsonlex_string_end(t, n, i);
	if (t[i] != '{' && t[i] != '[')
		return jsonlex_scalar_end(t, n, i);
	for (; i < n; i++) {
		if (t[i] == '"') {
			if ((i = jsonlex_string_end(t, n, i)) == JSONLEX_NONE)
				return JSONLEX_NONE;
			i--;
		} else if (t[i] == '{' || t[i] == '[') {
			if (++depth > max_depth)
				return JSONLEX_NONE;
		} else if (t[i] == '}' || t[i] == ']') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return JSONLEX_NONE;
}

#endif
