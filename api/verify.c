/* api/verify.c — claiming Verifications and recording their outcome. */
#include "api/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/costmodel.h"
#include "physics/gpu.h"
#include "physics/refcover.h"
#include "api/object.h"
#include "api/runstatus.h"
#include "api/schema.h"
#include "api/service_int.h"

/* A claimed run within these factors of the reference is consistent. */
#define VERDICT_FACTOR 2.0

/* build_request's answer when the reference does not measure the run. */
#define NO_REFERENCE 1

typedef struct pick {
	int include_running;
	const char *only;      /* just this one, or any when NULL */
	char name[STORE_MAX_NAME + 1];
	uint64_t rv;
} pick;

static int
pick_one(void *arg, const store_obj *o)
{
	pick *p = arg;
	struct json_object *st = api_json_parse_len(o->json + o->status_off,
	    o->status_len);
	const char *phase = json_object_get_string(json_object_object_get(st,
	    "phase"));
	int want = phase != NULL && (strcmp(phase, "Pending") == 0 ||
	    (p->include_running && strcmp(phase, "Running") == 0)) &&
	    (p->only == NULL || (strlen(p->only) == o->name_len &&
	    memcmp(p->only, o->name, o->name_len) == 0));

	/* The oldest waiting one (lowest resourceVersion) goes first. */
	if (want && (p->name[0] == '\0' || o->rv < p->rv)) {
		snprintf(p->name, sizeof(p->name), "%.*s", (int)o->name_len, o->name);
		p->rv = o->rv;
	}
	if (st != NULL)
		json_object_put(st);
	return 0;
}

/* Writes the Verification's status members extra (borrowed) in txn. */
static int
set_status(api_ctx *ctx, store_txn *txn, const char *name,
	struct json_object *extra)
{
	store_obj o;
	stored_copy c;
	int rc;

	rc = store_get_by_name(txn, API_VERIFICATION, name, strlen(name), &o);
	if (rc != KI_OK)
		return rc;
	if ((rc = stored_copy_make(&c, &o)) == KI_OK)
		rc = stored_copy_put(ctx, txn, &c, extra);
	stored_copy_free(&c);
	return rc;
}

static void
add_time(struct json_object *o, const char *key, double now)
{
	ki_buf b;

	ki_buf_init(&b);
	api_format_time(now, &b);
	json_object_object_add(o, key, json_object_new_string(b.data ? b.data :
	    ""));
	ki_buf_free(&b);
}

static void
add_condition(struct json_object *o, const char *type, const char *status,
	const char *reason, const char *message, double now)
{
	struct json_object *conds = json_object_object_get(o, "conditions");
	struct json_object *c = json_object_new_object();

	if (conds == NULL) {
		conds = json_object_new_array();
		json_object_object_add(o, "conditions", conds);
	}
	json_object_object_add(c, "type", json_object_new_string(type));
	json_object_object_add(c, "status", json_object_new_string(status));
	json_object_object_add(c, "reason", json_object_new_string(reason));
	json_object_object_add(c, "message", json_object_new_string(message));
	add_time(c, "lastTransitionTime", now);
	json_object_array_add(conds, c);
}

/* Builds {"workload", "protocol", "backend": "auto", "maxSeconds"} for the
 * run named run. Returns 0, or KI_ENOTFOUND with why in err. */
/* Builds {"workload", "protocol", "backend": "auto", "maxSeconds"} for the
 * run named run. Returns 0; KI_ENOTFOUND with why in err when the run or
 * its workload cannot be found; NO_REFERENCE (1) with why when the
 * reference program does not measure that kernel's pass. */
