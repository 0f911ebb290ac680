/* api/upload.c — what every upload shares: the elements of a body (a
 * lone object, a bundle, a List's items), their checks, storing them
 * and the answer that lists what was created. */
#define _GNU_SOURCE /* memmem */
#include "api/upload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/auth.h"
#include "api/labels.h"
#include "api/parts.h"
#include "api/runstatus.h"
#include "api/table.h"
#include "api/threshold.h"

/* ---- upload elements ---- */

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

/* A bundle's parts in the order they are written (references first). */
static const char *const part_order[] = { "protocol", "environment",
	"workload", "implementation", "run" };
#define NPART (sizeof(part_order) / sizeof(part_order[0]))

/* A bundle's parts found remembered (hit: prepared, taken out of the body
 * before parsing), and the bytes of the others (to remember them once
 * prepared). */
typedef struct remembered {
	api_doc hit[NPART];
	const char *val[NPART];
	size_t len[NPART];
} remembered;

static void
remembered_free(remembered *rem)
{
	for (size_t i = 0; i < NPART; i++)
		api_doc_free(&rem->hit[i]);
}

/* When body is a bundle, looks up its parts but the run (api/parts.h;
 * prefix: the bundle's path); with a hit, returns 1 and the body without
 * the parts found in *rest. */
static int
remember_parts(const char *body, size_t len, int max_depth,
	const char *prefix, remembered *rem, ki_buf *rest)
{
	api_member m[API_MAX_MEMBERS];
	size_t n, hits = 0;
	int run = 0, first = 1;
	char path[64];

	memset(rem, 0, sizeof(*rem));
	if (api_members(body, len, max_depth, m, &n) != 0)
		return 0;
	for (size_t j = 0; j < n; j++)
		run |= m[j].key_len == 3 && memcmp(m[j].key, "run", 3) == 0;
	if (!run)
		return 0;
	for (size_t j = 0; j < n; j++) {
		for (size_t i = 0; i + 1 < NPART; i++) {
			if (strlen(part_order[i]) != m[j].key_len ||
			    memcmp(m[j].key, part_order[i], m[j].key_len) != 0)
				continue;
			snprintf(path, sizeof(path), "%s%s%s", prefix,
			    *prefix ? "." : "", part_order[i]);
			if (api_part_get(part_order[i], m[j].val, m[j].val_len,
			    path, &rem->hit[i])) {
				hits++;
				m[j].key = NULL;   /* not parsed */
			} else {
				rem->val[i] = m[j].val;
				rem->len[i] = m[j].val_len;
			}
			break;
		}
	}
	if (hits == 0)
		return 0;
	ki_buf_putc(rest, '{');
	for (size_t j = 0; j < n; j++) {
		if (m[j].key == NULL)
			continue;
		if (!first)
			ki_buf_putc(rest, ',');
		first = 0;
		ki_buf_append(rest, m[j].start,
		    (size_t)(m[j].val + m[j].val_len - m[j].start));
	}
	ki_buf_putc(rest, '}');
	if (rest->oom) {
		remembered_free(rem);
		memset(rem, 0, sizeof(*rem));
		return 0;
	}
	return 1;
}

/* Parses text into *out; when it is a bundle, its remembered parts are
 * taken out first and into rem (see remember_parts). On failure st says
 * what is wrong with text as sent. */
static int
parse_remembering(api_ctx *ctx, const char *text, size_t len,
	const char *prefix, remembered *rem, struct json_object **out,
	api_status *st)
{
	ki_buf rest;

	*out = NULL;
	ki_buf_init(&rest);
	if (remember_parts(text, len, ctx->lim->max_depth, prefix, rem, &rest) &&
	    api_json_parse(rest.data, rest.len, ctx->lim->max_depth, out, st) !=
	    KI_OK) {
		api_status_free(st);
		api_status_init(st);
		remembered_free(rem);
		*out = NULL;
	}
	ki_buf_free(&rest);
	if (*out != NULL)
		return KI_OK;
	return api_json_parse(text, len, ctx->lim->max_depth, out, st);
}

/* Fills in the run's spec (borrowed, changed in place) the digest of each
 * part the bundle carries and the run does not name: ok[j] says whether
 * e->docs[j] was prepared without a problem. A digest the run names is
 * left as sent (and checked against the part afterwards); one of a part
 * that has a problem is not made up. */
static void
fill_run_digests(element *e, const int *ok, struct json_object *run)
{
	struct json_object *spec;

	if (!json_object_is_type(run, json_type_object) ||
	    !json_object_object_get_ex(run, "spec", &spec) ||
	    !json_object_is_type(spec, json_type_object))
		return;
	for (size_t j = 0; j < e->ndocs; j++) {
		const api_kind *k = e->docs[j].kind;
		struct json_object *s;

		if (!ok[j] || k == NULL || k->ref_field == NULL ||
		    k->id == API_RUN ||
		    json_object_object_get_ex(spec, k->ref_field, NULL))
			continue;
		s = json_object_new_string(e->docs[j].digest_str);
		if (s == NULL || json_object_object_add(spec, k->ref_field,
		    s) != 0)
			json_object_put(s);
	}
}

/* A create takes no resourceVersion: the server gives one, and a client
 * that sends one (an object read back and posted again) means to write
 * at that version, which a create cannot honour. kube-apiserver answers
 * 400, as here; "" and null are no version. v is borrowed; path prefixes
 * the field named in e->st. */
