/* lib/ki.h — the project's one error convention and its growable byte buffer. */
#ifndef KI_H
#define KI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* 0 is success; every failure is one of these negative codes. */
enum {
	KI_OK = 0,
	KI_ENOMEM = -1,    /* an allocation failed */
	KI_EINVAL = -2,    /* the argument or input is malformed */
	KI_ENOTFOUND = -3, /* no such object */
	KI_EEXIST = -4,    /* the key exists with other content */
	KI_ESTORE = -5,    /* the storage engine failed (I/O, corruption) */
	KI_EFULL = -6,     /* the store's map is full */
	KI_ECONFLICT = -7, /* a precondition (resourceVersion) failed */
	KI_ELIMIT = -8,    /* a configured limit was exceeded */
	KI_EIO = -9,       /* an operating-system call failed; errno is kept */
	KI_EGONE = -10,    /* a resourceVersion or continue token is too old */
	KI_EBUSY = -11,    /* another process holds the store */
	KI_ECORRUPT = -12, /* stored data fails its checksum or structure */
	KI_ENOSPC = -13,   /* the file system is full (ENOSPC, EDQUOT) */
	KI_EUNAVAIL = -14, /* the storage engine is unavailable for now (no
	                    * leader, no member answers): retry later */
	KI_EQUOTA = -15,   /* the storage engine's space quota is used up
	                    * (etcd's NOSPACE alarm): writes are refused
	                    * until an operator frees space */
};

/* Returns a static English description of a KI_* code. */
const char *ki_strerror(int rc);

/* A growable byte buffer. An allocation failure sets oom; later appends are
 * then no-ops and return KI_ENOMEM, so a caller may check once at the end.
 * data is always NUL-terminated when non-NULL (the NUL is not in len). */
typedef struct ki_buf {
	char *data;
	size_t len;
	size_t cap;
	size_t limit; /* 0 = unlimited; growing past it fails like an OOM */
	int oom;
} ki_buf;

void ki_buf_init(ki_buf *b);
/* Frees the buffer's memory and re-initialises it. */
void ki_buf_free(ki_buf *b);
/* Drops the contents, keeps the memory. */
void ki_buf_reset(ki_buf *b);
int ki_buf_reserve(ki_buf *b, size_t extra);
int ki_buf_append(ki_buf *b, const void *p, size_t n);
int ki_buf_puts(ki_buf *b, const char *s);
int ki_buf_putc(ki_buf *b, char c);
/* Appends v in decimal (what "%llu" writes, without printf's cost). */
int ki_buf_put_u64(ki_buf *b, uint64_t v);
int ki_buf_printf(ki_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int ki_buf_vprintf(ki_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Appends s (n bytes, UTF-8) as a quoted JSON string with RFC 8785's
 * minimal escapes: \" \\ \b \f \n \r \t, other controls as \u00xx.
 * Bytes that are not well-formed UTF-8 become U+FFFD, so the output is
 * always valid JSON. */
int ki_buf_json_string(ki_buf *b, const char *s, size_t n);
/* Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms,
 * no surrogates, nothing beyond U+10FFFF) at s, n bytes left; 0 if none. */
size_t ki_utf8_len(const unsigned char *s, size_t n);
/* Appends code point c (at most U+10FFFF) as UTF-8. */
int ki_buf_put_utf8(ki_buf *b, uint32_t c);
/* Reads 4 hex digits (either case) at p into *v: 0, or -1 if p[0..4) is
 * not hex (JSON's \uXXXX). */
int ki_hex4(const unsigned char *p, uint32_t *v);
/* Whether any of the 8 bytes in x (read from memory in any order) needs
 * a look inside a JSON string: below 0x20, from 0x80, '"' or '\\'. Plain
 * ASCII runs are skipped eight bytes a test. */
static inline int
ki_word_needs_look(uint64_t x)
{
	const uint64_t ones = UINT64_C(0x0101010101010101);
	const uint64_t high = UINT64_C(0x8080808080808080);
	uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');

	return (((x - ones * 0x20) | (q - ones) | (bs - ones)) & ~x & high) !=
	    0 || (x & high) != 0;
}

/* Hands the memory to the caller (caller frees with free()); the buffer is
 * re-initialised. Returns NULL after an OOM (and frees). */
char *ki_buf_steal(ki_buf *b, size_t *len);

#endif
