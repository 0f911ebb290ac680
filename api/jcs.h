/* api/jcs.h — RFC 8785 JSON canonicalization (JCS) and the content digest. */
#ifndef API_JCS_H
#define API_JCS_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/ki.h"

#define API_DIGEST_LEN 32
#define API_DIGEST_STRLEN 71 /* "sha256:" + 64 hex digits */

/* Writes v in ECMAScript Number.prototype.toString form (RFC 8785 3.2.2.3)
 * into out (NUL-terminated). Returns the length, or KI_EINVAL when v is not
 * finite. */
int api_jcs_number(double v, char out[32]);

/* The same for the double a JSON number literal (RFC 8259 grammar, the
 * whole string) reads as, taken from the literal's digits: when it has at
 * most 15 significant digits and its magnitude lies within 1e-290..1e290,
 * that double's shortest round-trip form has exactly those digits (DBL_DIG),
 * so no search is needed. Returns the length written, or 0 when the
 * literal is not such a number (the caller converts it and uses
 * api_jcs_number). */
int api_jcs_number_literal(const char *lit, char out[32]);

/* Appends the canonical form of o to out. Object keys are sorted by their
 * UTF-16 code units; numbers (json-c int64, uint64 and double alike) are
 * treated as IEEE-754 doubles. Returns 0, KI_EINVAL (a non-finite number),
 * or KI_ENOMEM. o is borrowed. */
int api_jcs_serialize(struct json_object *o, ki_buf *out);

/* The content digest of an object: SHA-256 over the JCS form of
 * {apiVersion, kind, spec} taken from obj (borrowed). canon, if non-NULL,
 * receives those canonical bytes (appended). Returns 0, KI_EINVAL (a member
 * missing or a non-finite number) or KI_ENOMEM. */
int api_digest(struct json_object *obj, uint8_t out[API_DIGEST_LEN],
	ki_buf *canon);

/* SHA-256 of n bytes (OpenSSL EVP). */
int api_sha256(const void *p, size_t n, uint8_t out[API_DIGEST_LEN]);

/* Formats "sha256:<64 lowercase hex>" with a NUL into out. */
void api_digest_format(const uint8_t d[API_DIGEST_LEN],
	char out[API_DIGEST_STRLEN + 1]);

/* Parses "sha256:" + exactly 64 lowercase hex digits. Returns 0 or
 * KI_EINVAL. */
int api_digest_parse(const char *s, size_t n, uint8_t out[API_DIGEST_LEN]);

/* Scans JSON text that json-c has already accepted and reports the first
 * object holding the same key twice (keys compared after unescaping).
 * Returns 0 when there is none, 1 when there is one (path, if non-NULL,
 * receives its location as "spec.timing.median" / "items[2].metadata.name",
 * with the duplicated key last), KI_EINVAL (the text is not JSON) or
 * KI_ENOMEM. */
int api_json_find_duplicate_key(const char *text, size_t n, ki_buf *path);

/* Scans JSON text that json-c has already accepted for what json-c 0.16
 * changes without an error, so that the tree (and its digest) would not be
 * the text's: an integer literal outside [INT64_MIN, UINT64_MAX], which
 * json-c clamps (reported only where the clamped value is another double);
 * a lone surrogate escape, which json-c turns into U+FFFD (RFC 8785 asks
 * for I-JSON, which forbids it); a key holding U+0000, which json-c cuts
 * there. Returns 0 when there is none, 1 at the first one (path, if
 * non-NULL, receives its location as above; why, if non-NULL, a static
 * phrase naming the problem), KI_EINVAL (the text is not JSON) or
 * KI_ENOMEM. */
int api_json_find_lossy(const char *text, size_t n, ki_buf *path,
	const char **why);

/* json-c 0.16 reads a surrogate-pair escape whose character has its low
 * 16 bits in 0xD800..0xDFFF (U+1D800 "\ud836\udc00", U+10DC00, ...) as
 * U+FFFD. When text (which json-c parsed into *obj, strictly, with
 * max_depth) holds such an escape, *obj is replaced by the tree of a copy
 * in which every pair escape is written as UTF-8 (the old tree is put).
 * Returns 0 (*obj is right), KI_EINVAL (the copy did not parse; *obj
 * unchanged) or KI_ENOMEM. */
int api_json_mend_astral(const char *text, size_t n, int max_depth,
	struct json_object **obj);

#endif
