/* server/router.c — the routes of the API, the probes and the page. */
#include "server/router.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/admin.h"
#include "api/auth.h"
#include "api/compare.h"
#include "api/options.h"
#include "api/review.h"
#include "api/schema.h"
#include "api/table.h"
#include "server/encode.h"

#define MAX_STATIC_FILE (8 * 1024 * 1024)

/* A Status answer without a field cause. */
#define fail(r, code, reason, ...) \
	api_resp_fail(r, code, reason, NULL, __VA_ARGS__)

/* The caller of the request being routed (one request per thread). */
static _Thread_local api_principal who;

static void
not_found(api_resp *r)
{
	fail(r, 404, "NotFound", "the server could not find the requested "
	    "resource");
}

/* allow: the methods the resource takes, for the Allow header (static). */
static void
method_not_allowed(api_resp *r, const char *method, const char *allow)
{
	fail(r, 405, "MethodNotAllowed", "the server does not allow the method "
	    "%.16s for the requested resource", method);
	r->allow = allow;
}

#define ALLOW_READ "GET, HEAD"
#define ALLOW_COLLECTION "GET, HEAD, POST"
#define ALLOW_ITEM "GET, HEAD, PUT, PATCH, DELETE"

/* Fills r with a 406: the Accept header admits nothing the endpoint
 * produces (forms names what it does). */
static void
not_acceptable(api_resp *r, const char *forms)
{
	api_resp_fail(r, 406, "NotAcceptable", NULL, "the Accept header admits "
	    "none of the representations available: %s", forms);
}

/* The API's answers are JSON (YAML, and CSV where an endpoint makes it):
 * an Accept header under /api or /apis that admits none of them is a 406
 * before anything is done, as kube-apiserver answers, not a JSON answer
 * the client did not ask for. Returns 1, or 0 with r filled. */
static int
api_accept_ok(const http_req *req, api_resp *r)
{
	const char *p = req->path;

	if (strcmp(p, "/api") != 0 && strncmp(p, "/api/", 5) != 0 &&
	    strcmp(p, "/apis") != 0 && strncmp(p, "/apis/", 6) != 0)
		return 1;
	if (enc_accepts(req->header(req->cls, "Accept"), ENC_YAML | ENC_CSV))
		return 1;
	not_acceptable(r, "the API answers application/json, application/yaml "
	    "or (some reads) text/csv");
	return 0;
}

/* A boolean query parameter read as Go's strconv.ParseBool does: *out is
 * 0 or 1 (0 when absent or empty). Returns -1 with r filled (400 naming
 * the parameter) on any other value. */
static int
bool_arg(const http_req *req, const char *name, int *out, api_resp *r)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true",
		"True" };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false",
		"False" };
	const char *v = req->arg(req->cls, name);

	*out = 0;
	if (v == NULL || *v == '\0')
		return 0;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcmp(v, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcmp(v, no[i]) == 0)
			return 0;
	}
	api_resp_fail(r, 400, "BadRequest", name, "invalid %s value \"%.32s\": "
	    "a boolean is expected (true or false, 1 or 0, t or f)", name, v);
	return -1;
}

/* A query parameter that must be a decimal number up to max, when given
 * and not empty: *out (0 when absent). Returns -1 with r filled (400
 * naming it) on any other value. */
static int
uint_arg(const http_req *req, const char *name, unsigned long long max,
	unsigned long long *out, api_resp *r)
{
	const char *v = req->arg(req->cls, name);
	char *end;

	*out = 0;
	if (v == NULL || *v == '\0')
		return 0;
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 ||
	    *out > max) {
		api_resp_fail(r, 400, "BadRequest", name, "invalid %s \"%.32s\": "
		    "a decimal number up to %llu is expected", name, v, max);
		return -1;
	}
	return 0;
}

/* Is the versionLabel parameter, where given, a label key? (One that is
 * not names no label, and was read as one that no run carries.) Returns
 * 0, or -1 with r filled (400). */
static int
version_label_ok(const http_req *req, api_resp *r)
{
	const char *v = req->arg(req->cls, "versionLabel");

	if (v == NULL || api_is_label_key(v, strlen(v)))
		return 0;
	api_resp_fail(r, 400, "BadRequest", "versionLabel", "invalid "
	    "versionLabel \"%.64s\": a label key is expected (an optional "
	    "DNS-subdomain prefix and '/', then 1 to 63 alphanumeric "
	    "characters, '-', '_' or '.')", v);
	return -1;
}

/* Query parameters every endpoint takes, as kube-apiserver does: pretty
 * (the same document, indented or not) and timeout (kubectl's
 * --request-timeout; no answer here is held that long). */
static const char *const ARGS_ANY[] = { "pretty", "timeout", NULL };

/* The parameters of each kind of request (NULL-ended). */
static const char *const ARGS_LIST[] = { "limit", "continue",
	"labelSelector", "fieldSelector", "resourceVersion",
	"resourceVersionMatch", "watch", "allowWatchBookmarks",
	"timeoutSeconds", "includeObject", NULL };
/* The runs' list also answers in CSV. */
static const char *const ARGS_LIST_RUNS[] = { "limit", "continue",
	"labelSelector", "fieldSelector", "resourceVersion",
	"resourceVersionMatch", "watch", "allowWatchBookmarks",
	"timeoutSeconds", "includeObject", "format", "versionLabel", NULL };
/* A watch reads no page (limit, continue) and no CSV. */
static const char *const ARGS_WATCH[] = { "labelSelector", "fieldSelector",
	"resourceVersion", "watch", "allowWatchBookmarks", "timeoutSeconds",
	"includeObject", NULL };
static const char *const ARGS_GET[] = { "resourceVersion", "includeObject",
	NULL };
static const char *const ARGS_CREATE[] = { "dryRun", "fieldValidation",
	"fieldManager", "atomic", NULL };
static const char *const ARGS_UPDATE[] = { "dryRun", "fieldValidation",
	"fieldManager", "force", NULL };
/* A PUT reads no force (an apply's). */
static const char *const ARGS_PUT[] = { "dryRun", "fieldValidation",
	"fieldManager", NULL };
static const char *const ARGS_DELETE[] = { "dryRun", "propagationPolicy",
	"gracePeriodSeconds", "orphanDependents", NULL };
/* The answers computed from the stored runs, and a read by digest. */
static const char *const ARGS_FACETS[] = { "labelSelector", NULL };
static const char *const ARGS_SERIES[] = { "labelSelector", "versionLabel",
	"includeImplausible", "format", NULL };
static const char *const ARGS_LEADERBOARD[] = { "gpu", "labelSelector",
	"versionLabel", "includeImplausible", "format", NULL };
