/* api/review.c — SelfSubjectAccessReview, SelfSubjectRulesReview and
 * SelfSubjectReview: what the caller's token lets it do, and who it is, as
 * kubectl `auth can-i` and `auth whoami` ask. The answers come from the
 * same checks the routes make (api/auth.h), so they cannot disagree. */
#include "api/review.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "api/kinds.h"
#include "api/object.h"

#define AUTHZ "authorization.k8s.io"
#define AUTHN "authentication.k8s.io"

static const char *const read_verbs[] = { "get", "list", "watch", NULL };
static const char *const write_verbs[] = { "create", "update", "patch",
	"delete", NULL };

static int
in_list(const char *const *l, const char *s)
{
	for (; *l != NULL; l++) {
		if (strcmp(*l, s) == 0)
			return 1;
	}
	return 0;
}

static int
may_read(const api_reviewer *rv)
{
	return rv->anonymous_reads || rv->who->role >= API_ROLE_READER;
}

static int
is_admin(const api_principal *p)
{
	return p->role >= API_ROLE_ADMIN || (!p->tokens_exist && p->loopback &&
	    !p->token);
}

/* May p change (verb) the object of kind k named name? A stored one by
 * the rules its writes meet (api_may_change_stored: a source-limited
 * token changes only its source's runs), one not stored by its name if
 * the verb may create it (create, or patch: an apply creates), and never
 * otherwise where a stored one could not be changed either (an update or
 * a delete finds nothing to change). Fills st when not. */
static int
may_change(api_ctx *ctx, const api_principal *p, const api_kind *k,
	const char *name, const char *verb, api_status *st)
{
	struct json_object *spec = NULL, *sn, *sv;
	const char *src = NULL;
	size_t src_len = 0;
	store_txn *t;
	store_obj o;
	int ok;

	if (store_begin(ctx->st, 0, &t) != KI_OK) {
		api_status_fail(st, 503, "ServiceUnavailable", "the store cannot be "
		    "read");
		return 0;
	}
	if (store_get_by_name(t, k->id, name, strlen(name), &o) != KI_OK) {
		store_abort(t);
		if (strcmp(verb, "create") == 0 || strcmp(verb, "patch") == 0)
			return api_may_write_object(p, name, NULL, st);
		return api_may_change_stored(p, k->kind, k->id == API_RUN, name,
		    NULL, 0, st);
	}
	if (k->id == API_RUN) {
		spec = api_json_parse_len(o.json + o.spec_off, o.spec_len);
		if (json_object_object_get_ex(spec, "sourceNative", &sn) &&
		    json_object_object_get_ex(sn, "source", &sv) &&
		    json_object_is_type(sv, json_type_string)) {
			src = json_object_get_string(sv);
			src_len = (size_t)json_object_get_string_len(sv);
		}
	}
	ok = api_may_change_stored(p, k->kind, k->id == API_RUN, name, src,
	    src_len, st);
	if (ok && k->id == API_VERIFICATION && p->prefix[0] != '\0') {
		spec = api_json_parse_len(o.json + o.spec_off, o.spec_len);
		ok = api_may_change_verification(p, api_json_str_at(spec,
		    "runName", NULL), st);
	}
	json_object_put(spec);
	store_abort(t);
	return ok;
}

/* May the caller write (verb, one of write_verbs) to kind k, the object
 * name (NULL: any)? Appends why to reason. */
static int
may_write(api_ctx *ctx, const api_reviewer *rv, const api_kind *k,
	const char *name, const char *verb, ki_buf *reason)
{
	const api_principal *p = rv->who;
	api_status st;
	int ok;

	api_status_init(&st);
	ok = api_may_write(p, &st);
	if (ok && k->id == API_THRESHOLD && (p->source[0] != '\0' ||
	    p->prefix[0] != '\0')) {
		/* As the write answers (api/upload.c): a Threshold labels
		 * every arriving run. */
		api_status_fail(&st, 403, "Forbidden", "this token is limited to "
		    "%s \"%s\", and a Threshold judges every run", p->source[0] ?
		    "the runs of" : "names starting with", p->source[0] ?
		    p->source : p->prefix);
		ok = 0;
	}
	if (ok && name != NULL && *name != '\0')
		ok = may_change(ctx, p, k, name, verb, &st);
	else if (ok && strcmp(verb, "create") != 0)
		/* Any object of the kind: as for one of another source's runs,
		 * or of another name, or a shared object, for a limited
		 * token (the write answers 403 for those). */
		ok = api_may_change_stored(p, k->kind, k->id == API_RUN, NULL,
		    NULL, 0, &st);
	if (!ok) {
		ki_buf_puts(reason, st.message ? st.message : "not allowed");
	} else if (p->source[0] != '\0' || p->prefix[0] != '\0') {
		ki_buf_printf(reason, "a %s token, limited to%s%s%s%s%s",
		    api_role_name(p->role), p->source[0] ? " runs from " : "",
		    p->source, p->source[0] && p->prefix[0] ? " and" : "",
		    p->prefix[0] ? " names starting with " : "", p->prefix);
	} else {
		ki_buf_printf(reason, "%s may write", p->token ? "the token's role" :
		    "a loopback client of a server without tokens");
	}
	api_status_free(&st);
	return ok;
}

