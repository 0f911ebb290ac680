/* api/upload.h — the internals every upload shares (upload.c), used by
 * the create (create.c) and streamed (stream.c) operations: the elements
 * of a body, their checks, writing them and rendering the answer. */
#ifndef API_UPLOAD_H
#define API_UPLOAD_H

#include "store/store.h"
#include "api/object.h"
#include "api/service_int.h"

#define MAX_PARTS 6

/* One unit of an upload: a lone object or a bundle, written all or
 * nothing. */
typedef struct element {
	api_doc docs[MAX_PARTS];
	size_t ndocs;
	long index;           /* position in a List or NDJSON stream; -1 alone */
	api_status st;        /* why it failed */
	api_unknown unk;
	int failed;
	/* Failed before the write (parsing, admission): stays failed when
	 * the job runs again (store_job.again). */
	int refused;
} element;

/* The elements of one body, in order. */
typedef struct upload {
	element *els;
	size_t n, cap;
} upload;

/* One create, from validation to the answer: what the committer runs. */
typedef struct create_job {
	store_job job;               /* first: the committer hands this back */
	api_ctx *ctx;
	upload u;
	int bulk, atomic, dry_run, any_created;
	api_resp *r;
	store_job_done user_done;    /* the caller's, run after finishing */
	struct api_stream *stream; /* a chunk of this streamed upload */
	/* fn ran before (the committer runs it again after a conflict):
	 * what it must undo first. */
	int ran, ran_failed;
	size_t warn_mark, items_mark;
	int first_mark;
} create_job;

/* Parsing (upload.c; each function's contract is above its definition).
 * upload_add returns a zeroed element of u, NULL when out of memory;
 * upload_free frees u's elements; add_line adds NDJSON line number line
 * as one element; parse_upload splits a body into elements; admit_element
 * checks e's unknown fields and what the token may write. */
element *upload_add(upload *u);
void upload_free(upload *u);
int add_line(api_ctx *ctx, upload *u, const char *p, size_t n, long line);
int parse_upload(api_ctx *ctx, const api_kind *coll, const char *body,
	size_t len, int ndjson, upload *u, int *bulk, api_status *st);
void admit_element(element *e, const api_write_opts *opt, api_resp *r);

/* Writing (upload.c): prerender_doc renders d before the commit where it
 * can; write_element checks and writes e inside txn. */
void prerender_doc(api_ctx *ctx, store_txn *txn, api_doc *d);
int write_element(api_ctx *ctx, store_txn *txn, element *e);

/* The answer (upload.c): the stored object as it is (copy_stored), or an
 * UploadResult (render_result, or render_result_head, render_items and
 * count_element for one written in parts). */
int copy_stored(store_txn *txn, const api_kind *k, const char *name,
	ki_buf *out);
void count_element(const element *e, size_t *created, size_t *unchanged,
	size_t *failed);
void render_items(const element *e, int *first, ki_buf *out);
void render_result_head(uint64_t rv, int dry_run, size_t created,
	size_t unchanged, size_t failed, ki_buf *out);
void render_result(const element *els, size_t n, uint64_t rv, int dry_run,
	ki_buf *out);

/* Frees j and its elements (create.c). */
void create_job_free(create_job *j);

#endif
