/* api/threshold.c — Thresholds judged on arrival: the history of the
 * arriving run's series, the percentage, z-score and IQR tests, and the
 * Regressed condition and regression label they leave on the run. */
#include "api/threshold.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/kinds.h"
#include "api/labels.h"
#include "api/object.h"
#include "api/schema.h"
#include "api/series.h"

#define MAX_WINDOW 1000

static uint64_t stat_judged, stat_regressed, stat_insufficient;

void
api_threshold_stats_get(api_threshold_stats *out)
{
	out->judged = __atomic_load_n(&stat_judged, __ATOMIC_RELAXED);
	out->regressed = __atomic_load_n(&stat_regressed, __ATOMIC_RELAXED);
	out->insufficient = __atomic_load_n(&stat_insufficient,
	    __ATOMIC_RELAXED);
}

void
api_threshold_metrics(ki_buf *b)
{
	api_threshold_stats ts;

	api_threshold_stats_get(&ts);
	ki_buf_printf(b, "# HELP kernelindex_threshold_runs_judged_total "
	    "Arriving runs that a Threshold covered.\n# TYPE "
	    "kernelindex_threshold_runs_judged_total counter\n"
	    "kernelindex_threshold_runs_judged_total %llu\n"
	    "# HELP kernelindex_regressions_total Arriving runs a Threshold "
	    "found regressed (Regressed=True).\n# TYPE "
	    "kernelindex_regressions_total counter\n"
	    "kernelindex_regressions_total %llu\n"
	    "# HELP kernelindex_threshold_insufficient_history_total Arriving "
	    "runs left unjudged: their series had fewer earlier runs than the "
	    "minimum sample.\n# TYPE "
	    "kernelindex_threshold_insufficient_history_total counter\n"
	    "kernelindex_threshold_insufficient_history_total %llu\n",
	    (unsigned long long)ts.judged, (unsigned long long)ts.regressed,
	    (unsigned long long)ts.insufficient);
}

enum { T_PERCENTAGE, T_ZSCORE, T_IQR };
static const char *const tests[] = { "percentage", "zscore", "iqr" };
/* Defaults by test: limit (percent, z, IQR multiples) and minSample. */
static const double default_limit[] = { 5, 3, 1.5 };
static const long default_min[] = { 1, 5, 5 };

/* A Threshold's spec, read (strings borrowed from its tree). */
typedef struct rule {
	const char *name, *selector, *version_label;
	int test, direction;     /* direction: 1 a rise is worse, -1 a fall,
	                          * 0 by the metric */
	double limit;
	long window, min_sample;
} rule;

static int
int_member(struct json_object *spec, const char *key, long dflt, long *out)
{
	struct json_object *v = json_object_object_get(spec, key);

	*out = dflt;
	if (v == NULL)
		return 1;
	if (!json_object_is_type(v, json_type_int))
		return 0;
	*out = (long)json_object_get_int64(v);
	return 1;
}

/* Reads spec into r; 0 (with why) when it is unusable. */
static int
rule_read(struct json_object *spec, rule *r, const char **why)
{
	const char *t = api_json_str_at(spec, "test", NULL);
	const char *d = api_json_str_at(spec, "direction", NULL);
	struct json_object *lim = json_object_object_get(spec, "limit");

	memset(r, 0, sizeof(r[0]));
	r->test = -1;
	for (int i = 0; t != NULL && i < 3; i++)
		if (strcmp(t, tests[i]) == 0)
			r->test = i;
	if (r->test < 0) {
		*why = "test: must be percentage, zscore or iqr";
		return 0;
	}
	r->selector = api_json_str_at(spec, "selector", NULL);
	r->version_label = api_json_str_at(spec, "versionLabel", NULL);
	r->limit = default_limit[r->test];
	if (lim != NULL && (!api_json_number(lim, &r->limit) || r->limit < 0)) {
		*why = "limit: must be a non-negative number";
		return 0;
	}
	if (!int_member(spec, "window", 10, &r->window) || r->window < 1 ||
	    r->window > MAX_WINDOW) {
		*why = "window: must be an integer from 1 to 1000";
		return 0;
	}
	if (!int_member(spec, "minSample", default_min[r->test],
	    &r->min_sample) || r->min_sample < 1 || r->min_sample > r->window) {
		*why = "minSample: must be an integer from 1 to window";
		return 0;
	}
	if (r->test == T_ZSCORE && r->min_sample < 2) {
		*why = "minSample: a z-score needs at least 2 earlier runs";
		return 0;
	}
	r->direction = d == NULL || strcmp(d, "auto") == 0 ? 0 :
	    strcmp(d, "increase") == 0 ? 1 : strcmp(d, "decrease") == 0 ? -1 : 2;
	if (r->direction == 2) {
		*why = "direction: must be auto, increase or decrease";
		return 0;
	}
	return 1;
}

