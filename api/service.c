/* api/service.c — create, get, list and delete over the store, and the
 * bundle / List / NDJSON upload paths. */
#define _GNU_SOURCE /* memmem */
#include "api/service.h"
#include "api/service_int.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/jcs.h"
#include "api/auth.h"
#include "api/commit.h"
#include "api/labels.h"
#include "api/object.h"
#include "api/parts.h"
#include "api/plausible.h"
#include "api/table.h"

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
	if (r->spill != NULL)
		fclose(r->spill);
	r->spill = NULL;
	r->spill_len = 0;
	r->suffix = NULL;
	if (r->release != NULL)
		r->release(r->release_arg);
	r->release = NULL;
	r->release_arg = NULL;
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
api_resp_fail(api_resp *r, int code, const char *reason, const char *field,
	const char *fmt, ...)
{
	api_status st;
	ki_buf msg;
	va_list ap;

	ki_buf_init(&msg);
	va_start(ap, fmt);
	ki_buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	api_status_init(&st);
	api_status_fail(&st, code, reason, "%s", msg.data ? msg.data : "");
	if (field != NULL)
		api_status_cause(&st, code == 422 ? "FieldValueInvalid" :
		    "FieldValueForbidden", field, "%s", msg.data ? msg.data : "");
	api_resp_status(r, &st);
	api_status_free(&st);
	ki_buf_free(&msg);
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

void
api_fail_rc(api_resp *r, int rc, const char *what)
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

/* Turns one JSON value (consumed) into e's documents: a bundle, or one
 * object (of kind expect, when non-NULL). prefix prefixes every cause.
 * rem (may be NULL): the bundle's parts taken from memory, and the bytes
 * of the others. */
static void
prepare_element(element *e, struct json_object *v, const char *prefix,
	const api_kind *expect, int allow_bundle, remembered *rem)
{
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
	for (size_t i = 0; i < NPART; i++) {
		struct json_object *part;
		const api_kind *k = api_kind_by_part(part_order[i]);
		size_t causes = e->st.ncauses, unknown = e->unk.n;

		if (rem != NULL && rem->hit[i].kind != NULL) {
			e->docs[e->ndocs++] = rem->hit[i];
			memset(&rem->hit[i], 0, sizeof(rem->hit[i]));
			continue;
		}
		if (!json_object_object_get_ex(v, part_order[i], &part))
			continue;
		snprintf(p, sizeof(p), "%s%s%s", prefix, *prefix ? "." : "",
		    part_order[i]);
		api_doc_prepare(&e->docs[e->ndocs], json_object_get(part), p, k,
		    &e->st, &e->unk);
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
	api_prerender *pre);

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
	    refs, nrefs, name, natkey, natkey_len, extra_status, NULL, NULL);
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
	api_prerender *pre)
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
	json_object_put(old);
	return kept;
}

int
stored_copy_put(api_ctx *ctx, store_txn *txn, stored_copy *c,
	struct json_object *extra)
{
	struct json_object *kept = extra == NULL ? kept_status(c) : NULL;
	int rc;

	rc = api_store_object(ctx, txn, c->kind, c->meta, c->spec.data,
	    c->spec.len, c->digest, (const uint8_t *)c->refs.data, c->nrefs,
	    c->name.data, c->natkey.data, c->natkey.len,
	    extra != NULL ? extra : kept);
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
static int
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
static void
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
	    &rr, p) != KI_OK) {
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
	int rc;

	if (d->pre != NULL && memcmp(d->pre->ref_ids, d->ref_ids,
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
	rc = store_object(ctx, txn, d->kind, meta, d->canon.data + d->spec_off,
	    d->spec_len, json_object_object_get(d->obj, "spec"), d->digest,
	    d->refs[0], d->nrefs, d->name, d->natkey.data, d->natkey.len, extra,
	    NULL, NULL);
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
static int
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

/* Counts e's outcome into created / unchanged / failed. */
static void
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
static void
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
static void
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

static void
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

/* Adds NDJSON line number line, [p, p + n), to u as one element. */
static int
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
static int
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

/* Unknown fields (warned about on r, or failing e under Strict), and what
 * the token may write: names under its prefix, runs of its source. */
static void
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
		}
	}
}

/* One create, from validation to the answer: what the committer runs. */
typedef struct create_job {
	api_job job;               /* first: the committer hands this back */
	api_ctx *ctx;
	upload u;
	int bulk, atomic, dry_run, any_created;
	api_resp *r;
	api_job_done user_done;    /* the caller's, run after finishing */
	struct api_stream *stream; /* a chunk of this streamed upload */
} create_job;

/* Writes the elements and renders the answer inside txn. Returns 0 to keep
 * the writes, else they are dropped (the answer says why). */
