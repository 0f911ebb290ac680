/* api/service_int.h — internals shared by the operation files (upload.c,
 * create.c, read.c, list.c, delete.c, stream.c, patch.c): storing objects
 * and copying stored ones. */
#ifndef API_SERVICE_INT_H
#define API_SERVICE_INT_H

#include <stdio.h>

#include <json-c/json.h>

#include "api/service.h"

/* Renders and stores one object of kind k: extra_status (borrowed, may be
 * NULL) holds status members the server keeps across re-renders (a
 * Verification's outcome, a run's verification summary); meta (borrowed; its
 * resourceVersion is set here, and for runs its derived labels), the
 * canonical spec bytes, the digest and references. No input may point into
 * the map: the put invalidates it. */
int api_store_object(api_ctx *ctx, store_txn *txn, const api_kind *k,
	struct json_object *meta, const char *spec, size_t spec_len,
	const uint8_t digest[API_DIGEST_LEN], const uint8_t *refs, size_t nrefs,
	const char *name, const char *natkey, size_t natkey_len,
	struct json_object *extra_status);

/* What a stored object (borrowed from the map) needs to be stored again. */
typedef struct stored_copy {
	const api_kind *kind;
	struct json_object *meta;
	ki_buf spec, name, natkey, refs, status;
	uint8_t digest[API_DIGEST_LEN];
	size_t nrefs;
	uint64_t rv;
} stored_copy;

int stored_copy_make(stored_copy *c, const store_obj *o);
/* Stores c again; extra (borrowed, may be NULL) replaces the kept status
 * members, else the stored ones are kept. */
int stored_copy_put(api_ctx *ctx, store_txn *txn, stored_copy *c,
	struct json_object *extra);
void stored_copy_free(stored_copy *c);

/* May who change the stored object o? Fills r (403) when not. */
struct api_principal;
int api_may_write_stored(const struct api_principal *who, const store_obj *o,
	api_resp *r);

/* An unlinked file for an answer too large for memory, in dir (NULL: the
 * system's temporary directory); the caller fcloses it. NULL on failure. */
FILE *api_spill_open(const char *dir);

/* Sets metadata.resourceVersion of the object whose JSON is body (NULL:
 * removes it), the body rewritten: a dry run answers the version the
 * object has, or none for one it would create. Returns 0 or KI_ENOMEM. */
int api_body_set_rv(ki_buf *body, const char *rv);

/* Adds a warning to r for each label in want (the labels a client sent,
 * borrowed) that the stored object o holds with another value: one the
 * server derives from the spec. */
void api_warn_overridden_labels(api_resp *r, struct json_object *want,
	const store_obj *o);

/* Fills r with the 404 Status for k's name (read.c). */
void not_found(api_resp *r, const api_kind *k, const char *name, size_t len);

/* The runs referencing digest change resolution: re-render them
 * (upload.c). */
int refresh_referrers(api_ctx *ctx, store_txn *txn,
	const uint8_t digest[API_DIGEST_LEN]);

/* Runs the query q over kind k in id order after the id `after`, driven
 * by the cheapest access path (stored in *path, enum API_LIST_BY_*); fn
 * still checks every requirement (api_query_match). q->labels and
 * q->fields must be set (empty selectors select everything). Returns as
 * store_list(). */
int api_query_run(store_txn *txn, const api_kind *k, const api_query *q,
	uint64_t after, store_each_fn fn, void *arg, int *path);

#endif
