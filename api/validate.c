/* api/validate.c — cross-field rules: quantile order, units, and
 * consistency of sourceNative figures with the normalized ones. */
#include "api/validate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/schema.h"

#define MAX_FIGURES 128

typedef struct figure {
	int metric;      /* index into metric_names */
	int stat;        /* index into stat_names */
	double value;    /* in the metric's base unit */
	double shown;    /* as written */
	/* Where it was written: timing.latencyNs.<key>, or (key NULL)
	 * measurements[<index>].value; the path is spelled out only for a
	 * cause. */
	const char *key;
	size_t index;
} figure;

static const char *const metric_names[] = { "latency", "peak_memory",
	"bandwidth", "throughput" };
static const char *const base_units[] = { "ns", "bytes", "GB/s",
	"per second" };

/* Statistics in ascending order of rank; mean and stddev have none. */
static const char *const stat_names[] = { "min", "p5", "p10", "p20", "p25",
	"median", "p75", "p80", "p90", "p95", "p99", "max", "mean", "stddev" };
#define RANKED 12

static int
index_of(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(names[i], s) == 0)
			return (int)i;
	}
	return -1;
}

/* The factor to the metric's base unit, or 0 when unit does not fit. */
static double
unit_factor(int metric, const char *unit)
{
	static const struct {
		int metric;
		const char *unit;
		double factor;
	} t[] = {
		{ 0, "ns", 1 }, { 0, "us", 1e3 }, { 0, "ms", 1e6 }, { 0, "s", 1e9 },
		{ 1, "bytes", 1 }, { 1, "KiB", 1024.0 }, { 1, "MiB", 1048576.0 },
		{ 1, "GiB", 1073741824.0 },
		{ 2, "GB/s", 1 },
		{ 3, "TFLOP/s", 1e12 }, { 3, "items/s", 1 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (t[i].metric == metric && strcmp(t[i].unit, unit) == 0)
			return t[i].factor;
	}
	return 0;
}

static const char *
get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int
add_figure(figure *f, size_t *n, int metric, int stat, double value,
	double shown, const char *key, size_t index)
{
	if (*n >= MAX_FIGURES)
		return 0;
	f[*n].metric = metric;
	f[*n].stat = stat;
	f[*n].value = value;
	f[*n].shown = shown;
	f[*n].key = key;
	f[*n].index = index;
	(*n)++;
	return 1;
}

/* The field path of a figure under the run's path. */
static const char *
fig_path(const figure *f, const char *path, char p[160])
{
	if (f->key != NULL)
		snprintf(p, 160, "%s.timing.latencyNs.%s", path, f->key);
	else
		snprintf(p, 160, "%s.measurements[%zu].value", path, f->index);
	return p;
}

static int
close_enough(double a, double b, double abs_tol)
{
	double tol = fmax(abs_tol, 1e-6 * fmax(fabs(a), fabs(b)));

	return fabs(a - b) <= tol;
}

/* Collects timing.latencyNs and measurements[] into figs. */
static size_t
collect(struct json_object *spec, const char *path, api_status *st,
	figure *figs)
{
	struct json_object *timing, *lat, *ms;
	char p[160];
	size_t n = 0;
	double d;

	if (json_object_object_get_ex(spec, "timing", &timing) &&
	    json_object_object_get_ex(timing, "latencyNs", &lat) &&
	    json_object_is_type(lat, json_type_object)) {
		json_object_object_foreach(lat, key, val) {
			int s = index_of(stat_names, RANKED + 2, key);

			if (s >= 0 && api_json_number(val, &d))
				add_figure(figs, &n, 0, s, d, d, key, 0);
		}
	}
	if (!json_object_object_get_ex(spec, "measurements", &ms) ||
	    !json_object_is_type(ms, json_type_array))
		return n;
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		struct json_object *m = json_object_array_get_idx(ms, i), *v;
		const char *metric = get_str(m, "metric");
		const char *stat = get_str(m, "statistic");
		const char *unit = get_str(m, "unit");
		int mi, si;
		double factor;

		if (metric == NULL || stat == NULL || unit == NULL ||
		    !json_object_object_get_ex(m, "value", &v) ||
		    !api_json_number(v, &d))
			continue;
		mi = index_of(metric_names, 4, metric);
		si = index_of(stat_names, RANKED + 2, stat);
		if (mi < 0 || si < 0)
			continue;
		factor = unit_factor(mi, unit);
		if (factor == 0) {
			snprintf(p, sizeof(p), "%s.measurements[%zu].unit", path, i);
			api_status_cause(st, "FieldValueInvalid", p,
			    "Invalid value: \"%s\": not a unit of %s (use %s)", unit,
			    metric, mi == 0 ? "ns, us, ms or s" :
			    mi == 1 ? "bytes, KiB, MiB or GiB" :
			    mi == 2 ? "GB/s" : "TFLOP/s or items/s");
			continue;
		}
		add_figure(figs, &n, mi, si, d * factor, d, NULL, i);
	}
	return n;
}

