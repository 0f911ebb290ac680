/* harness/liger_export.c — a stored Liger run written back as the CSV row
 * it came from. */
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

/* ====================================================================== */
/* Run → CSV row                                                           */

/* A string member at a dotted path of o (borrowed), or NULL. */
static const char *
get_path_str(struct json_object *o, const char *a, const char *b,
	const char *c)
{
	const char *keys[3];
	int i;

	keys[0] = a;
	keys[1] = b;
	keys[2] = c;
	for (i = 0; i < 3 && keys[i] != NULL; i++)
		if (o == NULL || !json_object_object_get_ex(o, keys[i], &o))
			return NULL;
	if (o == NULL || !json_object_is_type(o, json_type_string))
		return NULL;
	return json_object_get_string(o);
}

static const char *
annotation(struct json_object *run, struct json_object *hint,
	const char *key)
{
	const char *s = get_path_str(run, "metadata", "annotations", key);

	if (s == NULL && hint != NULL)
		s = get_path_str(hint, "metadata", "annotations", key);
	return s;
}

/* Finds the integer that follows parameter `canon` in a workload slug
 * ("batch8-hidden4096-…"), where it begins a '-'-separated segment.
 * Writes its text into out. Returns 0 or KI_ENOTFOUND. */
static int
slug_find(const char *slug, const char *canon, char out[32])
{
	size_t n = strlen(canon);
	const char *p = slug;

	while ((p = strstr(p, canon)) != NULL) {
		if ((p == slug || p[-1] == '-') &&
		    (isdigit((unsigned char)p[n]) ||
		    (p[n] == '-' && isdigit((unsigned char)p[n + 1])))) {
			size_t k = p[n] == '-' ? 1 : 0;

			while (isdigit((unsigned char)p[n + k]) && k < 30)
				k++;
			if (p[n + k] != '\0' && p[n + k] != '-')
				return KI_ENOTFOUND;
			memcpy(out, p + n, k);
			out[k] = '\0';
			return KI_OK;
		}
		p += n;
	}
	return KI_ENOTFOUND;
}

