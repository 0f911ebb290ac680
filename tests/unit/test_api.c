/* tests/unit/test_api.c — the API operations over a real store, without
 * HTTP: the seed's round trip, idempotence, conflicts, digest checks and
 * validation causes. */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "api/jcs.h"
#include "api/object.h"
#include "api/parts.h"
#include "api/schema.h"
#include "api/labels.h"
#include "api/service.h"
#include "tests/unit/tests.h"

static store *st;
static char *dir;
static ki_limits lim = { 1u << 20, 1u << 24, 32, 1000, 100, (uint64_t)1 << 30 };
static api_ctx ctx;

static double
fixed_now(void)
{
	return 1764672000.0; /* 2025-12-02T10:40:00Z */
}

static int
setup(void)
{
	store_options o;

	memset(&o, 0, sizeof(o));
	o.nosync = 1;
	o.facets = api_store_facets;
	if ((dir = tests_tmpdir()) == NULL || store_open(&st, dir, &o) != KI_OK)
		return -1;
	memset(&ctx, 0, sizeof(ctx));
	ctx.st = st;
	ctx.lim = &lim;
	ctx.now = fixed_now;
	return 0;
}

static int
teardown(void)
{
	store_close(st);
	tests_rmdir(dir);
	free(dir);
	return 0;
}

static char *
seed_text(size_t *len)
{
	return tests_read_data("seed/embedding-full-huggingface-a100.json", len);
}

static int
post(const api_kind *k, const char *body, const api_write_opts *o,
	api_resp *r)
{
	api_write_opts none = { .field_validation = API_FV_WARN };

	api_resp_init(r);
	api_create(&ctx, k, body, strlen(body), 0, o ? o : &none, r);
	return r->code;
}

static uint64_t
current_rv(void)
{
	store_txn *t;
	uint64_t rv;

	if (store_begin(st, 0, &t) != KI_OK)
		return UINT64_MAX;
	rv = store_rv(t);
	store_abort(t);
	return rv;
}

static void
test_seed_roundtrip(void)
{
	size_t len;
	char *seed = seed_text(&len);
	const api_kind *runs = api_kind_by_id(API_RUN);
	const api_kind *protos = api_kind_by_id(API_PROTOCOL);
	api_resp r;
	struct json_object *o, *spec, *v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(seed);
	CU_ASSERT_EQUAL(post(runs, seed, NULL, &r), 201);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "\"kind\":\"UploadResult\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "\"created\":3"));
	api_resp_free(&r);
	/* Identical again: unchanged, 200, nothing written. */
	{
		uint64_t rv = current_rv();

		CU_ASSERT_EQUAL(post(runs, seed, NULL, &r), 200);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "\"unchanged\":3"));
		CU_ASSERT_EQUAL(current_rv(), rv);
		api_resp_free(&r);
	}
	api_resp_init(&r);
	api_get(&ctx, protos, "liger-bench-do-bench-full", 25, &r);
	CU_ASSERT_EQUAL(r.code, 200);
	o = json_tokener_parse(r.body.data);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT(json_object_object_get_ex(o, "spec", &spec));
	CU_ASSERT(json_object_object_get_ex(o, "status", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(
	    json_object_object_get(v, "digest")), "sha256:5b02ee9a2140fbc6fcc1c89"
	    "800f6c177ba22718c8897cb532bf0ba91867c1e58");
	json_object_put(o);
	api_resp_free(&r);
	/* By digest: the canonical content, whose SHA-256 is the digest. */
	api_resp_init(&r);
	api_get_digest(&ctx, "sha256:90c9e2764222f592477cfccf3373519add5a1b8815"
	    "63956ad058c4f99e41b6b9", 0, 0, &r);
	CU_ASSERT_EQUAL(r.code, 200);
	{
		uint8_t d[API_DIGEST_LEN];
		char hex[API_DIGEST_STRLEN + 1];

		api_sha256(r.body.data, r.body.len, d);
		api_digest_format(d, hex);
		CU_ASSERT_STRING_EQUAL(hex, "sha256:90c9e2764222f592477cfccf3373519a"
		    "dd5a1b881563956ad058c4f99e41b6b9");
	}
	/* Its version is the digest, and it never changes: the server derives
	 * ETag, Cache-Control and 304 from these (tests/e2e/test_api.py). */
	CU_ASSERT_STRING_EQUAL(r.version, "sha256:90c9e2764222f592477cfccf3373"
	    "519add5a1b881563956ad058c4f99e41b6b9");
	CU_ASSERT(r.immutable);
	CU_ASSERT_EQUAL(r.etag[0], '\0');
	api_resp_free(&r);
	/* The run shows its protocol and environment resolved, the workload
	 * and implementation not. */
	api_resp_init(&r);
	api_get(&ctx, runs, "liger-embedding-full-huggingface-nvidia-a100-sxm4-"
	    "80gb-batch8-hidden4096-seq2048-vocab131072-fp32-20", 100, &r);
	CU_ASSERT_EQUAL(r.code, 200);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "\"protocol\":{\"digest\":"
	    "\"sha256:5b02ee9a2140fbc6fcc1c89800f6c177ba22718c8897cb532bf0ba91867"
	    "c1e58\",\"name\":\"liger-bench-do-bench-full\",\"resolved\":true}"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "\"reason\":"
	    "\"UnresolvedReferences\""));
	api_resp_free(&r);
	free(seed);
}

