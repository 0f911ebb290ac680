/* physics/plausible.c — is a claimed figure physically possible? */
#include "physics/plausible.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ki.h"
#include "physics/costmodel.h"
#include "physics/gpu.h"

/* The string at o.a (b NULL) or o.a.b, or NULL. */
static const char *
str_at(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, a, &v))
		return NULL;
	if (b != NULL && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : NULL;
}

/* A finite JSON number's value in *out; 0 for anything else. */
static int
number(struct json_object *v, double *out)
{
	double d;

	switch (json_object_get_type(v)) {
	case json_type_int:
		d = (double)json_object_get_int64(v);
		if (d > 9.2e18)
			d = (double)json_object_get_uint64(v);
		break;
	case json_type_double:
		d = json_object_get_double(v);
		break;
	default:
		return 0;
	}
	if (!isfinite(d))
		return 0;
	*out = d;
	return 1;
}

/* "batch8-hidden4096-seq2048-vocab131072-fp32" -> parameters and dtype. */
static struct json_object *
workload_from_slug(const char *kernel, const char *pass, const char *slug)
{
	struct json_object *wl = json_object_new_object();
	struct json_object *params = json_object_new_object();
	char buf[512], *p, *tok;
	const char *dtype = NULL;

	if (wl == NULL || params == NULL) {
		json_object_put(wl);
		json_object_put(params);
		return NULL;
	}
	snprintf(buf, sizeof(buf), "%s", slug);
	p = buf;
	while ((tok = strsep(&p, "-")) != NULL) {
		size_t n = strlen(tok), i = n;
		char *end;
		double v;

		if (strcmp(tok, "fp32") == 0)
			dtype = "float32";
		else if (strcmp(tok, "fp16") == 0)
			dtype = "float16";
		else if (strcmp(tok, "bf16") == 0)
			dtype = "bfloat16";
		if (dtype != NULL && p == NULL)
			break;
		while (i > 0 && (isdigit((unsigned char)tok[i - 1]) ||
		    tok[i - 1] == '.'))
			i--;
		if (i == 0 || i == n)
			continue;
		v = strtod(tok + i, &end);
		if (*end != '\0')
			continue;
		tok[i] = '\0';
		if (v == floor(v) && fabs(v) < 9e15)
			json_object_object_add(params, tok,
			    json_object_new_int64((int64_t)v));
		else
			json_object_object_add(params, tok, json_object_new_double(v));
	}
	json_object_object_add(wl, "kernel", json_object_new_string(kernel));
	json_object_object_add(wl, "pass", json_object_new_string(pass));
	if (dtype != NULL)
		json_object_object_add(wl, "dtype", json_object_new_string(dtype));
	json_object_object_add(wl, "parameters", params);
	return wl;
}

struct json_object *
api_run_workload_from(struct json_object *spec, struct json_object *wl_ref,
	int *derived)
{
	const char *bench, *ext;
	char kernel[128], pass[32];
	const char *slash;
	char *seg[8], buf[600], *p;
	int n = 0;

	*derived = 0;
	if (wl_ref != NULL)
		return json_object_get(wl_ref);
	bench = str_at(spec, "sourceNative", "benchmark");
	ext = str_at(spec, "sourceNative", "externalId");
	if (bench == NULL || ext == NULL || (slash = strchr(bench, '/')) == NULL)
		return NULL;
	snprintf(kernel, sizeof(kernel), "%.*s", (int)(slash - bench), bench);
	snprintf(pass, sizeof(pass), "%s", slash + 1);
	/* <kernel>/<pass>/<provider>/<gpu>/<workload>/<time> */
	snprintf(buf, sizeof(buf), "%s", ext);
	p = buf;
	for (char *s; n < 8 && (s = strsep(&p, "/")) != NULL;)
		seg[n++] = s;
	if (n < 6)
		return NULL;
	*derived = 1;
	return workload_from_slug(kernel, pass, seg[n - 2]);
}

