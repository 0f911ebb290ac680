/* api/service.c — create, get, list and delete over the store, and the
 * bundle / List / NDJSON upload paths. */
#include "api/service.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"
#include "api/object.h"

#define CT_JSON "application/json"
#define MAX_PARTS 6

void
api_resp_init(api_resp *r)
{
	memset(r, 0, sizeof(*r));
	ki_buf_init(&r->body);
	r->content_type = CT_JSON;
}

void
api_resp_free(api_resp *r)
{
	ki_buf_free(&r->body);
	for (size_t i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	r->nwarnings = 0;
}

void
api_resp_status(api_resp *r, const api_status *st)
{
	ki_buf_reset(&r->body);
	r->code = st->code ? st->code : 500;
	r->content_type = CT_JSON;
	r->etag[0] = '\0';
	r->cache_control = NULL;
	r->location[0] = '\0';
	api_status_render(st, &r->body);
}

void
api_resp_warn(api_resp *r, const char *fmt, ...)
{
	ki_buf b;
	va_list ap;

	if (r->nwarnings >= API_MAX_WARNINGS)
		return;
	ki_buf_init(&b);
	va_start(ap, fmt);
	ki_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if ((r->warnings[r->nwarnings] = ki_buf_steal(&b, NULL)) != NULL)
		r->nwarnings++;
}

static void
fail_rc(api_resp *r, int rc, const char *what)
{
	api_status st;

	api_status_init(&st);
	api_status_from_rc(&st, rc, what);
	api_resp_status(r, &st);
	api_status_free(&st);
}

/* ---- upload elements ---- */

/* One unit of an upload: a lone object or a bundle, written all or
 * nothing. */
typedef struct element {
	api_doc docs[MAX_PARTS];
	size_t ndocs;
	long index;           /* position in a List or NDJSON stream; -1 alone */
	api_status st;        /* why it failed */
	api_unknown unk;
	int failed;
} element;

static void
element_free(element *e)
{
	for (size_t i = 0; i < e->ndocs; i++)
		api_doc_free(&e->docs[i]);
	api_status_free(&e->st);
	api_unknown_free(&e->unk);
}

static int
is_bundle(struct json_object *v)
{
	if (!json_object_is_type(v, json_type_object) ||
	    json_object_object_get_ex(v, "kind", NULL))
		return 0;
	json_object_object_foreach(v, key, val) {
		(void)val;
		if (api_kind_by_part(key) != NULL)
			return 1;
	}
	return 0;
}

/* Turns one JSON value (consumed) into e's documents: a bundle, or one
 * object (of kind expect, when non-NULL). prefix prefixes every cause. */
static void
prepare_element(element *e, struct json_object *v, const char *prefix,
	const api_kind *expect, int allow_bundle)
{
	static const char *const order[] = { "protocol", "environment",
		"workload", "implementation", "run" };
	api_doc *run = NULL;
	char p[64];

	if (!allow_bundle || !is_bundle(v)) {
		api_doc_prepare(&e->docs[0], v, prefix, expect, &e->st, &e->unk);
		e->ndocs = 1;
		goto out;
	}
	json_object_object_foreach(v, key, val) {
		(void)val;
		if (api_kind_by_part(key) == NULL) {
			snprintf(p, sizeof(p), "%s%s%.32s", prefix, *prefix ? "." : "",
			    key);
			api_status_cause(&e->st, "FieldValueNotSupported", p,
			    "Unsupported value: a bundle holds run, protocol, "
			    "environment, workload and implementation");
		}
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		struct json_object *part;
		const api_kind *k = api_kind_by_part(order[i]);

		if (!json_object_object_get_ex(v, order[i], &part))
			continue;
		snprintf(p, sizeof(p), "%s%s%s", prefix, *prefix ? "." : "",
		    order[i]);
		api_doc_prepare(&e->docs[e->ndocs], json_object_get(part), p, k,
		    &e->st, &e->unk);
		if (k->id == API_RUN)
			run = &e->docs[e->ndocs];
		e->ndocs++;
	}
	json_object_put(v);
	if (e->st.code != 0 || e->st.ncauses != 0 || run == NULL)
		goto out;
	/* The server never trusts a digest it did not compute: each bundled
	 * document must be the one the run names. */
	for (size_t i = 0; i < e->ndocs; i++) {
		api_doc *d = &e->docs[i];
		int ref = d->kind->id == API_PROTOCOL ? API_REF_PROTOCOL :
		    d->kind->id == API_WORKLOAD ? API_REF_WORKLOAD :
		    d->kind->id == API_ENVIRONMENT ? API_REF_ENVIRONMENT :
		    d->kind->id == API_IMPLEMENTATION ? API_REF_IMPLEMENTATION : -1;
		char declared[API_DIGEST_STRLEN + 1];

		if (ref < 0 || memcmp(run->refs[ref], d->digest,
		    API_DIGEST_LEN) == 0)
			continue;
		api_digest_format(run->refs[ref], declared);
		snprintf(p, sizeof(p), "%s.spec.%s", run->path, d->kind->ref_field);
		api_status_cause(&e->st, "FieldValueInvalid", p,
		    "Invalid value: \"%s\": the run names %s, but the bundled %s "
		    "\"%s\" has the digest %s (recomputed from its content); the "
		    "digests must match", declared, declared, d->kind->kind,
		    d->name ? d->name : "", d->digest_str);
	}
out:
	if (e->st.code == 0 && e->st.ncauses != 0) {
		const api_doc *main = run != NULL ? run : &e->docs[0];

		e->st.code = 422;
		e->st.reason = "Invalid";
		api_status_details(&e->st, main->kind ? main->kind->kind : NULL,
		    main->name);
	}
	if (e->st.code != 0)
		e->failed = 1;
}

/* Applies fieldValidation to the unknown fields an element had. */
static void
unknown_fields(element *e, const api_write_opts *opt, api_resp *r)
{
	ki_buf msg;

	if (e->unk.n == 0 || e->failed || opt->field_validation == API_FV_IGNORE)
		return;
	if (opt->field_validation == API_FV_WARN) {
		for (size_t i = 0; i < e->unk.n; i++)
			api_resp_warn(r, "unknown field \"%s\"", e->unk.paths[i]);
		return;
	}
	ki_buf_init(&msg);
	ki_buf_puts(&msg, "strict decoding error: ");
	for (size_t i = 0; i < e->unk.n; i++) {
		ki_buf_printf(&msg, "%sunknown field \"%s\"", i ? ", " : "",
		    e->unk.paths[i]);
		api_status_cause(&e->st, "FieldValueUnknown", e->unk.paths[i],
		    "Unknown field: not in the schema of this kind");
	}
	api_status_fail(&e->st, 400, "BadRequest", "%s",
	    msg.data ? msg.data : "");
	ki_buf_free(&msg);
	e->failed = 1;
}

/* ---- writing ---- */

typedef struct refresh_arg {
	api_ctx *ctx;
	store_txn *txn;
	int rc;
} refresh_arg;

/* Re-renders a stored object with a fresh status and the next rv. The
 * source o is borrowed from the map and must be copied before the put. */
static int
rerender(api_ctx *ctx, store_txn *txn, const store_obj *o)
{
	const api_kind *k = api_kind_by_id(o->kind);
	struct json_object *meta = NULL;
	ki_buf metab, spec, status, json, name, natkey, refs;
	store_obj n;
	uint64_t rv = store_next_rv(txn);
	char rvs[24];
	int rc = KI_ENOMEM;

	ki_buf_init(&metab);
	ki_buf_init(&spec);
	ki_buf_init(&status);
	ki_buf_init(&json);
	ki_buf_init(&name);
	ki_buf_init(&natkey);
	ki_buf_init(&refs);
	if (k == NULL) {
		rc = KI_ESTORE;
		goto out;
	}
	meta = json_tokener_parse(ki_buf_append(&metab, o->json + o->meta_off,
	    o->meta_len) == KI_OK ? metab.data : "");
	if (meta == NULL) {
		rc = KI_ESTORE;
		goto out;
	}
	snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)rv);
	json_object_object_add(meta, "resourceVersion",
	    json_object_new_string(rvs));
	ki_buf_reset(&metab);
	if ((rc = api_jcs_serialize(meta, &metab)) != KI_OK)
		goto out;
	ki_buf_append(&spec, o->json + o->spec_off, o->spec_len);
	ki_buf_append(&name, o->name, o->name_len);
	ki_buf_append(&natkey, o->natkey ? o->natkey : "", o->natkey_len);
	ki_buf_append(&refs, o->refs ? (const char *)o->refs : "",
	    o->nrefs * API_DIGEST_LEN);
	if (name.oom || natkey.oom || refs.oom || spec.oom) {
		rc = KI_ENOMEM;
		goto out;
	}
	memset(&n, 0, sizeof(n));
	n.kind = o->kind;
	memcpy(n.digest, o->digest, API_DIGEST_LEN);
	n.nrefs = o->nrefs;
	/* o dies with the next write: only the copies are used below. */
	rc = api_compute_status(txn, k, n.digest, (const uint8_t *)refs.data,
	    n.nrefs, ctx->now(), &status);
	if (rc != KI_OK)
		goto out;
	rc = api_render(k, metab.data, metab.len, spec.data, spec.len,
	    status.data, status.len, &json, &n);
	if (rc != KI_OK)
		goto out;
	n.name = name.data;
	n.name_len = name.len;
	n.natkey = natkey.len ? natkey.data : NULL;
	n.natkey_len = natkey.len;
	n.refs = n.nrefs ? (const uint8_t *)refs.data : NULL;
	n.rv = rv;
	rc = store_put(txn, &n);
