/* api/jcs.c — RFC 8785 canonical JSON, the content digest, and the checks
 * on raw JSON text that a json-c tree cannot answer (duplicate keys, values
 * json-c changes while parsing). */
#include "api/jcs.h"

#include <json-c/json_object_iterator.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/jsonlex.h"

/* ------------------------------------------------------------------ */
/* Numbers (RFC 8785 3.2.2.3, ECMA-262 Number::toString)              */
/* ------------------------------------------------------------------ */

/* The digits of a positive finite double at one precision: digits[] holds
 * p ASCII digits d1..dp (no point), the value being d1.d2..dp x 10^exp. */
struct decimal {
	char digits[20];
	int p;
	int exp;
};

/* Does the decimal d read back as exactly v? The string handed to strtod
 * has no decimal point ("12345e-7"), so the check does not depend on the
 * LC_NUMERIC locale. It is built by hand: printf cost more than strtod. */
static int
decimal_is(const struct decimal *d, double v)
{
	char s[48];
	int e = d->exp - (d->p - 1), n = d->p, k = 0;
	char rev[12];
	unsigned u;

	memcpy(s, d->digits, (size_t)n);
	s[n++] = 'e';
	if (e < 0)
		s[n++] = '-';
	u = e < 0 ? (unsigned)-e : (unsigned)e;
	do {
		rev[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u > 0);
	while (k > 0)
		s[n++] = rev[--k];
	s[n] = '\0';
	return strtod(s, NULL) == v;
}

/* The next p-digit decimal above d (carrying into the exponent). */
static void
decimal_up(struct decimal *d)
{
	int i;

	for (i = d->p - 1; i >= 0; i--) {
		if (d->digits[i] != '9') {
			d->digits[i]++;
			return;
		}
		d->digits[i] = '0';
	}
	d->digits[0] = '1';
	d->exp++;
}

/* The next p-digit decimal below d; below 1.00..0 x 10^e comes
 * 9.99..9 x 10^(e-1). d must not be zero. */
static void
decimal_down(struct decimal *d)
{
	int i;

	for (i = d->p - 1; i >= 0; i--) {
		if (d->digits[i] != '0') {
			d->digits[i]--;
			break;
		}
		d->digits[i] = '9';
	}
	if (d->digits[0] == '0') {
		memset(d->digits, '9', (size_t)d->p);
		d->exp--;
	}
}

/* The p-digit decimal nearest to v (positive, finite), as printf's %e
 * rounds it. Returns 0, or -1 if printf failed. */
static int
decimal_nearest_printf(double v, int p, struct decimal *d)
{
	char s[40];
	const char *q;
	int n, k = 0;

	n = snprintf(s, sizeof(s), "%.*e", p - 1, v);
	if (n < 0 || (size_t)n >= sizeof(s))
		return -1;
	/* The point is whatever the locale says; only digits and 'e' matter. */
	for (q = s; *q != '\0' && *q != 'e'; q++)
		if (*q >= '0' && *q <= '9' && k < p)
			d->digits[k++] = *q;
	if (*q != 'e' || k != p)
		return -1;
	d->digits[k] = '\0';
	d->p = p;
	d->exp = (int)strtol(q + 1, NULL, 10);
	return 0;
}

/* The p-digit decimal nearest to v from its 17-digit nearest d17 (one
 * printf for all precisions). Rounding d17 again gives what rounding v
 * gives unless the dropped digits are exactly 5 then zeros: then v may lie
 * on either side of the midpoint, and printf decides. Returns 0 or -1. */
static int
decimal_nearest(double v, const struct decimal *d17, int p, struct decimal *d)
{
	int i, up;

	if (p == d17->p) {
		*d = *d17;
		return 0;
	}
	memcpy(d->digits, d17->digits, (size_t)p);
	d->digits[p] = '\0';
	d->p = p;
	d->exp = d17->exp;
	if (d17->digits[p] != '5') {
		up = d17->digits[p] > '5';
	} else {
		for (i = p + 1; i < d17->p && d17->digits[i] == '0'; i++)
			;
		if (i == d17->p)
			return decimal_nearest_printf(v, p, d);
		up = 1;
	}
	if (up)
		decimal_up(d);
	return 0;
}

/* Looks for a p-digit decimal (1 <= p <= 17) that reads back as v (positive,
 * finite): the nearest one. Where v is a power of two its rounding interval
 * is narrower below than above, so the nearest may miss while its
 * neighbour on the other side hits, hence the two extra tries; elsewhere
 * the interval is symmetric and no other decimal can hit where the nearest
 * misses. Returns 1 and fills *d on success, 0 when no p-digit decimal
 * fits. */
static int
decimal_at(double v, const struct decimal *d17, int p, struct decimal *d)
{
	struct decimal up, down;
	uint64_t bits;

	if (decimal_nearest(v, d17, p, d) != 0)
		return 0;
	if (decimal_is(d, v))
		return 1;
	memcpy(&bits, &v, sizeof(bits));
	if ((bits & 0xFFFFFFFFFFFFFull) != 0)
		return 0;
	up = *d;
	decimal_up(&up);
	if (decimal_is(&up, v)) {
		*d = up;
		return 1;
	}
	down = *d;
	decimal_down(&down);
	if (decimal_is(&down, v)) {
		*d = down;
		return 1;
	}
	return 0;
}

/* The least p at which a p-digit decimal reads back as v, by bisection
 * (that some p-digit decimal fits is monotone in p: append a zero; 17
 * digits always suffice for a double); d gets that decimal. */
static void
decimal_search(double v, const struct decimal *d17, struct decimal *d)
{
	struct decimal probe;
	int lo = 1, hi = 17, found = 0;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (decimal_at(v, d17, mid, &probe)) {
			hi = mid;
			*d = probe;
			found = hi;
		} else {
			lo = mid + 1;
		}
	}
	/* lo always fits; it may not have been probed (17). */
	if (found != lo)
		(void)decimal_at(v, d17, lo, d);
}