void
api_validate_threshold(struct json_object *spec, const char *path,
	api_status *st)
{
	api_selector sel;
	char err[256], f[128];
	const char *why = NULL, *s;
	rule r;

	if (!rule_read(spec, &r, &why)) {
		size_t n = strcspn(why, ":");

		snprintf(f, sizeof(f), "%s.%.*s", path, (int)n, why);
		api_status_cause(st, "FieldValueInvalid", f, "Invalid value: %s",
		    why + n + 2);
	}
	memset(&sel, 0, sizeof(sel));
	s = api_json_str_at(spec, "selector", NULL);
	if (api_selector_parse(s, &sel, err, sizeof(err)) != KI_OK) {
		snprintf(f, sizeof(f), "%s.selector", path);
		api_status_cause(st, "FieldValueInvalid", f, "Invalid value: %s",
		    err);
	} else {
		api_selector_free(&sel);
	}
	s = api_json_str_at(spec, "versionLabel", NULL);
	if (s != NULL && !api_is_label_key(s, strlen(s))) {
		snprintf(f, sizeof(f), "%s.versionLabel", path);
		api_status_cause(st, "FieldValueInvalid", f, "Invalid value: must "
		    "be a label key");
	}
}

static int
any_one(void *arg, const store_obj *o)
{
	(void)arg;
	(void)o;
	return 1;
}

int
api_threshold_any(store_txn *txn)
{
	return store_list(txn, API_THRESHOLD, 0, any_one, NULL) == 1;
}

/* ---- statistics ---- */

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values, linearly interpolated. */
static double
quantile(const double *v, size_t n, double q)
{
	double at = q * (double)(n - 1);
	size_t i = (size_t)at;

	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (v[i + 1] - v[i]) * (at - (double)i);
}

/* One rule's judgement of a run. */
typedef struct judgement {
	const rule *r;
	int judged, regressed, sd_zero;
	size_t sample;
	double value, baseline, change, z, fence;
	char unit[16];           /* of value and baseline */
	const api_point *hist;   /* the window's runs, oldest first */
} judgement;