out:
	if (meta != NULL)
		json_object_put(meta);
	ki_buf_free(&metab);
	ki_buf_free(&spec);
	ki_buf_free(&status);
	ki_buf_free(&json);
	ki_buf_free(&name);
	ki_buf_free(&natkey);
	ki_buf_free(&refs);
	return rc;
}

static int
refresh_one(void *arg, const store_obj *o)
{
	refresh_arg *a = arg;

	a->rc = rerender(a->ctx, a->txn, o);
	return a->rc != KI_OK ? 1 : 0;
}

/* The runs referencing digest change resolution: re-render them. */
static int
refresh_referrers(api_ctx *ctx, store_txn *txn,
	const uint8_t digest[API_DIGEST_LEN])
{
	refresh_arg a = { ctx, txn, KI_OK };
	int rc = store_each_referrer(txn, digest, refresh_one, &a);

	return a.rc != KI_OK ? a.rc : rc;
}

/* Decides what writing d means against the store: 0 and d->created = 1 to
 * create, 0 and created = 0 when the content is already there, or a
 * failure described on st. */
static int
check_doc(store_txn *txn, api_doc *d, api_status *st)
{
	static const int ref_kinds[API_NREFS] = { API_PROTOCOL, API_WORKLOAD,
		API_ENVIRONMENT, API_IMPLEMENTATION };
	store_obj o;
	char stored[API_DIGEST_STRLEN + 1];
	int rc;

	free(d->stored_name);
	d->stored_name = NULL;
	d->created = 0;
	rc = store_get_by_name(txn, d->kind->id, d->name, strlen(d->name), &o);
	if (rc == KI_OK) {
		if (memcmp(o.digest, d->digest, API_DIGEST_LEN) == 0)
			goto unchanged;
		api_digest_format(o.digest, stored);
		api_status_fail(st, 409, "AlreadyExists", "%s%s%s.%s \"%s\" already "
		    "exists with other content (stored %s, uploaded %s); a spec "
		    "is immutable: upload it under a new name", d->path,
		    *d->path ? ": " : "", d->kind->plural, API_GROUP, d->name,
		    stored, d->digest_str);
		api_status_details(st, d->kind->plural, d->name);
		return KI_EEXIST;
	}
	if (rc != KI_ENOTFOUND)
		goto store_fail;
	if (d->kind->content_identity) {
		rc = store_get_by_digest(txn, d->digest, &o);
		if (rc == KI_OK && o.kind == d->kind->id)
			goto unchanged;
		if (rc != KI_OK && rc != KI_ENOTFOUND)
			goto store_fail;
	}
	if (d->natkey.len > 0) {
		rc = store_get_by_natkey(txn, d->kind->id, d->natkey.data,
		    d->natkey.len, &o);
		if (rc == KI_OK) {
			const char *sep = memchr(d->natkey.data, '\x1f', d->natkey.len);
			int slen = sep ? (int)(sep - d->natkey.data) : 0;

			if (memcmp(o.digest, d->digest, API_DIGEST_LEN) == 0)
				goto unchanged;
			api_status_fail(st, 409, "AlreadyExists", "%s%sthe source row "
			    "%.*s %s is already stored as %s \"%.*s\" with other "
			    "content; a result is immutable", d->path,
			    *d->path ? ": " : "", slen, d->natkey.data,
			    sep ? sep + 1 : "", d->kind->kind, (int)o.name_len, o.name);
			api_status_details(st, d->kind->plural, d->name);
			return KI_EEXIST;
		}
		if (rc != KI_ENOTFOUND)
			goto store_fail;
	}
	for (size_t i = 0; i < d->nrefs; i++) {
		const api_kind *want = api_kind_by_id(ref_kinds[i]);
		const api_kind *got;

		rc = store_get_by_digest(txn, d->refs[i], &o);
		if (rc == KI_ENOTFOUND)
			continue;
		if (rc != KI_OK)
			goto store_fail;
		if (o.kind == want->id)
			continue;
		got = api_kind_by_id(o.kind);
		api_status_fail(st, 422, "Invalid", "%s%s%s.%s names a %s (\"%.*s\"), "
		    "not a %s", d->path, *d->path ? ": " : "", "spec",
		    want->ref_field, got ? got->kind : "object", (int)o.name_len,
		    o.name, want->kind);
		{
			char f[96];

			snprintf(f, sizeof(f), "%s%sspec.%s", d->path,
			    *d->path ? "." : "", want->ref_field);
			api_status_cause(st, "FieldValueInvalid", f, "Invalid value: "
			    "the digest names a %s, not a %s",
			    got ? got->kind : "object", want->kind);
		}
		api_status_details(st, d->kind->kind, d->name);
		return KI_EINVAL;
	}
	d->created = 1;
	d->stored_name = strdup(d->name);
	return d->stored_name ? KI_OK : KI_ENOMEM;
unchanged:
	d->stored_name = strndup(o.name, o.name_len);
	d->rv = o.rv;
	return d->stored_name ? KI_OK : KI_ENOMEM;
store_fail:
	api_status_from_rc(st, rc, "reading the store");
	return rc;
}

