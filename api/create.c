/* api/create.c — create: a POST of one object, a bundle, a List or
 * NDJSON, parsed, checked and committed as one job. */
#include "api/upload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Warns of each label a client gave a run it created that the server
 * derives from the spec and so set otherwise. */
static void
warn_derived(store_txn *txn, create_job *j, api_resp *r)
{
	for (size_t i = 0; i < j->u.n && r->nwarnings < API_MAX_WARNINGS; i++) {
		element *e = &j->u.els[i];

		for (size_t k = 0; k < e->ndocs && !e->failed; k++) {
			api_doc *d = &e->docs[k];
			store_obj o;

			if (d->kind->id != API_RUN || !d->created || d->obj == NULL ||
			    store_get_by_name(txn, API_RUN, d->stored_name,
			    strlen(d->stored_name), &o) != KI_OK)
				continue;
			api_warn_overridden_labels(r, json_object_object_get(
			    json_object_object_get(d->obj, "metadata"), "labels"), &o);
		}
	}
}

/* Writes the elements and renders the answer inside txn. Returns 0 to keep
 * the writes, else they are dropped (the answer says why). */
static int
create_write(store_txn *txn, void *arg)
{
	create_job *j = arg;
	api_resp *r = j->r;
	uint64_t rv0 = store_rv(txn);   /* before the writes: a dry run's */
	int rc;

	/* A job that may run again (job.rerun, job.again) starts from what
	 * admission left. */
	j->any_created = 0;
	r->created = NULL;
	if (!j->ran) {
		j->ran = 1;
		j->warn_mark = r->nwarnings;
	}
	/* A run before this one warned too. */
	while (r->nwarnings > j->warn_mark)
		free(r->warnings[--r->nwarnings]);
	if (j->job.rerun || j->job.again)
		for (size_t i = 0; i < j->u.n; i++) {
			element *e = &j->u.els[i];

			if (e->refused)
				continue;
			e->failed = 0;
			api_status_free(&e->st);
			api_status_init(&e->st);
		}
	for (size_t i = 0; i < j->u.n; i++) {
		element *e = &j->u.els[i];

		if (e->failed)
			continue;
		rc = write_element(j->ctx, txn, e);
		if (rc != KI_OK || (e->failed && (!j->bulk || j->atomic))) {
			api_resp_status(r, &e->st);
			return rc != KI_OK ? rc : KI_ECONFLICT;
		}
		for (size_t k = 0; k < e->ndocs && !e->failed; k++)
			j->any_created |= e->docs[k].created;
	}
	ki_buf_reset(&r->body);
	warn_derived(txn, j, r);
	if (!j->bulk && j->u.els[0].ndocs == 1) {
		api_doc *d = &j->u.els[0].docs[0];

		rc = copy_stored(txn, d->kind, d->stored_name, &r->body);
		/* A dry run gave the object no resourceVersion. */
		if (rc == KI_OK && d->created && j->dry_run)
			rc = api_body_set_rv(&r->body, NULL);
		if (rc == KI_OK && d->created) {
			r->created = d->kind;
			snprintf(r->created_name, sizeof(r->created_name), "%s",
			    d->stored_name);
		}
		/* The same content under another name is the stored object
		 * (it keeps its first name): the name sent is not taken, and
		 * the client is told so. */
		if (rc == KI_OK && !d->created && d->name != NULL &&
		    strcmp(d->name, d->stored_name) != 0)
			api_resp_warn(r, "the content is already stored as %s "
			    "\"%.253s\": no object named \"%.253s\" was created (an "
			    "object keeps its first name)", d->kind->kind,
			    d->stored_name, d->name);
	} else {
		render_result(j->u.els, j->u.n, j->dry_run ? rv0 : store_rv(txn),
		    j->dry_run, &r->body);
		rc = r->body.oom ? KI_ENOMEM : KI_OK;
	}
	if (rc != KI_OK) {
		api_fail_rc(r, rc, "rendering the answer");
		return rc;
	}
	r->code = j->any_created ? 201 : 200;
	/* A dry run answers as if it wrote, and keeps nothing. */
	return j->dry_run ? KI_ECONFLICT : KI_OK;
}

void
create_job_free(create_job *j)
{
	upload_free(&j->u);
	free(j);
}

static void
create_job_release(void *arg)
{
	create_job_free(arg);
}

