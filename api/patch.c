/* api/patch.c — PATCH (merge, strategic-as-merge, server-side apply) and
 * PUT: what may change on an object whose spec is immutable. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/object.h"
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

/* Writes `want` (the object as the client wants it: consumed) over the
 * live object kind/name, inside txn. */
static void
update(api_ctx *ctx, const api_kind *k, const char *name,
	struct json_object *want, const char *precondition,
	const api_write_opts *opt, api_resp *r)
{
	store_txn *txn = NULL;
	store_obj o;
	stored_copy c;
	api_doc d;
	api_status st;
	api_unknown unk;
	char rvs[24];
	const char *wname;
	int rc;

	memset(&c, 0, sizeof(c));
	memset(&d, 0, sizeof(d));
	memset(&unk, 0, sizeof(unk));
	api_status_init(&st);
	wname = meta_str(want, "name");
	if (wname != NULL && strcmp(wname, name) != 0) {
		/* The message quotes wname: answer before letting want go. */
		api_resp_fail(r, 400, "BadRequest", "metadata.name", "the name of the "
		    "object (%.253s) does not match the name in the URL (%.253s)",
		    wname, name);
		json_object_put(want);
		goto out;
	}
	/* Validate the wanted object as an upload would, which also prunes
	 * unknown fields and recomputes its digest. */
	api_doc_prepare(&d, want, "", k, &st, &unk);
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
	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a write transaction");
		goto out;
	}
	rc = store_get_by_name(txn, k->id, name, strlen(name), &o);
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
	snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)o.rv);
	if (precondition != NULL && *precondition != '\0' &&
	    strcmp(precondition, rvs) != 0) {
		api_resp_fail(r, 409, "Conflict", NULL, "Operation cannot be "
		    "fulfilled on %s \"%s\": the object has been modified; please "
		    "apply your changes to the latest version and try again",
		    k->plural, name);
		goto out;
	}
	if (memcmp(o.digest, d.digest, API_DIGEST_LEN) != 0) {
		char live[API_DIGEST_STRLEN + 1];

		api_digest_format(o.digest, live);
		api_resp_fail(r, 422, "Invalid", "spec", "Invalid value: the spec is "
		    "immutable (stored %s, the change would make %s): upload a "
		    "changed result as a new object", live, d.digest_str);
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
	if (rc == KI_OK)
		rc = ki_buf_append(&r->body, o.json, o.json_len);
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
	stored_copy_free(&c);
	api_doc_free(&d);
	api_unknown_free(&unk);
	api_status_free(&st);
}

static struct json_object *
live_object(api_ctx *ctx, const api_kind *k, const char *name, int *rc)
{
	store_txn *txn;
	store_obj o;
	struct json_object *live = NULL;

	if ((*rc = store_begin(ctx->st, 0, &txn)) != KI_OK)
		return NULL;
	*rc = store_get_by_name(txn, k->id, name, strlen(name), &o);
	if (*rc == KI_OK) {
		live = api_json_parse_len(o.json, o.json_len);
		if (live == NULL)
			*rc = KI_ESTORE;
	}
	store_abort(txn);
	return live;
}

void
api_patch(api_ctx *ctx, const api_kind *k, const char *name, int type,
	const char *body, size_t len, const api_write_opts *opt, api_resp *r)
{
	struct json_object *patch = NULL, *live, *want;
	api_status st;
	const char *pre;
	char prebuf[24] = "";
	int rc;

	api_status_init(&st);
	if (api_json_parse(body, len, ctx->lim->max_depth, &patch, &st) !=
	    KI_OK) {
		api_resp_status(r, &st);
		api_status_free(&st);
		return;
	}
	api_status_free(&st);
	if (!json_object_is_type(patch, json_type_object)) {
		json_object_put(patch);
		api_resp_fail(r, 400, "BadRequest", NULL, "a patch must be a JSON "
		    "object");
		return;
	}
	live = live_object(ctx, k, name, &rc);
	if (live == NULL && rc == KI_ENOTFOUND && type == API_PATCH_APPLY) {
		/* Server-side apply of a missing object creates it. */
		json_object_put(patch);
		api_create(ctx, k, body, len, 0, opt, r);
		return;
	}
	if (live == NULL) {
		json_object_put(patch);
		if (rc == KI_ENOTFOUND) {
			api_status_init(&st);
			api_status_fail(&st, 404, "NotFound", "%s.%s \"%s\" not found",
			    k->plural, API_GROUP, name);
			api_status_details(&st, k->plural, name);
			api_resp_status(r, &st);
			api_status_free(&st);
		} else {
			api_fail_rc(r, rc, "reading the object");
		}
		return;
	}
	pre = meta_str(patch, "resourceVersion");
	if (pre != NULL)
		snprintf(prebuf, sizeof(prebuf), "%s", pre);
	want = merge_patch(live, patch);
	json_object_put(live);
	json_object_put(patch);
	if (want == NULL) {
		api_fail_rc(r, KI_ENOMEM, "patching");
		return;
	}
	update(ctx, k, name, want, prebuf[0] ? prebuf : NULL, opt, r);
}

void
api_replace(api_ctx *ctx, const api_kind *k, const char *name,
	const char *body, size_t len, const api_write_opts *opt, api_resp *r)
{
	struct json_object *want = NULL;
	api_status st;
	const char *pre;
	char prebuf[24] = "";

	api_status_init(&st);
	if (api_json_parse(body, len, ctx->lim->max_depth, &want, &st) != KI_OK) {
		api_resp_status(r, &st);
		api_status_free(&st);
		return;
	}
	api_status_free(&st);
	pre = meta_str(want, "resourceVersion");
	if (pre != NULL)
		snprintf(prebuf, sizeof(prebuf), "%s", pre);
	update(ctx, k, name, want, prebuf[0] ? prebuf : NULL, opt, r);
}