int
liger_run_to_csv(struct json_object *run, struct json_object *hint,
	ki_buf *out, ki_buf *err)
{
	const char *src, *eid, *version, *xname, *xlabel, *xvalue, *config;
	const char *gpu_name, *timestamp;
	struct json_object *metrics = NULL;
	const char *cols[LIGER_NCOLUMNS];
	char *seg[8], *copy = NULL, *p;
	char ys[3][32], xbuf[32], ts[20];
	int nseg = 0, memory, k, rc = KI_EINVAL;
	const char *keys_ms[3] = { "ms_50", "ms_20", "ms_80" };
	const char *keys_mb[3] = { "mb_50", "mb_20", "mb_80" };

	src = get_path_str(run, "spec", "sourceNative", "source");
	eid = get_path_str(run, "spec", "sourceNative", "externalId");
	if (src == NULL || strcmp(src, LIGER_SOURCE) != 0 || eid == NULL) {
		if (err != NULL)
			ki_buf_puts(err, "not a run from " LIGER_SOURCE);
		return KI_EINVAL;
	}
	copy = strdup(eid);
	if (copy == NULL)
		return KI_ENOMEM;
	for (p = copy; nseg < 8;) {
		seg[nseg++] = p;
		p = strchr(p, '/');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
	memory = nseg == 7 && strcmp(seg[2], "memory") == 0;
	if (p != NULL || (nseg != 6 && !memory)) {
		if (err != NULL)
			ki_buf_printf(err, "externalId '%s' is not in the "
			    "importer's form", eid);
		goto out;
	}
	if (memory)
		memmove(&seg[2], &seg[3], 4 * sizeof(seg[0]));
	for (k = 0; k < 3; k++)
		lg_seg_unescape(seg[k]);
	/* seg: kernel, pass, provider, gpu slug, workload slug, timestamp */
	if (!json_object_object_get_ex(run, "spec", &metrics) ||
	    !json_object_object_get_ex(metrics, "sourceNative", &metrics) ||
	    !json_object_object_get_ex(metrics, "metrics", &metrics)) {
		if (err != NULL)
			ki_buf_puts(err, "no sourceNative.metrics");
		goto out;
	}
	for (k = 0; k < 3; k++) {
		struct json_object *v;

		if (!json_object_object_get_ex(metrics,
		    memory ? keys_mb[k] : keys_ms[k], &v) ||
		    (!json_object_is_type(v, json_type_double) &&
		    !json_object_is_type(v, json_type_int)) ||
		    liger_format_double(json_object_get_double(v), ys[k]) < 0) {
			if (err != NULL)
				ki_buf_printf(err, "sourceNative.metrics.%s is "
				    "missing or not a number",
				    memory ? keys_mb[k] : keys_ms[k]);
			goto out;
		}
	}
	if (strlen(seg[5]) != 19) {
		if (err != NULL)
			ki_buf_printf(err, "timestamp '%s' in the externalId is "
			    "not YYYY-MM-DD-HH-MM-SS", seg[5]);
		goto out;
	}
	snprintf(ts, sizeof(ts), "%.10s %.2s:%.2s:%.2s", seg[5], seg[5] + 11,
	    seg[5] + 14, seg[5] + 17);
	timestamp = get_path_str(run, "metadata", "annotations",
	    LIGER_ANN_TIMESTAMP);

	gpu_name = annotation(run, hint, LIGER_ANN_GPU_NAME);
	if (gpu_name == NULL) {
		const liger_gpu *g = liger_gpu_by_slug(seg[3]);

		gpu_name = g != NULL ? g->gpu_name : NULL;
	}
	xname = annotation(run, hint, LIGER_ANN_X_NAME);
	xlabel = annotation(run, hint, LIGER_ANN_X_LABEL);
	config = annotation(run, hint, LIGER_ANN_CONFIG);
	xvalue = get_path_str(run, "metadata", "annotations",
	    LIGER_ANN_X_VALUE);
	if (xvalue == NULL && xname != NULL && slug_find(seg[4],
	    liger_canonical_param(seg[0], xname), xbuf) == KI_OK)
		xvalue = xbuf;
	if (gpu_name == NULL || xname == NULL || xlabel == NULL ||
	    config == NULL || xvalue == NULL) {
		if (err != NULL)
			ki_buf_printf(err, "cannot recover the %s of externalId "
			    "'%s' (no annotations, and no run of the same sweep "
			    "has them)", gpu_name == NULL ? "gpu_name" :
			    xname == NULL ? "x_name" : xlabel == NULL ?
			    "x_label" : config == NULL ?
			    "extra_benchmark_config_str" : "x_value", eid);
		goto out;
	}
	version = get_path_str(run, "metadata", "labels", "liger_version");
	if (version == NULL)
		version = get_path_str(run, "metadata", "annotations",
		    LIGER_ANN_VERSION);

	cols[LIGER_COL_KERNEL_NAME] = seg[0];
	cols[LIGER_COL_KERNEL_PROVIDER] = seg[2];
	cols[LIGER_COL_KERNEL_OPERATION_MODE] = seg[1];
	cols[LIGER_COL_METRIC_NAME] = memory ? "memory" : "speed";
	cols[LIGER_COL_METRIC_UNIT] = memory ? "MB" : "ms";
	cols[LIGER_COL_X_NAME] = xname;
	cols[LIGER_COL_X_LABEL] = xlabel;
	cols[LIGER_COL_X_VALUE] = xvalue;
	cols[LIGER_COL_Y_VALUE_50] = ys[0];
	cols[LIGER_COL_Y_VALUE_20] = ys[1];
	cols[LIGER_COL_Y_VALUE_80] = ys[2];
	cols[LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR] = config;
	cols[LIGER_COL_GPU_NAME] = gpu_name;
	cols[LIGER_COL_TIMESTAMP] = timestamp != NULL ? timestamp : ts;
	cols[LIGER_COL_LIGER_VERSION] = version != NULL ? version : "";
	for (k = 0; k < LIGER_NCOLUMNS; k++) {
		if (k > 0)
			ki_buf_putc(out, ',');
		liger_csv_put_field(out, cols[k], strlen(cols[k]));
	}
	ki_buf_puts(out, "\r\n");
	rc = out->oom ? KI_ENOMEM : KI_OK;
out:
	free(copy);
	return rc;
}
