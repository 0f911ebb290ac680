/* api/labels.c — selector parsing and matching, derived labels, and the
 * label and facet blobs the store indexes. */
#include "api/labels.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"
#include "api/kinds.h"
#include "api/object.h"
#include "api/schema.h"
#include "lib/limits.h"

#define MAX_REQUIREMENTS 32
#define MAX_VALUES 64

void
api_selector_free(api_selector *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->reqs[i].key);
		for (size_t j = 0; j < s->reqs[i].nvalues; j++)
			free(s->reqs[i].values[j]);
		free(s->reqs[i].values);
	}
	free(s->reqs);
	memset(s, 0, sizeof(*s));
}

typedef struct lexer {
	const char *p;
	char *err;
	size_t errlen;
	const char *text;
} lexer;

static void
skip_ws(lexer *lx)
{
	while (*lx->p == ' ' || *lx->p == '\t')
		lx->p++;
}

static int
is_word_char(int c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '/';
}

static char *
word(lexer *lx)
{
	const char *start;

	skip_ws(lx);
	start = lx->p;
	while (*lx->p && is_word_char((unsigned char)*lx->p))
		lx->p++;
	return strndup(start, (size_t)(lx->p - start));
}

static int
lex_fail(lexer *lx, const char *what)
{
	snprintf(lx->err, lx->errlen, "unable to parse requirement: %s at "
	    "position %d of \"%.200s\"", what, (int)(lx->p - lx->text), lx->text);
	return KI_EINVAL;
}

static int
add_value(api_requirement *r, char *v)
{
	char **n;

	if (v == NULL)
		return KI_ENOMEM;
	if (r->nvalues >= MAX_VALUES) {
		free(v);
		return KI_EINVAL;
	}
	n = realloc(r->values, (r->nvalues + 1) * sizeof(*n));
	if (n == NULL) {
		free(v);
		return KI_ENOMEM;
	}
	r->values = n;
	r->values[r->nvalues++] = v;
	return KI_OK;
}

