/* api/compare.c — Comparison (two label selectors paired by series, with
 * ratios, intervals, regressions and improvements), the leaderboard per
 * GPU and the runs as CSV: answered from the stored runs, never stored. */
#include "api/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/labels.h"
#include "api/object.h"
#include "api/schema.h"
#include "api/series.h"
#include "lib/limits.h"

#define CSV_TYPE "text/csv; charset=utf-8"

/* ---- shared helpers ---- */

static void
put_num(ki_buf *b, double v)
{
	if (isfinite(v))
		ki_buf_printf(b, "%.10g", v);
	else
		ki_buf_puts(b, "null");
}

static void
put_str(ki_buf *b, const char *s)
{
	if (s == NULL)
		ki_buf_puts(b, "null");
	else
		ki_buf_json_string(b, s, strlen(s));
}

static void
csv_num(ki_buf *b, double v)
{
	if (isfinite(v))
		ki_buf_printf(b, "%.10g", v);
}

static int
by_series(const void *a, const void *b)
{
	const api_point *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c != 0 ? c : api_point_cmp(x, y);
}

/* "a,b" of two selectors, either possibly empty; caller frees. */
static char *
and_selectors(const char *a, const char *b)
{
	ki_buf s;

	ki_buf_init(&s);
	if (a != NULL && *a != '\0')
		ki_buf_puts(&s, a);
	if (b != NULL && *b != '\0') {
		if (s.len > 0)
			ki_buf_putc(&s, ',');
		ki_buf_puts(&s, b);
	}
	ki_buf_putc(&s, '\0');
	s.len--;
	return ki_buf_steal(&s, NULL);
}

/* Selects the runs of sel (and common), dropping implausible ones unless
 * asked; *dropped counts those. On a bad selector fills r (422 at field)
 * and returns KI_EINVAL. */
static int
select_points(store_txn *txn, const char *sel, const char *common,
	const char *vlabel, int implausible, const char *field,
	api_points *out, size_t *dropped, api_resp *r)
{
	char err[256];
	char *both = and_selectors(common, sel);
	size_t keep = 0;
	int rc;

	if (both == NULL) {
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
		return KI_ENOMEM;
	}
	rc = api_points_select(txn, both, vlabel, out, err, sizeof(err));
	free(both);
	if (rc == KI_EINVAL) {
		api_resp_fail(r, 422, "Invalid", field, "%s: %s", field, err);
		return rc;
	}
	if (rc == KI_ELIMIT) {
		api_resp_fail(r, 422, "Invalid", field, "%s: selects more than %d "
		    "runs, more than one answer reads: narrow it (a gpu, kernel or "
		    "provider)", field, KI_MAX_SERIES_RUNS);
		return rc;
	}
	if (rc != KI_OK) {
		api_resp_fail(r, 500, "InternalError", NULL, "reading the runs: %s",
		    ki_strerror(rc));
		return rc;
	}
	for (size_t i = 0; i < out->n; i++) {
		if (out->v[i].implausible && !implausible) {
			api_point_free(&out->v[i]);
			(*dropped)++;
			continue;
		}
		out->v[keep++] = out->v[i];
	}
	out->n = keep;
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), by_series);
	return KI_OK;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of n values (sorted in place). */