static void
check_figures(const figure *figs, size_t n, const char *path, api_status *st)
{
	char pa[160], pb[160];

	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			const figure *a = &figs[i], *b = &figs[j];

			if (i == j || a->metric != b->metric)
				continue;
			if (a->stat == b->stat) {
				if (j > i && !close_enough(a->value, b->value, 0))
					api_status_cause(st, "FieldValueDuplicate",
					    fig_path(b, path, pb),
					    "Duplicate value: %s %s is given twice with "
					    "different values (%.17g and %.17g %s, see %s)",
					    metric_names[a->metric], stat_names[a->stat],
					    a->value, b->value, base_units[a->metric],
					    fig_path(a, path, pa));
				continue;
			}
			if (a->stat >= RANKED || b->stat >= RANKED ||
			    a->stat > b->stat)
				continue;
			/* a ranks below b, so a's value must not exceed b's. */
			if (a->value > b->value &&
			    !close_enough(a->value, b->value, 0))
				api_status_cause(st, "FieldValueInvalid",
				    fig_path(a, path, pa),
				    "Invalid value: %.17g: %s %s (%.17g %s) must not "
				    "exceed %s (%.17g %s, %s): quantiles must be ordered",
				    a->shown, metric_names[a->metric],
				    stat_names[a->stat], a->value, base_units[a->metric],
				    stat_names[b->stat], b->value, base_units[b->metric],
				    fig_path(b, path, pb));
		}
	}
}

/* sourceNative.metrics: ms_NN are milliseconds of latency, mb_NN mebibytes
 * of peak memory (Liger's harness: torch.cuda.max_memory_allocated / 2^20);
 * NN is the quantile in percent, 50 being the median. */