static int
build_request(store_txn *txn, const char *run, ki_buf *out, char *err,
	size_t errlen)
{
	struct json_object *spec = NULL, *wl = NULL, *proto = NULL, *req = NULL;
	store_obj o, p;
	int derived, rc = KI_ENOTFOUND;

	if (store_get_by_name(txn, API_RUN, run, strlen(run), &o) != KI_OK) {
		snprintf(err, errlen, "no BenchmarkRun \"%.200s\" is stored", run);
		goto out;
	}
	spec = api_json_parse_len(o.json + o.spec_off, o.spec_len);
	if (spec == NULL || o.nrefs != API_NREFS) {
		rc = KI_ESTORE;
		snprintf(err, errlen, "the run could not be read");
		goto out;
	}
	wl = api_run_workload(txn, spec, o.refs, o.nrefs, &derived);
	if (wl == NULL) {
		snprintf(err, errlen, "the run's workload is not stored and its "
		    "sourceNative does not name one");
		goto out;
	}
	{
		const char *why = NULL;
		const char *k = json_object_get_string(json_object_object_get(wl,
		    "kernel"));
		const char *ps = json_object_get_string(json_object_object_get(wl,
		    "pass"));

		if (!ref_covers(k, ps, &why)) {
			snprintf(err, errlen, "no reference measurement of %.64s "
			    "(%.16s): %s", k ? k : "this kernel", ps ? ps : "?",
			    why);
			rc = NO_REFERENCE;
			goto out;
		}
	}
	if (store_get_by_digest(txn, o.refs + API_REF_PROTOCOL * API_DIGEST_LEN,
	    &p) == KI_OK && p.kind == API_PROTOCOL)
		proto = api_json_parse_len(p.json + p.spec_off, p.spec_len);
	req = json_object_new_object();
	if (req == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	json_object_object_add(req, "workload", wl);
	wl = NULL;
	json_object_object_add(req, "protocol", proto ? proto :
	    json_object_new_object());
	proto = NULL;
	json_object_object_add(req, "backend", json_object_new_string("auto"));
	json_object_object_add(req, "maxSeconds", json_object_new_int(60));
	rc = api_jcs_serialize(req, out);
out:
	if (spec != NULL)
		json_object_put(spec);
	if (wl != NULL)
		json_object_put(wl);
	if (proto != NULL)
		json_object_put(proto);
	if (req != NULL)
		json_object_put(req);
	return rc;
}

static double
num_at(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v = o;
	double d;

	if (a != NULL && !json_object_object_get_ex(v, a, &v))
		return NAN;
	if (b != NULL && !json_object_object_get_ex(v, b, &v))
		return NAN;
	return api_json_number(v, &d) ? d : NAN;
}

/* What the run claims and where: its median latency (ns), its GPU's table
 * row (NULL when not in the table) and the floor of its workload on that
 * GPU (ns, NAN when the cost model has none). */
typedef struct claimed_run {
	double median_ns, floor_ns;
	const api_gpu *gpu;
} claimed_run;

static void
run_claim(store_txn *txn, const store_obj *run, claimed_run *c)
{
	struct json_object *spec = api_json_parse_len(run->json + run->spec_off,
	    run->spec_len), *wl = NULL, *lat = NULL;
	store_obj e;
	int derived;

	c->median_ns = c->floor_ns = NAN;
	c->gpu = NULL;
	if (spec == NULL)
		return;
	json_object_object_get_ex(json_object_object_get(spec, "timing"),
	    "latencyNs", &lat);
	c->median_ns = num_at(lat, "median", NULL);
	if (run->nrefs == API_NREFS && store_get_by_digest(txn,
	    run->refs + API_REF_ENVIRONMENT * API_DIGEST_LEN, &e) == KI_OK) {
		struct json_object *es = api_json_parse_len(e.json + e.spec_off,
		    e.spec_len);

		c->gpu = api_gpu_match_hardware(json_object_object_get(es,
		    "hardware"));
		if (es != NULL)
			json_object_put(es);
	}
	if (run->nrefs == API_NREFS)
		wl = api_run_workload(txn, spec, run->refs, run->nrefs, &derived);
	if (wl != NULL && c->gpu != NULL) {
		api_cost cost;

		if (api_cost_estimate(json_object_get_string(
		    json_object_object_get(wl, "kernel")),
		    json_object_get_string(json_object_object_get(wl, "pass")),
		    json_object_get_string(json_object_object_get(wl, "dtype")),
		    json_object_object_get(wl, "parameters"), &cost) == KI_OK) {
			double f = api_cost_floor_seconds(&cost, c->gpu, NULL);

			if (f > 0)
				c->floor_ns = f * 1e9;
		}
	}
	if (wl != NULL)
		json_object_put(wl);
	json_object_put(spec);
}

/* The outcome of comparing a claim with a reference measurement. */
typedef struct outcome {
	const char *verdict, *reason, *complete_reason;
	int ok;                  /* the controller did its job */
	double ratio;            /* claimed / reference, same GPU only */
	double predicted, lo, hi, factor, fraction;   /* cross-device */
	char msg[1024];
} outcome;

/* The reference's median on its own device says what the run's GPU
 * should take only through the fraction of its floor it reached there:
 * predicted = the run GPU's floor / that fraction. How far a kernel's
 * fraction moves between devices is not measured here; the prediction is
 * given as a band of this factor either way (wider for the CPU, whose
 * caches and vector units behave least like a GPU's), times the
 * reference's own p80/p20 spread. */
#define PREDICT_FACTOR_GPU 1.5
#define PREDICT_FACTOR_CPU 3.0
#define PREDICT_FACTOR_SCALED 1.5

static void
predict(struct json_object *res, const claimed_run *cl, const char *ref_dev,
	int cpu, int scaled, outcome *oc)
{
	double f = num_at(res, "floor", "fractionOfFloor");
	double p20 = num_at(res, "latencyNs", "p20");
	double p80 = num_at(res, "latencyNs", "p80");
	double spread = isfinite(p20) && isfinite(p80) && p20 > 0 &&
	    p80 >= p20 ? p80 / p20 : 1;
	const char *run_gpu = cl->gpu ? cl->gpu->name : "an unknown GPU";

	oc->ok = 1;
	if (cl->gpu == NULL || !isfinite(cl->floor_ns)) {
		oc->reason = "NoPrediction";
		snprintf(oc->msg, sizeof(oc->msg), "measured on %s; the run's GPU "
		    "%s, so its time cannot be predicted from the "
		    "measurement: no comparison is made", ref_dev,
		    cl->gpu == NULL ? "is not in the GPU table" : "has no floor "
		    "for this workload in the cost model");
		return;
	}
	if (!(isfinite(f) && f > 0 && f <= 100)) {
		oc->reason = "NoPrediction";
		snprintf(oc->msg, sizeof(oc->msg), "measured on %s, the run is "
		    "from %s; the reference reported no fraction of its floor, "
		    "so no prediction is made and the times are not compared",
		    ref_dev, run_gpu);
		return;
	}
	/* Past its floor, the reference's data sat in a cache (a reduced
	 * CPU shape can): take it as at the floor. */
	if (f > 1)
		f = 1;
	oc->fraction = f;
	oc->factor = (cpu ? PREDICT_FACTOR_CPU : PREDICT_FACTOR_GPU) *
	    (scaled ? PREDICT_FACTOR_SCALED : 1) * spread;
	oc->predicted = cl->floor_ns / f;
	/* A CPU loop's fraction of its floor says how slow a kernel doing
	 * the same work may be, not how fast: a GPU kernel can reach its own
	 * floor. The band's low end is then the floor. */
	oc->lo = cpu ? cl->floor_ns : fmax(cl->floor_ns,
	    oc->predicted / oc->factor);
	oc->hi = oc->predicted * oc->factor;
	if (isnan(cl->median_ns)) {
		oc->reason = "NoLatency";
		snprintf(oc->msg, sizeof(oc->msg), "predicted %.4g ms on %s; the "
		    "run has no median latency to compare", oc->predicted / 1e6,
		    run_gpu);
		return;
	}
	if (cl->median_ns < cl->floor_ns) {
		oc->verdict = "Implausible";
		oc->reason = "FasterThanFloor";
	} else if (cl->median_ns < oc->lo / VERDICT_FACTOR) {
		oc->verdict = "Implausible";
		oc->reason = "FasterThanPrediction";
	} else if (cl->median_ns > oc->hi * VERDICT_FACTOR) {
		oc->verdict = "Consistent";
		oc->reason = "SlowerThanPrediction";
	} else {
		oc->verdict = "Consistent";
		oc->reason = "WithinPrediction";
	}
	snprintf(oc->msg, sizeof(oc->msg), "predicted %.4g ms on %s (%.4g to "
	    "%.4g ms): the reference reached %.1f%% of its floor on %s%s, and "
	    "the same fraction of this GPU's floor of %.4g ms gives the "
	    "prediction; the band reaches x%.2f above it and %s. The claimed "
	    "%.4g ms is %.3g x the prediction (implausible below the floor or "
	    "below 1/%g of the band's low end)", oc->predicted / 1e6, run_gpu,
	    oc->lo / 1e6, oc->hi / 1e6, 100 * f, ref_dev,
	    scaled ? " at a reduced shape" : "", cl->floor_ns / 1e6, oc->factor,
	    cpu ? "down to the floor (a CPU reference bounds a GPU's time "
	    "from above only)" : "as far below, not past the floor",
	    cl->median_ns / 1e6, cl->median_ns / oc->predicted, VERDICT_FACTOR);
}

/* Judges the program's result res (borrowed) against the claim. */
static void
judge(struct json_object *res, const claimed_run *cl, outcome *oc)
{
	struct json_object *correct = json_object_object_get(res, "correct");
	const char *backend = json_object_get_string(json_object_object_get(res,
	    "backend"));
	const char *ran_gpu = json_object_get_string(json_object_object_get(
	    json_object_object_get(res, "gpu"), "name"));
	int cpu = backend != NULL && strcmp(backend, "cpu") == 0;
	int scaled = json_object_get_boolean(json_object_object_get(res,
	    "scaled"));
	double ref = num_at(res, "latencyNs", "median");
	const api_gpu *g = !cpu && ran_gpu ? api_gpu_match_name(ran_gpu) : NULL;
	char dev[300];

	oc->complete_reason = "Measured";
	if (cpu)
		snprintf(dev, sizeof(dev), "the CPU backend");
	else
		snprintf(dev, sizeof(dev), "%s", ran_gpu ? ran_gpu :
		    "an unknown GPU");
	if (!json_object_get_boolean(correct)) {
		oc->ok = 0;
		oc->reason = "ReferenceIncorrect";
		snprintf(oc->msg, sizeof(oc->msg), "the reference kernel's output "
		    "disagreed with the float64 computation (max relative error "
		    "%g): no comparison is made", num_at(res, "maxRelError",
		    NULL));
		return;
	}
	if (cpu || scaled || g == NULL || cl->gpu == NULL || g != cl->gpu) {
		/* Never a ratio of times on different devices. */
		predict(res, cl, dev, cpu, scaled, oc);
		return;
	}
	oc->ok = 1;
	if (isnan(cl->median_ns) || isnan(ref) || ref <= 0) {
		oc->reason = "NoLatency";
		snprintf(oc->msg, sizeof(oc->msg), "the run has no median latency "
		    "to compare");
		return;
	}
	oc->ratio = cl->median_ns / ref;
	/* Faster than the reference by more than the factor is past what the
	 * hardware gave the reference: the claim does not hold up. Slower
	 * holds up: kernels may be slow. */
	oc->verdict = oc->ratio < 1 / VERDICT_FACTOR ? "Implausible" :
	    "Consistent";
	oc->reason = oc->ratio < 1 / VERDICT_FACTOR ? "FasterThanReference" :
	    oc->ratio > VERDICT_FACTOR ? "SlowerThanReference" :
	    "WithinReference";
	snprintf(oc->msg, sizeof(oc->msg), "the claimed median is %.3g x the "
	    "reference's on the same GPU (%s)", oc->ratio, dev);
}

/* The prediction's members, added to o. */
static void
add_prediction(struct json_object *o, const outcome *oc, const claimed_run *cl)
{
	struct json_object *p;

	if (isnan(oc->predicted))
		return;
	p = json_object_new_object();
	json_object_object_add(p, "gpu", json_object_new_string(cl->gpu->id));
	json_object_object_add(p, "medianNs",
	    json_object_new_double(oc->predicted));
	json_object_object_add(p, "lowNs", json_object_new_double(oc->lo));
	json_object_object_add(p, "highNs", json_object_new_double(oc->hi));
	json_object_object_add(p, "factor", json_object_new_double(oc->factor));
	json_object_object_add(p, "floorNs",
	    json_object_new_double(cl->floor_ns));
	json_object_object_add(p, "referenceFractionOfFloor",
	    json_object_new_double(oc->fraction));
	json_object_object_add(o, "prediction", p);
	if (!isnan(cl->median_ns))
		json_object_object_add(o, "claimedOverPredicted",
		    json_object_new_double(cl->median_ns / oc->predicted));
}

/* Writes the outcome on the Verification name and mirrors a summary on
 * the run (when stored), in txn; res (borrowed, may be NULL) is the
 * program's result. */
static int
record(api_ctx *ctx, store_txn *txn, const store_obj *v, const char *name,
	const char *runname, const outcome *oc, const claimed_run *cl,
	struct json_object *res)
{
	struct json_object *extra = json_object_new_object();
	struct json_object *summary = json_object_new_object();
	const char *ran_gpu = res ? json_object_get_string(json_object_object_get(
	    json_object_object_get(res, "gpu"), "name")) : NULL;
	double now = ctx->now();
	store_obj run;
	int rc = KI_ENOMEM;

	if (extra == NULL || summary == NULL)
		goto out;
	json_object_object_add(extra, "phase", json_object_new_string(oc->ok ?
	    "Succeeded" : "Failed"));
	json_object_object_add(extra, "verdict",
	    json_object_new_string(oc->verdict));
	json_object_object_add(extra, "reason", json_object_new_string(oc->reason));
	json_object_object_add(extra, "message", json_object_new_string(oc->msg));
	if (!isnan(cl->median_ns))
		json_object_object_add(extra, "claimedNs",
		    json_object_new_double(cl->median_ns));
	if (res != NULL && json_object_object_get(res, "latencyNs") != NULL)
		json_object_object_add(extra, "reference", json_object_get(
		    json_object_object_get(res, "latencyNs")));
	if (!isnan(oc->ratio))
		json_object_object_add(extra, "ratio",
		    json_object_new_double(oc->ratio));
	add_prediction(extra, oc, cl);
	if (res != NULL)
		json_object_object_add(extra, "result", json_object_get(res));
	add_time(extra, "finishedAt", now);
	if (v != NULL) {
		/* Keep when it started: the controller wrote it on claim. */
		struct json_object *old = api_json_parse_len(v->json + v->status_off,
		    v->status_len);
		struct json_object *sa = json_object_object_get(old, "startedAt");
		struct json_object *dev = json_object_object_get(old, "device");

		if (sa != NULL)
			json_object_object_add(extra, "startedAt", json_object_get(sa));
		/* The GPU the controller chose, written on claim. */
		if (dev != NULL)
			json_object_object_add(extra, "device", json_object_get(dev));
		if (old != NULL)
			json_object_put(old);
	}
	add_condition(extra, "Complete", oc->ok ? "True" : "False",
	    oc->ok ? oc->complete_reason : "Failed", oc->msg, now);
	/* What `kubectl wait --for=condition=Failed` waits for. */
	if (!oc->ok)
		add_condition(extra, "Failed", "True", oc->reason, oc->msg, now);
	add_condition(extra, "Verified", strcmp(oc->verdict, "Consistent") == 0 ?
	    "True" : strcmp(oc->verdict, "Implausible") == 0 ? "False" :
	    "Unknown", oc->reason, oc->msg, now);
	if ((rc = set_status(ctx, txn, name, extra)) != KI_OK)
		goto out;
	if (store_get_by_name(txn, API_RUN, runname, strlen(runname), &run) ==
	    KI_OK) {
		stored_copy c;
		struct json_object *kept = json_object_new_object();

		json_object_object_add(summary, "name", json_object_new_string(name));
		json_object_object_add(summary, "verdict",
		    json_object_new_string(oc->verdict));
		json_object_object_add(summary, "reason",
		    json_object_new_string(oc->reason));
		json_object_object_add(summary, "message",
		    json_object_new_string(oc->msg));
		/* A reference time is shown beside the claim only where it was
		 * measured on the run's own GPU. */
		if (!isnan(oc->ratio)) {
			json_object_object_add(summary, "referenceNs",
			    json_object_new_double(num_at(res, "latencyNs",
			    "median")));
			json_object_object_add(summary, "ratio",
			    json_object_new_double(oc->ratio));
		}
		if (!isnan(oc->predicted)) {
			json_object_object_add(summary, "predictedNs",
			    json_object_new_double(oc->predicted));
			json_object_object_add(summary, "predictedLowNs",
			    json_object_new_double(oc->lo));
			json_object_object_add(summary, "predictedHighNs",
			    json_object_new_double(oc->hi));
			if (!isnan(cl->median_ns))
				json_object_object_add(summary,
				    "claimedOverPredicted", json_object_new_double(
				    cl->median_ns / oc->predicted));
		}
		if (ran_gpu != NULL)
			json_object_object_add(summary, "gpu",
			    json_object_new_string(ran_gpu));
		else if (res != NULL && json_object_object_get(res, "backend"))
			json_object_object_add(summary, "gpu",
			    json_object_new_string("none (CPU backend)"));
		json_object_object_add(kept, "verification", json_object_get(summary));
		rc = stored_copy_make(&c, &run);
		if (rc == KI_OK)
			rc = stored_copy_put(ctx, txn, &c, kept);
		stored_copy_free(&c);
		json_object_put(kept);
	}
out:
	if (extra != NULL)
		json_object_put(extra);
	if (summary != NULL)
		json_object_put(summary);
	return rc;
}

static void
outcome_init(outcome *oc)
{
	memset(oc, 0, sizeof(*oc));
	oc->verdict = "Unverifiable";
	oc->reason = "ReferenceFailed";
	oc->complete_reason = "Measured";
	oc->ratio = oc->predicted = oc->lo = oc->hi = NAN;
	oc->factor = oc->fraction = NAN;
}

static int
commit(api_ctx *ctx, store_txn **txn)
{
	uint64_t rv = store_rv(*txn);
	int rc = store_commit(*txn);

	*txn = NULL;
	if (rc == KI_OK && ctx->committed != NULL)
		ctx->committed(ctx->committed_arg, rv);
	return rc;
}

int
api_verify_finish(api_ctx *ctx, const char *name, const char *result,
	size_t len, const char *error)
{
	struct json_object *res = NULL, *spec;
	store_txn *txn = NULL;
	store_obj v, run;
	char runname[STORE_MAX_NAME + 1];
	claimed_run cl = { NAN, NAN, NULL };
	outcome oc;
	int rc;

	outcome_init(&oc);
	if (result != NULL && len > 0)
		res = api_json_parse_len(result, len);
	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK)
		goto out;
	rc = store_get_by_name(txn, API_VERIFICATION, name, strlen(name), &v);
	if (rc != KI_OK)
		goto out;
	spec = api_json_parse_len(v.json + v.spec_off, v.spec_len);
	snprintf(runname, sizeof(runname), "%s", spec ? json_object_get_string(
	    json_object_object_get(spec, "runName")) : "");
	if (spec != NULL)
		json_object_put(spec);
	if (store_get_by_name(txn, API_RUN, runname, strlen(runname), &run) ==
	    KI_OK)
		run_claim(txn, &run, &cl);
	if (res != NULL && json_object_object_get(res, "error") == NULL) {
		judge(res, &cl, &oc);
	} else {
		const char *e = res ? json_object_get_string(json_object_object_get(
		    res, "error")) : NULL;

		snprintf(oc.msg, sizeof(oc.msg), "%s", error ? error : e ? e :
		    "the reference program gave no result");
		/* The program's own refusals (an unknown kernel, no device, too
		 * big for the card) are answers, not failures, and measured
		 * nothing. */
		if (error == NULL && e != NULL) {
			oc.ok = 1;
			oc.reason = strstr(e, "reference implementation") ?
			    "NoReference" : strstr(e, "device") ? "NoDevice" :
			    "NotMeasurable";
			oc.complete_reason = oc.reason;
		}
	}
	if ((rc = record(ctx, txn, &v, name, runname, &oc, &cl, res)) != KI_OK)
		goto out;
	rc = commit(ctx, &txn);
out:
	store_abort(txn);
	if (res != NULL)
		json_object_put(res);
	return rc;
}

