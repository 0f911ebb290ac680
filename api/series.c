/* api/series.c — runs read as points of their series: figures, series
 * keys, version order, selection by label selector, and CSV fields. */
#include "api/series.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/labels.h"
#include "api/object.h"
#include "api/schema.h"
#include "api/service_int.h"
#include "lib/limits.h"

/* Liger's annotations naming the swept parameter (api/liger.c). */
#define ANN_X_NAME "liger.kernelindex.dev/x-name"
#define ANN_X_VALUE "liger.kernelindex.dev/x-value"

void
api_point_free(api_point *p)
{
	free(p->name);
	free(p->key);
	free(p->workload);
	free(p->x_name);
	free(p->x_value);
	memset(p, 0, sizeof(*p));
}

void
api_points_free(api_points *p)
{
	for (size_t i = 0; i < p->n; i++)
		api_point_free(&p->v[i]);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

static void
copy_label(char dst[API_SERIES_LABEL], struct json_object *labels,
	const char *key)
{
	const char *v = api_json_str_at(labels, key, NULL);

	snprintf(dst, API_SERIES_LABEL, "%s", v != NULL ? v : "");
}

/* The measurement of metric and statistic in spec.measurements, with its
 * unit; 1 when found. */
static int
measurement(struct json_object *spec, const char *metric, const char *stat,
	double *out, const char **unit)
{
	struct json_object *ms = json_object_object_get(spec, "measurements");

	if (ms == NULL || !json_object_is_type(ms, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		struct json_object *m = json_object_array_get_idx(ms, i);
		const char *mm = api_json_str_at(m, "metric", NULL);
		const char *st = api_json_str_at(m, "statistic", NULL);

		if (mm != NULL && st != NULL && strcmp(mm, metric) == 0 &&
		    strcmp(st, stat) == 0 && api_json_number(
		    json_object_object_get(m, "value"), out)) {
			if (unit != NULL)
				*unit = api_json_str_at(m, "unit", NULL);
			return 1;
		}
	}
	return 0;
}

/* A run's median, p20 and p80 of its metric: spec.timing.latencyNs for
 * latency, else spec.measurements. 1 when the median is known. */
static int
figures(struct json_object *spec, const char *metric, api_point *p)
{
	struct json_object *lat = NULL;
	const char *unit = NULL;
	double v;

	p->p20 = p->p80 = NAN;
	if (strcmp(metric, "latency") == 0 &&
	    json_object_object_get_ex(spec, "timing", &lat) &&
	    json_object_object_get_ex(lat, "latencyNs", &lat) &&
	    api_json_number(json_object_object_get(lat, "median"), &p->median)) {
		unit = "ns";
		if (api_json_number(json_object_object_get(lat, "p20"), &v))
			p->p20 = v;
		if (api_json_number(json_object_object_get(lat, "p80"), &v))
			p->p80 = v;
	} else if (!measurement(spec, metric, "median", &p->median, &unit)) {
		return 0;
	}
	if (isnan(p->p20) && measurement(spec, metric, "p20", &v, NULL))
		p->p20 = v;
	if (isnan(p->p80) && measurement(spec, metric, "p80", &v, NULL))
		p->p80 = v;
	if (isnan(p->p20) || p->p20 > p->median)
		p->p20 = p->median;
	if (isnan(p->p80) || p->p80 < p->median)
		p->p80 = p->median;
	snprintf(p->unit, sizeof(p->unit), "%s", unit != NULL ? unit : "");
	return 1;
}

int
api_point_from_parts(struct json_object *spec, struct json_object *labels,
	struct json_object *status, const char *name, const char *version_label,
	api_point *p)
{
	struct json_object *pl = NULL;
	const char *s;
	ki_buf key;
	double f;
	int rc = KI_OK;

	memset(p, 0, sizeof(*p));
	ki_buf_init(&key);
	copy_label(p->kernel, labels, "kernel");
	copy_label(p->pass, labels, "pass");
	copy_label(p->dtype, labels, "dtype");
	copy_label(p->provider, labels, "provider");
	copy_label(p->gpu, labels, "gpu");
	copy_label(p->metric, labels, "metric");
	if (version_label != NULL && *version_label != '\0')
		copy_label(p->version, labels, version_label);
	else {
		copy_label(p->version, labels, API_DEFAULT_VERSION_LABEL);
		if (p->version[0] == '\0')
			copy_label(p->version, labels, "version");
	}
	if (p->metric[0] == '\0' || !figures(spec, p->metric, p)) {
		rc = KI_ENOTFOUND;
		goto out;
	}
	p->lower_better = strcmp(p->metric, "bandwidth") != 0 &&
	    strcmp(p->metric, "throughput") != 0;
	s = api_json_str_at(spec, "observedAt", NULL);
	snprintf(p->observed, sizeof(p->observed), "%s", s ? s : "");
	s = api_json_str_at(spec, "workloadDigest", NULL);
	snprintf(p->workload_digest, sizeof(p->workload_digest), "%s",
	    s ? s : "");
	s = api_json_str_at(spec, "protocolDigest", NULL);
	snprintf(p->protocol_digest, sizeof(p->protocol_digest), "%s",
	    s ? s : "");
	p->fraction = -1;
	if (status != NULL && json_object_object_get_ex(status, "plausibility",
	    &pl)) {
		if (api_json_number(json_object_object_get(pl, "achievedFraction"),
		    &f))
			p->fraction = f;
		s = api_json_str_at(pl, "verdict", NULL);
		p->implausible = s != NULL && strcmp(s, "Implausible") == 0;
	}
	s = status != NULL ? api_json_str_at(json_object_object_get(
	    json_object_object_get(status, "references"), "workload"), "name",
	    NULL) : NULL;
	p->workload = strdup(s != NULL ? s : p->workload_digest);
	p->name = strdup(name);
	/* The identity of a series: what was computed (the workload's digest
	 * names kernel, pass, dtype and shape), by which provider, on which
	 * GPU, of which metric, under which protocol; not the version. */
	ki_buf_printf(&key, "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s",
	    p->kernel, p->pass, p->dtype, p->provider, p->gpu, p->metric,
	    p->workload_digest, p->protocol_digest);
	p->key = ki_buf_steal(&key, NULL);
	if (p->workload == NULL || p->name == NULL || p->key == NULL)
		rc = KI_ENOMEM;
out:
	ki_buf_free(&key);
	if (rc != KI_OK)
		api_point_free(p);
	return rc;
}

int
api_point_from_obj(const store_obj *o, const char *version_label,
	api_point *p)
{
	struct json_object *meta, *spec, *status = NULL, *ann = NULL;
	char *name = NULL;
	int rc;

	meta = api_json_parse_len(o->json + o->meta_off, o->meta_len);
	spec = api_json_parse_len(o->json + o->spec_off, o->spec_len);
	if (o->status_len > 0)
		status = api_json_parse_len(o->json + o->status_off,
		    o->status_len);
	name = strndup(o->name, o->name_len);
	if (meta == NULL || spec == NULL || name == NULL) {
		rc = meta == NULL || spec == NULL ? KI_ESTORE : KI_ENOMEM;
		goto out;
	}
	rc = api_point_from_parts(spec, json_object_object_get(meta, "labels"),
	    status, name, version_label, p);
	if (rc == KI_OK && json_object_object_get_ex(meta, "annotations", &ann)) {
		const char *xn = api_json_str_at(ann, ANN_X_NAME, NULL);
		const char *xv = api_json_str_at(ann, ANN_X_VALUE, NULL);

		if (xn != NULL && xv != NULL) {
			p->x_name = strdup(xn);
			p->x_value = strdup(xv);
			if (p->x_name == NULL || p->x_value == NULL) {
				api_point_free(p);
				rc = KI_ENOMEM;
			}
		}
	}
out:
	free(name);
	if (meta != NULL)
		json_object_put(meta);
	if (spec != NULL)
		json_object_put(spec);
	if (status != NULL)
		json_object_put(status);
	return rc;
}

typedef struct select_arg {
	const api_query *q;
	const char *version_label;
	api_points *out;
	int rc;
} select_arg;

static int
select_one(void *arg, const store_obj *o)
{
	select_arg *a = arg;
	api_point p;
	int rc;

	if (!api_query_match(a->q, o))
		return 0;
	if (a->out->n >= KI_MAX_SERIES_RUNS) {
		a->rc = KI_ELIMIT;
		return 1;
	}
	rc = api_point_from_obj(o, a->version_label, &p);
	if (rc == KI_ENOTFOUND)
		return 0;
	if (rc == KI_OK && a->out->n == a->out->cap) {
		size_t cap = a->out->cap ? a->out->cap * 2 : 64;
		api_point *v = realloc(a->out->v, cap * sizeof(*v));

		if (v == NULL) {
			api_point_free(&p);
			rc = KI_ENOMEM;
		} else {
			a->out->v = v;
			a->out->cap = cap;
		}
	}
	if (rc != KI_OK) {
		a->rc = rc;
		return 1;
	}
	a->out->v[a->out->n++] = p;
	return 0;
}

int
api_points_select(store_txn *txn, const char *sel, const char *version_label,
	api_points *out, char *err, size_t errlen)
{
	return api_points_select_workload(txn, sel, NULL, version_label, out,
	    err, errlen);
}

int
api_points_select_workload(store_txn *txn, const char *sel,
	const char *workload, const char *version_label, api_points *out,
	char *err, size_t errlen)
{
	api_selector labels, fields;
	api_field_ref fref;
	api_query q;
	select_arg a;
	char text[API_DIGEST_STRLEN + 32];
	int rc, path;

	memset(&labels, 0, sizeof(labels));
	memset(&fields, 0, sizeof(fields));
	memset(&q, 0, sizeof(q));
	rc = api_selector_parse(sel, &labels, err, errlen);
	if (rc != KI_OK)
		return KI_EINVAL;
	if (workload != NULL) {
		/* Driven by the index of runs referencing the workload. */
		snprintf(text, sizeof(text), "spec.workloadDigest=%s", workload);
		fref.ref = API_REF_WORKLOAD;
		if (api_digest_parse(workload, strlen(workload), fref.digest) !=
		    KI_OK || api_field_selector_parse(text, &fields, err,
		    errlen) != KI_OK) {
			api_selector_free(&labels);
			return KI_EINVAL;
		}
		q.frefs = &fref;
	}
	q.labels = &labels;
	q.fields = &fields;
	a.q = &q;
	a.version_label = version_label;
	a.out = out;
	a.rc = KI_OK;
	rc = api_query_run(txn, api_kind_by_id(API_RUN), &q, 0, select_one, &a,
	    &path);
	if (rc == 1 || rc == KI_OK)
		rc = a.rc;
	api_selector_free(&labels);
	api_selector_free(&fields);
	return rc;
}

/* Compares the next dot-separated parts of two versions. */
int
api_version_cmp(const char *a, const char *b)
{
	while (*a != '\0' && *b != '\0') {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			char *ea, *eb;
			unsigned long long x = strtoull(a, &ea, 10);
			unsigned long long y = strtoull(b, &eb, 10);

			if (x != y)
				return x < y ? -1 : 1;
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return *a == *b ? 0 : *a == '\0' ? -1 : 1;
}

int
api_point_cmp(const api_point *a, const api_point *b)
{
	int c = api_version_cmp(a->version, b->version);

	if (c == 0)
		c = strcmp(a->observed, b->observed);
	if (c == 0)
		c = strcmp(a->name, b->name);
	return c;
}

void
api_csv_field(ki_buf *out, const char *s)
{
	if (s == NULL)
		return;
	if (strpbrk(s, ",\"\r\n") == NULL) {
		ki_buf_puts(out, s);
		return;
	}
	ki_buf_putc(out, '"');
	for (; *s; s++) {
		if (*s == '"')
			ki_buf_putc(out, '"');
		ki_buf_putc(out, *s);
	}
	ki_buf_putc(out, '"');
}
