/* api/stream.c — streamed NDJSON uploads: a body written in chunks as
 * it arrives, each chunk one commit, the answer spilled to a file. */
#define _GNU_SOURCE /* O_TMPFILE */
#include "api/upload.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/auth.h"

/* ---- streamed NDJSON uploads ---- */

#define STREAM_CHUNK_LINES 512          /* lines written per commit */
#define STREAM_CHUNK_BYTES (2u << 20)   /* or this much of the body */
#define STREAM_KEEP_BYTES (1u << 20)    /* answer kept in memory, then spilled */

struct api_stream {
	api_ctx *ctx;
	api_write_opts opt;
	api_principal who;
	ki_buf in;                 /* body not yet taken: lines after the chunk */
	uint64_t total;            /* bytes of the body fed */
	long line;                 /* lines seen */
	int overlong;              /* dropping the rest of an overlong line */
	create_job *chunk;         /* being filled */
	size_t chunk_bytes;
	int busy;                  /* a chunk is out being written */
	size_t created, unchanged, failed;
	uint64_t rv;
	int first;
	ki_buf items;              /* rendered items not yet spilled */
	FILE *spill;
	uint64_t spilled;
	api_status fatal;          /* why the upload stopped */
	long fatal_line;           /* its first line that was not written */
	api_resp warn;             /* warnings collected for the answer */
	store_job_done user_done;
};

api_stream *
api_stream_open(api_ctx *ctx, const api_write_opts *opt)
{
	api_stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->ctx = ctx;
	s->opt = *opt;
	if (opt->who != NULL) {
		s->who = *opt->who;
		s->opt.who = &s->who;
	}
	ki_buf_init(&s->in);
	ki_buf_init(&s->items);
	api_status_init(&s->fatal);
	api_resp_init(&s->warn);
	s->first = 1;
	return s;
}

void
api_stream_free(api_stream *s)
{
	if (s == NULL)
		return;
	if (s->chunk != NULL)
		create_job_free(s->chunk);
	ki_buf_free(&s->in);
	ki_buf_free(&s->items);
	if (s->spill != NULL)
		fclose(s->spill);
	api_status_free(&s->fatal);
	api_resp_free(&s->warn);
	free(s);
}

int
api_stream_failed(const api_stream *s)
{
	return s->fatal.code != 0;
}

static void
stream_fail(api_stream *s, int rc, const char *what, long line)
{
	if (s->fatal.code != 0)
		return;
	api_status_from_rc(&s->fatal, rc, what);
	s->fatal_line = line;
}

FILE *
api_spill_open(const char *dir)
{
#ifdef O_TMPFILE
	if (dir != NULL) {
		int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

		if (fd >= 0) {
			FILE *f = fdopen(fd, "w+");

			if (f == NULL)
				close(fd);
			return f;
		}
	}
#endif
	return tmpfile();
}

/* Moves the rendered items to the spill file once they outgrow memory
 * (always, when flush is set and a file exists). */
static void
stream_spill(api_stream *s, int flush)
{
	if (s->items.len == 0 || (s->items.len < STREAM_KEEP_BYTES &&
	    !(flush && s->spill != NULL)))
		return;
	if (s->spill == NULL && (s->spill = api_spill_open(s->ctx->spill_dir)) ==
	    NULL) {
		stream_fail(s, KI_EIO, "keeping the upload's answer", s->line);
		return;
	}
	if (fwrite(s->items.data, 1, s->items.len, s->spill) != s->items.len) {
		stream_fail(s, KI_EIO, "keeping the upload's answer", s->line);
		return;
	}
	s->spilled += s->items.len;
	ki_buf_reset(&s->items);
}

/* Takes the lines of s->in into the chunk until it is full. at_end: the
 * body is complete, so a last line needs no newline. */
