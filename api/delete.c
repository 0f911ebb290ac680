/* api/delete.c — delete: who may change a stored object, and removing
 * one. */
#include "api/service_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/auth.h"
#include "api/options.h"
#include "api/runstatus.h"

/* ---- delete ---- */

int
api_may_write_stored(const struct api_principal *who, const store_obj *o,
	api_resp *r)
{
	char name[STORE_MAX_NAME + 1];
	const api_kind *k = api_kind_by_id(o->kind);
	struct json_object *spec = NULL, *sn = NULL, *sv = NULL;
	const char *src = NULL;
	size_t src_len = 0;
	api_status st;
	int ok;

	snprintf(name, sizeof(name), "%.*s", (int)o->name_len, o->name);
	if (who->source[0] != '\0' && o->kind == API_RUN) {
		/* The source as stored, not read back from the natural key,
		 * which a stored source holding U+001F made ambiguous. */
		spec = api_json_parse_len(o->json + o->spec_off, o->spec_len);
		if (json_object_object_get_ex(spec, "sourceNative", &sn) &&
		    json_object_object_get_ex(sn, "source", &sv) &&
		    json_object_is_type(sv, json_type_string)) {
			src = json_object_get_string(sv);
			src_len = (size_t)json_object_get_string_len(sv);
		}
	}
	if (who->prefix[0] != '\0' && o->kind == API_VERIFICATION)
		spec = api_json_parse_len(o->json + o->spec_off, o->spec_len);
	api_status_init(&st);
	ok = api_may_change_stored(who, k != NULL ? k->kind : NULL,
	    o->kind == API_RUN, name, src, src_len, &st);
	if (ok && o->kind == API_VERIFICATION)
		ok = api_may_change_verification(who, api_json_str_at(spec,
		    "runName", NULL), &st);
	if (ok && o->kind == API_THRESHOLD && who->prefix[0] != '\0') {
		/* As a create answers (api/upload.c) and the access review
		 * says: a Threshold judges every arriving run, whatever its
		 * name, so a name-limited token neither makes, changes nor
		 * removes one. */
		api_status_fail(&st, 403, "Forbidden", "this token is limited to "
		    "names starting with \"%s\", and a Threshold judges every "
		    "run", who->prefix);
		ok = 0;
	}
	if (!ok) {
		api_status_details(&st, k != NULL ? k->plural : NULL, name);
		api_resp_status(r, &st);
	}
	api_status_free(&st);
	json_object_put(spec);
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
	if ((opt->who != NULL && !api_may_write_stored(opt->who, &o, r)) ||
	    !api_preconditions_hold(opt, k, &o, r))
		goto out;
	if (!api_if_match(opt->if_match, o.rv, r) ||
	    !api_if_none_match(opt->if_none_match, o.rv, r))
		goto out;
	/* The final state carries the deleting resourceVersion, as in
	 * Kubernetes, for the DELETED event and the answer. */
	ki_buf_append(&metab, o.json + o.meta_off, o.meta_len);
	meta = json_tokener_parse(metab.data ? metab.data : "");
	if (meta == NULL) {
		api_fail_rc(r, KI_ESTORE, "reading the object");
		goto out;
	}
	/* A dry run commits nothing: it shows the version the object has. */
	snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)(opt->dry_run ?
	    o.rv : store_next_rv(txn)));
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