static int
put_doc(api_ctx *ctx, store_txn *txn, api_doc *d)
{
	struct json_object *meta = NULL;
	ki_buf metab, status, json;
	store_obj o;
	int rc;

	ki_buf_init(&metab);
	ki_buf_init(&status);
	ki_buf_init(&json);
	memset(&o, 0, sizeof(o));
	o.kind = d->kind->id;
	o.rv = store_next_rv(txn);
	memcpy(o.digest, d->digest, API_DIGEST_LEN);
	json_object_object_get_ex(d->obj, "metadata", &meta);
	if ((rc = api_new_metadata(meta, o.rv, ctx->now(), &metab)) != KI_OK)
		goto out;
	rc = api_compute_status(txn, d->kind, d->digest, d->refs[0], d->nrefs,
	    ctx->now(), &status);
	if (rc != KI_OK)
		goto out;
	rc = api_render(d->kind, metab.data, metab.len,
	    d->canon.data + d->spec_off, d->spec_len, status.data, status.len,
	    &json, &o);
	if (rc != KI_OK)
		goto out;
	o.name = d->name;
	o.name_len = strlen(d->name);
	o.natkey = d->natkey.len ? d->natkey.data : NULL;
	o.natkey_len = d->natkey.len;
	o.refs = d->nrefs ? d->refs[0] : NULL;
	o.nrefs = d->nrefs;
	if ((rc = store_put(txn, &o)) != KI_OK)
		goto out;
	d->rv = o.rv;
	if (d->kind->content_identity && d->kind->id != API_RUN)
		rc = refresh_referrers(ctx, txn, d->digest);
out:
	ki_buf_free(&metab);
	ki_buf_free(&status);
	ki_buf_free(&json);
	return rc;
}