static void
stream_take(api_stream *s, int at_end)
{
	size_t pos = 0, max_line = s->ctx->lim->max_body;
	const char *b = s->in.data;

	while (pos < s->in.len && s->fatal.code == 0 &&
	    (s->chunk == NULL || (s->chunk->u.n < STREAM_CHUNK_LINES &&
	    s->chunk_bytes < STREAM_CHUNK_BYTES))) {
		const char *nl = memchr(b + pos, '\n', s->in.len - pos);
		size_t end, st;

		if (s->overlong) {
			/* The rest of a line already reported as too long. */
			if (nl == NULL) {
				pos = s->in.len;
				break;
			}
			pos = (size_t)(nl - b) + 1;
			s->overlong = 0;
			continue;
		}
		if (nl == NULL && !at_end) {
			if (s->in.len - pos <= max_line)
				break;      /* wait for the rest of the line */
		}
		end = nl != NULL ? (size_t)(nl - b) : s->in.len;
		if (s->chunk == NULL) {
			if ((s->chunk = calloc(1, sizeof(*s->chunk))) == NULL) {
				stream_fail(s, KI_ENOMEM, "reading the upload", s->line + 1);
				break;
			}
			s->chunk->ctx = s->ctx;
			s->chunk->bulk = 1;
			s->chunk_bytes = 0;
		}
		s->line++;
		if (end - pos > max_line) {
			element *e = upload_add(&s->chunk->u);

			if (e == NULL) {
				stream_fail(s, KI_ENOMEM, "reading the upload", s->line);
				break;
			}
			e->index = s->line;
			e->failed = 1;
			api_status_fail(&e->st, 413, "RequestEntityTooLarge", "line %ld "
			    "is longer than the limit of %zu bytes for one document",
			    s->line, max_line);
			s->overlong = nl == NULL;
			pos = nl != NULL ? end + 1 : s->in.len;
			continue;
		}
		st = pos;
		pos = nl != NULL ? end + 1 : end;
		while (st < end && (b[st] == ' ' || b[st] == '\r' || b[st] == '\t'))
			st++;
		if (st == end)
			continue;
		if (add_line(s->ctx, &s->chunk->u, b + st, end - st, s->line) !=
		    KI_OK) {
			stream_fail(s, KI_ENOMEM, "reading the upload", s->line);
			break;
		}
		admit_element(&s->chunk->u.els[s->chunk->u.n - 1], &s->opt,
		    &s->warn);
		s->chunk_bytes += end - st;
	}
	if (pos > 0) {
		memmove(s->in.data, s->in.data + pos, s->in.len - pos);
		s->in.len -= pos;
	}
}

/* Hands out the chunk when it is full, or at the end when it holds
 * anything. */
static void
stream_ready(api_stream *s, int at_end, store_job **job)
{
	*job = NULL;
	if (s->fatal.code != 0 || s->chunk == NULL)
		return;
	if (s->chunk->u.n == 0) {
		if (at_end) {
			create_job_free(s->chunk);
			s->chunk = NULL;
		}
		return;
	}
	if (!at_end && s->chunk->u.n < STREAM_CHUNK_LINES &&
	    s->chunk_bytes < STREAM_CHUNK_BYTES)
		return;
	*job = &s->chunk->job;
	s->chunk->stream = s;
	s->chunk = NULL;
	s->busy = 1;
}

void
api_stream_feed(api_stream *s, const char *data, size_t len, store_job **job)
{
	*job = NULL;
	if (s->fatal.code != 0)
		return;
	s->total += len;
	if (s->total > s->ctx->lim->max_stream_body) {
		api_status_fail(&s->fatal, 413, "RequestEntityTooLarge", "the request "
		    "body is larger than the limit of %llu bytes",
		    (unsigned long long)s->ctx->lim->max_stream_body);
		s->fatal_line = s->line + 1;
		return;
	}
	if (s->overlong) {
		/* Drop what belongs to an overlong line before keeping any. */
		const char *nl = memchr(data, '\n', len);

		if (nl == NULL)
			return;
		s->overlong = 0;
		len -= (size_t)(nl + 1 - data);
		data = nl + 1;
	}
	if (ki_buf_append(&s->in, data, len) != KI_OK) {
		stream_fail(s, KI_ENOMEM, "reading the upload", s->line + 1);
		return;
	}
	stream_take(s, 0);
	stream_ready(s, 0, job);
}

void
api_stream_end(api_stream *s, store_job **job)
{
	*job = NULL;
	if (s->fatal.code != 0)
		return;
	stream_take(s, 1);
	stream_ready(s, 1, job);
}

/* The committer runs this for a chunk: every good line is written, the
 * bad ones reported; a store failure drops the chunk and stops the
 * upload. */
static int
stream_write(store_txn *txn, void *arg)
{
	create_job *j = arg;
	api_stream *s = j->stream;
	size_t created = 0, unchanged = 0, failed = 0;

	/* Run again after another daemon's commit came first (job.again):
	 * the items the run before rendered go, and its elements start
	 * from what admission left. A run that stopped the upload stays
	 * its answer. */
	if (j->ran) {
		if (j->ran_failed)
			return KI_ECONFLICT;
		s->items.len = j->items_mark;
		if (s->items.data != NULL)
			s->items.data[s->items.len] = '\0';
		s->first = j->first_mark;
		for (size_t i = 0; i < j->u.n; i++) {
			element *e = &j->u.els[i];

			if (e->refused)
				continue;
			e->failed = 0;
			api_status_free(&e->st);
			api_status_init(&e->st);
		}
	}
	j->ran = 1;
	j->items_mark = s->items.len;
	j->first_mark = s->first;
	for (size_t i = 0; i < j->u.n; i++) {
		element *e = &j->u.els[i];
		int rc;

		if (!e->failed && (rc = write_element(s->ctx, txn, e)) != KI_OK) {
			/* The chunk is dropped: the upload stops with why. */
			if (e->st.code != 0 && s->fatal.code == 0) {
				api_status_free(&s->fatal);
				s->fatal = e->st;
				api_status_init(&e->st);
				s->fatal_line = j->u.els[0].index;
			}
			stream_fail(s, rc, "writing to the store", j->u.els[0].index);
			j->ran_failed = 1;
			return rc;
		}
		count_element(e, &created, &unchanged, &failed);
		render_items(e, &s->first, &s->items);
	}
	j->any_created = created > 0;
	if (s->items.oom) {
		stream_fail(s, KI_ENOMEM, "rendering the answer", j->u.els[0].index);
		j->ran_failed = 1;
		return KI_ENOMEM;
	}
	s->created += created;
	s->unchanged += unchanged;
	s->failed += failed;
	s->rv = store_rv(txn);
	return KI_OK;
}

