/* harness/liger_row.c — one CSV row of Liger's benchmark data checked and
 * normalized: columns, figures, parameters, dtype, GPU, ids. A row is
 * refused only when it is not a record of the header's shape or its figures
 * are not numbers; what the importer does not know (a mode, a dtype, a GPU,
 * a config it cannot read) is kept as written and named in r->unknown. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jcs.h"
#include "harness/liger_int.h"

void
lg_row_init(row *r)
{
	memset(r, 0, sizeof(*r));
	ki_buf_init(&r->gpu_text);
	ki_buf_init(&r->dtype_short);
	ki_buf_init(&r->sweep);
	ki_buf_init(&r->kernel);
	ki_buf_init(&r->provider);
	ki_buf_init(&r->slug);
	ki_buf_init(&r->eid);
	ki_buf_init(&r->name);
	ki_buf_init(&r->unknown);
}

void
lg_row_free(row *r)
{
	json_object_put(r->xval);
	json_object_put(r->params);
	ki_buf_free(&r->gpu_text);
	ki_buf_free(&r->dtype_short);
	ki_buf_free(&r->sweep);
	ki_buf_free(&r->kernel);
	ki_buf_free(&r->provider);
	ki_buf_free(&r->slug);
	ki_buf_free(&r->eid);
	ki_buf_free(&r->name);
	ki_buf_free(&r->unknown);
	r->xval = NULL;
	r->params = NULL;
}

/* Reports a row problem into err as "line N: column C: …". Returns
 * KI_EINVAL. */
static int row_fail(ki_buf *err, const row *r, int col, const char *fmt,
	...) __attribute__((format(printf, 4, 5)));

static int
row_fail(ki_buf *err, const row *r, int col, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return KI_EINVAL;
	ki_buf_printf(err, "line %zu: ", r->line);
	if (col >= 0)
		ki_buf_printf(err, "column %s: ", lg_column_names[col]);
	va_start(ap, fmt);
	ki_buf_vprintf(err, fmt, ap);
	va_end(ap);
	return KI_EINVAL;
}

/* Notes something the index does not know about the row. */
static void row_unknown(row *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
row_unknown(row *r, const char *fmt, ...)
{
	va_list ap;

	if (r->unknown.len > 0)
		ki_buf_puts(&r->unknown, "; ");
	va_start(ap, fmt);
	ki_buf_vprintf(&r->unknown, fmt, ap);
	va_end(ap);
}

/* "YYYY-MM-DD HH:MM:SS" (or with a 'T', and fractional seconds, which are
 * dropped) → observedAt and the externalId's slug. */
static int
parse_timestamp(const char *s, char observed[32], char slug[24])
{
	static const char shape[] = "dddd-dd-dd dd:dd:dd";
	int y, mo, d, h, mi, se;
	size_t i, n = strlen(s);

	if (n < sizeof(shape) - 1)
		return KI_EINVAL;
	for (i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) :
		    s[i] != shape[i] && !(i == 10 && s[i] == 'T'))
			return KI_EINVAL;
	}
	if (n > sizeof(shape) - 1) {
		if (s[i] != '.' || n == i + 1)
			return KI_EINVAL;
		for (i++; i < n; i++)
			if (!isdigit((unsigned char)s[i]))
				return KI_EINVAL;
	}
	y = atoi(s);
	mo = atoi(s + 5);
	d = atoi(s + 8);
	h = atoi(s + 11);
	mi = atoi(s + 14);
	se = atoi(s + 17);
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || se > 60)
		return KI_EINVAL;
	/* Liger writes local time without a zone; it is taken as UTC. */
	memcpy(observed, s, 19);
	observed[10] = 'T';
	memcpy(observed + 19, ".000Z", 6);
	for (i = 0; i < 19; i++)
		slug[i] = s[i] == ' ' || s[i] == ':' || s[i] == 'T' ? '-' : s[i];
	slug[19] = '\0';
	return KI_OK;
}

