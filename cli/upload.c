/* cli/upload.c — uploads and their accounting (UploadResult answers read
 * per document), and the push command (JSON documents, bundles, NDJSON,
 * folders). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

/* The deepest folder push descends into. */
#define PUSH_MAX_DEPTH 32

enum outcome { OUT_NONE = 0, OUT_CREATED, OUT_UNCHANGED, OUT_FAILED };

static enum outcome
outcome_of(const char *result)
{
	if (result == NULL)
		return OUT_NONE;
	if (strcmp(result, "created") == 0)
		return OUT_CREATED;
	if (strcmp(result, "unchanged") == 0)
		return OUT_UNCHANGED;
	if (strcmp(result, "failed") == 0)
		return OUT_FAILED;
	return OUT_NONE;
}

static void
tally_add(cli_tally *t, enum outcome o)
{
	if (o == OUT_CREATED)
		t->created++;
	else if (o == OUT_UNCHANGED)
		t->unchanged++;
	else
		t->failed++;
}

/* Prints what a non-failed item says beyond its result: a message, the
 * fields in which it differs from what was indexed before, or a result
 * the CLI does not know. */
static void
print_note(const char *label, struct json_object *item)
{
	struct json_object *diff;
	const char *result = cli_str_member(item, "result");
	const char *msg = cli_str_member(item, "message");
	const char *name = cli_str_member(item, "name");
	size_t i;

	if (msg == NULL && (result == NULL || outcome_of(result) != OUT_NONE) &&
	    !json_object_object_get_ex(item, "differences", &diff))
		return;
	fprintf(stderr, "%s: note: %s%s%s%s%s\n", label,
	    result != NULL ? result : "no result",
	    name != NULL ? " as " : "", name != NULL ? name : "",
	    msg != NULL ? ": " : "", msg != NULL ? msg : "");
	if (!json_object_object_get_ex(item, "differences", &diff) ||
	    !json_object_is_type(diff, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(diff); i++) {
		struct json_object *d = json_object_array_get_idx(diff, i);
		const char *field = json_object_is_type(d, json_type_string) ?
		    json_object_get_string(d) : cli_str_member(d, "field");

		fprintf(stderr, "%s:   differs in %s\n", label,
		    field != NULL ? field : json_object_to_json_string_ext(d,
		    CLI_JSON_FLAGS));
	}
}

/* Per-document state while an UploadResult is read. */
typedef struct doc_state {
	enum outcome run;    /* the run part's result */
	enum outcome any;    /* the first result seen */
	int failed;
} doc_state;

/* The members of two specs that differ, appended to out as "a, b". */
static void
spec_differences(struct json_object *a, struct json_object *b, ki_buf *out)
{
	struct json_object *v;

	json_object_object_foreach(a, key, val) {
		if (!json_object_object_get_ex(b, key, &v) ||
		    !json_object_equal(val, v))
			ki_buf_printf(out, "%s%s", out->len > 0 ? ", " : "", key);
	}
	{
		json_object_object_foreach(b, key2, val2) {
			(void)val2;
			if (!json_object_object_get_ex(a, key2, NULL))
				ki_buf_printf(out, "%s%s", out->len > 0 ? ", " : "",
				    key2);
		}
	}
}

/* Whether a spec member is a reference (a digest), not a figure. */
static int
is_reference(const char *key, size_t n)
{
	static const char *const refs[] = { "protocolDigest", "workloadDigest",
	    "environmentDigest", "implementationDigest" };
	size_t i;

	for (i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		if (strlen(refs[i]) == n && strncmp(key, refs[i], n) == 0)
			return 1;
	return 0;
}

/*
 * A run refused as AlreadyExists may be the same source row indexed
 * before (the seed's row, say): same sourceNative.source and externalId,
 * same figures, other references. Then the row is accounted for: it is
 * reported as already indexed, with the members that differ. Returns 1
 * when so (the note printed), 0 otherwise.
 */
static int
already_indexed(cli *c, const char *label, struct json_object *status,
	struct json_object *bundle)
{
	struct json_object *run = NULL, *spec = NULL, *meta = NULL, *code = NULL;
	struct json_object *old = NULL, *ospec = NULL, *osn = NULL, *sn = NULL;
	const char *name, *reason = cli_str_member(status, "reason");
	ki_buf path, body, diff;
	long http = 0;
	int same = 0;
	const char *p;

	if (bundle == NULL ||
	    !json_object_object_get_ex(bundle, "run", &run) ||
	    !json_object_object_get_ex(run, "spec", &spec) ||
	    !json_object_object_get_ex(run, "metadata", &meta) ||
	    (name = cli_str_member(meta, "name")) == NULL)
		return 0;
	if (!(json_object_object_get_ex(status, "code", &code) &&
	    json_object_get_int(code) == 409) && !(reason != NULL &&
	    strcmp(reason, "AlreadyExists") == 0))
		return 0;
	ki_buf_init(&path);
	ki_buf_init(&body);
	ki_buf_init(&diff);
	ki_buf_puts(&path, CLI_API_PREFIX "/benchmarkruns/");
	/* Refused for its source row, the run is stored under another name,
	 * which the message quotes: 'is already stored as BenchmarkRun "N"'. */
	{
		const char *msg = cli_str_member(status, "message");
		const char *q = msg != NULL ? strstr(msg,
		    "already stored as BenchmarkRun \"") : NULL;
		const char *e;

		if (q != NULL) {
			q += strlen("already stored as BenchmarkRun \"");
			e = strchr(q, '"');
			if (e != NULL && e > q && (size_t)(e - q) < 254) {
				ki_buf stored;

				ki_buf_init(&stored);
				ki_buf_append(&stored, q, (size_t)(e - q));
				cli_url_escape(&path, stored.data != NULL ?
				    stored.data : "");
				ki_buf_free(&stored);
				name = NULL;
			}
		}
	}
	if (name != NULL)
		cli_url_escape(&path, name);
	else
		name = path.data + strlen(CLI_API_PREFIX "/benchmarkruns/");
	if (path.oom || cli_http_request(c->http, "GET", path.data, NULL, NULL,
	    0, &body, &http) != KI_OK || http != 200)
		goto out;
	old = json_tokener_parse(body.data);
	if (!json_object_object_get_ex(old, "spec", &ospec) ||
	    !json_object_object_get_ex(ospec, "sourceNative", &osn) ||
	    !json_object_object_get_ex(spec, "sourceNative", &sn) ||
	    cli_str_member(osn, "source") == NULL ||
	    cli_str_member(osn, "externalId") == NULL ||
	    cli_str_member(sn, "source") == NULL ||
	    cli_str_member(sn, "externalId") == NULL ||
	    strcmp(cli_str_member(osn, "source"), cli_str_member(sn, "source")) != 0 ||
	    strcmp(cli_str_member(osn, "externalId"),
	    cli_str_member(sn, "externalId")) != 0)
		goto out;
	spec_differences(spec, ospec, &diff);
	if (diff.oom)
		goto out;
	/* Only references may differ: the figures must be the same. */
	same = 1;
	for (p = diff.data; p != NULL && *p != '\0';) {
		const char *e = strchr(p, ',');
		size_t n = e != NULL ? (size_t)(e - p) : strlen(p);

		if (!is_reference(p, n))
			same = 0;
		p = e != NULL ? e + 2 : NULL;
	}
	if (same)
		fprintf(stderr, "%s: already indexed as %s%s%s\n", label, name,
		    diff.len > 0 ? "; differs in " : " (identical figures)",
		    diff.len > 0 ? diff.data : "");
out:
	json_object_put(old);
	ki_buf_free(&path);
	ki_buf_free(&body);
	ki_buf_free(&diff);
	return same;
}

/* Reads an UploadResult for n documents into t. bundles, if non-NULL, is
 * the array of the documents sent. */
static void
read_result(cli *c, struct json_object *res, size_t n,
	struct json_object *bundles, int atomic, int verbose,
	cli_doc_label_fn label, void *arg, cli_tally *t)
{
	struct json_object *items = NULL;
	doc_state *docs = calloc(n, sizeof(*docs));
	ki_buf lab;
	size_t i, nfailed = 0;
	int64_t base = 0, lo = INT64_MAX;

	ki_buf_init(&lab);
	if (docs == NULL) {
		cli_err(c, "out of memory");
		t->failed += n;
		return;
	}
	if (json_object_object_get_ex(res, "items", &items) &&
	    json_object_is_type(items, json_type_array)) {
		/* NDJSON items count lines from 1, List items from 0: every
		 * document has an item, so the lowest index tells which. */
		for (i = 0; i < json_object_array_length(items); i++) {
			struct json_object *idx;

			if (json_object_object_get_ex(json_object_array_get_idx(
			    items, i), "index", &idx) &&
			    json_object_get_int64(idx) >= 0 &&
			    json_object_get_int64(idx) < lo)
				lo = json_object_get_int64(idx);
		}
		base = lo >= 1 && lo != INT64_MAX ? 1 : 0;
		for (i = 0; i < json_object_array_length(items); i++) {
			struct json_object *it = json_object_array_get_idx(items, i);
			struct json_object *idx = NULL, *st = NULL;
			const char *result = cli_str_member(it, "result");
			const char *part = cli_str_member(it, "part");
			const char *kind = cli_str_member(it, "kind");
			enum outcome o = outcome_of(result);
			int64_t k;

			if (!json_object_object_get_ex(it, "index", &idx))
				continue;
			k = json_object_get_int64(idx);
			/* A lone document or bundle is answered with index -1. */
			if (k < 0 && n == 1)
				k = 0;
			else
				k -= base;
			if (k < 0 || (uint64_t)k >= n)
				continue;
			ki_buf_reset(&lab);
			label(arg, (size_t)k, &lab);
			if (o == OUT_FAILED) {
				json_object_object_get_ex(it, "status", &st);
				if (!atomic && bundles != NULL && already_indexed(c,
				    lab.data, st, json_object_array_get_idx(bundles,
				    (size_t)k))) {
					docs[k].run = OUT_UNCHANGED;
					continue;
				}
				if (!docs[k].failed) {
					ki_buf_puts(&lab, ": ");
					cli_print_status_obj(c, lab.data, st);
				}
				docs[k].failed = 1;
				continue;
			}
			if (docs[k].any == OUT_NONE)
				docs[k].any = o;
			if ((part != NULL && strcmp(part, "run") == 0) ||
			    (kind != NULL && strcmp(kind, "BenchmarkRun") == 0))
				docs[k].run = o;
			print_note(lab.data, it);
			if (verbose == CLI_VERBOSE_ALL ||
			    (verbose == CLI_VERBOSE_RUNS && kind != NULL &&
			    strcmp(kind, "BenchmarkRun") == 0)) {
				const cli_kind *ck = kind != NULL ?
				    cli_kind_by_kind(kind) : NULL;
				const char *name = cli_str_member(it, "name");

				printf("%s.kernelindex.dev/%s %s\n",
				    ck != NULL ? ck->singular : "object",
				    name != NULL ? name : "?",
				    result != NULL ? result : "?");
			}
		}
	}
	for (i = 0; i < n; i++)
		if (docs[i].failed || (docs[i].run == OUT_NONE &&
		    docs[i].any == OUT_NONE))
			nfailed++;
	if (atomic && nfailed > 0) {
		/* All or nothing: the good documents were not kept either. */
		fprintf(stderr, "%s: atomic upload refused: %zu of %zu "
		    "documents failed, none was stored\n", c->prog, nfailed, n);
		t->failed += n;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!docs[i].failed && docs[i].run == OUT_NONE &&
		    docs[i].any == OUT_NONE) {
			ki_buf_reset(&lab);
			label(arg, i, &lab);
			fprintf(stderr, "%s: error: the server reported no result "
			    "for it\n", lab.data);
		}
		tally_add(t, docs[i].failed ? OUT_FAILED :
		    docs[i].run != OUT_NONE ? docs[i].run : docs[i].any);
	}
out:
	ki_buf_free(&lab);
	free(docs);
}

int
cli_upload_ndjson(cli *c, const char *ndjson, size_t len, size_t n,
	struct json_object *bundles, int atomic, int verbose,
	cli_doc_label_fn label, void *arg, cli_tally *t)
{
	struct json_object *res = NULL;
	const char *kind;
	ki_buf body, lab;
	long status = 0;
	int rc;

	if (n == 0)
		return CLI_EXIT_OK;
	ki_buf_init(&body);
	ki_buf_init(&lab);
	rc = cli_http_request(c->http, "POST", atomic ? CLI_API_PREFIX
	    "/benchmarkruns?atomic=true" : CLI_API_PREFIX "/benchmarkruns",
	    "application/x-ndjson", ndjson, len, &body, &status);
	if (rc != KI_OK) {
		rc = cli_transport_fail(c, rc);
		goto out;
	}
	if (status == 200 || status == 201)
		res = json_tokener_parse(body.data);
	kind = cli_str_member(res, "kind");
	if (kind == NULL || strcmp(kind, "UploadResult") != 0) {
		/* The whole request was refused: every document failed. */
		label(arg, 0, &lab);
		if (n > 1) {
			ki_buf_puts(&lab, " … ");
			label(arg, n - 1, &lab);
		}
		ki_buf_puts(&lab, ": ");
		cli_print_status(c, lab.data, status, body.data, body.len);
		t->failed += n;
		rc = CLI_EXIT_OK;
		goto out;
	}
	read_result(c, res, n, bundles, atomic, verbose, label, arg, t);
	rc = CLI_EXIT_OK;
out:
	json_object_put(res);
	ki_buf_free(&body);
	ki_buf_free(&lab);
	return rc;
}

/* ====================================================================== */
/* push                                                                    */

typedef struct push_opts {
	size_t batch;
	int atomic;
	int verbose;        /* 0 or CLI_VERBOSE_ALL */
	size_t total;       /* bytes of every file (0: unknown, no progress) */
	size_t done;        /* bytes of the files pushed before this one */
	size_t ndocs;       /* documents sent */
	cli_tally tally;
} push_opts;

/* Labels for the documents of one file's NDJSON batch. */
typedef struct line_labels {
	const char *file;
	const size_t *lines; /* the file line of each document */
} line_labels;

static void
label_line(void *arg, size_t i, ki_buf *out)
{
	const line_labels *l = arg;

	ki_buf_printf(out, "%s: line %zu", l->file, l->lines[i]);
}

static void
label_file(void *arg, size_t i, ki_buf *out)
{
	const char *const *file = arg;

	(void)i;
	ki_buf_puts(out, *file);
}

static int
has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Whether text is exactly one JSON value (then *out holds it). */
static int
one_json_value(const char *text, size_t len, struct json_object **out)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;
	size_t end;

	*out = NULL;
	if (tok == NULL || len > (size_t)0x7fffffff) {
		json_tokener_free(tok);
		return 0;
	}
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		json_tokener_free(tok);
		return 0;
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && (text[end] == ' ' || text[end] == '\t' ||
	    text[end] == '\r' || text[end] == '\n'))
		end++;
	if (end != len) {
		json_object_put(o);
		return 0;
	}
	*out = o;
	return 1;
}