/* The shortest decimal that reads back as v (positive, finite), and among
 * those the nearest to v, as ECMA-262 asks. For a normal double, three
 * tries at most: when some decimal of at most 15 digits reads back as v,
 * it is v's nearest 15-digit decimal with its trailing zeros dropped
 * (DBL_DIG: a double turned into 15 digits gives back any 15-digit decimal
 * it was read from); otherwise 16 digits may fit, and 17 always do. A
 * subnormal double has fewer bits than that promise needs: searched. */
static void
decimal_shortest(double v, struct decimal *d)
{
	struct decimal d17;

	if (decimal_nearest_printf(v, 17, &d17) != 0) {
		/* Cannot happen for a finite double; keep a defined answer. */
		memset(d, 0, sizeof(*d));
		d->digits[0] = '0';
		d->p = 1;
		return;
	}
	if (v < DBL_MIN)
		decimal_search(v, &d17, d);
	else if (!(decimal_nearest(v, &d17, 15, d) == 0 && decimal_is(d, v)) &&
	    !decimal_at(v, &d17, 16, d))
		*d = d17;
	while (d->p > 1 && d->digits[d->p - 1] == '0')
		d->digits[--d->p] = '\0';
}

/* Writes the decimal 0.d1..dk x 10^n (k >= 1, d1 and dk not '0'), with
 * its sign, as ECMA-262 Number::toString lays it out. Returns the length,
 * or KI_EINVAL if it does not fit out. */
static int
write_decimal(int neg, const char *digits, int k, int n, char out[32])
{
	size_t o = 0;
	int i;

	if (neg)
		out[o++] = '-';
	if (k <= n && n <= 21) {
		memcpy(out + o, digits, (size_t)k);
		o += (size_t)k;
		for (i = 0; i < n - k; i++)
			out[o++] = '0';
	} else if (0 < n && n <= 21) {
		memcpy(out + o, digits, (size_t)n);
		o += (size_t)n;
		out[o++] = '.';
		memcpy(out + o, digits + n, (size_t)(k - n));
		o += (size_t)(k - n);
	} else if (-6 < n && n <= 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (i = 0; i < -n; i++)
			out[o++] = '0';
		memcpy(out + o, digits, (size_t)k);
		o += (size_t)k;
	} else {
		int e = n - 1, w;

		out[o++] = digits[0];
		if (k > 1) {
			out[o++] = '.';
			memcpy(out + o, digits + 1, (size_t)(k - 1));
			o += (size_t)(k - 1);
		}
		w = snprintf(out + o, 32 - o, "e%c%d", e < 0 ? '-' : '+',
		    e < 0 ? -e : e);
		if (w < 0 || (size_t)w >= 32 - o)
			return KI_EINVAL;
		o += (size_t)w;
	}
	out[o] = '\0';
	return (int)o;
}

int
api_jcs_number(double v, char out[32])
{
	struct decimal d;
	size_t o = 0;

	if (!isfinite(v))
		return KI_EINVAL;
	if (v == 0) {
		/* Both zeros serialize as "0". */
		out[0] = '0';
		out[1] = '\0';
		return 1;
	}
	if (v < 0) {
		out[o++] = '-';
		v = -v;
	}
	if (v < 9007199254740992.0 && v == floor(v)) {
		/* Integers below 2^53 (most figures: ns, bytes, shapes) are their
		 * own shortest form, written without exponent. */
		char tmp[20];
		uint64_t u = (uint64_t)v;
		int t = 0;

		while (u > 0) {
			tmp[t++] = (char)('0' + u % 10);
			u /= 10;
		}
		while (t > 0)
			out[o++] = tmp[--t];
		out[o] = '\0';
		return (int)o;
	}
	decimal_shortest(v, &d);
	return write_decimal(o > 0, d.digits, d.p, d.exp + 1, out);
}

int
api_jcs_number_literal(const char *lit, char out[32])
{
	char digits[16];
	const char *q = lit;
	int neg = 0, k = 0, n = 0, lead = 1, zeros = 0;
	long e = 0;

	if (*q == '-') {
		neg = 1;
		q++;
	}
	if (*q < '0' || *q > '9' || (*q == '0' && q[1] >= '0' && q[1] <= '9'))
		return 0;
	/* Significant digits into digits[] (trailing zeros counted apart
	 * until a nonzero digit follows them); n counts the integer part's
	 * digits from the first significant one, minus the fraction's zeros
	 * before it. */
	for (int frac = 0;; q++) {
		if (*q == '.' && !frac) {
			frac = 1;
			if (q[1] < '0' || q[1] > '9')
				return 0;
			continue;
		}
		if (*q < '0' || *q > '9')
			break;
		if (lead && *q == '0') {
			if (frac)
				n--;
			continue;
		}
		lead = 0;
		if (*q == '0') {
			zeros++;
		} else {
			if (k + zeros + 1 > 15)
				return 0;
			memset(digits + k, '0', (size_t)zeros);
			k += zeros;
			zeros = 0;
			digits[k++] = *q;
		}
		if (!frac)
			n++;
	}
	if (*q == 'e' || *q == 'E') {
		int eneg = 0;

		q++;
		if (*q == '+' || *q == '-')
			eneg = *q++ == '-';
		if (*q < '0' || *q > '9')
			return 0;
		for (; *q >= '0' && *q <= '9'; q++)
			if (e < 100000)
				e = e * 10 + (*q - '0');
		if (eneg)
			e = -e;
	}
	if (*q != '\0')
		return 0;
	if (k == 0) {
		out[0] = '0';
		out[1] = '\0';
		return 1;
	}
	/* Far from the ends of the normal range only: there every decimal of
	 * at most 15 digits reads back from its double (DBL_DIG). */
	if (n + e < -290 || n + e > 290)
		return 0;
	return write_decimal(neg, digits, k, n + (int)e, out);
}

