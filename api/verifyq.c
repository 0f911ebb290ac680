/* api/verifyq.c — the scheduler's view of the waiting Verifications and
 * the statuses it writes itself (see api/verifyq.h). */
#include "api/verifyq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "physics/gpu.h"
#include "api/object.h"
#include "api/service_int.h"

typedef struct collect {
	api_vwait *v;
	size_t n, cap;
	int oom;
} collect;

/* Whether phase (a Verification's status.phase) waits for a device. */
static int
waiting_phase(const store_obj *o, int *running)
{
	struct json_object *st = api_json_parse_len(o->json + o->status_off,
	    o->status_len);
	const char *ph = json_object_get_string(json_object_object_get(st,
	    "phase"));
	int w = ph != NULL && (strcmp(ph, "Pending") == 0 ||
	    strcmp(ph, "Running") == 0);

	*running = ph != NULL && strcmp(ph, "Running") == 0;
	if (st != NULL)
		json_object_put(st);
	return w;
}

/* s, or "" when NULL. */
static const char *
str_or_empty(const char *s)
{
	return s != NULL ? s : "";
}

static int
collect_one(void *arg, const store_obj *o)
{
	collect *c = arg;
	struct json_object *spec;
	api_vwait *w;
	int running;

	if (!waiting_phase(o, &running) || o->name_len >= sizeof(w->name))
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		api_vwait *nv = realloc(c->v, cap * sizeof(*nv));

		if (nv == NULL) {
			c->oom = 1;
			return 1;
		}
		c->v = nv;
		c->cap = cap;
	}
	w = &c->v[c->n++];
	memset(w, 0, sizeof(*w));
	snprintf(w->name, sizeof(w->name), "%.*s", (int)o->name_len, o->name);
	w->rv = o->rv;
	w->running = running;
	spec = api_json_parse_len(o->json + o->spec_off, o->spec_len);
	snprintf(w->want, sizeof(w->want), "%s", str_or_empty(
	    json_object_get_string(json_object_object_get(spec, "gpu"))));
	/* The run's name rides in source until the run is read. */
	snprintf(w->source, sizeof(w->source), "%s", str_or_empty(
	    json_object_get_string(json_object_object_get(spec, "runName"))));
	if (spec != NULL)
		json_object_put(spec);
	return 0;
}

/* Fills w's source and, for spec.gpu "run", want_id from its run. */
static void
read_run(store_txn *txn, api_vwait *w)
{
	struct json_object *spec = NULL, *es = NULL;
	store_obj run, e;
	const char *runname = w->source;

	if (store_get_by_name(txn, API_RUN, runname, strlen(runname), &run) !=
	    KI_OK) {
		w->source[0] = '\0';
		return;
	}
	if (strcmp(w->want, "run") == 0 && run.nrefs == API_NREFS &&
	    store_get_by_digest(txn, run.refs + API_REF_ENVIRONMENT *
	    API_DIGEST_LEN, &e) == KI_OK) {
		const api_gpu *g;

		es = api_json_parse_len(e.json + e.spec_off, e.spec_len);
		g = api_gpu_match_hardware(json_object_object_get(es, "hardware"));
		if (g != NULL)
			snprintf(w->want_id, sizeof(w->want_id), "%s", g->id);
		if (es != NULL)
			json_object_put(es);
	}
	spec = api_json_parse_len(run.json + run.spec_off, run.spec_len);
	snprintf(w->source, sizeof(w->source), "%s", str_or_empty(
	    json_object_get_string(json_object_object_get(
	    json_object_object_get(spec, "sourceNative"), "source"))));
	if (spec != NULL)
		json_object_put(spec);
}

int
api_verify_waiting(api_ctx *ctx, api_vwait **out, size_t *n)
{
	store_txn *txn = NULL;
	collect c;
	int rc;

	memset(&c, 0, sizeof(c));
	*out = NULL;
	*n = 0;
	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK)
		return rc;
	rc = store_list(txn, API_VERIFICATION, 0, collect_one, &c);
	if (rc == KI_OK && c.oom)
		rc = KI_ENOMEM;
	for (size_t i = 0; rc == KI_OK && i < c.n; i++) {
		const api_gpu *g;

		read_run(txn, &c.v[i]);
		if (c.v[i].want[0] != '\0' && strcmp(c.v[i].want, "run") != 0 &&
		    (g = api_gpu_match_name(c.v[i].want)) != NULL)
			snprintf(c.v[i].want_id, sizeof(c.v[i].want_id), "%s",
			    g->id);
	}
	store_abort(txn);
	if (rc != KI_OK) {
		free(c.v);
		return rc;
	}
	*out = c.v;
	*n = c.n;
	return KI_OK;
}