/* Adds parameter `canon` = v (consumed) to r->params. When another
 * spelling already gave the parameter a different value, both are kept:
 * this one under its own spelling `raw` (or raw~2, raw~3, … should that be
 * taken too). Returns 0 or KI_ENOMEM. */
static int
row_add_param(row *r, const char *canon, const char *raw,
	struct json_object *v)
{
	struct json_object *old;
	char alt[300];
	int k;

	if (!json_object_object_get_ex(r->params, canon, &old))
		return lg_put(r->params, canon, v);
	if (json_object_equal(old, v)) {
		json_object_put(v);
		return KI_OK;
	}
	if (!json_object_object_get_ex(r->params, raw, &old))
		return lg_put(r->params, raw, v);
	if (json_object_equal(old, v)) {
		json_object_put(v);
		return KI_OK;
	}
	for (k = 2; k < 1000; k++) {
		snprintf(alt, sizeof(alt), "%.280s~%d", raw, k);
		if (!json_object_object_get_ex(r->params, alt, &old))
			return lg_put(r->params, alt, v);
		if (json_object_equal(old, v)) {
			json_object_put(v);
			return KI_OK;
		}
	}
	json_object_put(v);
	return KI_OK;
}

static int
only_space(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	return *s == '\0';
}

/* Sets the dtype from the config's "dtype" value. */
static void
row_dtype(row *r, struct json_object *val)
{
	const dtype_info *di;
	const char *s, *schema;

	if (!json_object_is_type(val, json_type_string)) {
		r->dtype = "unknown";
		ki_buf_puts(&r->dtype_short, "unknown");
		row_unknown(r, "dtype %s is not a string",
		    json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN));
		return;
	}
	s = json_object_get_string(val);
	di = lg_dtype_by_torch(s);
	if (di != NULL) {
		r->dtype = di->name;
		ki_buf_puts(&r->dtype_short, di->short_name);
		return;
	}
	schema = lg_dtype_schema_name(s);
	if (schema != NULL) {
		r->dtype = schema;
		ki_buf_puts(&r->dtype_short, schema);
		return;
	}
	r->dtype = "unknown";
	lg_seg_escape(&r->dtype_short, strncmp(s, "torch.", 6) == 0 ? s + 6 : s);
	if (r->dtype_short.len == 0)
		ki_buf_puts(&r->dtype_short, "unknown");
	row_unknown(r, "dtype '%s'", s);
}

/* A config value as a workload parameter: numbers, booleans and strings as
 * they are; an object or array as its JSON text; a non-finite number as
 * its text. NULL when out of memory. */
