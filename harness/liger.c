/* harness/liger.c — Liger-Kernel benchmark CSV rows turned into kernelindex
 * bundles (run, protocol, environment, workload, implementation). */
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
/* The converter                                                           */

struct liger_conv {
	int idx[LIGER_NCOLUMNS];
	size_t nheader;
	int have_header;
};

int
liger_conv_new(liger_conv **out)
{
	liger_conv *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return KI_ENOMEM;
	*out = c;
	return KI_OK;
}

void
liger_conv_free(liger_conv *c)
{
	free(c);
}

int
liger_conv_header(liger_conv *c, const liger_record *hdr, ki_buf *err)
{
	size_t i;
	int k;

	for (k = 0; k < LIGER_NCOLUMNS; k++)
		c->idx[k] = -1;
	for (i = 0; i < hdr->nfields; i++) {
		const char *f = hdr->field[i];

		/* A UTF-8 byte-order mark may precede the first name. */
		if (i == 0 && strncmp(f, "\xef\xbb\xbf", 3) == 0)
			f += 3;
		for (k = 0; k < LIGER_NCOLUMNS; k++)
			if (strcmp(f, lg_column_names[k]) == 0 && c->idx[k] < 0)
				c->idx[k] = (int)i;
	}
	for (k = 0; k < LIGER_NCOLUMNS; k++) {
		if (c->idx[k] < 0) {
			if (err != NULL)
				ki_buf_printf(err, "line %zu: the header has no "
				    "column %s", hdr->line, lg_column_names[k]);
			return KI_EINVAL;
		}
	}
	c->nheader = hdr->nfields;
	c->have_header = 1;
	return KI_OK;
}

/* The run's name (see docs/liger.md, "Names"): a function of the row
 * alone, so that a row has one name whichever file it is read from, and
 * distinct rows (distinct externalIds) have distinct names. */
static int
run_name(const row *r, ki_buf *out)
{
	ki_buf_append(out, r->name.data, r->name.len);
	lg_name_cut(out, LIGER_RUN_NAME_MAX - 9);
	if (out->oom)
		return KI_ENOMEM;
	return lg_name_hash_suffix(out, r->eid.data, r->eid.len);
}

/* {"apiVersion", "kind", "metadata": {"name", "title"}, "spec": spec};
 * consumes spec. */
static struct json_object *
new_object(const char *kind, const char *name, const char *title,
	struct json_object *spec)
{
	struct json_object *o = json_object_new_object();
	struct json_object *meta = json_object_new_object();

	if (o == NULL || meta == NULL || spec == NULL)
		goto fail;
	if (lg_put_str(o, "apiVersion", LG_API_VER) != KI_OK ||
	    lg_put_str(o, "kind", kind) != KI_OK ||
	    lg_put_str(meta, "name", name) != KI_OK ||
	    lg_put_str(meta, "title", title) != KI_OK)
		goto fail;
	if (lg_put(o, "metadata", meta) != KI_OK) {
		meta = NULL;
		goto fail;
	}
	meta = NULL;
	if (lg_put(o, "spec", spec) != KI_OK)
		spec = NULL;
	else
		return o;
fail:
	json_object_put(o);
	json_object_put(meta);
	json_object_put(spec);
	return NULL;
}

static struct json_object *
build_protocol(const proto_info *p)
{
	struct json_object *spec = json_object_new_object();
	struct json_object *harness = json_object_new_object();
	struct json_object *meas = json_object_new_object();
	struct json_object *comp = json_object_new_object();
	int rc = KI_OK;

	if (spec == NULL || harness == NULL || meas == NULL || comp == NULL)
		goto fail;
	rc |= lg_put_str(harness, "name", "Liger-Kernel benchmark scripts");
	rc |= lg_put_str(harness, "repository",
	    "https://github.com/linkedin/Liger-Kernel");
	if (p->kind == PROTO_MEMORY) {
		/* No clock: a counter read after each of _test_memory's 10
		 * repetitions. */
		rc |= lg_put_str(meas, "method", "torch.cuda.max_memory_allocated");
		rc |= lg_put_str(meas, "primaryStatistic", "median");
		rc |= lg_put(meas, "repetitions", json_object_new_int(10));
	} else {
		rc |= lg_put_str(meas, "timer", "cuda_events");
		rc |= lg_put_str(meas, "primaryStatistic", "median");
	}
	rc |= lg_put_str(comp, "notes", p->notes);
	rc |= lg_put_str(comp, "family", "liger_kernel_bench");
	if (rc != KI_OK)
		goto fail;
	rc = lg_put(spec, "harness", harness);
	harness = NULL;
	rc |= lg_put(spec, "measurement", meas);
	meas = NULL;
	rc |= lg_put(spec, "comparability", comp);
	comp = NULL;
	if (rc != KI_OK)
		goto fail;
	return new_object("BenchmarkProtocol", p->name, p->title, spec);
fail:
	json_object_put(spec);
	json_object_put(harness);
	json_object_put(meas);
	json_object_put(comp);
	return NULL;
}