static void
add_time(struct json_object *o, const char *key, double t)
{
	ki_buf b;

	ki_buf_init(&b);
	api_format_time(t, &b);
	json_object_object_add(o, key, json_object_new_string(b.data ? b.data :
	    ""));
	ki_buf_free(&b);
}

static struct json_object *
condition(const char *type, const char *status, const char *reason,
	const char *message, double now)
{
	struct json_object *c = json_object_new_object();

	json_object_object_add(c, "type", json_object_new_string(type));
	json_object_object_add(c, "status", json_object_new_string(status));
	json_object_object_add(c, "reason", json_object_new_string(reason));
	json_object_object_add(c, "message", json_object_new_string(message));
	add_time(c, "lastTransitionTime", now);
	return c;
}

/* Rewrites the waiting Verification name's status: with replace, extra
 * (borrowed) is the whole status, else its members are added to the
 * stored ones. */
static int
rewrite(api_ctx *ctx, const char *name, struct json_object *extra,
	int replace)
{
	struct json_object *st = NULL;
	store_txn *txn = NULL;
	stored_copy c;
	store_obj o;
	int rc, running, made = 0;

	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK)
		return rc;
	rc = store_get_by_name(txn, API_VERIFICATION, name, strlen(name), &o);
	if (rc == KI_OK && !waiting_phase(&o, &running))
		rc = KI_ENOTFOUND;
	if (rc == KI_OK && (rc = stored_copy_make(&c, &o)) == KI_OK)
		made = 1;
	if (rc == KI_OK && !replace) {
		st = api_json_parse_len(c.status.data, c.status.len);
		if (st == NULL)
			st = json_object_new_object();
		if (st == NULL)
			rc = KI_ENOMEM;
		else {
			json_object_object_foreach(extra, key, val)
				json_object_object_add(st, key,
				    json_object_get(val));
		}
	}
	if (rc == KI_OK)
		rc = stored_copy_put(ctx, txn, &c, replace ? extra : st);
	if (rc == KI_OK) {
		uint64_t rv = store_rv(txn);

		rc = store_commit(txn);
		txn = NULL;
		if (rc == KI_OK && ctx->committed != NULL)
			ctx->committed(ctx->committed_arg, rv);
	}
	if (made)
		stored_copy_free(&c);
	if (st != NULL)
		json_object_put(st);
	if (txn != NULL)
		store_abort(txn);
	return rc;
}

int
api_verify_give_up(api_ctx *ctx, const char *name, const char *reason,
	const char *message)
{
	struct json_object *st = json_object_new_object();
	struct json_object *conds = json_object_new_array();
	double now = ctx->now();
	int rc;

	if (st == NULL || conds == NULL) {
		json_object_put(st);
		json_object_put(conds);
		return KI_ENOMEM;
	}
	json_object_object_add(st, "phase", json_object_new_string("Failed"));
	json_object_object_add(st, "verdict",
	    json_object_new_string("Unverifiable"));
	json_object_object_add(st, "reason", json_object_new_string(reason));
	json_object_object_add(st, "message", json_object_new_string(message));
	json_object_array_add(conds, condition("Complete", "False", reason,
	    message, now));
	json_object_array_add(conds, condition("Failed", "True", reason,
	    message, now));
	json_object_object_add(st, "conditions", conds);
	add_time(st, "finishedAt", now);
	rc = rewrite(ctx, name, st, 1);
	json_object_put(st);
	return rc;
}

int
api_verify_note_device(api_ctx *ctx, const char *name, const char *uuid,
	const char *model, int index)
{
	struct json_object *st = json_object_new_object();
	struct json_object *d = json_object_new_object();
	int rc;

	if (st == NULL || d == NULL) {
		json_object_put(st);
		json_object_put(d);
		return KI_ENOMEM;
	}
	json_object_object_add(d, "uuid", json_object_new_string(uuid));
	json_object_object_add(d, "name", json_object_new_string(model));
	json_object_object_add(d, "index", json_object_new_int(index));
	json_object_object_add(st, "device", d);
	rc = rewrite(ctx, name, st, 0);
	json_object_put(st);
	return rc;
}