/* Uploads one JSON document doc (an object, a bundle, a List; borrowed)
 * whose text is text: a lone object to its kind's collection, a bundle or
 * a List to benchmarkruns. */
static int
push_single(cli *c, const char *file, struct json_object *doc,
	const char *text, size_t len, push_opts *po)
{
	struct json_object *res = NULL;
	const char *kind = cli_str_member(doc, "kind");
	const cli_kind *ck = kind != NULL ? cli_kind_by_kind(kind) : NULL;
	ki_buf body, path;
	long status = 0;
	int rc;

	ki_buf_init(&body);
	ki_buf_init(&path);
	ki_buf_printf(&path, "%s/%s%s", CLI_API_PREFIX,
	    ck != NULL ? ck->plural : "benchmarkruns",
	    po->atomic ? "?atomic=true" : "");
	rc = path.oom ? KI_ENOMEM : cli_http_request(c->http, "POST",
	    path.data, "application/json", text, len, &body, &status);
	if (rc != KI_OK) {
		rc = cli_transport_fail(c, rc);
		goto out;
	}
	rc = CLI_EXIT_OK;
	if (status != 200 && status != 201) {
		ki_buf lab;

		ki_buf_init(&lab);
		ki_buf_printf(&lab, "%s: ", file);
		cli_print_status(c, lab.data, status, body.data, body.len);
		ki_buf_free(&lab);
		po->tally.failed++;
		goto out;
	}
	res = json_tokener_parse(body.data);
	if (cli_str_member(res, "kind") != NULL &&
	    strcmp(cli_str_member(res, "kind"), "UploadResult") == 0) {
		/* A List answers one index per item; a bundle one index. */
		struct json_object *items = NULL;
		size_t n = 1, i;

		if (json_object_object_get_ex(res, "items", &items))
			for (i = 0; i < json_object_array_length(items); i++) {
				struct json_object *idx;

				if (json_object_object_get_ex(
				    json_object_array_get_idx(items, i), "index",
				    &idx) && json_object_get_int64(idx) >= 0 &&
				    (uint64_t)json_object_get_int64(idx) >= n &&
				    json_object_get_int64(idx) < 10000000)
					n = (size_t)json_object_get_int64(idx) + 1;
			}
		read_result(c, res, n, NULL, po->atomic, po->verbose, label_file,
		    &file, &po->tally);
	} else {
		struct json_object *meta = NULL;

		kind = cli_str_member(res, "kind");
		ck = kind != NULL ? cli_kind_by_kind(kind) : ck;
		json_object_object_get_ex(res, "metadata", &meta);
		if (po->verbose)
			printf("%s.kernelindex.dev/%s %s\n",
			    ck != NULL ? ck->singular : "benchmarkrun",
			    cli_str_member(meta, "name") != NULL ?
			    cli_str_member(meta, "name") : file,
			    status == 201 ? "created" : "unchanged");
		tally_add(&po->tally, status == 201 ? OUT_CREATED :
		    OUT_UNCHANGED);
	}
out:
	json_object_put(res);
	ki_buf_free(&body);
	ki_buf_free(&path);
	return rc;
}