/* Decides a request on comparisons, leaderboard or series by the rule
 * those endpoints apply: reading the stored runs is enough to GET any of
 * them and to POST (create) a Comparison, which stores nothing. */
static int
decide_analysis(const api_reviewer *rv, const char *res, const char *sub,
	const char *verb, ki_buf *reason)
{
	if (sub != NULL && *sub != '\0') {
		ki_buf_printf(reason, "no subresource \"%.64s\"", sub);
		return 0;
	}
	if (strcmp(verb, "get") != 0 && strcmp(verb, "list") != 0 &&
	    (strcmp(res, "comparisons") != 0 || strcmp(verb, "create") != 0)) {
		ki_buf_printf(reason, "the verb \"%.32s\" is not served on %s",
		    verb, res);
		return 0;
	}
	if (!may_read(rv)) {
		ki_buf_puts(reason, "reads need a bearer token");
		return 0;
	}
	ki_buf_puts(reason, rv->who->role >= API_ROLE_READER ?
	    "the token's role may read, which is enough here" :
	    "anonymous reads are on, which is enough here");
	return 1;
}

/* Decides one resource request (SelfSubjectAccessReview's
 * resourceAttributes, a json-c object, borrowed). */
static int
decide_resource(api_ctx *ctx, const api_reviewer *rv, struct json_object *ra,
	ki_buf *reason)
{
	const char *group = api_json_str_at(ra, "group", NULL);
	const char *res = api_json_str_at(ra, "resource", NULL);
	const char *sub = api_json_str_at(ra, "subresource", NULL);
	const char *verb = api_json_str_at(ra, "verb", NULL);
	const char *name = api_json_str_at(ra, "name", NULL);
	const api_kind *k = NULL;
	int all_kinds;

	if (verb == NULL || *verb == '\0') {
		ki_buf_puts(reason, "no verb was given");
		return 0;
	}
	if (group == NULL)
		group = "";
	if (res == NULL)
		res = "";
	if (strcmp(group, AUTHZ) == 0 && strcmp(verb, "create") == 0 &&
	    (strcmp(res, "selfsubjectaccessreviews") == 0 ||
	    strcmp(res, "selfsubjectrulesreviews") == 0)) {
		ki_buf_puts(reason, "every client may review itself");
		return 1;
	}
	if (strcmp(group, AUTHN) == 0 && strcmp(verb, "create") == 0 &&
	    strcmp(res, "selfsubjectreviews") == 0) {
		ki_buf_puts(reason, "every client may review itself");
		return 1;
	}
	if ((strcmp(group, API_GROUP) == 0 || strcmp(group, "*") == 0) &&
	    (strcmp(res, "comparisons") == 0 || strcmp(res, "leaderboard") == 0 ||
	    strcmp(res, "series") == 0))
		return decide_analysis(rv, res, sub, verb, reason);
	all_kinds = strcmp(res, "*") == 0;
	if (!all_kinds)
		k = api_kind_by_plural(res, strlen(res));
	if ((strcmp(group, API_GROUP) != 0 && strcmp(group, "*") != 0) ||
	    (k == NULL && !all_kinds)) {
		ki_buf_printf(reason, "this server has no resource \"%.64s\" in "
		    "the group \"%.64s\"", res, group);
		return 0;
	}
	if (sub != NULL && *sub != '\0' && strcmp(sub, "status") != 0) {
		ki_buf_printf(reason, "no subresource \"%.64s\"", sub);
		return 0;
	}
	if (in_list(read_verbs, verb)) {
		if (may_read(rv)) {
			ki_buf_puts(reason, rv->who->role >= API_ROLE_READER ?
			    "the token's role may read" : "anonymous reads are on");
			return 1;
		}
		ki_buf_puts(reason, "reads need a bearer token");
		return 0;
	}
	if (!in_list(write_verbs, verb) && strcmp(verb, "*") != 0) {
		ki_buf_printf(reason, "the verb \"%.32s\" is not served here", verb);
		return 0;
	}
	if (sub != NULL && strcmp(sub, "status") == 0) {
		ki_buf_puts(reason, "status is written by the server only");
		return 0;
	}
	if (strcmp(verb, "*") == 0 && !may_read(rv)) {
		ki_buf_puts(reason, "reads need a bearer token");
		return 0;
	}
	return may_write(ctx, rv, k != NULL ? k : api_kind_by_id(API_RUN), name,
	    verb, reason);
}