static double
median_of(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One side of a pair: the runs of a series in a selection. */
typedef struct side {
	const api_point *p;    /* the first of n, in series order */
	size_t n;
	double center, low, high;
} side;

/* A side's figure and interval: one run gives its median and p20..p80;
 * several give the median of their medians, and an interval wide enough
 * for both their typical p20..p80 and the spread of their medians. */
static int
side_stats(side *s)
{
	double *m = malloc(3 * s->n * sizeof(*m));

	if (m == NULL)
		return KI_ENOMEM;
	if (s->n == 1) {
		s->center = s->p->median;
		s->low = s->p->p20;
		s->high = s->p->p80;
	} else {
		double *lo = m + s->n, *hi = m + 2 * s->n;

		for (size_t i = 0; i < s->n; i++) {
			m[i] = s->p[i].median;
			lo[i] = s->p[i].p20;
			hi[i] = s->p[i].p80;
		}
		s->center = median_of(m, s->n);
		s->low = fmin(m[0], median_of(lo, s->n));
		s->high = fmax(m[s->n - 1], median_of(hi, s->n));
	}
	free(m);
	return KI_OK;
}

/* ---- Comparison ---- */

enum { V_REGRESSION, V_IMPROVEMENT, V_UNCHANGED };
static const char *const verdicts[] = { "Regression", "Improvement",
	"Unchanged" };

typedef struct pair {
	side base, cand;
	double ratio, lo, hi;
	int verdict, confident;
} pair;

static int
pair_order(const void *a, const void *b)
{
	const pair *x = a, *y = b;

	if (x->verdict != y->verdict)
		return x->verdict - y->verdict;
	if (x->verdict == V_REGRESSION && x->ratio != y->ratio)
		return x->ratio > y->ratio ? -1 : 1;
	if (x->verdict == V_IMPROVEMENT && x->ratio != y->ratio)
		return x->ratio < y->ratio ? -1 : 1;
	return strcmp(x->cand.p->key, y->cand.p->key);
}

typedef struct comparison {
	api_points base, cand;
	pair *pairs;
	size_t npairs, base_only, cand_only, dropped;
	size_t counts[3];
	double geomean;
} comparison;

static void
comparison_free(comparison *c)
{
	api_points_free(&c->base);
	api_points_free(&c->cand);
	free(c->pairs);
	memset(c, 0, sizeof(*c));
}

/* Length of the run of points of one series starting at v[i]. */
static size_t
series_len(const api_points *v, size_t i)
{
	size_t j = i + 1;

	while (j < v->n && strcmp(v->v[j].key, v->v[i].key) == 0)
		j++;
	return j - i;
}

/* Pairs the two selections (each in series order) by series. */
static int
pair_up(comparison *c, double threshold_pct)
{
	size_t i = 0, j = 0, cap = 0;
	double t = threshold_pct / 100, logsum = 0;

	while (i < c->base.n || j < c->cand.n) {
		size_t ni = i < c->base.n ? series_len(&c->base, i) : 0;
		size_t nj = j < c->cand.n ? series_len(&c->cand, j) : 0;
		int k = i >= c->base.n ? 1 : j >= c->cand.n ? -1 :
		    strcmp(c->base.v[i].key, c->cand.v[j].key);
		pair *p;

		if (k < 0) {
			c->base_only++;
			i += ni;
			continue;
		}
		if (k > 0) {
			c->cand_only++;
			j += nj;
			continue;
		}
		if (c->npairs == cap) {
			pair *v;

			cap = cap ? cap * 2 : 64;
			if ((v = realloc(c->pairs, cap * sizeof(*v))) == NULL)
				return KI_ENOMEM;
			c->pairs = v;
		}
		p = &c->pairs[c->npairs];
		memset(p, 0, sizeof(*p));
		p->base.p = &c->base.v[i];
		p->base.n = ni;
		p->cand.p = &c->cand.v[j];
		p->cand.n = nj;
		i += ni;
		j += nj;
		if (side_stats(&p->base) != KI_OK || side_stats(&p->cand) != KI_OK)
			return KI_ENOMEM;
		if (p->base.center <= 0 || p->base.low <= 0)
			continue;   /* no ratio to a zero baseline */
		c->npairs++;
		p->ratio = p->cand.center / p->base.center;
		p->lo = p->cand.low / p->base.high;
		p->hi = p->cand.high / p->base.low;
		{
			/* Worse is slower or bigger for latency and memory, smaller
			 * for bandwidth and throughput. */
			double worse = p->cand.p->lower_better ? p->ratio : 1 / p->ratio;

			if (worse > 1 + t) {
				p->verdict = V_REGRESSION;
				p->confident = p->cand.p->lower_better ? p->lo > 1 :
				    p->hi < 1;
			} else if (worse < 1 - t) {
				p->verdict = V_IMPROVEMENT;
				p->confident = p->cand.p->lower_better ? p->hi < 1 :
				    p->lo > 1;
			} else {
				p->verdict = V_UNCHANGED;
			}
		}
		c->counts[p->verdict]++;
		if (p->ratio > 0)
			logsum += log(p->ratio);
	}
	c->geomean = c->npairs ? exp(logsum / (double)c->npairs) : NAN;
	if (c->npairs > 1)
		qsort(c->pairs, c->npairs, sizeof(*c->pairs), pair_order);
	return KI_OK;
}

/* The distinct versions of a side, space-separated, into b. */
static void
side_versions(ki_buf *b, const side *s)
{
	for (size_t i = 0; i < s->n; i++) {
		int seen = 0;

		for (size_t k = 0; k < i; k++)
			seen |= strcmp(s->p[k].version, s->p[i].version) == 0;
		if (seen)
			continue;
		if (b->len > 0)
			ki_buf_putc(b, ' ');
		ki_buf_puts(b, s->p[i].version);
	}
}

static void
side_json(ki_buf *b, const side *s)
{
	ki_buf v;

	ki_buf_init(&v);
	side_versions(&v, s);
	ki_buf_puts(b, "{\"version\":");
	put_str(b, v.len ? v.data : "");
	ki_buf_puts(b, ",\"runs\":[");
	for (size_t i = 0; i < s->n; i++) {
		if (i)
			ki_buf_putc(b, ',');
		put_str(b, s->p[i].name);
	}
	ki_buf_puts(b, "],\"median\":");
	put_num(b, s->center);
	ki_buf_puts(b, ",\"low\":");
	put_num(b, s->low);
	ki_buf_puts(b, ",\"high\":");
	put_num(b, s->high);
	ki_buf_putc(b, '}');
	ki_buf_free(&v);
}

static void
series_json(ki_buf *b, const api_point *p)
{
	ki_buf_puts(b, "{\"kernel\":");
	put_str(b, p->kernel);
	ki_buf_puts(b, ",\"pass\":");
	put_str(b, p->pass);
	ki_buf_puts(b, ",\"dtype\":");
	put_str(b, p->dtype);
	ki_buf_puts(b, ",\"provider\":");
	put_str(b, p->provider);
	ki_buf_puts(b, ",\"gpu\":");
	put_str(b, p->gpu);
	ki_buf_puts(b, ",\"metric\":");
	put_str(b, p->metric);
	ki_buf_puts(b, ",\"unit\":");
	put_str(b, p->unit);
	ki_buf_puts(b, ",\"workload\":");
	put_str(b, p->workload);
	ki_buf_puts(b, ",\"workloadDigest\":");
	put_str(b, p->workload_digest);
	ki_buf_puts(b, ",\"protocolDigest\":");
	put_str(b, p->protocol_digest);
	if (p->x_name != NULL) {
		ki_buf_puts(b, ",\"xName\":");
		put_str(b, p->x_name);
		ki_buf_puts(b, ",\"xValue\":");
		put_str(b, p->x_value);
	}
	ki_buf_putc(b, '}');
}

static void
comparison_status(ki_buf *b, const comparison *c, double threshold_pct)
{
	ki_buf_printf(b, "{\"summary\":{\"pairs\":%zu,\"regressions\":%zu,"
	    "\"improvements\":%zu,\"unchanged\":%zu,\"baselineOnly\":%zu,"
	    "\"candidateOnly\":%zu,\"excludedImplausible\":%zu,"
	    "\"thresholdPercent\":", c->npairs, c->counts[V_REGRESSION],
	    c->counts[V_IMPROVEMENT], c->counts[V_UNCHANGED], c->base_only,
	    c->cand_only, c->dropped);
	put_num(b, threshold_pct);
	ki_buf_puts(b, ",\"geomeanRatio\":");
	put_num(b, c->geomean);
	ki_buf_printf(b, ",\"regressed\":%s},\"conditions\":[{\"type\":"
	    "\"Regressed\",\"status\":\"%s\",\"reason\":\"%s\",\"message\":",
	    c->counts[V_REGRESSION] ? "true" : "false",
	    c->counts[V_REGRESSION] ? "True" : "False",
	    c->counts[V_REGRESSION] ? "ThresholdExceeded" :
	    c->npairs ? "WithinThreshold" : "NoPairs");
	{
		char msg[256];

		snprintf(msg, sizeof(msg), "%zu of %zu paired series changed for "
		    "the worse by more than %g%%, %zu for the better",
		    c->counts[V_REGRESSION], c->npairs, threshold_pct,
		    c->counts[V_IMPROVEMENT]);
		put_str(b, msg);
	}
	ki_buf_puts(b, "}],\"pairs\":[");
	for (size_t i = 0; i < c->npairs; i++) {
		const pair *p = &c->pairs[i];

		if (i)
			ki_buf_putc(b, ',');
		ki_buf_puts(b, "{\"series\":");
		series_json(b, p->cand.p);
		ki_buf_puts(b, ",\"baseline\":");
		side_json(b, &p->base);
		ki_buf_puts(b, ",\"candidate\":");
		side_json(b, &p->cand);
		ki_buf_puts(b, ",\"ratio\":");
		put_num(b, p->ratio);
		ki_buf_puts(b, ",\"interval\":{\"low\":");
		put_num(b, p->lo);
		ki_buf_puts(b, ",\"high\":");
		put_num(b, p->hi);
		ki_buf_puts(b, "},\"changePercent\":");
		put_num(b, (p->ratio - 1) * 100);
		ki_buf_printf(b, ",\"verdict\":\"%s\",\"confident\":%s}",
		    verdicts[p->verdict], p->confident ? "true" : "false");
	}
	ki_buf_puts(b, "]}");
}

static void
comparison_csv(ki_buf *b, const comparison *c)
{
	ki_buf_puts(b, "verdict,kernel,pass,dtype,provider,gpu,metric,unit,"
	    "workload,x_name,x_value,baseline_version,baseline_median,"
	    "baseline_low,baseline_high,baseline_runs,candidate_version,"
	    "candidate_median,candidate_low,candidate_high,candidate_runs,ratio,"
	    "ratio_low,ratio_high,change_percent,confident\r\n");
	for (size_t i = 0; i < c->npairs; i++) {
		const pair *p = &c->pairs[i];
		const api_point *s = p->cand.p;
		const side *sides[2] = { &p->base, &p->cand };

		ki_buf_printf(b, "%s,", verdicts[p->verdict]);
		const char *cols[] = { s->kernel, s->pass, s->dtype, s->provider,
			s->gpu, s->metric, s->unit, s->workload, s->x_name, s->x_value };
		for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
			api_csv_field(b, cols[k]);
			ki_buf_putc(b, ',');
		}
		for (int k = 0; k < 2; k++) {
			ki_buf v, runs;

			ki_buf_init(&v);
			ki_buf_init(&runs);
			side_versions(&v, sides[k]);
			for (size_t m = 0; m < sides[k]->n; m++) {
				if (m)
					ki_buf_putc(&runs, ' ');
				ki_buf_puts(&runs, sides[k]->p[m].name);
			}
			api_csv_field(b, v.len ? v.data : "");
			ki_buf_putc(b, ',');
			csv_num(b, sides[k]->center);
			ki_buf_putc(b, ',');
			csv_num(b, sides[k]->low);
			ki_buf_putc(b, ',');
			csv_num(b, sides[k]->high);
			ki_buf_putc(b, ',');
			api_csv_field(b, runs.len ? runs.data : "");
			ki_buf_putc(b, ',');
			ki_buf_free(&v);
			ki_buf_free(&runs);
		}
		csv_num(b, p->ratio);
		ki_buf_putc(b, ',');
		csv_num(b, p->lo);
		ki_buf_putc(b, ',');
		csv_num(b, p->hi);
		ki_buf_putc(b, ',');
		csv_num(b, (p->ratio - 1) * 100);
		ki_buf_printf(b, ",%s\r\n", p->confident ? "true" : "false");
	}
}

