/* api/service.h — the API's operations, independent of HTTP: each takes a
 * parsed request and fills an api_resp (status code, body, headers). */
#ifndef API_SERVICE_H
#define API_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "api/jcs.h"
#include "api/kinds.h"
#include "api/schema.h"
#include "api/status.h"
#include "lib/ki.h"
#include "lib/limits.h"
#include "store/store.h"

/* Group commit (see store/store.h): the committer and a request's job,
 * by the names server/ uses, so that it includes no store/ header. A job's
 * cookie is the caller's, for its done(). */
typedef struct store_committer api_committer;
typedef struct store_job api_job;
typedef void (*api_job_done)(api_job *job, int commit_rc);

/* Starts the committer thread over s: at most max_batch jobs (0: 256) share
 * a durable commit; committed(arg, rv) is called after each batch that
 * wrote something. Stop it with api_committer_stop(). */
int api_committer_start(api_committer **out, store *s, size_t max_batch,
	void (*committed)(void *arg, uint64_t rv), void *arg);
/* Runs what is queued, stops the thread and frees c (NULL: nothing). */
void api_committer_stop(api_committer *c);

/* How lists were served, for /metrics: counted with atomic adds. */
enum { API_LIST_BY_NAME, API_LIST_BY_INDEX, API_LIST_BY_RANGE,
	API_LIST_PATHS };
typedef struct api_list_stats {
	uint64_t requests[API_LIST_PATHS]; /* lists, by access path */
	uint64_t examined;      /* objects read and matched against a query */
	uint64_t returned;      /* items answered */
} api_list_stats;

typedef struct api_ctx {
	store *st;
	/* Group commit: when set, durable creates are queued to it and their
	 * answer comes with the batch's commit (see api_resp.job). */
	api_committer *committer;
	const ki_limits *lim;
	double (*now)(void);               /* seconds since the epoch */
	/* Called after each commit that advanced the resourceVersion. */
	void (*committed)(void *arg, uint64_t rv);
	void *committed_arg;
	/* Where a streamed upload's answer spills to an unlinked file (NULL:
	 * the system's temporary directory). */
	const char *spill_dir;
	api_list_stats lists;
	/* Appends more of /metrics (the verification controller's devices);
	 * NULL: nothing. */
	void (*more_metrics)(void *arg, ki_buf *b);
	void *more_metrics_arg;
} api_ctx;

#define API_MAX_WARNINGS 16

typedef struct api_resp {
	int code;
	ki_buf body;
	const char *content_type;          /* static string */
	/* What the answer is, for server/ to derive HTTP's validators and
	 * caching from: its version changes whenever its content does (a
	 * resourceVersion, a digest, a hash; empty: none); immutable content
	 * never changes (it is named by its digest); a secret must not be
	 * kept by any cache. */
	char version[API_DIGEST_STRLEN + 1];
	int immutable;
	int secret;
	/* HTTP's, set by server/ (etag, cache_control) from the above. */
	char etag[API_DIGEST_STRLEN + 8];  /* quoted, or empty */
	const char *cache_control;         /* static string, or NULL */
	/* The one object a create made (its kind; NULL: none) and the name
	 * it is stored under, for server/ to derive the Location header. */
	const api_kind *created;
	char created_name[KI_MAX_NAME + 1];
	char *warnings[API_MAX_WARNINGS];  /* texts for Warning: 299 headers */
	size_t nwarnings;
	/* Set by an operation that waits for a group commit: the caller
	 * hands it to api_create_submit() with its done() and cookie, and
	 * answers with this response once done() has run. */
	api_job *job;
	/* What the answer was made from, freed with it (by api_resp_free): the
	 * thread that answers frees it, not the committer. */
	void (*release)(void *arg);
	void *release_arg;
	/* A body too large to keep in memory: body, then spill_len bytes of
	 * spill from its start, then suffix (a static string). */
	FILE *spill;
	uint64_t spill_len;
	const char *suffix;
	const char *allow;                 /* a 405's Allow header (static) */
} api_resp;