static int
decide_path(const api_reviewer *rv, struct json_object *na, ki_buf *reason)
{
	const char *path = api_json_str_at(na, "path", NULL);
	const char *verb = api_json_str_at(na, "verb", NULL);

	if (path == NULL || verb == NULL) {
		ki_buf_puts(reason, "nonResourceAttributes need a path and a verb");
		return 0;
	}
	if (strncmp(path, "/admin/", 7) == 0) {
		ki_buf_puts(reason, is_admin(rv->who) ? "an admin may manage tokens "
		    "and backups" : "tokens and backups need an admin token");
		return is_admin(rv->who);
	}
	if (strcmp(verb, "get") == 0 || strcmp(verb, "head") == 0) {
		ki_buf_puts(reason, may_read(rv) ? "reads are allowed" :
		    "reads need a bearer token");
		return may_read(rv);
	}
	ki_buf_printf(reason, "the verb \"%.32s\" on \"%.64s\" is not served "
	    "here", verb, path);
	return 0;
}

static void
user_info(const api_principal *p, ki_buf *b)
{
	if (p->token) {
		ki_buf_printf(b, "{\"username\":\"kernelindex:token:%s\",\"uid\":"
		    "\"%s\",\"groups\":[\"kernelindex:%ss\","
		    "\"system:authenticated\"]", p->id, p->id,
		    api_role_name(p->role));
	} else {
		ki_buf_printf(b, "{\"username\":\"system:anonymous\",\"groups\":["
		    "\"system:unauthenticated\"]");
	}
	if (p->source[0] != '\0' || p->prefix[0] != '\0') {
		ki_buf_puts(b, ",\"extra\":{");
		if (p->source[0] != '\0') {
			ki_buf_puts(b, "\"kernelindex.dev/source\":[");
			ki_buf_json_string(b, p->source, strlen(p->source));
			ki_buf_puts(b, "]");
		}
		if (p->prefix[0] != '\0') {
			ki_buf_puts(b, p->source[0] ? ",\"kernelindex.dev/prefix\":[" :
			    "\"kernelindex.dev/prefix\":[");
			ki_buf_json_string(b, p->prefix, strlen(p->prefix));
			ki_buf_puts(b, "]");
		}
		ki_buf_puts(b, "}");
	}
	ki_buf_puts(b, "}");
}

/* ---- the protobuf bodies kubectl sends for built-in kinds ----
 * kubectl sends reviews as application/vnd.kubernetes.protobuf: "k8s\0",
 * then a runtime.Unknown {1: TypeMeta {1: apiVersion, 2: kind}, 2: raw,
 * 3: contentEncoding, 4: contentType} whose raw is the review. Only the
 * fields of the reviews are read; any other is refused, not ignored. */

#define PB_MAX_DEPTH 4

typedef struct pb_field {
	int num;
	const char *name;              /* NULL: skipped (metadata, status) */
	const struct pb_field *sub;    /* a message; NULL: a string */
} pb_field;

static const pb_field pb_resattr[] = { { 1, "namespace", NULL },
	{ 2, "verb", NULL }, { 3, "group", NULL }, { 4, "version", NULL },
	{ 5, "resource", NULL }, { 6, "subresource", NULL },
	{ 7, "name", NULL }, { 0, NULL, NULL } };