static void
test_conflict_and_tamper(void)
{
	size_t len;
	char *seed = seed_text(&len);
	const api_kind *runs = api_kind_by_id(API_RUN);
	struct json_object *o, *t;
	api_resp r;
	uint64_t rv;
	const char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(seed);
	o = json_tokener_parse(seed);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	/* Same name, other content: 409 AlreadyExists, nothing written. */
	t = json_object_object_get(json_object_object_get(json_object_object_get(
	    json_object_object_get(json_object_object_get(o, "run"), "spec"),
	    "timing"), "latencyNs"), "median") ? o : NULL;
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	json_object_object_add(json_object_object_get(json_object_object_get(
	    json_object_object_get(json_object_object_get(o, "run"), "spec"),
	    "timing"), "latencyNs"), "median", json_object_new_int(7489377));
	json_object_object_add(json_object_object_get(json_object_object_get(
	    json_object_object_get(json_object_object_get(o, "run"), "spec"),
	    "sourceNative"), "metrics"), "ms_50", json_object_new_double(7.489377));
	rv = current_rv();
	text = json_object_to_json_string(o);
	CU_ASSERT_EQUAL(post(runs, text, NULL, &r), 409);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "\"reason\":\"AlreadyExists\""));
	CU_ASSERT_EQUAL(current_rv(), rv);
	api_resp_free(&r);
	/* Renamed but the same source row: still 409 by the natural key. */
	json_object_object_add(json_object_object_get(json_object_object_get(o,
	    "run"), "metadata"), "name", json_object_new_string("other-name"));
	text = json_object_to_json_string(o);
	CU_ASSERT_EQUAL(post(runs, text, NULL, &r), 409);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "liger-kernel-bench"));
	api_resp_free(&r);
	json_object_put(o);

	/* A tampered protocol: 422 naming both digests, nothing stored. */
	o = json_tokener_parse(seed);
	json_object_object_add(json_object_object_get(json_object_object_get(
	    json_object_object_get(o, "protocol"), "spec"), "measurement"),
	    "timer", json_object_new_string("wall_clock"));
	json_object_object_add(json_object_object_get(json_object_object_get(o,
	    "protocol"), "metadata"), "name",
	    json_object_new_string("tampered-protocol"));
	json_object_object_add(json_object_object_get(json_object_object_get(o,
	    "run"), "metadata"), "name", json_object_new_string("tampered"));
	text = json_object_to_json_string(o);
	CU_ASSERT_EQUAL(post(runs, text, NULL, &r), 422);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "run.spec.protocolDigest"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "sha256:5b02ee9a"));
	CU_ASSERT_EQUAL(current_rv(), rv);
	api_resp_free(&r);
	api_resp_init(&r);
	api_get(&ctx, api_kind_by_id(API_PROTOCOL), "tampered-protocol", 17, &r);
	CU_ASSERT_EQUAL(r.code, 404);
	api_resp_free(&r);
	json_object_put(o);
	free(seed);
}

/* Posts body to the protocols collection and expects code and each of the
 * substrings (NULL-terminated) in the answer. */
static void
expect(const char *body, int code, const char *const *subs)
{
	api_resp r;
	uint64_t rv = current_rv();

	CU_ASSERT_EQUAL(post(api_kind_by_id(API_PROTOCOL), body, NULL, &r), code);
	for (; *subs != NULL; subs++) {
		if (strstr(r.body.data, *subs) == NULL) {
			fprintf(stderr, "\n  missing \"%s\" in %s\n", *subs, r.body.data);
			CU_FAIL("expected text missing");
		}
	}
	CU_ASSERT_EQUAL(current_rv(), rv);
	api_resp_free(&r);
}

#define PROTO_OK "\"measurement\":{\"timer\":\"cuda_events\"," \
	"\"primaryStatistic\":\"median\"}"

