/* server/encode.c — content negotiation, JSON as YAML, and gzip. */
#include "server/encode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "lib/jsonlex.h"

#define YAML_MAX_DEPTH 256

/* ---- header lists ---- */

/* One element of a comma-separated header list: the value [*v, *v+*vlen)
 * (parameters cut off), its q (1000 = 1.0), and where the next element
 * starts. Returns 0 at the end of the list. */
static int
next_elem(const char **p, const char **v, size_t *vlen, int *q)
{
	const char *s = *p, *e, *semi;

	while (*s == ' ' || *s == '\t' || *s == ',')
		s++;
	if (*s == '\0')
		return 0;
	e = strchr(s, ',');
	if (e == NULL)
		e = s + strlen(s);
	semi = memchr(s, ';', (size_t)(e - s));
	*v = s;
	*vlen = (size_t)((semi ? semi : e) - s);
	while (*vlen > 0 && (s[*vlen - 1] == ' ' || s[*vlen - 1] == '\t'))
		(*vlen)--;
	*q = 1000;
	for (const char *t = semi; t != NULL && t < e; ) {
		t++;
		while (t < e && (*t == ' ' || *t == '\t'))
			t++;
		if (e - t >= 2 && (t[0] == 'q' || t[0] == 'Q') && t[1] == '=') {
			/* qvalue: 0, 1, or 0.ddd (RFC 9110 12.4.2). */
			int val = 0, scale = 1000;

			t += 2;
			if (t < e && *t == '1')
				val = 1000;
			else if (t < e && *t == '0')
				val = 0;
			else
				val = 1000;
			if (t < e)
				t++;
			if (t < e && *t == '.') {
				for (t++; t < e && *t >= '0' && *t <= '9' && scale > 1;
				    t++) {
					scale /= 10;
					if (val < 1000)
						val += (*t - '0') * scale;
				}
			}
			*q = val;
		}
		t = memchr(t, ';', (size_t)(e - t));
	}
	*p = e;
	return 1;
}

static int
elem_is(const char *v, size_t len, const char *name)
{
	return strlen(name) == len && strncasecmp(v, name, len) == 0;
}

int
enc_accepts_gzip(const char *ae)
{
	const char *v;
	size_t n;
	int q, gzip = -1, star = -1;

	if (ae == NULL)
		return 0;
	while (next_elem(&ae, &v, &n, &q)) {
		if (elem_is(v, n, "gzip") || elem_is(v, n, "x-gzip"))
			gzip = q;
		else if (elem_is(v, n, "*"))
			star = q;
	}
	return gzip > 0 || (gzip < 0 && star > 0);
}

int
enc_wants_yaml(const char *accept)
{
	const char *v;
	size_t n;
	int q, pos = 0, yaml_q = -1, yaml_pos = 0, json_q = -1, json_pos = 0;

	if (accept == NULL)
		return 0;
	while (next_elem(&accept, &v, &n, &q)) {
		pos++;
		if (elem_is(v, n, "application/yaml") && q > yaml_q) {
			yaml_q = q;
			yaml_pos = pos;
		} else if (elem_is(v, n, "application/json") && q > json_q) {
			json_q = q;
			json_pos = pos;
		}
	}
	if (yaml_q <= 0)
		return 0;
	return yaml_q > json_q || (yaml_q == json_q && yaml_pos < json_pos);
}

int
enc_accepts(const char *accept, int forms)
{
	const char *v;
	size_t n;
	int q, ok = 0;

	if (accept == NULL || strspn(accept, " \t") == strlen(accept))
		return 1;
	while (next_elem(&accept, &v, &n, &q)) {
		if (q <= 0)
			continue;
		if (elem_is(v, n, "*/*") || elem_is(v, n, "application/*") ||
		    elem_is(v, n, "application/json") ||
		    ((forms & ENC_YAML) && elem_is(v, n, "application/yaml")) ||
		    ((forms & ENC_CSV) && (elem_is(v, n, "text/csv") ||
		    elem_is(v, n, "text/*"))))
			ok = 1;
	}
	return ok;
}

static int
is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static size_t
token_len(const char *p)
{
	size_t i = 0;

	while (is_tchar((unsigned char)p[i]))
		i++;
	return i;
}