static const char *const ARGS_COMPARE[] = { "baseline", "candidate",
	"labelSelector", "versionLabel", "includeImplausible",
	"thresholdPercent", "format", NULL };
static const char *const ARGS_COMPARE_POST[] = { "format", NULL };
static const char *const ARGS_DIGEST[] = { "resourceVersion", NULL };
/* Static files and reviews read no parameter. */
static const char *const STATIC_ARGS[] = { NULL };

static int
listed(const char *const *set, const char *name)
{
	for (; *set != NULL; set++)
		if (strcmp(*set, name) == 0)
			return 1;
	return 0;
}

/* Warns (299, as an unknown field is) of each query parameter of req that
 * neither known nor ARGS_ANY names: passed over, but not in silence. */
static void
warn_unknown_args(const http_req *req, const char *const *known,
	api_resp *r)
{
	const char *names[32];
	size_t n;

	if (req->arg_names == NULL)
		return;
	n = req->arg_names(req->cls, names, sizeof(names) / sizeof(names[0]));
	if (n > sizeof(names) / sizeof(names[0]))
		n = sizeof(names) / sizeof(names[0]);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (k < i && strcmp(names[k], names[i]) != 0)
			k++;
		if (k < i || listed(known, names[i]) || listed(ARGS_ANY, names[i]))
			continue;
		api_resp_warn(r, "unknown query parameter \"%.64s\" ignored",
		    names[i]);
	}
}

/* Media type without parameters, lower-cased, into out ("" when there is
 * none or it is no media type: content_type_ok refuses those). */
static void
media_type(const char *ct, char *out, size_t n)
{
	const char *why;

	(void)enc_content_type(ct, out, n, &why);
}

/* Is the Content-Type ct (may be NULL) one this server reads? A value
 * that is no media type, or names a parameter twice, is 400 (which
 * charset did the client mean?); a charset other than UTF-8 is 415 (JSON
 * is UTF-8, RFC 8259 8.1), not read as UTF-8 in silence. Returns 1, or 0
 * with r filled. */
static int
content_type_ok(const char *ct, api_resp *r)
{
	const char *why;
	char mt[128];
	int rc = enc_content_type(ct, mt, sizeof(mt), &why);

	if (rc == ENC_CT_CHARSET)
		fail(r, 415, "UnsupportedMediaType", "the body's charset must be "
		    "UTF-8 (JSON is UTF-8): send it as UTF-8, or drop the "
		    "charset");
	else if (rc != 0)
		fail(r, 400, "BadRequest", "the Content-Type \"%.96s\" is not a "
		    "media type as RFC 9110 writes one: %s", ct, why);
	return rc == 0;
}

static int
is_ndjson(const char *mt)
{
	/* Not application/json-seq: its records start with RS (RFC 7464),
	 * which the NDJSON reader would take for part of a document. */
	return strcmp(mt, "application/x-ndjson") == 0 ||
	    strcmp(mt, "application/jsonl") == 0;
}

size_t
router_body_limit(const router *rt, const char *content_type)
{
	char mt[128];

	media_type(content_type, mt, sizeof(mt));
	return is_ndjson(mt) ? rt->api->lim->max_bulk_body :
	    rt->api->lim->max_body;
}

static int
write_opts(const http_req *req, api_write_opts *o, api_resp *r)
{
	const char *dry = req->arg(req->cls, "dryRun");
	const char *fv = req->arg(req->cls, "fieldValidation");
	const char *fm = req->arg(req->cls, "fieldManager");

	memset(o, 0, sizeof(*o));
	o->who = &who;
	o->if_match = req->header(req->cls, "If-Match");
	o->if_none_match = req->header(req->cls, "If-None-Match");
	/* An empty dryRun is no value either (kube-apiserver: 400), not
	 * "no dry run": the client meant something. */
	if (dry != NULL) {
		if (strcmp(dry, "All") != 0) {
			fail(r, 400, "BadRequest", "invalid dryRun value \"%.32s\": the "
			    "only supported value is All", dry);
			return -1;
		}
		o->dry_run = 1;
	}
	/* kube-apiserver's ValidateFieldManager: at most 128 bytes, all
	 * printable. No field managers are kept here, but one that could
	 * never be kept is refused, as there. */
	if (fm != NULL) {
		size_t n = strlen(fm);
		int printable = 1;

		for (size_t i = 0; i < n; i++)
			if ((unsigned char)fm[i] < 0x20 || fm[i] == 0x7f)
				printable = 0;
		if (n > 128 || !printable) {
			api_resp_fail(r, 422, "Invalid", "fieldManager", "fieldManager: "
			    "%s", n > 128 ?
			    "Too long: may not be more than 128 bytes" :
			    "Invalid value: must only contain printable characters");
			return -1;
		}
	}
	if (fv == NULL || *fv == '\0' || strcmp(fv, "Warn") == 0)
		o->field_validation = API_FV_WARN;
	else if (strcmp(fv, "Strict") == 0)
		o->field_validation = API_FV_STRICT;
	else if (strcmp(fv, "Ignore") == 0)
		o->field_validation = API_FV_IGNORE;
	else {
		fail(r, 400, "BadRequest", "invalid fieldValidation value \"%.32s\": "
		    "use Strict, Warn or Ignore", fv);
		return -1;
	}
	return bool_arg(req, "atomic", &o->atomic, r);
}

/* If-Match on a POST to a collection: the collection has no ETag, so only
 * "*" (it exists) holds; anything else is a 412 rather than ignored. */
static int
collection_if_match(const api_write_opts *o, api_resp *r)
{
	const char *p = o->if_none_match;

	/* If-None-Match: "*" is false where the target (the collection)
	 * exists, so the POST is not made (RFC 9110 13.1.2); a list of tags
	 * holds, the collection having none. */
	if (p != NULL) {
		p += strspn(p, " \t,");
		for (; *p != '\0'; p += strspn(p, " \t,")) {
			if (*p == '*') {
				fail(r, 412, "PreconditionFailed", "If-None-Match: * "
				    "on a POST to a collection, which exists (send it "
				    "with a PATCH that applies one object)");
				return -1;
			}
			if (strncmp(p, "W/", 2) == 0)
				p += 2;
			if (*p != '"' || strchr(p + 1, '"') == NULL) {
				fail(r, 400, "BadRequest", "If-None-Match: a list of "
				    "entity tags (\"...\") or *");
				return -1;
			}
			p = strchr(p + 1, '"') + 1;
		}
	}
	p = o->if_match;
	if (p == NULL)
		return 0;
	while (*p == ' ' || *p == '\t')
		p++;
	if (p[0] == '*' && p[strspn(p + 1, " \t") + 1] == '\0')
		return 0;
	fail(r, 412, "PreconditionFailed", "If-Match: a collection has no ETag "
	    "(send If-Match with a PUT, PATCH or DELETE of one object)");
	return -1;
}

