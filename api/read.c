/* api/read.c — read: one object by name, or by digest. */
#include "api/service_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reads ---- */

void
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
	api_get_at(ctx, k, name, len, 0, 0, r);
}

void
api_get_at(api_ctx *ctx, const api_kind *k, const char *name, size_t len,
	uint64_t min_rv, int any, api_resp *r)
{
	store_txn *txn;
	store_obj o;
	int rc;

	/* A store whose reads may lag (etcd's watch cache, behind another
	 * daemon's commit) first reaches the version asked for, or the
	 * newest state: an update acknowledged through any daemon is what
	 * the next GET through this one answers, as a list's is. */
	if (!any)
		(void)store_sync(ctx->st, min_rv, 3000);
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a read transaction");
		return;
	}
	/* The rv is read only when asked for: reading it fixes the
	 * transaction's snapshot, and a store shared by several daemons
	 * (etcd) confirms a miss against the newest state only while the
	 * lookup is the transaction's first read. */
	if (min_rv != 0 && min_rv > store_rv(txn)) {
		api_resp_fail(r, 504, "Timeout", "resourceVersion", "Too large "
		    "resource version: %llu, current: %llu",
		    (unsigned long long)min_rv, (unsigned long long)store_rv(txn));
		store_abort(txn);
		return;
	}
	rc = store_get_by_name(txn, k->id, name, len, &o);
	if (rc == KI_OK)
		rc = ki_buf_append(&r->body, o.json, o.json_len);
	if (rc == KI_OK)
		snprintf(r->version, sizeof(r->version), "%llu",
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
api_get_digest(api_ctx *ctx, const char *digest, uint64_t min_rv,
	int any, api_resp *r)
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
	/* Content named by its digest never changes. */
	snprintf(r->version, sizeof(r->version), "%s", digest);
	r->immutable = 1;
	/* Whether it is stored (a delete through another daemon) is read
	 * at the newest state, as an object GET reads it. */
	if (!any)
		(void)store_sync(ctx->st, min_rv, 3000);
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a read transaction");
		return;
	}
	if (min_rv != 0 && min_rv > store_rv(txn)) {
		api_resp_fail(r, 504, "Timeout", "resourceVersion", "Too large "
		    "resource version: %llu, current: %llu",
		    (unsigned long long)min_rv, (unsigned long long)store_rv(txn));
		store_abort(txn);
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
	if (rc == KI_OK) {
		/* Served as immutable under its digest: it must be what the
		 * digest names, so a damaged record is refused, never
		 * cached forever (docs/storage.md says what it costs). */
		uint8_t got[API_DIGEST_LEN];

		if ((rc = api_sha256(r->body.data, r->body.len, got)) == KI_OK &&
		    memcmp(got, d, API_DIGEST_LEN) != 0)
			rc = KI_ECORRUPT;
	}
	store_abort(txn);
	if (rc == KI_ENOTFOUND) {
		api_status_init(&st);
		api_status_fail(&st, 404, "NotFound", "no object with digest %s is "
		    "stored", digest);
		api_resp_status(r, &st);
		api_status_free(&st);
	} else if (rc != KI_OK) {
		char what[128];

		snprintf(what, sizeof(what), "reading the object %s", digest);
		api_fail_rc(r, rc, what);
	} else {
		r->code = 200;
	}
}