/* Checks every document of e, then writes the new ones. A failure before
 * the first put leaves the transaction as it was (e->failed); a failure
 * after it returns the code, and the caller must abort the transaction. */
static int
write_element(api_ctx *ctx, store_txn *txn, element *e)
{
	int rc;

	for (size_t i = 0; i < e->ndocs; i++) {
		if (check_doc(txn, &e->docs[i], &e->st) != KI_OK) {
			e->failed = 1;
			return KI_OK;
		}
	}
	for (size_t i = 0; i < e->ndocs; i++) {
		api_doc *d = &e->docs[i];

		/* Parts of one element can collide only with each other. */
		if ((rc = check_doc(txn, d, &e->st)) != KI_OK) {
			e->failed = 1;
			return rc == KI_EEXIST ? KI_ECONFLICT : rc;
		}
		if (!d->created)
			continue;
		if ((rc = put_doc(ctx, txn, d)) != KI_OK) {
			api_status_from_rc(&e->st, rc, "writing to the store");
			e->failed = 1;
			return rc;
		}
	}
	return KI_OK;
}

/* ---- responses ---- */

static int
copy_stored(store_txn *txn, const api_kind *k, const char *name,
	ki_buf *out)
{
	store_obj o;
	int rc = store_get_by_name(txn, k->id, name, strlen(name), &o);

	if (rc == KI_OK)
		rc = ki_buf_append(out, o.json, o.json_len);
	return rc;
}

static void
render_result(const element *els, size_t n, uint64_t rv, int dry_run,
	ki_buf *out)
{
	size_t created = 0, unchanged = 0, failed = 0, first = 1;

	for (size_t i = 0; i < n; i++) {
		if (els[i].failed) {
			failed++;
			continue;
		}
		for (size_t j = 0; j < els[i].ndocs; j++) {
			if (els[i].docs[j].created)
				created++;
			else
				unchanged++;
		}
	}
	ki_buf_printf(out, "{\"apiVersion\":\"" API_GROUP_VERSION "\","
	    "\"kind\":\"UploadResult\",\"metadata\":{\"resourceVersion\":"
	    "\"%llu\"},%s\"summary\":{\"created\":%zu,\"unchanged\":%zu,"
	    "\"failed\":%zu},\"items\":[", (unsigned long long)rv,
	    dry_run ? "\"dryRun\":true," : "", created, unchanged, failed);
	for (size_t i = 0; i < n; i++) {
		const element *e = &els[i];

		if (e->failed) {
			ki_buf_printf(out, "%s{\"index\":%ld,\"result\":\"failed\","
			    "\"status\":", first ? "" : ",", e->index);
			api_status_render(&e->st, out);
			ki_buf_putc(out, '}');
			first = 0;
			continue;
		}
		for (size_t j = 0; j < e->ndocs; j++) {
			const api_doc *d = &e->docs[j];

			ki_buf_printf(out, "%s{\"index\":%ld,", first ? "" : ",",
			    e->index);
			if (d->path[0] != '\0' && d->kind->bundle_part != NULL &&
			    e->ndocs > 1)
				ki_buf_printf(out, "\"part\":\"%s\",", d->kind->bundle_part);
			ki_buf_printf(out, "\"kind\":\"%s\",\"name\":", d->kind->kind);
			ki_buf_json_string(out, d->stored_name ? d->stored_name : "",
			    d->stored_name ? strlen(d->stored_name) : 0);
			ki_buf_printf(out, ",\"digest\":\"%s\",\"result\":\"%s\"}",
			    d->digest_str, d->created ? "created" : "unchanged");
			first = 0;
		}
	}
	ki_buf_puts(out, "]}");
}