static void
refuse_create_rv(element *e, struct json_object *v, const char *path)
{
	struct json_object *m, *rv;
	char f[96];

	if (!json_object_is_type(v, json_type_object) ||
	    !json_object_object_get_ex(v, "metadata", &m) ||
	    !json_object_is_type(m, json_type_object) ||
	    !json_object_object_get_ex(m, "resourceVersion", &rv) || rv == NULL ||
	    (json_object_is_type(rv, json_type_string) &&
	    json_object_get_string_len(rv) == 0))
		return;
	snprintf(f, sizeof(f), "%s%smetadata.resourceVersion", path,
	    *path ? "." : "");
	if (e->st.code == 0)
		api_status_fail(&e->st, 400, "BadRequest", "%s%sresourceVersion "
		    "should not be set on objects to be created", path,
		    *path ? ": " : "");
	api_status_cause(&e->st, "FieldValueForbidden", f, "Forbidden: the "
	    "server sets it (send the object without it, or change the stored "
	    "one with a PUT or PATCH)");
}

/* Turns one JSON value (consumed) into e's documents: a bundle, or one
 * object (of kind expect, when non-NULL). prefix prefixes every cause.
 * rem (may be NULL): the bundle's parts taken from memory, and the bytes
 * of the others. */
static void
prepare_element(element *e, struct json_object *v, const char *prefix,
	const api_kind *expect, int allow_bundle, remembered *rem)
{
	api_doc *run = NULL;
	int ok[MAX_PARTS] = { 0 };
	char p[64];

	if (!allow_bundle || !is_bundle(v)) {
		struct json_object *spec = NULL;

		refuse_create_rv(e, v, prefix);
		api_doc_prepare(&e->docs[0], v, prefix, expect, &e->st, &e->unk);
		e->ndocs = 1;
		/* What a Threshold's schema cannot say (api/threshold.c). */
		if (e->docs[0].kind != NULL &&
		    e->docs[0].kind->id == API_THRESHOLD &&
		    json_object_object_get_ex(v, "spec", &spec) &&
		    json_object_is_type(spec, json_type_object)) {
			snprintf(p, sizeof(p), "%s%sspec", prefix, *prefix ? "." : "");
			api_validate_threshold(spec, p, &e->st);
		}
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
	for (size_t i = 0; i < NPART; i++) {
		struct json_object *part;
		const api_kind *k = api_kind_by_part(part_order[i]);
		size_t causes = e->st.ncauses, unknown = e->unk.n;

		if (rem != NULL && rem->hit[i].kind != NULL) {
			ok[e->ndocs] = 1;
			e->docs[e->ndocs++] = rem->hit[i];
			memset(&rem->hit[i], 0, sizeof(rem->hit[i]));
			continue;
		}
		if (!json_object_object_get_ex(v, part_order[i], &part))
			continue;
		snprintf(p, sizeof(p), "%s%s%s", prefix, *prefix ? "." : "",
		    part_order[i]);
		/* A run may leave out the digests of the parts it comes with:
		 * the server computes them, as it would check them. */
		if (k->id == API_RUN)
			fill_run_digests(e, ok, part);
		refuse_create_rv(e, part, p);
		api_doc_prepare(&e->docs[e->ndocs], json_object_get(part), p, k,
		    &e->st, &e->unk);
		ok[e->ndocs] = e->st.code == 0 && e->st.ncauses == causes &&
		    e->docs[e->ndocs].kind == k;
		if (rem != NULL && rem->val[i] != NULL && e->st.code == 0 &&
		    e->st.ncauses == causes && e->unk.n == unknown &&
		    e->docs[e->ndocs].kind == k)
			api_part_put(part_order[i], rem->val[i], rem->len[i],
			    &e->docs[e->ndocs]);
		if (k->id == API_RUN)
			run = &e->docs[e->ndocs];
		e->ndocs++;
	}
	json_object_put(v);
	if (run == NULL) {
		/* Shared objects go to their own collections: a bundle exists
		 * to store a run with what it references. */
		snprintf(p, sizeof(p), "%s%srun", prefix, *prefix ? "." : "");
		api_status_cause(&e->st, "FieldValueRequired", p, "Required value: "
		    "a bundle carries a run; upload a protocol, environment, "
		    "workload or implementation alone to its own collection");
	}
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

static int store_object(api_ctx *ctx, store_txn *txn, const api_kind *k,
	struct json_object *meta, const char *spec, size_t spec_len,
	struct json_object *spec_tree,
	const uint8_t digest[API_DIGEST_LEN], const uint8_t *refs, size_t nrefs,
	const char *name, const char *natkey, size_t natkey_len,
	struct json_object *extra_status, const api_run_refs *given,
	api_prerender *pre, const ki_buf *prev_status);

/* Renders and stores one object of kind k: meta (borrowed; its
 * resourceVersion is set here, and for runs its derived labels), the
 * canonical spec bytes, the digest and references. Every input must stay
 * valid across the put: none may point into the map. */
/* Merges the members of extra into the status text in st (rewritten). */
static int
merge_status(ki_buf *st, struct json_object *extra)
{
	struct json_object *o;
	int rc;

	if (extra == NULL || json_object_object_length(extra) == 0)
		return KI_OK;
	if ((o = api_json_parse_len(st->data, st->len)) == NULL)
		return KI_ENOMEM;
	json_object_object_foreach(extra, key, val) {
		struct json_object *cp = NULL;

		if (strcmp(key, "digest") == 0 || strcmp(key, "references") == 0)
			continue;
		if (key[0] == 'c' && strcmp(key, "conditions") == 0) {
			/* Kept conditions join the computed ones. */
			struct json_object *cur = json_object_object_get(o, key);

			if (cur != NULL && json_object_is_type(val, json_type_array)) {
				for (size_t i = 0; i < json_object_array_length(val); i++)
					json_object_array_add(cur, json_object_get(
					    json_object_array_get_idx(val, i)));
				continue;
			}
		}
		if (json_object_deep_copy(val, &cp, NULL) != 0) {
			json_object_put(o);
			return KI_ENOMEM;
		}
		json_object_object_add(o, key, cp);
	}
	ki_buf_reset(st);
	rc = api_jcs_serialize(o, st);
	json_object_put(o);
	return rc;
}

int
api_store_object(api_ctx *ctx, store_txn *txn, const api_kind *k,
	struct json_object *meta, const char *spec, size_t spec_len,
	const uint8_t digest[API_DIGEST_LEN], const uint8_t *refs, size_t nrefs,
	const char *name, const char *natkey, size_t natkey_len,
	struct json_object *extra_status)
{
	return store_object(ctx, txn, k, meta, spec, spec_len, NULL, digest,
	    refs, nrefs, name, natkey, natkey_len, extra_status, NULL, NULL,
	    NULL);
}

/* api_store_object, where spec_tree (borrowed, may be NULL) is the tree
 * whose canonical form spec is: derived labels and plausibility read the
 * same strings and numbers from it as from spec parsed again. With pre
 * set, txn may be a read transaction: the object is rendered with the
 * resourceVersion "0" into pre (which owns the buffers) and not stored;
 * put_prerendered() stores it later. */
static int
store_object(api_ctx *ctx, store_txn *txn, const api_kind *k,
	struct json_object *meta, const char *spec, size_t spec_len,
	struct json_object *spec_tree,
	const uint8_t digest[API_DIGEST_LEN], const uint8_t *refs, size_t nrefs,
	const char *name, const char *natkey, size_t natkey_len,
	struct json_object *extra_status, const api_run_refs *given,
	api_prerender *pre, const ki_buf *prev_status)
{
	struct json_object *labels = NULL, *spec_obj = NULL;
	ki_buf metab, status, json, lblob, rvs;
	api_plausibility pl;
	api_run_refs rr;
	const api_run_refs *ref_view = &rr;  /* rr, or the caller's */
	store_obj o;
	int rc;

	memset(&pl, 0, sizeof(pl));
	memset(&rr, 0, sizeof(rr));
	ki_buf_init(&metab);
	ki_buf_init(&status);
	ki_buf_init(&json);
	ki_buf_init(&lblob);
	ki_buf_init(&rvs);
	memset(&o, 0, sizeof(o));
	o.kind = k->id;
	o.rv = pre != NULL ? 0 : store_next_rv(txn);
	if (ki_buf_put_u64(&rvs, o.rv) != KI_OK) {
		rc = KI_ENOMEM;
		goto out;
	}
	json_object_object_add(meta, "resourceVersion",
	    json_object_new_string_len(rvs.data, (int)rvs.len));
	if (!json_object_object_get_ex(meta, "labels", &labels) ||
	    labels == NULL) {
		labels = json_object_new_object();
		if (labels == NULL) {
			rc = KI_ENOMEM;
			goto out;
		}
		json_object_object_add(meta, "labels", labels);
	}
	if (k->id == API_RUN) {
		if (spec_tree != NULL)
			spec_obj = json_object_get(spec_tree);
		else if ((spec_obj = api_json_parse_len(spec, spec_len)) == NULL) {
			rc = KI_ESTORE;
			goto out;
		}
		/* Labels, plausibility and status read the same references:
		 * loaded once, here or by the caller. */
		if (given == NULL)
			api_run_refs_load(txn, refs, nrefs, &rr);
		else
			ref_view = given;
		rc = api_run_derive_labels_from(spec_obj, ref_view, labels);
		if (rc != KI_OK)
			goto out;
		api_plausibility_eval_from(spec_obj, ref_view, &pl);
		json_object_object_add(labels, "verdict", json_object_new_string(
		    !pl.known ? "unknown" : pl.implausible ? "implausible" :
		    "plausible"));
	}
	if (json_object_object_length(labels) == 0)
		json_object_object_del(meta, "labels");
	else if ((rc = api_labels_encode(labels, &lblob)) != KI_OK)
		goto out;
	/* Its facets the store computes from kind and labels
	 * (api_store_facets, given at store_open). */
	if ((rc = api_jcs_serialize(meta, &metab)) != KI_OK)
		goto out;
	rc = api_compute_status(k, digest, refs, nrefs, ref_view,
	    k->id == API_RUN ? &pl : NULL, ctx->now(), &status);
	if (rc == KI_OK)
		rc = merge_status(&status, extra_status);
	/* A condition whose status did not change keeps the time it last
	 * changed. */
	if (rc == KI_OK && prev_status != NULL)
		rc = api_conditions_keep(&status, prev_status->data,
		    prev_status->len);
	if (rc != KI_OK)
		goto out;
	rc = api_render(k, metab.data, metab.len, spec, spec_len, status.data,
	    status.len, &json, &o);
	if (rc != KI_OK)
		goto out;
	memcpy(o.digest, digest, API_DIGEST_LEN);
	o.name = name;
	o.name_len = strlen(name);
	o.natkey = natkey_len ? natkey : NULL;
	o.natkey_len = natkey_len;
	o.refs = nrefs ? refs : NULL;
	o.nrefs = nrefs;
	o.labels = lblob.len ? lblob.data : NULL;
	o.labels_len = lblob.len;
	if (pre != NULL) {
		static const char pat[] = "\"resourceVersion\":\"0\"";
		const char *at = memmem(o.json + o.meta_off, o.meta_len, pat,
		    sizeof(pat) - 1);

		/* In canonical metadata this is the key itself: inside a string
		 * value every quote would be escaped. */
		if (at == NULL) {
			rc = KI_ESTORE;
			goto out;
		}
		pre->rv_at = (size_t)(at - o.json) + sizeof(pat) - 3;
		pre->o = o;
		pre->json = json;
		pre->labels = lblob;
		ki_buf_init(&json);
		ki_buf_init(&lblob);
		pre->o.json = pre->json.data;
		pre->o.labels = pre->labels.len ? pre->labels.data : NULL;
		rc = KI_OK;
		goto out;
	}
	rc = store_put(txn, &o);
out:
	api_run_refs_free(&rr);
	if (spec_obj != NULL)
		json_object_put(spec_obj);
	ki_buf_free(&rvs);
	ki_buf_free(&metab);
	ki_buf_free(&status);
	ki_buf_free(&json);
	ki_buf_free(&lblob);
	return rc;
}

void
stored_copy_free(stored_copy *c)
{
	if (c->meta != NULL)
		json_object_put(c->meta);
	ki_buf_free(&c->spec);
	ki_buf_free(&c->name);
	ki_buf_free(&c->natkey);
	ki_buf_free(&c->refs);
	ki_buf_free(&c->status);
	memset(c, 0, sizeof(*c));
}

int
stored_copy_make(stored_copy *c, const store_obj *o)
{
	memset(c, 0, sizeof(*c));
	c->kind = api_kind_by_id(o->kind);
	if (c->kind == NULL)
		return KI_ESTORE;
	c->meta = api_json_parse_len(o->json + o->meta_off, o->meta_len);
	if (c->meta == NULL)
		return KI_ESTORE;
	ki_buf_append(&c->spec, o->json + o->spec_off, o->spec_len);
	ki_buf_append(&c->status, o->json + o->status_off, o->status_len);
	ki_buf_append(&c->name, o->name, o->name_len);
	ki_buf_append(&c->natkey, o->natkey ? o->natkey : "", o->natkey_len);
	ki_buf_append(&c->refs, o->refs ? (const char *)o->refs : "",
	    o->nrefs * API_DIGEST_LEN);
	memcpy(c->digest, o->digest, API_DIGEST_LEN);
	c->nrefs = o->nrefs;
	c->rv = o->rv;
	if (c->spec.oom || c->name.oom || c->natkey.oom || c->refs.oom ||
	    c->status.oom)
		return KI_ENOMEM;
	return KI_OK;
}

/* The status members a re-render keeps: a run's verification summary;
 * everything a Verification's controller wrote. */
static struct json_object *
kept_status(const stored_copy *c)
{
	struct json_object *old, *kept;

	if (c->kind->id != API_RUN && c->kind->id != API_VERIFICATION)
		return NULL;
	if ((old = api_json_parse_len(c->status.data, c->status.len)) == NULL)
		return NULL;
	if (c->kind->id == API_VERIFICATION) {
		json_object_object_del(old, "digest");
		return old;
	}
	kept = json_object_new_object();
	if (kept != NULL && json_object_object_get(old, "verification") != NULL)
		json_object_object_add(kept, "verification", json_object_get(
		    json_object_object_get(old, "verification")));
	if (kept != NULL)
		api_threshold_keep(old, kept);
	json_object_put(old);
	return kept;
}

int
stored_copy_put(api_ctx *ctx, store_txn *txn, stored_copy *c,
	struct json_object *extra)
{
	struct json_object *kept = extra == NULL ? kept_status(c) : NULL;
	int rc;

	/* A run's judgement by Thresholds stays whatever else is written. */
	if (extra != NULL && c->kind->id == API_RUN &&
	    json_object_object_get(extra, "thresholds") == NULL) {
		struct json_object *old = api_json_parse_len(c->status.data,
		    c->status.len);

		if (old != NULL && json_object_object_get(old, "thresholds") !=
		    NULL && (kept = json_object_new_object()) != NULL) {
			json_object_object_foreach(extra, key, val)
				json_object_object_add(kept, key, json_object_get(val));
			api_threshold_keep(old, kept);
			extra = NULL;
		}
		if (old != NULL)
			json_object_put(old);
	}

	rc = store_object(ctx, txn, c->kind, c->meta, c->spec.data,
	    c->spec.len, NULL, c->digest, (const uint8_t *)c->refs.data,
	    c->nrefs, c->name.data, c->natkey.data, c->natkey.len,
	    extra != NULL ? extra : kept, NULL, NULL, &c->status);
	if (kept != NULL)
		json_object_put(kept);
	return rc;
}

/* Re-renders a stored object with a fresh status, labels and the next
 * rv. */
static int
rerender(api_ctx *ctx, store_txn *txn, const store_obj *o)
{
	stored_copy c;
	int rc = stored_copy_make(&c, o);

	/* o dies with the next write: only the copy is used below. */
	if (rc == KI_OK)
		rc = stored_copy_put(ctx, txn, &c, NULL);
	stored_copy_free(&c);
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
int
refresh_referrers(api_ctx *ctx, store_txn *txn,
	const uint8_t digest[API_DIGEST_LEN])
{
	refresh_arg a = { ctx, txn, KI_OK };
	int rc = store_each_referrer(txn, digest, refresh_one, &a);

	return a.rc != KI_OK ? a.rc : rc;
}

/* "a" or "an" before a kind's name. */
static const char *
article(const char *word)
{
	return word[0] != '\0' && strchr("AEIOU", word[0]) != NULL ? "an" : "a";
}

/* Does the stored run o (borrowed) have sourceNative.source equal to
 * source? Read from its stored spec. */
static int
run_has_source(const store_obj *o, const char *source)
{
	struct json_object *spec, *sn = NULL, *sv = NULL;
	int same = 0;

	spec = api_json_parse_len(o->json + o->spec_off, o->spec_len);
	if (json_object_object_get_ex(spec, "sourceNative", &sn) &&
	    json_object_object_get_ex(sn, "source", &sv) &&
	    json_object_is_type(sv, json_type_string))
		same = (size_t)json_object_get_string_len(sv) == strlen(source) &&
		    memcmp(json_object_get_string(sv), source,
		    strlen(source)) == 0;
	json_object_put(spec);
	return same;
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
	const uint64_t *ahead = NULL;
	uint64_t changes;
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
	memset(d->ref_ids, 0, sizeof(d->ref_ids));
	/* What the rendering ahead found resolved is still so when no object
	 * was replaced or deleted since; one it did not find may have come. */
	if (d->pre != NULL && store_changes(txn, &changes) == KI_OK &&
	    changes == d->pre->changes)
		ahead = d->pre->ref_ids;
	for (size_t i = 0; i < d->nrefs; i++) {
		const api_kind *want = api_kind_by_id(ref_kinds[i]);
		const api_kind *got;

		if (ahead != NULL && i < API_NREFS && ahead[i] != 0) {
			d->ref_ids[i] = ahead[i];
			continue;
		}
		rc = store_get_by_digest(txn, d->refs[i], &o);
		if (rc == KI_ENOTFOUND)
			continue;
		if (rc != KI_OK)
			goto store_fail;
		if (o.kind == want->id) {
			if (i < API_NREFS)
				d->ref_ids[i] = o.seq;
			continue;
		}
		got = api_kind_by_id(o.kind);
		{
			const char *gk = got ? got->kind : "object";
			char f[96];

			api_status_fail(st, 422, "Invalid", "%s%s%s.%s names %s %s "
			    "(\"%.*s\"), not %s %s", d->path, *d->path ? ": " : "",
			    "spec", want->ref_field, article(gk), gk,
			    (int)o.name_len, o.name, article(want->kind), want->kind);
			snprintf(f, sizeof(f), "%s%sspec.%s", d->path,
			    *d->path ? "." : "", want->ref_field);
			api_status_cause(st, "FieldValueInvalid", f, "Invalid value: "
			    "the digest names %s %s, not %s %s", article(gk), gk,
			    article(want->kind), want->kind);
		}
		api_status_details(st, d->kind->kind, d->name);
		return KI_EINVAL;
	}
	if (d->kind->id == API_VERIFICATION) {
		struct json_object *rn = json_object_object_get(
		    json_object_object_get(d->obj, "spec"), "runName");
		const char *run = json_object_get_string(rn);

		if (run == NULL || store_get_by_name(txn, API_RUN, run, strlen(run),
		    &o) != KI_OK) {
			char f[96];

			snprintf(f, sizeof(f), "%s%sspec.runName", d->path,
			    *d->path ? "." : "");
			api_status_fail(st, 422, "Invalid", "Verification \"%s\" is "
			    "invalid: spec.runName: no BenchmarkRun \"%.253s\" is stored",
			    d->name, run ? run : "");
			api_status_cause(st, "FieldValueNotFound", f, "Not found: "
			    "\"%.253s\": no BenchmarkRun of that name is stored",
			    run ? run : "");
			api_status_details(st, d->kind->kind, d->name);
			return KI_EINVAL;
		}
		if (d->scope_source != NULL &&
		    !run_has_source(&o, d->scope_source)) {
			api_status_fail(st, 403, "Forbidden", "this token may verify "
			    "only runs whose sourceNative.source is \"%s\", and "
			    "BenchmarkRun \"%.253s\" is not one", d->scope_source, run);
			api_status_details(st, d->kind->kind, d->name);
			return KI_EINVAL;
		}
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

/* Stores a prerendered object with this transaction's resourceVersion
 * written into it. */
static int
put_prerendered(store_txn *txn, const api_prerender *p)
{
	store_obj o = p->o;
	ki_buf json, rvs;
	size_t delta;
	int rc;

	ki_buf_init(&json);
	ki_buf_init(&rvs);
	o.rv = store_next_rv(txn);
	ki_buf_put_u64(&rvs, o.rv);
	ki_buf_append(&json, p->json.data, p->rv_at);
	ki_buf_append(&json, rvs.data, rvs.len);
	ki_buf_append(&json, p->json.data + p->rv_at + 1,
	    p->json.len - p->rv_at - 1);
	if (json.oom || rvs.oom) {
		rc = KI_ENOMEM;
		goto out;
	}
	delta = rvs.len - 1;
	o.json = json.data;
	o.json_len = json.len;
	o.meta_len += (uint32_t)delta;
	o.spec_off += (uint32_t)delta;
	o.status_off += (uint32_t)delta;
	rc = store_put(txn, &o);
out:
	ki_buf_free(&json);
	ki_buf_free(&rvs);
	return rc;
}

/* Renders d ahead of its write, reading the store through txn, when it is
 * new there (its name, content and natural key unknown); the write uses
 * the rendering if its references still resolve to the same objects.
 * Failing quietly is fine: the write renders it then. */
void
prerender_doc(api_ctx *ctx, store_txn *txn, api_doc *d)
{
	struct json_object *doc_meta = NULL, *meta;
	api_prerender *p;
	api_run_refs rr;
	store_obj o;

	/* A remembered part (api/parts.h) was seen before: it is most likely
	 * stored already, and if it is not the write renders it. */
	if (d->kind->id == API_VERIFICATION || d->pre != NULL || d->raw.len > 0 ||
	    store_get_by_name(txn, d->kind->id, d->name, strlen(d->name), &o) !=
	    KI_ENOTFOUND ||
	    (d->kind->content_identity &&
	    store_get_by_digest(txn, d->digest, &o) != KI_ENOTFOUND) ||
	    (d->natkey.len > 0 && store_get_by_natkey(txn, d->kind->id,
	    d->natkey.data, d->natkey.len, &o) != KI_ENOTFOUND))
		return;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return;
	/* The references are read once: for the ids the write compares
	 * (what this rendering read) and for the rendering itself. */
	api_run_refs_load(txn, d->refs[0], d->nrefs, &rr);
	for (size_t i = 0; rr.loaded && i < API_NREFS; i++)
		p->ref_ids[i] = rr.resolved[i] ? rr.seq[i] : 0;
	if (store_changes(txn, &p->changes) != KI_OK)
		p->changes = UINT64_MAX;   /* never the write's */
	json_object_object_get_ex(d->obj, "metadata", &doc_meta);
	if (rr.rc != KI_OK ||
	    (meta = api_new_metadata(doc_meta, ctx->now())) == NULL) {
		/* The write renders it then. */
		api_prerender_free(p);
		api_run_refs_free(&rr);
		return;
	}
	if (store_object(ctx, txn, d->kind, meta, d->canon.data + d->spec_off,
	    d->spec_len, json_object_object_get(d->obj, "spec"), d->digest,
	    d->refs[0], d->nrefs, d->name, d->natkey.data, d->natkey.len, NULL,
	    &rr, p, NULL) != KI_OK) {
		api_prerender_free(p);
		p = NULL;
	}
	json_object_put(meta);
	api_run_refs_free(&rr);
	d->pre = p;
}

static int
put_doc(api_ctx *ctx, store_txn *txn, api_doc *d)
{
	struct json_object *doc_meta = NULL, *meta, *extra = NULL;
	int rc, judged = d->kind->id == API_RUN && api_threshold_any(txn);

	/* A run a Threshold may judge is rendered here, with its series'
	 * history as this transaction sees it. */
	if (!judged && d->pre != NULL && memcmp(d->pre->ref_ids, d->ref_ids,
	    sizeof(d->ref_ids)) == 0) {
		/* What the rendering read is what the store holds now. */
		if ((rc = put_prerendered(txn, d->pre)) != KI_OK)
			return rc;
		goto stored;
	}
	if (api_doc_obj(d) == NULL)
		return KI_ENOMEM;
	json_object_object_get_ex(d->obj, "metadata", &doc_meta);
	if ((meta = api_new_metadata(doc_meta, ctx->now())) == NULL)
		return KI_ENOMEM;
	if (d->kind->id == API_VERIFICATION) {
		extra = json_object_new_object();
		if (extra != NULL)
			json_object_object_add(extra, "phase",
			    json_object_new_string("Pending"));
	}
	if (judged && (rc = api_threshold_judge(txn, json_object_object_get(
	    d->obj, "spec"), d->refs[0], d->nrefs, d->name, meta, &extra,
	    ctx->now())) != KI_OK) {
		json_object_put(meta);
		return rc;
	}
	rc = store_object(ctx, txn, d->kind, meta, d->canon.data + d->spec_off,
	    d->spec_len, json_object_object_get(d->obj, "spec"), d->digest,
	    d->refs[0], d->nrefs, d->name, d->natkey.data, d->natkey.len, extra,
	    NULL, NULL, NULL);
	if (extra != NULL)
		json_object_put(extra);
	json_object_put(meta);
	if (rc != KI_OK)
		return rc;
stored:
	d->rv = store_next_rv(txn) - 1;
	if (d->kind->content_identity && d->kind->id != API_RUN)
		rc = refresh_referrers(ctx, txn, d->digest);
	return rc;
}

/* Checks every document of e, then writes the new ones. A failure before
 * the first put leaves the transaction as it was (e->failed); a failure
 * after it returns the code, and the caller must abort the transaction. */
int
write_element(api_ctx *ctx, store_txn *txn, element *e)
{
	int rc, written = 0;

	for (size_t i = 0; i < e->ndocs; i++) {
		if (check_doc(txn, &e->docs[i], &e->st) != KI_OK) {
			e->failed = 1;
			return KI_OK;
		}
	}
	for (size_t i = 0; i < e->ndocs; i++) {
		api_doc *d = &e->docs[i];

		/* Parts of one element can collide only with each other: once
		 * one is written, the ones after it are checked again. */
		if (written && (rc = check_doc(txn, d, &e->st)) != KI_OK) {
			e->failed = 1;
			return rc == KI_EEXIST ? KI_ECONFLICT : rc;
		}
		if (!d->created)
			continue;
		written = 1;
		if ((rc = put_doc(ctx, txn, d)) != KI_OK) {
			api_status_from_rc(&e->st, rc, "writing to the store");
			e->failed = 1;
			return rc;
		}
	}
	return KI_OK;
}

/* ---- responses ---- */

int
copy_stored(store_txn *txn, const api_kind *k, const char *name,
	ki_buf *out)
{
	store_obj o;
	int rc = store_get_by_name(txn, k->id, name, strlen(name), &o);

	if (rc == KI_OK)
		rc = ki_buf_append(out, o.json, o.json_len);
	return rc;
}

/* Counts e's outcome into created / unchanged / failed. */
void
count_element(const element *e, size_t *created, size_t *unchanged,
	size_t *failed)
{
	if (e->failed) {
		(*failed)++;
		return;
	}
	for (size_t j = 0; j < e->ndocs; j++) {
		if (e->docs[j].created)
			(*created)++;
		else
			(*unchanged)++;
	}
}

/* Appends ,? {"index":N, the start of one item. */
static void
item_head(ki_buf *out, int first, long index)
{
	if (!first)
		ki_buf_putc(out, ',');
	ki_buf_puts(out, "{\"index\":");
	if (index < 0) {
		ki_buf_putc(out, '-');
		ki_buf_put_u64(out, (uint64_t)0 - (uint64_t)index);
	} else {
		ki_buf_put_u64(out, (uint64_t)index);
	}
	ki_buf_putc(out, ',');
}

/* Appends e's items of an UploadResult; *first is cleared after the
 * first. */
void
render_items(const element *e, int *first, ki_buf *out)
{
	if (e->failed) {
		item_head(out, *first, e->index);
		ki_buf_puts(out, "\"result\":\"failed\",\"status\":");
		api_status_render(&e->st, out);
		ki_buf_putc(out, '}');
		*first = 0;
		return;
	}
	for (size_t j = 0; j < e->ndocs; j++) {
		const api_doc *d = &e->docs[j];

		item_head(out, *first, e->index);
		if (d->path[0] != '\0' && d->kind->bundle_part != NULL &&
		    e->ndocs > 1) {
			ki_buf_puts(out, "\"part\":\"");
			ki_buf_puts(out, d->kind->bundle_part);
			ki_buf_puts(out, "\",");
		}
		ki_buf_puts(out, "\"kind\":\"");
		ki_buf_puts(out, d->kind->kind);
		ki_buf_puts(out, "\",\"name\":");
		ki_buf_json_string(out, d->stored_name ? d->stored_name : "",
		    d->stored_name ? strlen(d->stored_name) : 0);
		ki_buf_puts(out, ",\"digest\":\"");
		ki_buf_puts(out, d->digest_str);
		ki_buf_puts(out, d->created ? "\",\"result\":\"created\"}" :
		    "\",\"result\":\"unchanged\"}");
		*first = 0;
	}
}

/* The UploadResult up to its first item. */
void
render_result_head(uint64_t rv, int dry_run, size_t created,
	size_t unchanged, size_t failed, ki_buf *out)
{
	ki_buf_puts(out, "{\"apiVersion\":\"" API_GROUP_VERSION "\","
	    "\"kind\":\"UploadResult\",\"metadata\":{\"resourceVersion\":\"");
	ki_buf_put_u64(out, rv);
	ki_buf_puts(out, dry_run ? "\"},\"dryRun\":true,\"summary\":{\"created\":" :
	    "\"},\"summary\":{\"created\":");
	ki_buf_put_u64(out, created);
	ki_buf_puts(out, ",\"unchanged\":");
	ki_buf_put_u64(out, unchanged);
	ki_buf_puts(out, ",\"failed\":");
	ki_buf_put_u64(out, failed);
	ki_buf_puts(out, "},\"items\":[");
}

void
render_result(const element *els, size_t n, uint64_t rv, int dry_run,
	ki_buf *out)
{
	size_t created = 0, unchanged = 0, failed = 0;
	int first = 1;

	for (size_t i = 0; i < n; i++)
		count_element(&els[i], &created, &unchanged, &failed);
	render_result_head(rv, dry_run, created, unchanged, failed, out);
	for (size_t i = 0; i < n; i++)
		render_items(&els[i], &first, out);
	ki_buf_puts(out, "]}");
}

/* ---- the elements of a body ---- */

element *
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

void
upload_free(upload *u)
{
	for (size_t i = 0; i < u->n; i++)
		element_free(&u->els[i]);
	free(u->els);
}

/* Adds NDJSON line number line, [p, p + n), to u as one element. */
int
add_line(api_ctx *ctx, upload *u, const char *p, size_t n, long line)
{
	struct json_object *v;
	element *e;
	char prefix[32];
	remembered rem;

	if ((e = upload_add(u)) == NULL)
		return KI_ENOMEM;
	e->index = line;
	snprintf(prefix, sizeof(prefix), "[%ld]", line);
	if (parse_remembering(ctx, p, n, prefix, &rem, &v, &e->st) != KI_OK) {
		char *m = e->st.message;

		e->st.message = NULL;
		api_status_fail(&e->st, e->st.code, e->st.reason, "line %ld: %s",
		    line, m ? m : "");
		free(m);
		e->failed = 1;
		return KI_OK;
	}
	prepare_element(e, v, prefix, NULL, 1, &rem);
	remembered_free(&rem);   /* what prepare_element did not take */
	return KI_OK;
}

static int upload_root(api_ctx *ctx, const api_kind *coll,
	struct json_object *root, upload *u, int *bulk, api_status *st,
	remembered *rem);

/* Splits the body into elements. Returns 0, or a failure on st. */
int
parse_upload(api_ctx *ctx, const api_kind *coll, const char *body, size_t len,
	int ndjson, upload *u, int *bulk, api_status *st)
{
	struct json_object *root = NULL;
	remembered rem;
	int rc;

	*bulk = ndjson;
	if (ndjson) {
		size_t pos = 0;
		long line = 0;

		while (pos < len) {
			const char *nl = memchr(body + pos, '\n', len - pos);
			size_t end = nl ? (size_t)(nl - body) : len, s = pos;

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
			if (add_line(ctx, u, body + s, end - s, line) != KI_OK)
				return KI_ENOMEM;
		}
		return KI_OK;
	}
	/* A bundle's remembered parts are not parsed again (a bundle goes
	 * to the runs only). */
	memset(&rem, 0, sizeof(rem));
	if ((coll->id == API_RUN ?
	    parse_remembering(ctx, body, len, "", &rem, &root, st) :
	    api_json_parse(body, len, ctx->lim->max_depth, &root, st)) != KI_OK)
		return KI_EINVAL;
	rc = upload_root(ctx, coll, root, u, bulk, st, &rem);
	remembered_free(&rem);   /* what prepare_element did not take */
	return rc;
}

/* A List's own members, as a bundle's are: kind, apiVersion (v1, as
 * kubectl sends it, or none), metadata (a ListMeta, read-only) and items;
 * any other, or another apiVersion, fills st (400) rather than being
 * passed over. root is borrowed. */
static int
list_wrapper_check(struct json_object *root, api_status *st)
{
	struct json_object *av;

	json_object_object_foreach(root, key, val) {
		(void)val;
		if (strcmp(key, "kind") != 0 && strcmp(key, "apiVersion") != 0 &&
		    strcmp(key, "metadata") != 0 && strcmp(key, "items") != 0) {
			api_status_fail(st, 400, "BadRequest", "a List holds kind, "
			    "apiVersion, metadata and items, not \"%.64s\"", key);
			api_status_cause(st, "FieldValueNotSupported", key,
			    "Unsupported value: not a member of a List");
			return KI_EINVAL;
		}
	}
	if (json_object_object_get_ex(root, "apiVersion", &av) &&
	    (!json_object_is_type(av, json_type_string) ||
	    strcmp(json_object_get_string(av), "v1") != 0)) {
		api_status_fail(st, 400, "BadRequest", "a List's apiVersion is "
		    "\"v1\", not %.64s", json_object_to_json_string(av));
		api_status_cause(st, "FieldValueNotSupported", "apiVersion",
		    "Unsupported value: a List is v1");
		return KI_EINVAL;
	}
	return KI_OK;
}

/* parse_upload's second half: the elements of the parsed body root
 * (consumed). */
static int
upload_root(api_ctx *ctx, const api_kind *coll, struct json_object *root,
	upload *u, int *bulk, api_status *st, remembered *rem)
{
	struct json_object *items;
	element *e;
	char prefix[32];

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
			if (list_wrapper_check(root, st) != KI_OK) {
				json_object_put(root);
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
				    json_object_array_get_idx(items, i)), prefix, NULL, 1,
				    NULL);
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
	prepare_element(e, root, "", coll, coll->id == API_RUN, rem);
	return KI_OK;
}

/* Does the Verification d name a run (spec.runName) starting with
 * prefix? */
static int
verifies_prefixed(const api_doc *d, const char *prefix)
{
	const char *run = json_object_get_string(json_object_object_get(
	    json_object_object_get(d->obj, "spec"), "runName"));

	return run != NULL && strncmp(run, prefix, strlen(prefix)) == 0;
}

/* Unknown fields (warned about on r, or failing e under Strict), and what
 * the token may write: names under its prefix, runs of its source. */
void
admit_element(element *e, const api_write_opts *opt, api_resp *r)
{
	unknown_fields(e, opt, r);
	for (size_t k = 0; opt->who != NULL && !e->failed && k < e->ndocs; k++) {
		api_doc *d = &e->docs[k];
		const char *src = NULL;

		if (d->kind->id == API_RUN)
			src = json_object_get_string(json_object_object_get(
			    json_object_object_get(json_object_object_get(d->obj,
			    "spec"), "sourceNative"), "source"));
		if (!api_may_write_object(opt->who, d->name,
		    d->kind->id == API_RUN ? (src ? src : "") : NULL, &e->st)) {
			api_status_details(&e->st, d->kind->kind, d->name);
			e->failed = 1;
		} else if (d->kind->id == API_THRESHOLD &&
		    (opt->who->source[0] != '\0' || opt->who->prefix[0] != '\0')) {
			/* A Threshold labels every source's arriving runs, whatever
			 * their names. */
			api_status_fail(&e->st, 403, "Forbidden", "this token is "
			    "limited to %s \"%s\", and a Threshold judges every "
			    "run", opt->who->source[0] ? "the runs of" :
			    "names starting with", opt->who->source[0] ?
			    opt->who->source : opt->who->prefix);
			api_status_details(&e->st, d->kind->kind, d->name);
			e->failed = 1;
		} else if (d->kind->id == API_VERIFICATION &&
		    opt->who->prefix[0] != '\0' && !verifies_prefixed(d,
		    opt->who->prefix)) {
			/* Its outcome is written onto the run it names. */
			api_status_fail(&e->st, 403, "Forbidden", "this token may "
			    "write only names starting with \"%s\", and a "
			    "Verification writes its outcome onto the run named by "
			    "spec.runName, which does not", opt->who->prefix);
			api_status_details(&e->st, d->kind->kind, d->name);
			e->failed = 1;
		} else if (d->kind->id == API_VERIFICATION &&
		    opt->who->source[0] != '\0' &&
		    (d->scope_source = strdup(opt->who->source)) == NULL) {
			api_status_from_rc(&e->st, KI_ENOMEM, "admitting");
			e->failed = 1;
		}
	}
}
