/* api/openapi.c — the OpenAPI v3 documents kubectl reads for field
 * validation and `kubectl explain`, generated from the schema tables. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "api/jcs.h"
#include "api/kinds.h"
#include "api/schema.h"
#include "api/service.h"

static ki_buf doc;
static char hash[17];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
str(ki_buf *b, const char *s)
{
	ki_buf_json_string(b, s, strlen(s));
}

static void schema_of(ki_buf *b, const api_field *f);

static void
object_of(ki_buf *b, const api_field *fields, const char *desc)
{
	int first = 1;

	ki_buf_puts(b, "{\"type\":\"object\"");
	if (desc != NULL) {
		ki_buf_puts(b, ",\"description\":");
		str(b, desc);
	}
	ki_buf_puts(b, ",\"properties\":{");
	for (const api_field *f = fields; f->name != NULL; f++) {
		ki_buf_printf(b, "%s\"%s\":", first ? "" : ",", f->name);
		schema_of(b, f);
		first = 0;
	}
	ki_buf_putc(b, '}');
	first = 1;
	for (const api_field *f = fields; f->name != NULL; f++) {
		if (!(f->flags & API_F_REQUIRED))
			continue;
		ki_buf_printf(b, "%s\"%s\"", first ? ",\"required\":[" : ",",
		    f->name);
		first = 0;
	}
	if (!first)
		ki_buf_putc(b, ']');
	ki_buf_putc(b, '}');
}

static void
schema_of(ki_buf *b, const api_field *f)
{
	switch (f->type) {
	case API_T_OBJECT:
		object_of(b, f->fields, f->doc);
		return;
	case API_T_MAP:
		ki_buf_puts(b, "{\"type\":\"object\",\"additionalProperties\":");
		schema_of(b, &f->fields[0]);
		break;
	case API_T_ARRAY:
		ki_buf_puts(b, "{\"type\":\"array\",\"items\":");
		schema_of(b, &f->fields[0]);
		break;
	case API_T_STRING:
		ki_buf_puts(b, "{\"type\":\"string\"");
		if (f->flags & API_F_TIME)
			ki_buf_puts(b, ",\"format\":\"date-time\"");
		if (f->flags & API_F_DIGEST)
			ki_buf_puts(b, ",\"pattern\":\"^sha256:[0-9a-f]{64}$\"");
		if (f->flags & API_F_NOCTL)
			ki_buf_puts(b, ",\"pattern\":\"^[^\\\\x00-\\\\x1f\\\\x7f]*$\"");
		if (f->enums != NULL) {
			ki_buf_puts(b, ",\"enum\":[");
			for (const char *const *e = f->enums; *e != NULL; e++)
				ki_buf_printf(b, "%s\"%s\"", e == f->enums ? "" : ",", *e);
			ki_buf_putc(b, ']');
		}
		break;
	case API_T_NUMBER:
		ki_buf_puts(b, "{\"type\":\"number\"");
		if (f->flags & API_F_NONNEG)
			ki_buf_puts(b, ",\"minimum\":0");
		break;
	case API_T_INTEGER:
		ki_buf_puts(b, "{\"type\":\"integer\"");
		if (f->flags & API_F_NONNEG)
			ki_buf_puts(b, ",\"minimum\":0");
		break;
	case API_T_BOOL:
		ki_buf_puts(b, "{\"type\":\"boolean\"");
		break;
	default:
		ki_buf_puts(b, "{\"x-kubernetes-int-or-string\":true");
		break;
	}
	if (f->doc != NULL) {
		ki_buf_puts(b, ",\"description\":");
		str(b, f->doc);
	}
	ki_buf_putc(b, '}');
}

/* Operations carry one GVK object; schemas a list of them, as
 * kube-apiserver writes them. */
static void
gvk(ki_buf *b, const api_kind *k, int list)
{
	ki_buf_printf(b, "\"x-kubernetes-group-version-kind\":%s{\"group\":\""
	    API_GROUP "\",\"kind\":\"%s\",\"version\":\"" API_VERSION "\"}%s",
	    list ? "[" : "", k->kind, list ? "]" : "");
}