/* Computes the comparison of s into c (freed by the caller). Fills r and
 * returns non-zero on failure; fields name where each selector came
 * from. */
static int
compare_run(api_ctx *ctx, const api_compare_spec *s, const char *const
	fields[3], comparison *c, uint64_t *rv, api_resp *r)
{
	store_txn *txn = NULL;
	char err[256];
	api_selector probe;
	int rc;

	/* The common selector is checked on its own, so that its error names
	 * its own field. */
	memset(&probe, 0, sizeof(probe));
	if (api_selector_parse(s->common, &probe, err, sizeof(err)) != KI_OK) {
		api_resp_fail(r, 422, "Invalid", fields[2], "%s: %s", fields[2],
		    err);
		return KI_EINVAL;
	}
	api_selector_free(&probe);
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "opening a read "
		    "transaction: %s", ki_strerror(rc));
		return rc;
	}
	*rv = store_rv(txn);
	rc = select_points(txn, s->baseline, s->common, s->version_label,
	    s->include_implausible, fields[0], &c->base, &c->dropped, r);
	if (rc == KI_OK)
		rc = select_points(txn, s->candidate, s->common, s->version_label,
		    s->include_implausible, fields[1], &c->cand, &c->dropped, r);
	store_abort(txn);
	if (rc != KI_OK)
		return rc;
	if ((rc = pair_up(c, s->threshold_pct)) != KI_OK)
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
	return rc;
}