static void
test_validation(void)
{
	expect("{\"apiVersion\":\"kernelindex.dev/v1alpha1\","
	    "\"kind\":\"BenchmarkProtocol\",\"metadata\":{\"name\":\"Bad_Name\"},"
	    "\"spec\":{\"measurement\":{\"timer\":\"sundial\"}}}", 422,
	    (const char *const[]){ "metadata.name", "spec.measurement.timer",
	    "spec.measurement.primaryStatistic", "FieldValueNotSupported",
	    "FieldValueRequired", "\"kind\":\"BenchmarkProtocol\"", NULL });
	expect("{\"apiVersion\":\"kernelindex.dev/v1alpha1\","
	    "\"kind\":\"BenchmarkProtocol\",\"metadata\":{\"name\":\"p\","
	    "\"labels\":{\"bad key!\":\"v\",\"ok\":\"-bad-\"}},\"spec\":{"
	    PROTO_OK "}}", 422, (const char *const[]){ "metadata.labels",
	    "metadata.labels.ok", NULL });
	expect("{\"apiVersion\":\"v1\",\"kind\":\"BenchmarkProtocol\","
	    "\"metadata\":{\"name\":\"p\"},\"spec\":{" PROTO_OK "}}", 400,
	    (const char *const[]){ "\\\"v1\\\" is not served", NULL });
	expect("{\"apiVersion\":\"kernelindex.dev/v1alpha1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"p\"},\"spec\":{}}", 400,
	    (const char *const[]){ "no kind \\\"Pod\\\"", NULL });
	expect("{\"apiVersion\":\"kernelindex.dev/v1alpha1\","
	    "\"kind\":\"BenchmarkProtocol\",\"metadata\":{\"name\":\"p\"},"
	    "\"spec\":{" PROTO_OK ",\"measurement\":{}}}", 400,
	    (const char *const[]){ "duplicate field", "spec.measurement",
	    NULL });
	expect("{\"apiVersion\":\"kernelindex.dev/v1alpha1\",", 400,
	    (const char *const[]){ "not valid JSON", NULL });
	expect("{\"apiVersion\":\"kernelindex.dev/v1alpha1\","
	    "\"kind\":\"BenchmarkProtocol\",\"metadata\":{\"name\":\"p\"},"
	    "\"spec\":{\"measurement\":{\"timer\":\"cuda_events\","
	    "\"primaryStatistic\":\"median\",\"warmupMs\":-1,"
	    "\"repetitions\":1.5}}}", 422, (const char *const[]){
	    "spec.measurement.warmupMs", "greater than or equal to 0",
	    "spec.measurement.repetitions", "integer", NULL });
}

static void
test_unknown_fields(void)
{
	const char *doc = "{\"apiVersion\":\"kernelindex.dev/v1alpha1\","
	    "\"kind\":\"BenchmarkProtocol\",\"metadata\":{\"name\":\"uf\"},"
	    "\"spec\":{" PROTO_OK ",\"bogus\":1}}";
	api_write_opts strict = { .field_validation = API_FV_STRICT };
	api_write_opts warn = { .field_validation = API_FV_WARN };
	api_write_opts dry = { .dry_run = 1, .field_validation = API_FV_IGNORE };
	api_resp r;
	uint64_t rv = current_rv();

	CU_ASSERT_EQUAL(post(api_kind_by_id(API_PROTOCOL), doc, &strict, &r), 400);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data,
	    "unknown field \\\"spec.bogus\\\""));
	CU_ASSERT_EQUAL(current_rv(), rv);
	api_resp_free(&r);
	CU_ASSERT_EQUAL(post(api_kind_by_id(API_PROTOCOL), doc, &dry, &r), 201);
	CU_ASSERT_EQUAL(current_rv(), rv);
	api_resp_free(&r);
	CU_ASSERT_EQUAL(post(api_kind_by_id(API_PROTOCOL), doc, &warn, &r), 201);
	CU_ASSERT_EQUAL(r.nwarnings, 1);
	if (r.nwarnings == 1)
		CU_ASSERT_STRING_EQUAL(r.warnings[0], "unknown field \"spec.bogus\"");
	/* Pruned: what is stored is what the schema knows. */
	CU_ASSERT_PTR_NULL(strstr(r.body.data, "bogus"));
	CU_ASSERT_EQUAL(current_rv(), rv + 1);
	api_resp_free(&r);
}

