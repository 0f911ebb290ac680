/* server/reqhead.h — the request head as it was received: a check of the
 * bytes libmicrohttpd 0.9.75 parsed in place, for what its parser drops
 * silently (a NUL cuts a header value, a method or the target short; a
 * folded line joins the next to the header's name; a line starting with
 * ':' ends the header section, the rest being read as another request).
 * No libmicrohttpd here, so tests can drive it. */
#ifndef SERVER_REQHEAD_H
#define SERVER_REQHEAD_H

#include <stddef.h>

/* The walk over one request head. libmicrohttpd reads the head into one
 * buffer and parses it there: each line's CR LF becomes two NULs, the
 * colon after a header's name one, the space after the method and before
 * the version one. Every field it hands on points into that buffer, so
 * the bytes between the fields say what it did not hand on. */
typedef struct reqhead {
	const char *start;    /* the head's first byte */
	const char *p;        /* where the next header line must start */
	const char *end;      /* the end of the head, its last CR LF included */
	const char *bad;      /* why the head is refused (static), or NULL */
} reqhead;

/* Starts the walk over the head [head, head + len) whose method and
 * version (as libmicrohttpd handed them on) point into it, and whose
 * target as received (before any decoding) is uri[0..uri_len). Checks the
 * request line. All pointers borrowed for the walk. */
void reqhead_begin(reqhead *w, const char *head, size_t len,
	const char *uri, size_t uri_len, const char *version);
/* Takes the next header, in the order received (key and value as handed
 * on, their lengths those libmicrohttpd gives). */
void reqhead_field(reqhead *w, const char *key, size_t key_len,
	const char *value, size_t value_len);
/* Ends the walk: NULL when the head holds exactly what was handed on, in
 * lines ended by CR LF, else a message (static) naming the fault. */
const char *reqhead_end(reqhead *w);

/* Does the target as received, s[0..n), hold a byte no request-target
 * holds (a control character, a space, DEL)? */
int reqhead_target_bad(const char *s, size_t n);

#endif
