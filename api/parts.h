/* api/parts.h — bundle parts remembered by their bytes.
 *
 * A harness uploads many bundles whose protocol and environment are the
 * same bytes each time; only the run changes. A part that was validated
 * without a problem is remembered per thread (its bytes and what
 * api_doc_prepare made of them: kind, name, digest, canonical form,
 * references), so the next upload carrying the same bytes skips parsing,
 * validating, canonicalizing and hashing it (parts of up to 64 KB; the 8
 * latest per thread). The store is still read for
 * every part: only what follows from the bytes alone is remembered. */
#ifndef API_PARTS_H
#define API_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "api/object.h"

/* A top-level member of an object: the key (between its quotes) and the
 * value's bytes. */
typedef struct api_member {
	const char *key, *val;
	size_t key_len, val_len;
	const char *start;   /* where the member starts (its key's quote) */
} api_member;

#define API_MAX_MEMBERS 16

/* Finds the top-level members of the JSON object in text, without
 * building anything: 0 and *n, or -1 when text is not an object this
 * shortcut takes (more than API_MAX_MEMBERS members, a key with an
 * escape, a repeated key, brackets that do not close). The bytes are not
 * validated here: a remembered part's were, and the rest goes to the
 * parser. */
int api_members(const char *text, size_t len, int max_depth, api_member *m,
	size_t *n);

/* A remembered part with role's key ("protocol", …) and these bytes: on a
 * hit fills d as api_doc_prepare would have (path from path; d owns its
 * copies; its tree is parsed when first needed, see api_doc_obj) and
 * returns 1; else 0. */
int api_part_get(const char *role, const char *val, size_t len,
	const char *path, api_doc *d);

/* Parts found remembered so far, in every thread. */
uint64_t api_part_hits(void);

/* Remembers d, just prepared from these bytes under role without a cause
 * or an unknown field. */
void api_part_put(const char *role, const char *val, size_t len,
	const api_doc *d);

#endif