static const pb_field pb_nonres[] = { { 1, "path", NULL },
	{ 2, "verb", NULL }, { 0, NULL, NULL } };
static const pb_field pb_access_spec[] = {
	{ 1, "resourceAttributes", pb_resattr },
	{ 2, "nonResourceAttributes", pb_nonres }, { 0, NULL, NULL } };
static const pb_field pb_rules_spec[] = { { 1, "namespace", NULL },
	{ 0, NULL, NULL } };
static const pb_field pb_access[] = { { 1, NULL, NULL },
	{ 2, "spec", pb_access_spec }, { 3, NULL, NULL }, { 0, NULL, NULL } };
static const pb_field pb_rules[] = { { 1, NULL, NULL },
	{ 2, "spec", pb_rules_spec }, { 3, NULL, NULL }, { 0, NULL, NULL } };
static const pb_field pb_self[] = { { 1, NULL, NULL }, { 2, NULL, NULL },
	{ 0, NULL, NULL } };

static int
pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* Reads one field: its number, and for a length-delimited one its bytes
 * (*data, *len). Returns 0, or -1 when malformed or of another wire
 * type. */
static int
pb_next(const uint8_t **p, const uint8_t *end, int *num,
	const uint8_t **data, size_t *len)
{
	uint64_t key, n;

	if (pb_varint(p, end, &key) != 0 || (key & 7) != 2 || key >> 3 > 1000 ||
	    pb_varint(p, end, &n) != 0 || n > (uint64_t)(end - *p))
		return -1;
	*num = (int)(key >> 3);
	*data = *p;
	*len = (size_t)n;
	*p += n;
	return 0;
}

/* Decodes the message p..p+n of fields f into out. */
static int
pb_decode(const uint8_t *p, size_t n, const pb_field *f,
	struct json_object *out, int depth)
{
	const uint8_t *end = p + n, *data;
	size_t len;
	int num;

	if (depth > PB_MAX_DEPTH)
		return -1;
	while (p < end) {
		const pb_field *x = f;
		struct json_object *v;

		if (pb_next(&p, end, &num, &data, &len) != 0)
			return -1;
		while (x->num != 0 && x->num != num)
			x++;
		if (x->num == 0)
			return -1;
		if (x->name == NULL)
			continue;
		if (x->sub != NULL) {
			if ((v = json_object_new_object()) == NULL ||
			    pb_decode(data, len, x->sub, v, depth + 1) != 0) {
				json_object_put(v);
				return -1;
			}
		} else {
			/* A string: well-formed UTF-8 without NUL, as JSON's. */
			for (size_t i = 0, n1; i < len; i += n1) {
				if (data[i] == 0 || (n1 = ki_utf8_len(data + i, len - i)) ==
				    0)
					return -1;
			}
			v = json_object_new_string_len((const char *)data, (int)len);
		}
		json_object_object_add(out, x->name, v);
	}
	return 0;
}

/* The review kind's JSON form of a protobuf body, or NULL when the body is
 * not a protobuf kind (one of these reviews) or is malformed. */