static int
writes_allowed(const http_req *req, api_resp *r)
{
	api_status st;

	(void)req;
	api_status_init(&st);
	if (api_may_write(&who, &st)) {
		api_status_free(&st);
		return 1;
	}
	api_resp_status(r, &st);
	api_status_free(&st);
	return 0;
}

/* Does the Accept header ask for a meta.k8s.io Table? */
static int
wants_table(const http_req *req)
{
	const char *a = req->header(req->cls, "Accept");

	return a != NULL && strstr(a, "as=Table") != NULL;
}

/* includeObject (None, Metadata, Object, as kube-apiserver takes it), or
 * -1 with r filled (400) for another value. */
static int
include_of(const http_req *req, api_resp *r)
{
	const char *v = req->arg(req->cls, "includeObject");

	if (v == NULL || *v == '\0' || strcmp(v, "Metadata") == 0)
		return API_INCLUDE_METADATA;
	if (strcmp(v, "Object") == 0)
		return API_INCLUDE_OBJECT;
	if (strcmp(v, "None") == 0)
		return API_INCLUDE_NONE;
	api_resp_fail(r, 400, "BadRequest", "includeObject", "invalid "
	    "includeObject \"%.32s\": None, Metadata or Object", v);
	return -1;
}

static void
start_watch(const api_kind *k, const http_req *req, api_resp *r,
	watch_params **watch)
{
	const char *rv = req->arg(req->cls, "resourceVersion");
	const char *to = req->arg(req->cls, "timeoutSeconds");
	const char *ls = req->arg(req->cls, "labelSelector");
	const char *fs = req->arg(req->cls, "fieldSelector");
	watch_params *p = calloc(1, sizeof(*p));
	char *end;

	if (p == NULL) {
		api_fail_rc(r, KI_ENOMEM, "starting the watch");
		return;
	}
	if (!enc_accepts(req->header(req->cls, "Accept"), 0)) {
		free(p);
		not_acceptable(r, "a watch streams application/json (or its "
		    "Table form)");
		return;
	}
	p->kind = k;
	p->table = wants_table(req);
	if (req->arg(req->cls, "resourceVersionMatch") != NULL) {
		/* A watch starts after resourceVersion, whatever the match
		 * asked; kube-apiserver refuses it too (without
		 * sendInitialEvents, which is not served). */
		free(p);
		api_resp_fail(r, 400, "BadRequest", "resourceVersionMatch",
		    "resourceVersionMatch is forbidden for watch: a watch "
		    "starts after its resourceVersion");
		return;
	}
	if ((p->include = include_of(req, r)) < 0 ||
	    bool_arg(req, "allowWatchBookmarks", &p->bookmarks, r) != 0) {
		free(p);
		return;
	}
	if (rv == NULL || *rv == '\0' || strcmp(rv, "0") == 0) {
		p->initial = 1;
	} else {
		errno = 0;
		p->rv = strtoull(rv, &end, 10);
		if (*end != '\0' || errno != 0 || rv[0] < '0' || rv[0] > '9') {
			free(p);
			api_resp_fail(r, 400, "BadRequest", "resourceVersion",
			    "invalid resourceVersion \"%.32s\": a decimal number "
			    "below 2^64 is expected", rv);
			return;
		}
	}
	if (to != NULL && *to != '\0') {
		long v;

		errno = 0;
		v = strtol(to, &end, 10);
		if (*end != '\0' || errno != 0 || v < 0 || to[0] < '0' ||
		    to[0] > '9') {
			free(p);
			api_resp_fail(r, 400, "BadRequest", "timeoutSeconds",
			    "invalid timeoutSeconds \"%.32s\": a non-negative "
			    "integer is expected", to);
			return;
		}
		p->timeout = v > 86400 ? 86400 : (int)v;
	}
	p->label_selector = ls ? strdup(ls) : NULL;
	p->field_selector = fs ? strdup(fs) : NULL;
	{
		/* The stream's answer carries a Warning for each parameter
		 * a watch does not read (as many as fit). */
		api_resp w;
		size_t off = 0;

		api_resp_init(&w);
		warn_unknown_args(req, ARGS_WATCH, &w);
		for (size_t i = 0; i < (size_t)w.nwarnings; i++) {
			size_t n = strlen(w.warnings[i]) + 1;

			if (off + n + 1 > sizeof(p->warnings))
				break;
			memcpy(p->warnings + off, w.warnings[i], n);
			off += n;
		}
		p->warnings[off] = '\0';
		api_resp_free(&w);
	}
	*watch = p;
}

/* Does the request ask for CSV (format=csv, or Accept: text/csv)? -1
 * after filling r when format names something else. */
static int
wants_csv(const http_req *req, api_resp *r)
{
	const char *f = req->arg(req->cls, "format");
	const char *a = req->header(req->cls, "Accept");

	if (f != NULL && *f != '\0') {
		if (strcmp(f, "csv") == 0)
			return 1;
		if (strcmp(f, "json") == 0)
			return 0;
		api_resp_fail(r, 400, "BadRequest", "format", "invalid format "
		    "\"%.32s\": use csv or json", f);
		return -1;
	}
	return a != NULL && strstr(a, "text/csv") != NULL &&
	    strstr(a, "application/json") == NULL;
}

/* comparisons (POST a Comparison, or GET with its selectors as query
 * parameters), leaderboard and series (GET): answers from the stored runs,
 * which reading them is enough for. Returns 1 when rest was one of
 * them. */