static void
judge(judgement *j, const api_point *p, const api_point *hist, size_t n)
{
	const rule *r = j->r;
	int worse_up = r->direction != 0 ? r->direction > 0 : p->lower_better;
	double *v = NULL;

	j->sample = n;
	j->hist = hist;
	snprintf(j->unit, sizeof(j->unit), "%s", p->unit);
	j->value = p->median;
	j->baseline = j->change = j->z = j->fence = NAN;
	if (n == 0 || (long)n < r->min_sample ||
	    (v = malloc(n * sizeof(*v))) == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = hist[i].median;
	qsort(v, n, sizeof(*v), cmp_double);
	j->judged = 1;
	j->baseline = quantile(v, n, 0.5);
	if (j->baseline > 0)
		j->change = (p->median / j->baseline - 1) * 100;
	if (r->test == T_PERCENTAGE) {
		double worse = worse_up ? j->change : -j->change;

		j->regressed = isfinite(worse) && worse > r->limit;
	} else if (r->test == T_ZSCORE) {
		double mean = 0, ss = 0, sd;

		for (size_t i = 0; i < n; i++)
			mean += v[i];
		mean /= (double)n;
		for (size_t i = 0; i < n; i++)
			ss += (v[i] - mean) * (v[i] - mean);
		sd = sqrt(ss / (double)(n - 1));
		if (sd > 0) {
			j->z = (p->median - mean) / sd;
			j->regressed = (worse_up ? j->z : -j->z) > r->limit;
		} else {
			/* Identical history: any move the worse way is beyond any
			 * number of standard deviations. */
			j->sd_zero = 1;
			j->regressed = worse_up ? p->median > mean : p->median < mean;
		}
	} else {
		double q1 = quantile(v, n, 0.25), q3 = quantile(v, n, 0.75);
		double iqr = q3 - q1;

		j->fence = worse_up ? q3 + r->limit * iqr : q1 - r->limit * iqr;
		j->regressed = worse_up ? p->median > j->fence :
		    p->median < j->fence;
	}
	free(v);
}

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
	ki_buf_json_string(b, s, strlen(s));
}

/* The judgement as a member of status.thresholds. */
static void
judgement_json(ki_buf *b, const judgement *j)
{
	ki_buf_puts(b, "{\"threshold\":");
	put_str(b, j->r->name);
	ki_buf_printf(b, ",\"test\":\"%s\",\"limit\":", tests[j->r->test]);
	put_num(b, j->r->limit);
	ki_buf_printf(b, ",\"window\":%ld,\"minSample\":%ld,\"sample\":%zu,"
	    "\"judged\":%s,\"regressed\":%s,\"value\":", j->r->window,
	    j->r->min_sample, j->sample, j->judged ? "true" : "false",
	    j->regressed ? "true" : "false");
	put_num(b, j->value);
	ki_buf_puts(b, ",\"baseline\":{\"median\":");
	put_num(b, j->baseline);
	ki_buf_puts(b, ",\"runs\":[");
	for (size_t i = 0; i < j->sample; i++) {
		if (i)
			ki_buf_putc(b, ',');
		ki_buf_puts(b, "{\"name\":");
		put_str(b, j->hist[i].name);
		ki_buf_puts(b, ",\"version\":");
		put_str(b, j->hist[i].version);
		ki_buf_puts(b, ",\"median\":");
		put_num(b, j->hist[i].median);
		ki_buf_putc(b, '}');
	}
	ki_buf_puts(b, "]},\"changePercent\":");
	put_num(b, j->change);
	if (j->r->test == T_ZSCORE) {
		ki_buf_puts(b, ",\"zScore\":");
		put_num(b, j->z);
	} else if (j->r->test == T_IQR) {
		ki_buf_puts(b, ",\"fence\":");
		put_num(b, j->fence);
	}
	ki_buf_putc(b, '}');
}