static struct json_object *
pb_review(const char *body, size_t blen, const char *kind)
{
	const uint8_t *p = (const uint8_t *)body, *end = p + blen, *data;
	const uint8_t *raw = NULL;
	const pb_field *f;
	struct json_object *o;
	char gv[64] = "", k[64] = "";
	size_t len, raw_len = 0;
	int num;

	if (blen < 4 || memcmp(body, "k8s\0", 4) != 0)
		return NULL;
	p += 4;
	while (p < end) {
		if (pb_next(&p, end, &num, &data, &len) != 0)
			return NULL;
		if (num == 1) {
			const uint8_t *q = data, *tend = data + len, *s;
			size_t sl;
			int tn;

			while (q < tend) {
				if (pb_next(&q, tend, &tn, &s, &sl) != 0 || sl >= 64)
					return NULL;
				if (tn == 1)
					snprintf(gv, sizeof(gv), "%.*s", (int)sl, s);
				else if (tn == 2)
					snprintf(k, sizeof(k), "%.*s", (int)sl, s);
			}
		} else if (num == 2) {
			raw = data;
			raw_len = len;
		} else if ((num == 3 || num == 4) && len > 0) {
			return NULL;     /* an encoding or type inside: not read */
		}
	}
	if (strcmp(k, kind) != 0)
		return NULL;
	f = strcmp(kind, "SelfSubjectAccessReview") == 0 ? pb_access :
	    strcmp(kind, "SelfSubjectRulesReview") == 0 ? pb_rules : pb_self;
	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_add(o, "kind", json_object_new_string(k));
	json_object_object_add(o, "apiVersion", json_object_new_string(gv));
	if (raw != NULL && pb_decode(raw, raw_len, f, o, 0) != 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* Warns (299, as an unknown field of an object is) of each member of o
 * (borrowed; NULL or no object: none) that known (NULL-ended) does not
 * name, at the JSON path prefix: a review reads no other, and says so. */
static void
warn_members(struct json_object *o, const char *prefix,
	const char *const *known, api_resp *r)
{
	if (o == NULL || !json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach(o, key, v) {
		const char *const *k = known;

		(void)v;
		while (*k != NULL && strcmp(*k, key) != 0)
			k++;
		if (*k == NULL)
			api_resp_warn(r, "unknown field \"%s%.64s\"", prefix, key);
	}
}

/* Warns of what a review's answer does not depend on although the
 * client sent it (o and its spec, borrowed). */
static void
warn_review(struct json_object *o, const char *kind, api_resp *r)
{
	static const char *const top[] = { "kind", "apiVersion", "metadata",
		"spec", "status", NULL };
	static const char *const top_self[] = { "kind", "apiVersion",
		"metadata", "status", NULL };
	static const char *const spec_access[] = { "resourceAttributes",
		"nonResourceAttributes", NULL };
	static const char *const spec_rules[] = { "namespace", NULL };
	static const char *const ra_known[] = { "namespace", "verb", "group",
		"version", "resource", "subresource", "name", "fieldSelector",
		"labelSelector", NULL };
	static const char *const na_known[] = { "path", "verb", NULL };
	struct json_object *spec = NULL, *ra = NULL, *v = NULL;
	int access = strcmp(kind, "SelfSubjectAccessReview") == 0;

	warn_members(o, "", strcmp(kind, "SelfSubjectReview") == 0 ? top_self :
	    top, r);
	if (!json_object_object_get_ex(o, "spec", &spec) ||
	    strcmp(kind, "SelfSubjectReview") == 0)
		return;
	warn_members(spec, "spec.", access ? spec_access : spec_rules, r);
	if (!access)
		return;
	json_object_object_get_ex(spec, "nonResourceAttributes", &v);
	warn_members(v, "spec.nonResourceAttributes.", na_known, r);
	if (!json_object_object_get_ex(spec, "resourceAttributes", &ra) ||
	    !json_object_is_type(ra, json_type_object))
		return;
	warn_members(ra, "spec.resourceAttributes.", ra_known, r);
	/* Selectors narrow a list or watch; the answer here is the same
	 * for every object of a resource, so they change nothing. */
	if (json_object_object_get_ex(ra, "fieldSelector", NULL) ||
	    json_object_object_get_ex(ra, "labelSelector", NULL))
		api_resp_warn(r, "spec.resourceAttributes' selectors are not read: "
		    "the answer is the same for every object of the resource");
}

/* Parses a review's body: a JSON object of kind (when it names one) and
 * apiVersion group/v1. Returns it (the caller puts) or NULL with r
 * filled. */
static struct json_object *
review_body(api_ctx *ctx, const char *body, size_t len, int protobuf,
	const char *kind, const char *gv, int spec_needed, api_resp *r)
{
	struct json_object *o = NULL, *spec;
	const char *s;
	api_status st;

	if (protobuf) {
		if ((o = pb_review(body, len, kind)) == NULL) {
			api_resp_fail(r, 400, "BadRequest", NULL, "the protobuf body "
			    "is not a %s this server reads (send JSON to see why)",
			    kind);
			return NULL;
		}
		goto check;
	}
	api_status_init(&st);
	if (api_json_parse(body, len, ctx->lim->max_depth, &o, &st) != KI_OK) {
		api_resp_status(r, &st);
		api_status_free(&st);
		return NULL;
	}
	api_status_free(&st);
check:
	if (!json_object_is_type(o, json_type_object)) {
		api_resp_fail(r, 400, "BadRequest", NULL, "the body must be a %s",
		    kind);
		goto bad;
	}
	if ((s = api_json_str_at(o, "kind", NULL)) != NULL &&
	    strcmp(s, kind) != 0) {
		api_resp_fail(r, 400, "BadRequest", "kind", "the body must be a %s, "
		    "not a %.64s", kind, s);
		goto bad;
	}
	if ((s = api_json_str_at(o, "apiVersion", NULL)) != NULL &&
	    strcmp(s, gv) != 0) {
		api_resp_fail(r, 400, "BadRequest", "apiVersion", "the apiVersion "
		    "must be %s, not %.64s", gv, s);
		goto bad;
	}
	if (spec_needed && (!json_object_object_get_ex(o, "spec", &spec) ||
	    !json_object_is_type(spec, json_type_object))) {
		api_resp_fail(r, 422, "Invalid", "spec", "spec: Required value");
		goto bad;
	}
	warn_review(o, kind, r);
	return o;
bad:
	json_object_put(o);
	return NULL;
}

/* Writes the answer: the review as sent, its kind, apiVersion and
 * metadata set, and status (the JSON text st). */
static void
answer(struct json_object *o, const char *kind, const char *gv,
	const char *status, api_resp *r)
{
	struct json_object *meta = json_object_new_object();

	json_object_object_add(o, "kind", json_object_new_string(kind));
	json_object_object_add(o, "apiVersion", json_object_new_string(gv));
	if (meta != NULL)
		json_object_object_add(meta, "creationTimestamp", NULL);
	json_object_object_add(o, "metadata", meta);
	json_object_object_del(o, "status");
	{
		const char *text = json_object_to_json_string_ext(o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		size_t n = strlen(text);

		/* text ends with '}': status goes in before it. */
		ki_buf_append(&r->body, text, n - 1);
		ki_buf_printf(&r->body, "%s\"status\":%s}", n > 2 ? "," : "",
		    status);
	}
	if (r->body.oom) {
		ki_buf_reset(&r->body);
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
		return;
	}
	r->code = 201;
}

static void
access_review(api_ctx *ctx, const api_reviewer *rv, const char *body,
	size_t len, int pb, api_resp *r)
{
	struct json_object *o, *spec, *ra = NULL, *na = NULL;
	ki_buf reason, status;
	int ok;

	o = review_body(ctx, body, len, pb, "SelfSubjectAccessReview", AUTHZ "/v1",
	    1, r);
	if (o == NULL)
		return;
	ki_buf_init(&reason);
	ki_buf_init(&status);
	spec = json_object_object_get(o, "spec");
	json_object_object_get_ex(spec, "resourceAttributes", &ra);
	json_object_object_get_ex(spec, "nonResourceAttributes", &na);
	if ((ra != NULL) == (na != NULL) ||
	    (ra != NULL && !json_object_is_type(ra, json_type_object)) ||
	    (na != NULL && !json_object_is_type(na, json_type_object))) {
		api_resp_fail(r, 422, "Invalid", "spec.resourceAttributes",
		    "exactly one of resourceAttributes and nonResourceAttributes "
		    "must be given, as an object");
		goto out;
	}
	ok = ra != NULL ? decide_resource(ctx, rv, ra, &reason) :
	    decide_path(rv, na, &reason);
	ki_buf_printf(&status, "{\"allowed\":%s,\"reason\":",
	    ok ? "true" : "false");
	ki_buf_json_string(&status, reason.data ? reason.data : "", reason.len);
	ki_buf_putc(&status, '}');
	answer(o, "SelfSubjectAccessReview", AUTHZ "/v1", status.data, r);
out:
	json_object_put(o);
	ki_buf_free(&reason);
	ki_buf_free(&status);
}

static void
rules_review(api_ctx *ctx, const api_reviewer *rv, const char *body,
	size_t len, int pb, api_resp *r)
{
	const api_principal *p = rv->who;
	struct json_object *o;
	ki_buf s;
	api_status st;

	o = review_body(ctx, body, len, pb, "SelfSubjectRulesReview", AUTHZ "/v1", 0,
	    r);
	if (o == NULL)
		return;
	ki_buf_init(&s);
	ki_buf_puts(&s, "{\"resourceRules\":[{\"verbs\":[\"create\"],"
	    "\"apiGroups\":[\"" AUTHZ "\"],\"resources\":["
	    "\"selfsubjectaccessreviews\",\"selfsubjectrulesreviews\"]},"
	    "{\"verbs\":[\"create\"],\"apiGroups\":[\"" AUTHN "\"],"
	    "\"resources\":[\"selfsubjectreviews\"]}");
	if (may_read(rv))
		ki_buf_puts(&s, ",{\"verbs\":[\"get\",\"list\",\"watch\"],"
		    "\"apiGroups\":[\"" API_GROUP "\"],\"resources\":[\"*\"]}");
	api_status_init(&st);
	if (api_may_write(p, &st)) {
		int limited = p->source[0] != '\0' || p->prefix[0] != '\0';
		int first = 1;

		/* As the writes answer: a limited token writes no Threshold,
		 * and one limited to a source changes only runs (of that
		 * source), creating the other kinds. */
		ki_buf_puts(&s, ",{\"verbs\":[\"create\"");
		if (p->source[0] == '\0')
			ki_buf_puts(&s, ",\"update\",\"patch\",\"delete\"");
		ki_buf_puts(&s, "],\"apiGroups\":[\"" API_GROUP "\"],"
		    "\"resources\":[");
		for (int id = 1; id <= API_NKINDS; id++) {
			if (limited && id == API_THRESHOLD)
				continue;
			ki_buf_printf(&s, "%s\"%s\"", first ? "" : ",",
			    api_kind_by_id(id)->plural);
			first = 0;
		}
		ki_buf_puts(&s, "]}");
		if (p->source[0] != '\0')
			ki_buf_puts(&s, ",{\"verbs\":[\"update\",\"patch\","
			    "\"delete\"],\"apiGroups\":[\"" API_GROUP "\"],"
			    "\"resources\":[\"benchmarkruns\"]}");
	}
	api_status_free(&st);
	ki_buf_puts(&s, "],\"nonResourceRules\":[{\"verbs\":[\"get\"],"
	    "\"nonResourceURLs\":[\"/healthz\",\"/livez\",\"/readyz\","
	    "\"/version\"]}");
	if (may_read(rv))
		ki_buf_puts(&s, ",{\"verbs\":[\"get\"],\"nonResourceURLs\":["
		    "\"/api\",\"/api/*\",\"/apis\",\"/apis/*\",\"/openapi/*\","
		    "\"/metrics\"]}");
	if (is_admin(p))
		ki_buf_puts(&s, ",{\"verbs\":[\"*\"],\"nonResourceURLs\":["
		    "\"/admin/*\"]}");
	/* Rules cannot say "runs from one source" nor "names starting
	 * with": for a limited token they say more than it may, and are
	 * marked incomplete, with the limit told. */
	ki_buf_printf(&s, "],\"incomplete\":%s", p->source[0] != '\0' ||
	    p->prefix[0] != '\0' ? "true" : "false");
	if (p->source[0] != '\0' || p->prefix[0] != '\0') {
		ki_buf b;

		ki_buf_init(&b);
		ki_buf_printf(&b, "writes are limited to%s%s%s%s%s",
		    p->source[0] ? " runs from " : "", p->source,
		    p->source[0] && p->prefix[0] ? " and" : "",
		    p->prefix[0] ? " names starting with " : "", p->prefix);
		ki_buf_puts(&s, ",\"evaluationError\":");
		ki_buf_json_string(&s, b.data, b.len);
		ki_buf_free(&b);
	}
	ki_buf_putc(&s, '}');
	answer(o, "SelfSubjectRulesReview", AUTHZ "/v1", s.data, r);
	json_object_put(o);
	ki_buf_free(&s);
}

static void
self_review(api_ctx *ctx, const api_reviewer *rv, const char *body,
	size_t len, int pb, api_resp *r)
{
	struct json_object *o;
	ki_buf s;

	o = review_body(ctx, body, len, pb, "SelfSubjectReview", AUTHN "/v1", 0, r);
	if (o == NULL)
		return;
	ki_buf_init(&s);
	ki_buf_puts(&s, "{\"userInfo\":");
	user_info(rv->who, &s);
	ki_buf_putc(&s, '}');
	answer(o, "SelfSubjectReview", AUTHN "/v1", s.data, r);
	json_object_put(o);
	ki_buf_free(&s);
}

static void
group_doc(ki_buf *b, const char *group)
{
	ki_buf_printf(b, "{\"name\":\"%s\",\"versions\":[{\"groupVersion\":"
	    "\"%s/v1\",\"version\":\"v1\"}],\"preferredVersion\":{"
	    "\"groupVersion\":\"%s/v1\",\"version\":\"v1\"}}", group, group,
	    group);
}

void
api_review_groups(ki_buf *b)
{
	ki_buf_putc(b, ',');
	group_doc(b, AUTHZ);
	ki_buf_putc(b, ',');
	group_doc(b, AUTHN);
}

static void
resource(ki_buf *b, const char *plural, const char *singular,
	const char *kind, int first)
{
	ki_buf_printf(b, "%s{\"name\":\"%s\",\"singularName\":\"%s\","
	    "\"namespaced\":false,\"kind\":\"%s\",\"verbs\":[\"create\"]}",
	    first ? "" : ",", plural, singular, kind);
}

int
api_review_route(api_ctx *ctx, const api_reviewer *rv, const char *method,
	const char *path, const char *body, size_t len, const char *mt,
	api_resp *r)
{
	const char *group, *rest;
	int authz, pb = strcmp(mt, "application/vnd.kubernetes.protobuf") == 0;

	if (strncmp(path, "/apis/" AUTHZ, strlen("/apis/" AUTHZ)) == 0)
		authz = 1;
	else if (strncmp(path, "/apis/" AUTHN, strlen("/apis/" AUTHN)) == 0)
		authz = 0;
	else
		return 0;
	group = authz ? AUTHZ : AUTHN;
	rest = path + strlen("/apis/") + strlen(group);
	if (*rest != '\0' && *rest != '/')
		return 0;
	if (strcmp(rest, "") == 0 || strcmp(rest, "/") == 0 ||
	    strcmp(rest, "/v1") == 0 || strcmp(rest, "/v1/") == 0) {
		if (strcmp(method, "GET") != 0) {
			api_resp_fail(r, 405, "MethodNotAllowed", NULL, "the server "
			    "does not allow the method %s for the requested resource",
			    method);
			return 1;
		}
		if (strncmp(rest, "/v1", 3) != 0) {
			ki_buf_puts(&r->body, "{\"kind\":\"APIGroup\",\"apiVersion\":"
			    "\"v1\",");
			{
				ki_buf g;

				ki_buf_init(&g);
				group_doc(&g, group);
				ki_buf_append(&r->body, g.data + 1, g.len - 1);
				ki_buf_free(&g);
			}
			r->code = 200;
			return 1;
		}
		ki_buf_printf(&r->body, "{\"kind\":\"APIResourceList\",\"apiVersion\":"
		    "\"v1\",\"groupVersion\":\"%s/v1\",\"resources\":[", group);
		if (authz) {
			resource(&r->body, "selfsubjectaccessreviews",
			    "selfsubjectaccessreview", "SelfSubjectAccessReview", 1);
			resource(&r->body, "selfsubjectrulesreviews",
			    "selfsubjectrulesreview", "SelfSubjectRulesReview", 0);
		} else {
			resource(&r->body, "selfsubjectreviews", "selfsubjectreview",
			    "SelfSubjectReview", 1);
		}
		ki_buf_puts(&r->body, "]}");
		r->code = 200;
		return 1;
	}
	if (strncmp(rest, "/v1/", 4) != 0)
		goto not_found;
	rest += 4;
	if (strcmp(rest, authz ? "selfsubjectaccessreviews" :
	    "selfsubjectreviews") != 0 && !(authz &&
	    strcmp(rest, "selfsubjectrulesreviews") == 0))
		goto not_found;
	if (strcmp(method, "POST") != 0) {
		api_resp_fail(r, 405, "MethodNotAllowed", NULL, "a review is "
		    "created (POST), never read: the answer is in the reply");
		return 1;
	}
	if (mt[0] != '\0' && !pb && strcmp(mt, "application/json") != 0) {
		api_resp_fail(r, 415, "UnsupportedMediaType", NULL, "the "
		    "Content-Type \"%.64s\" is not supported: send "
		    "application/json or application/vnd.kubernetes.protobuf", mt);
		return 1;
	}
	if (!authz)
		self_review(ctx, rv, body, len, pb, r);
	else if (strcmp(rest, "selfsubjectaccessreviews") == 0)
		access_review(ctx, rv, body, len, pb, r);
	else
		rules_review(ctx, rv, body, len, pb, r);
	return 1;
not_found:
	api_resp_fail(r, 404, "NotFound", NULL, "the server could not find the "
	    "requested resource");
	return 1;
}
