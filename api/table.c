/* api/table.c — server-side printing: the columns of each kind. */
#include "api/table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/object.h"
#include "api/schema.h"

typedef struct column {
	const char *name, *type, *desc;
	int priority;
} column;

static const column run_cols[] = {
	{ "Name", "string", "The run's name.", 0 },
	{ "Kernel", "string", "Kernel family.", 0 },
	{ "Pass", "string", "forward, backward or full.", 0 },
	{ "Provider", "string", "Who provides the kernel.", 0 },
	{ "GPU", "string", "Where it ran.", 0 },
	{ "Dtype", "string", "Element type.", 0 },
	{ "Median", "string", "The headline figure, in human units.", 0 },
	{ "P20-P80", "string", "The spread, in the same unit.", 1 },
	{ "Verdict", "string", "Plausibility against the physical floor.", 0 },
	{ "Age", "string", "Since the upload.", 0 },
	{ "Observed", "string", "When it was measured.", 1 },
	{ "Digest", "string", "Content digest.", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const column protocol_cols[] = {
	{ "Name", "string", "", 0 }, { "Timer", "string", "", 0 },
	{ "Statistic", "string", "", 0 }, { "Harness", "string", "", 0 },
	{ "Age", "string", "", 0 }, { "Digest", "string", "", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const column env_cols[] = {
	{ "Name", "string", "", 0 }, { "Vendor", "string", "", 0 },
	{ "Product", "string", "", 0 }, { "Form Factor", "string", "", 0 },
	{ "Arch", "string", "", 0 }, { "Age", "string", "", 0 },
	{ "Digest", "string", "", 1 }, { NULL, NULL, NULL, 0 },
};
static const column workload_cols[] = {
	{ "Name", "string", "", 0 }, { "Kernel", "string", "", 0 },
	{ "Pass", "string", "", 0 }, { "Dtype", "string", "", 0 },
	{ "Parameters", "string", "", 0 }, { "Age", "string", "", 0 },
	{ "Digest", "string", "", 1 }, { NULL, NULL, NULL, 0 },
};
static const column impl_cols[] = {
	{ "Name", "string", "", 0 }, { "Provider", "string", "", 0 },
	{ "Framework", "string", "", 0 }, { "Version", "string", "", 0 },
	{ "Age", "string", "", 0 }, { "Digest", "string", "", 1 },
	{ NULL, NULL, NULL, 0 },
};
static const column verif_cols[] = {
	{ "Name", "string", "", 0 }, { "Run", "string", "", 0 },
	{ "Phase", "string", "", 0 }, { "Verdict", "string", "", 0 },
	{ "Reference", "string", "Reference median.", 0 },
	{ "Age", "string", "", 0 }, { NULL, NULL, NULL, 0 },
};

static const column threshold_cols[] = {
	{ "Name", "string", "", 0 },
	{ "Selector", "string", "The runs it judges.", 0 },
	{ "Test", "string", "percentage, zscore or iqr.", 0 },
	{ "Limit", "string", "", 0 }, { "Window", "string", "", 0 },
	{ "Min Sample", "string", "", 1 }, { "Age", "string", "", 0 },
	{ NULL, NULL, NULL, 0 },
};

static const column *
columns(const api_kind *k)
{
	switch (k->id) {
	case API_RUN: return run_cols;
	case API_PROTOCOL: return protocol_cols;
	case API_ENVIRONMENT: return env_cols;
	case API_WORKLOAD: return workload_cols;
	case API_IMPLEMENTATION: return impl_cols;
	case API_THRESHOLD: return threshold_cols;
	default: return verif_cols;
	}
}

void
api_table_open(ki_buf *out, const api_kind *k)
{
	const column *c = columns(k);

	ki_buf_puts(out, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\","
	    "\"columnDefinitions\":[");
	for (int i = 0; c[i].name != NULL; i++) {
		ki_buf_printf(out, "%s{\"name\":\"%s\",\"type\":\"%s\",\"format\":"
		    "\"%s\",\"description\":", i ? "," : "", c[i].name, c[i].type,
		    i == 0 ? "name" : "");
		ki_buf_json_string(out, c[i].desc, strlen(c[i].desc));
		ki_buf_printf(out, ",\"priority\":%d}", c[i].priority);
	}
	ki_buf_puts(out, "],\"rows\":[");
}

void
api_table_close(ki_buf *out, uint64_t rv, const char *cont)
{
	ki_buf_printf(out, "],\"metadata\":{\"resourceVersion\":\"%llu\"",
	    (unsigned long long)rv);
	if (cont != NULL) {
		ki_buf_puts(out, ",\"continue\":");
		ki_buf_json_string(out, cont, strlen(cont));
	}
	ki_buf_puts(out, "}}");
}

void
api_human_duration(double seconds, ki_buf *out)
{
	long long s = (long long)floor(seconds), m, h;

	if (s < -1) {
		ki_buf_puts(out, "<invalid>");
		return;
	}
	if (s < 0)
		s = 0;
	if (s < 120) {
		ki_buf_printf(out, "%llds", s);
		return;
	}
	m = s / 60;
	if (m < 10) {
		if (s % 60 == 0)
			ki_buf_printf(out, "%lldm", m);
		else
			ki_buf_printf(out, "%lldm%llds", m, s % 60);
		return;
	}
	if (m < 180) {
		ki_buf_printf(out, "%lldm", m);
		return;
	}
	h = s / 3600;
	if (h < 8) {
		if (m % 60 == 0)
			ki_buf_printf(out, "%lldh", h);
		else
			ki_buf_printf(out, "%lldh%lldm", h, m % 60);
	} else if (h < 48) {
		ki_buf_printf(out, "%lldh", h);
	} else if (h < 24 * 8) {
		if (h % 24 == 0)
			ki_buf_printf(out, "%lldd", h / 24);
		else
			ki_buf_printf(out, "%lldd%lldh", h / 24, h % 24);
	} else if (h < 24 * 365 * 2) {
		ki_buf_printf(out, "%lldd", h / 24);
	} else if (h < 24 * 365 * 8) {
		long long dy = (h / 24) % 365;

		if (dy == 0)
			ki_buf_printf(out, "%lldy", h / 24 / 365);
		else
			ki_buf_printf(out, "%lldy%lldd", h / 24 / 365, dy);
	} else {
		ki_buf_printf(out, "%lldy", h / 24 / 365);
	}
}

static struct json_object *
path(struct json_object *o, const char *a, const char *b, const char *c)
{
	struct json_object *v = o;
	const char *keys[3] = { a, b, c };

	for (int i = 0; i < 3 && keys[i] != NULL; i++) {
		if (v == NULL || !json_object_object_get_ex(v, keys[i], &v))
			return NULL;
	}
	return v;
}

static void
cell_str(ki_buf *out, struct json_object *v)
{
	ki_buf_putc(out, ',');
	if (v == NULL || json_object_is_type(v, json_type_null)) {
		ki_buf_puts(out, "null");
		return;
	}
	if (json_object_is_type(v, json_type_string))
		ki_buf_json_string(out, json_object_get_string(v),
		    (size_t)json_object_get_string_len(v));
	else {
		const char *s = json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN);

		ki_buf_json_string(out, s, strlen(s));
	}
}

static void
cell_text(ki_buf *out, const char *s)
{
	ki_buf_putc(out, ',');
	if (s == NULL)
		ki_buf_puts(out, "null");
	else
		ki_buf_json_string(out, s, strlen(s));
}

/* Formats v (ns or bytes) in human units into b. */
static void
human(double v, int bytes, char *b, size_t n)
{
	if (bytes) {
		if (v >= 1073741824.0)
			snprintf(b, n, "%.3g GiB", v / 1073741824.0);
		else if (v >= 1048576.0)
			snprintf(b, n, "%.4g MiB", v / 1048576.0);
		else if (v >= 1024.0)
			snprintf(b, n, "%.4g KiB", v / 1024.0);
		else
			snprintf(b, n, "%.0f B", v);
		return;
	}
	if (v >= 1e9)
		snprintf(b, n, "%.4g s", v / 1e9);
	else if (v >= 1e6)
		snprintf(b, n, "%.4g ms", v / 1e6);
	else if (v >= 1e3)
		snprintf(b, n, "%.4g us", v / 1e3);
	else
		snprintf(b, n, "%.4g ns", v);
}

/* The headline figure of a run and its p20/p80, from timing or
 * measurements (latency in ns, else peak memory in bytes). */
static void
run_figures(struct json_object *spec, char *med, char *spread, size_t n)
{
	struct json_object *lat = path(spec, "timing", "latencyNs", NULL), *ms;
	double m = NAN, p20 = NAN, p80 = NAN, d;
	int bytes = 0;

	if (lat != NULL) {
		if (api_json_number(json_object_object_get(lat, "median"), &d))
			m = d;
		if (api_json_number(json_object_object_get(lat, "p20"), &d))
			p20 = d;
		if (api_json_number(json_object_object_get(lat, "p80"), &d))
			p80 = d;
	}
	ms = json_object_object_get(spec, "measurements");
	for (size_t i = 0; ms != NULL && json_object_is_type(ms, json_type_array)
	    && i < json_object_array_length(ms); i++) {
		struct json_object *e = json_object_array_get_idx(ms, i);
		const char *metric = json_object_get_string(
		    json_object_object_get(e, "metric"));
		const char *stat = json_object_get_string(
		    json_object_object_get(e, "statistic"));
		const char *unit = json_object_get_string(
		    json_object_object_get(e, "unit"));
		double f = 1;

		if (metric == NULL || stat == NULL || unit == NULL ||
		    !api_json_number(json_object_object_get(e, "value"), &d))
			continue;
		if (strcmp(metric, "latency") == 0 && !bytes) {
			f = strcmp(unit, "us") == 0 ? 1e3 : strcmp(unit, "ms") == 0 ?
			    1e6 : strcmp(unit, "s") == 0 ? 1e9 : 1;
		} else if (strcmp(metric, "peak_memory") == 0 && lat == NULL) {
			bytes = 1;
			f = strcmp(unit, "KiB") == 0 ? 1024.0 :
			    strcmp(unit, "MiB") == 0 ? 1048576.0 :
			    strcmp(unit, "GiB") == 0 ? 1073741824.0 : 1;
		} else {
			continue;
		}
		if (strcmp(stat, "median") == 0 && isnan(m))
			m = d * f;
		else if (strcmp(stat, "p20") == 0 && isnan(p20))
			p20 = d * f;
		else if (strcmp(stat, "p80") == 0 && isnan(p80))
			p80 = d * f;
	}
	med[0] = spread[0] = '\0';
	if (!isnan(m))
		human(m, bytes, med, n);
	if (!isnan(p20) && !isnan(p80)) {
		char a[32], b[32];

		human(p20, bytes, a, sizeof(a));
		human(p80, bytes, b, sizeof(b));
		snprintf(spread, n, "%s - %s", a, b);
	}
}

void
api_table_row(ki_buf *out, const api_kind *k, const store_obj *o,
	int include, double now, int first)
{
	struct json_object *meta, *spec, *status, *labels;
	const char *created;
	char med[96], spread[96];
	char dg[API_DIGEST_STRLEN + 1];
	double t = now;
	ki_buf age;

	meta = api_json_parse_len(o->json + o->meta_off, o->meta_len);
	spec = api_json_parse_len(o->json + o->spec_off, o->spec_len);
	status = api_json_parse_len(o->json + o->status_off, o->status_len);
	labels = path(meta, "labels", NULL, NULL);
	created = json_object_get_string(path(meta, "creationTimestamp", NULL,
	    NULL));
	ki_buf_init(&age);
	if (created != NULL && api_parse_time(created, &t))
		api_human_duration(now - t, &age);
	api_digest_format(o->digest, dg);
	ki_buf_puts(out, first ? ",{\"cells\":[" : "{\"cells\":[");
	ki_buf_json_string(out, o->name, o->name_len);
	switch (k->id) {
	case API_RUN:
		run_figures(spec, med, spread, sizeof(med));
		cell_str(out, path(labels, "kernel", NULL, NULL));
		cell_str(out, path(labels, "pass", NULL, NULL));
		cell_str(out, path(labels, "provider", NULL, NULL));
		cell_str(out, path(labels, "gpu", NULL, NULL));
		cell_str(out, path(labels, "dtype", NULL, NULL));
		cell_text(out, med[0] ? med : NULL);
		cell_text(out, spread[0] ? spread : NULL);
		cell_str(out, path(status, "plausibility", "verdict", NULL));
		cell_text(out, age.data);
		cell_str(out, path(spec, "observedAt", NULL, NULL));
		cell_text(out, dg);
		break;
	case API_PROTOCOL:
		cell_str(out, path(spec, "measurement", "timer", NULL));
		cell_str(out, path(spec, "measurement", "primaryStatistic", NULL));
		cell_str(out, path(spec, "harness", "name", NULL));
		cell_text(out, age.data);
		cell_text(out, dg);
		break;
	case API_ENVIRONMENT:
		cell_str(out, path(spec, "hardware", "vendor", NULL));
		cell_str(out, path(spec, "hardware", "product", NULL));
		cell_str(out, path(spec, "hardware", "formFactor", NULL));
		cell_str(out, path(spec, "hardware", "architecture", NULL));
		cell_text(out, age.data);
		cell_text(out, dg);
		break;
	case API_WORKLOAD: {
		struct json_object *params = path(spec, "parameters", NULL, NULL);
		ki_buf p;

		ki_buf_init(&p);
		if (params != NULL && json_object_is_type(params, json_type_object)) {
			json_object_object_foreach(params, key, val) {
				ki_buf_printf(&p, "%s%s=%s", p.len ? " " : "", key,
				    json_object_get_string(val));
			}
		}
		cell_str(out, path(spec, "kernel", NULL, NULL));
		cell_str(out, path(spec, "pass", NULL, NULL));
		cell_str(out, path(spec, "dtype", NULL, NULL));
		cell_text(out, p.data ? p.data : "");
		cell_text(out, age.data);
		cell_text(out, dg);
		ki_buf_free(&p);
		break;
	}
	case API_IMPLEMENTATION:
		cell_str(out, path(spec, "provider", NULL, NULL));
		cell_str(out, path(spec, "framework", NULL, NULL));
		cell_str(out, path(spec, "version", NULL, NULL));
		cell_text(out, age.data);
		cell_text(out, dg);
		break;
	case API_THRESHOLD: {
		const char *const nums[] = { "limit", "window", "minSample" };

		cell_str(out, path(spec, "selector", NULL, NULL));
		cell_str(out, path(spec, "test", NULL, NULL));
		for (size_t i = 0; i < 3; i++) {
			struct json_object *v = path(spec, nums[i], NULL, NULL);

			cell_text(out, v != NULL ? json_object_get_string(v) :
			    "default");
		}
		cell_text(out, age.data);
		break;
	}
	default:
		cell_str(out, path(spec, "runName", NULL, NULL));
		cell_str(out, path(status, "phase", NULL, NULL));
		cell_str(out, path(status, "verdict", NULL, NULL));
		{
			double d;

			if (api_json_number(path(status, "reference", "median", NULL),
			    &d)) {
				human(d, 0, med, sizeof(med));
				cell_text(out, med);
			} else {
				cell_text(out, NULL);
			}
		}
		cell_text(out, age.data);
		break;
	}
	ki_buf_putc(out, ']');
	if (include == API_INCLUDE_OBJECT) {
		ki_buf_puts(out, ",\"object\":");
		ki_buf_append(out, o->json, o->json_len);
	} else if (include == API_INCLUDE_METADATA) {
		ki_buf_puts(out, ",\"object\":{\"kind\":\"PartialObjectMetadata\","
		    "\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":");
		ki_buf_append(out, o->json + o->meta_off, o->meta_len);
		ki_buf_putc(out, '}');
	}
	ki_buf_putc(out, '}');
	ki_buf_free(&age);
	if (meta != NULL)
		json_object_put(meta);
	if (spec != NULL)
		json_object_put(spec);
	if (status != NULL)
		json_object_put(status);
}