/* The quoted-string at p[*i] (its opening quote), read up to end:
 * unescaped into val (cap bytes, NUL-ended; *over set when it did not
 * fit), *i moved past the closing quote. Returns 0, or -1 when it is
 * not one. */
static int
quoted(const char *p, size_t *i, size_t end, char *val, size_t cap,
	int *over)
{
	size_t k = *i + 1, vl = 0;

	for (; k < end && p[k] != '"'; k++) {
		unsigned char c = (unsigned char)p[k];

		if (c == '\\' && ++k < end)
			c = (unsigned char)p[k];
		else if (c == '\\')
			return -1;
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return -1;
		if (vl + 1 < cap)
			val[vl++] = (char)c;
		else
			*over = 1;
	}
	val[vl] = '\0';
	if (k >= end)
		return -1;
	*i = k + 1;
	return 0;
}

int
enc_content_type(const char *ct, char *mt, size_t n, const char **why)
{
	const char *p = ct, *names[16];
	size_t nlens[16], np = 0, i, end, k;
	int bad_charset = 0;

	if (n > 0)
		mt[0] = '\0';
	*why = NULL;
	if (ct == NULL)
		return 0;
	/* The field's own whitespace, before and after the value. */
	p += strspn(p, " \t");
	for (end = strlen(p); end > 0 && (p[end - 1] == ' ' ||
	    p[end - 1] == '\t'); end--)
		;
	if (end == 0)
		return 0;
	i = token_len(p);
	if (i == 0 || p[i] != '/' || token_len(p + i + 1) == 0) {
		*why = "it does not start with a type/subtype";
		return ENC_CT_BAD;
	}
	i += 1 + token_len(p + i + 1);
	for (k = 0; k < i && k + 1 < n; k++)
		mt[k] = (char)(p[k] >= 'A' && p[k] <= 'Z' ? p[k] + 32 : p[k]);
	if (n > 0)
		mt[k] = '\0';
	while (i < end) {
		char val[32];
		size_t name, nl;
		int over = 0;

		i += strspn(p + i, " \t");
		if (p[i] != ';') {
			*why = "parameters follow the type after a \";\"";
			return ENC_CT_BAD;
		}
		i++;
		i += strspn(p + i, " \t");
		if (i >= end || p[i] == ';')
			continue;   /* an empty parameter */
		name = i;
		nl = token_len(p + i);
		if (nl == 0 || p[i + nl] != '=') {
			*why = "a parameter is a name, \"=\" and a value, with no "
			    "space around the \"=\"";
			return ENC_CT_BAD;
		}
		i += nl + 1;
		if (p[i] == '"') {
			if (quoted(p, &i, end, val, sizeof(val), &over) != 0) {
				*why = "a quoted parameter value is not closed, or holds "
				    "a control character";
				return ENC_CT_BAD;
			}
		} else {
			size_t vl = token_len(p + i);

			if (vl == 0) {
				*why = "a parameter's value is a token or a quoted "
				    "string";
				return ENC_CT_BAD;
			}
			over = vl >= sizeof(val);
			snprintf(val, sizeof(val), "%.*s", (int)vl, p + i);
			i += vl;
		}
		for (k = 0; k < np; k++)
			if (nlens[k] == nl && strncasecmp(names[k], p + name,
			    nl) == 0) {
				*why = "a parameter is given twice";
				return ENC_CT_BAD;
			}
		if (np == sizeof(names) / sizeof(names[0])) {
			*why = "it has more than 16 parameters";
			return ENC_CT_BAD;
		}
		names[np] = p + name;
		nlens[np++] = nl;
		if (nl == 7 && strncasecmp(p + name, "charset", 7) == 0)
			bad_charset = over || (strcasecmp(val, "utf-8") != 0 &&
			    strcasecmp(val, "utf8") != 0);
	}
	return bad_charset ? ENC_CT_CHARSET : 0;
}

int
enc_compressible(const char *ct)
{
	if (ct == NULL)
		return 0;
	return strncmp(ct, "application/json", 16) == 0 ||
	    strncmp(ct, "application/yaml", 16) == 0 ||
	    strncmp(ct, "text/", 5) == 0 ||
	    strncmp(ct, "image/svg+xml", 13) == 0;
}