/* After the batch: a failed commit turns a success into an error. */
static void
create_done(store_job *job, int commit_rc)
{
	create_job *j = (create_job *)(void *)job;
	store_job_done user = j->user_done;

	if (job->rc == KI_OK && commit_rc != KI_OK) {
		ki_buf_reset(&j->r->body);
		j->r->created = NULL;
		api_fail_rc(j->r, commit_rc, "committing the write");
	}
	/* The caller's done() wakes whoever answers with r, and that thread
	 * frees j with r: the thread that parsed the upload frees it, and the
	 * committer goes on with the next batch. Nothing of j is touched
	 * after done(). */
	if (user == NULL) {
		create_job_free(j);
		return;
	}
	j->r->release = create_job_release;
	j->r->release_arg = j;
	user(job, commit_rc);
}

void
api_create(api_ctx *ctx, const api_kind *coll, const char *body, size_t len,
	int ndjson, const api_write_opts *opt, api_resp *r)
{
	create_job *j;
	api_status st;
	store_txn *txn = NULL;
	int rc, any_failed = 0;

	api_status_init(&st);
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		api_fail_rc(r, KI_ENOMEM, "reading the upload");
		return;
	}
	j->ctx = ctx;
	j->r = r;
	j->atomic = opt->atomic;
	j->dry_run = opt->dry_run;
	rc = parse_upload(ctx, coll, body, len, ndjson, &j->u, &j->bulk, &st);
	if (rc != KI_OK) {
		if (st.code == 0)
			api_status_from_rc(&st, rc, "reading the upload");
		api_resp_status(r, &st);
		goto out;
	}
	for (size_t i = 0; i < j->u.n; i++) {
		admit_element(&j->u.els[i], opt, r);
		any_failed |= j->u.els[i].failed;
	}
	if (j->u.n == 0) {
		api_status_fail(&st, 400, "BadRequest", "the upload holds no "
		    "documents");
		api_resp_status(r, &st);
		goto out;
	}
	/* A lone document or bundle is all or nothing, and so is an atomic
	 * bulk upload: one failure fails it whole with that Status. */
	if (any_failed && (!j->bulk || opt->atomic)) {
		for (size_t i = 0; i < j->u.n; i++) {
			if (j->u.els[i].failed) {
				api_resp_status(r, &j->u.els[i].st);
				break;
			}
		}
		goto out;
	}
	if (ctx->committer != NULL && !opt->dry_run) {
		/* Durable writes share a commit: the caller submits the job and
		 * answers when it is done. The rendering of new objects happens
		 * here, on this request's thread, so that the one thread that
		 * writes does little more than store them. */
		if (store_begin_ahead(ctx->st, &txn) == KI_OK) {
			for (size_t i = 0; i < j->u.n; i++)
				for (size_t k = 0; !j->u.els[i].failed &&
				    k < j->u.els[i].ndocs; k++)
					prerender_doc(ctx, txn, &j->u.els[i].docs[k]);
			store_abort(txn);
			txn = NULL;
		}
		j->job.fn = create_write;
		j->job.arg = j;
		/* One document or bundle: create_write can run it again from the
		 * start, so it needs no transaction of its own. */
		j->job.rerun = !j->bulk && j->u.n == 1;
		/* A List or NDJSON runs in a child transaction of its own, and
		 * again from the start when another daemon's commit came
		 * first (a store several daemons share). */
		j->job.again = 1;
		for (size_t i = 0; i < j->u.n; i++)
			j->u.els[i].refused = j->u.els[i].failed;
		j->user_done = NULL;
		j->job.done = create_done;
		r->job = &j->job;
		api_status_free(&st);
		return;
	}
	if ((rc = store_begin(ctx->st, 1, &txn)) != KI_OK) {
		api_fail_rc(r, rc, "opening a write transaction");
		goto out;
	}
	rc = create_write(txn, j);
	if (rc != KI_OK) {
		store_abort(txn);
	} else {
		uint64_t rv = store_rv(txn);

		rc = store_commit(txn);
		if (rc != KI_OK) {
			ki_buf_reset(&r->body);
			r->created = NULL;
			api_fail_rc(r, rc, "committing the write");
		} else if (j->any_created && ctx->committed != NULL) {
			ctx->committed(ctx->committed_arg, rv);
		}
	}
out:
	create_job_free(j);
	api_status_free(&st);
}

void
api_create_submit(api_ctx *ctx, api_resp *r, store_job_done done, void *cookie)
{
	create_job *j = (create_job *)(void *)r->job;

	/* done runs after the job has finished the answer. */
	j->user_done = done;
	j->job.cookie = cookie;
	r->job = NULL;
	store_committer_submit(ctx->committer, &j->job);
}

int
api_committer_start(api_committer **out, store *s, size_t max_batch,
	void (*committed)(void *arg, uint64_t rv), void *arg)
{
	return store_committer_start(out, s, max_batch, committed, arg);
}

void
api_committer_stop(api_committer *c)
{
	store_committer_stop(c);
}
