/* api/patch.c — PATCH (merge, strategic-as-merge, JSON patch, server-side
 * apply) and PUT: what may change on an object whose spec is immutable. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonpatch.h"
#include "api/object.h"
#include "api/options.h"
#include "api/service.h"
#include "api/service_int.h"

/* RFC 7386: returns the merged value (a new reference the caller puts);
 * target and patch are borrowed. */
static struct json_object *
merge_patch(struct json_object *target, struct json_object *patch)
{
	struct json_object *out = NULL;

	if (!json_object_is_type(patch, json_type_object)) {
		if (patch != NULL && json_object_deep_copy(patch, &out, NULL) != 0)
			return NULL;
		return out;
	}
	if (target != NULL && json_object_is_type(target, json_type_object)) {
		if (json_object_deep_copy(target, &out, NULL) != 0)
			return NULL;
	} else {
		out = json_object_new_object();
	}
	if (out == NULL)
		return NULL;
	json_object_object_foreach(patch, key, val) {
		if (val == NULL) {
			json_object_object_del(out, key);
		} else {
			struct json_object *cur = json_object_object_get(out, key);
			struct json_object *m = merge_patch(cur, val);

			if (m == NULL) {
				json_object_put(out);
				return NULL;
			}
			json_object_object_add(out, key, m);
		}
	}
	return out;
}

