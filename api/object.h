/* api/object.h — one uploaded document on its way into the store: parsed,
 * validated, digested, and rendered into the stored JSON form. */
#ifndef API_OBJECT_H
#define API_OBJECT_H

#include <json-c/json.h>
#include <stdint.h>

#include "api/jcs.h"
#include "api/kinds.h"
#include "api/schema.h"
#include "api/status.h"
#include "lib/ki.h"
#include "store/store.h"

/* The references a run holds, in this fixed order in store_obj.refs. */
enum { API_REF_PROTOCOL, API_REF_WORKLOAD, API_REF_ENVIRONMENT,
	API_REF_IMPLEMENTATION, API_NREFS };

/* An object rendered ahead of its write transaction, from a read of the
 * store: its store_obj (json and labels point into the buffers
 * here), the offset in json of the one-character resourceVersion left to
 * fill in, and the ids its references resolved to (0: none), which the
 * write checks before it uses the rendering (it reads them again unless
 * no object was replaced or deleted since: see store_changes). */
typedef struct api_prerender {
	store_obj o;
	ki_buf json, labels;
	size_t rv_at;
	uint64_t ref_ids[API_NREFS];
	uint64_t changes;     /* store_changes of the read */
} api_prerender;

typedef struct api_doc {
	const api_kind *kind;
	struct json_object *obj;     /* owned */
	const char *name;            /* borrowed from obj, or own_name */
	char *own_name;              /* a remembered part's (api/parts.h) */
	ki_buf raw;                  /* its bytes: obj is parsed when needed */
	char path[48];               /* "", "run", "items[3]": cause prefix */
	uint8_t digest[API_DIGEST_LEN];
	char digest_str[API_DIGEST_STRLEN + 1];
	ki_buf canon;                /* JCS of {apiVersion, kind, spec} */
	size_t spec_off, spec_len;   /* the spec's bytes inside canon */
	ki_buf natkey;               /* runs: source + US + externalId */
	uint8_t refs[API_NREFS][API_DIGEST_LEN];
	size_t nrefs;
	api_prerender *pre;          /* owned, or NULL */
	/* Filled by the write. */
	int created;                 /* 1 created, 0 unchanged */
	char *stored_name;           /* the name it is stored under */
	uint64_t rv;
	uint64_t ref_ids[API_NREFS]; /* what its references resolve to now */
	/* Verifications written with a token limited to a source: that
	 * source (owned), which the verified run must have; else NULL. */
	char *scope_source;
} api_doc;

void api_prerender_free(api_prerender *p);

void api_doc_free(api_doc *d);

/* d's tree: obj, parsed from raw first when d is a remembered part (NULL
 * when out of memory); borrowed. */
struct json_object *api_doc_obj(api_doc *d);

/* Parses JSON text under the limits: strict grammar, valid UTF-8, depth at
 * most max_depth, no duplicate keys. On failure fills st (400) and returns
 * KI_EINVAL. *out is owned by the caller (json_object_put). */
int api_json_parse(const char *text, size_t len, int max_depth,
	struct json_object **out, api_status *st);

/* Parses n bytes of trusted JSON (stored by this server) into a tree the
 * caller puts, or NULL. */
struct json_object *api_json_parse_len(const char *s, size_t n);

/* The string at o.a (or o.a.b when b is non-NULL), or NULL; borrowed. */
const char *api_json_str_at(struct json_object *o, const char *a,
	const char *b);

/* The spec of the stored object with digest d, when it is of kind, as a
 * tree the caller puts; else NULL. */
struct json_object *api_ref_spec(store_txn *txn, const uint8_t *d, int kind);

/* What a run's references resolve to, indexed by API_REF_*: for each, an
 * object of its kind stored under the digest (resolved, with its id and
 * name) or not, and the specs of the workload, implementation and
 * environment (what derived labels and plausibility read) as trees. All
 * owned here (api_run_refs_free). rc is the first error reading the store
 * (KI_OK when none); loaded is 0 when the run did not have all four. */
typedef struct api_run_refs {
	int loaded, rc;
	int resolved[API_NREFS];
	uint64_t seq[API_NREFS];
	char *name[API_NREFS];
	struct json_object *spec[API_NREFS];
} api_run_refs;

void api_run_refs_load(store_txn *txn, const uint8_t *refs, size_t nrefs,
	api_run_refs *out);
void api_run_refs_free(api_run_refs *rr);

/* Validates obj (consumed: d owns it) as a document of some kind at path
 * prefix `path` ("" for a lone document). expect, if non-NULL, is the kind
 * the collection requires. Problems: causes on st (422), or st->code 400
 * for a wrong apiVersion/kind; unknown fields in unk. On success d holds the
 * digest, canonical bytes, natural key and references. */
void api_doc_prepare(api_doc *d, struct json_object *obj, const char *path,
	const api_kind *expect, api_status *st, api_unknown *unk);

/* Renders the stored form
 *   {"apiVersion":…,"kind":…,"metadata":META,"spec":SPEC,"status":STATUS}
 * into out and fills o's json pointer, lengths and offsets (o borrows
 * out's memory). */
int api_render(const api_kind *k, const char *meta, size_t meta_len,
	const char *spec, size_t spec_len, const char *status,
	size_t status_len, ki_buf *out, store_obj *o);

/* The metadata of a new object: the document's name, title, labels and
 * annotations plus uid, creationTimestamp (now) and generation 1. The
 * caller puts it; resourceVersion is set when it is stored. NULL on OOM. */
/* A random (version 4) UUID, NUL-terminated, for metadata.uid. */
void api_new_uid(char out[37]);
struct json_object *api_new_metadata(struct json_object *doc_meta,
	double now);

/* Appends an RFC 3339 UTC timestamp with seconds ("2026-12-02T10:45:35Z"). */
void api_format_time(double secs, ki_buf *out);

#endif
