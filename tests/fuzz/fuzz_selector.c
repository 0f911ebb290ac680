/* tests/fuzz/fuzz_selector.c — fuzz target for the label and field
 * selector parsers and the matcher, and for api_query_parse (the list
 * path's entry), whose refusals must be 400 Status answers.
 *
 * Properties checked beyond "no crash, no leak":
 *  - a parsed requirement has a non-empty key, an operator of the enum and
 *    the number of values its operator takes; label selectors hold valid
 *    label keys and values only;
 *  - when the keys are distinct, a label blob built to satisfy every
 *    requirement matches, and the empty blob matches exactly when every
 *    requirement is a negative one (!=, notin, !key);
 *  - the index driver is an equality requirement of the selector. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kinds.h"
#include "api/labels.h"
#include "api/schema.h"
#include "api/service.h"
#include "tests/fuzz/fuzz.h"

/* Sorted "k\0v\0" pairs, like the store's blobs. */
static const char fixed_blob[] =
	"dtype\0fp32\0empty\0\0gpu\0a100-sxm4-80gb\0kernel\0embedding\0"
	"liger_version\0" "0.2.1\0metric\0latency\0n\0" "42\0neg\0-7\0"
	"pass\0full\0provider\0liger\0tier/gold\0yes\0verdict\0plausible\0";

static int
is_negative(int op)
{
	return op == API_SEL_NEQ || op == API_SEL_NOTIN ||
	    op == API_SEL_NOTEXISTS;
}

static void
check_shape(const api_selector *s, int fields)
{
	for (size_t i = 0; i < s->n; i++) {
		const api_requirement *r = &s->reqs[i];
		size_t want_min = 1, want_max = 1;

		if (r->key == NULL || r->key[0] == '\0')
			fuzz_fail("requirement %zu has an empty key", i);
		switch (r->op) {
		case API_SEL_EQ:
		case API_SEL_NEQ:
			break;
		case API_SEL_GT:
		case API_SEL_LT:
		case API_SEL_IN:
		case API_SEL_NOTIN:
		case API_SEL_EXISTS:
		case API_SEL_NOTEXISTS:
			if (fields)
				fuzz_fail("field selector with operator %d", r->op);
			break;
		default:
			fuzz_fail("requirement %zu has operator %d", i, r->op);
		}
		if (r->op == API_SEL_IN || r->op == API_SEL_NOTIN)
			want_max = 64;
		if (r->op == API_SEL_EXISTS || r->op == API_SEL_NOTEXISTS)
			want_min = want_max = 0;
		if (r->nvalues < want_min || r->nvalues > want_max)
			fuzz_fail("operator %d with %zu values", r->op, r->nvalues);
		if (r->nvalues > 0 && r->values == NULL)
			fuzz_fail("values missing");
		for (size_t j = 0; j < r->nvalues; j++) {
			if (r->values[j] == NULL)
				fuzz_fail("value %zu of requirement %zu is NULL", j, i);
			if (!fields && !api_is_label_value(r->values[j],
			    strlen(r->values[j])))
				fuzz_fail("invalid label value \"%s\" accepted",
				    r->values[j]);
		}
		if (!fields && !api_is_label_key(r->key, strlen(r->key)))
			fuzz_fail("invalid label key \"%s\" accepted", r->key);
	}
}

static int
keys_distinct(const api_selector *s)
{
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = i + 1; j < s->n; j++)
			if (strcmp(s->reqs[i].key, s->reqs[j].key) == 0)
				return 0;
	return 1;
}