/* ---- create ---- */

typedef struct upload {
	element *els;
	size_t n, cap;
} upload;

static element *
upload_add(upload *u)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 16;
		element *n = realloc(u->els, cap * sizeof(*n));

		if (n == NULL)
			return NULL;
		u->els = n;
		u->cap = cap;
	}
	memset(&u->els[u->n], 0, sizeof(element));
	api_status_init(&u->els[u->n].st);
	return &u->els[u->n++];
}

static void
upload_free(upload *u)
{
	for (size_t i = 0; i < u->n; i++)
		element_free(&u->els[i]);
	free(u->els);
}

/* Splits the body into elements. Returns 0, or a failure on st. */
static int
parse_upload(api_ctx *ctx, const api_kind *coll, const char *body, size_t len,
	int ndjson, upload *u, int *bulk, api_status *st)
{
	struct json_object *root = NULL, *items;
	element *e;
	char prefix[32];

	*bulk = ndjson;
	if (ndjson) {
		size_t pos = 0;
		long line = 0;

		while (pos < len) {
			const char *nl = memchr(body + pos, '\n', len - pos);
			size_t end = nl ? (size_t)(nl - body) : len, s = pos;
			struct json_object *v;

			line++;
			while (s < end && (body[s] == ' ' || body[s] == '\r' ||
			    body[s] == '\t'))
				s++;
			pos = end + 1;
			if (s == end)
				continue;
			if (u->n >= ctx->lim->max_items) {
				api_status_fail(st, 413, "RequestEntityTooLarge", "the "
				    "upload holds more than %zu documents; split it",
				    ctx->lim->max_items);
				return KI_ELIMIT;
			}
			if ((e = upload_add(u)) == NULL)
				return KI_ENOMEM;
			e->index = line;
			snprintf(prefix, sizeof(prefix), "[%ld]", line);
			if (api_json_parse(body + s, end - s, ctx->lim->max_depth, &v,
			    &e->st) != KI_OK) {
				char *m = e->st.message;

				e->st.message = NULL;
				api_status_fail(&e->st, e->st.code, e->st.reason,
				    "line %ld: %s", line, m ? m : "");
				free(m);
				e->failed = 1;
				continue;
			}
			prepare_element(e, v, prefix, NULL, 1);
		}
		return KI_OK;
	}
	if (api_json_parse(body, len, ctx->lim->max_depth, &root, st) != KI_OK)
		return KI_EINVAL;
	if (!json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		api_status_fail(st, 400, "BadRequest", "the body must be a JSON "
		    "object: a document, a bundle or a List");
		return KI_EINVAL;
	}
	{
		const char *kind = NULL;
		struct json_object *kv;

		if (json_object_object_get_ex(root, "kind", &kv) &&
		    json_object_is_type(kv, json_type_string))
			kind = json_object_get_string(kv);
		if (kind != NULL && strcmp(kind, "List") == 0) {
			size_t n;

			*bulk = 1;
			if (!json_object_object_get_ex(root, "items", &items) ||
			    !json_object_is_type(items, json_type_array)) {
				json_object_put(root);
				api_status_fail(st, 422, "Invalid", "a List needs items");
				api_status_cause(st, "FieldValueRequired", "items",
				    "Required value: an array of documents");
				return KI_EINVAL;
			}
			n = json_object_array_length(items);
			if (n > ctx->lim->max_items) {
				json_object_put(root);
				api_status_fail(st, 413, "RequestEntityTooLarge", "the List "
				    "holds %zu items, more than %zu; split it", n,
				    ctx->lim->max_items);
				return KI_ELIMIT;
			}
			for (size_t i = 0; i < n; i++) {
				if ((e = upload_add(u)) == NULL) {
					json_object_put(root);
					return KI_ENOMEM;
				}
				e->index = (long)i;
				snprintf(prefix, sizeof(prefix), "items[%zu]", i);
				prepare_element(e, json_object_get(
				    json_object_array_get_idx(items, i)), prefix, NULL, 1);
			}
			json_object_put(root);
			return KI_OK;
		}
	}
	if ((e = upload_add(u)) == NULL) {
		json_object_put(root);
		return KI_ENOMEM;
	}
	e->index = -1;
	if (is_bundle(root) && coll->id != API_RUN) {
		json_object_put(root);
		api_status_fail(st, 400, "BadRequest", "a bundle is uploaded to "
		    API_PREFIX "/benchmarkruns, not to %s", coll->plural);
		return KI_EINVAL;
	}
	prepare_element(e, root, "", coll, coll->id == API_RUN);
	return KI_OK;
}