/* Answers the comparison of s: meta and spec (JSON texts, borrowed) are
 * echoed before the status. */
static void
compare_answer(api_ctx *ctx, const api_compare_spec *s, const char *const
	fields[3], const char *meta, const char *spec, int csv, int code,
	api_resp *r)
{
	comparison c;
	uint64_t rv = 0;

	memset(&c, 0, sizeof(c));
	if (compare_run(ctx, s, fields, &c, &rv, r) != KI_OK)
		goto out;
	if (csv) {
		comparison_csv(&r->body, &c);
		r->content_type = CSV_TYPE;
	} else {
		ki_buf_puts(&r->body, "{\"apiVersion\":\"" API_GROUP_VERSION
		    "\",\"kind\":\"Comparison\",\"metadata\":");
		ki_buf_puts(&r->body, meta);
		ki_buf_puts(&r->body, ",\"spec\":");
		ki_buf_puts(&r->body, spec);
		ki_buf_puts(&r->body, ",\"status\":");
		comparison_status(&r->body, &c, s->threshold_pct);
		ki_buf_putc(&r->body, '}');
	}
	if (r->body.oom) {
		api_resp_free(r);
		api_resp_init(r);
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
	} else {
		r->code = code;
	}
out:
	comparison_free(&c);
}

/* The members a Comparison's spec may hold. */
static int
known_member(const char *const *names, const char *k)
{
	for (; *names != NULL; names++)
		if (strcmp(*names, k) == 0)
			return 1;
	return 0;
}

static const char *
side_selector(struct json_object *spec, const char *which, api_status *st)
{
	static const char *const side_fields[] = { "labelSelector", NULL };
	struct json_object *o = json_object_object_get(spec, which), *ls;
	char f[64];

	snprintf(f, sizeof(f), "spec.%s", which);
	if (o == NULL) {
		api_status_cause(st, "FieldValueRequired", f, "Required value: "
		    "the runs to compare, as {\"labelSelector\": \"…\"}");
		return NULL;
	}
	if (!json_object_is_type(o, json_type_object)) {
		api_status_cause(st, "FieldValueInvalid", f, "Invalid value: must "
		    "be an object with labelSelector");
		return NULL;
	}
	json_object_object_foreach(o, key, val) {
		char uf[128];

		(void)val;
		if (known_member(side_fields, key))
			continue;
		snprintf(uf, sizeof(uf), "%s.%.60s", f, key);
		api_status_cause(st, "FieldValueNotSupported", uf, "unknown field");
	}
	ls = json_object_object_get(o, "labelSelector");
	snprintf(f, sizeof(f), "spec.%s.labelSelector", which);
	if (ls == NULL || !json_object_is_type(ls, json_type_string)) {
		api_status_cause(st, ls == NULL ? "FieldValueRequired" :
		    "FieldValueInvalid", f, ls == NULL ? "Required value" :
		    "Invalid value: must be a string");
		return NULL;
	}
	{
		api_selector sel;
		char err[256];

		memset(&sel, 0, sizeof(sel));
		if (api_selector_parse(json_object_get_string(ls), &sel, err,
		    sizeof(err)) != KI_OK) {
			api_status_cause(st, "FieldValueInvalid", f, "Invalid value: %s",
			    err);
			return NULL;
		}
		api_selector_free(&sel);
	}
	return json_object_get_string(ls);
}