/* The protocol of a mode the importer does not know: what it measures is
 * not stated; the mode's name is part of the protocol's. */
static struct json_object *
build_mode_protocol(const row *r, enum proto_kind kind)
{
	const char *mode = r->col[LIGER_COL_KERNEL_OPERATION_MODE];
	struct json_object *obj = NULL;
	ki_buf raw, name, title, notes;
	proto_info pi;

	ki_buf_init(&raw);
	ki_buf_init(&name);
	ki_buf_init(&title);
	ki_buf_init(&notes);
	ki_buf_printf(&raw, "%s%s", kind == PROTO_MEMORY ?
	    "liger-bench-max-memory-mode-" : "liger-bench-do-bench-mode-",
	    mode);
	if (raw.oom || lg_name_unique(&name, raw.data, LIGER_NAME_MAX) != KI_OK)
		goto out;
	ki_buf_printf(&title, "Liger %sharness · mode %.100s",
	    kind == PROTO_MEMORY ? "peak-memory " : "benchmark ", mode);
	ki_buf_printf(&notes, "%s in the operation mode Liger's harness calls "
	    "'%.200s', which the importer does not know: which passes it "
	    "covers is not stated.%s Comparable only within one kernel, "
	    "workload, mode, and GPU.", kind == PROTO_MEMORY ?
	    "Peak memory (torch.cuda.max_memory_allocated, quantiles "
	    "0.5/0.2/0.8 of 10 repetitions) measured" : "Timed via "
	    "triton.testing.do_bench with quantiles 0.5/0.2/0.8", mode,
	    " The upstream CSV records no CUDA, driver, or torch version.");
	if (title.oom || notes.oom)
		goto out;
	pi.kind = kind == PROTO_MEMORY ? PROTO_MEMORY : PROTO_SPEED;
	pi.pass = mode;
	pi.name = name.data;
	pi.title = title.data;
	pi.notes = notes.data;
	obj = build_protocol(&pi);
out:
	ki_buf_free(&raw);
	ki_buf_free(&name);
	ki_buf_free(&title);
	ki_buf_free(&notes);
	return obj;
}

static struct json_object *
build_environment(const liger_gpu *g)
{
	struct json_object *spec = json_object_new_object();
	struct json_object *hw = json_object_new_object();
	struct json_object *obj = NULL;
	ki_buf name, title;
	int rc = KI_OK;

	ki_buf_init(&name);
	ki_buf_init(&title);
	if (spec == NULL || hw == NULL)
		goto out;
	rc |= lg_put_str(hw, "vendor", g->vendor != NULL ? g->vendor : "nvidia");
	rc |= lg_put_str(hw, "product", g->product);
	if (g->form_factor != NULL)
		rc |= lg_put_str(hw, "formFactor", g->form_factor);
	if (g->architecture != NULL)
		rc |= lg_put_str(hw, "architecture", g->architecture);
	if (rc != KI_OK)
		goto out;
	rc = lg_put(spec, "hardware", hw);
	hw = NULL;
	if (rc != KI_OK || lg_put(spec, "software", json_object_new_object()) !=
	    KI_OK)
		goto out;
	ki_buf_printf(&name, "liger-bench-%s", g->slug);
	ki_buf_printf(&title, "Liger benchmark host · %s", g->short_name);
	if (name.oom || title.oom)
		goto out;
	obj = new_object("ExecutionEnvironment", name.data, title.data, spec);
	spec = NULL;
out:
	json_object_put(spec);
	json_object_put(hw);
	ki_buf_free(&name);
	ki_buf_free(&title);
	return obj;
}