static struct json_object *
param_value(struct json_object *val)
{
	enum json_type t = json_object_get_type(val);

	if (t == json_type_object || t == json_type_array)
		return json_object_new_string(json_object_to_json_string_ext(val,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	if (t == json_type_double && !isfinite(json_object_get_double(val)))
		return json_object_new_string(json_object_to_json_string(val));
	return json_object_get(val);
}

/* Reads extra_benchmark_config_str into r->params and r->dtype. A config
 * that is not a JSON object is kept only in the run's annotation. */
static int
row_config(row *r)
{
	const char *text = r->col[LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR];
	struct json_object *cfg = NULL;
	struct json_tokener *tok = NULL;
	enum json_tokener_error jerr;
	ki_buf dup;
	int rc = KI_OK, d;

	ki_buf_init(&dup);
	if (only_space(text) || strcmp(text, "null") == 0)
		return KI_OK;
	tok = json_tokener_new();
	if (tok == NULL)
		return KI_ENOMEM;
	cfg = json_tokener_parse_ex(tok, text, (int)strlen(text));
	jerr = json_tokener_get_error(tok);
	if (cfg == NULL || jerr != json_tokener_success ||
	    !only_space(text + json_tokener_get_parse_end(tok)) ||
	    !json_object_is_type(cfg, json_type_object)) {
		row_unknown(r, "extra_benchmark_config_str is not a JSON object "
		    "(kept as written)");
		goto out;
	}
	d = api_json_find_duplicate_key(text, strlen(text), &dup);
	if (d < 0) {
		rc = d;
		goto out;
	}
	if (d == 1)
		row_unknown(r, "extra_benchmark_config_str holds the key %s twice "
		    "(the last one is used)", dup.data != NULL ? dup.data : "?");
	json_object_object_foreach(cfg, key, val) {
		struct json_object *v;

		if (strcmp(key, "dtype") == 0) {
			if (!json_object_is_type(val, json_type_null))
				row_dtype(r, val);
			continue;
		}
		/* Liger's name of the swept key: spec.sweep says it. */
		if (strcmp(key, "sweep_dim") == 0 ||
		    json_object_is_type(val, json_type_null))
			continue;
		v = param_value(val);
		if (v == NULL) {
			rc = KI_ENOMEM;
			goto out;
		}
		rc = row_add_param(r, liger_canonical_param(
		    r->col[LIGER_COL_KERNEL_NAME], key), key, v);
		if (rc != KI_OK)
			goto out;
	}
out:
	ki_buf_free(&dup);
	json_object_put(cfg);
	json_tokener_free(tok);
	return rc;
}

/* Builds the workload slug, the externalId and the run's full name. */
static int
row_ids(row *r)
{
	const char **keys = NULL;
	size_t n = 0, i;
	int rc = KI_OK;

	keys = calloc((size_t)json_object_object_length(r->params) + 1,
	    sizeof(*keys));
	if (keys == NULL)
		return KI_ENOMEM;
	json_object_object_foreach(r->params, key, val) {
		(void)val;
		keys[n++] = key;
	}
	qsort(keys, n, sizeof(keys[0]), lg_cmp_str);
	for (i = 0; i < n && rc == KI_OK; i++) {
		struct json_object *v = NULL;

		json_object_object_get_ex(r->params, keys[i], &v);
		lg_seg_escape(&r->slug, keys[i]);
		rc = lg_slug_value(&r->slug, v);
		ki_buf_putc(&r->slug, '-');
	}
	free(keys);
	if (rc != KI_OK)
		return rc;
	ki_buf_append(&r->slug, r->dtype_short.data, r->dtype_short.len);

	lg_seg_escape(&r->eid, r->col[LIGER_COL_KERNEL_NAME]);
	ki_buf_putc(&r->eid, '/');
	lg_seg_escape(&r->eid, r->col[LIGER_COL_KERNEL_OPERATION_MODE]);
	ki_buf_puts(&r->eid, r->memory ? "/memory/" : "/");
	lg_seg_escape(&r->eid, r->col[LIGER_COL_KERNEL_PROVIDER]);
	ki_buf_printf(&r->eid, "/%s/%s/%s", r->gpu.slug, r->slug.data,
	    r->ts_slug);
	ki_buf_puts(&r->name, "liger-");
	lg_name_append(&r->name, r->eid.data);
	if (r->slug.oom || r->eid.oom || r->name.oom)
		return KI_ENOMEM;
	return KI_OK;
}

/* The GPU: the table's row, or one made up from the name as written. */
static int
row_gpu(row *r)
{
	const char *g = r->col[LIGER_COL_GPU_NAME];
	const liger_gpu *known = liger_gpu_by_name(g);
	const char *vendor = "other", *shortn = g;
	size_t off[3];

	if (known != NULL) {
		r->gpu = *known;
		r->gpu_known = 1;
		return KI_OK;
	}
	if (strncasecmp(g, "NVIDIA ", 7) == 0) {
		vendor = "nvidia";
		shortn = g + 7;
	} else if (strncasecmp(g, "AMD ", 4) == 0) {
		vendor = "amd";
		shortn = g + 4;
	} else if (strncasecmp(g, "Intel", 5) == 0) {
		vendor = "intel";
	}
	off[0] = 0;
	if (lg_name_unique(&r->gpu_text, *g != '\0' ? g : "unknown-gpu",
	    LG_GPU_SLUG_MAX) != KI_OK)
		return KI_ENOMEM;
	ki_buf_putc(&r->gpu_text, '\0');
	off[1] = r->gpu_text.len;
	/* The schema's product: at most 128 characters, not empty. */
	ki_buf_printf(&r->gpu_text, "%.128s", *g != '\0' ? g : "unknown");
	ki_buf_putc(&r->gpu_text, '\0');
	off[2] = r->gpu_text.len;
	ki_buf_puts(&r->gpu_text, *shortn != '\0' ? shortn : "unknown GPU");
	if (r->gpu_text.oom)
		return KI_ENOMEM;
	r->gpu.gpu_name = g;
	r->gpu.slug = r->gpu_text.data + off[0];
	r->gpu.product = r->gpu_text.data + off[1];
	r->gpu.short_name = r->gpu_text.data + off[2];
	r->gpu.vendor = vendor;
	r->gpu.form_factor = NULL;
	r->gpu.architecture = NULL;
	row_unknown(r, "GPU '%s'", g);
	return KI_OK;
}

/* An identifier for the schema ([a-z0-9] at both ends, [a-z0-9_.-]
 * between) made from s: lower-cased, other characters turned into '_'. */
static void
ident_of(ki_buf *b, const char *s)
{
	size_t start = b->len;

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)tolower((unsigned char)*s);

		ki_buf_putc(b, isalnum(ch) || ch == '_' || ch == '-' || ch == '.' ?
		    (char)ch : '_');
	}
	if (b->oom)
		return;
	while (b->len > start && !isalnum((unsigned char)b->data[b->len - 1]))
		b->len--;
	b->data[b->len] = '\0';
	while (b->len > start && !isalnum((unsigned char)b->data[start])) {
		memmove(b->data + start, b->data + start + 1, b->len - start);
		b->len--;
	}
	if (b->len > start + 128)
		b->len = start + 128;
	while (b->len > start && !isalnum((unsigned char)b->data[b->len - 1]))
		b->len--;
	b->data[b->len] = '\0';
	if (b->len == start)
		ki_buf_puts(b, "unknown");
}

