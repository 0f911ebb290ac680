/* api/verify.c — claiming Verifications and recording their outcome. */
#include "api/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/gpu.h"
#include "api/object.h"
#include "api/runstatus.h"
#include "api/schema.h"
#include "api/service_int.h"

/* A claimed run within these factors of the reference is consistent. */
#define VERDICT_FACTOR 2.0

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
		if (rc == KI_OK) {
			uint64_t rv = store_rv(txn);

			rc = store_commit(txn);
			txn = NULL;
			if (rc == KI_OK && ctx->committed != NULL)
				ctx->committed(ctx->committed_arg, rv);
		}
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

/* The run's claimed median latency (ns) and its GPU's table id. */
static double
run_claim(store_txn *txn, const store_obj *run, char *gpu, size_t n)
{
	struct json_object *spec = api_json_parse_len(run->json + run->spec_off,
	    run->spec_len);
	double v = num_at(spec, "timing", "latencyNs");
	store_obj e;

	if (spec != NULL) {
		struct json_object *lat = NULL;

		json_object_object_get_ex(json_object_object_get(spec, "timing"),
		    "latencyNs", &lat);
		v = num_at(lat, "median", NULL);
		json_object_put(spec);
	}
	gpu[0] = '\0';
	if (run->nrefs == API_NREFS && store_get_by_digest(txn,
	    run->refs + API_REF_ENVIRONMENT * API_DIGEST_LEN, &e) == KI_OK) {
		struct json_object *es = api_json_parse_len(e.json + e.spec_off,
		    e.spec_len);
		const api_gpu *g = api_gpu_match_hardware(json_object_object_get(es,
		    "hardware"));

		if (g != NULL)
			snprintf(gpu, n, "%s", g->id);
		if (es != NULL)
			json_object_put(es);
	}
	return v;
}