/* v in human units: ns as ns/us/ms/s, bytes as KiB/MiB/GiB. */
static void
human(double v, const char *unit, char *out, size_t n)
{
	static const char *const t[] = { "ns", "us", "ms", "s" };
	static const char *const m[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	if (strcmp(unit, "ns") == 0) {
		for (; v >= 1000 && i < 3; i++)
			v /= 1000;
		snprintf(out, n, "%.4g %s", v, t[i]);
	} else if (strcmp(unit, "bytes") == 0) {
		for (; v >= 1024 && i < 4; i++)
			v /= 1024;
		snprintf(out, n, "%.4g %s", v, m[i]);
	} else {
		snprintf(out, n, "%.6g%s%s", v, *unit ? " " : "", unit);
	}
}

/* The Regressed condition's message for the deciding judgement. */
static void
judgement_message(ki_buf *b, const judgement *j)
{
	const rule *r = j->r;
	const char *unit = j->unit;
	const api_point *last;
	char v[48], base[48], fence[48];

	if (!j->judged) {
		ki_buf_printf(b, "not judged: the series has %zu earlier run%s "
		    "and Threshold %s (%s) needs %ld", j->sample,
		    j->sample == 1 ? "" : "s", r->name, tests[r->test],
		    r->min_sample);
		return;
	}
	last = &j->hist[j->sample - 1];
	human(j->value, unit, v, sizeof(v));
	human(j->baseline, unit, base, sizeof(base));
	ki_buf_printf(b, "median %s is %+.1f%% against the baseline %s, the "
	    "median of %zu earlier run%s (the latest %s, version %s)", v,
	    j->change, base, j->sample, j->sample == 1 ? "" : "s", last->name,
	    last->version[0] ? last->version : "none");
	if (r->test == T_PERCENTAGE)
		ki_buf_printf(b, "; Threshold %s allows %g%%", r->name, r->limit);
	else if (r->test == T_ZSCORE && j->sd_zero)
		ki_buf_printf(b, "; the earlier runs are identical, so any move "
		    "is beyond Threshold %s's %g standard deviations", r->name,
		    r->limit);
	else if (r->test == T_ZSCORE)
		ki_buf_printf(b, "; z = %.2f, Threshold %s allows %g", j->z,
		    r->name, r->limit);
	else
	{
		human(j->fence, unit, fence, sizeof(fence));
		ki_buf_printf(b, "; the IQR fence is %s (Threshold %s, %g IQR)",
		    fence, r->name, r->limit);
	}
}

static int
by_point(const void *a, const void *b)
{
	return api_point_cmp(a, b);
}

/* The run's series history before it: runs of the same series ordered
 * before p (by version, then time), the newest window of them kept, read
 * into h. */
static int
history(store_txn *txn, const api_point *p, const rule *r, api_points *h)
{
	static const char *const keys[] = { "kernel", "pass", "dtype",
		"provider", "gpu", "metric" };
	const char *vals[] = { p->kernel, p->pass, p->dtype, p->provider,
		p->gpu, p->metric };
	char err[128];
	size_t keep = 0;
	ki_buf sel;
	int rc;

	ki_buf_init(&sel);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (vals[i][0] == '\0')
			continue;
		if (sel.len > 0)
			ki_buf_putc(&sel, ',');
		ki_buf_printf(&sel, "%s=%s", keys[i], vals[i]);
	}
	ki_buf_putc(&sel, '\0');
	if (sel.oom) {
		ki_buf_free(&sel);
		return KI_ENOMEM;
	}
	rc = api_points_select_workload(txn, sel.data, p->workload_digest[0] ?
	    p->workload_digest : NULL, r->version_label, h, err, sizeof(err));
	ki_buf_free(&sel);
	if (rc != KI_OK)
		return rc;
	for (size_t i = 0; i < h->n; i++) {
		if (strcmp(h->v[i].key, p->key) != 0 ||
		    strcmp(h->v[i].name, p->name) == 0 ||
		    api_point_cmp(&h->v[i], p) >= 0) {
			api_point_free(&h->v[i]);
			continue;
		}
		h->v[keep++] = h->v[i];
	}
	h->n = keep;
	if (h->n > 1)
		qsort(h->v, h->n, sizeof(*h->v), by_point);
	if (h->n > (size_t)r->window) {
		size_t drop = h->n - (size_t)r->window;

		for (size_t i = 0; i < drop; i++)
			api_point_free(&h->v[i]);
		memmove(h->v, h->v + drop, (size_t)r->window * sizeof(*h->v));
		h->n = (size_t)r->window;
	}
	return KI_OK;
}

/* The Thresholds stored, with their specs parsed. */
typedef struct rules {
	rule *v;
	struct json_object **specs;
	char **names;
	size_t n, cap;
	int rc;
} rules;

static void
rules_free(rules *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		json_object_put(rs->specs[i]);
		free(rs->names[i]);
	}
	free(rs->v);
	free(rs->specs);
	free(rs->names);
	memset(rs, 0, sizeof(*rs));
}