static const char *
meta_str(struct json_object *obj, const char *key)
{
	struct json_object *m, *v;

	if (!json_object_object_get_ex(obj, "metadata", &m) ||
	    !json_object_object_get_ex(m, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The members of an object that the server sets: what a write gives them
 * is not applied (kube-apiserver resets them as well). */
static const char *const SERVER_META[] = { "creationTimestamp",
	"generation", "managedFields", "selfLink", "deletionTimestamp",
	"deletionGracePeriodSeconds", NULL };

/* Warns of one server-owned member: w what the write asks for, s what is
 * stored (either NULL where absent). removal: a member the write leaves
 * out was removed by it (a patch's null), not merely not sent (a PUT). */
static void
warn_owned(const char *path, struct json_object *w, int w_has,
	struct json_object *s, int s_has, int removal, api_resp *r)
{
	if (!w_has && (!removal || !s_has))
		return;
	if (w_has && s_has && json_object_equal(w, s))
		return;
	api_resp_warn(r, "field \"%s\" not applied: the server sets it%s", path,
	    strcmp(path, "status") == 0 ? " (an object's status is written by "
	    "the server only)" : "");
}

/* Warns of each server-owned member (status, and the metadata in
 * SERVER_META) that the object a write asks for (want, borrowed) gives
 * otherwise than stored (borrowed; NULL for a create): dropped, as
 * kube-apiserver drops it, but not in silence. removal: see warn_owned. */
static void
warn_server_owned(struct json_object *want, struct json_object *stored,
	int removal, api_resp *r)
{
	struct json_object *wm = NULL, *sm = NULL, *w = NULL, *s = NULL;
	int w_has, s_has;
	char path[64];

	w_has = json_object_object_get_ex(want, "status", &w);
	s_has = stored != NULL && json_object_object_get_ex(stored, "status", &s);
	warn_owned("status", w, w_has, s, s_has, removal, r);
	if (!json_object_object_get_ex(want, "metadata", &wm) ||
	    !json_object_is_type(wm, json_type_object))
		return;
	if (stored != NULL)
		json_object_object_get_ex(stored, "metadata", &sm);
	for (const char *const *k = SERVER_META; *k != NULL; k++) {
		w = s = NULL;
		w_has = json_object_object_get_ex(wm, *k, &w);
		s_has = sm != NULL && json_object_object_get_ex(sm, *k, &s);
		snprintf(path, sizeof(path), "metadata.%s", *k);
		warn_owned(path, w, w_has, s, s_has, removal, r);
	}
}

/* The precondition a body carries in metadata.resourceVersion, as kube-
 * apiserver takes it: a decimal string, or (JSON being loose about it) a
 * non-negative integer. pre receives it ("" when the body has none).
 * Returns 0, or -1 with r filled (400) for any other value. */
static int
body_precondition(struct json_object *body, char pre[24], api_resp *r)
{
	struct json_object *m, *v;
	const char *s;

	pre[0] = '\0';
	if (!json_object_object_get_ex(body, "metadata", &m) ||
	    !json_object_is_type(m, json_type_object) ||
	    !json_object_object_get_ex(m, "resourceVersion", &v) || v == NULL)
		return 0;
	if (json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) >= 0) {
		snprintf(pre, 24, "%lld", (long long)json_object_get_int64(v));
		return 0;
	}
	s = json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : NULL;
	if (s != NULL && *s != '\0' && strlen(s) < 21 &&
	    strspn(s, "0123456789") == strlen(s)) {
		snprintf(pre, 24, "%s", s);
		return 0;
	}
	if (s != NULL && *s == '\0')
		return 0; /* "" is "no precondition", as in Kubernetes */
	api_resp_fail(r, 400, "BadRequest", "metadata.resourceVersion",
	    "invalid metadata.resourceVersion %s: a resourceVersion is a "
	    "decimal number", json_object_to_json_string_ext(v,
	    JSON_C_TO_STRING_PLAIN));
	return -1;
}

/* Changes the live object kind/name inside one write transaction, so that
 * no write comes between reading it and storing the change: body
 * (consumed) is the whole object the client wants (PUT: type 0), or a
 * patch of type (enum api_patch_type) applied here to the object as it is
 * now, a JSON patch's tests included. pre is the client's resourceVersion
 * precondition ("" for none). Returns 1, with nothing written or answered,
 * when the object does not exist and missing_ok; else 0 with r filled. */
static int
update(api_ctx *ctx, const api_kind *k, const char *name,
	struct json_object *body, int type, const char *pre, int missing_ok,
	const api_write_opts *opt, api_resp *r)
{
	store_txn *txn = NULL;
	store_obj o;
	stored_copy c;
	api_doc d;
	api_status st;
	api_unknown unk;
	char rvs[24], pre_json[24] = "";
	const char *wname;
	struct json_object *want = NULL, *live = NULL;
	int rc, missing = 0;

	memset(&c, 0, sizeof(c));
	memset(&d, 0, sizeof(d));
	memset(&unk, 0, sizeof(unk));
	api_status_init(&st);
	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a write transaction");
		goto out;
	}
	rc = store_get_by_name(txn, k->id, name, strlen(name), &o);
	/* If-Match asks for an object that exists: apply does not create. */
	if (rc == KI_ENOTFOUND && missing_ok && opt->if_match == NULL) {
		missing = 1;
		goto out;
	}
	if (rc != KI_OK) {
		if (rc == KI_ENOTFOUND) {
			api_status_fail(&st, 404, "NotFound", "%s.%s \"%s\" not found",
			    k->plural, API_GROUP, name);
			api_status_details(&st, k->plural, name);
			api_resp_status(r, &st);
		} else {
			api_fail_rc(r, rc, "reading the object");
		}
		goto out;
	}
	if (opt->who != NULL && !api_may_write_stored(opt->who, &o, r))
		goto out;
	if (!api_if_match(opt->if_match, o.rv, r) ||
	    !api_if_none_match(opt->if_none_match, o.rv, r))
		goto out;
	snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)o.rv);
	if (pre[0] != '\0' && strcmp(pre, rvs) != 0) {
		api_resp_fail(r, 409, "Conflict", NULL, "Operation cannot be "
		    "fulfilled on %s \"%s\": the object has been modified; please "
		    "apply your changes to the latest version and try again",
		    k->plural, name);
		goto out;
	}
	live = api_json_parse_len(o.json, o.json_len);
	if (live == NULL) {
		api_fail_rc(r, KI_ESTORE, "reading the object");
		goto out;
	}
	if (type != 0) {
		if (type == API_PATCH_JSON) {
			rc = api_jsonpatch_apply(live, body, &want, &st);
			if (rc == KI_EINVAL) {
				api_status_details(&st, k->kind, name);
				api_resp_status(r, &st);
				goto out;
			}
		} else {
			want = merge_patch(live, body);
		}
		if (want == NULL && type == API_PATCH_JSON) {
			/* A JSON patch that replaced the document with null. */
			api_resp_fail(r, 422, "Invalid", "patch", "the patched "
			    "%s must be a JSON object, not null", k->kind);
			goto out;
		}
		if (want == NULL) {
			api_fail_rc(r, KI_ENOMEM, "patching");
			goto out;
		}
		/* The resourceVersion a JSON patch leaves in the object is a
		 * precondition, as a merge patch's is. */
		if (type == API_PATCH_JSON && body_precondition(want, pre_json,
		    r) != 0)
			goto out;
		if (pre_json[0] != '\0' && strcmp(pre_json, rvs) != 0) {
			api_resp_fail(r, 409, "Conflict", NULL, "Operation cannot be "
			    "fulfilled on %s \"%s\": the object has been modified; "
			    "please apply your changes to the latest version and try "
			    "again", k->plural, name);
			goto out;
		}
	} else {
		want = body;
		body = NULL;
	}
	if (meta_str(want, "uid") != NULL) {
		/* A uid the client sent must be the object's (409 if not). */
		api_write_opts uid_opt;

		memset(&uid_opt, 0, sizeof(uid_opt));
		snprintf(uid_opt.pre_uid, sizeof(uid_opt.pre_uid), "%s",
		    meta_str(want, "uid"));
		if (!api_preconditions_hold(&uid_opt, k, &o, r))
			goto out;
	}
	wname = meta_str(want, "name");
	if (wname != NULL && strcmp(wname, name) != 0) {
		api_resp_fail(r, 400, "BadRequest", "metadata.name", "the name of the "
		    "object (%.253s) does not match the name in the URL (%.253s)",
		    wname, name);
		goto out;
	}
	/* What the write gives status and the server's metadata is dropped
	 * below: said in a Warning where it differs from what is stored. A
	 * PUT that leaves status out asks for no change to it. */
	warn_server_owned(want, live, type != 0, r);
	/* Validate the wanted object as an upload would, which also prunes
	 * unknown fields and recomputes its digest. */
	api_doc_prepare(&d, want, "", k, &st, &unk);
	want = NULL; /* d owns it */
	if (st.code != 0 || st.ncauses != 0) {
		if (st.code == 0) {
			st.code = 422;
			st.reason = "Invalid";
			api_status_details(&st, k->kind, name);
		}
		api_resp_status(r, &st);
		goto out;
	}
	if (unk.n > 0 && opt->field_validation == API_FV_STRICT) {
		api_resp_fail(r, 400, "BadRequest", unk.paths[0], "strict decoding "
		    "error: unknown field \"%s\"", unk.paths[0]);
		goto out;
	}
	for (size_t i = 0; i < unk.n && opt->field_validation == API_FV_WARN;
	    i++)
		api_resp_warn(r, "unknown field \"%s\"", unk.paths[i]);
	if (memcmp(o.digest, d.digest, API_DIGEST_LEN) != 0) {
		char stored[API_DIGEST_STRLEN + 1];

		api_digest_format(o.digest, stored);
		api_status_fail(&st, 422, "Invalid", "%s \"%s\" is invalid: spec: "
		    "the spec is immutable", k->kind, name);
		api_status_cause(&st, "FieldValueInvalid", "spec", "Invalid value: "
		    "the spec is immutable (stored %s, the change would make %s): "
		    "upload a changed result as a new object", stored, d.digest_str);
		api_status_details(&st, k->kind, name);
		api_resp_status(r, &st);
		goto out;
	}
	if ((rc = stored_copy_make(&c, &o)) != KI_OK) {
		api_fail_rc(r, rc, "reading the object");
		goto out;
	}
	/* Only the client's metadata moves over; uid, creation time and
	 * generation stay the server's. */
	{
		static const char *const keys[] = { "labels", "annotations",
			"title", NULL };
		struct json_object *wm = json_object_object_get(d.obj, "metadata");

		for (const char *const *key = keys; *key != NULL; key++) {
			struct json_object *v = json_object_object_get(wm, *key);
			struct json_object *cp = NULL;

			if (v == NULL) {
				json_object_object_del(c.meta, *key);
				continue;
			}
			if (json_object_deep_copy(v, &cp, NULL) != 0) {
				api_fail_rc(r, KI_ENOMEM, "patching");
				goto out;
			}
			json_object_object_add(c.meta, *key, cp);
		}
	}
	if ((rc = stored_copy_put(ctx, txn, &c, NULL)) != KI_OK) {
		api_fail_rc(r, rc, "writing the object");
		goto out;
	}
	rc = store_get_by_name(txn, k->id, name, strlen(name), &o);
	if (rc == KI_OK) {
		api_warn_overridden_labels(r, json_object_object_get(
		    json_object_object_get(d.obj, "metadata"), "labels"), &o);
		rc = ki_buf_append(&r->body, o.json, o.json_len);
	}
	/* A dry run commits nothing: the object keeps its version. */
	if (rc == KI_OK && opt->dry_run)
		rc = api_body_set_rv(&r->body, rvs);
	if (rc != KI_OK) {
		api_fail_rc(r, rc, "reading the object");
		goto out;
	}
	if (!opt->dry_run) {
		uint64_t rv = store_rv(txn);

		rc = store_commit(txn);
		txn = NULL;
		if (rc != KI_OK) {
			ki_buf_reset(&r->body);
			api_fail_rc(r, rc, "committing");
			goto out;
		}
		if (ctx->committed != NULL)
			ctx->committed(ctx->committed_arg, rv);
	}
	r->code = 200;