void api_resp_init(api_resp *r);
void api_resp_free(api_resp *r);
/* Renders st as the response (its code and Status body). */
void api_resp_status(api_resp *r, const api_status *st);
/* Fills r with a Status of code and reason, the message printf-style; a
 * cause at field (when non-NULL) repeats it. */
void api_resp_fail(api_resp *r, int code, const char *reason,
	const char *field, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void api_resp_warn(api_resp *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Fills r with the Status for a KI_* code (api_status_from_rc: the one
 * place a code becomes an HTTP status); what says what failed. */
void api_fail_rc(api_resp *r, int rc, const char *what);

struct api_principal;

typedef struct api_write_opts {
	const struct api_principal *who;  /* NULL: no restriction */
	int dry_run;                /* dryRun=All */
	int field_validation;       /* enum api_field_validation */
	int atomic;                 /* bulk: all or nothing */
	const char *if_match;       /* the If-Match header, or NULL */
	const char *if_none_match;  /* the If-None-Match header, or NULL */
	/* DeleteOptions.preconditions, or "": the stored object must have
	 * this uid and resourceVersion (api/options.h). */
	char pre_uid[128];
	char pre_rv[24];
} api_write_opts;

/* Does the If-Match header value (NULL: no header) let a write go over the
 * stored object of resourceVersion rv (whose ETag is "rv")? Strong
 * comparison, or "*" (RFC 9110 13.1.1). When it does not, fills r with a
 * 412 and returns 0. */
int api_if_match(const char *if_match, uint64_t rv, api_resp *r);

/* Does the If-None-Match header value (NULL: no header) let a write go
 * over the stored object of resourceVersion rv? Not where it lists "*"
 * (the object exists) or the object's ETag (weak comparison, RFC 9110
 * 13.1.2): then fills r with a 412 and returns 0, as RFC 9110 13.1.2
 * asks of a method other than GET and HEAD. */
int api_if_none_match(const char *if_none_match, uint64_t rv, api_resp *r);

typedef struct api_list_opts {
	const char *label_selector;
	const char *field_selector;
	uint64_t limit;             /* 0 = no limit (bounded by lim) */
	const char *continue_token;
	int table;                  /* answer a meta.k8s.io/v1 Table */
	int include;                /* Table rows: enum api_include */
	/* resourceVersion: the list is at least this new (504 when the store
	 * has not reached it), or exactly it when exact (410 when older: only
	 * the newest version is kept). */
	uint64_t min_rv;
	int exact;
	int any;                    /* resourceVersion "0" (NotOlderThan):
	                             * what the store has, without waiting
	                             * for the newest state */
} api_list_opts;

/* A field requirement on a run's reference, its digest parsed. */
typedef struct api_field_ref {
	int ref;                    /* index in a run's refs; -1: metadata.name */
	uint8_t digest[API_DIGEST_LEN];
} api_field_ref;

/* A parsed list query: selectors checked, ready to match objects. */
typedef struct api_query {
	struct api_selector *labels;
	struct api_selector *fields;
	api_field_ref *frefs;       /* one per fields->reqs[] */
} api_query;

/* Parses the selectors of opt for kind k. On failure fills r (400) and
 * returns KI_EINVAL. Free with api_query_free(). */
int api_query_parse(api_query *q, const api_kind *k, const char *label_sel,
	const char *field_sel, api_resp *r);
void api_query_free(api_query *q);
/* Does o satisfy the query? */
int api_query_match(const api_query *q, const store_obj *o);

/* POST to the collection of kind coll: one object of that kind, a bundle
 * (benchmarkruns only), a List, or NDJSON when ndjson is set. */
void api_create(api_ctx *ctx, const api_kind *coll, const char *body,
	size_t len, int ndjson, const api_write_opts *opt, api_resp *r);
/* Hands r->job (left by api_create) to the committer; done(job, rc) runs
 * on the committer's thread once r holds the final answer (cookie is
 * job->cookie). */
void api_create_submit(api_ctx *ctx, api_resp *r, api_job_done done,
	void *cookie);

/* A streamed NDJSON upload (not atomic, not a dry run): lines are read as
 * the body arrives and written in chunks, each chunk one job of the group
 * committer, so that memory stays bounded whatever the size of the body;
 * the answer's items spill to an unlinked file once they outgrow memory.
 * Feed the body with api_stream_feed(); when it hands back a job, submit
 * it with api_stream_submit() and feed nothing more until its done() has
 * run. At the end of the body call api_stream_end() until it hands back no
 * job, then api_stream_answer(). */
typedef struct api_stream api_stream;

/* NULL when out of memory. opt->who is copied. */
api_stream *api_stream_open(api_ctx *ctx, const api_write_opts *opt);
/* Takes the next len bytes of the body. *job is a chunk ready to write, or
 * NULL. */
void api_stream_feed(api_stream *s, const char *data, size_t len,
	api_job **job);
/* The body is complete: *job is the next chunk to write, or NULL when all
 * is written. */
void api_stream_end(api_stream *s, api_job **job);
/* Writes job (from feed or end) in a group commit, or at once when the
 * context has no committer; done(job, rc) runs after, on the committer's
 * thread (or this one). */
void api_stream_submit(api_stream *s, api_job *job, api_job_done done,
	void *cookie);
/* Has a chunk failed whole (the store full, a commit failed)? The rest of
 * the body is then read and dropped; the answer says why. */
int api_stream_failed(const api_stream *s);
/* The answer: an UploadResult with every line's items, or the Status of
 * the failure that stopped the upload. */
void api_stream_answer(api_stream *s, api_resp *r);
void api_stream_free(api_stream *s);

void api_get(api_ctx *ctx, const api_kind *k, const char *name, size_t len,
	api_resp *r);
/* api_get with a resourceVersion, as kube-apiserver reads one for a GET:
 * none (min_rv 0, any 0) is the newest state, everything committed
 * through any daemon before the request (a store whose reads may lag,
 * etcd's watch cache, reaches it first); min_rv is at least that version
 * (504 when the store does not reach it in 3 s, as for a list); "0" (any
 * 1) is whatever this daemon's store has, without waiting. */
void api_get_at(api_ctx *ctx, const api_kind *k, const char *name,
	size_t len, uint64_t min_rv, int any, api_resp *r);
/* GET objects/<digest>: the canonical content, immutable (its version is
 * the digest); min_rv and any as for api_get_at. */
void api_get_digest(api_ctx *ctx, const char *digest, uint64_t min_rv,
	int any, api_resp *r);
void api_list(api_ctx *ctx, const api_kind *k, const api_list_opts *opt,
	api_resp *r);
enum api_patch_type {
	API_PATCH_MERGE = 1,   /* application/merge-patch+json (RFC 7386) */
	API_PATCH_STRATEGIC,   /* treated as a merge patch */
	API_PATCH_APPLY,       /* server-side apply: create or merge */
	API_PATCH_JSON,        /* application/json-patch+json (RFC 6902) */
};

/* PATCH kind/name: merges the patch into the live object. Labels,
 * annotations and title may change; a changed spec is refused (422, the
 * spec is immutable); a metadata.resourceVersion in the patch must match
 * (409 Conflict). Apply creates the object when it is missing. */
void api_patch(api_ctx *ctx, const api_kind *k, const char *name, int type,
	const char *body, size_t len, const api_write_opts *opt, api_resp *r);
/* PUT kind/name: replaces metadata.labels, annotations and title; the same
 * rules as a patch. */
void api_replace(api_ctx *ctx, const api_kind *k, const char *name,
	const char *body, size_t len, const api_write_opts *opt, api_resp *r);

/* GET facets: counts of runs by label, and of kernel x provider x gpu x
 * metric combinations, optionally under a label selector. */
void api_facets(api_ctx *ctx, const char *label_sel, api_resp *r);
void api_delete(api_ctx *ctx, const api_kind *k, const char *name,
	size_t len, const api_write_opts *opt, api_resp *r);

/* Discovery documents. */
void api_discovery_api(api_resp *r);
void api_discovery_apis(api_resp *r, int aggregated);
void api_discovery_group(api_resp *r);
void api_discovery_resources(api_resp *r);
void api_version(api_resp *r);
/* OpenAPI v3: the index and the group-version document. */
void api_openapi_index(api_resp *r);
void api_openapi_group(api_resp *r);

#endif