static int
analysis(router *rt, const char *rest, const http_req *req, api_resp *r)
{
	int csv, implausible;

	if (strcmp(rest, "comparisons") != 0 && strcmp(rest, "leaderboard") != 0 &&
	    strcmp(rest, "series") != 0)
		return 0;
	if (!enc_accepts(req->header(req->cls, "Accept"), ENC_YAML | ENC_CSV)) {
		not_acceptable(r, "this answer is application/json, "
		    "application/yaml or text/csv");
		return 1;
	}
	if ((csv = wants_csv(req, r)) < 0)
		return 1;
	if (strcmp(rest, "comparisons") == 0 &&
	    strcmp(req->method, "POST") == 0) {
		char mt[128];

		media_type(req->header(req->cls, "Content-Type"), mt, sizeof(mt));
		if (mt[0] != '\0' && strcmp(mt, "application/json") != 0 &&
		    strcmp(mt, "application/x-www-form-urlencoded") != 0) {
			fail(r, 415, "UnsupportedMediaType", "a Comparison is sent "
			    "as application/json, not \"%.64s\"", mt);
			return 1;
		}
		api_compare_post(rt->api, req->body, req->body_len, csv, r);
		warn_unknown_args(req, ARGS_COMPARE_POST, r);
		return 1;
	}
	if (strcmp(req->method, "GET") != 0) {
		method_not_allowed(r, req->method, strcmp(rest, "comparisons") ==
		    0 ? "GET, HEAD, POST" : ALLOW_READ);
		return 1;
	}
	if (bool_arg(req, "includeImplausible", &implausible, r) < 0 ||
	    version_label_ok(req, r) < 0)
		return 1;
	if (strcmp(rest, "series") == 0) {
		if (csv)
			api_runs_csv(rt->api, req->arg(req->cls, "labelSelector"),
			    req->arg(req->cls, "versionLabel"), implausible, r);
		else
			api_series(rt->api, req->arg(req->cls, "labelSelector"),
			    req->arg(req->cls, "versionLabel"), implausible, r);
		warn_unknown_args(req, ARGS_SERIES, r);
		return 1;
	}
	if (strcmp(rest, "leaderboard") == 0) {
		api_leaderboard(rt->api, req->arg(req->cls, "gpu"),
		    req->arg(req->cls, "labelSelector"), req->arg(req->cls,
		    "versionLabel"), implausible, csv, r);
		warn_unknown_args(req, ARGS_LEADERBOARD, r);
		return 1;
	}
	{
		api_compare_spec s;
		const char *t = req->arg(req->cls, "thresholdPercent");
		char *end = NULL;

		memset(&s, 0, sizeof(s));
		s.baseline = req->arg(req->cls, "baseline");
		s.candidate = req->arg(req->cls, "candidate");
		s.common = req->arg(req->cls, "labelSelector");
		s.version_label = req->arg(req->cls, "versionLabel");
		s.include_implausible = implausible;
		s.threshold_pct = API_COMPARE_DEFAULT_THRESHOLD;
		if (t != NULL && *t != '\0') {
			/* A decimal number: strtod also takes spaces before it,
			 * hexadecimal ("0x10" is 16), "nan" and "inf". */
			s.threshold_pct = strtod(t, &end);
			if (strspn(t, "0123456789.eE+-") != strlen(t) ||
			    *end != '\0' || !(s.threshold_pct >= 0 &&
			    s.threshold_pct < 1000)) {
				api_resp_fail(r, 400, "BadRequest", "thresholdPercent",
				    "invalid thresholdPercent \"%.32s\": a number of "
				    "percent from 0 to 1000", t);
				return 1;
			}
		}
		api_compare_get(rt->api, &s, csv, r);
		warn_unknown_args(req, ARGS_COMPARE, r);
	}
	return 1;
}

/* Whether a read's resourceVersion (rv, as uint_arg parsed it) is "0":
 * any version, what the store has, as kube-apiserver serves it from its
 * cache without waiting; none asks for the newest state. */
static int
rv_any(const http_req *req, unsigned long long rv)
{
	const char *v = req->arg(req->cls, "resourceVersion");

	return v != NULL && *v != '\0' && rv == 0;
}

/* resourceVersion (rv, digits or NULL) and resourceVersionMatch of a
 * list, as kube-apiserver reads them: NotOlderThan (or no match) asks for
 * a list at least as new as rv, Exact for that version. Returns 0, or -1
 * with r filled (400). */
static int
list_rv_match(const http_req *req, const char *rv, api_list_opts *lo,
	api_resp *r)
{
	const char *m = req->arg(req->cls, "resourceVersionMatch");
	int has_rv = rv != NULL && *rv != '\0';

	if (has_rv) {
		errno = 0;
		lo->min_rv = strtoull(rv, NULL, 10);
		if (errno != 0) {
			fail(r, 400, "BadRequest", "invalid resourceVersion "
			    "\"%.32s\": a decimal number below 2^64 is expected", rv);
			return -1;
		}
	}
	if (m == NULL || *m == '\0') {
		lo->any = has_rv && lo->min_rv == 0;
		return 0;
	}
	if (strcmp(m, "NotOlderThan") != 0 && strcmp(m, "Exact") != 0) {
		fail(r, 400, "BadRequest", "invalid resourceVersionMatch "
		    "\"%.32s\": NotOlderThan or Exact", m);
		return -1;
	}
	if (!has_rv || (strcmp(m, "Exact") == 0 && lo->min_rv == 0)) {
		fail(r, 400, "BadRequest", "resourceVersionMatch %s needs a "
		    "resourceVersion%s", m, strcmp(m, "Exact") == 0 ?
		    " other than 0" : "");
		return -1;
	}
	lo->exact = strcmp(m, "Exact") == 0;
	lo->any = has_rv && lo->min_rv == 0 && !lo->exact;
	return 0;
}