void
api_create(api_ctx *ctx, const api_kind *coll, const char *body, size_t len,
	int ndjson, const api_write_opts *opt, api_resp *r)
{
	upload u = { NULL, 0, 0 };
	api_status st;
	store_txn *txn = NULL;
	int bulk = 0, rc, any_created = 0, any_failed = 0;
	uint64_t rv;

	api_status_init(&st);
	rc = parse_upload(ctx, coll, body, len, ndjson, &u, &bulk, &st);
	if (rc != KI_OK) {
		if (st.code == 0)
			api_status_from_rc(&st, rc, "reading the upload");
		api_resp_status(r, &st);
		goto out;
	}
	for (size_t i = 0; i < u.n; i++) {
		unknown_fields(&u.els[i], opt, r);
		any_failed |= u.els[i].failed;
	}
	if (u.n == 0) {
		api_status_fail(&st, 400, "BadRequest", "the upload holds no "
		    "documents");
		api_resp_status(r, &st);
		goto out;
	}
	/* A lone document or bundle is all or nothing, and so is an atomic
	 * bulk upload: one failure fails it whole with that Status. */
	if (any_failed && (!bulk || opt->atomic)) {
		for (size_t i = 0; i < u.n; i++) {
			if (u.els[i].failed) {
				api_resp_status(r, &u.els[i].st);
				break;
			}
		}
		goto out;
	}
	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK) {
		fail_rc(r, rc, "opening a write transaction");
		goto out;
	}
	for (size_t i = 0; i < u.n; i++) {
		element *e = &u.els[i];

		if (e->failed)
			continue;
		rc = write_element(ctx, txn, e);
		if (rc != KI_OK) {
			store_abort(txn);
			txn = NULL;
			api_resp_status(r, &e->st);
			goto out;
		}
		if (e->failed && (!bulk || opt->atomic)) {
			store_abort(txn);
			txn = NULL;
			api_resp_status(r, &e->st);
			goto out;
		}
		for (size_t j = 0; j < e->ndocs && !e->failed; j++)
			any_created |= e->docs[j].created;
	}
	rv = store_rv(txn);
	if (!bulk && u.els[0].ndocs == 1) {
		api_doc *d = &u.els[0].docs[0];

		rc = copy_stored(txn, d->kind, d->stored_name, &r->body);
		if (rc == KI_OK && d->created)
			snprintf(r->location, sizeof(r->location), API_PREFIX "/%s/%s",
			    d->kind->plural, d->stored_name);
	} else {
		render_result(u.els, u.n, rv, opt->dry_run, &r->body);
		rc = r->body.oom ? KI_ENOMEM : KI_OK;
	}
	if (rc != KI_OK) {
		store_abort(txn);
		txn = NULL;
		fail_rc(r, rc, "rendering the answer");
		goto out;
	}
	if (opt->dry_run) {
		store_abort(txn);
		txn = NULL;
	} else {
		rc = store_commit(txn);
		txn = NULL;
		if (rc != KI_OK) {
			fail_rc(r, rc, "committing the write");
			goto out;
		}
		if (any_created && ctx->committed != NULL)
			ctx->committed(ctx->committed_arg, rv);
	}
	r->code = any_created ? 201 : 200;
out:
	store_abort(txn);
	upload_free(&u);
	api_status_free(&st);
}

/* ---- reads ---- */

static void
not_found(api_resp *r, const api_kind *k, const char *name, size_t len)
{
	api_status st;

	api_status_init(&st);
	api_status_fail(&st, 404, "NotFound", "%s.%s \"%.*s\" not found",
	    k->plural, API_GROUP, (int)len, name);
	api_status_details(&st, k->plural, NULL);
	free(st.detail_name);
	st.detail_name = strndup(name, len);
	api_resp_status(r, &st);
	api_status_free(&st);
}

void
api_get(api_ctx *ctx, const api_kind *k, const char *name, size_t len,
	api_resp *r)
{
	store_txn *txn;
	store_obj o;
	int rc;

	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		fail_rc(r, rc, "opening a read transaction");
		return;
	}
	rc = store_get_by_name(txn, k->id, name, len, &o);
	if (rc == KI_OK)
		rc = ki_buf_append(&r->body, o.json, o.json_len);
	if (rc == KI_OK)
		snprintf(r->etag, sizeof(r->etag), "\"%llu\"",
		    (unsigned long long)o.rv);
	store_abort(txn);
	if (rc == KI_ENOTFOUND)
		not_found(r, k, name, len);
	else if (rc != KI_OK)
		fail_rc(r, rc, "reading the object");
	else
		r->code = 200;
}

