/* api/runstatus.c — a stored run's status: its references resolved or
 * not, and its plausibility from the stored Workload and environment. */
#include "api/runstatus.h"

#include <math.h>
#include <string.h>

#include "api/jcs.h"

struct json_object *
api_run_workload(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, int *derived)
{
	struct json_object *wl = NULL, *out;

	if (nrefs == API_NREFS)
		wl = api_ref_spec(txn, refs + API_REF_WORKLOAD * API_DIGEST_LEN,
		    API_WORKLOAD);
	out = api_run_workload_from(spec, wl, derived);
	if (wl != NULL)
		json_object_put(wl);
	return out;
}

void
api_plausibility_eval(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, api_plausibility *out)
{
	api_run_refs rr;

	api_run_refs_load(txn, refs, nrefs, &rr);
	api_plausibility_eval_from(spec, &rr, out);
	api_run_refs_free(&rr);
}

void
api_plausibility_eval_from(struct json_object *spec, const api_run_refs *rr,
	api_plausibility *out)
{
	api_plausibility_eval_specs(spec, rr->spec[API_REF_WORKLOAD],
	    rr->spec[API_REF_ENVIRONMENT], out);
}

static void
num(ki_buf *b, double v)
{
	char s[32];

	if (!isfinite(v) || api_jcs_number(v, s) < 0)
		ki_buf_puts(b, "null");
	else
		ki_buf_puts(b, s);
}

void
api_plausibility_render(const api_plausibility *p, ki_buf *b)
{
	ki_buf_puts(b, ",\"plausibility\":{");
	if (p->known) {
		ki_buf_puts(b, "\"achievedFraction\":");
		num(b, p->fraction);
		ki_buf_puts(b, ",\"bytes\":");
		num(b, p->bytes);
		ki_buf_puts(b, p->derived_workload ? ",\"derivedWorkload\":true" :
		    ",\"derivedWorkload\":false");
		ki_buf_puts(b, p->memory ? ",\"floorBytes\":" : ",\"floorNs\":");
		num(b, p->floor);
		ki_buf_puts(b, ",\"flops\":");
		num(b, p->flops);
		ki_buf_puts(b, ",\"gpu\":");
		ki_buf_json_string(b, p->gpu, strlen(p->gpu));
		ki_buf_puts(b, ",\"model\":");
		ki_buf_json_string(b, p->model, strlen(p->model));
		ki_buf_puts(b, ",");
	}
	ki_buf_puts(b, !p->known ? "\"verdict\":\"Unknown\"}" :
	    p->implausible ? "\"verdict\":\"Implausible\"}" :
	    "\"verdict\":\"Plausible\"}");
}