static void
collection(router *rt, const api_kind *k, const http_req *req, api_resp *r,
	watch_params **watch)
{
	if (strcmp(req->method, "GET") == 0) {
		api_list_opts lo;
		const char *limit = req->arg(req->cls, "limit");
		unsigned long long timeout;
		char *end;
		int w;

		if (bool_arg(req, "watch", &w, r) != 0)
			return;
		if (w) {
			start_watch(k, req, r, watch);
			return;
		}
		/* A list takes allowWatchBookmarks (kube-apiserver's
		 * ListOptions do) and reads no more of it than a boolean. */
		if (bool_arg(req, "allowWatchBookmarks", &w, r) != 0)
			return;
		if (k->id == API_RUN) {
			int csv = version_label_ok(req, r) < 0 ? -1 :
			    wants_csv(req, r);

			/* versionLabel names the CSV's version column. */
			if (csv == 0 && req->arg(req->cls, "versionLabel") != NULL)
				api_resp_warn(r, "versionLabel is read only with "
				    "format=csv: ignored");
			if (csv != 0) {
				if (csv > 0)
					api_runs_csv(rt->api, req->arg(req->cls,
					    "labelSelector"), req->arg(req->cls,
					    "versionLabel"), 1, r);
				return;
			}
		}
		memset(&lo, 0, sizeof(lo));
		lo.table = wants_table(req);
		/* timeoutSeconds bounds a list's time too; one is never held
		 * that long here, but the value must still be one. */
		if ((lo.include = include_of(req, r)) < 0 ||
		    uint_arg(req, "timeoutSeconds", (unsigned long long)INT64_MAX,
		    &timeout, r) != 0)
			return;
		if (limit != NULL && *limit != '\0') {
			errno = 0;
			unsigned long long v = strtoull(limit, &end, 10);

			if (*end != '\0' || errno != 0 || limit[0] < '0' ||
			    limit[0] > '9') {
				fail(r, 400, "BadRequest", "invalid limit \"%.32s\": must be "
				    "a non-negative integer", limit);
				return;
			}
			lo.limit = v;
		}
		{
			/* A list is served at the newest version, which satisfies
			 * any older version a client names (not a newer one, nor an
			 * Exact older one: api_list answers 504 and 410); one that
			 * is no version is a mistake to report, not to pass over. */
			const char *rv = req->arg(req->cls, "resourceVersion");

			if (rv != NULL && *rv != '\0' &&
			    (strspn(rv, "0123456789") != strlen(rv) ||
			    strlen(rv) > 20)) {
				api_resp_fail(r, 400, "BadRequest", "resourceVersion",
				    "invalid resourceVersion \"%.32s\": a decimal "
				    "number is expected", rv);
				return;
			}
			if (list_rv_match(req, rv, &lo, r) != 0)
				return;
		}
		lo.continue_token = req->arg(req->cls, "continue");
		{
			/* The token says where the next page starts, and the
			 * page is read at the newest version: a resourceVersion
			 * beside it would be passed over. Refused, as
			 * kube-apiserver refuses it. */
			const char *rv = req->arg(req->cls, "resourceVersion");

			if (lo.continue_token != NULL && *lo.continue_token != '\0' &&
			    rv != NULL && *rv != '\0' && strcmp(rv, "0") != 0) {
				api_resp_fail(r, 400, "BadRequest", "resourceVersion",
				    "specifying resource version is not allowed when "
				    "using continue");
				return;
			}
		}
		lo.label_selector = req->arg(req->cls, "labelSelector");
		lo.field_selector = req->arg(req->cls, "fieldSelector");
		api_list(rt->api, k, &lo, r);
		warn_unknown_args(req, k->id == API_RUN ? ARGS_LIST_RUNS :
		    ARGS_LIST, r);
		return;
	}
	if (strcmp(req->method, "POST") == 0) {
		api_write_opts wo;
		char mt[128];
		const char *ct = req->header(req->cls, "Content-Type");

		if (!writes_allowed(req, r) || write_opts(req, &wo, r) != 0 ||
		    collection_if_match(&wo, r) != 0)
			return;
		media_type(ct, mt, sizeof(mt));
		/* curl --data-binary sends application/x-www-form-urlencoded
		 * unless told otherwise; such a body is taken as the JSON it is. */
		if (mt[0] != '\0' && strcmp(mt, "application/json") != 0 &&
		    strcmp(mt, "application/x-www-form-urlencoded") != 0 &&
		    !is_ndjson(mt)) {
			fail(r, 415, "UnsupportedMediaType", "the Content-Type \"%.64s\" "
			    "is not supported: send application/json (one document, a "
			    "bundle or a List) or application/x-ndjson (one per line)",
			    mt);
			return;
		}
		api_create(rt->api, k, req->body, req->body_len, is_ndjson(mt), &wo,
		    r);
		warn_unknown_args(req, ARGS_CREATE, r);
		return;
	}
	method_not_allowed(r, req->method, ALLOW_COLLECTION);
}

/* A DELETE's body is DeleteOptions in JSON: one of another media type
 * (or none), read as JSON all the same, is 415, as kube-apiserver answers.
 * Returns 1, or 0 with r filled. */
static int
delete_body_json(const http_req *req, api_resp *r)
{
	char mt[128];

	if (req->body_len == 0)
		return 1;
	media_type(req->header(req->cls, "Content-Type"), mt, sizeof(mt));
	if (strcmp(mt, "application/json") == 0)
		return 1;
	fail(r, 415, "UnsupportedMediaType", "the body of a DELETE is "
	    "DeleteOptions in application/json, not %s%.64s%s: it was not read",
	    mt[0] ? "\"" : "", mt[0] ? mt : "a body with no Content-Type",
	    mt[0] ? "\"" : "");
	return 0;
}

static void
item(router *rt, const api_kind *k, const char *name, const http_req *req,
	api_resp *r)
{
	size_t len = strlen(name);

	if (strcmp(req->method, "GET") == 0) {
		unsigned long long rv;
		int include, any;

		/* An object is served at the newest version, which satisfies
		 * an older resourceVersion; a newer one, or one that is no
		 * version, is answered as a list's is. */
		if ((include = include_of(req, r)) < 0 ||
		    uint_arg(req, "resourceVersion", UINT64_MAX, &rv, r) != 0)
			return;
		any = rv_any(req, rv);
		if (wants_table(req)) {
			api_list_opts lo;
			char fs[300];

			/* A one-row Table: the list path, selecting the name. */
			memset(&lo, 0, sizeof(lo));
			lo.table = 1;
			lo.include = include;
			lo.min_rv = rv;
			lo.any = any;
			snprintf(fs, sizeof(fs), "metadata.name=%s", name);
			lo.field_selector = fs;
			api_get_at(rt->api, k, name, len, rv, any, r);
			if (r->code != 200)
				return;
			api_resp_free(r);
			api_resp_init(r);
			api_list(rt->api, k, &lo, r);
		} else {
			api_get_at(rt->api, k, name, len, rv, any, r);
		}
		warn_unknown_args(req, ARGS_GET, r);
		return;
	}
	if (strcmp(req->method, "DELETE") == 0) {
		api_write_opts wo;

		int orphan;

		/* orphanDependents: nothing here has dependents, so either
		 * value is honoured; it must still be a boolean. */
		if (!writes_allowed(req, r) || write_opts(req, &wo, r) != 0 ||
		    !delete_body_json(req, r) ||
		    bool_arg(req, "orphanDependents", &orphan, r) != 0 ||
		    api_delete_query(req->arg(req->cls, "propagationPolicy"),
		    req->arg(req->cls, "gracePeriodSeconds"), r) != KI_OK ||
		    api_delete_options(req->body, req->body_len,
		    rt->api->lim->max_depth, &wo, r) != KI_OK)
			return;
		api_delete(rt->api, k, name, len, &wo, r);
		warn_unknown_args(req, ARGS_DELETE, r);
		return;
	}
	if (strcmp(req->method, "PATCH") == 0 || strcmp(req->method, "PUT") == 0) {
		api_write_opts wo;
		char mt[128];
		int type;

		if (!writes_allowed(req, r) || write_opts(req, &wo, r) != 0)
			return;
		media_type(req->header(req->cls, "Content-Type"), mt, sizeof(mt));
		if (strcmp(req->method, "PUT") == 0) {
			if (mt[0] != '\0' && strcmp(mt, "application/json") != 0) {
				fail(r, 415, "UnsupportedMediaType", "PUT takes "
				    "application/json, not \"%.64s\"", mt);
				return;
			}
			api_replace(rt->api, k, name, req->body, req->body_len, &wo, r);
			warn_unknown_args(req, ARGS_PUT, r);
			return;
		}
		if (strcmp(mt, "application/merge-patch+json") == 0)
			type = API_PATCH_MERGE;
		else if (strcmp(mt, "application/strategic-merge-patch+json") == 0)
			type = API_PATCH_STRATEGIC;
		else if (strcmp(mt, "application/json-patch+json") == 0)
			type = API_PATCH_JSON;
		else if (strcmp(mt, "application/apply-patch+yaml") == 0 ||
		    strcmp(mt, "application/apply-patch+json") == 0)
			type = API_PATCH_APPLY;
		else {
			fail(r, 415, "UnsupportedMediaType", "the patch type \"%.64s\" "
			    "is not supported: use application/merge-patch+json, "
			    "application/json-patch+json, "
			    "application/strategic-merge-patch+json (taken as a merge "
			    "patch) or application/apply-patch+yaml", mt);
			return;
		}
		{
			int force;

			/* Server-side apply's force: the store keeps no field
			 * managers, so there are no conflicts for it to override;
			 * the value is still checked. */
			if (bool_arg(req, "force", &force, r) != 0)
				return;
			/* kube-apiserver's ValidatePatchOptions: force is an
			 * apply's alone. */
			if (type != API_PATCH_APPLY &&
			    req->arg(req->cls, "force") != NULL) {
				api_resp_fail(r, 422, "Invalid", "force", "force: "
				    "Forbidden: may not be specified for non-apply patch");
				return;
			}
		}
		api_patch(rt->api, k, name, type, req->body, req->body_len, &wo, r);
		warn_unknown_args(req, ARGS_UPDATE, r);
		return;
	}
	method_not_allowed(r, req->method, ALLOW_ITEM);
}

