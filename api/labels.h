/* api/labels.h — label selectors, field selectors, the labels the server
 * derives for runs, and the store's label and facet encodings. */
#ifndef API_LABELS_H
#define API_LABELS_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "api/object.h"
#include "lib/ki.h"
#include "store/store.h"

enum api_sel_op {
	API_SEL_EQ = 1,   /* k=v, k==v */
	API_SEL_NEQ,      /* k!=v (also true when k is absent) */
	API_SEL_IN,       /* k in (a,b) */
	API_SEL_NOTIN,    /* k notin (a,b) */
	API_SEL_EXISTS,   /* k */
	API_SEL_NOTEXISTS,/* !k */
	API_SEL_GT,       /* k>n (integers) */
	API_SEL_LT,       /* k<n */
};

typedef struct api_requirement {
	char *key;
	int op;
	char **values;
	size_t nvalues;
} api_requirement;

typedef struct api_selector {
	api_requirement *reqs;
	size_t n;
} api_selector;

/* Parses a Kubernetes label selector ("a=b,c in (d,e),!f"). An empty or
 * NULL text selects everything. Returns 0, or KI_EINVAL with a message in
 * err. Free with api_selector_free(). */
int api_selector_parse(const char *text, api_selector *out, char *err,
	size_t errlen);
/* Parses a field selector: comma-separated field=value, field==value and
 * field!=value terms (fields are not checked here). */
int api_field_selector_parse(const char *text, api_selector *out, char *err,
	size_t errlen);
void api_selector_free(api_selector *s);

/* Does a store label blob ("k\0v\0" pairs) satisfy every requirement? */
int api_selector_match(const api_selector *s, const char *labels,
	size_t len);

/* The equality requirement best used to drive an index scan, or NULL. */
const api_requirement *api_selector_driver(const api_selector *s);

/* Encodes a metadata.labels object into the store's sorted "k\0v\0" blob
 * (appended to out). */
int api_labels_encode(struct json_object *labels, ki_buf *out);

/* An object's facets, from its kind and label blob: "l:k=v\0" for each
 * label, for runs "c:kernel\x1fprovider\x1fgpu\x1fmetric\0", and "n:\0"
 * (every object counts once there, so a kind's total is one lookup). The
 * store's store_options.facets: records do not carry them. */
int api_store_facets(int kind, const char *labels, size_t len, ki_buf *out);

/* Adds the labels the server derives for a run (kernel, pass, provider,
 * gpu, dtype, metric) to labels (borrowed, modified), from its resolved
 * references through txn, else from sourceNative. Derived labels replace
 * client labels of the same key. spec is borrowed. */
int api_run_derive_labels(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, struct json_object *labels);

/* The same from references already resolved (rr borrowed). */
int api_run_derive_labels_from(struct json_object *spec,
	const api_run_refs *rr, struct json_object *labels);

/* Writes a label-value slug of s (lower case, [a-z0-9._-], at most 63,
 * alphanumeric at both ends) into out; returns its length (0 if empty). */
size_t api_slug(const char *s, char out[64]);

#endif