static void
op(ki_buf *b, const char *method, const api_kind *k, const char *verb,
	int body, int first)
{
	ki_buf_printf(b, "%s\"%s\":{\"tags\":[\"kernelindexDev_v1alpha1\"],"
	    "\"operationId\":\"%s%s\",\"x-kubernetes-action\":\"%s\",", first ? "" :
	    ",", method, verb, k->kind, verb);
	gvk(b, k, 0);
	ki_buf_puts(b, ",\"parameters\":[");
	if (body)
		ki_buf_puts(b, "{\"name\":\"dryRun\",\"in\":\"query\",\"schema\":"
		    "{\"type\":\"string\"},\"description\":\"All: validate, store "
		    "nothing.\"},{\"name\":\"fieldManager\",\"in\":\"query\","
		    "\"schema\":{\"type\":\"string\"}},{\"name\":\"fieldValidation\","
		    "\"in\":\"query\",\"schema\":{\"type\":\"string\"},"
		    "\"description\":\"Strict, Warn or Ignore: what unknown fields "
		    "cause.\"}");
	ki_buf_puts(b, "]");
	if (body)
		ki_buf_printf(b, ",\"requestBody\":{\"content\":{\"application/json\":"
		    "{\"schema\":{\"$ref\":\"#/components/schemas/dev.kernelindex."
		    "v1alpha1.%s\"}}}}", k->kind);
	ki_buf_printf(b, ",\"responses\":{\"200\":{\"description\":\"OK\","
	    "\"content\":{\"application/json\":{\"schema\":{\"$ref\":"
	    "\"#/components/schemas/dev.kernelindex.v1alpha1.%s\"}}}}}}",
	    k->kind);
}

/* Comparison is answered and not stored: created only, and no kind of the
 * table (api/kinds.c). */
static const api_kind comparison_kind = { 0, "Comparison", "comparisons",
	"comparison", "kcmp", NULL, NULL, NULL, 0, api_schema_comparison,
	"Comparison pairs the runs of a baseline and a candidate label "
	"selector by series and answers each pair's ratio with its interval, "
	"the regressions and improvements beyond a threshold and a summary; "
	"it is answered at once and not stored." };

/* ---- the status the server writes, for `kubectl explain KIND.status` ----
 * Descriptions only: clients never send a status (it is server-owned). */

#define S(n, d) { n, API_T_STRING, 0, NULL, NULL, 0, d }
#define N(n, d) { n, API_T_NUMBER, 0, NULL, NULL, 0, d }
#define B(n, d) { n, API_T_BOOL, 0, NULL, NULL, 0, d }
#define O(n, f, d) { n, API_T_OBJECT, 0, NULL, f, 0, d }
#define END { NULL, 0, 0, NULL, NULL, 0, NULL }