static void
check_native(struct json_object *spec, const char *path, const figure *figs,
	size_t n, api_status *st)
{
	struct json_object *sn, *metrics;
	char p[160], pa[160];

	if (!json_object_object_get_ex(spec, "sourceNative", &sn) ||
	    !json_object_object_get_ex(sn, "metrics", &metrics) ||
	    !json_object_is_type(metrics, json_type_object))
		return;
	json_object_object_foreach(metrics, key, val) {
		char statname[8];
		int metric, stat, q;
		char *end;
		double d, want;
		long l;
		int matched;

		if (strncmp(key, "ms_", 3) == 0)
			metric = 0;
		else if (strncmp(key, "mb_", 3) == 0)
			metric = 1;
		else
			continue;
		l = strtol(key + 3, &end, 10);
		if (*end != '\0' || end == key + 3 || l < 0 || l > 100)
			continue;
		q = (int)l;
		if (q == 50) {
			memcpy(statname, "median", 7);
		} else {
			/* "p" and q's one to three digits */
			int k = 0;

			statname[k++] = 'p';
			if (q >= 100)
				statname[k++] = (char)('0' + q / 100);
			if (q >= 10)
				statname[k++] = (char)('0' + q / 10 % 10);
			statname[k++] = (char)('0' + q % 10);
			statname[k] = '\0';
		}
		stat = index_of(stat_names, RANKED + 2, statname);
		if (stat < 0 || !api_json_number(val, &d))
			continue;
		want = d * (metric == 0 ? 1e6 : 1048576.0);
		matched = 0;
		for (size_t i = 0; i < n; i++) {
			if (figs[i].metric != metric || figs[i].stat != stat)
				continue;
			matched = 1;
			/* Normalized figures are rounded to whole ns or bytes. */
			if (!close_enough(want, figs[i].value, 1.0)) {
				snprintf(p, sizeof(p), "%s.sourceNative.metrics.%s", path,
				    key);
				api_status_cause(st, "FieldValueInvalid", p,
				    "Invalid value: %.17g: %s %s = %.17g %s disagrees "
				    "with %s = %.17g", d, key,
				    metric == 0 ? "x 10^6" : "x 2^20", want,
				    base_units[metric], fig_path(&figs[i], path, pa),
				    figs[i].value);
			}
		}
		if (!matched) {
			/* The figure the source reported would be lost to every
			 * query, plot and comparison, which read the normalized
			 * ones only. */
			snprintf(p, sizeof(p), "%s.sourceNative.metrics.%s", path,
			    key);
			api_status_cause(st, "FieldValueInvalid", p,
			    "Invalid value: %.17g: %s is a %s %s that no normalized "
			    "figure carries: add it as %s%s or as a measurements[] "
			    "entry with metric \"%s\" and statistic \"%s\"", d, key,
			    metric_names[metric], statname, metric == 0 ?
			    "timing.latencyNs." : "a measurement", metric == 0 ?
			    statname : "", metric_names[metric], statname);
		}
	}
}

void
api_validate_run(struct json_object *spec, const char *path, api_status *st)
{
	figure figs[MAX_FIGURES];
	struct json_object *timing, *lat;
	const char *primary;
	char p[160];
	size_t n;

	n = collect(spec, path, st, figs);
	if (n == 0 && !json_object_object_get_ex(spec, "timing", NULL) &&
	    !json_object_object_get_ex(spec, "measurements", NULL))
		api_status_cause(st, "FieldValueRequired", path,
		    "Required value: a run needs timing or measurements");
	check_figures(figs, n, path, st);
	if (json_object_object_get_ex(spec, "timing", &timing) &&
	    json_object_object_get_ex(timing, "latencyNs", &lat) &&
	    (primary = get_str(timing, "primaryStatistic")) != NULL &&
	    json_object_is_type(lat, json_type_object) &&
	    !json_object_object_get_ex(lat, primary, NULL) &&
	    index_of(stat_names, RANKED + 2, primary) >= 0) {
		snprintf(p, sizeof(p), "%s.timing.primaryStatistic", path);
		api_status_cause(st, "FieldValueInvalid", p,
		    "Invalid value: \"%s\": timing.latencyNs has no %s", primary,
		    primary);
	}
	check_native(spec, path, figs, n, st);
}

void
api_validate_workload(struct json_object *spec, const char *path,
	api_status *st)
{
	struct json_object *params;
	const char *sweep = get_str(spec, "sweep");
	char p[160];

	if (sweep == NULL ||
	    !json_object_object_get_ex(spec, "parameters", &params) ||
	    !json_object_is_type(params, json_type_object))
		return;
	if (!json_object_object_get_ex(params, sweep, NULL)) {
		snprintf(p, sizeof(p), "%s.sweep", path);
		api_status_cause(st, "FieldValueInvalid", p,
		    "Invalid value: \"%s\": must name one of spec.parameters", sweep);
	}
}

void
api_validate_protocol(struct json_object *spec, const char *path,
	api_status *st)
{
	struct json_object *m;
	char p[160];

	if (!json_object_object_get_ex(spec, "measurement", &m) ||
	    !json_object_is_type(m, json_type_object))
		return;
	if (!json_object_object_get_ex(m, "timer", NULL) &&
	    !json_object_object_get_ex(m, "method", NULL)) {
		snprintf(p, sizeof(p), "%s.measurement.timer", path);
		api_status_cause(st, "FieldValueRequired", p, "Required value: a "
		    "protocol names its timer (latency) or its method (other "
		    "figures)");
	}
}