void
api_compare_post(api_ctx *ctx, const char *body, size_t len, int csv,
	api_resp *r)
{
	static const char *const spec_fields[] = { "baseline", "candidate",
		"labelSelector", "thresholdPercent", "versionLabel",
		"includeImplausible", NULL };
	static const char *const fields[3] = { "spec.baseline.labelSelector",
		"spec.candidate.labelSelector", "spec.labelSelector" };
	struct json_object *o = NULL, *spec, *meta, *v;
	api_compare_spec s;
	api_status st;
	const char *av, *kind;

	memset(&s, 0, sizeof(s));
	s.threshold_pct = API_COMPARE_DEFAULT_THRESHOLD;
	api_status_init(&st);
	if (api_json_parse(body, len, ctx->lim->max_depth, &o, &st) != KI_OK) {
		api_resp_status(r, &st);
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		api_status_fail(&st, 400, "BadRequest", "the body must be a "
		    "Comparison object");
		api_resp_status(r, &st);
		goto out;
	}
	av = api_json_str_at(o, "apiVersion", NULL);
	kind = api_json_str_at(o, "kind", NULL);
	if (av == NULL || strcmp(av, API_GROUP_VERSION) != 0 || kind == NULL ||
	    strcmp(kind, "Comparison") != 0) {
		api_status_fail(&st, 400, "BadRequest", "the body must be a "
		    "Comparison of " API_GROUP_VERSION " (apiVersion \"%.64s\", "
		    "kind \"%.64s\")", av ? av : "", kind ? kind : "");
		api_resp_status(r, &st);
		goto out;
	}
	json_object_object_foreach(o, top, tv) {
		(void)tv;
		if (strcmp(top, "apiVersion") != 0 && strcmp(top, "kind") != 0 &&
		    strcmp(top, "metadata") != 0 && strcmp(top, "spec") != 0 &&
		    strcmp(top, "status") != 0)
			api_status_cause(&st, "FieldValueNotSupported", top,
			    "unknown field");
	}
	{
		/* ObjectMeta's members (and title): the answer echoes
		 * metadata, so another is refused as a spec's is, not
		 * handed back as if it were read. */
		static const char *const meta_fields[] = { "name", "generateName",
			"namespace", "selfLink", "uid", "resourceVersion",
			"generation", "creationTimestamp", "deletionTimestamp",
			"deletionGracePeriodSeconds", "labels", "annotations",
			"ownerReferences", "finalizers", "managedFields", "title",
			NULL };

		meta = json_object_object_get(o, "metadata");

		if (meta != NULL && !json_object_is_type(meta, json_type_object))
			api_status_cause(&st, "FieldValueInvalid", "metadata",
			    "Invalid value: must be an object");
		else if (meta != NULL) {
			json_object_object_foreach(meta, mk, mv) {
				char f[96];

				(void)mv;
				if (known_member(meta_fields, mk))
					continue;
				snprintf(f, sizeof(f), "metadata.%.80s", mk);
				api_status_cause(&st, "FieldValueNotSupported", f,
				    "Unsupported value: unknown field");
			}
		}
	}
	spec = json_object_object_get(o, "spec");
	if (spec == NULL || !json_object_is_type(spec, json_type_object)) {
		api_status_cause(&st, spec == NULL ? "FieldValueRequired" :
		    "FieldValueInvalid", "spec", "the baseline and candidate "
		    "selectors are required");
		goto invalid;
	}
	json_object_object_foreach(spec, key, val) {
		char f[96];

		(void)val;
		if (known_member(spec_fields, key))
			continue;
		snprintf(f, sizeof(f), "spec.%.80s", key);
		api_status_cause(&st, "FieldValueNotSupported", f, "Unsupported "
		    "value: unknown field (known: baseline, candidate, "
		    "labelSelector, thresholdPercent, versionLabel, "
		    "includeImplausible)");
	}
	s.baseline = side_selector(spec, "baseline", &st);
	s.candidate = side_selector(spec, "candidate", &st);
	if ((v = json_object_object_get(spec, "labelSelector")) != NULL) {
		if (!json_object_is_type(v, json_type_string))
			api_status_cause(&st, "FieldValueInvalid", fields[2],
			    "Invalid value: must be a string");
		s.common = json_object_get_string(v);
	}
	if ((v = json_object_object_get(spec, "versionLabel")) != NULL) {
		s.version_label = json_object_get_string(v);
		if (!json_object_is_type(v, json_type_string) ||
		    !api_is_label_key(s.version_label, strlen(s.version_label)))
			api_status_cause(&st, "FieldValueInvalid", "spec.versionLabel",
			    "Invalid value: must be a label key");
	}
	if ((v = json_object_object_get(spec, "thresholdPercent")) != NULL &&
	    (!api_json_number(v, &s.threshold_pct) || s.threshold_pct < 0 ||
	    s.threshold_pct >= 1000))
		api_status_cause(&st, "FieldValueInvalid", "spec.thresholdPercent",
		    "Invalid value: a number of percent from 0 to 1000");
	if ((v = json_object_object_get(spec, "includeImplausible")) != NULL) {
		if (!json_object_is_type(v, json_type_boolean))
			api_status_cause(&st, "FieldValueInvalid",
			    "spec.includeImplausible", "Invalid value: must be a "
			    "boolean");
		s.include_implausible = json_object_get_boolean(v);
	}
invalid:
	if (st.ncauses > 0) {
		api_status_fail(&st, 422, "Invalid", "Comparison is invalid: %s",
		    st.causes[0].message);
		api_resp_status(r, &st);
		goto out;
	}
	{
		const char *spec_text = json_object_to_json_string_ext(spec,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		char *spec_copy = strdup(spec_text);
		const char *meta_text;

		meta = json_object_object_get(o, "metadata");
		if (meta == NULL || !json_object_is_type(meta, json_type_object))
			meta_text = "{}";
		else
			meta_text = json_object_to_json_string_ext(meta,
			    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		if (spec_copy == NULL) {
			api_resp_fail(r, 503, "ServiceUnavailable", NULL,
			    "out of memory");
			goto out;
		}
		compare_answer(ctx, &s, fields, meta_text, spec_copy, csv, 201, r);
		free(spec_copy);
	}
out:
	if (o != NULL)
		json_object_put(o);
	api_status_free(&st);
}

void
api_compare_get(api_ctx *ctx, const api_compare_spec *s, int csv,
	api_resp *r)
{
	static const char *const fields[3] = { "baseline", "candidate",
		"labelSelector" };
	ki_buf spec;

	ki_buf_init(&spec);
	if (s->baseline == NULL || s->candidate == NULL) {
		api_resp_fail(r, 400, "BadRequest", s->baseline == NULL ?
		    "baseline" : "candidate", "a comparison needs the baseline and "
		    "candidate label selectors (?baseline=…&candidate=…), or POST "
		    "a Comparison");
		return;
	}
	ki_buf_puts(&spec, "{\"baseline\":{\"labelSelector\":");
	put_str(&spec, s->baseline);
	ki_buf_puts(&spec, "},\"candidate\":{\"labelSelector\":");
	put_str(&spec, s->candidate);
	ki_buf_putc(&spec, '}');
	if (s->common != NULL) {
		ki_buf_puts(&spec, ",\"labelSelector\":");
		put_str(&spec, s->common);
	}
	ki_buf_puts(&spec, ",\"thresholdPercent\":");
	put_num(&spec, s->threshold_pct);
	if (s->version_label != NULL) {
		ki_buf_puts(&spec, ",\"versionLabel\":");
		put_str(&spec, s->version_label);
	}
	ki_buf_printf(&spec, ",\"includeImplausible\":%s}",
	    s->include_implausible ? "true" : "false");
	if (spec.oom)
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
	else
		compare_answer(ctx, s, fields, "{}", spec.data, csv, 200, r);
	ki_buf_free(&spec);
}

/* ---- leaderboard ---- */

static int
by_board(const void *a, const void *b)
{
	const api_point *x = a, *y = b;
	int c;

	if ((c = strcmp(x->gpu, y->gpu)) != 0 ||
	    (c = strcmp(x->kernel, y->kernel)) != 0 ||
	    (c = strcmp(x->pass, y->pass)) != 0 ||
	    (c = strcmp(x->dtype, y->dtype)) != 0 ||
	    (c = strcmp(x->metric, y->metric)) != 0 ||
	    (c = strcmp(x->protocol_digest, y->protocol_digest)) != 0)
		return c;
	if ((c = api_version_cmp(x->x_value ? x->x_value : "",
	    y->x_value ? y->x_value : "")) != 0)
		return c;
	if ((c = strcmp(x->workload_digest, y->workload_digest)) != 0)
		return c;
	if ((c = strcmp(x->provider, y->provider)) != 0)
		return c;
	return -api_point_cmp(x, y);   /* the newest of a provider first */
}

static int
same_board(const api_point *x, const api_point *y)
{
	return strcmp(x->gpu, y->gpu) == 0 &&
	    strcmp(x->workload_digest, y->workload_digest) == 0 &&
	    strcmp(x->metric, y->metric) == 0 &&
	    strcmp(x->protocol_digest, y->protocol_digest) == 0;
}

static int
by_figure(const void *a, const void *b)
{
	const api_point *x = *(const api_point *const *)a;
	const api_point *y = *(const api_point *const *)b;
	double d = x->lower_better ? x->median - y->median :
	    y->median - x->median;

	return d < 0 ? -1 : d > 0 ? 1 : strcmp(x->provider, y->provider);
}

static void
entry_json(ki_buf *b, const api_point *p)
{
	ki_buf_puts(b, "{\"provider\":");
	put_str(b, p->provider);
	ki_buf_puts(b, ",\"run\":");
	put_str(b, p->name);
	ki_buf_puts(b, ",\"version\":");
	put_str(b, p->version);
	ki_buf_puts(b, ",\"median\":");
	put_num(b, p->median);
	ki_buf_puts(b, ",\"p20\":");
	put_num(b, p->p20);
	ki_buf_puts(b, ",\"p80\":");
	put_num(b, p->p80);
	ki_buf_puts(b, ",\"fractionOfFloor\":");
	put_num(b, p->fraction >= 0 ? p->fraction : NAN);
	ki_buf_printf(b, ",\"implausible\":%s}", p->implausible ? "true" :
	    "false");
}

/* How much worse than the winner w the entry e is, in percent. */
static double
behind(const api_point *w, const api_point *e)
{
	if (w->median <= 0 || e->median <= 0)
		return NAN;
	return (w->lower_better ? e->median / w->median :
	    w->median / e->median) * 100 - 100;
}

void
api_leaderboard(api_ctx *ctx, const char *gpu, const char *sel,
	const char *version_label, int include_implausible, int csv,
	api_resp *r)
{
	api_points pts;
	const api_point **rank = NULL;
	store_txn *txn = NULL;
	size_t dropped = 0, items = 0;
	char gsel[128];
	uint64_t rv;
	int rc;

	memset(&pts, 0, sizeof(pts));
	gsel[0] = '\0';
	if (gpu != NULL && *gpu != '\0') {
		if (!api_is_label_value(gpu, strlen(gpu))) {
			api_resp_fail(r, 400, "BadRequest", "gpu", "gpu: \"%.64s\" is "
			    "not a label value (a GPU slug such as a100-sxm4-80gb)",
			    gpu);
			return;
		}
		snprintf(gsel, sizeof(gsel), "gpu=%s", gpu);
	}
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "opening a read "
		    "transaction: %s", ki_strerror(rc));
		return;
	}
	rv = store_rv(txn);
	rc = select_points(txn, sel, gsel, version_label, include_implausible,
	    "labelSelector", &pts, &dropped, r);
	store_abort(txn);
	if (rc != KI_OK)
		goto out;
	if (r->code == 422)
		r->code = 400;
	if (pts.n > 1)
		qsort(pts.v, pts.n, sizeof(*pts.v), by_board);
	if (pts.n > 0 && (rank = calloc(pts.n, sizeof(*rank))) == NULL) {
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
		goto out;
	}
	if (csv) {
		r->content_type = CSV_TYPE;
		ki_buf_puts(&r->body, "gpu,kernel,pass,dtype,metric,unit,workload,"
		    "x_name,x_value,rank,provider,version,median,p20,p80,"
		    "fraction_of_floor,behind_winner_percent,implausible,run\r\n");
	} else {
		ki_buf_puts(&r->body, "{\"apiVersion\":\"" API_GROUP_VERSION
		    "\",\"kind\":\"Leaderboard\",\"metadata\":{\"resourceVersion\":");
		ki_buf_printf(&r->body, "\"%llu\"},\"gpu\":", (unsigned long long)rv);
		put_str(&r->body, gpu != NULL && *gpu ? gpu : NULL);
		ki_buf_printf(&r->body, ",\"excludedImplausible\":%zu,\"items\":[",
		    dropped);
	}
	for (size_t i = 0; i < pts.n;) {
		size_t j = i, n = 0;
		const api_point *w;

		/* The group's providers, each by its newest run. */
		for (; j < pts.n && same_board(&pts.v[i], &pts.v[j]); j++)
			if (n == 0 || strcmp(rank[n - 1]->provider,
			    pts.v[j].provider) != 0)
				rank[n++] = &pts.v[j];
		qsort(rank, n, sizeof(*rank), by_figure);
		w = rank[0];
		if (csv) {
			for (size_t k = 0; k < n; k++) {
				const api_point *e = rank[k];
				const char *cols[] = { e->gpu, e->kernel, e->pass, e->dtype,
					e->metric, e->unit, e->workload, e->x_name, e->x_value };

				for (size_t m = 0; m < sizeof(cols) / sizeof(cols[0]); m++) {
					api_csv_field(&r->body, cols[m]);
					ki_buf_putc(&r->body, ',');
				}
				ki_buf_printf(&r->body, "%zu,", k + 1);
				api_csv_field(&r->body, e->provider);
				ki_buf_putc(&r->body, ',');
				api_csv_field(&r->body, e->version);
				ki_buf_putc(&r->body, ',');
				csv_num(&r->body, e->median);
				ki_buf_putc(&r->body, ',');
				csv_num(&r->body, e->p20);
				ki_buf_putc(&r->body, ',');
				csv_num(&r->body, e->p80);
				ki_buf_putc(&r->body, ',');
				csv_num(&r->body, e->fraction >= 0 ? e->fraction : NAN);
				ki_buf_putc(&r->body, ',');
				csv_num(&r->body, behind(w, e));
				ki_buf_printf(&r->body, ",%s,", e->implausible ? "true" :
				    "false");
				api_csv_field(&r->body, e->name);
				ki_buf_puts(&r->body, "\r\n");
			}
		} else {
			if (items++)
				ki_buf_putc(&r->body, ',');
			ki_buf_puts(&r->body, "{\"series\":");
			series_json(&r->body, w);
			ki_buf_puts(&r->body, ",\"winner\":");
			entry_json(&r->body, w);
			ki_buf_puts(&r->body, ",\"runnerUp\":");
			if (n > 1)
				put_str(&r->body, rank[1]->provider);
			else
				ki_buf_puts(&r->body, "null");
			ki_buf_puts(&r->body, ",\"marginPercent\":");
			put_num(&r->body, n > 1 ? behind(w, rank[1]) : NAN);
			ki_buf_puts(&r->body, ",\"entries\":[");
			for (size_t k = 0; k < n; k++) {
				if (k)
					ki_buf_putc(&r->body, ',');
				entry_json(&r->body, rank[k]);
			}
			ki_buf_puts(&r->body, "]}");
		}
		i = j;
	}
	if (!csv)
		ki_buf_puts(&r->body, "]}");
	if (r->body.oom) {
		api_resp_free(r);
		api_resp_init(r);
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
	} else {
		r->code = 200;
	}
out:
	free(rank);
	api_points_free(&pts);
}