static void
text(api_resp *r, int code, const char *body)
{
	ki_buf_puts(&r->body, body);
	r->content_type = "text/plain; charset=utf-8";
	r->code = code;
}

static void
readyz(router *rt, api_resp *r)
{
	if (api_ready(rt->api) != KI_OK) {
		text(r, 503, "store not ready\n");
		return;
	}
	text(r, 200, "ok\n");
}

static void
metrics(router *rt, api_resp *r)
{
	static const char *const classes[] = { "other", "1xx", "2xx", "3xx",
		"4xx", "5xx" };
	server_metrics *m = rt->metrics;
	ki_buf *b = &r->body;

	ki_buf_puts(b, "# HELP kernelindex_http_requests_total HTTP requests "
	    "answered, by status class.\n# TYPE kernelindex_http_requests_total "
	    "counter\n");
	for (int i = 0; i < 6; i++)
		ki_buf_printf(b, "kernelindex_http_requests_total{code=\"%s\"} "
		    "%llu\n", classes[i], (unsigned long long)
		    __atomic_load_n(&m->requests[i], __ATOMIC_RELAXED));
	ki_buf_printf(b, "# HELP kernelindex_http_response_bytes_total Bytes of "
	    "response bodies.\n# TYPE kernelindex_http_response_bytes_total "
	    "counter\nkernelindex_http_response_bytes_total %llu\n"
	    "# HELP kernelindex_http_request_duration_seconds_total Time spent "
	    "answering.\n# TYPE kernelindex_http_request_duration_seconds_total "
	    "counter\nkernelindex_http_request_duration_seconds_total %.6f\n"
	    "# HELP kernelindex_http_in_flight Requests being answered.\n"
	    "# TYPE kernelindex_http_in_flight gauge\nkernelindex_http_in_flight "
	    "%llu\n",
	    (unsigned long long)__atomic_load_n(&m->bytes_out, __ATOMIC_RELAXED),
	    (double)__atomic_load_n(&m->duration_us, __ATOMIC_RELAXED) / 1e6,
	    (unsigned long long)__atomic_load_n(&m->in_flight, __ATOMIC_RELAXED));
	api_metrics(rt->api, b);
	r->content_type = "text/plain; version=0.0.4; charset=utf-8";
	r->code = 200;
}

static const char *
mime_of(const char *path)
{
	static const struct {
		const char *ext, *type;
	} t[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".mjs", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".json", "application/json" },
		{ ".svg", "image/svg+xml" },
		{ ".png", "image/png" },
		{ ".ico", "image/x-icon" },
		{ ".txt", "text/plain; charset=utf-8" },
	};
	const char *dot = strrchr(path, '.');

	for (size_t i = 0; dot && i < sizeof(t) / sizeof(t[0]); i++) {
		if (strcmp(dot, t[i].ext) == 0)
			return t[i].type;
	}
	return NULL;
}

/* Serves a file of the page. Only plain names made of [A-Za-z0-9._-/]
 * without ".." segments are looked up, so no path escapes static_dir. */
static void
static_file(router *rt, const char *path, const http_req *req, api_resp *r)
{
	char full[2048];
	struct stat st;
	const char *type, *inm;
	int fd = -1;

	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		method_not_allowed(r, req->method, ALLOW_READ);
		return;
	}
	if (strcmp(path, "/") == 0)
		path = "/index.html";
	for (const char *p = path; *p; p++) {
		char c = *p;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
		    c == '/')) {
			not_found(r);
			return;
		}
		if (c == '/' && (p[1] == '.' || p[1] == '/')) {
			not_found(r);
			return;
		}
	}
	type = mime_of(path);
	if (type == NULL ||
	    (size_t)snprintf(full, sizeof(full), "%s%s", rt->static_dir, path) >=
	    sizeof(full)) {
		not_found(r);
		return;
	}
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > MAX_STATIC_FILE) {
		if (fd >= 0)
			close(fd);
		not_found(r);
		return;
	}
	snprintf(r->etag, sizeof(r->etag), "\"%llx-%llx\"",
	    (unsigned long long)st.st_mtime, (unsigned long long)st.st_size);
	r->cache_control = "no-cache";
	r->content_type = type;
	/* A file is served whatever its query (a cache-busting suffix):
	 * not in silence. */
	warn_unknown_args(req, STATIC_ARGS, r);
	inm = req->header(req->cls, "If-None-Match");
	if (inm != NULL && strcmp(inm, r->etag) == 0) {
		close(fd);
		r->code = 304;
		return;
	}
	if (ki_buf_reserve(&r->body, (size_t)st.st_size) != KI_OK) {
		close(fd);
		api_fail_rc(r, KI_ENOMEM, "reading the file");
		return;
	}
	while (r->body.len < (size_t)st.st_size) {
		ssize_t n = read(fd, r->body.data + r->body.len,
		    (size_t)st.st_size - r->body.len);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		r->body.len += (size_t)n;
	}
	r->body.data[r->body.len] = '\0';
	close(fd);
	r->code = 200;
}