static const api_field st_condition[] = {
	S("type", "DigestsVerified, Plausible, Regressed (runs); Complete, "
	    "Verified, Failed (verifications); Regressed (comparisons)."),
	S("status", "True, False or Unknown."),
	S("reason", "Why, in one CamelCase word."),
	S("message", "Why, for people."),
	S("lastTransitionTime", "When status last changed (RFC 3339)."),
	END
};
static const api_field st_conditions[] = {
	O("", st_condition, "A condition."), END
};
static const api_field st_ref[] = {
	S("digest", "The referenced content digest."),
	S("name", "The stored object with that digest, once resolved."),
	B("resolved", "Whether an object with the digest is stored."),
	END
};
static const api_field st_refs[] = {
	O("protocol", st_ref, "The BenchmarkProtocol."),
	O("workload", st_ref, "The Workload."),
	O("environment", st_ref, "The ExecutionEnvironment."),
	O("implementation", st_ref, "The Implementation."),
	END
};
static const api_field st_plausibility[] = {
	S("verdict", "Plausible, Implausible or Unknown: the claimed time "
	    "against the hardware's floor for the workload."),
	N("achievedFraction", "The floor over the claimed time."),
	N("bytes", "Bytes the workload must move."),
	N("flops", "Floating-point operations of the workload."),
	N("floorNs", "The least time the GPU needs for the flops (ns)."),
	N("floorBytes", "The floor for memory-bound workloads (bytes)."),
	B("derivedWorkload", "Whether the workload came from sourceNative."),
	S("gpu", "The GPU the floor is for."),
	S("model", "The cost model used."),
	END
};
static const api_field st_run_verification[] = {
	S("name", "The Verification that last measured this run."),
	S("verdict", "Consistent, Implausible or Unverifiable."),
	S("reason", "Why."),
	S("message", "Why, for people."),
	N("referenceNs", "The reference kernel's median (ns)."),
	N("ratio", "The claimed median over the reference's."),
	S("gpu", "Where the reference ran."),
	END
};
/* Members described in their text, their fields kept as they come. */
static const api_field st_open[] = { END };
static const api_field st_judgement[] = {
	O("", st_open, "One Threshold's judgement: threshold, test, limit, "
	    "window, minSample, sample, judged, regressed, value, baseline "
	    "(median and runs), changePercent, zScore or fence."),
	END
};
static const api_field st_comparison[] = {
	O("summary", st_open, "pairs, regressions, improvements, unchanged, "
	    "baselineOnly, candidateOnly, excludedImplausible, "
	    "thresholdPercent, geomeanRatio, regressed."),
	{ "conditions", API_T_ARRAY, 0, NULL, st_conditions, 0,
	  "Regressed: True when a pair regressed beyond the threshold." },
	{ "pairs", API_T_ARRAY, 0, NULL, st_judgement, 0,
	  "Each paired series: series, baseline, candidate, ratio, interval, "
	  "changePercent, verdict (Regression, Improvement or Unchanged), "
	  "confident." },
	END
};
static const api_field st_run[] = {
	{ "conditions", API_T_ARRAY, 0, NULL, st_conditions, 0,
	  "DigestsVerified (every reference resolved) and Plausible." },
	S("digest", "The content digest of the spec (sha256:...)."),
	O("references", st_refs, "Each reference of the spec, resolved or "
	    "not."),
	O("plausibility", st_plausibility, "The run against the hardware's "
	    "limits."),
	O("verification", st_run_verification, "The outcome of the last "
	    "Verification of this run."),
	{ "thresholds", API_T_ARRAY, 0, NULL, st_judgement, 0,
	  "The Thresholds that judged this run as it arrived (with a "
	  "Regressed condition)." },
	END
};
static const api_field st_ns[] = { N("", "Nanoseconds."), END };
static const api_field st_free[] = { END };
static const api_field st_verification[] = {
	S("phase", "Pending, Running, Succeeded or Failed."),
	S("verdict", "Consistent, Implausible or Unverifiable."),
	S("reason", "Why."),
	S("message", "Why, for people."),
	S("startedAt", "When the reference program started."),
	S("finishedAt", "When it finished."),
	N("claimedNs", "The run's claimed median (ns)."),
	N("ratio", "The claimed median over the reference's."),
	{ "reference", API_T_MAP, 0, NULL, st_ns, 0,
	  "The reference's latency quantiles (ns)." },
	O("result", st_free, "What the reference program answered."),
	{ "conditions", API_T_ARRAY, 0, NULL, st_conditions, 0,
	  "Complete, Verified, and Failed (True when it failed: what "
	  "`kubectl wait --for=condition=Failed` waits for)." },
	S("digest", "The content digest of the spec."),
	END
};
static const api_field st_other[] = {
	S("digest", "The content digest of the spec (sha256:...)."),
	END
};

/* The status schema of kind k: described fields, unknown ones kept. */
static void
status_of(ki_buf *b, const api_kind *k)
{
	size_t at = b->len;

	object_of(b, k == &comparison_kind ? st_comparison : k->id == API_RUN ?
	    st_run : k->id == API_VERIFICATION ? st_verification : st_other,
	    k == &comparison_kind ? "The answer (docs/regressions.md)." :
	    "Owned by the server: clients never write it.");
	if (b->len > at && !b->oom) {
		b->len--;     /* the closing brace */
		ki_buf_puts(b, ",\"x-kubernetes-preserve-unknown-fields\":true}");
	}
}