static const char *
kernel_title(const row *r)
{
	return r->kinfo != NULL ? r->kinfo->title :
	    r->col[LIGER_COL_KERNEL_NAME];
}

static struct json_object *
build_workload(const row *r)
{
	struct json_object *spec = json_object_new_object();
	struct json_object *obj = NULL;
	ki_buf name, title;
	int rc = KI_OK;

	ki_buf_init(&name);
	ki_buf_init(&title);
	if (spec == NULL)
		goto out;
	rc |= lg_put_str(spec, "kernel", r->kernel.data);
	rc |= lg_put_str(spec, "pass", r->pass);
	rc |= lg_put_str(spec, "dtype", r->dtype);
	rc |= lg_put(spec, "parameters", json_object_get(r->params));
	rc |= lg_put_str(spec, "sweep", r->sweep.data);
	if (rc != KI_OK)
		goto out;
	ki_buf_printf(&name, "%s-%s-%s-sweep-%s", r->kernel.data, r->pass,
	    r->slug.data, r->sweep.data);
	if (name.oom)
		goto out;
	{
		ki_buf clean;

		ki_buf_init(&clean);
		rc = lg_name_unique(&clean, name.data, LIGER_NAME_MAX);
		ki_buf_free(&name);
		name = clean;
		if (rc != KI_OK)
			goto out;
	}
	ki_buf_printf(&title, "%s · %s · %s", kernel_title(r), r->pass,
	    r->slug.data);
	if (title.oom)
		goto out;
	obj = new_object("Workload", name.data, title.data, spec);
	spec = NULL;
out:
	json_object_put(spec);
	ki_buf_free(&name);
	ki_buf_free(&title);
	return obj;
}

/* Providers whose rows measure Liger's own code, hence carry its version. */
static int
provider_is_liger(const char *p)
{
	return strncmp(p, "liger", 5) == 0 &&
	    (p[5] == '\0' || p[5] == '_' || p[5] == '-');
}

static struct json_object *
build_implementation(const row *r)
{
	const char *prov = r->provider.data;
	const char *ver = r->col[LIGER_COL_LIGER_VERSION];
	int versioned = provider_is_liger(prov) && *ver != '\0' &&
	    strlen(ver) <= 128;
	struct json_object *spec = json_object_new_object();
	struct json_object *obj = NULL;
	ki_buf raw, name, title;
	int rc = KI_OK;

	ki_buf_init(&raw);
	ki_buf_init(&name);
	ki_buf_init(&title);
	if (spec == NULL)
		goto out;
	rc |= lg_put_str(spec, "provider", prov);
	rc |= lg_put_str(spec, "framework", "torch");
	if (versioned)
		rc |= lg_put_str(spec, "version", ver);
	if (rc != KI_OK)
		goto out;
	if (strcmp(prov, "torch") == 0)
		ki_buf_puts(&raw, prov);
	else
		ki_buf_printf(&raw, "%s-torch", prov);
	if (versioned)
		ki_buf_printf(&raw, "-%s", ver);
	if (raw.oom)
		goto out;
	if (lg_name_unique(&name, raw.data, LIGER_NAME_MAX) != KI_OK)
		goto out;
	if (versioned)
		ki_buf_printf(&title, "%s %s · torch", prov, ver);
	else
		ki_buf_printf(&title, "%s · torch", prov);
	if (title.oom)
		goto out;
	obj = new_object("Implementation", name.data, title.data, spec);
	spec = NULL;
out:
	json_object_put(spec);
	ki_buf_free(&raw);
	ki_buf_free(&name);
	ki_buf_free(&title);
	return obj;
}