/* /admin/tokens (GET list, POST create) and /admin/tokens/ID (DELETE):
 * admins only. The secret is in the create answer and nowhere else. */
/* The admin endpoints are not Kubernetes resources: a query parameter
 * (a dryRun believed honoured while a real token is made), or a body
 * where none is read, is refused rather than passed over. Returns 0, or
 * -1 with r filled (400). */
static int
admin_plain(const http_req *req, int body_read, api_resp *r)
{
	const char *name;

	if (req->arg_names != NULL && req->arg_names(req->cls, &name, 1) > 0) {
		api_resp_fail(r, 400, "BadRequest", name, "%s takes no query "
		    "parameter, not \"%.64s\"", req->path, name);
		return -1;
	}
	if (!body_read && req->body_len > 0) {
		fail(r, 400, "BadRequest", "%s %s takes no body", req->method,
		    req->path);
		return -1;
	}
	return 0;
}

static void
admin_tokens(router *rt, const http_req *req, const char *rest,
	api_resp *r)
{
	if (who.role < API_ROLE_ADMIN && !(!who.tokens_exist && who.loopback &&
	    !who.token)) {
		fail(r, who.token ? 403 : 401, who.token ? "Forbidden" :
		    "Unauthorized", "managing tokens needs an admin token");
		return;
	}
	if (admin_plain(req, *rest == '\0' && strcmp(req->method, "POST") == 0,
	    r) != 0)
		return;
	if (*rest == '\0' && strcmp(req->method, "GET") == 0) {
		api_admin_token_list(rt->api, r);
		return;
	}
	if (*rest == '\0' && strcmp(req->method, "POST") == 0) {
		api_admin_token_create(rt->api, req->body, req->body_len, r);
		return;
	}
	if (rest[0] == '/' && strcmp(req->method, "DELETE") == 0) {
		api_admin_token_revoke(rt->api, rest + 1, r);
		return;
	}
	method_not_allowed(r, req->method, *rest == '\0' ? "GET, HEAD, POST" :
	    "DELETE");
}

/* POST /admin/backup {"path": "/srv/backups/ki-1.mdb"}: a consistent,
 * compacted copy of the store written by the server to a new file. */
static void
admin_backup(router *rt, const http_req *req, api_resp *r)
{
	if (who.role < API_ROLE_ADMIN && !(!who.tokens_exist && who.loopback &&
	    !who.token)) {
		fail(r, who.token ? 403 : 401, who.token ? "Forbidden" :
		    "Unauthorized", "backups need an admin token");
		return;
	}
	if (admin_plain(req, 1, r) != 0)
		return;
	if (strcmp(req->method, "POST") != 0) {
		method_not_allowed(r, req->method, "POST");
		return;
	}
	api_admin_backup(rt->api, req->body, req->body_len, r);
}

/* HTTP's validators and caching, derived from what the API says of its
 * answer: the ETag is its version (server/http.c answers 304 when
 * If-None-Match names it); immutable content is cached for a year; a
 * secret is never stored. Answers that set their own headers (the static
 * files) are left as they are. */
static void
http_semantics(api_resp *r)
{
	if (r->version[0] != '\0')
		snprintf(r->etag, sizeof(r->etag), "\"%s\"", r->version);
	if (r->immutable)
		r->cache_control = "public, max-age=31536000, immutable";
	else if (r->secret)
		r->cache_control = "no-store";
}

/* The fixed answers: probes, metrics, version, discovery and the OpenAPI
 * documents. They are read: another method is 405, not answered as a
 * GET, and a query parameter they do not read (the OpenAPI group's
 * document reads the hash its index names) is warned of. Returns 1 when
 * p was one of them. */
static int
fixed(router *rt, const char *p, const http_req *req, api_resp *r)
{
	static const char *const none[] = { NULL };
	static const char *const openapi[] = { "hash", NULL };
	int which;

	if (strcmp(p, "/healthz") == 0 || strcmp(p, "/livez") == 0)
		which = 0;
	else if (strcmp(p, "/readyz") == 0)
		which = 1;
	else if (strcmp(p, "/metrics") == 0)
		which = 2;
	else if (strcmp(p, "/version") == 0)
		which = 3;
	else if (strcmp(p, "/openapi/v3") == 0 || strcmp(p, "/openapi/v3/") == 0)
		which = 4;
	else if (strcmp(p, "/openapi/v3/apis/" API_GROUP_VERSION) == 0)
		which = 5;
	else if (strcmp(p, "/api") == 0 || strcmp(p, "/api/") == 0)
		which = 6;
	else if (strcmp(p, "/apis") == 0 || strcmp(p, "/apis/") == 0)
		which = 7;
	else if (strcmp(p, "/apis/" API_GROUP) == 0)
		which = 8;
	else
		return 0;
	if (strcmp(req->method, "GET") != 0) {
		method_not_allowed(r, req->method, ALLOW_READ);
		return 1;
	}
	switch (which) {
	case 0:
		text(r, 200, "ok\n");
		break;
	case 1:
		readyz(rt, r);
		break;
	case 2:
		metrics(rt, r);
		break;
	case 3:
		api_version(r);
		break;
	case 4:
		api_openapi_index(r);
		break;
	case 5:
		api_openapi_group(r);
		break;
	case 6:
		api_discovery_api(r);
		break;
	case 7:
		api_discovery_apis(r, 0);
		break;
	default:
		api_discovery_group(r);
		break;
	}
	warn_unknown_args(req, which == 5 ? openapi : none, r);
	return 1;
}