/* Uploads documents one per line (blank lines skipped), in batches. */
static int
push_lines(cli *c, const char *file, const char *text, size_t len,
	push_opts *po)
{
	size_t *lines = NULL, n = 0, cap = 0, pos = 0, line = 1;
	size_t batch = po->atomic ? (size_t)-1 : po->batch;
	line_labels ll;
	ki_buf nd;
	int rc = CLI_EXIT_OK;

	ki_buf_init(&nd);
	ll.file = file;
	while (pos < len) {
		const char *p = text + pos;
		const char *nl = memchr(p, '\n', len - pos);
		size_t l = nl != NULL ? (size_t)(nl - p) : len - pos, k;

		pos += l + (nl != NULL);
		for (k = 0; k < l && (p[k] == ' ' || p[k] == '\t' ||
		    p[k] == '\r'); k++)
			;
		if (k < l) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 1024;
				size_t *q = realloc(lines, ncap * sizeof(*q));

				if (q == NULL) {
					rc = cli_transport_fail(c, KI_ENOMEM);
					goto out;
				}
				lines = q;
				cap = ncap;
			}
			lines[n++] = line;
			ki_buf_append(&nd, p, l);
			ki_buf_putc(&nd, '\n');
			if (nd.oom) {
				rc = cli_transport_fail(c, KI_ENOMEM);
				goto out;
			}
		}
		line++;
		if (n == batch || (pos >= len && n > 0)) {
			ll.lines = lines;
			cli_progress_clear(c);
			rc = cli_upload_ndjson(c, nd.data, nd.len, n, NULL,
			    po->atomic, po->verbose, label_line, &ll, &po->tally);
			po->ndocs += n;
			cli_progress(c, po->done + pos, po->total, "bytes");
			if (rc != CLI_EXIT_OK)
				goto out;
			ki_buf_reset(&nd);
			n = 0;
		}
	}