/* ---- series ---- */

void
api_series(api_ctx *ctx, const char *sel, const char *version_label,
	int include_implausible, api_resp *r)
{
	api_points pts;
	store_txn *txn = NULL;
	size_t dropped = 0, items = 0;
	uint64_t rv;
	int rc;

	memset(&pts, 0, sizeof(pts));
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "opening a read "
		    "transaction: %s", ki_strerror(rc));
		return;
	}
	rv = store_rv(txn);
	rc = select_points(txn, sel, NULL, version_label, include_implausible,
	    "labelSelector", &pts, &dropped, r);
	store_abort(txn);
	if (rc != KI_OK) {
		if (r->code == 422)
			r->code = 400;
		goto out;
	}
	ki_buf_printf(&r->body, "{\"apiVersion\":\"" API_GROUP_VERSION "\","
	    "\"kind\":\"SeriesList\",\"metadata\":{\"resourceVersion\":"
	    "\"%llu\"},\"excludedImplausible\":%zu,\"items\":[",
	    (unsigned long long)rv, dropped);
	/* select_points leaves them by series, each in version order. */
	for (size_t i = 0; i < pts.n; items++) {
		size_t n = series_len(&pts, i);

		if (items)
			ki_buf_putc(&r->body, ',');
		ki_buf_puts(&r->body, "{\"series\":");
		series_json(&r->body, &pts.v[i]);
		ki_buf_puts(&r->body, ",\"points\":[");
		for (size_t k = 0; k < n; k++) {
			const api_point *p = &pts.v[i + k];

			if (k)
				ki_buf_putc(&r->body, ',');
			ki_buf_puts(&r->body, "{\"run\":");
			put_str(&r->body, p->name);
			ki_buf_puts(&r->body, ",\"version\":");
			put_str(&r->body, p->version);
			ki_buf_puts(&r->body, ",\"observedAt\":");
			put_str(&r->body, p->observed);
			ki_buf_puts(&r->body, ",\"median\":");
			put_num(&r->body, p->median);
			ki_buf_puts(&r->body, ",\"p20\":");
			put_num(&r->body, p->p20);
			ki_buf_puts(&r->body, ",\"p80\":");
			put_num(&r->body, p->p80);
			ki_buf_puts(&r->body, ",\"fractionOfFloor\":");
			put_num(&r->body, p->fraction >= 0 ? p->fraction : NAN);
			ki_buf_printf(&r->body, ",\"implausible\":%s}",
			    p->implausible ? "true" : "false");
		}
		ki_buf_puts(&r->body, "]}");
		i += n;
	}
	ki_buf_puts(&r->body, "]}");
	if (r->body.oom) {
		api_resp_free(r);
		api_resp_init(r);
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
	} else {
		r->code = 200;
	}