void
api_get_digest(api_ctx *ctx, const char *digest, const char *if_none_match,
	api_resp *r)
{
	uint8_t d[API_DIGEST_LEN];
	store_txn *txn;
	store_obj o;
	const api_kind *k;
	api_status st;
	int rc;

	if (api_digest_parse(digest, strlen(digest), d) != KI_OK) {
		api_status_init(&st);
		api_status_fail(&st, 400, "BadRequest", "\"%.80s\" is not a digest: "
		    "use sha256: followed by 64 lowercase hexadecimal digits",
		    digest);
		api_resp_status(r, &st);
		api_status_free(&st);
		return;
	}
	snprintf(r->etag, sizeof(r->etag), "\"%s\"", digest);
	r->cache_control = "public, max-age=31536000, immutable";
	if (if_none_match != NULL && (strstr(if_none_match, r->etag) != NULL ||
	    strcmp(if_none_match, "*") == 0)) {
		/* Content named by its digest never changes. */
		r->code = 304;
		return;
	}
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		fail_rc(r, rc, "opening a read transaction");
		return;
	}
	rc = store_get_by_digest(txn, d, &o);
	k = rc == KI_OK ? api_kind_by_id(o.kind) : NULL;
	if (rc == KI_OK && k == NULL)
		rc = KI_ESTORE;
	if (rc == KI_OK) {
		/* The canonical content: exactly the bytes that were digested. */
		ki_buf_printf(&r->body, "{\"apiVersion\":\"" API_GROUP_VERSION
		    "\",\"kind\":\"%s\",\"spec\":", k->kind);
		ki_buf_append(&r->body, o.json + o.spec_off, o.spec_len);
		ki_buf_putc(&r->body, '}');
		rc = r->body.oom ? KI_ENOMEM : KI_OK;
	}
	store_abort(txn);
	if (rc == KI_ENOTFOUND) {
		r->cache_control = NULL;
		r->etag[0] = '\0';
		api_status_init(&st);
		api_status_fail(&st, 404, "NotFound", "no object with digest %s is "
		    "stored", digest);
		api_resp_status(r, &st);
		api_status_free(&st);
	} else if (rc != KI_OK) {
		fail_rc(r, rc, "reading the object");
	} else {
		r->code = 200;
	}
}

/* ---- list ---- */

typedef struct list_arg {
	ki_buf *out;
	uint64_t limit, n;
	int more;
	ki_buf last;
} list_arg;

static int
list_one(void *arg, const store_obj *o)
{
	list_arg *a = arg;

	if (a->limit != 0 && a->n == a->limit) {
		a->more = 1;
		return 1;
	}
	if (a->n++ > 0)
		ki_buf_putc(a->out, ',');
	ki_buf_append(a->out, o->json, o->json_len);
	ki_buf_reset(&a->last);
	ki_buf_append(&a->last, o->name, o->name_len);
	return a->out->oom ? KI_ENOMEM : 0;
}

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void
b64_encode(const char *s, size_t n, ki_buf *out)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
		size_t k = n - i < 3 ? n - i : 3;

		if (k > 1)
			v |= (uint32_t)(unsigned char)s[i + 1] << 8;
		if (k > 2)
			v |= (unsigned char)s[i + 2];
		for (size_t j = 0; j < k + 1; j++)
			ki_buf_putc(out, b64url[(v >> (18 - 6 * j)) & 63]);
	}
}

static int
b64_decode(const char *s, ki_buf *out)
{
	uint32_t v = 0;
	int bits = 0;

	for (; *s; s++) {
		const char *p = strchr(b64url, *s);

		if (p == NULL)
			return KI_EINVAL;
		v = (v << 6) | (uint32_t)(p - b64url);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			ki_buf_putc(out, (char)((v >> bits) & 0xff));
		}
	}
	return out->oom ? KI_ENOMEM : KI_OK;
}

