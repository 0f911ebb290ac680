/* api/query.c — a parsed list query: label and field selectors, matching
 * stored objects against them, and running them over a kind by the
 * cheapest access path (a name, index postings, or the kind's range). */
#include "api/service_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/labels.h"

void
api_query_free(api_query *q)
{
	if (q->labels != NULL) {
		api_selector_free(q->labels);
		free(q->labels);
	}
	if (q->fields != NULL) {
		api_selector_free(q->fields);
		free(q->fields);
	}
	free(q->frefs);
	memset(q, 0, sizeof(*q));
}

/* The fields a field selector may name besides metadata.name: a run's
 * references, each served by the store's reference index. Their order is
 * that of a run's refs. */
static const char *const ref_fields[API_NREFS] = { "spec.protocolDigest",
	"spec.workloadDigest", "spec.environmentDigest",
	"spec.implementationDigest" };

int
api_query_parse(api_query *q, const api_kind *k, const char *label_sel,
	const char *field_sel, api_resp *r)
{
	api_status st;
	char err[512];
	int rc;

	memset(q, 0, sizeof(*q));
	q->labels = calloc(1, sizeof(*q->labels));
	q->fields = calloc(1, sizeof(*q->fields));
	if (q->labels == NULL || q->fields == NULL) {
		api_query_free(q);
		api_fail_rc(r, KI_ENOMEM, "parsing the selectors");
		return KI_ENOMEM;
	}
	api_status_init(&st);
	rc = api_selector_parse(label_sel, q->labels, err, sizeof(err));
	if (rc != KI_OK) {
		api_status_fail(&st, 400, "BadRequest", "labelSelector: %s", err);
		goto fail;
	}
	rc = api_field_selector_parse(field_sel, q->fields, err, sizeof(err));
	if (rc != KI_OK) {
		api_status_fail(&st, 400, "BadRequest", "fieldSelector: %s", err);
		goto fail;
	}
	if (q->fields->n > 0 &&
	    (q->frefs = calloc(q->fields->n, sizeof(*q->frefs))) == NULL) {
		rc = KI_ENOMEM;
		api_status_from_rc(&st, rc, "parsing the selectors");
		goto fail;
	}
	for (size_t i = 0; i < q->fields->n; i++) {
		const api_requirement *req = &q->fields->reqs[i];
		api_field_ref *f = &q->frefs[i];

		f->ref = -1;
		if (strcmp(req->key, "metadata.name") == 0)
			continue;
		for (int j = 0; k != NULL && k->id == API_RUN && j < API_NREFS; j++)
			if (strcmp(req->key, ref_fields[j]) == 0)
				f->ref = j;
		if (f->ref < 0) {
			rc = KI_EINVAL;
			api_status_fail(&st, 400, "BadRequest", "field label not "
			    "supported: %s (supported: metadata.name%s; select on the "
			    "derived labels kernel, pass, provider, gpu, dtype and "
			    "metric with labelSelector)", req->key,
			    k != NULL && k->id == API_RUN ? ", spec.protocolDigest, "
			    "spec.workloadDigest, spec.environmentDigest and "
			    "spec.implementationDigest" : "");
			goto fail;
		}
		if (api_digest_parse(req->values[0], strlen(req->values[0]),
		    f->digest) != KI_OK) {
			rc = KI_EINVAL;
			api_status_fail(&st, 400, "BadRequest", "fieldSelector: %s: "
			    "\"%.200s\" is not a digest (sha256: and 64 lowercase hex "
			    "digits)", req->key, req->values[0]);
			goto fail;
		}
	}
	return KI_OK;
fail:
	api_resp_status(r, &st);
	api_status_free(&st);
	api_query_free(q);
	return rc == KI_ENOMEM ? KI_ENOMEM : KI_EINVAL;
}

int
api_query_match(const api_query *q, const store_obj *o)
{
	for (size_t i = 0; q->fields != NULL && i < q->fields->n; i++) {
		const api_requirement *r = &q->fields->reqs[i];
		int ref = q->frefs != NULL ? q->frefs[i].ref : -1, eq;

		if (ref >= 0)
			eq = o->nrefs == API_NREFS && memcmp(o->refs +
			    (size_t)ref * API_DIGEST_LEN, q->frefs[i].digest,
			    API_DIGEST_LEN) == 0;
		else
			eq = strlen(r->values[0]) == o->name_len &&
			    memcmp(r->values[0], o->name, o->name_len) == 0;
		if ((r->op == API_SEL_EQ) != eq)
			return 0;
	}
	return q->labels == NULL ||
	    api_selector_match(q->labels, o->labels, o->labels_len);
}

/* Runs the query over kind in id order after the id `after`, driven by
 * the cheapest access path: a name lookup for metadata.name=X, else the
 * intersection of the index postings of its equality and set
 * requirements (labels, and a run's references by digest), else the
 * kind's range. fn still checks every requirement. */
int
api_query_run(store_txn *txn, const api_kind *k, const api_query *q,
	uint64_t after, store_each_fn fn, void *arg, int *path)
{
	store_term *terms = NULL;
	store_alt *alts = NULL;
	size_t nterms = 0, nalts = 0, total = 0;
	int rc;

	*path = API_LIST_BY_NAME;
	for (size_t i = 0; i < q->fields->n; i++) {
		const api_requirement *r = &q->fields->reqs[i];
		store_obj o;

		if (r->op != API_SEL_EQ || q->frefs[i].ref >= 0)
			continue;
		rc = store_get_by_name(txn, k->id, r->values[0],
		    strlen(r->values[0]), &o);
		if (rc == KI_ENOTFOUND || (rc == KI_OK && o.seq <= after))
			return KI_OK;
		if (rc != KI_OK)
			return rc;
		rc = fn(arg, &o);
		return rc == 1 ? KI_OK : rc;
	}
	total = q->fields->n;
	for (size_t i = 0; i < q->labels->n; i++)
		total += q->labels->reqs[i].nvalues;
	if (total > 0) {
		terms = calloc(q->fields->n + q->labels->n, sizeof(*terms));
		alts = calloc(total, sizeof(*alts));
		if (terms == NULL || alts == NULL) {
			rc = KI_ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < q->fields->n; i++) {
		if (q->fields->reqs[i].op != API_SEL_EQ)
			continue;
		alts[nalts].digest = q->frefs[i].digest;
		terms[nterms].alts = &alts[nalts++];
		terms[nterms++].nalts = 1;
	}
	for (size_t i = 0; i < q->labels->n; i++) {
		const api_requirement *r = &q->labels->reqs[i];
		size_t first = nalts;

		if (r->op != API_SEL_EQ && r->op != API_SEL_IN)
			continue;
		for (size_t j = 0; j < r->nvalues; j++) {
			if (strlen(r->key) + strlen(r->values[j]) > STORE_MAX_INDEXED)
				break;   /* not indexed: this one filters only */
			alts[nalts].key = r->key;
			alts[nalts++].value = r->values[j];
		}
		if (nalts - first != r->nvalues) {
			nalts = first;
			continue;
		}
		terms[nterms].alts = &alts[first];
		terms[nterms++].nalts = r->nvalues;
	}
	*path = nterms > 0 ? API_LIST_BY_INDEX : API_LIST_BY_RANGE;
	rc = store_list_index(txn, k->id, terms, nterms, after, fn, arg);
out:
	free(terms);
	free(alts);
	return rc;
}