static void
dispatch(router *rt, const http_req *in, api_resp *r, watch_params **watch)
{
	http_req head;
	const http_req *req = in;
	const char *p = in->path;

	/* A token in the URL is kept by every log and proxy on the way, and
	 * would be passed over here: refused, not ignored. */
	if (in->arg(in->cls, "access_token") != NULL) {
		api_resp_fail(r, 400, "BadRequest", "access_token", "a token is "
		    "sent in the Authorization header (Bearer), never in the URL");
		return;
	}
	if (strcmp(in->method, "GET") != 0 && strcmp(in->method, "HEAD") != 0 &&
	    !content_type_ok(in->header(in->cls, "Content-Type"), r))
		return;
	/* HEAD is GET without the body; the HTTP layer drops the body. */
	if (strcmp(in->method, "HEAD") == 0) {
		head = *in;
		head.method = "GET";
		req = &head;
	}
	{
		api_status st;
		int rc;

		api_status_init(&st);
		rc = api_authenticate(rt->api->st, req->header(req->cls,
		    "Authorization"), req->loopback, &who, &st);
		if (rc != KI_OK) {
			api_resp_status(r, &st);
			api_status_free(&st);
			return;
		}
		api_status_free(&st);
	}
	if (strcmp(p, "/healthz") != 0 && strcmp(p, "/livez") != 0 &&
	    strcmp(p, "/readyz") != 0 && strcmp(p, "/version") != 0 &&
	    !rt->anonymous_reads && who.role < API_ROLE_READER) {
		fail(r, 401, "Unauthorized", "this server needs a bearer token for "
		    "reads (anonymous reads are off)");
		return;
	}
	if (!api_accept_ok(req, r))
		return;
	if (strncmp(p, "/admin/tokens", 13) == 0) {
		admin_tokens(rt, req, p + 13, r);
		return;
	}
	if (strcmp(p, "/admin/backup") == 0) {
		admin_backup(rt, req, r);
		return;
	}
	size_t plen = strlen(API_PREFIX);

	if (fixed(rt, p, req, r))
		return;
	if (strncmp(p, "/apis/", 6) == 0) {
		api_reviewer rv = { &who, rt->anonymous_reads };
		char mt[128];

		media_type(req->header(req->cls, "Content-Type"), mt, sizeof(mt));
		if (api_review_route(rt->api, &rv, req->method, p, req->body,
		    req->body_len, mt, r)) {
			/* A review stores nothing: no parameter is read. */
			warn_unknown_args(req, STATIC_ARGS, r);
			return;
		}
	}
	if (strncmp(p, "/apis/", 6) == 0 || strncmp(p, "/api/", 5) == 0) {
		const char *rest, *slash;
		const api_kind *k;

		if (strncmp(p, API_PREFIX, plen) != 0 ||
		    (p[plen] != '\0' && p[plen] != '/')) {
			not_found(r);
			return;
		}
		rest = p + plen;
		if (*rest == '\0' || strcmp(rest, "/") == 0) {
			if (strcmp(req->method, "GET") != 0) {
				method_not_allowed(r, req->method, ALLOW_READ);
				return;
			}
			api_discovery_resources(r);
			warn_unknown_args(req, STATIC_ARGS, r);
			return;
		}
		rest++;
		if (strcmp(rest, "facets") == 0) {
			if (strcmp(req->method, "GET") != 0) {
				method_not_allowed(r, req->method, ALLOW_READ);
				return;
			}
			api_facets(rt->api, req->arg(req->cls, "labelSelector"), r);
			warn_unknown_args(req, ARGS_FACETS, r);
			return;
		}
		if (analysis(rt, rest, req, r))
			return;
		if (strncmp(rest, "objects/", 8) == 0) {
			if (strcmp(req->method, "GET") != 0 &&
			    strcmp(req->method, "HEAD") != 0) {
				method_not_allowed(r, req->method, ALLOW_READ);
				return;
			}
			unsigned long long rv;

			/* Content is the same at every version; a version
			 * the store has not reached is answered as an object
			 * GET's (504), one that is no version is a 400. */
			if (uint_arg(req, "resourceVersion", UINT64_MAX, &rv, r) != 0)
				return;
			api_get_digest(rt->api, rest + 8, rv, rv_any(req, rv),
			    r);
			warn_unknown_args(req, ARGS_DIGEST, r);
			return;
		}
		slash = strchr(rest, '/');
		k = api_kind_by_plural(rest, slash ? (size_t)(slash - rest) :
		    strlen(rest));
		if (k == NULL) {
			not_found(r);
			return;
		}
		if (slash == NULL || slash[1] == '\0') {
			collection(rt, k, req, r, watch);
			return;
		}
		{
			const char *sub = strchr(slash + 1, '/');
			char nm[KI_MAX_NAME + 1];

			if (sub != NULL) {
				if (strcmp(sub, "/status") != 0 ||
				    (size_t)(sub - slash - 1) > KI_MAX_NAME) {
					not_found(r);
					return;
				}
				if (strcmp(req->method, "GET") != 0) {
					fail(r, 405, "MethodNotAllowed", "status is owned by "
					    "the server: it can be read, not written");
					r->allow = ALLOW_READ;
					return;
				}
				snprintf(nm, sizeof(nm), "%.*s", (int)(sub - slash - 1),
				    slash + 1);
				item(rt, k, nm, req, r);
				return;
			}
		}
		item(rt, k, slash + 1, req, r);
		return;
	}
	static_file(rt, p, req, r);
}

void
router_dispatch(router *rt, const http_req *req, api_resp *r,
	watch_params **watch)
{
	dispatch(rt, req, r, watch);
	http_semantics(r);
}

api_stream *
router_stream_open(router *rt, const http_req *req, api_resp *r)
{
	size_t plen = strlen(API_PREFIX);
	const char *p = req->path, *rest, *slash;
	const char *ct = req->header(req->cls, "Content-Type");
	api_write_opts wo;
	api_status st;
	api_stream *s;
	char mt[128];
	int rc;

	if (strcmp(req->method, "POST") != 0 || strncmp(p, API_PREFIX, plen) != 0 ||
	    p[plen] != '/')
		return NULL;
	media_type(ct, mt, sizeof(mt));
	if (!is_ndjson(mt))
		return NULL;
	if (!content_type_ok(ct, r))
		return NULL;
	rest = p + plen + 1;
	slash = strchr(rest, '/');
	if ((slash != NULL && slash[1] != '\0') || api_kind_by_plural(rest,
	    slash ? (size_t)(slash - rest) : strlen(rest)) == NULL)
		return NULL;
	api_status_init(&st);
	rc = api_authenticate(rt->api->st, req->header(req->cls, "Authorization"),
	    req->loopback, &who, &st);
	if (rc != KI_OK) {
		api_resp_status(r, &st);
		api_status_free(&st);
		return NULL;
	}
	api_status_free(&st);
	if (!api_accept_ok(req, r) || !writes_allowed(req, r) ||
	    write_opts(req, &wo, r) != 0 || collection_if_match(&wo, r) != 0)
		return NULL;
	/* All or nothing needs one transaction, and a dry run must see the
	 * whole body too: those are read whole (up to max-bulk-body). */
	if (wo.atomic || wo.dry_run)
		return NULL;
	if ((s = api_stream_open(rt->api, &wo)) == NULL)
		api_fail_rc(r, KI_ENOMEM, "starting the upload");
	else
		warn_unknown_args(req, ARGS_CREATE, r);
	return s;
}