/* The run's median latency in ns, or peak memory in bytes (*memory). */
static int
claimed(struct json_object *spec, double *v, int *memory)
{
	struct json_object *lat, *ms;

	*memory = 0;
	if (json_object_object_get_ex(spec, "timing", &lat) &&
	    json_object_object_get_ex(lat, "latencyNs", &lat) &&
	    number(json_object_object_get(lat, "median"), v))
		return 1;
	if (!json_object_object_get_ex(spec, "measurements", &ms) ||
	    !json_object_is_type(ms, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		struct json_object *m = json_object_array_get_idx(ms, i);
		const char *metric = str_at(m, "metric", NULL);
		const char *stat = str_at(m, "statistic", NULL);
		const char *unit = str_at(m, "unit", NULL);
		double d, f;

		if (metric == NULL || stat == NULL || unit == NULL ||
		    strcmp(stat, "median") != 0 ||
		    !number(json_object_object_get(m, "value"), &d))
			continue;
		if (strcmp(metric, "latency") == 0) {
			f = strcmp(unit, "us") == 0 ? 1e3 : strcmp(unit, "ms") == 0 ?
			    1e6 : strcmp(unit, "s") == 0 ? 1e9 : 1;
			*v = d * f;
			return 1;
		}
		if (strcmp(metric, "peak_memory") == 0) {
			f = strcmp(unit, "KiB") == 0 ? 1024.0 :
			    strcmp(unit, "MiB") == 0 ? 1048576.0 :
			    strcmp(unit, "GiB") == 0 ? 1073741824.0 : 1;
			*v = d * f;
			*memory = 1;
			return 1;
		}
	}
	return 0;
}

void
api_plausibility_eval_specs(struct json_object *spec,
	struct json_object *wl_ref, struct json_object *env, api_plausibility *out)
{
	struct json_object *wl = NULL;
	const api_gpu *gpu = NULL;
	api_cost cost;
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(out->reason, sizeof(out->reason), "CannotModel");
	if (!claimed(spec, &out->claimed, &out->memory)) {
		snprintf(out->message, sizeof(out->message), "the run has no median "
		    "latency or peak memory to compare");
		return;
	}
	wl = api_run_workload_from(spec, wl_ref, &out->derived_workload);
	if (wl == NULL) {
		snprintf(out->message, sizeof(out->message), "the workload is not "
		    "stored yet and sourceNative does not name it");
		goto out;
	}
	if (env == NULL) {
		snprintf(out->message, sizeof(out->message), "the environment is not "
		    "stored yet: its GPU is unknown");
		goto out;
	}
	gpu = api_gpu_match_hardware(json_object_object_get(env, "hardware"));
	if (gpu == NULL) {
		snprintf(out->message, sizeof(out->message), "the GPU \"%.100s\" is "
		    "not in the table of datasheet peaks",
		    str_at(env, "hardware", "product") ?
		    str_at(env, "hardware", "product") : "");
		goto out;
	}
	rc = api_cost_estimate(str_at(wl, "kernel", NULL),
	    str_at(wl, "pass", NULL), str_at(wl, "dtype", NULL),
	    json_object_object_get(wl, "parameters"), &cost);
	if (rc != KI_OK) {
		snprintf(out->message, sizeof(out->message), rc == KI_ENOTFOUND ?
		    "no byte and FLOP model for the kernel \"%.60s\"" :
		    "the workload lacks what the model needs: %.60s",
		    rc == KI_ENOTFOUND ? (str_at(wl, "kernel", NULL) ?
		    str_at(wl, "kernel", NULL) : "") :
		    (cost.missing ? cost.missing : "a parameter"));
		goto out;
	}
	snprintf(out->gpu, sizeof(out->gpu), "%s", gpu->id);
	snprintf(out->model, sizeof(out->model), "%s", cost.model ? cost.model :
	    "");
	out->bytes = cost.bytes;
	out->flops = cost.flops + cost.vector_flops;
	out->known = 1;
	if (out->memory) {
		out->floor = cost.resident_bytes;
	} else {
		out->floor = api_cost_floor_seconds(&cost, gpu, NULL) * 1e9;
	}
	out->fraction = out->claimed > 0 ? out->floor / out->claimed : INFINITY;
	out->implausible = out->claimed < out->floor;
	if (out->implausible) {
		snprintf(out->reason, sizeof(out->reason), out->memory ?
		    "BelowResidentMemory" : "FasterThanPhysicalLimit");
		snprintf(out->message, sizeof(out->message), out->memory ?
		    "the claimed peak memory (%.0f bytes) is below the %.0f bytes "
		    "the workload's tensors occupy" :
		    "the claimed median (%.0f ns) is below the physical floor of "
		    "%.0f ns on %s", out->claimed, out->floor, gpu->name);
	} else {
		snprintf(out->reason, sizeof(out->reason), "WithinPhysicalLimit");
		snprintf(out->message, sizeof(out->message), out->memory ?
		    "the claimed peak memory is at least the resident size (%.1f%%)" :
		    "the claimed median reaches %.1f%% of the physical floor on %s",
		    out->fraction * 100, gpu->name);
	}
out:
	if (wl != NULL)
		json_object_put(wl);
}