static void
build(void)
{
	static const char *meta_schema = "{\"type\":\"object\",\"description\":"
	    "\"Standard object metadata; the server sets uid, resourceVersion, "
	    "creationTimestamp and generation.\",\"properties\":{\"name\":{"
	    "\"type\":\"string\",\"description\":\"A DNS-1123 subdomain.\"},"
	    "\"title\":{\"type\":\"string\",\"description\":\"A human title.\"},"
	    "\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":"
	    "\"string\"}},\"annotations\":{\"type\":\"object\","
	    "\"additionalProperties\":{\"type\":\"string\"}},\"uid\":{\"type\":"
	    "\"string\"},\"resourceVersion\":{\"type\":\"string\"},"
	    "\"generation\":{\"type\":\"integer\"},\"creationTimestamp\":{"
	    "\"type\":\"string\",\"format\":\"date-time\"},\"managedFields\":{"
	    "\"type\":\"array\",\"items\":{\"type\":\"object\","
	    "\"x-kubernetes-preserve-unknown-fields\":true}}}}";
	uint8_t d[API_DIGEST_LEN];
	char full[API_DIGEST_STRLEN + 1];

	ki_buf_init(&doc);
	ki_buf_puts(&doc, "{\"openapi\":\"3.0.0\",\"info\":{\"title\":"
	    "\"kernelindex\",\"version\":\"" API_VERSION "\"},\"paths\":{");
	for (int id = 1; id <= API_NKINDS; id++) {
		const api_kind *k = api_kind_by_id(id);

		ki_buf_printf(&doc, "%s\"" API_PREFIX "/%s\":{", id > 1 ? "," : "",
		    k->plural);
		op(&doc, "get", k, "list", 0, 1);
		op(&doc, "post", k, "create", 1, 0);
		ki_buf_printf(&doc, "},\"" API_PREFIX "/%s/{name}\":{", k->plural);
		op(&doc, "get", k, "read", 0, 1);
		op(&doc, "put", k, "replace", 1, 0);
		op(&doc, "patch", k, "patch", 1, 0);
		op(&doc, "delete", k, "delete", 0, 0);
		ki_buf_puts(&doc, "}");
	}
	ki_buf_puts(&doc, ",\"" API_PREFIX "/comparisons\":{");
	op(&doc, "post", &comparison_kind, "create", 1, 1);
	ki_buf_puts(&doc, "}},\"components\":{\"schemas\":{");
	for (int id = 1; id <= API_NKINDS + 1; id++) {
		const api_kind *k = id <= API_NKINDS ? api_kind_by_id(id) :
		    &comparison_kind;

		ki_buf_printf(&doc, "%s\"dev.kernelindex.v1alpha1.%s\":{"
		    "\"type\":\"object\",\"description\":", id > 1 ? "," : "",
		    k->kind);
		str(&doc, k->description);
		ki_buf_puts(&doc, ",");
		gvk(&doc, k, 1);
		ki_buf_puts(&doc, ",\"required\":[\"apiVersion\",\"kind\","
		    "\"metadata\",\"spec\"],\"properties\":{\"apiVersion\":{"
		    "\"type\":\"string\",\"description\":\"" API_GROUP_VERSION
		    "\"},\"kind\":{\"type\":\"string\",\"description\":\"");
		ki_buf_puts(&doc, k->kind);
		ki_buf_puts(&doc, "\"},\"metadata\":");
		ki_buf_puts(&doc, meta_schema);
		ki_buf_puts(&doc, ",\"spec\":");
		object_of(&doc, k->spec, k == &comparison_kind ? "What to compare." :
		    "What the document says; immutable.");
		ki_buf_puts(&doc, ",\"status\":");
		status_of(&doc, k);
		ki_buf_puts(&doc, "}}");
	}
	ki_buf_puts(&doc, "}}}");
	api_sha256(doc.data, doc.len, d);
	api_digest_format(d, full);
	memcpy(hash, full + 7, 16);
	hash[16] = '\0';
}

void
api_openapi_index(api_resp *r)
{
	pthread_once(&once, build);
	ki_buf_printf(&r->body, "{\"paths\":{\"apis/" API_GROUP_VERSION "\":{"
	    "\"serverRelativeURL\":\"/openapi/v3/apis/" API_GROUP_VERSION
	    "?hash=%s\"}}}", hash);
	r->code = 200;
}

void
api_openapi_group(api_resp *r)
{
	pthread_once(&once, build);
	ki_buf_append(&r->body, doc.data, doc.len);
	snprintf(r->version, sizeof(r->version), "%s", hash);
	r->code = doc.oom ? 503 : 200;
}
