/* cli/upload.c — the write commands: push (JSON documents, bundles, NDJSON,
 * folders) and import liger (CSV rows converted and uploaded in NDJSON
 * batches), with the per-document accounting of UploadResult answers. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/liger.h"
#include "cli/cli.h"

/* The deepest folder push descends into. */
#define PUSH_MAX_DEPTH 32

enum outcome { OUT_NONE = 0, OUT_CREATED, OUT_UNCHANGED, OUT_FAILED };

static const char *
str_member(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

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
	const char *result = str_member(item, "result");
	const char *msg = str_member(item, "message");
	const char *name = str_member(item, "name");
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
		    json_object_get_string(d) : str_member(d, "field");

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
	const char *name, *reason = str_member(status, "reason");
	ki_buf path, body, diff;
	long http = 0;
	int same = 0;
	const char *p;

	if (bundle == NULL ||
	    !json_object_object_get_ex(bundle, "run", &run) ||
	    !json_object_object_get_ex(run, "spec", &spec) ||
	    !json_object_object_get_ex(run, "metadata", &meta) ||
	    (name = str_member(meta, "name")) == NULL)
		return 0;
	if (!(json_object_object_get_ex(status, "code", &code) &&
	    json_object_get_int(code) == 409) && !(reason != NULL &&
	    strcmp(reason, "AlreadyExists") == 0))
		return 0;
	ki_buf_init(&path);
	ki_buf_init(&body);
	ki_buf_init(&diff);
	ki_buf_puts(&path, CLI_API_PREFIX "/benchmarkruns/");
	cli_url_escape(&path, name);
	if (path.oom || cli_http_request(c->http, "GET", path.data, NULL, NULL,
	    0, &body, &http) != KI_OK || http != 200)
		goto out;
	old = json_tokener_parse(body.data);
	if (!json_object_object_get_ex(old, "spec", &ospec) ||
	    !json_object_object_get_ex(ospec, "sourceNative", &osn) ||
	    !json_object_object_get_ex(spec, "sourceNative", &sn) ||
	    str_member(osn, "source") == NULL ||
	    str_member(osn, "externalId") == NULL ||
	    str_member(sn, "source") == NULL ||
	    str_member(sn, "externalId") == NULL ||
	    strcmp(str_member(osn, "source"), str_member(sn, "source")) != 0 ||
	    strcmp(str_member(osn, "externalId"),
	    str_member(sn, "externalId")) != 0)
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
			const char *result = str_member(it, "result");
			const char *part = str_member(it, "part");
			const char *kind = str_member(it, "kind");
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
			if (verbose) {
				const cli_kind *ck = kind != NULL ?
				    cli_kind_by_kind(kind) : NULL;
				const char *name = str_member(it, "name");

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
	kind = str_member(res, "kind");
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
	const char *kind = str_member(doc, "kind");
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
	if (str_member(res, "kind") != NULL &&
	    strcmp(str_member(res, "kind"), "UploadResult") == 0) {
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
		read_result(c, res, n, NULL, po->atomic, 1, label_file, &file,
		    &po->tally);
	} else {
		struct json_object *meta = NULL;

		kind = str_member(res, "kind");
		ck = kind != NULL ? cli_kind_by_kind(kind) : ck;
		json_object_object_get_ex(res, "metadata", &meta);
		printf("%s.kernelindex.dev/%s %s\n",
		    ck != NULL ? ck->singular : "benchmarkrun",
		    str_member(meta, "name") != NULL ? str_member(meta, "name") :
		    file, status == 201 ? "created" : "unchanged");
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
			rc = cli_upload_ndjson(c, nd.data, nd.len, n, NULL,
			    po->atomic, 1, label_line, &ll, &po->tally);
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
			rc = push_single(c, path, one, text.data, text.len, po);
		}
	} else {
		rc = push_lines(c, path, text.data, text.len, po);
	}
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

/* Pushes every *.json, *.ndjson and *.jsonl under dir, in name order. */
static int
push_dir(cli *c, const char *dir, int depth, push_opts *po)
{
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;
	int rc = CLI_EXIT_OK;

	if (depth > PUSH_MAX_DEPTH) {
		cli_err(c, "%s: folders nested too deeply", dir);
		po->tally.failed++;
		return CLI_EXIT_OK;
	}
	d = opendir(dir);
	if (d == NULL) {
		cli_err(c, "%s: cannot open the folder", dir);
		po->tally.failed++;
		return CLI_EXIT_OK;
	}
	while ((de = readdir(d)) != NULL) {
		ki_buf p;

		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			char **q = realloc(names, ncap * sizeof(*q));

			if (q == NULL)
				break;
			names = q;
			cap = ncap;
		}
		ki_buf_init(&p);
		ki_buf_printf(&p, "%s/%s", dir, de->d_name);
		names[n] = ki_buf_steal(&p, NULL);
		if (names[n] == NULL)
			break;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n && rc == CLI_EXIT_OK; i++) {
		struct stat st;

		if (stat(names[i], &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			rc = push_dir(c, names[i], depth + 1, po);
		else if (S_ISREG(st.st_mode) && (has_suffix(names[i], ".json") ||
		    has_suffix(names[i], ".ndjson") ||
		    has_suffix(names[i], ".jsonl")))
			rc = push_file(c, names[i], po);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int
cli_cmd_push(cli *c, int argc, char **argv)
{
	push_opts po;
	int i, npaths = 0, rc;

	memset(&po, 0, sizeof(po));
	po.batch = CLI_DEFAULT_BATCH;
	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--atomic") == 0) {
			po.atomic = 1;
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
		} else {
			npaths++;
		}
	}
	if (npaths == 0) {
		cli_err(c, "usage: push FILE|DIR|- …");
		return CLI_EXIT_USAGE;
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		return rc;
	for (i = 0; i < argc && rc == CLI_EXIT_OK; i++) {
		struct stat st;

		if (strcmp(argv[i], "--atomic") == 0)
			continue;
		if (strcmp(argv[i], "--batch") == 0) {
			i++;
			continue;
		}
		if (strcmp(argv[i], "-") != 0 && stat(argv[i], &st) == 0 &&
		    S_ISDIR(st.st_mode))
			rc = push_dir(c, argv[i], 0, &po);
		else
			rc = push_file(c, argv[i], &po);
	}
	if (rc != CLI_EXIT_OK)
		return rc;
	printf("pushed %zu documents: %zu created, %zu unchanged, %zu failed\n",
	    po.tally.created + po.tally.unchanged + po.tally.failed,
	    po.tally.created, po.tally.unchanged, po.tally.failed);
	return po.tally.failed > 0 ? CLI_EXIT_REJECTED : CLI_EXIT_OK;
}

/* ====================================================================== */
/* import liger                                                            */

typedef struct import_state {
	cli *c;
	const char *file;
	int dry_run;
	int atomic;
	size_t batch;
	size_t total;       /* data records in the file, for the progress */
	size_t done;        /* rows accounted for */
	size_t conv_failed; /* rows that could not be converted */
	ki_buf nd;          /* the batch being filled */
	struct json_object *bundles; /* the batch's bundles (array) */
	size_t *lines;      /* the CSV line of each bundle in nd */
	size_t n, cap;
	cli_tally tally;
	int exit;           /* an exit code that stopped the import */
} import_state;

static void
label_import(void *arg, size_t i, ki_buf *out)
{
	const import_state *s = arg;

	ki_buf_printf(out, "%s: line %zu", s->file, s->lines[i]);
}

static void
progress(const import_state *s)
{
	int width = 30, fill;

	if (!s->c->tty || s->dry_run || s->total == 0)
		return;
	fill = (int)((double)width * (double)s->done / (double)s->total);
	if (fill > width)
		fill = width;
	fprintf(stderr, "\r[%.*s%*s] %zu/%zu rows", fill,
	    "##############################", width - fill, "", s->done,
	    s->total);
	fflush(stderr);
}

static void
progress_clear(const import_state *s)
{
	if (s->c->tty && !s->dry_run && s->total > 0)
		fprintf(stderr, "\r%*s\r", 60, "");
}

/* Uploads the filled batch. Returns 0 or an exit code to stop with. */
static int
import_flush(import_state *s)
{
	int rc;

	if (s->n == 0)
		return CLI_EXIT_OK;
	progress_clear(s);
	rc = cli_upload_ndjson(s->c, s->nd.data, s->nd.len, s->n, s->bundles,
	    s->atomic, 0, label_import, s, &s->tally);
	s->done += s->n;
	ki_buf_reset(&s->nd);
	json_object_put(s->bundles);
	s->bundles = json_object_new_array();
	s->n = 0;
	if (s->bundles == NULL && rc == CLI_EXIT_OK)
		rc = cli_transport_fail(s->c, KI_ENOMEM);
	progress(s);
	return rc;
}

static int
import_row(void *arg, size_t line, struct json_object *bundle,
	const char *msg)
{
	import_state *s = arg;

	if (bundle == NULL) {
		progress_clear(s);
		fprintf(stderr, "%s: %s\n", s->file, msg);
		s->conv_failed++;
		s->done++;
		progress(s);
		return 0;
	}
	if (s->dry_run) {
		puts(json_object_to_json_string_ext(bundle, CLI_JSON_FLAGS));
		return 0;
	}
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 1024;
		size_t *q = realloc(s->lines, ncap * sizeof(*q));

		if (q == NULL)
			goto oom;
		s->lines = q;
		s->cap = ncap;
	}
	if (json_object_array_add(s->bundles, json_object_get(bundle)) != 0) {
		json_object_put(bundle);
		goto oom;
	}
	s->lines[s->n++] = line;
	ki_buf_puts(&s->nd, json_object_to_json_string_ext(bundle,
	    CLI_JSON_FLAGS));
	ki_buf_putc(&s->nd, '\n');
	if (s->nd.oom)
		goto oom;
	if (!s->atomic && s->n >= s->batch) {
		s->exit = import_flush(s);
		return s->exit != CLI_EXIT_OK ? 1 : 0;
	}
	return 0;
oom:
	s->exit = cli_transport_fail(s->c, KI_ENOMEM);
	return 1;
}

/* Counts the data records of a CSV text (the header excluded). */
static size_t
count_records(const char *text, size_t len)
{
	liger_record r;
	liger_csv csv;
	size_t n = 0;
	int got;

	liger_record_init(&r);
	liger_csv_init(&csv, text, len);
	while ((got = liger_csv_next(&csv, &r, NULL)) != 0)
		if (got == 1 || got == KI_EINVAL || got == KI_ELIMIT)
			n++;
		else
			break;
	liger_record_free(&r);
	return n > 0 ? n - 1 : 0;
}

int
cli_cmd_import(cli *c, int argc, char **argv)
{
	import_state s;
	const char *file = NULL, *output = NULL;
	ki_buf text, err;
	int i, rc;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.batch = CLI_DEFAULT_BATCH;
	if (argc < 1 || strcmp(argv[0], "liger") != 0) {
		cli_err(c, "usage: import liger FILE [--batch N] [--atomic] "
		    "[--dry-run [-o ndjson]]");
		return CLI_EXIT_USAGE;
	}
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dry-run") == 0) {
			s.dry_run = 1;
		} else if (strcmp(argv[i], "--atomic") == 0) {
			s.atomic = 1;
		} else if (strcmp(argv[i], "--batch") == 0) {
			if (i + 1 >= argc || cli_parse_count(argv[i + 1],
			    &s.batch) != KI_OK) {
				cli_err(c, "import: --batch wants a positive "
				    "count");
				return CLI_EXIT_USAGE;
			}
			i++;
		} else if (strcmp(argv[i], "-o") == 0 ||
		    strcmp(argv[i], "--output") == 0) {
			if (i + 1 >= argc) {
				cli_err(c, "import: -o needs a value");
				return CLI_EXIT_USAGE;
			}
			output = argv[++i];
		} else if (strncmp(argv[i], "-o", 2) == 0 && argv[i][2] != '\0') {
			output = argv[i] + 2 + (argv[i][2] == '=');
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			cli_err(c, "import: unknown option %s", argv[i]);
			return CLI_EXIT_USAGE;
		} else if (file == NULL) {
			file = argv[i];
		} else {
			cli_err(c, "import: one FILE only");
			return CLI_EXIT_USAGE;
		}
	}
	if (file == NULL) {
		cli_err(c, "usage: import liger FILE");
		return CLI_EXIT_USAGE;
	}
	if (output != NULL && (!s.dry_run || strcmp(output, "ndjson") != 0)) {
		cli_err(c, "import: -o ndjson goes with --dry-run");
		return CLI_EXIT_USAGE;
	}
	if (!s.dry_run && (rc = cli_connect(c)) != CLI_EXIT_OK)
		return rc;
	s.bundles = json_object_new_array();
	if (s.bundles == NULL)
		return cli_transport_fail(c, KI_ENOMEM);
	s.file = strcmp(file, "-") == 0 ? "(stdin)" : file;
	ki_buf_init(&text);
	ki_buf_init(&err);
	ki_buf_init(&s.nd);
	if (cli_read_file(c, file, &text) != KI_OK) {
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	s.total = count_records(text.data, text.len);
	progress(&s);
	rc = liger_convert_text(text.data, text.len, import_row, &s, &err);
	if (rc == KI_EINVAL || rc == KI_ENOMEM) {
		progress_clear(&s);
		cli_err(c, "%s: %s", s.file, err.data != NULL ? err.data :
		    ki_strerror(rc));
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	if (rc != KI_OK) {
		progress_clear(&s);
		rc = s.exit;
		goto out;
	}
	if (s.dry_run) {
		rc = s.conv_failed > 0 ? CLI_EXIT_REJECTED : CLI_EXIT_OK;
		if (s.conv_failed > 0)
			cli_err(c, "%s: %zu rows could not be converted",
			    s.file, s.conv_failed);
		goto out;
	}
	if (s.atomic && s.conv_failed > 0) {
		progress_clear(&s);
		cli_err(c, "%s: %zu rows could not be converted; nothing was "
		    "uploaded (--atomic)", s.file, s.conv_failed);
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	rc = import_flush(&s);
	progress_clear(&s);
	if (rc != CLI_EXIT_OK)
		goto out;
	s.tally.failed += s.conv_failed;
	printf("imported %s: %zu rows: %zu created, %zu unchanged, %zu "
	    "failed\n", s.file, s.tally.created + s.tally.unchanged +
	    s.tally.failed, s.tally.created, s.tally.unchanged, s.tally.failed);
	rc = s.tally.failed > 0 ? CLI_EXIT_REJECTED : CLI_EXIT_OK;
out:
	json_object_put(s.bundles);
	free(s.lines);
	ki_buf_free(&s.nd);
	ki_buf_free(&text);
	ki_buf_free(&err);
	return rc;
}