/* The mode: forward, backward and full as they are; no-grad-forward a
 * forward pass; anything else a pass the index does not know. */
static void
row_mode(row *r)
{
	const char *m = r->col[LIGER_COL_KERNEL_OPERATION_MODE];

	if (strcmp(m, "forward") == 0 || strcmp(m, "backward") == 0 ||
	    strcmp(m, "full") == 0) {
		r->pass = strcmp(m, "forward") == 0 ? "forward" :
		    strcmp(m, "backward") == 0 ? "backward" : "full";
		r->mode_known = 1;
	} else if (strcmp(m, "no-grad-forward") == 0 && !r->memory) {
		r->pass = "forward";
		r->mode_known = 1;
	} else {
		r->pass = "unknown";
		row_unknown(r, "operation mode '%s'", m);
	}
}

int
lg_row_parse(const int hdr_idx[LIGER_NCOLUMNS], size_t nheader,
	const liger_record *rec, row *r, ki_buf *err)
{
	const char *metric, *unit, *xs, *xname;
	const char *cols_y[3];
	double *ys[3];
	int64_t xi;
	double xd;
	int k, rc;

	r->line = rec->line;
	if (rec->nfields != nheader)
		return row_fail(err, r, -1, "the row has %zu field%s, the "
		    "header %zu", rec->nfields, rec->nfields == 1 ? "" : "s",
		    nheader);
	for (k = 0; k < LIGER_NCOLUMNS; k++) {
		r->col[k] = rec->field[hdr_idx[k]];
		if (strlen(r->col[k]) != rec->len[hdr_idx[k]])
			return row_fail(err, r, k, "holds a NUL byte");
	}

	metric = r->col[LIGER_COL_METRIC_NAME];
	unit = r->col[LIGER_COL_METRIC_UNIT];
	if (strcmp(metric, "speed") == 0 && strcmp(unit, "ms") == 0)
		r->memory = 0;
	else if (strcmp(metric, "memory") == 0 && strcmp(unit, "MB") == 0)
		r->memory = 1;
	else
		return row_fail(err, r, LIGER_COL_METRIC_NAME, "'%s' in '%s' is "
		    "neither speed in ms nor memory in MB: a figure in a unit "
		    "the index does not know", metric, unit);

	cols_y[0] = r->col[LIGER_COL_Y_VALUE_50];
	cols_y[1] = r->col[LIGER_COL_Y_VALUE_20];
	cols_y[2] = r->col[LIGER_COL_Y_VALUE_80];
	ys[0] = &r->y50;
	ys[1] = &r->y20;
	ys[2] = &r->y80;
	for (k = 0; k < 3; k++) {
		if (lg_parse_double(cols_y[k], ys[k]) != KI_OK || *ys[k] < 0)
			return row_fail(err, r, LIGER_COL_Y_VALUE_50 + k, "'%s' "
			    "is not a finite non-negative number", cols_y[k]);
	}
	if (!(r->y20 <= r->y50 && r->y50 <= r->y80))
		return row_fail(err, r, LIGER_COL_Y_VALUE_50, "the quantiles "
		    "are out of order (p20 %s, median %s, p80 %s)", cols_y[1],
		    cols_y[0], cols_y[2]);
	if (parse_timestamp(r->col[LIGER_COL_TIMESTAMP], r->observed,
	    r->ts_slug) != KI_OK)
		return row_fail(err, r, LIGER_COL_TIMESTAMP, "'%s' is not "
		    "YYYY-MM-DD HH:MM:SS", r->col[LIGER_COL_TIMESTAMP]);

	r->kinfo = lg_kernel_by_name(r->col[LIGER_COL_KERNEL_NAME]);
	if (r->kinfo == NULL)
		row_unknown(r, "kernel '%s'", r->col[LIGER_COL_KERNEL_NAME]);
	ident_of(&r->kernel, r->col[LIGER_COL_KERNEL_NAME]);
	ident_of(&r->provider, r->col[LIGER_COL_KERNEL_PROVIDER]);
	row_mode(r);
	rc = row_gpu(r);
	if (rc != KI_OK)
		return rc;
	r->version_label = lg_label_value_ok(r->col[LIGER_COL_LIGER_VERSION]);

	xs = r->col[LIGER_COL_X_VALUE];
	if (lg_parse_int(xs, &xi) == KI_OK)
		r->xval = json_object_new_int64(xi);
	else if (lg_parse_double(xs, &xd) == KI_OK)
		r->xval = lg_new_double(xd);
	else
		r->xval = json_object_new_string(xs);
	r->params = json_object_new_object();
	if (r->xval == NULL || r->params == NULL)
		return KI_ENOMEM;
	xname = r->col[LIGER_COL_X_NAME];
	ki_buf_puts(&r->sweep, liger_canonical_param(
	    r->col[LIGER_COL_KERNEL_NAME], *xname != '\0' ? xname : "x"));
	if (r->sweep.oom)
		return KI_ENOMEM;
	/* The swept value first: the config holds the script's default for
	 * the key that x overrides. */
	rc = row_add_param(r, r->sweep.data, *xname != '\0' ? xname : "x",
	    json_object_get(r->xval));
	if (rc == KI_OK)
		rc = row_config(r);
	/* Two modes the index does not know are two workloads. */
	if (rc == KI_OK && !r->mode_known) {
		struct json_object *m = json_object_new_string(
		    r->col[LIGER_COL_KERNEL_OPERATION_MODE]);

		rc = m == NULL ? KI_ENOMEM : row_add_param(r, "operation_mode",
		    "operation_mode", m);
	}
	if (rc != KI_OK)
		return rc;
	if (r->dtype == NULL) {
		if (r->kinfo != NULL && r->kinfo->default_dtype != NULL) {
			const dtype_info *di =
			    lg_dtype_by_torch(r->kinfo->default_dtype);

			r->dtype = di->name;
			ki_buf_puts(&r->dtype_short, di->short_name);
		} else {
			r->dtype = "unknown";
			ki_buf_puts(&r->dtype_short, "unknown");
			row_unknown(r, "dtype (the row names none)");
		}
	}
	rc = row_ids(r);
	if (rc == KI_OK && r->unknown.oom)
		rc = KI_ENOMEM;
	return rc;
}