out:
	api_points_free(&pts);
}

/* ---- runs as CSV ---- */

void
api_runs_csv(api_ctx *ctx, const char *sel, const char *version_label,
	int include_implausible, api_resp *r)
{
	api_points pts;
	store_txn *txn = NULL;
	size_t dropped = 0;
	int rc;

	memset(&pts, 0, sizeof(pts));
	if ((rc = store_begin(ctx->st, 0, &txn)) != KI_OK) {
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "opening a read "
		    "transaction: %s", ki_strerror(rc));
		return;
	}
	rc = select_points(txn, sel, NULL, version_label, include_implausible,
	    "labelSelector", &pts, &dropped, r);
	store_abort(txn);
	if (rc != KI_OK) {
		if (r->code == 422)
			r->code = 400;
		goto out;
	}
	ki_buf_puts(&r->body, "name,kernel,pass,dtype,provider,gpu,metric,unit,"
	    "version,workload,x_name,x_value,median,p20,p80,fraction_of_floor,"
	    "implausible,observed_at\r\n");
	for (size_t i = 0; i < pts.n; i++) {
		const api_point *p = &pts.v[i];
		const char *cols[] = { p->name, p->kernel, p->pass, p->dtype,
			p->provider, p->gpu, p->metric, p->unit, p->version, p->workload,
			p->x_name, p->x_value };

		for (size_t m = 0; m < sizeof(cols) / sizeof(cols[0]); m++) {
			api_csv_field(&r->body, cols[m]);
			ki_buf_putc(&r->body, ',');
		}
		csv_num(&r->body, p->median);
		ki_buf_putc(&r->body, ',');
		csv_num(&r->body, p->p20);
		ki_buf_putc(&r->body, ',');
		csv_num(&r->body, p->p80);
		ki_buf_putc(&r->body, ',');
		csv_num(&r->body, p->fraction >= 0 ? p->fraction : NAN);
		ki_buf_printf(&r->body, ",%s,", p->implausible ? "true" : "false");
		api_csv_field(&r->body, p->observed);
		ki_buf_puts(&r->body, "\r\n");
	}
	if (r->body.oom) {
		api_resp_free(r);
		api_resp_init(r);
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory");
	} else {
		r->content_type = CSV_TYPE;
		r->code = 200;
	}
out:
	api_points_free(&pts);
}