out:
	store_abort(txn);
	json_object_put(want);
	json_object_put(live);
	json_object_put(body);
	stored_copy_free(&c);
	api_doc_free(&d);
	api_unknown_free(&unk);
	api_status_free(&st);
	return missing;
}

/* Server-side apply names one object, the one in the URL, as kube-apiserver
 * requires: the body must be that kind (not a bundle, not a List) and
 * carry that name. Returns 0, or -1 with r filled (400). */
static int
apply_names_url(const api_kind *k, const char *name,
	struct json_object *body, api_resp *r)
{
	struct json_object *v;
	const char *kind = NULL, *av = NULL, *wname;

	if (json_object_object_get_ex(body, "kind", &v) &&
	    json_object_is_type(v, json_type_string))
		kind = json_object_get_string(v);
	if (json_object_object_get_ex(body, "apiVersion", &v) &&
	    json_object_is_type(v, json_type_string))
		av = json_object_get_string(v);
	if (kind == NULL || strcmp(kind, k->kind) != 0) {
		api_resp_fail(r, 400, "BadRequest", "kind", "an apply patch to "
		    "%s/%s must be one %s with kind \"%s\" (got %s%.64s%s): a "
		    "bundle or a List is uploaded with POST", k->plural, name,
		    k->kind, k->kind, kind ? "\"" : "", kind ? kind : "none",
		    kind ? "\"" : "");
		return -1;
	}
	if (av == NULL || strcmp(av, API_GROUP_VERSION) != 0) {
		api_resp_fail(r, 400, "BadRequest", "apiVersion", "an apply patch "
		    "must carry apiVersion \"" API_GROUP_VERSION "\" (got %s%.64s%s)",
		    av ? "\"" : "", av ? av : "none", av ? "\"" : "");
		return -1;
	}
	wname = meta_str(body, "name");
	if (wname == NULL || strcmp(wname, name) != 0) {
		api_resp_fail(r, 400, "BadRequest", "metadata.name", "the name of the "
		    "object (%.253s) does not match the name in the URL (%.253s)",
		    wname ? wname : "none given", name);
		return -1;
	}
	return 0;
}