/* ---- gzip ---- */

int
enc_gzip(const char *in, size_t len, ki_buf *out)
{
	z_stream z;
	int rc = KI_OK, zr;

	memset(&z, 0, sizeof(z));
	/* Level 1: JSON still shrinks about tenfold, at a fraction of the
	 * default level's time. */
	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return KI_ENOMEM;
	if (ki_buf_reserve(out, deflateBound(&z, (uLong)len)) != KI_OK) {
		rc = KI_ENOMEM;
		goto out;
	}
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out->data + out->len;
	z.avail_out = (uInt)(out->cap - out->len - 1);
	zr = deflate(&z, Z_FINISH);
	if (zr != Z_STREAM_END) {
		rc = KI_ENOMEM;
		goto out;
	}
	out->len += z.total_out;
	out->data[out->len] = '\0';
out:
	deflateEnd(&z);
	return rc;
}

struct enc_inflater {
	z_stream z;
	int ended;      /* the gzip stream's end was seen */
};

enc_inflater *
enc_inflate_new(void)
{
	enc_inflater *z = calloc(1, sizeof(*z));

	if (z == NULL)
		return NULL;
	if (inflateInit2(&z->z, 15 + 16) != Z_OK) {
		free(z);
		return NULL;
	}
	return z;
}

int
enc_inflate(enc_inflater *z, const char *in, size_t len, ki_buf *out)
{
	char chunk[16384];

	z->z.next_in = (Bytef *)(uintptr_t)in;
	z->z.avail_in = (uInt)len;
	while (z->z.avail_in > 0) {
		size_t got;
		int zr;

		if (z->ended)
			return KI_EINVAL;
		z->z.next_out = (Bytef *)chunk;
		z->z.avail_out = sizeof(chunk);
		zr = inflate(&z->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return zr == Z_MEM_ERROR ? KI_ENOMEM : KI_EINVAL;
		got = sizeof(chunk) - z->z.avail_out;
		if (out->limit != 0 && out->len + got > out->limit)
			return KI_ELIMIT;
		if (got > 0 && ki_buf_append(out, chunk, got) != KI_OK)
			return KI_ENOMEM;
		if (zr == Z_STREAM_END)
			z->ended = 1;
		else if (zr == Z_BUF_ERROR && got == 0)
			break;
	}
	return KI_OK;
}

int
enc_inflate_end(enc_inflater *z)
{
	return z->ended ? KI_OK : KI_EINVAL;
}

void
enc_inflate_free(enc_inflater *z)
{
	if (z == NULL)
		return;
	inflateEnd(&z->z);
	free(z);
}

/* ---- YAML ---- */

typedef struct yconv {
	const char *p, *end;
	ki_buf *out;
	ki_buf s;           /* the string being read, unescaped */
	int depth;
} yconv;

static void
skip_ws(yconv *y)
{
	y->p += jsonlex_ws((const unsigned char *)y->p,
	    (size_t)(y->end - y->p), 0);
}

/* Reads the JSON string at y->p into y->s (raw UTF-8; a lone surrogate
 * becomes U+FFFD, as json-c reads it). */
static int
read_string(yconv *y)
{
	const unsigned char *t = (const unsigned char *)y->p;
	jsonlex_str js;
	int rc;

	ki_buf_reset(&y->s);
	rc = jsonlex_string(t, (size_t)(y->end - y->p), 0, 0, &y->s, &js);
	if (rc != KI_OK)
		return rc;
	if (!js.decoded && ki_buf_append(&y->s, t + 1, js.end - 2) != KI_OK)
		return KI_ENOMEM;
	y->p += js.end;
	return y->s.oom ? KI_ENOMEM : KI_OK;
}

/* Could a YAML 1.1 or 1.2 reader take the plain scalar s for anything but
 * this string (a bool, null, number, date, or syntax)? Plain only when
 * made of [A-Za-z0-9_./-], starting with a letter, '_' or '/', and none of
 * YAML 1.1's words. */
static int
plain_ok(const char *s, size_t n)
{
	static const char *const words[] = { "y", "yes", "n", "no", "true",
		"false", "on", "off", "null" };

	if (n == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' &&
	    s[0] <= 'Z') || s[0] == '_' || s[0] == '/'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' ||
		    c == '-'))
			return 0;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == n && strncasecmp(s, words[i], n) == 0)
			return 0;
	return 1;
}

