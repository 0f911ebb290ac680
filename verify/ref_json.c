/* verify/ref_json.c — the reference program's request parsing and result
 * serialization (JSON in on stdin, one JSON object out). */
#include "verify/ref.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "physics/costmodel.h"
#include "physics/refcover.h"

/* The spec of a document given either whole ({"kind", "spec"}) or as its
 * spec alone. Borrowed from o. */
static struct json_object *
spec_of(struct json_object *o)
{
	struct json_object *s;

	if (o == NULL || !json_object_is_type(o, json_type_object))
		return NULL;
	if (json_object_object_get_ex(o, "spec", &s) &&
	    json_object_is_type(s, json_type_object))
		return s;
	return o;
}

static const char *
get_string(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* 1 and *v when key holds a finite number, 0 when absent, -1 when it
 * holds something else. */
static int
get_number(struct json_object *o, const char *key, double *v)
{
	struct json_object *x;

	if (o == NULL || !json_object_object_get_ex(o, key, &x) || x == NULL)
		return 0;
	if (!json_object_is_type(x, json_type_int) &&
	    !json_object_is_type(x, json_type_double))
		return -1;
	*v = json_object_get_double(x);
	return isfinite(*v) ? 1 : -1;
}

/* The first of names present in params as a positive integer. */
static int
get_dim(struct json_object *params, const char *const *names, int64_t *v)
{
	size_t i;

	for (i = 0; names[i] != NULL; i++) {
		double d;
		int rc = get_number(params, names[i], &d);

		if (rc == 0)
			continue;
		if (rc < 0 || d < 1 || d > 9.0e15 || d != floor(d))
			return -1;
		*v = (int64_t)d;
		return 1;
	}
	return 0;
}

static const char *const DIM_BATCH[] = { "batch", "B", "bsz", NULL };
static const char *const DIM_SEQ[] = { "seq", "T", "seq_len", NULL };
static const char *const DIM_TOKENS[] = { "tokens", "BT", NULL };
static const char *const DIM_HIDDEN[] = { "hidden", "D", "H",
	"hidden_size", NULL };
static const char *const DIM_VOCAB[] = { "vocab", "V", "vocab_size", NULL };

int
ref_parse_request(struct json_object *req, struct ref_job *job, char *err,
	size_t errlen)
{
	struct json_object *w, *params = NULL, *proto, *meas;
	const char *kernel, *pass, *dtype, *backend;
	int64_t tokens = 0;
	double d;
	int rc;

	memset(job, 0, sizeof(*job));
	job->warmup_ms = REF_DEFAULT_WARMUP_MS;
	job->rep_ms = REF_DEFAULT_REP_MS;
	job->flush_bytes = REF_DEFAULT_FLUSH;
	job->max_seconds = 60;
	if (req == NULL || !json_object_is_type(req, json_type_object)) {
		snprintf(err, errlen, "request is not a JSON object");
		return KI_EINVAL;
	}
	w = spec_of(json_object_object_get_ex(req, "workload", &w) ? w : NULL);
	if (w == NULL) {
		snprintf(err, errlen, "request.workload: an object is required");
		return KI_EINVAL;
	}
	kernel = get_string(w, "kernel");
	if (kernel == NULL) {
		snprintf(err, errlen, "workload.kernel: a string is required");
		return KI_EINVAL;
	}
	if (strcmp(kernel, "embedding") != 0 && fam_find(kernel) == NULL &&
	    lin_find(kernel) == NULL) {
		snprintf(err, errlen, "kernel %.64s has no reference "
		    "implementation", kernel);
		return KI_ENOTFOUND;
	}
	job->fam = fam_find(kernel);
	job->lin = lin_find(kernel);
	snprintf(job->kernel, sizeof(job->kernel), "%s", kernel);
	pass = get_string(w, "pass");
	if (pass == NULL || (strcmp(pass, "forward") != 0 &&
	    strcmp(pass, "backward") != 0 && strcmp(pass, "full") != 0)) {
		snprintf(err, errlen, "workload.pass: forward, backward or full");
		return KI_EINVAL;
	}
	{
		const char *why = NULL;

		if (!ref_covers(kernel, pass, &why)) {
			snprintf(err, errlen, "kernel %.64s, pass %s: no reference "
			    "implementation: %s", kernel, pass, why);
			return KI_ENOTFOUND;
		}
	}
	job->pass = pass[0] == 'f' ? (pass[1] == 'o' ? REF_FORWARD :
	    REF_FULL) : REF_BACKWARD;
	job->asked = job->pass;
	if (job->fam != NULL)
		job->fam = fam_find_pass(kernel, (int)job->pass);
	if (job->fam != NULL && job->fam->bwd_is_full &&
	    job->pass == REF_BACKWARD)
		job->pass = REF_FULL;
	dtype = get_string(w, "dtype");
	job->dtype = api_dtype_parse(dtype != NULL ? dtype :
	    api_cost_default_dtype(kernel));
	if (job->dtype != API_DT_F32 && job->dtype != API_DT_BF16 &&
	    job->dtype != API_DT_F16) {
		snprintf(err, errlen, "workload.dtype: float32, bfloat16 or "
		    "float16");
		return KI_EINVAL;
	}
	if (!json_object_object_get_ex(w, "parameters", &params) ||
	    !json_object_is_type(params, json_type_object)) {
		snprintf(err, errlen, "workload.parameters: an object is "
		    "required");
		return KI_EINVAL;
	}
	if (job->fam != NULL) {
		double bytes = 0;
		int i;

		if (job->fam->parse(params, &job->shape, err, errlen) != 0)
			return KI_EINVAL;
		job->fam->layout(&job->shape);
		for (i = 0; i < job->shape.nslots; i++)
			bytes += (double)fam_slot_elems(&job->shape, i) *
			    (double)fam_slot_esize(&job->shape, i, job->dtype);
		if (bytes > 2e11) {
			snprintf(err, errlen, "workload too large");
			return KI_ELIMIT;
		}
		goto protocol;
	}
	if (job->lin != NULL) {
		double bytes = 0;
		int i;

		if (job->lin->parse(params, &job->lshape, err, errlen) != 0)
			return KI_EINVAL;
		job->lin->layout(&job->lshape);
		for (i = 0; i < job->lshape.nslots; i++)
			bytes += (double)job->lshape.slot[i].n *
			    (double)api_dtype_size(job->dtype);
		if (bytes > 2e11) {
			snprintf(err, errlen, "workload too large");
			return KI_ELIMIT;
		}
		goto protocol;
	}
	job->batch = 1;
	if (get_dim(params, DIM_BATCH, &job->batch) < 0 ||
	    get_dim(params, DIM_SEQ, &job->seq) < 0 ||
	    get_dim(params, DIM_TOKENS, &tokens) < 0 ||
	    get_dim(params, DIM_HIDDEN, &job->hidden) <= 0 ||
	    get_dim(params, DIM_VOCAB, &job->vocab) <= 0) {
		snprintf(err, errlen, "workload.parameters: positive integers "
		    "batch, seq (or tokens), hidden and vocab are required");
		return KI_EINVAL;
	}
	if (tokens > 0) {
		job->batch = 1;
		job->seq = tokens;
	}
	if (job->seq <= 0) {
		snprintf(err, errlen, "workload.parameters.seq: required");
		return KI_EINVAL;
	}
	if ((double)job->batch * job->seq * job->hidden > 4e10 ||
	    (double)job->vocab * job->hidden > 4e10) {
		snprintf(err, errlen, "workload too large");
		return KI_ELIMIT;
	}
protocol:
	proto = json_object_object_get_ex(req, "protocol", &proto) ?
	    spec_of(proto) : NULL;
	meas = NULL;
	if (proto != NULL && !json_object_object_get_ex(proto, "measurement",
	    &meas))
		meas = NULL;
	if (meas != NULL) {
		if (get_number(meas, "warmupMs", &d) == 1 && d >= 0 && d <= 1e4)
			job->warmup_ms = d;
		if (get_number(meas, "repMs", &d) == 1 && d > 0 && d <= 1e5)
			job->rep_ms = d;
		if (get_number(meas, "flushBytes", &d) == 1 && d >= 0 &&
		    d <= 4.0 * 1024 * 1024 * 1024)
			job->flush_bytes = (uint64_t)d;
	}
	backend = get_string(req, "backend");
	if (backend == NULL || strcmp(backend, "auto") == 0)
		job->backend = REF_AUTO;
	else if (strcmp(backend, "cpu") == 0)
		job->backend = REF_CPU;
	else if (strcmp(backend, "cuda") == 0)
		job->backend = REF_CUDA;
	else {
		snprintf(err, errlen, "backend: auto, cpu or cuda");
		return KI_EINVAL;
	}
	rc = get_number(req, "maxSeconds", &d);
	if (rc < 0 || (rc == 1 && (d <= 0 || d > 3600))) {
		snprintf(err, errlen, "maxSeconds: a number in (0, 3600]");
		return KI_EINVAL;
	}
	if (rc == 1)
		job->max_seconds = d;
	rc = get_number(req, "seed", &d);
	if (rc == 1 && d >= 0 && d < 9.0e15)
		job->seed = (uint64_t)d;
	return KI_OK;
}

double
ref_tolerance(enum api_dtype dt)
{
	switch (dt) {
	case API_DT_F32: return 1e-5;
	case API_DT_F16: return 2e-3;
	case API_DT_BF16: return 1e-2;
	default: return 0;
	}
}

static const char *
pass_name(enum ref_pass p)
{
	return p == REF_FORWARD ? "forward" : p == REF_BACKWARD ? "backward" :
	    "full";
}

/* Adds key = v to o, or null for a negative clock. */
static void
add_clock(struct json_object *o, const char *key, int v)
{
	json_object_object_add(o, key, v >= 0 ? json_object_new_int(v) : NULL);
}

int
ref_write_result(const struct ref_job *job, const struct ref_result *r,
	ki_buf *out)
{
	struct json_object *o = json_object_new_object(), *gpu, *lat, *cb, *ca,
	    *shape, *params;
	const api_gpu *g = NULL;
	api_cost c = { 0 };
	double bytes = 0, bw = 0;
	int rc = KI_ENOMEM, anew;

	if (o == NULL)
		return KI_ENOMEM;
	if (r->ran != NULL) {
		params = json_object_get(r->ran);
	} else {
		params = json_object_new_object();
		json_object_object_add(params, "batch",
		    json_object_new_int64(r->batch));
		json_object_object_add(params, "seq",
		    json_object_new_int64(r->seq));
		json_object_object_add(params, "hidden",
		    json_object_new_int64(r->hidden));
		json_object_object_add(params, "vocab",
		    json_object_new_int64(r->vocab));
	}
	if (api_cost_estimate(job->kernel, pass_name(job->pass),
	    api_dtype_name(job->dtype), params, &c) == KI_OK)
		bytes = c.bytes;
	/* A backend that wrote the gradients anew where the script adds to
	 * them (the CUDA backend; the CPU's under KIREF_WRITE_ANEW) did not
	 * read the earlier ones: its floor leaves those bytes out, so that
	 * its fraction of the floor is of the work it did. */
	anew = c.accumulated_bytes > 0 && r->accumulated_outputs == 0;
	if (anew)
		bytes -= c.accumulated_bytes;
	if (r->median_ns > 0)
		bw = bytes / (r->median_ns * 1e-9);
	json_object_object_add(o, "backend",
	    json_object_new_string(r->backend));
	gpu = json_object_new_object();
	if (strcmp(r->backend, "cuda") == 0) {
		json_object_object_add(gpu, "name",
		    json_object_new_string(r->gpu_name));
		json_object_object_add(gpu, "driver",
		    json_object_new_string(r->driver));
		json_object_object_add(gpu, "sm", json_object_new_string(r->sm));
		cb = json_object_new_object();
		add_clock(cb, "smMHz", r->clocks_sm_before);
		add_clock(cb, "memMHz", r->clocks_mem_before);
		ca = json_object_new_object();
		add_clock(ca, "smMHz", r->clocks_sm_after);
		add_clock(ca, "memMHz", r->clocks_mem_after);
		json_object_object_add(gpu, "clocksBefore", cb);
		json_object_object_add(gpu, "clocksAfter", ca);
		g = api_gpu_match_name(r->gpu_name);
		json_object_object_add(o, "gpu", gpu);
	} else {
		json_object_put(gpu);
		json_object_object_add(o, "gpu", NULL);
	}
	lat = json_object_new_object();
	json_object_object_add(lat, "median",
	    json_object_new_double(r->median_ns));
	json_object_object_add(lat, "p20", json_object_new_double(r->p20_ns));
	json_object_object_add(lat, "p80", json_object_new_double(r->p80_ns));
	json_object_object_add(o, "latencyNs", lat);
	json_object_object_add(o, "repetitions",
	    json_object_new_int(r->repetitions));
	json_object_object_add(o, "bytes", json_object_new_double(bytes));
	json_object_object_add(o, "achievedBandwidth",
	    json_object_new_double(bw));
	if (g != NULL) {
		json_object_object_add(o, "peakBandwidth",
		    json_object_new_double(g->dram_bw));
		json_object_object_add(o, "fractionOfPeak",
		    json_object_new_double(bw / g->dram_bw));
	}
	if (bytes > 0 && r->copy_bw > 0 && r->median_ns > 0) {
		struct json_object *fl = json_object_new_object();
		double sec = bytes / r->copy_bw;

		json_object_object_add(fl, "bytes", json_object_new_double(bytes));
		json_object_object_add(fl, "accumulatedGradientBytes",
		    json_object_new_double(anew ? 0 : c.accumulated_bytes));
		if (anew)
			json_object_object_add(fl, "gradientsWrittenAnew",
			    json_object_new_boolean(1));
		json_object_object_add(fl, "copyBandwidth",
		    json_object_new_double(r->copy_bw));
		/* A matrix-bound pass: its FLOPs at the matmul rate measured
		 * in the same run, when that is the longer. */
		if (r->matmul_rate > 0 && c.flops > 0) {
			json_object_object_add(fl, "flops",
			    json_object_new_double(c.flops));
			json_object_object_add(fl, "matmulRate",
			    json_object_new_double(r->matmul_rate));
			if (c.flops / r->matmul_rate > sec)
				sec = c.flops / r->matmul_rate;
		}
		json_object_object_add(fl, "seconds", json_object_new_double(sec));
		json_object_object_add(fl, "fractionOfFloor",
		    json_object_new_double(sec / (r->median_ns * 1e-9)));
		json_object_object_add(o, "floor", fl);
	}
	json_object_object_add(o, "maxRelError",
	    json_object_new_double(r->max_rel_error));
	json_object_object_add(o, "checkedOutputs",
	    json_object_new_int64(r->checked_outputs));
	json_object_object_add(o, "accumulatedGradients",
	    json_object_new_int(r->accumulated_outputs));
	json_object_object_add(o, "tolerance",
	    json_object_new_double(ref_tolerance(job->dtype)));
	json_object_object_add(o, "correct", json_object_new_boolean(
	    r->complete && r->max_rel_error <= ref_tolerance(job->dtype)));
	json_object_object_add(o, "scaled", json_object_new_boolean(r->scaled));
	shape = json_object_new_object();
	json_object_object_add(shape, "kernel",
	    json_object_new_string(job->kernel));
	json_object_object_add(shape, "pass",
	    json_object_new_string(pass_name(job->asked)));
	json_object_object_add(shape, "dtype",
	    json_object_new_string(api_dtype_name(job->dtype)));
	json_object_object_add(shape, "parameters", params);
	json_object_object_add(o, "ran", shape);
	if (ki_buf_puts(out, json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN)) == KI_OK)
		rc = KI_OK;
	json_object_put(o);
	return rc;
}