void
api_patch(api_ctx *ctx, const api_kind *k, const char *name, int type,
	const char *body, size_t len, const api_write_opts *opt, api_resp *r)
{
	struct json_object *patch = NULL;
	api_status st;
	char pre[24];

	api_status_init(&st);
	if (api_json_parse(body, len, ctx->lim->max_depth, &patch, &st) !=
	    KI_OK) {
		api_resp_status(r, &st);
		api_status_free(&st);
		return;
	}
	api_status_free(&st);
	if (type == API_PATCH_JSON ?
	    !json_object_is_type(patch, json_type_array) :
	    !json_object_is_type(patch, json_type_object)) {
		json_object_put(patch);
		api_resp_fail(r, 400, "BadRequest", NULL, type == API_PATCH_JSON ?
		    "a JSON patch must be an array of operations" :
		    "a patch must be a JSON object");
		return;
	}
	/* A JSON patch states its preconditions as test operations. */
	pre[0] = '\0';
	if ((type == API_PATCH_APPLY && apply_names_url(k, name, patch, r) != 0) ||
	    (type != API_PATCH_JSON && body_precondition(patch, pre, r) != 0)) {
		json_object_put(patch);
		return;
	}
	/* update consumes patch: a reference is kept for the create. */
	if (update(ctx, k, name, json_object_get(patch), type, pre,
	    type == API_PATCH_APPLY, opt, r) == 1) {
		/* Server-side apply of a missing object creates it: the body is
		 * one object of this kind named as the URL (checked above). */
		warn_server_owned(patch, NULL, 0, r);
		api_create(ctx, k, body, len, 0, opt, r);
	}
	json_object_put(patch);
}

void
api_replace(api_ctx *ctx, const api_kind *k, const char *name,
	const char *body, size_t len, const api_write_opts *opt, api_resp *r)
{
	struct json_object *want = NULL;
	api_status st;
	char pre[24];

	api_status_init(&st);
	if (api_json_parse(body, len, ctx->lim->max_depth, &want, &st) != KI_OK) {
		api_resp_status(r, &st);
		api_status_free(&st);
		return;
	}
	api_status_free(&st);
	if (!json_object_is_type(want, json_type_object)) {
		json_object_put(want);
		api_resp_fail(r, 400, "BadRequest", NULL, "a PUT body must be a "
		    "JSON object");
		return;
	}
	if (body_precondition(want, pre, r) != 0) {
		json_object_put(want);
		return;
	}
	update(ctx, k, name, want, 0, pre, 0, opt, r);
}