static int
rules_add(void *arg, const store_obj *o)
{
	rules *rs = arg;
	struct json_object *spec;
	const char *why = NULL;

	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 8;
		rule *v = realloc(rs->v, cap * sizeof(*v));
		struct json_object **s = v ? realloc(rs->specs, cap *
		    sizeof(*s)) : NULL;
		char **nm = s ? realloc(rs->names, cap * sizeof(*nm)) : NULL;

		if (v != NULL)
			rs->v = v;
		if (s != NULL)
			rs->specs = s;
		if (nm == NULL) {
			rs->rc = KI_ENOMEM;
			return 1;
		}
		rs->names = nm;
		rs->cap = cap;
	}
	spec = api_json_parse_len(o->json + o->spec_off, o->spec_len);
	if (spec == NULL)
		return 0;
	/* Stored Thresholds were validated: one that no longer reads is
	 * passed over rather than failing every write. */
	if (!rule_read(spec, &rs->v[rs->n], &why) ||
	    (rs->names[rs->n] = strndup(o->name, o->name_len)) == NULL) {
		json_object_put(spec);
		return 0;
	}
	rs->v[rs->n].name = rs->names[rs->n];
	rs->specs[rs->n++] = spec;
	return 0;
}

static void
put_time(ki_buf *b, double now)
{
	time_t t = (time_t)now;
	struct tm tm;
	char s[32];

	gmtime_r(&t, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%SZ", &tm);
	ki_buf_puts(b, s);
}

int
api_threshold_judge(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, const char *name,
	struct json_object *meta, struct json_object **extra, double now)
{
	struct json_object *labels = NULL, *all = NULL;
	judgement *js = NULL;
	api_points *hs = NULL;
	const judgement *decide = NULL;
	rules rs;
	ki_buf lblob, out;
	size_t nj = 0;
	int rc, any_regressed = 0, any_judged = 0;

	*extra = NULL;
	memset(&rs, 0, sizeof(rs));
	ki_buf_init(&lblob);
	ki_buf_init(&out);
	rc = store_list(txn, API_THRESHOLD, 0, rules_add, &rs);
	if (rc == 1 || rc == KI_OK)
		rc = rs.rc;
	if (rc != KI_OK || rs.n == 0)
		goto out;
	/* The labels the run will carry: its own and those derived. */
	if (!json_object_object_get_ex(meta, "labels", &labels) ||
	    labels == NULL) {
		if ((labels = json_object_new_object()) == NULL) {
			rc = KI_ENOMEM;
			goto out;
		}
		json_object_object_add(meta, "labels", labels);
	}
	if (json_object_deep_copy(labels, &all, NULL) != 0) {
		rc = KI_ENOMEM;
		goto out;
	}
	if ((rc = api_run_derive_labels(txn, spec, refs, nrefs, all)) != KI_OK ||
	    (rc = api_labels_encode(all, &lblob)) != KI_OK)
		goto out;
	js = calloc(rs.n, sizeof(*js));
	hs = calloc(rs.n, sizeof(*hs));
	if (js == NULL || hs == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < rs.n; i++) {
		api_selector sel;
		char err[128];
		api_point p;
		int match;

		memset(&sel, 0, sizeof(sel));
		if (api_selector_parse(rs.v[i].selector, &sel, err, sizeof(err)) !=
		    KI_OK)
			continue;
		match = api_selector_match(&sel, lblob.data, lblob.len);
		api_selector_free(&sel);
		if (!match)
			continue;
		rc = api_point_from_parts(spec, all, NULL, name,
		    rs.v[i].version_label, &p);
		if (rc == KI_ENOTFOUND) {
			rc = KI_OK;
			continue;   /* no figure: no series to judge it in */
		}
		if (rc != KI_OK)
			goto out;
		rc = history(txn, &p, &rs.v[i], &hs[nj]);
		if (rc == KI_ELIMIT) {
			/* A series too long to read is not judged (the run is
			 * stored all the same). */
			api_points_free(&hs[nj]);
			api_point_free(&p);
			rc = KI_OK;
			continue;
		}
		if (rc == KI_OK) {
			js[nj].r = &rs.v[i];
			judge(&js[nj], &p, hs[nj].v, hs[nj].n);
			if (js[nj].regressed && (decide == NULL || !decide->regressed))
				decide = &js[nj];
			else if (js[nj].judged && decide == NULL)
				decide = &js[nj];
			any_regressed |= js[nj].regressed;
			any_judged |= js[nj].judged;
			nj++;
		}
		if (rc != KI_OK) {
			api_point_free(&p);
			goto out;
		}
		api_point_free(&p);
	}
	if (nj == 0)
		goto out;
	if (decide == NULL)
		decide = &js[0];
	ki_buf_puts(&out, "{\"conditions\":[{\"lastTransitionTime\":\"");
	put_time(&out, now);
	ki_buf_printf(&out, "\",\"message\":");
	{
		ki_buf msg;

		ki_buf_init(&msg);
		judgement_message(&msg, decide);
		ki_buf_putc(&msg, '\0');
		put_str(&out, msg.oom ? "" : msg.data);
		ki_buf_free(&msg);
	}
	ki_buf_printf(&out, ",\"reason\":\"%s\",\"status\":\"%s\",\"type\":"
	    "\"Regressed\"}],\"thresholds\":[", any_regressed ?
	    "ThresholdExceeded" : any_judged ? "WithinThreshold" :
	    "InsufficientHistory", any_regressed ? "True" : any_judged ?
	    "False" : "Unknown");
	for (size_t i = 0; i < nj; i++) {
		if (i)
			ki_buf_putc(&out, ',');
		judgement_json(&out, &js[i]);
	}
	ki_buf_puts(&out, "]}");
	if (out.oom) {
		rc = KI_ENOMEM;
		goto out;
	}
	if ((*extra = api_json_parse_len(out.data, out.len)) == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	/* The label is the server's once a Threshold judged the run. */
	if (any_regressed)
		json_object_object_add(labels, "regression",
		    json_object_new_string("true"));
	else
		json_object_object_del(labels, "regression");
	__atomic_add_fetch(&stat_judged, 1, __ATOMIC_RELAXED);
	if (any_regressed)
		__atomic_add_fetch(&stat_regressed, 1, __ATOMIC_RELAXED);
	else if (!any_judged)
		__atomic_add_fetch(&stat_insufficient, 1, __ATOMIC_RELAXED);
out:
	for (size_t i = 0; hs != NULL && i < rs.n; i++)
		api_points_free(&hs[i]);
	free(hs);
	free(js);
	if (all != NULL)
		json_object_put(all);
	ki_buf_free(&lblob);
	ki_buf_free(&out);
	rules_free(&rs);
	return rc;
}

void
api_threshold_keep(struct json_object *old, struct json_object *kept)
{
	struct json_object *th = json_object_object_get(old, "thresholds");
	struct json_object *cs = json_object_object_get(old, "conditions");
	struct json_object *keep = json_object_object_get(kept, "conditions");
	int fresh = 0;

	if (th == NULL)
		return;
	if (keep != NULL && !json_object_is_type(keep, json_type_array))
		return;
	for (size_t i = 0; cs != NULL && json_object_is_type(cs,
	    json_type_array) && i < json_object_array_length(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i);
		const char *t = api_json_str_at(c, "type", NULL);

		if (t == NULL || strcmp(t, "Regressed") != 0)
			continue;
		if (keep == NULL) {
			if ((keep = json_object_new_array()) == NULL)
				return;
			fresh = 1;
		}
		json_object_array_add(keep, json_object_get(c));
	}
	json_object_object_add(kept, "thresholds", json_object_get(th));
	if (fresh)
		json_object_object_add(kept, "conditions", keep);
}