int
api_verify_finish(api_ctx *ctx, const char *name, const char *result,
	size_t len, const char *error)
{
	struct json_object *res = NULL, *extra = NULL, *summary = NULL, *spec;
	store_txn *txn = NULL;
	store_obj v, run;
	char runname[STORE_MAX_NAME + 1], gpu[64], msg[512];
	const char *verdict = "Unverifiable", *reason = "ReferenceFailed";
	const char *ran_gpu = NULL;
	double claimed, ref = NAN, now = ctx->now();
	int rc, ok = 0;

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
	extra = json_object_new_object();
	summary = json_object_new_object();
	if (extra == NULL || summary == NULL) {
		rc = KI_ENOMEM;
		goto out;
	}
	claimed = NAN;
	gpu[0] = '\0';
	if (store_get_by_name(txn, API_RUN, runname, strlen(runname), &run) ==
	    KI_OK)
		claimed = run_claim(txn, &run, gpu, sizeof(gpu));
	if (res != NULL && json_object_object_get(res, "error") == NULL) {
		struct json_object *correct = json_object_object_get(res, "correct");
		struct json_object *scaled = json_object_object_get(res, "scaled");
		const api_gpu *g;

		ref = num_at(res, "latencyNs", "median");
		ran_gpu = json_object_get_string(json_object_object_get(
		    json_object_object_get(res, "gpu"), "name"));
		g = ran_gpu ? api_gpu_match_name(ran_gpu) : NULL;
		if (!json_object_get_boolean(correct)) {
			reason = "ReferenceIncorrect";
			snprintf(msg, sizeof(msg), "the reference kernel's output "
			    "disagreed with the float64 computation (max relative "
			    "error %g): no comparison is made", num_at(res,
			    "maxRelError", NULL));
		} else if (json_object_get_boolean(scaled)) {
			reason = "ScaledDown";
			ok = 1;
			snprintf(msg, sizeof(msg), "the reference ran a reduced shape "
			    "on the %s backend: it checks the path, not the figure",
			    json_object_get_string(json_object_object_get(res,
			    "backend")));
		} else if (g == NULL || strcmp(g->id, gpu) != 0) {
			reason = "NoMatchingGPU";
			ok = 1;
			snprintf(msg, sizeof(msg), "measured on %s, the run is from %s: "
			    "the ratio compares different GPUs", ran_gpu ? ran_gpu :
			    "an unknown GPU", gpu[0] ? gpu : "an unknown GPU");
		} else if (isnan(claimed) || isnan(ref) || ref <= 0) {
			reason = "NoLatency";
			ok = 1;
			snprintf(msg, sizeof(msg), "the run has no median latency to "
			    "compare");
		} else {
			double ratio = claimed / ref;

			ok = 1;
			/* Faster than the reference by more than the factor is past
			 * what the hardware gave the reference: the claim does not
			 * hold up. Slower holds up: kernels may be slow. */
			verdict = ratio < 1 / VERDICT_FACTOR ? "Implausible" :
			    "Consistent";
			reason = ratio < 1 / VERDICT_FACTOR ? "FasterThanReference" :
			    ratio > VERDICT_FACTOR ? "SlowerThanReference" :
			    "WithinReference";
			snprintf(msg, sizeof(msg), "the claimed median is %.3g x the "
			    "reference's on the same GPU", ratio);
		}
		json_object_object_add(extra, "result", json_object_get(res));
	} else {
		const char *e = res ? json_object_get_string(json_object_object_get(
		    res, "error")) : NULL;

		snprintf(msg, sizeof(msg), "%s", error ? error : e ? e :
		    "the reference program gave no result");
		/* The program's own refusals (an unknown kernel, no device, too
		 * big for the card) are answers, not failures. */
		if (error == NULL && e != NULL) {
			ok = 1;
			reason = strstr(e, "kernel") ? "UnknownKernel" :
			    strstr(e, "device") ? "NoDevice" : "NotMeasurable";
		}
	}
	json_object_object_add(extra, "phase", json_object_new_string(ok ?
	    "Succeeded" : "Failed"));
	json_object_object_add(extra, "verdict", json_object_new_string(verdict));
	json_object_object_add(extra, "reason", json_object_new_string(reason));
	json_object_object_add(extra, "message", json_object_new_string(msg));
	if (!isnan(claimed))
		json_object_object_add(extra, "claimedNs",
		    json_object_new_double(claimed));
	if (!isnan(ref))
		json_object_object_add(extra, "reference", json_object_get(
		    json_object_object_get(res, "latencyNs")));
	if (!isnan(claimed) && !isnan(ref) && ref > 0)
		json_object_object_add(extra, "ratio",
		    json_object_new_double(claimed / ref));
	add_time(extra, "finishedAt", now);
	{
		/* Keep when it started: the controller wrote it on claim. */
		struct json_object *old = api_json_parse_len(v.json + v.status_off,
		    v.status_len);
		struct json_object *sa = json_object_object_get(old, "startedAt");
		struct json_object *dev = json_object_object_get(old, "device");

		if (sa != NULL)
			json_object_object_add(extra, "startedAt", json_object_get(sa));
		if (dev != NULL)
			json_object_object_add(extra, "device", json_object_get(dev));
		if (old != NULL)
			json_object_put(old);
	}
	add_condition(extra, "Complete", ok ? "True" : "False", ok ? "Measured" :
	    "Failed", msg, now);
	/* What `kubectl wait --for=condition=Failed` waits for. */
	if (!ok)
		add_condition(extra, "Failed", "True", reason, msg, now);
	add_condition(extra, "Verified", strcmp(verdict, "Consistent") == 0 ?
	    "True" : strcmp(verdict, "Implausible") == 0 ? "False" : "Unknown",
	    reason, msg, now);
	if ((rc = set_status(ctx, txn, name, extra)) != KI_OK)
		goto out;
	/* Mirror onto the run. */
	if (store_get_by_name(txn, API_RUN, runname, strlen(runname), &run) ==
	    KI_OK) {
		stored_copy c;
		struct json_object *kept = json_object_new_object();

		json_object_object_add(summary, "name", json_object_new_string(name));
		json_object_object_add(summary, "verdict",
		    json_object_new_string(verdict));
		json_object_object_add(summary, "reason",
		    json_object_new_string(reason));
		json_object_object_add(summary, "message",
		    json_object_new_string(msg));
		if (!isnan(ref))
			json_object_object_add(summary, "referenceNs",
			    json_object_new_double(ref));
		if (!isnan(claimed) && !isnan(ref) && ref > 0)
			json_object_object_add(summary, "ratio",
			    json_object_new_double(claimed / ref));
		if (ran_gpu != NULL)
			json_object_object_add(summary, "gpu",
			    json_object_new_string(ran_gpu));
		json_object_object_add(kept, "verification", json_object_get(summary));
		rc = stored_copy_make(&c, &run);
		if (rc == KI_OK)
			rc = stored_copy_put(ctx, txn, &c, kept);
		stored_copy_free(&c);
		json_object_put(kept);
		if (rc != KI_OK)
			goto out;
	}
	{
		uint64_t rv = store_rv(txn);

		rc = store_commit(txn);
		txn = NULL;
		if (rc == KI_OK && ctx->committed != NULL)
			ctx->committed(ctx->committed_arg, rv);
	}
out:
	store_abort(txn);
	if (res != NULL)
		json_object_put(res);
	if (extra != NULL)
		json_object_put(extra);
	if (summary != NULL)
		json_object_put(summary);
	return rc;
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