/* Writes s as a YAML scalar: plain when safe, else double-quoted with
 * YAML's escapes. */
static void
put_scalar(ki_buf *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";

	if (plain_ok(s, n)) {
		ki_buf_append(o, s, n);
		return;
	}
	ki_buf_putc(o, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			ki_buf_putc(o, '\\');
			ki_buf_putc(o, (char)c);
		} else if (c == '\n') {
			ki_buf_puts(o, "\\n");
		} else if (c == '\t') {
			ki_buf_puts(o, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			ki_buf_puts(o, "\\x");
			ki_buf_putc(o, hex[c >> 4]);
			ki_buf_putc(o, hex[c & 15]);
		} else if (c == 0xc2 && i + 1 < n &&
		    (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f) {
			/* C1 controls (NEL among them) are line breaks or not
			 * printable in YAML. */
			ki_buf_puts(o, "\\x");
			ki_buf_putc(o, hex[(unsigned char)s[i + 1] >> 4]);
			ki_buf_putc(o, hex[s[i + 1] & 15]);
			i++;
		} else if (c == 0xe2 && i + 2 < n && (unsigned char)s[i + 1] ==
		    0x80 && ((unsigned char)s[i + 2] == 0xa8 ||
		    (unsigned char)s[i + 2] == 0xa9)) {
			ki_buf_puts(o, (unsigned char)s[i + 2] == 0xa8 ? "\\u2028" :
			    "\\u2029");
			i += 2;
		} else if (c == 0xef && i + 2 < n && (unsigned char)s[i + 1] ==
		    0xbb && (unsigned char)s[i + 2] == 0xbf) {
			ki_buf_puts(o, "\\uFEFF");
			i += 2;
		} else {
			ki_buf_putc(o, (char)c);
		}
	}
	ki_buf_putc(o, '"');
}

/* A JSON number as a YAML 1.1 and 1.2 float or int: an exponent gets a
 * mantissa with a '.' and a signed exponent ("1e5" -> "1.0e+5"). */
static int
put_number(yconv *y)
{
	const char *s = y->p, *e;
	int dot = 0;

	while (y->p < y->end && *y->p != '\0' &&
	    strchr("+-0123456789.eE", *y->p) != NULL)
		y->p++;
	if (y->p == s)
		return KI_EINVAL;
	for (e = s; e < y->p && *e != 'e' && *e != 'E'; e++)
		dot |= *e == '.';
	ki_buf_append(y->out, s, (size_t)(e - s));
	if (e == y->p)
		return KI_OK;
	if (!dot)
		ki_buf_puts(y->out, ".0");
	ki_buf_putc(y->out, 'e');
	e++;
	if (e < y->p && *e != '+' && *e != '-')
		ki_buf_putc(y->out, '+');
	ki_buf_append(y->out, e, (size_t)(y->p - e));
	return KI_OK;
}

static void
pad(ki_buf *o, int n)
{
	for (int i = 0; i < n; i++)
		ki_buf_putc(o, ' ');
}

enum { AFTER_KEY, AFTER_DASH, TOP };

static int emit_value(yconv *y, int indent, int mode);

/* An object's members at indent; the first on the current line when
 * first_inline (after "- "). y->p is at '{'. */
static int
emit_object(yconv *y, int indent, int first_inline)
{
	int rc, i = 0;

	y->p++;
	skip_ws(y);
	while (y->p < y->end && *y->p != '}') {
		if (y->p >= y->end || *y->p != '"')
			return KI_EINVAL;
		if (i > 0 || !first_inline)
			pad(y->out, indent);
		if ((rc = read_string(y)) != KI_OK)
			return rc;
		put_scalar(y->out, y->s.data ? y->s.data : "", y->s.len);
		ki_buf_putc(y->out, ':');
		skip_ws(y);
		if (y->p >= y->end || *y->p != ':')
			return KI_EINVAL;
		y->p++;
		skip_ws(y);
		if ((rc = emit_value(y, indent, AFTER_KEY)) != KI_OK)
			return rc;
		skip_ws(y);
		if (y->p < y->end && *y->p == ',') {
			y->p++;
			skip_ws(y);
		}
		i++;
	}
	if (y->p >= y->end)
		return KI_EINVAL;
	y->p++;
	return KI_OK;
}

/* An array's items at indent, "- " each. y->p is at '['. */
static int
emit_array(yconv *y, int indent, int first_inline)
{
	int rc, i = 0;

	y->p++;
	skip_ws(y);
	while (y->p < y->end && *y->p != ']') {
		if (i > 0 || !first_inline)
			pad(y->out, indent);
		ki_buf_puts(y->out, "- ");
		if ((rc = emit_value(y, indent + 2, AFTER_DASH)) != KI_OK)
			return rc;
		skip_ws(y);
		if (y->p < y->end && *y->p == ',') {
			y->p++;
			skip_ws(y);
		}
		i++;
	}
	if (y->p >= y->end)
		return KI_EINVAL;
	y->p++;
	return KI_OK;
}

/* Is the object or array at y->p empty? */
static int
empty_container(const yconv *y)
{
	const char *q = y->p + 1;

	while (q < y->end && (*q == ' ' || *q == '\t' || *q == '\n' ||
	    *q == '\r'))
		q++;
	return q < y->end && (*q == '}' || *q == ']');
}

/* The value at y->p. indent: that of the key (AFTER_KEY) or of the item's
 * content (AFTER_DASH). */
static int
emit_value(yconv *y, int indent, int mode)
{
	int rc = KI_OK;

	if (y->p >= y->end || ++y->depth > YAML_MAX_DEPTH)
		return KI_EINVAL;
	if ((*y->p == '{' || *y->p == '[') && !empty_container(y)) {
		int obj = *y->p == '{';

		if (mode == AFTER_KEY) {
			ki_buf_putc(y->out, '\n');
			/* A sequence under a key sits at the key's indent, as
			 * kubectl writes it; a mapping goes two deeper. */
			rc = obj ? emit_object(y, indent + 2, 0) :
			    emit_array(y, indent, 0);
		} else {
			rc = obj ? emit_object(y, indent, mode == AFTER_DASH) :
			    emit_array(y, indent, mode == AFTER_DASH);
		}
		y->depth--;
		return rc;
	}
	if (mode == AFTER_KEY)
		ki_buf_putc(y->out, ' ');
	if (*y->p == '{' || *y->p == '[') {
		ki_buf_puts(y->out, *y->p == '{' ? "{}" : "[]");
		y->p++;
		skip_ws(y);
		y->p++;
	} else if (*y->p == '"') {
		if ((rc = read_string(y)) == KI_OK)
			put_scalar(y->out, y->s.data ? y->s.data : "", y->s.len);
	} else if (y->end - y->p >= 4 && memcmp(y->p, "true", 4) == 0) {
		ki_buf_puts(y->out, "true");
		y->p += 4;
	} else if (y->end - y->p >= 5 && memcmp(y->p, "false", 5) == 0) {
		ki_buf_puts(y->out, "false");
		y->p += 5;
	} else if (y->end - y->p >= 4 && memcmp(y->p, "null", 4) == 0) {
		ki_buf_puts(y->out, "null");
		y->p += 4;
	} else {
		rc = put_number(y);
	}
	ki_buf_putc(y->out, '\n');
	y->depth--;
	return rc;
}

int
enc_yaml(const char *in, size_t len, ki_buf *out)
{
	yconv y;
	int rc;

	memset(&y, 0, sizeof(y));
	y.p = in;
	y.end = in + len;
	y.out = out;
	ki_buf_init(&y.s);
	skip_ws(&y);
	rc = emit_value(&y, 0, TOP);
	if (rc == KI_OK) {
		skip_ws(&y);
		if (y.p != y.end)
			rc = KI_EINVAL;
	}
	if (rc == KI_OK && (out->oom || y.s.oom))
		rc = KI_ENOMEM;
	ki_buf_free(&y.s);
	return rc;
}