out:
	free(lines);
	ki_buf_free(&nd);
	return rc;
}

static int
push_file(cli *c, const char *path, push_opts *po)
{
	struct json_object *one = NULL;
	ki_buf text;
	int rc;

	ki_buf_init(&text);
	if (cli_read_file(c, path, &text) != KI_OK) {
		po->tally.failed++;
		rc = CLI_EXIT_OK;
		goto out;
	}
	if (!has_suffix(path, ".ndjson") && !has_suffix(path, ".jsonl") &&
	    one_json_value(text.data, text.len, &one)) {
		if (json_object_is_type(one, json_type_array)) {
			/* An array: its elements go as NDJSON lines. */
			ki_buf nd;
			size_t i;

			ki_buf_init(&nd);
			for (i = 0; i < json_object_array_length(one); i++) {
				ki_buf_puts(&nd, json_object_to_json_string_ext(
				    json_object_array_get_idx(one, i),
				    CLI_JSON_FLAGS));
				ki_buf_putc(&nd, '\n');
			}
			rc = nd.oom ? cli_transport_fail(c, KI_ENOMEM) :
			    push_lines(c, path, nd.data, nd.len, po);
			ki_buf_free(&nd);
		} else {
			cli_progress_clear(c);
			rc = push_single(c, path, one, text.data, text.len, po);
			po->ndocs++;
		}
	} else {
		rc = push_lines(c, path, text.data, text.len, po);
	}
	po->done += text.len;
	cli_progress(c, po->done, po->total, "bytes");
out:
	json_object_put(one);
	ki_buf_free(&text);
	return rc;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files a push sends, in order. */
typedef struct file_list {
	char **path;
	size_t n, cap;
} file_list;

static int
files_add(file_list *l, const char *p)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		char **q = realloc(l->path, ncap * sizeof(*q));

		if (q == NULL)
			return KI_ENOMEM;
		l->path = q;
		l->cap = ncap;
	}
	l->path[l->n] = strdup(p);
	if (l->path[l->n] == NULL)
		return KI_ENOMEM;
	l->n++;
	return KI_OK;
}

