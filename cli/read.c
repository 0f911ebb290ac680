/* cli/read.c — the read commands get, list and watch, and delete. */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"

/* What `-o name` prints for an object: kubectl's form,
 * "benchmarkrun.kernelindex.dev/NAME". */
static void
print_name(const cli_kind *k, const char *name)
{
	printf("%s.kernelindex.dev/%s\n", k->singular, name);
}

typedef struct read_opts {
	const cli_kind *kind;
	const char *name;
	const char *selector;
	const char *output;
	size_t limit;       /* --limit: items in all; 0: every one */
} read_opts;

/* Parses KIND [NAME] and -l/-o/--limit for get, list and watch. Returns 0
 * or CLI_EXIT_USAGE after printing why. */
static int
parse_read(const cli *c, const char *cmd, int argc, char **argv,
	int want_name, read_opts *o)
{
	const char *pos[2] = { NULL, NULL };
	int i = 0, npos = 0;

	memset(o, 0, sizeof(*o));
	o->limit = 0;
	while (i < argc) {
		const char *v = NULL;
		int r;

		if ((r = cli_take_opt(argc, argv, &i, "-l", "--selector", &v)) != 0) {
			if (r < 0)
				goto missing;
			o->selector = v;
		} else if ((r = cli_take_opt(argc, argv, &i, "-o", "--output",
		    &v)) != 0) {
			if (r < 0)
				goto missing;
			o->output = v;
		} else if ((r = cli_take_opt(argc, argv, &i, "--limit", NULL,
		    &v)) != 0) {
			if (r < 0)
				goto missing;
			if (cli_parse_count(v, &o->limit) != KI_OK) {
				cli_err(c, "%s: --limit wants a positive count",
				    cmd);
				return CLI_EXIT_USAGE;
			}
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			cli_err(c, "%s: unknown option %s", cmd, argv[i]);
			return CLI_EXIT_USAGE;
		} else {
			if (npos == 2) {
				cli_err(c, "%s: too many arguments", cmd);
				return CLI_EXIT_USAGE;
			}
			pos[npos++] = argv[i++];
		}
	}
	if (npos != (want_name ? 2 : 1)) {
		cli_err(c, "usage: %s KIND%s", cmd, want_name ? " NAME" : "");
		return CLI_EXIT_USAGE;
	}
	o->kind = cli_kind_lookup(pos[0]);
	if (o->kind == NULL) {
		cli_err(c, "%s: unknown kind '%s'", cmd, pos[0]);
		return CLI_EXIT_USAGE;
	}
	o->name = pos[1];
	return CLI_EXIT_OK;
missing:
	cli_err(c, "%s: %s needs a value", cmd, argv[i]);
	return CLI_EXIT_USAGE;
}

/* ====================================================================== */
/* get                                                                     */