static void
test_syntax_checks(void)
{
	double t;

	CU_ASSERT_TRUE(api_is_dns_subdomain("a.b-c.d", 7));
	CU_ASSERT_FALSE(api_is_dns_subdomain("-a", 2));
	CU_ASSERT_FALSE(api_is_dns_subdomain("a..b", 4));
	CU_ASSERT_FALSE(api_is_dns_subdomain("A", 1));
	CU_ASSERT_TRUE(api_is_label_key("kernelindex.dev/gpu", 19));
	CU_ASSERT_FALSE(api_is_label_key("/gpu", 4));
	CU_ASSERT_FALSE(api_is_label_key("a/b/c", 5));
	CU_ASSERT_TRUE(api_is_label_value("", 0));
	CU_ASSERT_TRUE(api_is_label_value("0.2.1", 5));
	CU_ASSERT_FALSE(api_is_label_value("a b", 3));
	CU_ASSERT_TRUE(api_parse_time("2024-09-03T15:33:28.000Z", &t));
	CU_ASSERT_DOUBLE_EQUAL(t, 1725377608.0, 1e-6);
	CU_ASSERT_TRUE(api_parse_time("2024-09-03T17:33:28+02:00", &t));
	CU_ASSERT_DOUBLE_EQUAL(t, 1725377608.0, 1e-6);
	CU_ASSERT_FALSE(api_parse_time("2024-02-30T00:00:00Z", &t));
	CU_ASSERT_FALSE(api_parse_time("2024-09-03 15:33:28Z", &t));
	CU_ASSERT_FALSE(api_parse_time("2024-09-03T15:33:28", &t));
	CU_ASSERT_TRUE(api_parse_time("2024-02-29T00:00:00Z", &t));
}

static const char workload_doc[] = "{\"apiVersion\":\"kernelindex.dev/"
    "v1alpha1\",\"kind\":\"Workload\",\"metadata\":{\"name\":\"ce-fwd\"},"
    "\"spec\":{\"kernel\":\"cross_entropy\",\"pass\":\"forward\","
    "\"dtype\":\"float32\",\"parameters\":{\"batch\":8,\"seq\":2048,"
    "\"vocab\":4096},\"sweep\":\"vocab\"}}";

static volatile int job_done;

static void
on_job_done(store_job *job, int commit_rc)
{
	(void)job;
	(void)commit_rc;
	__atomic_store_n(&job_done, 1, __ATOMIC_SEQ_CST);
}

/* The seed's run renamed to name, naming workload digest wd (or keeping
 * its own when NULL); caller frees. */
static char *
seed_run(const char *name, const char *wd)
{
	size_t len;
	char *seed = seed_text(&len), *out;
	struct json_object *b = seed ? json_tokener_parse(seed) : NULL, *run;
	struct json_object *spec, *sn;

	free(seed);
	if (b == NULL)
		return NULL;
	run = json_object_get(json_object_object_get(b, "run"));
	json_object_put(b);
	spec = json_object_object_get(run, "spec");
	sn = json_object_object_get(spec, "sourceNative");
	json_object_object_add(json_object_object_get(run, "metadata"), "name",
	    json_object_new_string(name));
	json_object_object_add(sn, "externalId", json_object_new_string(name));
	if (wd != NULL)
		json_object_object_add(spec, "workloadDigest",
		    json_object_new_string(wd));
	out = strdup(json_object_to_json_string_ext(run, JSON_C_TO_STRING_PLAIN));
	json_object_put(run);
	return out;
}

/* The answer's JSON without what two renderings of one upload differ in. */
static char *
normalized(const char *body)
{
	struct json_object *o = json_tokener_parse(body), *m, *c;
	char *out;

	if (o == NULL)
		return NULL;
	m = json_object_object_get(o, "metadata");
	json_object_object_del(m, "uid");
	json_object_object_del(m, "creationTimestamp");
	json_object_object_del(m, "resourceVersion");
	c = json_object_object_get(json_object_object_get(o, "status"),
	    "conditions");
	for (size_t i = 0; c != NULL && i < json_object_array_length(c); i++)
		json_object_object_del(json_object_array_get_idx(c, i),
		    "lastTransitionTime");
	{
		ki_buf jb;

		ki_buf_init(&jb);
		api_jcs_serialize(o, &jb);
		out = ki_buf_steal(&jb, NULL);
	}
	json_object_put(o);
	return out;
}