static void
files_free(file_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->path[i]);
	free(l->path);
}

/* Adds every *.json, *.ndjson and *.jsonl under dir, in name order.
 * Returns 0, KI_ENOMEM, or KI_EIO after printing why. */
static int
collect_dir(cli *c, const char *dir, int depth, file_list *out)
{
	file_list here;
	struct dirent *de;
	DIR *d;
	size_t i;
	int rc = KI_OK;

	memset(&here, 0, sizeof(here));
	if (depth > PUSH_MAX_DEPTH) {
		cli_err(c, "%s: folders nested too deeply", dir);
		return KI_EIO;
	}
	d = opendir(dir);
	if (d == NULL) {
		cli_err(c, "%s: cannot open the folder", dir);
		return KI_EIO;
	}
	while (rc == KI_OK && (de = readdir(d)) != NULL) {
		ki_buf p;

		if (de->d_name[0] == '.')
			continue;
		ki_buf_init(&p);
		ki_buf_printf(&p, "%s/%s", dir, de->d_name);
		rc = p.oom ? KI_ENOMEM : files_add(&here, p.data);
		ki_buf_free(&p);
	}
	closedir(d);
	if (here.n > 0)
		qsort(here.path, here.n, sizeof(*here.path), cmp_names);
	for (i = 0; i < here.n && rc == KI_OK; i++) {
		struct stat st;

		if (stat(here.path[i], &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			rc = collect_dir(c, here.path[i], depth + 1, out);
		else if (S_ISREG(st.st_mode) && (has_suffix(here.path[i],
		    ".json") || has_suffix(here.path[i], ".ndjson") ||
		    has_suffix(here.path[i], ".jsonl")))
			rc = files_add(out, here.path[i]);
	}
	files_free(&here);
	return rc;
}

int
cli_cmd_push(cli *c, int argc, char **argv)
{
	file_list files;
	push_opts po;
	size_t k;
	int i, rc = CLI_EXIT_OK, missing = 0, stdin_used = 0;

	memset(&po, 0, sizeof(po));
	memset(&files, 0, sizeof(files));
	po.batch = CLI_DEFAULT_BATCH;
	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--atomic") == 0) {
			po.atomic = 1;
		} else if (strcmp(argv[i], "--quiet") == 0 ||
		    strcmp(argv[i], "-q") == 0) {
			c->quiet = 1;
		} else if (strcmp(argv[i], "--verbose") == 0 ||
		    strcmp(argv[i], "-v") == 0) {
			po.verbose = CLI_VERBOSE_ALL;
		} else if (strcmp(argv[i], "--batch") == 0) {
			if (i + 1 >= argc || cli_parse_count(argv[i + 1],
			    &po.batch) != KI_OK) {
				cli_err(c, "push: --batch wants a positive count");
				return CLI_EXIT_USAGE;
			}
			i++;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			cli_err(c, "push: unknown option %s", argv[i]);
			return CLI_EXIT_USAGE;
		}
	}
	/* Every path is checked before anything is sent. */
	for (i = 0; i < argc && rc == CLI_EXIT_OK; i++) {
		struct stat st;
		int r = KI_OK;

		if (strcmp(argv[i], "--batch") == 0) {
			i++;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			continue;
		if (strcmp(argv[i], "-") == 0) {
			stdin_used = 1;
			r = files_add(&files, "-");
		} else if (stat(argv[i], &st) != 0) {
			cli_err(c, "push: %s: no such file or folder", argv[i]);
			missing++;
		} else if (S_ISDIR(st.st_mode)) {
			r = collect_dir(c, argv[i], 0, &files);
			if (r == KI_EIO) {
				missing++;
				r = KI_OK;
			}
		} else {
			r = files_add(&files, argv[i]);
		}
		if (r != KI_OK)
			rc = cli_transport_fail(c, r);
	}
	if (rc != CLI_EXIT_OK)
		goto out;
	if (missing > 0) {
		cli_err(c, "push: nothing was pushed");
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	if (files.n == 0) {
		cli_err(c, "push: no files to push (FILE, DIR of *.json, "
		    "*.ndjson or *.jsonl, or - for standard input)");
		rc = argc == 0 ? CLI_EXIT_USAGE : CLI_EXIT_REJECTED;
		goto out;
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		goto out;
	for (k = 0; k < files.n && !stdin_used; k++) {
		struct stat st;

		if (stat(files.path[k], &st) == 0)
			po.total += (size_t)st.st_size;
	}
	cli_progress(c, 0, po.total, "bytes");
	for (k = 0; k < files.n && rc == CLI_EXIT_OK; k++)
		rc = push_file(c, files.path[k], &po);
	cli_progress_clear(c);
	if (rc != CLI_EXIT_OK)
		goto out;
	k = po.tally.created + po.tally.unchanged + po.tally.failed;
	printf("pushed %zu file%s, %zu document%s: %zu created, %zu "
	    "unchanged, %zu failed\n", files.n, files.n == 1 ? "" : "s", k,
	    k == 1 ? "" : "s", po.tally.created, po.tally.unchanged,
	    po.tally.failed);
	rc = po.tally.failed > 0 ? CLI_EXIT_REJECTED : CLI_EXIT_OK;
out:
	files_free(&files);
	return rc;
}
