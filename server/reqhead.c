/* server/reqhead.c — the request head as it was received (see
 * server/reqhead.h): what libmicrohttpd 0.9.75 handed on must be all that
 * the head holds, in lines ended by CR LF. */
#include "server/reqhead.h"

#include <stdint.h>
#include <string.h>

static const char HEAD_BAD[] = "the request head cannot be read as it was "
    "sent: a NUL in the method, the target or a header value, a line "
    "ended by a bare LF instead of CR LF, a header line folded onto the "
    "previous one (obs-fold), or a line with no header name";

/* Is p one of the bytes of w's head? Compared as integers: p may point
 * anywhere (libmicrohttpd moves a folded header's name out of the head). */
static int
inside(const reqhead *w, const char *p)
{
	return (uintptr_t)p >= (uintptr_t)w->start &&
	    (uintptr_t)p < (uintptr_t)w->end;
}

static int
same(const char *a, const char *b)
{
	return (uintptr_t)a == (uintptr_t)b;
}

/* Are the n bytes at p (inside the head) NULs, which is what
 * libmicrohttpd leaves of a line's CR LF? */
static int
nuls(const reqhead *w, const char *p, size_t n)
{
	if (!inside(w, p) || (size_t)(w->end - p) < n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] != '\0')
			return 0;
	return 1;
}

int
reqhead_target_bad(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c == 0x7f)
			return 1;
	}
	return 0;
}

void
reqhead_begin(reqhead *w, const char *head, size_t len, const char *uri,
	size_t uri_len, const char *version)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~0123456789"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	const char *q;
	size_t n;

	w->start = head;
	w->end = head + len;
	w->p = NULL;
	w->bad = NULL;
	/* The method, then the NUL its space became, then the spaces
	 * libmicrohttpd skips: the target must follow. A NUL in the method
	 * stops its string short of that. */
	n = strnlen(head, len);
	if (n == 0 || strspn(head, tchar) != n) {
		w->bad = "the request method holds a character no method holds";
		return;
	}
	q = head + n + 1;
	while (inside(w, q) && *q == ' ')
		q++;
	/* The target, the NUL its space became, the version, CR LF. A NUL in
	 * the target stops the string libmicrohttpd logged short of the
	 * version. */
	if (uri == NULL || !same(q, uri) || !inside(w, version) ||
	    !same(uri + uri_len + 1, version)) {
		w->bad = HEAD_BAD;
		return;
	}
	w->p = version + strnlen(version, (size_t)(w->end - version));
}

void
reqhead_field(reqhead *w, const char *key, size_t key_len,
	const char *value, size_t value_len)
{
	const char *q;

	if (w->bad != NULL)
		return;
	/* The previous line's CR LF, and this line starts right after it:
	 * not after a bare LF (one NUL), not after a NUL and more of the
	 * previous value, not elsewhere (a folded header's name, moved). */
	if (value == NULL || !nuls(w, w->p, 2) || !same(w->p + 2, key) ||
	    (size_t)(w->end - key) <= key_len + 1 || key[key_len] != '\0') {
		w->bad = HEAD_BAD;
		return;
	}
	q = key + key_len + 1;
	while (inside(w, q) && (*q == ' ' || *q == '\t'))
		q++;
	if (!same(q, value) || (size_t)(w->end - value) < value_len) {
		w->bad = HEAD_BAD;
		return;
	}
	/* RFC 9110 5.5: CR, LF and NUL must be refused (or replaced); the
	 * other controls are refused as Go's server (kube-apiserver's)
	 * refuses them. */
	for (size_t i = 0; i < value_len; i++) {
		unsigned char c = (unsigned char)value[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			w->bad = "a header value holds a control character (CR, "
			    "LF, NUL or another)";
			return;
		}
	}
	w->p = value + value_len;
}

const char *
reqhead_end(reqhead *w)
{
	/* The last line's CR LF and the empty line's, and nothing after:
	 * a line starting with ':' ends libmicrohttpd's header section
	 * early (it would leave more than these four). */
	if (w->bad == NULL && (!nuls(w, w->p, 4) || !same(w->p + 4, w->end)))
		w->bad = HEAD_BAD;
	return w->bad;
}
