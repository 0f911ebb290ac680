/* lib/buf.c — growable byte buffer and the KI_* error strings. */
#include "lib/ki.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
ki_strerror(int rc)
{
	switch (rc) {
	case KI_OK: return "success";
	case KI_ENOMEM: return "out of memory";
	case KI_EINVAL: return "invalid input";
	case KI_ENOTFOUND: return "not found";
	case KI_EEXIST: return "already exists with other content";
	case KI_ESTORE: return "storage engine failure";
	case KI_EFULL: return "storage is full";
	case KI_ECONFLICT: return "precondition failed";
	case KI_ELIMIT: return "limit exceeded";
	case KI_EIO: return "I/O error";
	case KI_EGONE: return "too old";
	case KI_EBUSY: return "in use by another kernelindexd";
	case KI_ECORRUPT: return "stored data is damaged (checksum or "
	    "structure mismatch)";
	case KI_ENOSPC: return "no space left on the device";
	case KI_EUNAVAIL: return "storage engine unavailable for now";
	case KI_EQUOTA: return "the storage engine's space quota is exhausted";
	default: return "unknown error";
	}
}

void
ki_buf_init(ki_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void
ki_buf_free(ki_buf *b)
{
	size_t limit = b->limit;

	free(b->data);
	ki_buf_init(b);
	b->limit = limit;
}

void
ki_buf_reset(ki_buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

int
ki_buf_reserve(ki_buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (b->oom)
		return KI_ENOMEM;
	if (extra > SIZE_MAX - b->len - 1)
		goto fail;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return KI_OK;
	if (b->limit != 0 && need > b->limit + 1)
		goto fail;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->limit != 0 && cap > b->limit + 1)
		cap = b->limit + 1;
	p = realloc(b->data, cap);
	if (p == NULL)
		goto fail;
	b->data = p;
	b->cap = cap;
	return KI_OK;
fail:
	b->oom = 1;
	return KI_ENOMEM;
}

int
ki_buf_append(ki_buf *b, const void *p, size_t n)
{
	if (ki_buf_reserve(b, n) != KI_OK)
		return KI_ENOMEM;
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return KI_OK;
}

int
ki_buf_puts(ki_buf *b, const char *s)
{
	return ki_buf_append(b, s, strlen(s));
}

int
ki_buf_putc(ki_buf *b, char c)
{
	/* The common case, room already there, skips the call and memcpy:
	 * serializers append one byte at a time. */
	if (!b->oom && b->len + 2 <= b->cap) {
		b->data[b->len++] = c;
		b->data[b->len] = '\0';
		return KI_OK;
	}
	return ki_buf_append(b, &c, 1);
}

int
ki_buf_put_u64(ki_buf *b, uint64_t v)
{
	char tmp[20];
	size_t n = sizeof(tmp);

	do {
		tmp[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	return ki_buf_append(b, tmp + n, sizeof(tmp) - n);
}

int
ki_buf_vprintf(ki_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	if (b->oom)
		return KI_ENOMEM;
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return KI_EINVAL;
	if (ki_buf_reserve(b, (size_t)n) != KI_OK)
		return KI_ENOMEM;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return KI_OK;
}

int
ki_buf_printf(ki_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = ki_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int
ki_hex4(const unsigned char *p, uint32_t *v)
{
	uint32_t r = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char c = p[i];

		r <<= 4;
		if (c >= '0' && c <= '9')
			r |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			r |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			r |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*v = r;
	return 0;
}

int
ki_buf_put_utf8(ki_buf *b, uint32_t c)
{
	char u[4];
	size_t n;

	if (c < 0x80) {
		u[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xC0 | (c >> 6));
		u[1] = (char)(0x80 | (c & 0x3F));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xE0 | (c >> 12));
		u[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		u[2] = (char)(0x80 | (c & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (c >> 18));
		u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((c >> 6) & 0x3F));
		u[3] = (char)(0x80 | (c & 0x3F));
		n = 4;
	}
	return ki_buf_append(b, u, n);
}

size_t
ki_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], cp, min;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

int
ki_buf_json_string(ki_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, run = 0;

	if (ki_buf_reserve(b, n + 2) != KI_OK)
		return KI_ENOMEM;
	ki_buf_putc(b, '"');
	while (i < n) {
		unsigned char c;
		char esc[6];
		size_t elen = 2, u;
		uint64_t x;

		/* Plain ASCII runs are the common case: eight bytes a test. */
		if (i + 8 <= n) {
			memcpy(&x, s + i, 8);
			if (!ki_word_needs_look(x)) {
				i += 8;
				continue;
			}
		}
		c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			i++;
			continue;
		}

		if (c >= 0x80) {
			u = ki_utf8_len((const unsigned char *)s + i, n - i);
			if (u > 0) {
				i += u;
				continue;
			}
			/* Not UTF-8 (a message cut inside a character, a raw byte
			 * echoed back): U+FFFD keeps the answer valid JSON. */
			ki_buf_append(b, s + run, i - run);
			ki_buf_puts(b, "\xef\xbf\xbd");
			run = ++i;
			continue;
		}
		if (c >= 0x20 && c != '"' && c != '\\') {
			i++;
			continue;
		}
		ki_buf_append(b, s + run, i - run);
		run = ++i;
		esc[0] = '\\';
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			elen = 6;
		}
		ki_buf_append(b, esc, elen);
	}
	ki_buf_append(b, s + run, n - run);
	return ki_buf_putc(b, '"');
}

char *
ki_buf_steal(ki_buf *b, size_t *len)
{
	char *p;

	if (b->oom) {
		ki_buf_free(b);
		return NULL;
	}
	if (b->data == NULL && ki_buf_reserve(b, 0) != KI_OK)
		return NULL;
	p = b->data;
	if (len != NULL)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}