static int
create_write(store_txn *txn, void *arg)
{
	create_job *j = arg;
	api_resp *r = j->r;
	int rc;

	/* A job that may run again (job.rerun) starts from what admission
	 * left: one element, admitted. */
	j->any_created = 0;
	r->location[0] = '\0';
	if (j->job.rerun) {
		j->u.els[0].failed = 0;
		api_status_free(&j->u.els[0].st);
		api_status_init(&j->u.els[0].st);
	}
	for (size_t i = 0; i < j->u.n; i++) {
		element *e = &j->u.els[i];

		if (e->failed)
			continue;
		rc = write_element(j->ctx, txn, e);
		if (rc != KI_OK || (e->failed && (!j->bulk || j->atomic))) {
			api_resp_status(r, &e->st);
			return rc != KI_OK ? rc : KI_ECONFLICT;
		}
		for (size_t k = 0; k < e->ndocs && !e->failed; k++)
			j->any_created |= e->docs[k].created;
	}
	ki_buf_reset(&r->body);
	if (!j->bulk && j->u.els[0].ndocs == 1) {
		api_doc *d = &j->u.els[0].docs[0];

		rc = copy_stored(txn, d->kind, d->stored_name, &r->body);
		if (rc == KI_OK && d->created)
			snprintf(r->location, sizeof(r->location), API_PREFIX "/%s/%s",
			    d->kind->plural, d->stored_name);
	} else {
		render_result(j->u.els, j->u.n, store_rv(txn), j->dry_run, &r->body);
		rc = r->body.oom ? KI_ENOMEM : KI_OK;
	}
	if (rc != KI_OK) {
		api_fail_rc(r, rc, "rendering the answer");
		return rc;
	}
	r->code = j->any_created ? 201 : 200;
	/* A dry run answers as if it wrote, and keeps nothing. */
	return j->dry_run ? KI_ECONFLICT : KI_OK;
}

static void
create_job_free(create_job *j)
{
	upload_free(&j->u);
	free(j);
}

static void
create_job_release(void *arg)
{
	create_job_free(arg);
}

/* After the batch: a failed commit turns a success into an error. */
static void
create_done(api_job *job, int commit_rc)
{
	create_job *j = (create_job *)(void *)job;
	api_job_done user = j->user_done;

	if (job->rc == KI_OK && commit_rc != KI_OK) {
		ki_buf_reset(&j->r->body);
		j->r->location[0] = '\0';
		api_fail_rc(j->r, commit_rc, "committing the write");
	}
	/* The caller's done() wakes whoever answers with r, and that thread
	 * frees j with r: the thread that parsed the upload frees it, and the
	 * committer goes on with the next batch. Nothing of j is touched
	 * after done(). */
	if (user == NULL) {
		create_job_free(j);
		return;
	}
	j->r->release = create_job_release;
	j->r->release_arg = j;
	user(job, commit_rc);
}

void
api_create(api_ctx *ctx, const api_kind *coll, const char *body, size_t len,
	int ndjson, const api_write_opts *opt, api_resp *r)
{
	create_job *j;
	api_status st;
	store_txn *txn = NULL;
	int rc, any_failed = 0;

	api_status_init(&st);
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		api_fail_rc(r, KI_ENOMEM, "reading the upload");
		return;
	}
	j->ctx = ctx;
	j->r = r;
	j->atomic = opt->atomic;
	j->dry_run = opt->dry_run;
	rc = parse_upload(ctx, coll, body, len, ndjson, &j->u, &j->bulk, &st);
	if (rc != KI_OK) {
		if (st.code == 0)
			api_status_from_rc(&st, rc, "reading the upload");
		api_resp_status(r, &st);
		goto out;
	}
	for (size_t i = 0; i < j->u.n; i++) {
		admit_element(&j->u.els[i], opt, r);
		any_failed |= j->u.els[i].failed;
	}
	if (j->u.n == 0) {
		api_status_fail(&st, 400, "BadRequest", "the upload holds no "
		    "documents");
		api_resp_status(r, &st);
		goto out;
	}
	/* A lone document or bundle is all or nothing, and so is an atomic
	 * bulk upload: one failure fails it whole with that Status. */
	if (any_failed && (!j->bulk || opt->atomic)) {
		for (size_t i = 0; i < j->u.n; i++) {
			if (j->u.els[i].failed) {
				api_resp_status(r, &j->u.els[i].st);
				break;
			}
		}
		goto out;
	}
	if (ctx->committer != NULL && !opt->dry_run) {
		/* Durable writes share a commit: the caller submits the job and
		 * answers when it is done. The rendering of new objects happens
		 * here, on this request's thread, so that the one thread that
		 * writes does little more than store them. */
		if (store_begin(ctx->st, 0, &txn) == KI_OK) {
			for (size_t i = 0; i < j->u.n; i++)
				for (size_t k = 0; !j->u.els[i].failed &&
				    k < j->u.els[i].ndocs; k++)
					prerender_doc(ctx, txn, &j->u.els[i].docs[k]);
			store_abort(txn);
			txn = NULL;
		}
		j->job.fn = create_write;
		j->job.arg = j;
		/* One document or bundle: create_write can run it again from the
		 * start, so it needs no transaction of its own. */
		j->job.rerun = !j->bulk && j->u.n == 1;
		j->user_done = NULL;
		j->job.done = create_done;
		r->job = &j->job;
		api_status_free(&st);
		return;
	}
	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a write transaction");
		goto out;
	}
	rc = create_write(txn, j);
	if (rc != KI_OK) {
		store_abort(txn);
	} else {
		uint64_t rv = store_rv(txn);

		rc = store_commit(txn);
		if (rc != KI_OK) {
			ki_buf_reset(&r->body);
			r->location[0] = '\0';
			api_fail_rc(r, rc, "committing the write");
		} else if (j->any_created && ctx->committed != NULL) {
			ctx->committed(ctx->committed_arg, rv);
		}
	}
out:
	create_job_free(j);
	api_status_free(&st);
}

void
api_create_submit(api_ctx *ctx, api_resp *r, api_job_done done, void *cookie)
{
	create_job *j = (create_job *)(void *)r->job;

	/* done runs after the job has finished the answer. */
	j->user_done = done;
	j->job.cookie = cookie;
	r->job = NULL;
	api_committer_submit(ctx->committer, &j->job);
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
		api_fail_rc(r, rc, "opening a read transaction");
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
		api_fail_rc(r, rc, "reading the object");
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
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a read transaction");
		return;
	}
	rc = store_get_by_digest(txn, d, &o);
	if (rc == KI_OK && if_none_match != NULL &&
	    (strstr(if_none_match, r->etag) != NULL ||
	    strcmp(if_none_match, "*") == 0)) {
		/* Content named by its digest never changes. */
		store_abort(txn);
		r->code = 304;
		return;
	}
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
		api_fail_rc(r, rc, "reading the object");
	} else {
		r->code = 200;
	}
}