/* api_verify_claim's work, limited to the Verification only when set. */
static int
claim(api_ctx *ctx, int include_running, const char *only, char *name,
	size_t namelen, ki_buf *request)
{
	for (;;) {
		store_txn *txn = NULL;
		pick p;
		store_obj o;
		struct json_object *spec, *extra;
		char run[STORE_MAX_NAME + 1], err[256];
		int rc;

		memset(&p, 0, sizeof(p));
		p.include_running = include_running;
		p.only = only;
		if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK)
			return rc;
		rc = store_list(txn, API_VERIFICATION, 0, pick_one, &p);
		if (rc != KI_OK || p.name[0] == '\0') {
			store_abort(txn);
			return rc != KI_OK ? rc : 0;
		}
		rc = store_get_by_name(txn, API_VERIFICATION, p.name, strlen(p.name),
		    &o);
		spec = rc == KI_OK ? api_json_parse_len(o.json + o.spec_off,
		    o.spec_len) : NULL;
		snprintf(run, sizeof(run), "%s", spec ? json_object_get_string(
		    json_object_object_get(spec, "runName")) : "");
		if (spec != NULL)
			json_object_put(spec);
		ki_buf_reset(request);
		rc = build_request(txn, run, request, err, sizeof(err));
		extra = json_object_new_object();
		if (extra == NULL) {
			store_abort(txn);
			return KI_ENOMEM;
		}
		if (rc == KI_OK) {
			json_object_object_add(extra, "phase",
			    json_object_new_string("Running"));
			add_time(extra, "startedAt", ctx->now());
		} else if (rc == NO_REFERENCE) {
			/* Nothing to measure: answered now, with no "Measured"
			 * condition and nothing run. */
			claimed_run cl = { NAN, NAN, NULL };
			outcome oc;

			outcome_init(&oc);
			oc.ok = 1;
			oc.reason = oc.complete_reason = "NoReference";
			snprintf(oc.msg, sizeof(oc.msg), "%s", err);
			json_object_put(extra);
			ki_buf_reset(request);
			rc = record(ctx, txn, NULL, p.name, run, &oc, &cl, NULL);
			goto recorded;
		} else {
			json_object_object_add(extra, "phase",
			    json_object_new_string("Failed"));
			json_object_object_add(extra, "verdict",
			    json_object_new_string("Unverifiable"));
			json_object_object_add(extra, "reason",
			    json_object_new_string("UnresolvedWorkload"));
			json_object_object_add(extra, "message",
			    json_object_new_string(err));
			add_condition(extra, "Complete", "False", "CannotBuildRequest",
			    err, ctx->now());
			add_condition(extra, "Failed", "True", "CannotBuildRequest",
			    err, ctx->now());
			add_time(extra, "finishedAt", ctx->now());
		}
		rc = set_status(ctx, txn, p.name, extra);
		json_object_put(extra);
recorded:
		if (rc == KI_OK)
			rc = commit(ctx, &txn);
		store_abort(txn);
		if (rc != KI_OK)
			return rc;
		if (request->len > 0) {
			snprintf(name, namelen, "%s", p.name);
			return 1;
		}
		/* That one failed at once: look for the next. */
	}
}

int
api_verify_claim(api_ctx *ctx, int include_running, char *name,
	size_t namelen, ki_buf *request)
{
	return claim(ctx, include_running, NULL, name, namelen, request);
}

int
api_verify_claim_named(api_ctx *ctx, const char *name, ki_buf *request)
{
	char got[STORE_MAX_NAME + 1];

	return claim(ctx, 1, name, got, sizeof(got), request);
}