void
api_list(api_ctx *ctx, const api_kind *k, const api_list_opts *opt,
	api_resp *r)
{
	store_txn *txn = NULL;
	list_arg a;
	ki_buf after;
	api_status st;
	int rc;

	memset(&a, 0, sizeof(a));
	ki_buf_init(&a.last);
	ki_buf_init(&after);
	api_status_init(&st);
	a.out = &r->body;
	a.limit = opt->limit;
	if (a.limit == 0 || a.limit > ctx->lim->max_page)
		a.limit = ctx->lim->max_page;
	if (opt->continue_token != NULL && *opt->continue_token != '\0') {
		/* Token: "n:" + the last name of the previous page. */
		if (b64_decode(opt->continue_token, &after) != KI_OK ||
		    after.len < 2 || memcmp(after.data, "n:", 2) != 0) {
			api_status_fail(&st, 400, "BadRequest", "the continue token "
			    "is malformed: pass metadata.continue from the previous "
			    "page unchanged");
			api_resp_status(r, &st);
			goto out;
		}
	}
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		fail_rc(r, rc, "opening a read transaction");
		goto out;
	}
	ki_buf_printf(&r->body, "{\"kind\":\"%s\",\"apiVersion\":\""
	    API_GROUP_VERSION "\",\"items\":[", k->list_kind);
	rc = store_list(txn, k->id, after.len ? after.data + 2 : NULL,
	    after.len ? after.len - 2 : 0, list_one, &a);
	if (rc != KI_OK && rc != 1) {
		store_abort(txn);
		txn = NULL;
		fail_rc(r, rc, "listing");
		goto out;
	}
	ki_buf_printf(&r->body, "],\"metadata\":{\"resourceVersion\":\"%llu\"",
	    (unsigned long long)store_rv(txn));
	if (a.more) {
		ki_buf tok;

		ki_buf_init(&tok);
		ki_buf_puts(&tok, "n:");
		ki_buf_append(&tok, a.last.data, a.last.len);
		ki_buf_puts(&r->body, ",\"continue\":\"");
		b64_encode(tok.data, tok.len, &r->body);
		ki_buf_putc(&r->body, '"');
		ki_buf_free(&tok);
	}
	ki_buf_puts(&r->body, "}}");
	r->code = r->body.oom ? 503 : 200;
	if (r->body.oom)
		fail_rc(r, KI_ENOMEM, "listing");
out:
	store_abort(txn);
	ki_buf_free(&a.last);
	ki_buf_free(&after);
	api_status_free(&st);
}

/* ---- delete ---- */

void
api_delete(api_ctx *ctx, const api_kind *k, const char *name, size_t len,
	const api_write_opts *opt, api_resp *r)
{
	store_txn *txn = NULL;
	store_obj o;
	struct json_object *meta = NULL;
	ki_buf metab, json, spec, status;
	uint8_t digest[API_DIGEST_LEN];
	store_obj fin;
	char rvs[24];
	int rc;

	ki_buf_init(&metab);
	ki_buf_init(&json);
	ki_buf_init(&spec);
	ki_buf_init(&status);
	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK) {
		fail_rc(r, rc, "opening a write transaction");
		goto out;
	}
	rc = store_get_by_name(txn, k->id, name, len, &o);
	if (rc == KI_ENOTFOUND) {
		not_found(r, k, name, len);
		goto out;
	}
	if (rc != KI_OK) {
		fail_rc(r, rc, "reading the object");
		goto out;
	}
	/* The final state carries the deleting resourceVersion, as in
	 * Kubernetes, for the DELETED event and the answer. */
	ki_buf_append(&metab, o.json + o.meta_off, o.meta_len);
	meta = json_tokener_parse(metab.data ? metab.data : "");
	if (meta == NULL) {
		fail_rc(r, KI_ESTORE, "reading the object");
		goto out;
	}
	snprintf(rvs, sizeof(rvs), "%llu",
	    (unsigned long long)store_next_rv(txn));
	json_object_object_add(meta, "resourceVersion",
	    json_object_new_string(rvs));
	ki_buf_reset(&metab);
	api_jcs_serialize(meta, &metab);
	ki_buf_append(&spec, o.json + o.spec_off, o.spec_len);
	ki_buf_append(&status, o.json + o.status_off, o.status_len);
	memcpy(digest, o.digest, API_DIGEST_LEN);
	memset(&fin, 0, sizeof(fin));
	rc = api_render(k, metab.data, metab.len, spec.data, spec.len,
	    status.data, status.len, &json, &fin);
	if (rc == KI_OK)
		rc = store_delete(txn, k->id, name, len, json.data, json.len);
	if (rc == KI_OK && k->content_identity && k->id != API_RUN)
		rc = refresh_referrers(ctx, txn, digest);
	if (rc != KI_OK) {
		fail_rc(r, rc, "deleting");
		goto out;
	}
	if (ki_buf_append(&r->body, json.data, json.len) != KI_OK) {
		fail_rc(r, KI_ENOMEM, "deleting");
		goto out;
	}
	if (opt->dry_run) {
		r->code = 200;
		goto out;
	}
	{
		uint64_t rv = store_rv(txn);

		rc = store_commit(txn);
		txn = NULL;
		if (rc != KI_OK) {
			ki_buf_reset(&r->body);
			fail_rc(r, rc, "committing the delete");
			goto out;
		}
		if (ctx->committed != NULL)
			ctx->committed(ctx->committed_arg, rv);
	}
	r->code = 200;
out:
	if (meta != NULL)
		json_object_put(meta);
	store_abort(txn);
	ki_buf_free(&metab);
	ki_buf_free(&json);
	ki_buf_free(&spec);
	ki_buf_free(&status);
}