/* ---- list ---- */

void
api_query_free(api_query *q)
{
	if (q->labels != NULL) {
		api_selector_free(q->labels);
		free(q->labels);
	}
	if (q->fields != NULL) {
		api_selector_free(q->fields);
		free(q->fields);
	}
	free(q->frefs);
	memset(q, 0, sizeof(*q));
}

/* The fields a field selector may name besides metadata.name: a run's
 * references, each served by the store's reference index. Their order is
 * that of a run's refs. */
static const char *const ref_fields[API_NREFS] = { "spec.protocolDigest",
	"spec.workloadDigest", "spec.environmentDigest",
	"spec.implementationDigest" };

int
api_query_parse(api_query *q, const api_kind *k, const char *label_sel,
	const char *field_sel, api_resp *r)
{
	api_status st;
	char err[512];
	int rc;

	memset(q, 0, sizeof(*q));
	q->labels = calloc(1, sizeof(*q->labels));
	q->fields = calloc(1, sizeof(*q->fields));
	if (q->labels == NULL || q->fields == NULL) {
		api_query_free(q);
		api_fail_rc(r, KI_ENOMEM, "parsing the selectors");
		return KI_ENOMEM;
	}
	api_status_init(&st);
	rc = api_selector_parse(label_sel, q->labels, err, sizeof(err));
	if (rc != KI_OK) {
		api_status_fail(&st, 400, "BadRequest", "labelSelector: %s", err);
		goto fail;
	}
	rc = api_field_selector_parse(field_sel, q->fields, err, sizeof(err));
	if (rc != KI_OK) {
		api_status_fail(&st, 400, "BadRequest", "fieldSelector: %s", err);
		goto fail;
	}
	if (q->fields->n > 0 &&
	    (q->frefs = calloc(q->fields->n, sizeof(*q->frefs))) == NULL) {
		rc = KI_ENOMEM;
		api_status_from_rc(&st, rc, "parsing the selectors");
		goto fail;
	}
	for (size_t i = 0; i < q->fields->n; i++) {
		const api_requirement *req = &q->fields->reqs[i];
		api_field_ref *f = &q->frefs[i];

		f->ref = -1;
		if (strcmp(req->key, "metadata.name") == 0)
			continue;
		for (int j = 0; k != NULL && k->id == API_RUN && j < API_NREFS; j++)
			if (strcmp(req->key, ref_fields[j]) == 0)
				f->ref = j;
		if (f->ref < 0) {
			rc = KI_EINVAL;
			api_status_fail(&st, 400, "BadRequest", "field label not "
			    "supported: %s (supported: metadata.name%s; select on the "
			    "derived labels kernel, pass, provider, gpu, dtype and "
			    "metric with labelSelector)", req->key,
			    k != NULL && k->id == API_RUN ? ", spec.protocolDigest, "
			    "spec.workloadDigest, spec.environmentDigest and "
			    "spec.implementationDigest" : "");
			goto fail;
		}
		if (api_digest_parse(req->values[0], strlen(req->values[0]),
		    f->digest) != KI_OK) {
			rc = KI_EINVAL;
			api_status_fail(&st, 400, "BadRequest", "fieldSelector: %s: "
			    "\"%.200s\" is not a digest (sha256: and 64 lowercase hex "
			    "digits)", req->key, req->values[0]);
			goto fail;
		}
	}
	return KI_OK;
fail:
	api_resp_status(r, &st);
	api_status_free(&st);
	api_query_free(q);
	return rc == KI_ENOMEM ? KI_ENOMEM : KI_EINVAL;
}

int
api_query_match(const api_query *q, const store_obj *o)
{
	for (size_t i = 0; q->fields != NULL && i < q->fields->n; i++) {
		const api_requirement *r = &q->fields->reqs[i];
		int ref = q->frefs != NULL ? q->frefs[i].ref : -1, eq;

		if (ref >= 0)
			eq = o->nrefs == API_NREFS && memcmp(o->refs +
			    (size_t)ref * API_DIGEST_LEN, q->frefs[i].digest,
			    API_DIGEST_LEN) == 0;
		else
			eq = strlen(r->values[0]) == o->name_len &&
			    memcmp(r->values[0], o->name, o->name_len) == 0;
		if ((r->op == API_SEL_EQ) != eq)
			return 0;
	}
	return q->labels == NULL ||
	    api_selector_match(q->labels, o->labels, o->labels_len);
}

typedef struct list_arg {
	ki_buf *out;
	const api_kind *kind;
	const api_query *q;
	uint64_t limit, n;
	int more, table, include;
	double now;
	uint64_t last;              /* id of the last item */
	uint64_t examined;          /* objects the query was matched against */
} list_arg;