static int
cmp_pair(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Builds a blob satisfying s into out; 0 when no such blob is sure to
 * exist (an integer bound at the edge of long long). */
static int
satisfying_blob(const api_selector *s, ki_buf *out)
{
	const char *keys[64];
	char *vals[64];
	size_t n = 0;
	int ok = 1;

	for (size_t i = 0; i < s->n && ok; i++) {
		const api_requirement *r = &s->reqs[i];
		char num[32];
		long long b;

		if (is_negative(r->op))
			continue;
		if (n == 64) {
			ok = 0;
			break;
		}
		switch (r->op) {
		case API_SEL_EQ:
		case API_SEL_IN:
			vals[n] = strdup(r->values[0]);
			break;
		case API_SEL_EXISTS:
			vals[n] = strdup("1");
			break;
		default: /* GT, LT */
			errno = 0;
			b = strtoll(r->values[0], NULL, 10);
			if (errno != 0 || (r->op == API_SEL_GT && b == LLONG_MAX) ||
			    (r->op == API_SEL_LT && b == LLONG_MIN)) {
				ok = 0;
				continue;
			}
			snprintf(num, sizeof(num), "%lld", r->op == API_SEL_GT ? b + 1 :
			    b - 1);
			vals[n] = strdup(num);
		}
		if (vals[n] == NULL)
			fuzz_fail("out of memory");
		keys[n++] = r->key;
	}
	if (ok) {
		/* Sort by key, carrying the values along. */
		const char *pairs[64][2];

		for (size_t i = 0; i < n; i++) {
			pairs[i][0] = keys[i];
			pairs[i][1] = vals[i];
		}
		qsort(pairs, n, sizeof(pairs[0]), cmp_pair);
		for (size_t i = 0; i < n; i++) {
			ki_buf_append(out, pairs[i][0], strlen(pairs[i][0]) + 1);
			ki_buf_append(out, pairs[i][1], strlen(pairs[i][1]) + 1);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(vals[i]);
	return ok && !out->oom;
}

static void
check_selector(const char *text, int fields)
{
	api_selector s;
	char err[256];
	int rc;

	memset(err, 0, sizeof(err));
	rc = fields ? api_field_selector_parse(text, &s, err, sizeof(err)) :
	    api_selector_parse(text, &s, err, sizeof(err));
	if (rc != KI_OK) {
		if (rc != KI_EINVAL && rc != KI_ENOMEM)
			fuzz_fail("selector parse returned %d", rc);
		if (err[0] == '\0')
			fuzz_fail("a refused selector without a message");
		if (s.n != 0 || s.reqs != NULL)
			fuzz_fail("a refused selector kept requirements");
		return;
	}
	check_shape(&s, fields);
	(void)api_selector_match(&s, fixed_blob, sizeof(fixed_blob) - 1);
	(void)api_selector_match(&s, NULL, 0);
	{
		int all_negative = 1;

		for (size_t i = 0; i < s.n; i++)
			all_negative &= is_negative(s.reqs[i].op);
		if (api_selector_match(&s, "", 0) != all_negative)
			fuzz_fail("the empty blob %s \"%s\"", all_negative ?
			    "fails the negative selector" : "matches", text);
	}
	if (keys_distinct(&s)) {
		ki_buf blob;

		ki_buf_init(&blob);
		if (satisfying_blob(&s, &blob) &&
		    !api_selector_match(&s, blob.data ? blob.data : "", blob.len))
			fuzz_fail("a blob built to satisfy \"%s\" does not match", text);
		ki_buf_free(&blob);
	}
	{
		const api_requirement *d = api_selector_driver(&s);

		if (d != NULL && (d->op != API_SEL_EQ || d < s.reqs ||
		    d >= s.reqs + s.n))
			fuzz_fail("the driver is not an equality requirement of it");
	}
	api_selector_free(&s);
	if (s.n != 0 || s.reqs != NULL)
		fuzz_fail("api_selector_free left requirements");
}

static void
check_query(const char *label_sel, const char *field_sel)
{
	api_query q;
	api_resp r;

	api_resp_init(&r);
	if (api_query_parse(&q, api_kind_by_id(API_RUN), label_sel, field_sel,
	    &r) == KI_OK) {
		store_obj o;

		memset(&o, 0, sizeof(o));
		o.kind = API_RUN;
		o.name = "liger-embedding-full";
		o.name_len = strlen(o.name);
		o.labels = fixed_blob;
		o.labels_len = sizeof(fixed_blob) - 1;
		(void)api_query_match(&q, &o);
		api_query_free(&q);
		if (r.code != 0)
			fuzz_fail("api_query_parse succeeded with code %d", r.code);
	} else {
		fuzz_check_resp(&r, "api_query_parse");
		if (r.code != 400 && r.code != 503)
			fuzz_fail("a refused query answered %d, not 400", r.code);
	}
	api_resp_free(&r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *nl;

	if (size > 65536)
		return 0;
	if ((text = malloc(size + 1)) == NULL)
		fuzz_fail("out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	check_selector(text, 0);
	check_selector(text, 1);
	/* As a query: the first line is the label selector, the rest the
	 * field selector (both the whole text when there is no newline). */
	nl = strchr(text, '\n');
	if (nl != NULL) {
		*nl = '\0';
		check_query(text, nl + 1);
	} else {
		check_query(text, text);
	}
	free(text);
	return 0;
}
