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
	ki_buf_puts(&doc, "},\"components\":{\"schemas\":{");
	for (int id = 1; id <= API_NKINDS; id++) {
		const api_kind *k = api_kind_by_id(id);

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
		object_of(&doc, k->spec, "What the document says; immutable.");
		ki_buf_puts(&doc, ",\"status\":{\"type\":\"object\",\"description\":"
		    "\"Owned by the server: digest, references, conditions.\","
		    "\"x-kubernetes-preserve-unknown-fields\":true}}}");
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