int
cli_cmd_get(cli *c, int argc, char **argv)
{
	struct json_object *obj = NULL;
	read_opts o;
	ki_buf path, body;
	long status = 0;
	int rc;

	rc = parse_read(c, "get", argc, argv, 1, &o);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (o.output != NULL && strcmp(o.output, "json") != 0 &&
	    strcmp(o.output, "name") != 0) {
		cli_err(c, "get: -o takes json or name");
		return CLI_EXIT_USAGE;
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		return rc;
	ki_buf_init(&path);
	ki_buf_init(&body);
	if (strncmp(o.name, "sha256:", 7) == 0)
		ki_buf_puts(&path, CLI_API_PREFIX "/objects/");
	else
		ki_buf_printf(&path, "%s/%s/", CLI_API_PREFIX, o.kind->plural);
	cli_url_escape(&path, o.name);
	rc = path.oom ? KI_ENOMEM : cli_http_request(c->http, "GET", path.data,
	    NULL, NULL, 0, &body, &status);
	if (rc != KI_OK) {
		rc = cli_transport_fail(c, rc);
		goto out;
	}
	if (status != 200) {
		cli_print_status(c, NULL, status, body.data, body.len);
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	obj = json_tokener_parse(body.data);
	if (obj == NULL) {
		cli_err(c, "get: the server's answer is not JSON");
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	if (o.output != NULL && strcmp(o.output, "name") == 0) {
		struct json_object *meta = NULL;
		const char *kind = cli_str_member(obj, "kind");
		const cli_kind *ck = kind != NULL ? cli_kind_by_kind(kind) : NULL;

		/* Read by digest, an object is its content: no metadata. */
		json_object_object_get_ex(obj, "metadata", &meta);
		print_name(ck != NULL ? ck : o.kind,
		    cli_str_member(meta, "name") != NULL ?
		    cli_str_member(meta, "name") : o.name);
	} else {
		printf("%s\n", json_object_to_json_string_ext(obj,
		    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		    JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	rc = CLI_EXIT_OK;
out:
	json_object_put(obj);
	ki_buf_free(&path);
	ki_buf_free(&body);
	return rc;
}

/* ====================================================================== */
/* list                                                                    */

/* The median column of a run: its median latency or peak memory. */
static void
run_value(struct json_object *item, char *out, size_t n)
{
	struct json_object *spec, *v, *ms;
	size_t i;

	out[0] = '\0';
	if (!json_object_object_get_ex(item, "spec", &spec))
		return;
	if (json_object_object_get_ex(spec, "timing", &v) &&
	    json_object_object_get_ex(v, "latencyNs", &v) &&
	    json_object_object_get_ex(v, "median", &v)) {
		snprintf(out, n, "%.4g ms", json_object_get_double(v) / 1e6);
		return;
	}
	if (!json_object_object_get_ex(spec, "measurements", &ms) ||
	    !json_object_is_type(ms, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(ms); i++) {
		struct json_object *m = json_object_array_get_idx(ms, i);
		const char *st = cli_str_member(m, "statistic");
		const char *unit = cli_str_member(m, "unit");

		if (st == NULL || strcmp(st, "median") != 0 ||
		    !json_object_object_get_ex(m, "value", &v))
			continue;
		if (unit != NULL && strcmp(unit, "bytes") == 0)
			snprintf(out, n, "%.1f MiB",
			    json_object_get_double(v) / 1048576.0);
		else
			snprintf(out, n, "%g %s", json_object_get_double(v),
			    unit != NULL ? unit : "");
		return;
	}
}

/* The swept size of a run: the annotation a client wrote
 * (kernelindex.dev/swept, "hidden=4096"), or Liger's x_name=x_value. */
static void
run_swept(struct json_object *ann, char *out, size_t n)
{
	const char *s = cli_str_member(ann, "kernelindex.dev/swept");
	const char *xn = cli_str_member(ann, "liger.kernelindex.dev/x-name");
	const char *xv = cli_str_member(ann, "liger.kernelindex.dev/x-value");

	if (s != NULL)
		snprintf(out, n, "%s", s);
	else if (xn != NULL && xv != NULL)
		snprintf(out, n, "%s=%s", xn, xv);
	else
		out[0] = '\0';
}

#define LIST_RUN_COLS 10
#define LIST_MAX_COLS 16
#define LIST_CELL 256

/* A table printed page by page; the widths are fixed by the first. */
typedef struct table {
	int ncols;
	const char *head[LIST_MAX_COLS];
	char headbuf[LIST_MAX_COLS][32];
	int width[LIST_MAX_COLS];
	int started;
} table;

/* The cells of one run (NAME KERNEL PASS PROVIDER GPU DTYPE SWEPT MEDIAN
 * VERDICT VERSION). */
static void
run_cells(struct json_object *item, char cell[][LIST_CELL])
{
	struct json_object *meta = NULL, *labels = NULL, *ann = NULL;
	struct json_object *st = NULL, *pl = NULL;
	const char *keys[5] = { "kernel", "pass", "provider", "gpu", "dtype" };
	const char *v;
	int k;

	json_object_object_get_ex(item, "metadata", &meta);
	json_object_object_get_ex(meta, "labels", &labels);
	json_object_object_get_ex(meta, "annotations", &ann);
	json_object_object_get_ex(item, "status", &st);
	json_object_object_get_ex(st, "plausibility", &pl);
	v = cli_str_member(meta, "name");
	snprintf(cell[0], LIST_CELL, "%s", v != NULL ? v : "?");
	for (k = 0; k < 5; k++) {
		v = cli_str_member(labels, keys[k]);
		snprintf(cell[1 + k], LIST_CELL, "%s", v != NULL ? v : "");
	}
	run_swept(ann, cell[6], LIST_CELL);
	run_value(item, cell[7], LIST_CELL);
	v = cli_str_member(pl, "verdict");
	snprintf(cell[8], LIST_CELL, "%s", v != NULL ? v : "");
	v = cli_str_member(labels, "version");
	if (v == NULL)
		v = cli_str_member(labels, "liger_version");
	if (v == NULL)  /* a Liger version that is no label value */
		v = cli_str_member(ann, "liger.kernelindex.dev/liger-version");
	snprintf(cell[9], LIST_CELL, "%s", v != NULL ? v : "");
}

static void
table_print_row(const table *t, char cell[][LIST_CELL])
{
	int k;

	for (k = 0; k < t->ncols; k++) {
		if (k + 1 < t->ncols)
			printf("%-*s   ", t->width[k], cell[k]);
		else
			printf("%s\n", cell[k]);
	}
}

/* Prints a page of runs (JSON items). */
static void
table_runs(table *t, struct json_object *items)
{
	static const char *const heads[LIST_RUN_COLS] = { "NAME", "KERNEL",
		"PASS", "PROVIDER", "GPU", "DTYPE", "SWEPT", "MEDIAN", "VERDICT",
		"VERSION" };
	char cell[LIST_MAX_COLS][LIST_CELL];
	size_t i, n = json_object_array_length(items);
	int k;

	if (!t->started) {
		t->ncols = LIST_RUN_COLS;
		for (k = 0; k < t->ncols; k++) {
			t->head[k] = heads[k];
			t->width[k] = (int)strlen(heads[k]);
		}
		for (i = 0; i < n; i++) {
			run_cells(json_object_array_get_idx(items, i), cell);
			for (k = 0; k < t->ncols; k++)
				if ((int)strlen(cell[k]) > t->width[k])
					t->width[k] = (int)strlen(cell[k]);
		}
		for (k = 0; k < t->ncols; k++)
			snprintf(cell[k], LIST_CELL, "%s", t->head[k]);
		table_print_row(t, cell);
		t->started = 1;
	}
	for (i = 0; i < n; i++) {
		run_cells(json_object_array_get_idx(items, i), cell);
		table_print_row(t, cell);
	}
}

/* The text of a Table cell. */
static void
cell_text(struct json_object *v, char *out)
{
	if (v == NULL || json_object_is_type(v, json_type_null))
		out[0] = '\0';
	else
		snprintf(out, LIST_CELL, "%s", json_object_get_string(v));
}

/* Prints a page of a server Table (rows of cells), the columns of
 * priority 0 (every column when wide). */
static void
table_server(table *t, struct json_object *tab, int wide, int *pick)
{
	struct json_object *defs = NULL, *rows = NULL;
	char cell[LIST_MAX_COLS][LIST_CELL];
	size_t i, n;
	int k, j;

	json_object_object_get_ex(tab, "rows", &rows);
	n = rows != NULL ? json_object_array_length(rows) : 0;
	if (!t->started && json_object_object_get_ex(tab, "columnDefinitions",
	    &defs)) {
		t->ncols = 0;
		for (i = 0; i < json_object_array_length(defs) &&
		    t->ncols < LIST_MAX_COLS; i++) {
			struct json_object *d = json_object_array_get_idx(defs, i);
			struct json_object *pr = NULL;
			const char *nm = cli_str_member(d, "name");

			json_object_object_get_ex(d, "priority", &pr);
			if (!wide && pr != NULL && json_object_get_int(pr) > 0)
				continue;
			pick[t->ncols] = (int)i;
			for (j = 0; nm != NULL && nm[j] != '\0' && j < 31; j++)
				t->headbuf[t->ncols][j] = (char)toupper(
				    (unsigned char)nm[j]);
			t->headbuf[t->ncols][j] = '\0';
			t->head[t->ncols] = t->headbuf[t->ncols];
			t->width[t->ncols] = j;
			t->ncols++;
		}
		for (i = 0; i < n; i++) {
			struct json_object *cells = NULL;

			json_object_object_get_ex(json_object_array_get_idx(rows,
			    i), "cells", &cells);
			for (k = 0; k < t->ncols; k++) {
				cell_text(json_object_array_get_idx(cells,
				    (size_t)pick[k]), cell[k]);
				if ((int)strlen(cell[k]) > t->width[k])
					t->width[k] = (int)strlen(cell[k]);
			}
		}
		for (k = 0; k < t->ncols; k++)
			snprintf(cell[k], LIST_CELL, "%s", t->head[k]);
		table_print_row(t, cell);
		t->started = 1;
	}
	for (i = 0; i < n; i++) {
		struct json_object *cells = NULL;

		json_object_object_get_ex(json_object_array_get_idx(rows, i),
		    "cells", &cells);
		for (k = 0; k < t->ncols; k++)
			cell_text(json_object_array_get_idx(cells,
			    (size_t)pick[k]), cell[k]);
		table_print_row(t, cell);
	}
}

int
cli_cmd_list(cli *c, int argc, char **argv)
{
	enum { OUT_TABLE, OUT_JSON, OUT_NAME } out = OUT_TABLE;
	read_opts o;
	ki_buf path, body;
	char *cont = NULL;
	table t;
	size_t nitems = 0;
	int rc, first = 1, is_run, wide = 0, pick[LIST_MAX_COLS];

	rc = parse_read(c, "list", argc, argv, 0, &o);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (o.output == NULL || strcmp(o.output, "table") == 0 ||
	    strcmp(o.output, "wide") == 0) {
		out = OUT_TABLE;
		wide = o.output != NULL && strcmp(o.output, "wide") == 0;
	}
	else if (strcmp(o.output, "json") == 0)
		out = OUT_JSON;
	else if (strcmp(o.output, "name") == 0)
		out = OUT_NAME;
	else {
		cli_err(c, "list: -o takes table, wide, json or name");
		return CLI_EXIT_USAGE;
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		return rc;
	memset(&t, 0, sizeof(t));
	is_run = strcmp(o.kind->kind, "BenchmarkRun") == 0;
	/* Other kinds are printed with the server's Table columns. */
	if (out == OUT_TABLE && !is_run)
		cli_http_set_accept(c->http, "application/json;as=Table;v=v1;"
		    "g=meta.k8s.io, application/json");
	ki_buf_init(&path);
	ki_buf_init(&body);
	for (;;) {
		struct json_object *page = NULL, *items = NULL, *meta = NULL;
		const char *next;
		long status = 0;
		size_t i;
		int more;

		ki_buf_reset(&path);
		ki_buf_reset(&body);
		/* --limit N: N items in all, asked in pages of at most
		 * CLI_DEFAULT_BATCH. */
		ki_buf_printf(&path, "%s/%s?limit=%zu", CLI_API_PREFIX,
		    o.kind->plural, o.limit > 0 && o.limit - nitems <
		    CLI_DEFAULT_BATCH ? o.limit - nitems : CLI_DEFAULT_BATCH);
		if (o.selector != NULL) {
			ki_buf_puts(&path, "&labelSelector=");
			cli_url_escape(&path, o.selector);
		}
		if (cont != NULL) {
			ki_buf_puts(&path, "&continue=");
			cli_url_escape(&path, cont);
		}
		rc = path.oom ? KI_ENOMEM : cli_http_request(c->http, "GET",
		    path.data, NULL, NULL, 0, &body, &status);
		if (rc != KI_OK) {
			rc = cli_transport_fail(c, rc);
			goto out;
		}
		if (status != 200) {
			cli_print_status(c, NULL, status, body.data, body.len);
			rc = CLI_EXIT_REJECTED;
			goto out;
		}
		page = json_tokener_parse(body.data);
		if (out == OUT_TABLE && !is_run && page != NULL &&
		    json_object_object_get_ex(page, "rows", &items) &&
		    json_object_is_type(items, json_type_array)) {
			table_server(&t, page, wide, pick);
			json_object_object_get_ex(page, "metadata", &meta);
			goto paged;
		}
		if (page == NULL || !json_object_object_get_ex(page, "items",
		    &items) || !json_object_is_type(items, json_type_array)) {
			json_object_put(page);
			cli_err(c, "list: the server's answer is not a list");
			rc = CLI_EXIT_REJECTED;
			goto out;
		}
		json_object_object_get_ex(page, "metadata", &meta);
		if (out == OUT_JSON && first) {
			const char *rv = cli_str_member(meta, "resourceVersion");

			printf("{\"apiVersion\":\"%s\",\"kind\":\"%sList\","
			    "\"metadata\":{\"resourceVersion\":\"%s\"},"
			    "\"items\":[", CLI_API_VERSION, o.kind->kind,
			    rv != NULL ? rv : "");
		}
		first = 0;
		if (out == OUT_TABLE) {
			table_runs(&t, items);
		} else {
			for (i = 0; i < json_object_array_length(items); i++) {
				struct json_object *it =
				    json_object_array_get_idx(items, i);
				struct json_object *m = NULL;

				if (out == OUT_JSON) {
					printf("%s\n%s", nitems + i > 0 ? "," : "",
					    json_object_to_json_string_ext(it,
					    CLI_JSON_FLAGS));
					continue;
				}
				json_object_object_get_ex(it, "metadata", &m);
				print_name(o.kind, cli_str_member(m, "name") ?
				    cli_str_member(m, "name") : "?");
			}
		}
paged:
		nitems += json_object_array_length(items);
		next = cli_str_member(meta, "continue");
		more = next != NULL && *next != '\0' &&
		    (o.limit == 0 || nitems < o.limit);
		free(cont);
		cont = more ? strdup(next) : NULL;
		json_object_put(page);
		if (more && cont == NULL) {
			rc = cli_transport_fail(c, KI_ENOMEM);
			goto out;
		}
		if (!more)
			break;
	}
	if (out == OUT_JSON)
		printf("\n]}\n");
	else if (out == OUT_TABLE && nitems == 0)
		fprintf(stderr, "No resources found.\n");
	rc = CLI_EXIT_OK;
out:
	cli_http_set_accept(c->http, NULL);
	free(cont);
	ki_buf_free(&path);
	ki_buf_free(&body);
	return rc;
}

/* ====================================================================== */
/* watch                                                                   */

typedef struct watch_state {
	const cli *c;
	const cli_kind *kind;
	int json;
	int not_stream;  /* the answer was no event stream */
} watch_state;

static int
watch_line(void *arg, const char *line, size_t len)
{
	watch_state *w = arg;
	struct json_object *ev, *obj = NULL, *meta = NULL;
	const char *type;

	(void)len;
	if (w->json) {
		printf("%s\n", line);
		fflush(stdout);
		return 0;
	}
	ev = json_tokener_parse(line);
	type = cli_str_member(ev, "type");
	if (type == NULL && json_object_object_get_ex(ev, "items", NULL)) {
		cli_err(w->c, "watch: the server answered a list, not a stream "
		    "of watch events");
		json_object_put(ev);
		w->not_stream = 1;
		return 1;
	}
	json_object_object_get_ex(ev, "object", &obj);
	if (type != NULL && strcmp(type, "ERROR") == 0) {
		cli_print_status_obj(w->c, "watch: ", obj);
	} else if (type != NULL) {
		json_object_object_get_ex(obj, "metadata", &meta);
		printf("%-9s %s/%s\n", type, w->kind->plural,
		    cli_str_member(meta, "name") ? cli_str_member(meta, "name") : "?");
		fflush(stdout);
	}
	json_object_put(ev);
	return 0;
}

int
cli_cmd_watch(cli *c, int argc, char **argv)
{
	watch_state w;
	read_opts o;
	ki_buf path, body;
	long status = 0;
	int rc;

	rc = parse_read(c, "watch", argc, argv, 0, &o);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (o.output != NULL && strcmp(o.output, "json") != 0) {
		cli_err(c, "watch: -o takes json");
		return CLI_EXIT_USAGE;
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		return rc;
	w.c = c;
	w.kind = o.kind;
	w.json = o.output != NULL;
	w.not_stream = 0;
	ki_buf_init(&path);
	ki_buf_init(&body);
	ki_buf_printf(&path, "%s/%s?watch=true", CLI_API_PREFIX,
	    o.kind->plural);
	if (o.selector != NULL) {
		ki_buf_puts(&path, "&labelSelector=");
		cli_url_escape(&path, o.selector);
	}
	rc = path.oom ? KI_ENOMEM : cli_http_stream(c->http, path.data,
	    watch_line, &w, &body, &status);
	if (rc != KI_OK)
		rc = cli_transport_fail(c, rc);
	else if (w.not_stream)
		rc = CLI_EXIT_REJECTED;
	else if (status != 200) {
		cli_print_status(c, NULL, status, body.data, body.len);
		rc = CLI_EXIT_REJECTED;
	} else
		rc = CLI_EXIT_OK;
	ki_buf_free(&path);
	ki_buf_free(&body);
	return rc;
}


/* ====================================================================== */
/* delete                                                                  */

/* Deletes one object by name. Returns 0, 1 when the server refused, or an
 * exit code to stop with. */
static int
delete_one(cli *c, const cli_kind *k, const char *name)
{
	ki_buf path, body;
	long status = 0;
	int rc;

	ki_buf_init(&path);
	ki_buf_init(&body);
	ki_buf_printf(&path, "%s/%s/", CLI_API_PREFIX, k->plural);
	cli_url_escape(&path, name);
	rc = path.oom ? KI_ENOMEM : cli_http_request(c->http, "DELETE",
	    path.data, NULL, NULL, 0, &body, &status);
	if (rc != KI_OK) {
		rc = cli_transport_fail(c, rc);
	} else if (status == 200 || status == 202) {
		printf("%s.kernelindex.dev \"%s\" deleted\n", k->singular, name);
		rc = CLI_EXIT_OK;
	} else {
		cli_print_status(c, NULL, status, body.data, body.len);
		rc = 1;
	}
	ki_buf_free(&path);
	ki_buf_free(&body);
	return rc;
}

int
cli_cmd_delete(cli *c, int argc, char **argv)
{
	const cli_kind *k = NULL;
	const char *selector = NULL;
	struct json_object *names = NULL;
	int i, rc = CLI_EXIT_OK, failed = 0;
	size_t n;

	names = json_object_new_array();
	if (names == NULL)
		return cli_transport_fail(c, KI_ENOMEM);
	for (i = 0; i < argc;) {
		const char *v = NULL;
		int r = cli_take_opt(argc, argv, &i, "-l", "--selector", &v);

		if (r < 0) {
			cli_err(c, "delete: -l needs a selector");
			rc = CLI_EXIT_USAGE;
			goto out;
		}
		if (r > 0) {
			selector = v;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			cli_err(c, "delete: unknown option %s", argv[i]);
			rc = CLI_EXIT_USAGE;
			goto out;
		} else if (k == NULL) {
			k = cli_kind_lookup(argv[i]);
			if (k == NULL) {
				cli_err(c, "delete: unknown kind '%s'", argv[i]);
				rc = CLI_EXIT_USAGE;
				goto out;
			}
			i++;
		} else {
			json_object_array_add(names,
			    json_object_new_string(argv[i++]));
		}
	}
	if (k == NULL || (json_object_array_length(names) == 0) ==
	    (selector == NULL)) {
		cli_err(c, "usage: delete KIND NAME … | delete KIND -l SELECTOR");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		goto out;
	if (selector != NULL) {
		/* The names first, then the deletes: a page stays valid. */
		ki_buf path, body;
		struct json_object *page = NULL, *items = NULL;
		long status = 0;

		ki_buf_init(&path);
		ki_buf_init(&body);
		ki_buf_printf(&path, "%s/%s?labelSelector=", CLI_API_PREFIX,
		    k->plural);
		cli_url_escape(&path, selector);
		rc = path.oom ? KI_ENOMEM : cli_http_request(c->http, "GET",
		    path.data, NULL, NULL, 0, &body, &status);
		if (rc != KI_OK) {
			rc = cli_transport_fail(c, rc);
		} else if (status != 200) {
			cli_print_status(c, NULL, status, body.data, body.len);
			rc = CLI_EXIT_REJECTED;
		} else {
			page = json_tokener_parse(body.data);
			json_object_object_get_ex(page, "items", &items);
			for (n = 0; items != NULL &&
			    n < json_object_array_length(items); n++) {
				struct json_object *m = NULL;
				const char *nm;

				json_object_object_get_ex(json_object_array_get_idx(
				    items, n), "metadata", &m);
				nm = cli_str_member(m, "name");
				if (nm != NULL)
					json_object_array_add(names,
					    json_object_new_string(nm));
			}
			json_object_put(page);
			if (json_object_array_length(names) == 0)
				fprintf(stderr, "No resources found.\n");
		}
		ki_buf_free(&path);
		ki_buf_free(&body);
		if (rc != CLI_EXIT_OK)
			goto out;
	}
	for (n = 0; n < json_object_array_length(names); n++) {
		rc = delete_one(c, k, json_object_get_string(
		    json_object_array_get_idx(names, n)));
		if (rc == 1) {
			failed++;
			rc = CLI_EXIT_OK;
		}
		if (rc != CLI_EXIT_OK)
			goto out;
	}
	rc = failed > 0 ? CLI_EXIT_REJECTED : CLI_EXIT_OK;
out:
	json_object_put(names);
	return rc;
}
