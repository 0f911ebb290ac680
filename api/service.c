/* api/service.c — the answers every operation shares: a response's
 * body, Status, warnings, and the Status for a KI_* code. */
#include "api/service.h"
#include "api/service_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"
#include "api/object.h"

#define CT_JSON "application/json"

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
	r->version[0] = '\0';
	r->immutable = 0;
	r->secret = 0;
	r->etag[0] = '\0';
	r->cache_control = NULL;
	r->created = NULL;
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

/* Scans an If-Match or If-None-Match value (p) for the ETag tag (n
 * bytes, quoted): 1 when it lists tag or is "*", 0 when it lists other
 * tags only (or none), -1 when it is no list of entity tags. weak: a
 * "W/" tag compares as its opaque tag (If-None-Match's weak comparison);
 * otherwise it is no match (If-Match compares strongly). */
static int
etag_listed(const char *p, const char *tag, size_t n, int weak)
{
	const char *e;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			return 0;
		if (*p == '*')
			return 1;
		if (weak && strncmp(p, "W/", 2) == 0)
			p += 2;
		if (*p != '"' || (e = strchr(p + 1, '"')) == NULL)
			return -1;
		if ((size_t)(e + 1 - p) == n && memcmp(p, tag, n) == 0)
			return 1;
		p = e + 1;
	}
}

int
api_if_match(const char *if_match, uint64_t rv, api_resp *r)
{
	char tag[32];
	size_t n;

	if (if_match == NULL)
		return 1;
	n = (size_t)snprintf(tag, sizeof(tag), "\"%llu\"",
	    (unsigned long long)rv);
	if (etag_listed(if_match, tag, n, 0) == 1)
		return 1;
	api_resp_fail(r, 412, "PreconditionFailed", NULL, "If-Match: the "
	    "object's current ETag is %s", tag);
	return 0;
}

int
api_if_none_match(const char *if_none_match, uint64_t rv, api_resp *r)
{
	char tag[32];
	size_t n;
	int m;

	if (if_none_match == NULL)
		return 1;
	n = (size_t)snprintf(tag, sizeof(tag), "\"%llu\"",
	    (unsigned long long)rv);
	if ((m = etag_listed(if_none_match, tag, n, 1)) == 0)
		return 1;
	if (m < 0) {
		api_resp_fail(r, 400, "BadRequest", NULL, "If-None-Match: "
		    "a list of entity tags (\"...\") or *");
		return 0;
	}
	api_resp_fail(r, 412, "PreconditionFailed", NULL, "If-None-Match: the "
	    "object exists (its current ETag is %s)", tag);
	return 0;
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

int
api_body_set_rv(ki_buf *body, const char *rv)
{
	struct json_object *o, *meta;
	int rc;

	if ((o = api_json_parse_len(body->data, body->len)) == NULL)
		return KI_ENOMEM;
	if (json_object_object_get_ex(o, "metadata", &meta) &&
	    json_object_is_type(meta, json_type_object)) {
		if (rv == NULL)
			json_object_object_del(meta, "resourceVersion");
		else
			json_object_object_add(meta, "resourceVersion",
			    json_object_new_string(rv));
	}
	ki_buf_reset(body);
	rc = api_jcs_serialize(o, body);
	json_object_put(o);
	return rc;
}

void
api_warn_overridden_labels(api_resp *r, struct json_object *want,
	const store_obj *o)
{
	const char *end = o->labels + o->labels_len;

	if (o->labels == NULL || !json_object_is_type(want, json_type_object))
		return;
	json_object_object_foreach(want, key, val) {
		const char *got = NULL, *v = json_object_get_string(val);

		if (!json_object_is_type(val, json_type_string))
			continue;
		for (const char *p = o->labels; p < end;) {
			size_t kl = strnlen(p, (size_t)(end - p));
			const char *pv = p + kl + 1;

			if (pv >= end)
				break;
			if (strcmp(p, key) == 0) {
				got = pv;
				break;
			}
			p = pv + strnlen(pv, (size_t)(end - pv)) + 1;
		}
		if (got != NULL && strcmp(got, v) != 0)
			api_resp_warn(r, "metadata.labels.%.63s: the server derives this "
			    "label from the spec: it is \"%.63s\", not \"%.63s\"", key,
			    got, v);
	}
}