/* ------------------------------------------------------------------ */
/* Serialization                                                      */
/* ------------------------------------------------------------------ */

/* Decodes one UTF-8 sequence of s[*i..n) and advances *i. A malformed
 * sequence yields U+FFFD for its first byte (keys made by json-c from
 * validated text are never malformed; the ordering stays total anyway,
 * see key_cmp). */
static uint32_t
utf8_next(const unsigned char *s, size_t n, size_t *i)
{
	uint32_t c = s[*i], min;
	size_t len, k;

	if (c < 0x80) {
		(*i)++;
		return c;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		c &= 0x1F;
		min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		c &= 0x0F;
		min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		goto bad;
	}
	if (n - *i < len)
		goto bad;
	for (k = 1; k < len; k++) {
		if ((s[*i + k] & 0xC0) != 0x80)
			goto bad;
		c = (c << 6) | (s[*i + k] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		goto bad;
	*i += len;
	return c;
bad:
	(*i)++;
	return 0xFFFD;
}

/* Yields the next UTF-16 code unit of a UTF-8 string; *low carries the
 * second half of a surrogate pair between calls (0 when none). */
static uint32_t
utf16_next(const unsigned char *s, size_t n, size_t *i, uint32_t *low)
{
	uint32_t c;

	if (*low != 0) {
		c = *low;
		*low = 0;
		return c;
	}
	c = utf8_next(s, n, i);
	if (c < 0x10000)
		return c;
	c -= 0x10000;
	*low = 0xDC00 + (c & 0x3FF);
	return 0xD800 + (c >> 10);
}

/* Orders two UTF-8 strings by their UTF-16 code units (RFC 8785 3.2.3).
 * This differs from byte order: U+E000..U+FFFF sort after the characters
 * above U+FFFF, whose units are surrogates (0xD800..0xDFFF). Strings with
 * the same units (possible only for malformed UTF-8) fall back to bytes. */
static int
key_cmp(const char *a, size_t na, const char *b, size_t nb)
{
	const unsigned char *ua = (const unsigned char *)a;
	const unsigned char *ub = (const unsigned char *)b;
	size_t ia = 0, ib = 0;
	uint32_t la = 0, lb = 0;
	int r;

	while ((ia < na || la != 0) && (ib < nb || lb != 0)) {
		uint32_t ca, cb;

		if (la == 0 && lb == 0 && ua[ia] < 0x80 && ua[ia] == ub[ib]) {
			ia++;
			ib++;
			continue;
		}
		ca = utf16_next(ua, na, &ia, &la);
		cb = utf16_next(ub, nb, &ib, &lb);
		if (ca != cb)
			return ca < cb ? -1 : 1;
	}
	if (ia < na || la != 0)
		return 1;
	if (ib < nb || lb != 0)
		return -1;
	r = memcmp(a, b, na < nb ? na : nb);
	if (r != 0)
		return r;
	return na < nb ? -1 : na > nb;
}

struct member {
	const char *key;
	size_t klen;
	struct json_object *val;
};

static int
member_cmp(const void *pa, const void *pb)
{
	const struct member *a = pa, *b = pb;

	return key_cmp(a->key, a->klen, b->key, b->klen);
}

static int jcs_value(struct json_object *o, ki_buf *out);

/* Appends an object's members sorted by key. Returns 0, KI_EINVAL or
 * KI_ENOMEM. */
static int
jcs_object(struct json_object *o, ki_buf *out)
{
	struct json_object_iterator it, end;
	struct member small[32], *m = small;
	size_t n, i;
	int rc;

	n = (size_t)json_object_object_length(o);
	if (n == 0)
		return ki_buf_puts(out, "{}");
	/* Most objects are small: their members sort on the stack. */
	if (n > sizeof(small) / sizeof(small[0]) &&
	    (m = calloc(n, sizeof(*m))) == NULL) {
		rc = KI_ENOMEM;
		goto cleanup;
	}
	it = json_object_iter_begin(o);
	end = json_object_iter_end(o);
	for (i = 0; i < n && !json_object_iter_equal(&it, &end); i++) {
		m[i].key = json_object_iter_peek_name(&it);
		m[i].klen = strlen(m[i].key);
		m[i].val = json_object_iter_peek_value(&it);
		json_object_iter_next(&it);
	}
	n = i;
	if (m == small) {
		/* Insertion sort: keys of one object are distinct, so any sort
		 * gives qsort's order. */
		for (i = 1; i < n; i++) {
			struct member t = m[i];
			size_t j = i;

			while (j > 0 && member_cmp(&m[j - 1], &t) > 0) {
				m[j] = m[j - 1];
				j--;
			}
			m[j] = t;
		}
	} else {
		qsort(m, n, sizeof(*m), member_cmp);
	}
	rc = ki_buf_putc(out, '{');
	for (i = 0; i < n && rc == KI_OK; i++) {
		if (i > 0)
			rc = ki_buf_putc(out, ',');
		if (rc == KI_OK)
			rc = ki_buf_json_string(out, m[i].key, m[i].klen);
		if (rc == KI_OK)
			rc = ki_buf_putc(out, ':');
		if (rc == KI_OK)
			rc = jcs_value(m[i].val, out);
	}
	if (rc == KI_OK)
		rc = ki_buf_putc(out, '}');
cleanup:
	if (m != small)
		free(m);
	return rc;
}

/* A json-c number as the double that JCS treats it as. json-c keeps an
 * integer as int64, or as uint64 above INT64_MAX; json_object_get_uint64
 * returns the value of either kind when it is not negative. */
static double
number_value(struct json_object *o)
{
	int64_t i;

	if (json_object_get_type(o) == json_type_double)
		return json_object_get_double(o);
	i = json_object_get_int64(o);
	if (i < 0)
		return (double)i;
	return (double)json_object_get_uint64(o);
}

/* Appends the canonical form of one value. Returns 0, KI_EINVAL or
 * KI_ENOMEM. */
static int
jcs_value(struct json_object *o, ki_buf *out)
{
	char num[32];
	size_t i, n;
	int rc;

	switch (json_object_get_type(o)) {
	case json_type_null:
		return ki_buf_puts(out, "null");
	case json_type_boolean:
		return ki_buf_puts(out, json_object_get_boolean(o) ? "true" : "false");
	case json_type_double:
		/* A double parsed from text keeps its literal (json-c's _s
		 * doubles): most are written from it without a search. */
		rc = json_object_get_userdata(o) != NULL ?
		    api_jcs_number_literal(json_object_get_userdata(o), num) : 0;
		if (rc == 0)
			rc = api_jcs_number(number_value(o), num);
		if (rc < 0)
			return rc;
		return ki_buf_append(out, num, (size_t)rc);
	case json_type_int:
		rc = api_jcs_number(number_value(o), num);
		if (rc < 0)
			return rc;
		return ki_buf_append(out, num, (size_t)rc);
	case json_type_string:
		return ki_buf_json_string(out, json_object_get_string(o),
		    (size_t)json_object_get_string_len(o));
	case json_type_array:
		n = json_object_array_length(o);
		rc = ki_buf_putc(out, '[');
		for (i = 0; i < n && rc == KI_OK; i++) {
			if (i > 0)
				rc = ki_buf_putc(out, ',');
			if (rc == KI_OK)
				rc = jcs_value(json_object_array_get_idx(o, i), out);
		}
		if (rc == KI_OK)
			rc = ki_buf_putc(out, ']');
		return rc;
	case json_type_object:
		return jcs_object(o, out);
	}
	return KI_EINVAL;
}

int
api_jcs_serialize(struct json_object *o, ki_buf *out)
{
	return jcs_value(o, out);
}

/* ------------------------------------------------------------------ */
/* Digests                                                            */
/* ------------------------------------------------------------------ */

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* EVP_sha256() makes OpenSSL 3 look the algorithm up in its providers on
 * every init: fetch it once for the process (never freed). */
static void
sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* p may be NULL when n is 0. Returns 0, or KI_ENOMEM when OpenSSL fails
 * (for SHA-256 only an allocation or a missing provider can). */
int
api_sha256(const void *p, size_t n, uint8_t out[API_DIGEST_LEN])
{
	EVP_MD_CTX *ctx;
	unsigned int len = 0;
	int rc = KI_ENOMEM;

	pthread_once(&sha256_once, sha256_fetch);
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		goto cleanup;
	if (EVP_DigestInit_ex(ctx, sha256_md != NULL ? sha256_md : EVP_sha256(),
	    NULL) != 1)
		goto cleanup;
	if (n > 0 && EVP_DigestUpdate(ctx, p, n) != 1)
		goto cleanup;
	if (EVP_DigestFinal_ex(ctx, out, &len) != 1 || len != API_DIGEST_LEN)
		goto cleanup;
	rc = KI_OK;
cleanup:
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* The members of the digest, in their canonical (sorted) order. */
static const char *const digest_members[] = { "apiVersion", "kind", "spec" };

int
api_digest(struct json_object *obj, uint8_t out[API_DIGEST_LEN], ki_buf *canon)
{
	struct json_object *v[3];
	ki_buf local;
	ki_buf *b;
	size_t start, i;
	int rc;

	ki_buf_init(&local);
	b = canon != NULL ? canon : &local;
	start = b->len;
	for (i = 0; i < 3; i++) {
		if (!json_object_object_get_ex(obj, digest_members[i], &v[i])) {
			rc = KI_EINVAL;
			goto cleanup;
		}
	}
	rc = ki_buf_putc(b, '{');
	for (i = 0; i < 3 && rc == KI_OK; i++) {
		if (i > 0)
			rc = ki_buf_putc(b, ',');
		if (rc == KI_OK)
			rc = ki_buf_json_string(b, digest_members[i],
			    strlen(digest_members[i]));
		if (rc == KI_OK)
			rc = ki_buf_putc(b, ':');
		if (rc == KI_OK)
			rc = jcs_value(v[i], b);
	}
	if (rc == KI_OK)
		rc = ki_buf_putc(b, '}');
	if (rc == KI_OK)
		rc = api_sha256(b->data + start, b->len - start, out);
cleanup:
	if (rc != KI_OK && !b->oom && b->data != NULL) {
		/* Leave the caller's buffer as it was. */
		b->len = start;
		b->data[start] = '\0';
	}
	ki_buf_free(&local);
	return rc;
}

void
api_digest_format(const uint8_t d[API_DIGEST_LEN],
	char out[API_DIGEST_STRLEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	memcpy(out, "sha256:", 7);
	for (i = 0; i < API_DIGEST_LEN; i++) {
		out[7 + 2 * i] = hex[d[i] >> 4];
		out[8 + 2 * i] = hex[d[i] & 15];
	}
	out[API_DIGEST_STRLEN] = '\0';
}

/* The value of a lowercase hex digit, or -1. */
static int
hex_lower(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
api_digest_parse(const char *s, size_t n, uint8_t out[API_DIGEST_LEN])
{
	uint8_t d[API_DIGEST_LEN];
	size_t i;

	if (s == NULL || n != API_DIGEST_STRLEN || memcmp(s, "sha256:", 7) != 0)
		return KI_EINVAL;
	for (i = 0; i < API_DIGEST_LEN; i++) {
		int hi = hex_lower(s[7 + 2 * i]), lo = hex_lower(s[8 + 2 * i]);

		if (hi < 0 || lo < 0)
			return KI_EINVAL;
		d[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(out, d, sizeof(d));
	return KI_OK;
}

/* ------------------------------------------------------------------ */
/* Checks on raw text                                                 */
/* ------------------------------------------------------------------ */

/*
 * A json-c tree hides some facts about the text it came from, so they are
 * found by scanning the text itself, in one pass with a stack of open
 * containers. The text is expected to be what json-c accepted in strict
 * mode; anything else ends the scan with KI_EINVAL.
 *
 * Duplicate keys: json-c keeps the last of two equal keys and says
 * nothing. Each object's keys are pushed on a key stack as they are read;
 * when the object closes they are sorted (a stable merge sort, O(k log k)
 * whatever the keys) and equal neighbours are duplicates. Of all duplicates
 * the one whose second occurrence comes first in the text is reported, so
 * nesting does not change the answer. Keys are compared as json-c stores
 * them: escapes decoded, a lone surrogate escape as U+FFFD, and cut at the
 * first U+0000 (json-c keeps keys as C strings). So "a" and "\u0061"
 * collide, and so do "a\u0000b" and "a\u0000c", which json-c merges.
 *
 * Lossy text: what json-c 0.16 changes without an error (see
 * api_json_find_lossy in api/jcs.h).
 *
 * Path notation: object keys joined by '.', array indexes in brackets
 * ("items[2].metadata.name"; "[0].a" under a top-level array; "" for the
 * top-level value itself). A key that is empty or has a byte other than
 * ASCII letters, digits, '_' and '-' is written as a bracketed JSON string
 * instead: metadata.labels["kernelindex.dev/x"].
 */

enum scan_mode { SCAN_DUPLICATE, SCAN_LOSSY };

/* A decoded key: its bytes lie in the text (no escapes) or in the arena. */
struct key_ref {
	size_t off;
	size_t len;     /* decoded length */
	size_t cmp_len; /* up to the first NUL: what json-c keeps */
	size_t pos;     /* offset of its opening quote in the text */
	int in_arena;
};

struct frame {
	int is_obj;
	size_t index;       /* arrays: the element being read */
	size_t base;        /* objects: its first entry on the key stack */
	struct key_ref cur; /* objects: the key whose value is being read */
};

struct scan {
	enum scan_mode mode;
	const unsigned char *t;
	size_t n;
	size_t i;
	struct frame *fr;
	size_t nfr, capfr;
	struct key_ref *keys, *tmp; /* the key stack and sort scratch */
	size_t nkeys, capkeys, captmp;
	ki_buf arena; /* decoded keys with escapes, scratch for numbers */
	int found;
	size_t found_pos; /* text offset of what was found */
	const char *why;
	ki_buf *path;
	size_t path_start;
};

static const char *
key_bytes(const struct scan *s, const struct key_ref *k)
{
	return k->in_arena ? s->arena.data + k->off : (const char *)s->t + k->off;
}

static int
key_eq(const struct scan *s, const struct key_ref *a, const struct key_ref *b)
{
	return a->cmp_len == b->cmp_len &&
	    memcmp(key_bytes(s, a), key_bytes(s, b), a->cmp_len) == 0;
}

/* Orders keys by the bytes json-c keeps. */
static int
ref_cmp(const struct scan *s, const struct key_ref *a, const struct key_ref *b)
{
	size_t m = a->cmp_len < b->cmp_len ? a->cmp_len : b->cmp_len;
	int r = memcmp(key_bytes(s, a), key_bytes(s, b), m);

	if (r != 0)
		return r;
	return a->cmp_len < b->cmp_len ? -1 : a->cmp_len > b->cmp_len;
}

/* Sorts k[0..n) stably (so equal keys stay in text order) with tmp[0..n)
 * as scratch: a bottom-up merge sort. */
static void
refs_sort(const struct scan *s, struct key_ref *k, struct key_ref *tmp,
	size_t n)
{
	struct key_ref *src = k, *dst = tmp, *sw;
	size_t w, lo;

	for (w = 1; w < n; w *= 2) {
		for (lo = 0; lo < n; lo += 2 * w) {
			size_t mid = n - lo > w ? lo + w : n;
			size_t hi = n - mid > w ? mid + w : n;
			size_t a = lo, b = mid, o = lo;

			while (a < mid && b < hi) {
				if (ref_cmp(s, &src[b], &src[a]) < 0)
					dst[o++] = src[b++];
				else
					dst[o++] = src[a++];
			}
			while (a < mid)
				dst[o++] = src[a++];
			while (b < hi)
				dst[o++] = src[b++];
		}
		sw = src;
		src = dst;
		dst = sw;
	}
	if (src != k)
		memcpy(k, src, n * sizeof(*k));
}

/* Does a key read well in dotted notation? */
static int
key_is_plain(const char *k, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		char c = k[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

/* Appends one key to a path begun at p->len == start: ".key", "key" first,
 * or ["key"] (see the notation above). Returns 0 or KI_ENOMEM. */
static int
path_key(ki_buf *p, size_t start, const char *k, size_t n)
{
	if (key_is_plain(k, n)) {
		if (p->len > start && ki_buf_putc(p, '.') != KI_OK)
			return KI_ENOMEM;
		return ki_buf_append(p, k, n);
	}
	if (ki_buf_putc(p, '[') != KI_OK || ki_buf_json_string(p, k, n) != KI_OK)
		return KI_ENOMEM;
	return ki_buf_putc(p, ']');
}

/* Records a finding at text offset pos and rewrites the caller's path: the
 * first nframes containers (each its current key or index), then last when
 * non-NULL. Returns 0 or KI_ENOMEM. */
static int
scan_found(struct scan *s, size_t pos, const char *why, size_t nframes,
	const struct key_ref *last)
{
	ki_buf *p = s->path;
	size_t f;

	s->found = 1;
	s->found_pos = pos;
	s->why = why;
	if (p == NULL)
		return KI_OK;
	/* data stays non-NULL even for the empty path of the top level. */
	if (ki_buf_reserve(p, 0) != KI_OK)
		return KI_ENOMEM;
	p->len = s->path_start;
	if (p->data != NULL)
		p->data[p->len] = '\0';
	for (f = 0; f < nframes; f++) {
		const struct frame *fr = &s->fr[f];
		int rc;

		if (fr->is_obj)
			rc = path_key(p, s->path_start, key_bytes(s, &fr->cur),
			    fr->cur.len);
		else
			rc = ki_buf_printf(p, "[%zu]", fr->index);
		if (rc != KI_OK)
			return KI_ENOMEM;
	}
	if (last != NULL)
		return path_key(p, s->path_start, key_bytes(s, last), last->len);
	return KI_OK;
}

/* Opens a container. Returns 0 or KI_ENOMEM. */
static int
scan_push(struct scan *s, int is_obj)
{
	struct frame *f;

	if (s->nfr == s->capfr) {
		size_t cap = s->capfr ? s->capfr * 2 : 16;

		f = realloc(s->fr, cap * sizeof(*f));
		if (f == NULL)
			return KI_ENOMEM;
		s->fr = f;
		s->capfr = cap;
	}
	f = &s->fr[s->nfr++];
	memset(f, 0, sizeof(*f));
	f->is_obj = is_obj;
	f->base = s->nkeys;
	return KI_OK;
}

/* Closes the top object. In SCAN_DUPLICATE mode it looks for its
 * duplicate keys and keeps the one seen earliest. Returns 0 or KI_ENOMEM. */
static int
scan_close_object(struct scan *s)
{
	struct frame *f = &s->fr[s->nfr - 1];
	/* No key recorded yet: keys may still be NULL. */
	struct key_ref *k = s->keys != NULL ? s->keys + f->base : NULL;
	size_t n = s->nkeys - f->base, i, best = 0;
	int have = 0, rc = KI_OK;

	if (s->mode == SCAN_DUPLICATE && n > 1) {
		if (n > s->captmp) {
			struct key_ref *t = realloc(s->tmp, n * sizeof(*t));

			if (t == NULL)
				return KI_ENOMEM;
			s->tmp = t;
			s->captmp = n;
		}
		refs_sort(s, k, s->tmp, n);
		/* Equal keys are in text order: the second of a run is the
		 * duplicate. */
		for (i = 1; i < n; i++) {
			if (!key_eq(s, &k[i - 1], &k[i]))
				continue;
			if (i >= 2 && key_eq(s, &k[i - 2], &k[i]))
				continue;
			if (!have || k[i].pos < k[best].pos)
				best = i;
			have = 1;
		}
		if (have && (!s->found || k[best].pos < s->found_pos))
			rc = scan_found(s, k[best].pos, "duplicate key",
			    s->nfr - 1, &k[best]);
	}
	s->nkeys = f->base;
	s->nfr--;
	return rc;
}

/* Reads the string whose opening quote is at s->i and leaves s->i after
 * the closing one. When k is non-NULL the string is a key and k receives
 * it, decoded into the arena if it has escapes. Surrogate escapes are
 * taken as json-c takes them: a high one directly followed by a low one is
 * a pair, any other is U+FFFD; *lone, when non-NULL, is set to the text
 * offset of the first such lone one (else left alone). Returns 0, KI_EINVAL
 * (an unterminated string or a bad escape) or KI_ENOMEM. */
static int
scan_string(struct scan *s, struct key_ref *k, size_t *lone)
{
	size_t off = s->arena.len;
	jsonlex_str js;
	int rc;

	rc = jsonlex_string(s->t, s->n, s->i, 0, k != NULL ? &s->arena : NULL,
	    &js);
	if (rc != KI_OK)
		return rc;
	if (lone != NULL && js.lone != JSONLEX_NONE)
		*lone = js.lone;
	if (k != NULL) {
		const char *b;
		const void *z;

		k->pos = s->i;
		k->in_arena = js.decoded;
		if (js.decoded) {
			k->off = off;
			k->len = s->arena.len - off;
		} else {
			k->off = s->i + 1;
			k->len = js.end - s->i - 2;
		}
		b = key_bytes(s, k);
		z = memchr(b, '\0', k->len);
		k->cmp_len = z != NULL ? (size_t)((const char *)z - b) : k->len;
	}
	s->i = js.end;
	return KI_OK;
}

static void
scan_ws(struct scan *s)
{
	s->i = jsonlex_ws(s->t, s->n, s->i);
}

/* Reads a key of the top object and its colon. Returns 0, KI_EINVAL or
 * KI_ENOMEM. */
static int
scan_key(struct scan *s)
{
	struct frame *f = &s->fr[s->nfr - 1];
	size_t lone = SIZE_MAX;
	int rc;

	scan_ws(s);
	if (s->i >= s->n || s->t[s->i] != '"')
		return KI_EINVAL;
	rc = scan_string(s, &f->cur, s->mode == SCAN_LOSSY ? &lone : NULL);
	if (rc != KI_OK)
		return rc;
	if (s->mode == SCAN_LOSSY) {
		if (lone != SIZE_MAX)
			return scan_found(s, lone, "a lone surrogate escape",
			    s->nfr, NULL);
		if (f->cur.cmp_len != f->cur.len)
			return scan_found(s, f->cur.pos,
			    "a key holding U+0000", s->nfr, NULL);
	} else {
		if (s->nkeys == s->capkeys) {
			size_t cap = s->capkeys ? s->capkeys * 2 : 64;
			struct key_ref *k = realloc(s->keys, cap * sizeof(*k));

			if (k == NULL)
				return KI_ENOMEM;
			s->keys = k;
			s->capkeys = cap;
		}
		s->keys[s->nkeys++] = f->cur;
	}
	scan_ws(s);
	if (s->i >= s->n || s->t[s->i] != ':')
		return KI_EINVAL;
	s->i++;
	return KI_OK;
}

/* Checks a number literal t[start..end) in SCAN_LOSSY mode. json-c 0.16
 * reads an integer literal (no '.', no exponent) with strtoll or strtoull,
 * which clamp at INT64_MIN and UINT64_MAX without an error; the value is
 * lost unless the clamped integer is the same double as the literal.
 * Returns 0 or KI_ENOMEM. */
static int
scan_number(struct scan *s, size_t start, size_t end)
{
	const unsigned char *t = s->t;
	size_t j = start, k, mark = s->arena.len;
	double exact, kept;
	const char *lit;

	if (j < end && t[j] == '-')
		j++;
	if (j >= end)
		return KI_OK;
	for (k = j; k < end; k++)
		if (t[k] < '0' || t[k] > '9')
			return KI_OK; /* a double, or NaN/Infinity */
	while (j + 1 < end && t[j] == '0')
		j++;
	if (end - j < 19)
		return KI_OK; /* fits in an int64 */
	if (ki_buf_append(&s->arena, t + start, end - start) != KI_OK)
		return KI_ENOMEM;
	lit = s->arena.data + mark;
	exact = strtod(lit, NULL);
	if (t[start] == '-')
		kept = (double)strtoll(lit, NULL, 10);
	else
		kept = (double)strtoull(lit, NULL, 10);
	s->arena.len = mark;
	s->arena.data[mark] = '\0';
	if (exact != kept)
		return scan_found(s, start,
		    "an integer beyond the 64-bit range", s->nfr, NULL);
	return KI_OK;
}

/* The scan proper (see the comment at the top of this part). Returns 0
 * (done; s->found says whether something was found), KI_EINVAL or
 * KI_ENOMEM. In SCAN_LOSSY mode it stops at the first finding. */
static int
scan_run(struct scan *s)
{
	int rc = KI_OK;

	for (;;) {
		size_t start, lone = SIZE_MAX;

		if (s->found && s->mode == SCAN_LOSSY)
			return KI_OK;
		/* A value. */
		scan_ws(s);
		if (s->i >= s->n)
			return KI_EINVAL;
		switch (s->t[s->i]) {
		case '{':
			s->i++;
			if ((rc = scan_push(s, 1)) != KI_OK)
				return rc;
			scan_ws(s);
			if (s->i < s->n && s->t[s->i] == '}') {
				s->i++;
				rc = scan_close_object(s);
				break;
			}
			if ((rc = scan_key(s)) != KI_OK)
				return rc;
			continue;
		case '[':
			s->i++;
			if ((rc = scan_push(s, 0)) != KI_OK)
				return rc;
			scan_ws(s);
			if (s->i < s->n && s->t[s->i] == ']') {
				s->i++;
				s->nfr--;
				break;
			}
			continue;
		case '"':
			rc = scan_string(s, NULL,
			    s->mode == SCAN_LOSSY ? &lone : NULL);
			if (rc == KI_OK && lone != SIZE_MAX)
				rc = scan_found(s, lone, "a lone surrogate escape",
				    s->nfr, NULL);
			break;
		default:
			/* A number or a literal (json-c also takes NaN and
			 * Infinity): everything up to the next delimiter. */
			start = s->i;
			s->i = jsonlex_scalar_end(s->t, s->n, s->i);
			if (s->mode == SCAN_LOSSY)
				rc = scan_number(s, start, s->i);
			break;
		}
		if (rc != KI_OK)
			return rc;
		if (s->found && s->mode == SCAN_LOSSY)
			return KI_OK;
		/* After a value: close containers, or go on to the next. */
		for (;;) {
			struct frame *f;

			if (s->nfr == 0)
				return KI_OK;
			f = &s->fr[s->nfr - 1];
			scan_ws(s);
			if (s->i >= s->n)
				return KI_EINVAL;
			if (s->t[s->i] == ',') {
				s->i++;
				if (!f->is_obj)
					f->index++;
				else if ((rc = scan_key(s)) != KI_OK)
					return rc;
				break;
			}
			if (f->is_obj && s->t[s->i] == '}') {
				s->i++;
				if ((rc = scan_close_object(s)) != KI_OK)
					return rc;
			} else if (!f->is_obj && s->t[s->i] == ']') {
				s->i++;
				s->nfr--;
			} else {
				return KI_EINVAL;
			}
		}
	}
}

/* Runs one scan over text and hands back its answer: 0 or 1 as s->found,
 * or the scan's error. path and why are filled as the public functions
 * describe. */
static int
scan_text(enum scan_mode mode, const char *text, size_t n, ki_buf *path,
	const char **why)
{
	struct scan s;
	int rc;

	memset(&s, 0, sizeof(s));
	s.mode = mode;
	s.t = (const unsigned char *)text;
	s.n = n;
	ki_buf_init(&s.arena);
	s.path = path;
	s.path_start = path != NULL ? path->len : 0;
	if (text == NULL) {
		rc = KI_EINVAL;
		goto cleanup;
	}
	rc = scan_run(&s);
	if (rc == KI_OK && path != NULL && path->oom)
		rc = KI_ENOMEM;
	if (rc == KI_OK)
		rc = s.found;
	if (rc == 1 && why != NULL)
		*why = s.why;
cleanup:
	if (rc != 1 && path != NULL && !path->oom && path->data != NULL) {
		path->len = s.path_start;
		path->data[path->len] = '\0';
	}
	free(s.fr);
	free(s.keys);
	free(s.tmp);
	ki_buf_free(&s.arena);
	return rc;
}

int
api_json_find_duplicate_key(const char *text, size_t n, ki_buf *path)
{
	return scan_text(SCAN_DUPLICATE, text, n, path, NULL);
}

int
api_json_find_lossy(const char *text, size_t n, ki_buf *path,
	const char **why)
{
	return scan_text(SCAN_LOSSY, text, n, path, why);
}

/* ------------------------------------------------------------------ */
/* Characters above U+FFFF that json-c misreads                       */
/* ------------------------------------------------------------------ */

/* Copies t[0..n) into out with every surrogate-pair escape inside a
 * string written as the character's UTF-8 bytes, which mean the same in
 * JSON. Returns 1 (out holds the copy) when t has a pair json-c misreads,
 * 0 (out untouched) when it has none, or KI_ENOMEM. */
static int
astral_rewrite(const unsigned char *t, size_t n, ki_buf *out)
{
	size_t i, run = 0;
	int in_str = 0, found = 0, pass;
	uint32_t cp;
	size_t elen;

	/* Pass 0 only looks; pass 1 writes, when pass 0 found a pair. */
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1 && !found)
			return 0;
		in_str = 0;
		run = 0;
		for (i = 0; i < n; i++) {
			if (t[i] == '"') {
				in_str = !in_str;
				continue;
			}
			if (!in_str || t[i] != '\\')
				continue;
			/* Past any escape but a pair ('"' or '\\' too). */
			elen = jsonlex_escape(t, n, i, &cp);
			if (elen != 12) {
				i += elen > 2 ? elen - 1 : 1;
				continue;
			}
			/* json-c 0.16 tests the decoded pair for a surrogate
			 * with a 16-bit mask: a character whose low 16 bits lie
			 * in 0xD800..0xDFFF (U+1D800, U+2DC00, ...) comes out
			 * as U+FFFD. */
			if (pass == 0) {
				if ((cp & 0xFFFF) >= 0xD800 &&
				    (cp & 0xFFFF) <= 0xDFFF) {
					found = 1;
					break;
				}
			} else if (ki_buf_append(out, t + run, i - run) != KI_OK ||
			    ki_buf_put_utf8(out, cp) != KI_OK) {
				return KI_ENOMEM;
			} else {
				run = i + 12;
			}
			i += 11;
		}
	}
	if (ki_buf_append(out, t + run, n - run) != KI_OK || out->oom)
		return KI_ENOMEM;
	return 1;
}

int
api_json_mend_astral(const char *text, size_t n, int max_depth,
	struct json_object **obj)
{
	ki_buf fixed;
	json_tokener *tok = NULL;
	struct json_object *o = NULL;
	int rc;

	ki_buf_init(&fixed);
	rc = astral_rewrite((const unsigned char *)text, n, &fixed);
	if (rc != 1)
		goto cleanup;
	rc = KI_ENOMEM;
	if (fixed.len > INT32_MAX ||
	    (tok = json_tokener_new_ex(max_depth)) == NULL)
		goto cleanup;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, fixed.data, (int)fixed.len);
	if (o == NULL && json_tokener_get_error(tok) == json_tokener_continue)
		o = json_tokener_parse_ex(tok, "", 1); /* a bare number */
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success) {
		/* Only string contents changed, and the text parsed before. */
		rc = KI_EINVAL;
		goto cleanup;
	}
	json_object_put(*obj);
	*obj = o;
	o = NULL;
	rc = KI_OK;
cleanup:
	json_object_put(o);
	if (tok != NULL)
		json_tokener_free(tok);
	ki_buf_free(&fixed);
	return rc;
}
