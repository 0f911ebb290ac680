/* api/jsonpatch.h — JSON Patch (RFC 6902) over json-c trees, with JSON
 * Pointer (RFC 6901) paths. */
#ifndef API_JSONPATCH_H
#define API_JSONPATCH_H

#include <json-c/json.h>

#include "api/status.h"

/* Most operations one patch may hold: a named limit on what a client
 * sends. */
#define API_JSONPATCH_MAX_OPS 10000
/* Most JSON values the copy operations of one patch may add, and the
 * deepest a copied value may land: each copy of the document into itself
 * doubles it, so that a few dozen operations would exhaust memory. */
#define API_JSONPATCH_MAX_COPIED 100000
#define API_JSONPATCH_MAX_DEPTH 64

/* Applies the operations of patch (a JSON array; borrowed) to a copy of
 * doc (borrowed). Returns KI_OK with *out a new tree the caller puts, or
 * fills st and returns KI_EINVAL: 400 BadRequest for a malformed patch (not
 * an array, an unknown op, a missing member, a bad pointer), 422 Invalid
 * for an operation that cannot apply to doc (a path that does not exist, a
 * test that does not hold, copies past API_JSONPATCH_MAX_COPIED values or
 * API_JSONPATCH_MAX_DEPTH levels), naming the operation's index; KI_ENOMEM when
 * out of memory. Operations apply in order, all or none. */
int api_jsonpatch_apply(struct json_object *doc, struct json_object *patch,
	struct json_object **out, api_status *st);

#endif