static int
parse(const char *text, api_selector *out, char *err, size_t errlen,
	int fields)
{
	lexer lx = { text ? text : "", err, errlen, text ? text : "" };
	int rc;

	memset(out, 0, sizeof(*out));
	skip_ws(&lx);
	if (*lx.p == '\0')
		return KI_OK;
	for (;;) {
		api_requirement *r, *n;
		int neg = 0;

		if (out->n >= MAX_REQUIREMENTS) {
			rc = lex_fail(&lx, "too many requirements");
			goto fail;
		}
		n = realloc(out->reqs, (out->n + 1) * sizeof(*n));
		if (n == NULL) {
			rc = KI_ENOMEM;
			goto fail;
		}
		out->reqs = n;
		r = &out->reqs[out->n++];
		memset(r, 0, sizeof(*r));
		skip_ws(&lx);
		if (!fields && *lx.p == '!') {
			neg = 1;
			lx.p++;
		}
		if ((r->key = word(&lx)) == NULL) {
			rc = KI_ENOMEM;
			goto fail;
		}
		if (r->key[0] == '\0') {
			rc = lex_fail(&lx, "a key is expected");
			goto fail;
		}
		if (!fields && !api_is_label_key(r->key, strlen(r->key))) {
			rc = lex_fail(&lx, "invalid label key");
			goto fail;
		}
		skip_ws(&lx);
		if (neg) {
			r->op = API_SEL_NOTEXISTS;
		} else if (*lx.p == ',' || *lx.p == '\0') {
			if (fields) {
				rc = lex_fail(&lx, "'=', '==' or '!=' is expected");
				goto fail;
			}
			r->op = API_SEL_EXISTS;
		} else if (lx.p[0] == '=' || (lx.p[0] == '!' && lx.p[1] == '=') ||
		    (!fields && (lx.p[0] == '>' || lx.p[0] == '<'))) {
			char *v;

			if (lx.p[0] == '!') {
				r->op = API_SEL_NEQ;
				lx.p += 2;
			} else if (lx.p[0] == '>' || lx.p[0] == '<') {
				r->op = lx.p[0] == '>' ? API_SEL_GT : API_SEL_LT;
				lx.p++;
			} else {
				r->op = API_SEL_EQ;
				lx.p += lx.p[1] == '=' ? 2 : 1;
			}
			if (fields) {
				/* Field values may hold any character but ','. */
				const char *s;

				skip_ws(&lx);
				s = lx.p;
				while (*lx.p && *lx.p != ',')
					lx.p++;
				v = strndup(s, (size_t)(lx.p - s));
				while (v != NULL && *v && v[strlen(v) - 1] == ' ')
					v[strlen(v) - 1] = '\0';
			} else {
				v = word(&lx);
			}
			if ((rc = add_value(r, v)) != KI_OK)
				goto fail;
			if (!fields && !api_is_label_value(r->values[0],
			    strlen(r->values[0]))) {
				rc = lex_fail(&lx, "invalid label value");
				goto fail;
			}
			if ((r->op == API_SEL_GT || r->op == API_SEL_LT)) {
				char *end;

				strtoll(r->values[0], &end, 10);
				if (*r->values[0] == '\0' || *end != '\0') {
					rc = lex_fail(&lx, "an integer is expected");
					goto fail;
				}
			}
		} else if (!fields && (strncmp(lx.p, "in", 2) == 0 ||
		    strncmp(lx.p, "notin", 5) == 0)) {
			r->op = lx.p[0] == 'i' ? API_SEL_IN : API_SEL_NOTIN;
			lx.p += r->op == API_SEL_IN ? 2 : 5;
			skip_ws(&lx);
			if (*lx.p != '(') {
				rc = lex_fail(&lx, "'(' is expected");
				goto fail;
			}
			lx.p++;
			/* kube-apiserver: "values set can't be empty" (an empty
			 * set selected nothing, or everything for notin). */
			skip_ws(&lx);
			if (*lx.p == ')') {
				rc = lex_fail(&lx, "the values of in and notin cannot "
				    "be an empty set");
				goto fail;
			}
			for (;;) {
				char *v = word(&lx);

				if ((rc = add_value(r, v)) != KI_OK) {
					if (rc == KI_EINVAL)
						rc = lex_fail(&lx, "too many values");
					goto fail;
				}
				if (!api_is_label_value(r->values[r->nvalues - 1],
				    strlen(r->values[r->nvalues - 1]))) {
					rc = lex_fail(&lx, "invalid label value");
					goto fail;
				}
				skip_ws(&lx);
				if (*lx.p == ',') {
					lx.p++;
					continue;
				}
				if (*lx.p == ')') {
					lx.p++;
					break;
				}
				rc = lex_fail(&lx, "',' or ')' is expected");
				goto fail;
			}
		} else {
			rc = lex_fail(&lx, fields ? "'=', '==' or '!=' is expected" :
			    "an operator (=, ==, !=, in, notin) is expected");
			goto fail;
		}
		skip_ws(&lx);
		if (*lx.p == '\0')
			return KI_OK;
		if (*lx.p != ',') {
			rc = lex_fail(&lx, "',' is expected");
			goto fail;
		}
		lx.p++;
	}
fail:
	api_selector_free(out);
	if (rc == KI_ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}

int
api_selector_parse(const char *text, api_selector *out, char *err,
	size_t errlen)
{
	return parse(text, out, err, errlen, 0);
}

int
api_field_selector_parse(const char *text, api_selector *out, char *err,
	size_t errlen)
{
	return parse(text, out, err, errlen, 1);
}

/* Finds key in a label blob; returns the value or NULL. */
static const char *
blob_get(const char *labels, size_t len, const char *key)
{
	const char *p = labels, *end;

	if (labels == NULL)
		return NULL;
	end = labels + len;
	while (p < end) {
		const char *k = p, *v;

		v = k + strnlen(k, (size_t)(end - k)) + 1;
		if (v >= end)
			break;
		p = v + strnlen(v, (size_t)(end - v)) + 1;
		if (strcmp(k, key) == 0)
			return v;
	}
	return NULL;
}

int
api_selector_match(const api_selector *s, const char *labels, size_t len)
{
	for (size_t i = 0; i < s->n; i++) {
		const api_requirement *r = &s->reqs[i];
		const char *v = blob_get(labels, len, r->key);
		int hit = 0;

		switch (r->op) {
		case API_SEL_EQ:
			if (v == NULL || strcmp(v, r->values[0]) != 0)
				return 0;
			break;
		case API_SEL_NEQ:
			if (v != NULL && strcmp(v, r->values[0]) == 0)
				return 0;
			break;
		case API_SEL_IN:
		case API_SEL_NOTIN:
			for (size_t j = 0; v != NULL && j < r->nvalues; j++)
				hit |= strcmp(v, r->values[j]) == 0;
			if ((r->op == API_SEL_IN) != hit)
				return 0;
			break;
		case API_SEL_EXISTS:
			if (v == NULL)
				return 0;
			break;
		case API_SEL_NOTEXISTS:
			if (v != NULL)
				return 0;
			break;
		case API_SEL_GT:
		case API_SEL_LT: {
			char *end;
			long long a, b = strtoll(r->values[0], NULL, 10);

			if (v == NULL)
				return 0;
			a = strtoll(v, &end, 10);
			if (*v == '\0' || *end != '\0')
				return 0;
			if (r->op == API_SEL_GT ? !(a > b) : !(a < b))
				return 0;
			break;
		}
		default:
			return 0;
		}
	}
	return 1;
}

const api_requirement *
api_selector_driver(const api_selector *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const api_requirement *r = &s->reqs[i];

		if (r->op == API_SEL_EQ &&
		    strlen(r->key) + strlen(r->values[0]) <= STORE_MAX_INDEXED)
			return r;
	}
	return NULL;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int
api_labels_encode(struct json_object *labels, ki_buf *out)
{
	const char *keys[KI_MAX_LABELS + 1];
	size_t n = 0;

	if (labels == NULL || !json_object_is_type(labels, json_type_object))
		return KI_OK;
	json_object_object_foreach(labels, key, val) {
		(void)val;
		if (n < KI_MAX_LABELS + 1)
			keys[n++] = key;
	}
	qsort(keys, n, sizeof(keys[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_object_get(labels, keys[i]);

		ki_buf_append(out, keys[i], strlen(keys[i]) + 1);
		ki_buf_append(out, json_object_get_string(v),
		    strlen(json_object_get_string(v)) + 1);
	}
	return out->oom ? KI_ENOMEM : KI_OK;
}

/* The value of key in a label blob, or "". */
static const char *
blob_label(const char *labels, size_t len, const char *key)
{
	const char *v = blob_get(labels, len, key);

	return v != NULL ? v : "";
}

int
api_store_facets(int kind, const char *labels, size_t len, ki_buf *out)
{
	const char *p = labels, *end = labels != NULL ? labels + len : NULL;

	while (p != NULL && p < end) {
		const char *k = p, *v;

		v = k + strnlen(k, (size_t)(end - k)) + 1;
		if (v >= end)
			break;
		p = v + strnlen(v, (size_t)(end - v)) + 1;
		ki_buf_puts(out, "l:");
		ki_buf_puts(out, k);
		ki_buf_putc(out, '=');
		ki_buf_append(out, v, strlen(v) + 1);
	}
	if (kind == API_RUN) {
		ki_buf_puts(out, "c:");
		ki_buf_puts(out, blob_label(labels, len, "kernel"));
		ki_buf_putc(out, '\x1f');
		ki_buf_puts(out, blob_label(labels, len, "provider"));
		ki_buf_putc(out, '\x1f');
		ki_buf_puts(out, blob_label(labels, len, "gpu"));
		ki_buf_putc(out, '\x1f');
		ki_buf_puts(out, blob_label(labels, len, "metric"));
		ki_buf_putc(out, '\0');
	}
	ki_buf_append(out, "n:", 3);
	return out->oom ? KI_ENOMEM : KI_OK;
}

size_t
api_slug(const char *s, char out[64])
{
	size_t n = 0;
	int dash = 0;

	for (; *s && n < 63; s++) {
		int c = tolower((unsigned char)*s);

		if (isalnum(c) || c == '.' || c == '_') {
			if (dash && n > 0)
				out[n++] = '-';
			if (n < 63)
				out[n++] = (char)c;
			dash = 0;
		} else {
			dash = 1;
		}
	}
	while (n > 0 && !isalnum((unsigned char)out[n - 1]))
		n--;
	out[n] = '\0';
	return n;
}


static void
set_label(struct json_object *labels, const char *key, const char *value)
{
	char slug[64];

	if (value == NULL || api_slug(value, slug) == 0)
		return;
	json_object_object_add(labels, key, json_object_new_string(slug));
}


/* The GPU slug of an environment: product and form factor without the
 * vendor's name ("NVIDIA A100" + "SXM4-80GB" -> "a100-sxm4-80gb"). */
static void
gpu_label(struct json_object *labels, struct json_object *env)
{
	const char *product = api_json_str_at(env, "hardware", "product");
	const char *ff = api_json_str_at(env, "hardware", "formFactor");
	const char *vendor = api_json_str_at(env, "hardware", "vendor");
	char text[256];
	size_t vl = vendor ? strlen(vendor) : 0;

	if (product == NULL)
		return;
	if (vl > 0 && strncasecmp(product, vendor, vl) == 0 &&
	    (product[vl] == ' ' || product[vl] == '-'))
		product += vl + 1;
	snprintf(text, sizeof(text), "%s %s", product, ff ? ff : "");
	set_label(labels, "gpu", text);
}

static const char *
dtype_of_short(const char *s)
{
	static const struct {
		const char *s, *d;
	} t[] = { { "fp32", "float32" }, { "fp16", "float16" },
		{ "bf16", "bfloat16" }, { "fp64", "float64" }, { "fp8", "float8" },
		{ "tf32", "tfloat32" } };

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (strcmp(s, t[i].s) == 0)
			return t[i].d;
	}
	return NULL;
}

/* What sourceNative tells when the references do not: benchmark is
 * "<kernel>/<pass>"; Liger's externalId is
 * "<kernel>/<pass>/<provider>/<gpu>/<workload>/<time>" with the workload
 * ending in a dtype such as fp32. */
static void
labels_from_native(struct json_object *labels, struct json_object *spec,
	int have_workload, int have_impl, int have_env)
{
	const char *bench = api_json_str_at(spec, "sourceNative", "benchmark");
	const char *src = api_json_str_at(spec, "sourceNative", "source");
	const char *ext = api_json_str_at(spec, "sourceNative", "externalId");
	char buf[600];
	char *seg[8];
	int n = 0;

	if (!have_workload && bench != NULL) {
		const char *slash = strchr(bench, '/');

		snprintf(buf, sizeof(buf), "%.*s",
		    slash ? (int)(slash - bench) : (int)strlen(bench), bench);
		set_label(labels, "kernel", buf);
		if (slash != NULL)
			set_label(labels, "pass", slash + 1);
	}
	if (src == NULL || ext == NULL || strcmp(src, "liger-kernel-bench") != 0)
		return;
	snprintf(buf, sizeof(buf), "%s", ext);
	for (char *p = buf, *s; n < 8 && (s = strsep(&p, "/")) != NULL;)
		seg[n++] = s;
	if (n < 5)
		return;
	if (!have_impl)
		set_label(labels, "provider", seg[2]);
	if (!have_env) {
		const char *g = seg[3];

		if (strncmp(g, "nvidia-", 7) == 0)
			g += 7;
		set_label(labels, "gpu", g);
	}
	if (!have_workload) {
		const char *dash = strrchr(seg[4], '-');
		const char *d = dtype_of_short(dash ? dash + 1 : seg[4]);

		if (d != NULL)
			set_label(labels, "dtype", d);
	}
}

int
api_run_derive_labels(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, struct json_object *labels)
{
	api_run_refs rr;
	int rc;

	api_run_refs_load(txn, refs, nrefs, &rr);
	rc = api_run_derive_labels_from(spec, &rr, labels);
	api_run_refs_free(&rr);
	return rc;
}

int
api_run_derive_labels_from(struct json_object *spec, const api_run_refs *rr,
	struct json_object *labels)
{
	struct json_object *wl = rr->spec[API_REF_WORKLOAD];
	struct json_object *impl = rr->spec[API_REF_IMPLEMENTATION];
	struct json_object *env = rr->spec[API_REF_ENVIRONMENT], *ms;
	int latency = 0, memory = 0;

	if (wl != NULL) {
		set_label(labels, "kernel", api_json_str_at(wl, "kernel", NULL));
		set_label(labels, "pass", api_json_str_at(wl, "pass", NULL));
		set_label(labels, "dtype", api_json_str_at(wl, "dtype", NULL));
	}
	if (impl != NULL)
		set_label(labels, "provider", api_json_str_at(impl, "provider", NULL));
	if (env != NULL)
		gpu_label(labels, env);
	labels_from_native(labels, spec, wl != NULL, impl != NULL, env != NULL);
	if (json_object_object_get_ex(spec, "timing", NULL))
		latency = 1;
	if (json_object_object_get_ex(spec, "measurements", &ms) &&
	    json_object_is_type(ms, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(ms); i++) {
			const char *m = api_json_str_at(json_object_array_get_idx(ms, i),
			    "metric", NULL);

			if (m != NULL && strcmp(m, "latency") == 0)
				latency = 1;
			else if (m != NULL && strcmp(m, "peak_memory") == 0)
				memory = 1;
		}
	}
	if (latency || memory)
		set_label(labels, "metric", latency ? "latency" : "peak_memory");
	return KI_OK;
}