/* Submits the job api_create left in r and waits for its answer. */
static void
run_job(api_resp *r)
{
	__atomic_store_n(&job_done, 0, __ATOMIC_SEQ_CST);
	api_create_submit(&ctx, r, on_job_done, NULL);
	for (int i = 0; i < 5000 && !__atomic_load_n(&job_done, __ATOMIC_SEQ_CST);
	    i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
}

/* Through the committer a new object is rendered before its write: the
 * stored object is the one a render inside the write gives, a reference
 * that resolves between the two is rendered resolved, and one whose
 * object is deleted between the two unresolved. */
static void
test_prerendered_writes(void)
{
	const api_kind *runs = api_kind_by_id(API_RUN);
	const api_kind *wls = api_kind_by_id(API_WORKLOAD);
	api_write_opts dry = { .field_validation = API_FV_WARN, .dry_run = 1 };
	store_committer *c = NULL;
	struct json_object *o = NULL, *w;
	char *doc, *a = NULL, *b = NULL, wd[80] = "";
	size_t len;
	char *seed = seed_text(&len);
	api_resp r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(seed);
	post(runs, seed, NULL, &r);   /* protocol and environment, stored */
	api_resp_free(&r);
	free(seed);
	/* The workload's digest, from a dry run that stores nothing. */
	CU_ASSERT_EQUAL(post(wls, workload_doc, &dry, &r), 201);
	o = json_tokener_parse(r.body.data);
	w = json_object_object_get(json_object_object_get(o, "status"), "digest");
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	snprintf(wd, sizeof(wd), "%s", json_object_get_string(w));
	json_object_put(o);
	api_resp_free(&r);

	CU_ASSERT_EQUAL_FATAL(store_committer_start(&c, st, 0, NULL, NULL), KI_OK);
	/* 1: the same bytes as a render in the write (the dry run's). */
	doc = seed_run("pre-one", NULL);
	CU_ASSERT_EQUAL(post(runs, doc, &dry, &r), 201);
	a = normalized(r.body.data);
	api_resp_free(&r);
	ctx.committer = c;
	post(runs, doc, NULL, &r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.job);
	run_job(&r);
	CU_ASSERT_EQUAL(r.code, 201);
	b = normalized(r.body.data);
	CU_ASSERT(a != NULL && b != NULL && strcmp(a, b) == 0);
	api_resp_free(&r);
	free(doc);
	free(a);
	free(b);
	/* 2: rendered while its workload is unknown, written after it came. */
	doc = seed_run("pre-two", wd);
	post(runs, doc, NULL, &r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.job);
	ctx.committer = NULL;
	{
		api_resp rw;

		CU_ASSERT_EQUAL(post(wls, workload_doc, NULL, &rw), 201);
		api_resp_free(&rw);
	}
	ctx.committer = c;
	run_job(&r);
	CU_ASSERT_EQUAL(r.code, 201);
	o = json_tokener_parse(r.body.data);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	w = json_object_object_get(json_object_object_get(json_object_object_get(
	    json_object_object_get(o, "status"), "references"), "workload"),
	    "resolved");
	CU_ASSERT(json_object_get_boolean(w));
	w = json_object_object_get(json_object_object_get(json_object_object_get(
	    o, "metadata"), "labels"), "kernel");
	CU_ASSERT_STRING_EQUAL(json_object_get_string(w), "cross_entropy");
	json_object_put(o);
	api_resp_free(&r);
	free(doc);
	/* 3: rendered with its workload resolved, written after the workload
	 * was deleted: the write reads the references again (an object went
	 * since the rendering) and renders it unresolved. */
	doc = seed_run("pre-three", wd);
	post(runs, doc, NULL, &r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.job);
	ctx.committer = NULL;
	{
		api_write_opts none = { .field_validation = API_FV_WARN };
		api_resp rd;

		api_resp_init(&rd);
		api_delete(&ctx, wls, "ce-fwd", 6, &none, &rd);
		CU_ASSERT_EQUAL(rd.code, 200);
		api_resp_free(&rd);
	}
	ctx.committer = c;
	run_job(&r);
	CU_ASSERT_EQUAL(r.code, 201);
	o = json_tokener_parse(r.body.data);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	w = json_object_object_get(json_object_object_get(json_object_object_get(
	    json_object_object_get(o, "status"), "references"), "workload"),
	    "resolved");
	CU_ASSERT_PTR_NOT_NULL(w);
	CU_ASSERT(!json_object_get_boolean(w));
	json_object_put(o);
	api_resp_free(&r);
	free(doc);
	ctx.committer = NULL;
	store_committer_stop(c);
}


/* ---- bundle parts remembered by their bytes (api/parts.h) ---- */

typedef struct post_arg {
	const char *body;
	int ndjson;
	api_write_opts o;
	api_resp r;
} post_arg;

static int
post_as(const char *body, int ndjson, const api_write_opts *o, api_resp *r)
{
	api_resp_init(r);
	api_create(&ctx, api_kind_by_id(API_RUN), body, strlen(body), ndjson, o,
	    r);
	return r->code;
}

static void *
post_thread(void *arg)
{
	post_arg *a = arg;

	post_as(a->body, a->ndjson, &a->o, &a->r);
	return NULL;
}

/* Posts body (NDJSON when ndjson) from a new thread, which remembers no
 * part, and from this one: the answers must be the same. Returns this
 * thread's status. */
static int
same_answer_as(const char *body, int ndjson, const api_write_opts *o)
{
	post_arg a;
	pthread_t t;
	api_resp r;
	int code;

	memset(&a, 0, sizeof(a));
	a.body = body;
	a.ndjson = ndjson;
	a.o = *o;
	CU_ASSERT_FATAL(pthread_create(&t, NULL, post_thread, &a) == 0);
	pthread_join(t, NULL);
	code = post_as(body, ndjson, o, &r);
	CU_ASSERT_EQUAL(code, a.r.code);
	CU_ASSERT_EQUAL(r.body.len, a.r.body.len);
	if (r.body.len == a.r.body.len && r.body.len > 0)
		CU_ASSERT(memcmp(r.body.data, a.r.body.data, r.body.len) == 0);
	api_resp_free(&r);
	api_resp_free(&a.r);
	return code;
}

static int
same_answer(const char *body, const api_write_opts *o)
{
	return same_answer_as(body, 0, o);
}

static char *
plain(struct json_object *o)
{
	return strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
}

/* The members of an object, found without parsing it. */
static void
test_members(void)
{
	static const char text[] = " {\"a\":1, \"b\" : {\"x\":\"}\\\"\"} ,"
	    "\"c\":[1,{\"d\":[2]}],\"e\":\"s\"}\n";
	api_member m[API_MAX_MEMBERS];
	size_t n;
	char many[512];

	CU_ASSERT_EQUAL_FATAL(api_members(text, strlen(text), 32, m, &n), 0);
	CU_ASSERT_EQUAL_FATAL(n, 4);
	CU_ASSERT(m[0].key_len == 1 && m[0].key[0] == 'a');
	CU_ASSERT(m[0].val_len == 1 && m[0].val[0] == '1');
	CU_ASSERT(m[1].val_len == 11 && memcmp(m[1].val, "{\"x\":\"}\\\"\"}",
	    11) == 0);
	CU_ASSERT(m[2].val_len == 13 && memcmp(m[2].val, "[1,{\"d\":[2]}]",
	    13) == 0);
	CU_ASSERT(m[3].val_len == 3 && memcmp(m[3].val, "\"s\"", 3) == 0);
	CU_ASSERT(m[1].start[0] == '"' && m[1].start[1] == 'b');
	/* What the shortcut leaves to the parser. */
	CU_ASSERT_EQUAL(api_members("{\"a\":1,\"a\":2}", 13, 32, m, &n), -1);
	CU_ASSERT_EQUAL(api_members("{\"\\u0061\":1}", 12, 32, m, &n), -1);
	CU_ASSERT_EQUAL(api_members("{\"a\":{\"b\":1}", 12, 32, m, &n), -1);
	CU_ASSERT_EQUAL(api_members("{\"a\":1} x", 9, 32, m, &n), -1);
	CU_ASSERT_EQUAL(api_members("[1]", 3, 32, m, &n), -1);
	CU_ASSERT_EQUAL(api_members("{\"a\":[[[1]]]}", 13, 2, m, &n), -1);
	CU_ASSERT_EQUAL(api_members("{}", 2, 32, m, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
	/* Quotes after runs of backslashes: escaped when the run is odd. */
	{
		static const char esc[] = "{\"a\":\"x\\\\\",\"b\":\"\\\"}\\\\\"}";

		CU_ASSERT_EQUAL_FATAL(api_members(esc, strlen(esc), 32, m, &n), 0);
		CU_ASSERT_EQUAL_FATAL(n, 2);
		CU_ASSERT(m[0].val_len == 5 && memcmp(m[0].val, "\"x\\\\\"", 5) == 0);
		CU_ASSERT(m[1].val_len == 7 && memcmp(m[1].val, "\"\\\"}\\\\\"", 7) == 0);
	}
	{
		size_t at = 0;

		at += (size_t)snprintf(many + at, sizeof(many) - at, "{");
		for (int i = 0; i <= API_MAX_MEMBERS; i++)
			at += (size_t)snprintf(many + at, sizeof(many) - at,
			    "%s\"k%d\":%d", i ? "," : "", i, i);
		snprintf(many + at, sizeof(many) - at, "}");
		CU_ASSERT_EQUAL(api_members(many, strlen(many), 32, m, &n), -1);
	}
}

/* Makes the bundle b's protocol a new one (these notes and name), names
 * its digest (into dstr) in b's run, which gets a new name and externalId
 * (suffix appended), and uploads b with an unknown field in the run under
 * Strict: refused (400), after the protocol was validated, so this thread
 * remembers it. Returns b's text without that field. */
static char *
remember_new_protocol(struct json_object *b, const char *notes,
	const char *name, const char *suffix, char dstr[API_DIGEST_STRLEN + 1])
{
	api_write_opts strict = { .field_validation = API_FV_STRICT };
	struct json_object *proto = json_object_object_get(b, "protocol");
	struct json_object *run = json_object_object_get(b, "run");
	struct json_object *spec = json_object_object_get(run, "spec");
	struct json_object *sn = json_object_object_get(spec, "sourceNative");
	uint8_t d[API_DIGEST_LEN];
	char buf[512], *text;
	api_resp r;

	json_object_object_add(json_object_object_get(json_object_object_get(
	    proto, "spec"), "comparability"), "notes",
	    json_object_new_string(notes));
	json_object_object_add(json_object_object_get(proto, "metadata"), "name",
	    json_object_new_string(name));
	CU_ASSERT_EQUAL(api_digest(proto, d, NULL), KI_OK);
	api_digest_format(d, dstr);
	json_object_object_add(spec, "protocolDigest",
	    json_object_new_string(dstr));
	snprintf(buf, sizeof(buf), "run%s", suffix);
	json_object_object_add(json_object_object_get(run, "metadata"), "name",
	    json_object_new_string(buf));
	snprintf(buf, sizeof(buf), "%s%s", json_object_get_string(
	    json_object_object_get(sn, "externalId")), suffix);
	json_object_object_add(sn, "externalId", json_object_new_string(buf));
	json_object_object_add(spec, "bogus", json_object_new_int(1));
	text = plain(b);
	CU_ASSERT_EQUAL(post(api_kind_by_id(API_RUN), text, &strict, &r), 400);
	api_resp_free(&r);
	free(text);
	json_object_object_del(spec, "bogus");
	return plain(b);
}

/* The stored protocol name, checked for its digest and notes; the caller
 * puts it. */
static struct json_object *
stored_protocol(const char *name, const char *digest, const char *notes)
{
	api_resp r;
	struct json_object *o;

	api_resp_init(&r);
	api_get(&ctx, api_kind_by_id(API_PROTOCOL), name, strlen(name), &r);
	CU_ASSERT_EQUAL_FATAL(r.code, 200);
	o = json_tokener_parse(r.body.data);
	api_resp_free(&r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(
	    json_object_object_get(o, "status"), "digest")), digest);
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(
	    json_object_object_get(json_object_object_get(o, "spec"),
	    "comparability"), "notes")), notes);
	return o;
}