static int
list_one(void *arg, const store_obj *o)
{
	list_arg *a = arg;

	a->examined++;
	if (!api_query_match(a->q, o))
		return 0;
	if (a->limit != 0 && a->n == a->limit) {
		a->more = 1;
		return 1;
	}
	if (a->table) {
		api_table_row(a->out, a->kind, o, a->include, a->now, a->n > 0);
	} else {
		if (a->n > 0)
			ki_buf_putc(a->out, ',');
		ki_buf_append(a->out, o->json, o->json_len);
	}
	a->n++;
	a->last = o->seq;
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

/* Reads a decoded continue token "i:<id>" of kind into *id. */
static int
parse_after(const ki_buf *tok, int kind, uint64_t *id)
{
	unsigned long long v = 0;

	if (tok->len < 3 || tok->len > 22 || memcmp(tok->data, "i:", 2) != 0)
		return KI_EINVAL;
	for (size_t i = 2; i < tok->len; i++) {
		if (tok->data[i] < '0' || tok->data[i] > '9')
			return KI_EINVAL;
		v = v * 10 + (unsigned)(tok->data[i] - '0');
	}
	if (store_id_kind(v) != kind)
		return KI_EINVAL;
	*id = v;
	return KI_OK;
}

/* Runs the query over kind in id order after the id `after`, driven by
 * the cheapest access path: a name lookup for metadata.name=X, else the
 * intersection of the index postings of its equality and set
 * requirements (labels, and a run's references by digest), else the
 * kind's range. fn still checks every requirement. */
static int
run_query(store_txn *txn, const api_kind *k, const api_query *q,
	uint64_t after, store_each_fn fn, void *arg, int *path)
{
	store_term *terms = NULL;
	store_alt *alts = NULL;
	size_t nterms = 0, nalts = 0, total = 0;
	int rc;

	*path = API_LIST_BY_NAME;
	for (size_t i = 0; i < q->fields->n; i++) {
		const api_requirement *r = &q->fields->reqs[i];
		store_obj o;

		if (r->op != API_SEL_EQ || q->frefs[i].ref >= 0)
			continue;
		rc = store_get_by_name(txn, k->id, r->values[0],
		    strlen(r->values[0]), &o);
		if (rc == KI_ENOTFOUND || (rc == KI_OK && o.seq <= after))
			return KI_OK;
		if (rc != KI_OK)
			return rc;
		rc = fn(arg, &o);
		return rc == 1 ? KI_OK : rc;
	}
	total = q->fields->n;
	for (size_t i = 0; i < q->labels->n; i++)
		total += q->labels->reqs[i].nvalues;
	if (total > 0) {
		terms = calloc(q->fields->n + q->labels->n, sizeof(*terms));
		alts = calloc(total, sizeof(*alts));
		if (terms == NULL || alts == NULL) {
			rc = KI_ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < q->fields->n; i++) {
		if (q->fields->reqs[i].op != API_SEL_EQ)
			continue;
		alts[nalts].digest = q->frefs[i].digest;
		terms[nterms].alts = &alts[nalts++];
		terms[nterms++].nalts = 1;
	}
	for (size_t i = 0; i < q->labels->n; i++) {
		const api_requirement *r = &q->labels->reqs[i];
		size_t first = nalts;

		if (r->op != API_SEL_EQ && r->op != API_SEL_IN)
			continue;
		for (size_t j = 0; j < r->nvalues; j++) {
			if (strlen(r->key) + strlen(r->values[j]) > STORE_MAX_INDEXED)
				break;   /* not indexed: this one filters only */
			alts[nalts].key = r->key;
			alts[nalts++].value = r->values[j];
		}
		if (nalts - first != r->nvalues) {
			nalts = first;
			continue;
		}
		terms[nterms].alts = &alts[first];
		terms[nterms++].nalts = r->nvalues;
	}
	*path = nterms > 0 ? API_LIST_BY_INDEX : API_LIST_BY_RANGE;
	rc = store_list_index(txn, k->id, terms, nterms, after, fn, arg);
out:
	free(terms);
	free(alts);
	return rc;
}

void
api_list(api_ctx *ctx, const api_kind *k, const api_list_opts *opt,
	api_resp *r)
{
	store_txn *txn = NULL;
	api_query q;
	list_arg a;
	ki_buf after, tok;
	uint64_t after_id = 0;
	api_status st;
	int rc, path;

	memset(&a, 0, sizeof(a));
	memset(&q, 0, sizeof(q));
	ki_buf_init(&after);
	ki_buf_init(&tok);
	api_status_init(&st);
	if (api_query_parse(&q, k, opt->label_selector, opt->field_selector,
	    r) != KI_OK)
		goto out;
	a.out = &r->body;
	a.kind = k;
	a.q = &q;
	a.table = opt->table;
	a.include = opt->include;
	a.now = ctx->now();
	a.limit = opt->limit;
	if (a.limit == 0 || a.limit > ctx->lim->max_page)
		a.limit = ctx->lim->max_page;
	if (opt->continue_token != NULL && *opt->continue_token != '\0') {
		/* Token: "i:" + the id of the previous page's last object, in
		 * decimal: the next page starts after it with one seek. */
		int drc = b64_decode(opt->continue_token, &after);

		if (drc == KI_OK && after.len >= 2 &&
		    memcmp(after.data, "n:", 2) == 0) {
			/* A name-ordered page of an older kernelindexd: the pages
			 * it continued are gone, as an expired token's are. */
			api_status_fail(&st, 410, "Expired", "the continue token "
			    "comes from an older version of the index, whose pages "
			    "were in name order: list again from the start");
			api_resp_status(r, &st);
			goto out;
		}
		if (drc != KI_OK || parse_after(&after, k->id, &after_id) != KI_OK) {
			api_status_fail(&st, 400, "BadRequest", "the continue token "
			    "is malformed: pass metadata.continue from the previous "
			    "page unchanged");
			api_resp_status(r, &st);
			goto out;
		}
	}
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a read transaction");
		goto out;
	}
	if (a.table)
		api_table_open(&r->body, k);
	else
		ki_buf_printf(&r->body, "{\"kind\":\"%s\",\"apiVersion\":\""
		    API_GROUP_VERSION "\",\"items\":[", k->list_kind);
	rc = run_query(txn, k, &q, after_id, list_one, &a, &path);
	__atomic_add_fetch(&ctx->lists.requests[path], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ctx->lists.examined, a.examined, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ctx->lists.returned, a.n, __ATOMIC_RELAXED);
	if (rc != KI_OK && rc != 1) {
		api_fail_rc(r, rc, "listing");
		goto out;
	}
	if (a.more) {
		ki_buf raw;

		ki_buf_init(&raw);
		ki_buf_printf(&raw, "i:%llu", (unsigned long long)a.last);
		b64_encode(raw.data, raw.len, &tok);
		ki_buf_free(&raw);
	}
	if (a.table) {
		api_table_close(&r->body, store_rv(txn), a.more ? tok.data : NULL);
	} else {
		ki_buf_printf(&r->body, "],\"metadata\":{\"resourceVersion\":"
		    "\"%llu\"", (unsigned long long)store_rv(txn));
		if (a.more)
			ki_buf_printf(&r->body, ",\"continue\":\"%s\"", tok.data);
		ki_buf_puts(&r->body, "}}");
	}
	if (r->body.oom)
		api_fail_rc(r, KI_ENOMEM, "listing");
	else
		r->code = 200;
out:
	store_abort(txn);
	api_query_free(&q);
	ki_buf_free(&after);
	ki_buf_free(&tok);
	api_status_free(&st);
}

/* ---- facets ---- */

typedef struct facet_acc {
	/* "l:k=v" / "c:…" -> count, accumulated in a json-c object. */
	struct json_object *counts;
	const api_query *q;
	uint64_t total;
	ki_buf scratch;             /* an object's facets */
} facet_acc;

static int
facet_stored(void *arg, const char *facet, size_t len, uint64_t count)
{
	facet_acc *f = arg;
	char key[STORE_MAX_NATKEY + 1];

	if (len == 2 && memcmp(facet, "n:", 2) == 0) {
		f->total = count;
		return 0;
	}
	snprintf(key, sizeof(key), "%.*s", (int)len, facet);
	json_object_object_add(f->counts, key, json_object_new_int64(
	    (int64_t)count));
	return 0;
}

static int
facet_scan(void *arg, const store_obj *o)
{
	facet_acc *f = arg;
	const char *p, *end;

	if (!api_query_match(f->q, o))
		return 0;
	f->total++;
	/* Records do not carry their facets: they follow from the labels. */
	ki_buf_reset(&f->scratch);
	if (api_store_facets(o->kind, o->labels, o->labels_len, &f->scratch) !=
	    KI_OK)
		return KI_ENOMEM;
	p = f->scratch.data;
	end = p + f->scratch.len;
	while (p != NULL && p < end) {
		size_t n = strnlen(p, (size_t)(end - p));
		char key[STORE_MAX_NATKEY + 1];
		struct json_object *v;

		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		if (json_object_object_get_ex(f->counts, key, &v))
			json_object_set_int64(v, json_object_get_int64(v) + 1);
		else
			json_object_object_add(f->counts, key,
			    json_object_new_int64(1));
		p += n + 1;
	}
	return 0;
}

void
api_facets(api_ctx *ctx, const char *label_sel, api_resp *r)
{
	const api_kind *k = api_kind_by_id(API_RUN);
	struct json_object *labels = NULL;
	store_txn *txn = NULL;
	facet_acc f;
	api_query q;
	int rc, first = 1;

	memset(&f, 0, sizeof(f));
	if (api_query_parse(&q, k, label_sel, NULL, r) != KI_OK)
		return;
	f.q = &q;
	f.counts = json_object_new_object();
	labels = json_object_new_object();
	if (f.counts == NULL || labels == NULL) {
		api_fail_rc(r, KI_ENOMEM, "counting");
		goto out;
	}
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a read transaction");
		goto out;
	}
	/* Without a selector the store's counters answer at once; with one,
	 * the matching runs are counted (through the label index when an
	 * equality requirement allows). */
	if (q.labels->n == 0) {
		rc = store_facets(txn, k->id, facet_stored, &f);
	} else {
		int path;

		rc = run_query(txn, k, &q, 0, facet_scan, &f, &path);
	}
	if (rc != KI_OK) {
		api_fail_rc(r, rc, "counting");
		goto out;
	}
	ki_buf_printf(&r->body, "{\"kind\":\"Facets\",\"apiVersion\":\""
	    API_GROUP_VERSION "\",\"metadata\":{\"resourceVersion\":\"%llu\"},"
	    "\"total\":%llu,\"labels\":", (unsigned long long)store_rv(txn),
	    (unsigned long long)f.total);
	json_object_object_foreach(f.counts, key, val) {
		const char *eq;
		struct json_object *m;
		char lk[400];

		if (strncmp(key, "l:", 2) != 0 || (eq = strchr(key, '=')) == NULL)
			continue;
		snprintf(lk, sizeof(lk), "%.*s", (int)(eq - key - 2), key + 2);
		if (!json_object_object_get_ex(labels, lk, &m)) {
			m = json_object_new_object();
			json_object_object_add(labels, lk, m);
		}
		json_object_object_add(m, eq + 1, json_object_get(val));
	}
	api_jcs_serialize(labels, &r->body);
	ki_buf_puts(&r->body, ",\"combinations\":[");
	json_object_object_foreach(f.counts, ckey, cval) {
		char text[STORE_MAX_NATKEY + 1];
		char *parts[4] = { NULL, NULL, NULL, NULL }, *p;
		int n = 0;

		if (strncmp(ckey, "c:", 2) != 0)
			continue;
		snprintf(text, sizeof(text), "%s", ckey + 2);
		p = text;
		for (char *s; n < 4 && (s = strsep(&p, "\x1f")) != NULL;)
			parts[n++] = s;
		if (n != 4)
			continue;
		ki_buf_puts(&r->body, first ? "{\"kernel\":" : ",{\"kernel\":");
		ki_buf_json_string(&r->body, parts[0], strlen(parts[0]));
		ki_buf_puts(&r->body, ",\"provider\":");
		ki_buf_json_string(&r->body, parts[1], strlen(parts[1]));
		ki_buf_puts(&r->body, ",\"gpu\":");
		ki_buf_json_string(&r->body, parts[2], strlen(parts[2]));
		ki_buf_puts(&r->body, ",\"metric\":");
		ki_buf_json_string(&r->body, parts[3], strlen(parts[3]));
		ki_buf_printf(&r->body, ",\"count\":%lld}",
		    (long long)json_object_get_int64(cval));
		first = 0;
	}
	ki_buf_puts(&r->body, "]}");
	if (r->body.oom)
		api_fail_rc(r, KI_ENOMEM, "counting");
	else
		r->code = 200;
out:
	store_abort(txn);
	api_query_free(&q);
	ki_buf_free(&f.scratch);
	if (f.counts != NULL)
		json_object_put(f.counts);
	if (labels != NULL)
		json_object_put(labels);
}