/* {"unit", "value", "metric", "statistic"} */
static struct json_object *
measurement(const char *metric, const char *unit, const char *stat,
	int64_t value)
{
	struct json_object *m = json_object_new_object();

	if (m == NULL)
		return NULL;
	if (lg_put_str(m, "unit", unit) != KI_OK ||
	    lg_put(m, "value", json_object_new_int64(value)) != KI_OK ||
	    lg_put_str(m, "metric", metric) != KI_OK ||
	    lg_put_str(m, "statistic", stat) != KI_OK) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

/* Puts "<field>": digest(obj) into spec. */
static int
put_digest(struct json_object *spec, const char *field,
	struct json_object *obj)
{
	uint8_t d[API_DIGEST_LEN];
	char s[API_DIGEST_STRLEN + 1];
	int rc = api_digest(obj, d, NULL);

	if (rc != KI_OK)
		return rc;
	api_digest_format(d, s);
	return lg_put_str(spec, field, s);
}

static int
build_run_spec(const row *r, struct json_object *spec)
{
	struct json_object *meas = json_object_new_array();
	struct json_object *native = json_object_new_object();
	struct json_object *metrics = json_object_new_object();
	int rc = KI_OK;
	ki_buf bench;

	ki_buf_init(&bench);
	if (meas == NULL || native == NULL || metrics == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	rc = lg_put_str(spec, "status", "passed");
	if (rc != KI_OK)
		goto out;
	if (!r->memory) {
		struct json_object *timing = json_object_new_object();
		struct json_object *lat = json_object_new_object();

		if (timing == NULL || lat == NULL ||
		    lg_put(lat, "median", json_object_new_int64(
		    llround(r->y50 * 1e6))) != KI_OK ||
		    lg_put(timing, "latencyNs", json_object_get(lat)) != KI_OK ||
		    lg_put_str(timing, "primaryStatistic", "median") != KI_OK ||
		    lg_put(spec, "timing", json_object_get(timing)) != KI_OK)
			rc = KI_ENOMEM;
		json_object_put(lat);
		json_object_put(timing);
		if (rc != KI_OK)
			goto out;
	}
	rc = lg_put_str(spec, "observedAt", r->observed);
	if (rc != KI_OK)
		goto out;
	if (r->memory) {
		const double mib = 1048576.0;

		rc |= json_object_array_add(meas, measurement("peak_memory",
		    "bytes", "median", llround(r->y50 * mib)));
		rc |= json_object_array_add(meas, measurement("peak_memory",
		    "bytes", "p20", llround(r->y20 * mib)));
		rc |= json_object_array_add(meas, measurement("peak_memory",
		    "bytes", "p80", llround(r->y80 * mib)));
		rc |= lg_put(metrics, "mb_20", lg_new_double(r->y20));
		rc |= lg_put(metrics, "mb_50", lg_new_double(r->y50));
		rc |= lg_put(metrics, "mb_80", lg_new_double(r->y80));
	} else {
		rc |= json_object_array_add(meas, measurement("latency", "ns",
		    "p20", llround(r->y20 * 1e6)));
		rc |= json_object_array_add(meas, measurement("latency", "ns",
		    "p80", llround(r->y80 * 1e6)));
		rc |= lg_put(metrics, "ms_20", lg_new_double(r->y20));
		rc |= lg_put(metrics, "ms_50", lg_new_double(r->y50));
		rc |= lg_put(metrics, "ms_80", lg_new_double(r->y80));
	}
	if (rc != KI_OK || json_object_array_length(meas) != (r->memory ? 3u : 2u)) {
		rc = KI_ENOMEM;
		goto out;
	}
	{
		size_t i;

		for (i = 0; i < json_object_array_length(meas); i++)
			if (json_object_array_get_idx(meas, i) == NULL)
				rc = KI_ENOMEM;
		if (rc != KI_OK)
			goto out;
	}
	rc = lg_put(spec, "measurements", json_object_get(meas));
	if (rc != KI_OK)
		goto out;
	ki_buf_printf(&bench, "%s/%s", r->col[LIGER_COL_KERNEL_NAME],
	    r->col[LIGER_COL_KERNEL_OPERATION_MODE]);
	if (bench.oom) {
		rc = KI_ENOMEM;
		goto out;
	}
	rc |= lg_put_str(native, "source", LIGER_SOURCE);
	rc |= lg_put(native, "metrics", json_object_get(metrics));
	rc |= lg_put_str(native, "benchmark", bench.data);
	rc |= lg_put_str(native, "externalId", r->eid.data);
	rc |= lg_put(spec, "sourceNative", json_object_get(native));
	if (rc != KI_OK)
		rc = KI_ENOMEM;
out:
	json_object_put(meas);
	json_object_put(native);
	json_object_put(metrics);
	ki_buf_free(&bench);
	return rc;
}

static struct json_object *
build_run_metadata(const row *r)
{
	struct json_object *meta = json_object_new_object();
	struct json_object *labels = json_object_new_object();
	struct json_object *ann = json_object_new_object();
	ki_buf name, title;
	int rc = KI_OK;

	ki_buf_init(&name);
	ki_buf_init(&title);
	if (meta == NULL || labels == NULL || ann == NULL)
		goto fail;
	if (run_name(r, &name) != KI_OK)
		goto fail;
	ki_buf_printf(&title, "%s · %s · %s%s", kernel_title(r),
	    r->col[LIGER_COL_KERNEL_PROVIDER],
	    r->col[LIGER_COL_KERNEL_OPERATION_MODE],
	    r->memory ? " · peak memory" : "");
	if (title.oom)
		goto fail;
	rc |= lg_put_str(meta, "name", name.data);
	rc |= lg_put_str(meta, "title", title.data);
	if (*r->col[LIGER_COL_LIGER_VERSION] != '\0' && r->version_label)
		rc |= lg_put_str(labels, "liger_version",
		    r->col[LIGER_COL_LIGER_VERSION]);
	else if (*r->col[LIGER_COL_LIGER_VERSION] != '\0')
		rc |= lg_put_str(ann, LIGER_ANN_VERSION,
		    r->col[LIGER_COL_LIGER_VERSION]);
	if (r->unknown.len > 0)
		rc |= lg_put_str(ann, LIGER_ANN_UNKNOWN, r->unknown.data);
	if (strlen(r->col[LIGER_COL_TIMESTAMP]) != 19 ||
	    r->col[LIGER_COL_TIMESTAMP][10] != ' ')
		rc |= lg_put_str(ann, LIGER_ANN_TIMESTAMP,
		    r->col[LIGER_COL_TIMESTAMP]);
	rc |= lg_put_str(ann, LIGER_ANN_X_NAME, r->col[LIGER_COL_X_NAME]);
	rc |= lg_put_str(ann, LIGER_ANN_X_LABEL, r->col[LIGER_COL_X_LABEL]);
	rc |= lg_put_str(ann, LIGER_ANN_X_VALUE, r->col[LIGER_COL_X_VALUE]);
	rc |= lg_put_str(ann, LIGER_ANN_CONFIG,
	    r->col[LIGER_COL_EXTRA_BENCHMARK_CONFIG_STR]);
	rc |= lg_put_str(ann, LIGER_ANN_GPU_NAME, r->col[LIGER_COL_GPU_NAME]);
	if (rc != KI_OK)
		goto fail;
	rc = lg_put(meta, "labels", labels);
	labels = NULL;
	rc |= lg_put(meta, "annotations", ann);
	ann = NULL;
	if (rc != KI_OK)
		goto fail;
	ki_buf_free(&name);
	ki_buf_free(&title);
	return meta;
fail:
	json_object_put(meta);
	json_object_put(labels);
	json_object_put(ann);
	ki_buf_free(&name);
	ki_buf_free(&title);
	return NULL;
}

int
liger_conv_row(liger_conv *c, const liger_record *rec,
	struct json_object **out, ki_buf *err)
{
	struct json_object *proto = NULL, *env = NULL, *wl = NULL;
	struct json_object *impl = NULL, *run = NULL, *spec = NULL;
	struct json_object *meta = NULL, *bundle = NULL;
	const proto_info *pi;
	enum proto_kind pk;
	row r;
	int rc;

	*out = NULL;
	lg_row_init(&r);
	if (!c->have_header) {
		if (err != NULL)
			ki_buf_printf(err, "line %zu: no header was read", rec->line);
		rc = KI_EINVAL;
		goto out;
	}
	rc = lg_row_parse(c->idx, c->nheader, rec, &r, err);
	if (rc != KI_OK)
		goto out;
	rc = KI_ENOMEM;
	pk = r.memory ? PROTO_MEMORY : PROTO_SPEED;
	if (pk == PROTO_SPEED && r.kinfo != NULL && r.kinfo->backward_refwd &&
	    strcmp(r.col[LIGER_COL_KERNEL_OPERATION_MODE], "backward") == 0)
		pk = PROTO_SPEED_REFWD;
	pi = r.mode_known ? lg_proto_for(pk,
	    r.col[LIGER_COL_KERNEL_OPERATION_MODE]) : NULL;
	proto = pi != NULL ? build_protocol(pi) : build_mode_protocol(&r, pk);
	env = build_environment(&r.gpu);
	wl = build_workload(&r);
	impl = build_implementation(&r);
	spec = json_object_new_object();
	if (proto == NULL || env == NULL || wl == NULL || impl == NULL ||
	    spec == NULL)
		goto out;
	rc = build_run_spec(&r, spec);
	if (rc == KI_OK)
		rc = put_digest(spec, "protocolDigest", proto);
	if (rc == KI_OK)
		rc = put_digest(spec, "workloadDigest", wl);
	if (rc == KI_OK)
		rc = put_digest(spec, "environmentDigest", env);
	if (rc == KI_OK)
		rc = put_digest(spec, "implementationDigest", impl);
	if (rc != KI_OK)
		goto out;
	rc = KI_ENOMEM;
	meta = build_run_metadata(&r);
	run = json_object_new_object();
	if (meta == NULL || run == NULL)
		goto out;
	if (lg_put_str(run, "apiVersion", LG_API_VER) != KI_OK ||
	    lg_put_str(run, "kind", "BenchmarkRun") != KI_OK)
		goto out;
	rc = lg_put(run, "metadata", meta);
	meta = NULL;
	if (rc != KI_OK)
		goto out;
	rc = lg_put(run, "spec", spec);
	spec = NULL;
	if (rc != KI_OK)
		goto out;
	rc = KI_ENOMEM;
	bundle = json_object_new_object();
	if (bundle == NULL)
		goto out;
	rc = lg_put(bundle, "run", run);
	run = NULL;
	rc |= lg_put(bundle, "protocol", proto);
	proto = NULL;
	rc |= lg_put(bundle, "environment", env);
	env = NULL;
	rc |= lg_put(bundle, "workload", wl);
	wl = NULL;
	rc |= lg_put(bundle, "implementation", impl);
	impl = NULL;
	if (rc != KI_OK) {
		rc = KI_ENOMEM;
		goto out;
	}
	*out = bundle;
	bundle = NULL;
out:
	json_object_put(bundle);
	json_object_put(run);
	json_object_put(meta);
	json_object_put(spec);
	json_object_put(proto);
	json_object_put(env);
	json_object_put(wl);
	json_object_put(impl);
	lg_row_free(&r);
	return rc;
}

int
liger_convert_text(const char *text, size_t len, liger_row_fn fn, void *arg,
	ki_buf *err)
{
	liger_conv *c = NULL;
	liger_record rec;
	liger_csv csv;
	ki_buf msg;
	int rc, got;

	liger_record_init(&rec);
	ki_buf_init(&msg);
	rc = liger_conv_new(&c);
	if (rc != KI_OK)
		goto out;
	liger_csv_init(&csv, text, len);
	got = liger_csv_next(&csv, &rec, err);
	if (got == 0) {
		if (err != NULL)
			ki_buf_puts(err, "line 1: no header: the input is empty");
		rc = KI_EINVAL;
		goto out;
	}
	if (got < 0) {
		rc = got == KI_ENOMEM ? KI_ENOMEM : KI_EINVAL;
		goto out;
	}
	rc = liger_conv_header(c, &rec, err);
	if (rc != KI_OK)
		goto out;

	while ((got = liger_csv_next(&csv, &rec, &msg)) != 0) {
		struct json_object *bundle = NULL;

		if (got == KI_ENOMEM) {
			rc = KI_ENOMEM;
			goto out;
		}
		if (got < 0) {
			rc = fn(arg, csv.line, NULL, msg.data != NULL ?
			    msg.data : "malformed CSV");
		} else {
			rc = liger_conv_row(c, &rec, &bundle, &msg);
			if (rc == KI_ENOMEM)
				goto out;
			if (rc == KI_OK)
				rc = fn(arg, rec.line, bundle, NULL);
			else
				rc = fn(arg, rec.line, NULL, msg.data != NULL ?
				    msg.data : ki_strerror(rc));
			json_object_put(bundle);
		}
		ki_buf_reset(&msg);
		if (rc != 0)
			goto out;
	}
	rc = KI_OK;
out:
	liger_conv_free(c);
	liger_record_free(&rec);
	ki_buf_free(&msg);
	return rc;
}