/* After the chunk's commit: a failed commit stops the upload; the chunk's
 * documents go, and the caller is woken. */
static void
stream_done(store_job *job, int commit_rc)
{
	create_job *j = (create_job *)(void *)job;
	api_stream *s = j->stream;
	store_job_done user = s->user_done;

	if (job->rc == KI_OK && commit_rc != KI_OK)
		stream_fail(s, commit_rc, "committing the write", j->u.els[0].index);
	store_job copy = *job;

	if (s->fatal.code == 0)
		stream_spill(s, 0);
	create_job_free(j);
	s->busy = 0;
	/* The caller may go on with s at once: nothing of it is touched
	 * after. */
	if (user != NULL)
		user(&copy, commit_rc);
}

void
api_stream_submit(api_stream *s, store_job *job, store_job_done done,
	void *cookie)
{
	create_job *j = (create_job *)(void *)job;
	store_txn *txn;
	int rc;

	j->job.fn = stream_write;
	j->job.arg = j;
	j->job.again = 1;
	for (size_t i = 0; i < j->u.n; i++)
		j->u.els[i].refused = j->u.els[i].failed;
	j->job.done = stream_done;
	j->job.cookie = cookie;
	s->user_done = done;
	if (s->ctx->committer != NULL) {
		store_committer_submit(s->ctx->committer, job);
		return;
	}
	if ((rc = store_begin(s->ctx->st, 1, &txn)) != KI_OK) {
		job->rc = rc;
		stream_fail(s, rc, "opening a write transaction", j->u.els[0].index);
		stream_done(job, rc);
		return;
	}
	job->rc = stream_write(txn, j);
	if (job->rc != KI_OK) {
		store_abort(txn);
		stream_done(job, KI_OK);
		return;
	}
	{
		uint64_t rv = store_rv(txn);
		int any = j->any_created;

		rc = store_commit(txn);
		if (rc == KI_OK && any && s->ctx->committed != NULL)
			s->ctx->committed(s->ctx->committed_arg, rv);
		stream_done(job, rc);
	}
}

void
api_stream_answer(api_stream *s, api_resp *r)
{
	ki_buf_reset(&r->body);
	for (size_t i = 0; i < s->warn.nwarnings; i++)
		api_resp_warn(r, "%s", s->warn.warnings[i]);
	if (s->fatal.code != 0) {
		char *m = s->fatal.message;

		/* What was written before stays: saying so lets the client send
		 * the rest (or all of it again: the written lines are then
		 * unchanged). */
		s->fatal.message = NULL;
		if (s->fatal_line > 1)
			api_status_fail(&s->fatal, s->fatal.code, s->fatal.reason,
			    "%s (the upload stopped at line %ld; the lines before it "
			    "were written)", m ? m : "", s->fatal_line);
		else
			api_status_fail(&s->fatal, s->fatal.code, s->fatal.reason,
			    "%s", m ? m : "");
		free(m);
		api_resp_status(r, &s->fatal);
		return;
	}
	if (s->created + s->unchanged + s->failed == 0) {
		api_resp_fail(r, 400, "BadRequest", NULL, "the upload holds no "
		    "documents");
		return;
	}
	render_result_head(s->rv, 0, s->created, s->unchanged, s->failed,
	    &r->body);
	stream_spill(s, 1);
	if (s->fatal.code != 0 || r->body.oom) {
		if (s->fatal.code == 0)
			stream_fail(s, KI_ENOMEM, "rendering the answer", 0);
		api_resp_status(r, &s->fatal);
		return;
	}
	if (s->spill != NULL) {
		fflush(s->spill);
		r->spill = s->spill;
		r->spill_len = s->spilled;
		r->suffix = "]}";
		s->spill = NULL;
	} else {
		ki_buf_append(&r->body, s->items.data ? s->items.data : "",
		    s->items.len);
		ki_buf_puts(&r->body, "]}");
	}
	r->code = s->created > 0 ? 201 : 200;
}