/* A bundle part seen before is not parsed, validated or hashed again:
 * every answer is the one a thread that remembers nothing gives, and a
 * remembered part that is not stored yet is stored from its bytes. */
static void
test_remembered_parts(void)
{
	const api_kind *runs = api_kind_by_id(API_RUN);
	api_write_opts dry = { .field_validation = API_FV_WARN, .dry_run = 1 };
	api_write_opts strict = { .field_validation = API_FV_STRICT,
		.dry_run = 1 };
	struct json_object *b, *run, *spec, *proto, *o;
	char *seed, *base, *text, *p, dstr[API_DIGEST_STRLEN + 1];
	uint64_t hits;
	size_t len;
	api_resp r;
	int code;

	CU_ASSERT_PTR_NOT_NULL_FATAL(seed = seed_text(&len));
	CU_ASSERT_PTR_NOT_NULL_FATAL(b = json_tokener_parse(seed));
	free(seed);
	run = json_object_object_get(b, "run");
	spec = json_object_object_get(run, "spec");
	proto = json_object_object_get(b, "protocol");
	base = plain(b);
	/* This thread remembers the seed's protocol and environment. */
	code = post(runs, base, NULL, &r);
	CU_ASSERT(code == 200 || code == 201);
	api_resp_free(&r);

	/* 1: the same bundle: both parts remembered, the same answer. */
	hits = api_part_hits();
	CU_ASSERT_EQUAL(same_answer(base, &dry), 200);
	CU_ASSERT_EQUAL(api_part_hits(), hits + 2);
	/* 2: a syntax error in the run, told about the body as sent. */
	text = strdup(base);
	p = strstr(text, "\"run\":{");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	p[6] = '[';
	CU_ASSERT_EQUAL(same_answer(text, &dry), 400);
	free(text);
	/* 3: the protocol twice, the first one remembered. */
	{
		char *pt = plain(proto);

		text = malloc(strlen(base) + strlen(pt) + 32);
		sprintf(text, "{\"protocol\":%s,%s", pt, base + 1);
		CU_ASSERT_EQUAL(same_answer(text, &dry), 400);
		free(text);
		free(pt);
	}
	/* 4: an unknown field in the run, under Strict. */
	json_object_object_add(spec, "bogus", json_object_new_int(1));
	text = plain(b);
	CU_ASSERT_EQUAL(same_answer(text, &strict), 400);
	free(text);
	json_object_object_del(spec, "bogus");
	/* 5: the run names another protocol than the one bundled. */
	{
		struct json_object *pd = json_object_object_get(spec,
		    "protocolDigest");
		char *was = strdup(json_object_get_string(pd));

		json_object_object_add(spec, "protocolDigest", json_object_new_string(
		    json_object_get_string(json_object_object_get(spec,
		    "environmentDigest"))));
		text = plain(b);
		CU_ASSERT_EQUAL(same_answer(text, &dry), 422);
		free(text);
		json_object_object_add(spec, "protocolDigest",
		    json_object_new_string(was));
		free(was);
	}
	/* 5b: NDJSON lines: the same bundle twice, and between them one
	 * whose protocol (remembered from a failed upload) has other content
	 * under the stored protocol's name: a conflict, told with the
	 * line's path. */
	{
		struct json_object *other = NULL;
		char *conflict, *nd;
		api_resp rr;

		CU_ASSERT_FATAL(json_object_deep_copy(b, &other, NULL) == 0);
		conflict = remember_new_protocol(other,
		    "Other notes under the same name.", "liger-bench-do-bench-full",
		    "-conflict", dstr);
		json_object_put(other);
		nd = malloc(2 * strlen(base) + strlen(conflict) + 8);
		sprintf(nd, "%s\n%s\n%s\n", base, conflict, base);
		hits = api_part_hits();
		same_answer_as(nd, 1, &dry);
		CU_ASSERT(api_part_hits() >= hits + 6);
		CU_ASSERT_EQUAL(post_as(nd, 1, &dry, &rr), 200);
		CU_ASSERT_PTR_NOT_NULL_FATAL(rr.body.data);
		CU_ASSERT_PTR_NOT_NULL(strstr(rr.body.data, "\"summary\":{"
		    "\"created\":0,\"unchanged\":6,\"failed\":1}"));
		CU_ASSERT_PTR_NOT_NULL(strstr(rr.body.data, "\"[2].protocol: "
		    "benchmarkprotocols.kernelindex.dev \\\"liger-bench-do-bench-"
		    "full\\\" already exists with other content"));
		api_resp_free(&rr);
		free(nd);
		free(conflict);
	}
	/* 6: a new protocol, remembered from an upload that failed on its
	 * run, is stored from its bytes by the next one. */
	{
		struct json_object *labels = json_object_new_object();

		json_object_object_add(labels, "team",
		    json_object_new_string("kernels"));
		json_object_object_add(json_object_object_get(proto, "metadata"),
		    "labels", labels);
	}
	text = remember_new_protocol(b, "Remembered, then stored.",
	    "proto-remembered", "-stored", dstr);
	hits = api_part_hits();
	CU_ASSERT_EQUAL(post(runs, text, NULL, &r), 201);
	CU_ASSERT_EQUAL(api_part_hits(), hits + 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "\"created\":2"));
	api_resp_free(&r);
	free(text);
	o = stored_protocol("proto-remembered", dstr,
	    "Remembered, then stored.");
	CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(
	    json_object_object_get(json_object_object_get(o, "metadata"),
	    "labels"), "team")), "kernels");
	json_object_put(o);
	/* 7: the same through the committer, which renders the new protocol
	 * in the write (a remembered part is not rendered ahead). */
	{
		store_committer *c = NULL;

		text = remember_new_protocol(b, "Remembered, then rendered ahead.",
		    "proto-remembered-ahead", "-ahead", dstr);
		CU_ASSERT_EQUAL_FATAL(store_committer_start(&c, st, 0, NULL, NULL),
		    KI_OK);
		ctx.committer = c;
		hits = api_part_hits();
		post(runs, text, NULL, &r);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r.job);
		run_job(&r);
		CU_ASSERT_EQUAL(r.code, 201);
		CU_ASSERT_EQUAL(api_part_hits(), hits + 2);
		CU_ASSERT_PTR_NOT_NULL(strstr(r.body.data, "\"created\":2"));
		api_resp_free(&r);
		ctx.committer = NULL;
		store_committer_stop(c);
		free(text);
		json_object_put(stored_protocol("proto-remembered-ahead", dstr,
		    "Remembered, then rendered ahead."));
	}
	json_object_put(b);
	free(base);
}

int
test_api_register(void)
{
	CU_pSuite s = CU_add_suite("api", setup, teardown);

	if (s == NULL ||
	    CU_add_test(s, "seed: create, idempotent, by name and digest",
	        test_seed_roundtrip) == NULL ||
	    CU_add_test(s, "conflicts and a tampered bundle change nothing",
	        test_conflict_and_tamper) == NULL ||
	    CU_add_test(s, "validation reports every cause", test_validation) ==
	        NULL ||
	    CU_add_test(s, "fieldValidation and dryRun", test_unknown_fields) ==
	        NULL ||
	    CU_add_test(s, "names, labels and times", test_syntax_checks) == NULL ||
	    CU_add_test(s, "writes rendered before the commit: same bytes, "
	        "re-rendered when a reference resolves in between",
	        test_prerendered_writes) == NULL ||
	    CU_add_test(s, "the members of an object, found without parsing",
	        test_members) == NULL ||
	    CU_add_test(s, "bundle parts remembered: the same answers, stored "
	        "from their bytes", test_remembered_parts) == NULL)
		return -1;
	return 0;
}