/* ---- delete ---- */

int
api_may_write_stored(const struct api_principal *who, const store_obj *o,
	api_resp *r)
{
	char name[STORE_MAX_NAME + 1], src[257] = "";
	api_status st;
	int ok;

	snprintf(name, sizeof(name), "%.*s", (int)o->name_len, o->name);
	if (o->natkey != NULL) {
		const char *us = memchr(o->natkey, '\x1f', o->natkey_len);

		snprintf(src, sizeof(src), "%.*s",
		    (int)(us ? (size_t)(us - o->natkey) : o->natkey_len), o->natkey);
	}
	api_status_init(&st);
	ok = api_may_write_object(who, name, o->kind == API_RUN ? src : NULL,
	    &st);
	if (!ok)
		api_resp_status(r, &st);
	api_status_free(&st);
	return ok;
}

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
		api_fail_rc(r, rc, "opening a write transaction");
		goto out;
	}
	rc = store_get_by_name(txn, k->id, name, len, &o);
	if (rc == KI_ENOTFOUND) {
		not_found(r, k, name, len);
		goto out;
	}
	if (rc != KI_OK) {
		api_fail_rc(r, rc, "reading the object");
		goto out;
	}
	if (opt->who != NULL && !api_may_write_stored(opt->who, &o, r))
		goto out;
	/* The final state carries the deleting resourceVersion, as in
	 * Kubernetes, for the DELETED event and the answer. */
	ki_buf_append(&metab, o.json + o.meta_off, o.meta_len);
	meta = json_tokener_parse(metab.data ? metab.data : "");
	if (meta == NULL) {
		api_fail_rc(r, KI_ESTORE, "reading the object");
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
		rc = store_delete(txn, k->id, name, len, &fin);
	if (rc == KI_OK && k->content_identity && k->id != API_RUN)
		rc = refresh_referrers(ctx, txn, digest);
	if (rc != KI_OK) {
		api_fail_rc(r, rc, "deleting");
		goto out;
	}
	if (ki_buf_append(&r->body, json.data, json.len) != KI_OK) {
		api_fail_rc(r, KI_ENOMEM, "deleting");
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
			api_fail_rc(r, rc, "committing the delete");
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

/* ---- streamed NDJSON uploads ---- */

#define STREAM_CHUNK_LINES 512          /* lines written per commit */
#define STREAM_CHUNK_BYTES (2u << 20)   /* or this much of the body */
#define STREAM_KEEP_BYTES (1u << 20)    /* answer kept in memory, then spilled */

struct api_stream {
	api_ctx *ctx;
	api_write_opts opt;
	api_principal who;
	ki_buf in;                 /* body not yet taken: lines after the chunk */
	uint64_t total;            /* bytes of the body fed */
	long line;                 /* lines seen */
	int overlong;              /* dropping the rest of an overlong line */
	create_job *chunk;         /* being filled */
	size_t chunk_bytes;
	int busy;                  /* a chunk is out being written */
	size_t created, unchanged, failed;
	uint64_t rv;
	int first;
	ki_buf items;              /* rendered items not yet spilled */
	FILE *spill;
	uint64_t spilled;
	api_status fatal;          /* why the upload stopped */
	long fatal_line;           /* its first line that was not written */
	api_resp warn;             /* warnings collected for the answer */
	api_job_done user_done;
};

api_stream *
api_stream_open(api_ctx *ctx, const api_write_opts *opt)
{
	api_stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->ctx = ctx;
	s->opt = *opt;
	if (opt->who != NULL) {
		s->who = *opt->who;
		s->opt.who = &s->who;
	}
	ki_buf_init(&s->in);
	ki_buf_init(&s->items);
	api_status_init(&s->fatal);
	api_resp_init(&s->warn);
	s->first = 1;
	return s;
}

void
api_stream_free(api_stream *s)
{
	if (s == NULL)
		return;
	if (s->chunk != NULL)
		create_job_free(s->chunk);
	ki_buf_free(&s->in);
	ki_buf_free(&s->items);
	if (s->spill != NULL)
		fclose(s->spill);
	api_status_free(&s->fatal);
	api_resp_free(&s->warn);
	free(s);
}

int
api_stream_failed(const api_stream *s)
{
	return s->fatal.code != 0;
}

static void
stream_fail(api_stream *s, int rc, const char *what, long line)
{
	if (s->fatal.code != 0)
		return;
	api_status_from_rc(&s->fatal, rc, what);
	s->fatal_line = line;
}

/* An unlinked file for the answer, in the spill directory. */
static FILE *
spill_open(const char *dir)
{
#ifdef O_TMPFILE
	if (dir != NULL) {
		int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

		if (fd >= 0) {
			FILE *f = fdopen(fd, "w+");

			if (f == NULL)
				close(fd);
			return f;
		}
	}
#endif
	return tmpfile();
}

/* Moves the rendered items to the spill file once they outgrow memory
 * (always, when flush is set and a file exists). */
static void
stream_spill(api_stream *s, int flush)
{
	if (s->items.len == 0 || (s->items.len < STREAM_KEEP_BYTES &&
	    !(flush && s->spill != NULL)))
		return;
	if (s->spill == NULL && (s->spill = spill_open(s->ctx->spill_dir)) ==
	    NULL) {
		stream_fail(s, KI_EIO, "keeping the upload's answer", s->line);
		return;
	}
	if (fwrite(s->items.data, 1, s->items.len, s->spill) != s->items.len) {
		stream_fail(s, KI_EIO, "keeping the upload's answer", s->line);
		return;
	}
	s->spilled += s->items.len;
	ki_buf_reset(&s->items);
}

/* Takes the lines of s->in into the chunk until it is full. at_end: the
 * body is complete, so a last line needs no newline. */
static void
stream_take(api_stream *s, int at_end)
{
	size_t pos = 0, max_line = s->ctx->lim->max_body;
	const char *b = s->in.data;

	while (pos < s->in.len && s->fatal.code == 0 &&
	    (s->chunk == NULL || (s->chunk->u.n < STREAM_CHUNK_LINES &&
	    s->chunk_bytes < STREAM_CHUNK_BYTES))) {
		const char *nl = memchr(b + pos, '\n', s->in.len - pos);
		size_t end, st;

		if (s->overlong) {
			/* The rest of a line already reported as too long. */
			if (nl == NULL) {
				pos = s->in.len;
				break;
			}
			pos = (size_t)(nl - b) + 1;
			s->overlong = 0;
			continue;
		}
		if (nl == NULL && !at_end) {
			if (s->in.len - pos <= max_line)
				break;      /* wait for the rest of the line */
		}
		end = nl != NULL ? (size_t)(nl - b) : s->in.len;
		if (s->chunk == NULL) {
			if ((s->chunk = calloc(1, sizeof(*s->chunk))) == NULL) {
				stream_fail(s, KI_ENOMEM, "reading the upload", s->line + 1);
				break;
			}
			s->chunk->ctx = s->ctx;
			s->chunk->bulk = 1;
			s->chunk_bytes = 0;
		}
		s->line++;
		if (end - pos > max_line) {
			element *e = upload_add(&s->chunk->u);

			if (e == NULL) {
				stream_fail(s, KI_ENOMEM, "reading the upload", s->line);
				break;
			}
			e->index = s->line;
			e->failed = 1;
			api_status_fail(&e->st, 413, "RequestEntityTooLarge", "line %ld "
			    "is longer than the limit of %zu bytes for one document",
			    s->line, max_line);
			s->overlong = nl == NULL;
			pos = nl != NULL ? end + 1 : s->in.len;
			continue;
		}
		st = pos;
		pos = nl != NULL ? end + 1 : end;
		while (st < end && (b[st] == ' ' || b[st] == '\r' || b[st] == '\t'))
			st++;
		if (st == end)
			continue;
		if (add_line(s->ctx, &s->chunk->u, b + st, end - st, s->line) !=
		    KI_OK) {
			stream_fail(s, KI_ENOMEM, "reading the upload", s->line);
			break;
		}
		admit_element(&s->chunk->u.els[s->chunk->u.n - 1], &s->opt,
		    &s->warn);
		s->chunk_bytes += end - st;
	}
	if (pos > 0) {
		memmove(s->in.data, s->in.data + pos, s->in.len - pos);
		s->in.len -= pos;
	}
}

/* Hands out the chunk when it is full, or at the end when it holds
 * anything. */
static void
stream_ready(api_stream *s, int at_end, api_job **job)
{
	*job = NULL;
	if (s->fatal.code != 0 || s->chunk == NULL)
		return;
	if (s->chunk->u.n == 0) {
		if (at_end) {
			create_job_free(s->chunk);
			s->chunk = NULL;
		}
		return;
	}
	if (!at_end && s->chunk->u.n < STREAM_CHUNK_LINES &&
	    s->chunk_bytes < STREAM_CHUNK_BYTES)
		return;
	*job = &s->chunk->job;
	s->chunk->stream = s;
	s->chunk = NULL;
	s->busy = 1;
}

void
api_stream_feed(api_stream *s, const char *data, size_t len, api_job **job)
{
	*job = NULL;
	if (s->fatal.code != 0)
		return;
	s->total += len;
	if (s->total > s->ctx->lim->max_stream_body) {
		api_status_fail(&s->fatal, 413, "RequestEntityTooLarge", "the request "
		    "body is larger than the limit of %llu bytes",
		    (unsigned long long)s->ctx->lim->max_stream_body);
		s->fatal_line = s->line + 1;
		return;
	}
	if (s->overlong) {
		/* Drop what belongs to an overlong line before keeping any. */
		const char *nl = memchr(data, '\n', len);

		if (nl == NULL)
			return;
		s->overlong = 0;
		len -= (size_t)(nl + 1 - data);
		data = nl + 1;
	}
	if (ki_buf_append(&s->in, data, len) != KI_OK) {
		stream_fail(s, KI_ENOMEM, "reading the upload", s->line + 1);
		return;
	}
	stream_take(s, 0);
	stream_ready(s, 0, job);
}

void
api_stream_end(api_stream *s, api_job **job)
{
	*job = NULL;
	if (s->fatal.code != 0)
		return;
	stream_take(s, 1);
	stream_ready(s, 1, job);
}

/* The committer runs this for a chunk: every good line is written, the
 * bad ones reported; a store failure drops the chunk and stops the
 * upload. */
static int
stream_write(store_txn *txn, void *arg)
{
	create_job *j = arg;
	api_stream *s = j->stream;
	size_t created = 0, unchanged = 0, failed = 0;

	for (size_t i = 0; i < j->u.n; i++) {
		element *e = &j->u.els[i];
		int rc;

		if (!e->failed && (rc = write_element(s->ctx, txn, e)) != KI_OK) {
			/* The chunk is dropped: the upload stops with why. */
			if (e->st.code != 0 && s->fatal.code == 0) {
				api_status_free(&s->fatal);
				s->fatal = e->st;
				api_status_init(&e->st);
				s->fatal_line = j->u.els[0].index;
			}
			stream_fail(s, rc, "writing to the store", j->u.els[0].index);
			return rc;
		}
		count_element(e, &created, &unchanged, &failed);
		render_items(e, &s->first, &s->items);
	}
	j->any_created = created > 0;
	if (s->items.oom) {
		stream_fail(s, KI_ENOMEM, "rendering the answer", j->u.els[0].index);
		return KI_ENOMEM;
	}
	s->created += created;
	s->unchanged += unchanged;
	s->failed += failed;
	s->rv = store_rv(txn);
	return KI_OK;
}

/* After the chunk's commit: a failed commit stops the upload; the chunk's
 * documents go, and the caller is woken. */
static void
stream_done(api_job *job, int commit_rc)
{
	create_job *j = (create_job *)(void *)job;
	api_stream *s = j->stream;
	api_job_done user = s->user_done;

	if (job->rc == KI_OK && commit_rc != KI_OK)
		stream_fail(s, commit_rc, "committing the write", j->u.els[0].index);
	api_job copy = *job;

	if (s->fatal.code == 0)
		stream_spill(s, 0);
	create_job_free(j);
	s->busy = 0;
	/* The caller may go on with s at once: nothing of it is touched
	 * after. */
	if (user != NULL)
		user(&copy, commit_rc);
}

void
api_stream_submit(api_stream *s, api_job *job, api_job_done done,
	void *cookie)
{
	create_job *j = (create_job *)(void *)job;
	store_txn *txn;
	int rc;

	j->job.fn = stream_write;
	j->job.arg = j;
	j->job.done = stream_done;
	j->job.cookie = cookie;
	s->user_done = done;
	if (s->ctx->committer != NULL) {
		api_committer_submit(s->ctx->committer, job);
		return;
	}
	if ((rc = store_begin(s->ctx->st, 1, &txn)) != KI_OK) {
		job->rc = rc;
		stream_fail(s, rc, "opening a write transaction", j->u.els[0].index);
		stream_done(job, rc);
		return;
	}
	job->rc = stream_write(txn, j);
	if (job->rc != KI_OK) {
		store_abort(txn);
		stream_done(job, KI_OK);
		return;
	}
	{
		uint64_t rv = store_rv(txn);
		int any = j->any_created;

		rc = store_commit(txn);
		if (rc == KI_OK && any && s->ctx->committed != NULL)
			s->ctx->committed(s->ctx->committed_arg, rv);
		stream_done(job, rc);
	}
}

void
api_stream_answer(api_stream *s, api_resp *r)
{
	ki_buf_reset(&r->body);
	for (size_t i = 0; i < s->warn.nwarnings; i++)
		api_resp_warn(r, "%s", s->warn.warnings[i]);
	if (s->fatal.code != 0) {
		char *m = s->fatal.message;

		/* What was written before stays: saying so lets the client send
		 * the rest (or all of it again: the written lines are then
		 * unchanged). */
		s->fatal.message = NULL;
		if (s->fatal_line > 1)
			api_status_fail(&s->fatal, s->fatal.code, s->fatal.reason,
			    "%s (the upload stopped at line %ld; the lines before it "
			    "were written)", m ? m : "", s->fatal_line);
		else
			api_status_fail(&s->fatal, s->fatal.code, s->fatal.reason,
			    "%s", m ? m : "");
		free(m);
		api_resp_status(r, &s->fatal);
		return;
	}
	if (s->created + s->unchanged + s->failed == 0) {
		api_resp_fail(r, 400, "BadRequest", NULL, "the upload holds no "
		    "documents");
		return;
	}
	render_result_head(s->rv, 0, s->created, s->unchanged, s->failed,
	    &r->body);
	stream_spill(s, 1);
	if (s->fatal.code != 0 || r->body.oom) {
		if (s->fatal.code == 0)
			stream_fail(s, KI_ENOMEM, "rendering the answer", 0);
		api_resp_status(r, &s->fatal);
		return;
	}
	if (s->spill != NULL) {
		fflush(s->spill);
		r->spill = s->spill;
		r->spill_len = s->spilled;
		r->suffix = "]}";
		s->spill = NULL;
	} else {
		ki_buf_append(&r->body, s->items.data ? s->items.data : "",
		    s->items.len);
		ki_buf_puts(&r->body, "]}");
	}
	r->code = s->created > 0 ? 201 : 200;
}