int
api_compute_status(const api_kind *k, const uint8_t digest[API_DIGEST_LEN],
	const uint8_t *refs, size_t nrefs, const api_run_refs *rr,
	const struct api_plausibility *pl, double now, ki_buf *out)
{
	static const char *const parts[API_NREFS] = { "protocol", "workload",
		"environment", "implementation" };
	char ds[API_DIGEST_STRLEN + 1];
	int nresolved = 0;

	api_digest_format(digest, ds);
	if (k->id != API_RUN || nrefs != API_NREFS) {
		ki_buf_append(out, "{\"digest\":\"", 11);
		ki_buf_append(out, ds, API_DIGEST_STRLEN);
		ki_buf_append(out, "\"}", 2);
		return out->oom ? KI_ENOMEM : KI_OK;
	}
	if (rr == NULL || !rr->loaded)
		return KI_EINVAL;
	if (rr->rc != KI_OK)
		return rr->rc;
	for (int i = 0; i < API_NREFS; i++)
		nresolved += rr->resolved[i];
	ki_buf_puts(out, "{\"conditions\":[{\"lastTransitionTime\":\"");
	api_format_time(now, out);
	ki_buf_puts(out, "\",\"message\":");
	if (nresolved == API_NREFS) {
		ki_buf_puts(out, "\"every reference resolved and its content "
		    "matched its digest\",\"reason\":\"AllReferencesVerified\","
		    "\"status\":\"True\"");
	} else {
		/* The message holds nothing to escape. */
		ki_buf_puts(out, "\"no object with the referenced digest is stored "
		    "yet for: ");
		for (int i = 0, first = 1; i < API_NREFS; i++) {
			if (rr->resolved[i])
				continue;
			if (!first)
				ki_buf_append(out, ", ", 2);
			ki_buf_puts(out, parts[i]);
			first = 0;
		}
		ki_buf_puts(out, "\",\"reason\":\"UnresolvedReferences\","
		    "\"status\":\"False\"");
	}
	ki_buf_puts(out, ",\"type\":\"DigestsVerified\"}");
	if (pl != NULL) {
		ki_buf_puts(out, ",{\"lastTransitionTime\":\"");
		api_format_time(now, out);
		ki_buf_puts(out, "\",\"message\":");
		ki_buf_json_string(out, pl->message, strlen(pl->message));
		ki_buf_puts(out, ",\"reason\":\"");
		ki_buf_puts(out, pl->reason);
		ki_buf_puts(out, !pl->known ? "\",\"status\":\"Unknown\"," :
		    pl->implausible ? "\",\"status\":\"False\"," :
		    "\",\"status\":\"True\",");
		ki_buf_puts(out, "\"type\":\"Plausible\"}");
	}
	ki_buf_puts(out, "],\"digest\":\"");
	ki_buf_append(out, ds, API_DIGEST_STRLEN);
	ki_buf_putc(out, '"');
	if (pl != NULL)
		api_plausibility_render(pl, out);
	ki_buf_puts(out, ",\"references\":{");
	for (int i = 0; i < API_NREFS; i++) {
		static const int order[API_NREFS] = { 2, 3, 0, 1 };
		int j = order[i];
		char rs[API_DIGEST_STRLEN + 1];

		api_digest_format(refs + j * API_DIGEST_LEN, rs);
		if (i > 0)
			ki_buf_putc(out, ',');
		ki_buf_putc(out, '"');
		ki_buf_puts(out, parts[j]);
		ki_buf_puts(out, "\":{\"digest\":\"");
		ki_buf_append(out, rs, API_DIGEST_STRLEN);
		ki_buf_putc(out, '"');
		if (rr->resolved[j]) {
			ki_buf_puts(out, ",\"name\":");
			ki_buf_json_string(out, rr->name[j], strlen(rr->name[j]));
			ki_buf_puts(out, ",\"resolved\":true}");
		} else {
			ki_buf_puts(out, ",\"resolved\":false}");
		}
	}
	ki_buf_puts(out, "}}");
	return out->oom ? KI_ENOMEM : KI_OK;
}

/* The condition of type in the conditions array conds, or NULL. */
static struct json_object *
condition_of(struct json_object *conds, const char *type)
{
	for (size_t i = 0; i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = json_object_get_string(json_object_object_get(c,
		    "type"));

		if (t != NULL && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

int
api_conditions_keep(ki_buf *status, const char *prev, size_t prev_len)
{
	struct json_object *now = NULL, *old = NULL, *nc, *oc;
	int rc = KI_OK, changed = 0;

	if (prev == NULL || prev_len == 0 || status->len == 0)
		return KI_OK;
	now = api_json_parse_len(status->data, status->len);
	old = api_json_parse_len(prev, prev_len);
	if (now == NULL || old == NULL)
		goto out;   /* nothing to keep: the times stay as computed */
	if (!json_object_object_get_ex(now, "conditions", &nc) ||
	    !json_object_object_get_ex(old, "conditions", &oc) ||
	    !json_object_is_type(nc, json_type_array) ||
	    !json_object_is_type(oc, json_type_array))
		goto out;
	for (size_t i = 0; i < json_object_array_length(nc); i++) {
		struct json_object *c = json_object_array_get_idx(nc, i), *p, *t;
		const char *type = json_object_get_string(json_object_object_get(c,
		    "type"));
		const char *st = json_object_get_string(json_object_object_get(c,
		    "status"));
		const char *pst;

		if (type == NULL || st == NULL ||
		    (p = condition_of(oc, type)) == NULL)
			continue;
		pst = json_object_get_string(json_object_object_get(p, "status"));
		if (pst == NULL || strcmp(pst, st) != 0 ||
		    !json_object_object_get_ex(p, "lastTransitionTime", &t) ||
		    !json_object_is_type(t, json_type_string))
			continue;
		json_object_object_add(c, "lastTransitionTime", json_object_get(t));
		changed = 1;
	}
	if (changed) {
		ki_buf_reset(status);
		rc = api_jcs_serialize(now, status);
	}
out:
	if (now != NULL)
		json_object_put(now);
	if (old != NULL)
		json_object_put(old);
	return rc;
}
