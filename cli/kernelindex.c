/* cli/kernelindex.c — the kernelindex command-line client: global options,
 * command dispatch, and the read commands get, list and watch (what the
 * commands share is in cli/common.c). */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"

static const char usage_text[] =
"usage: kernelindex [--server URL] [--token TOKEN] COMMAND …\n"
"\n"
"commands:\n"
"  push FILE|DIR|- …          upload JSON documents or bundles, or NDJSON\n"
"                              (one bundle per line); folders recursively\n"
"       [--atomic] [--batch N]\n"
"  get KIND NAME [-o json|name]   one object; NAME may be sha256:<hex>\n"
"  list KIND [-l SELECTOR] [--limit N] [-o table|json|name]\n"
"  watch KIND [-l SELECTOR] [-o json]\n"
"  import liger FILE [--batch N] [--atomic] [--dry-run [-o ndjson]]\n"
"  export liger [-o FILE]\n"
"  compare --baseline SELECTOR --candidate SELECTOR [--threshold 5%]\n"
"          [-l SELECTOR] [-o table|markdown|json|csv]   exit 1: regressed\n"
"\n"
"KIND: benchmarkruns (kbr), benchmarkprotocols (kbp),\n"
"  executionenvironments (kee), workloads (kwl), implementations (kimpl),\n"
"  verifications (kver), thresholds (kth); singular names and Kinds work\n"
"  too.\n"
"\n"
"The server comes from --server or KERNELINDEX_SERVER (default "
CLI_DEFAULT_SERVER "),\n"
"the token from --token or KERNELINDEX_TOKEN.\n"
"\n"
"exit status: 0 ok, 1 the server rejected something (or the input was\n"
"unusable), 2 usage, 3 the server could not be reached.\n";

/* The string member key of o, or NULL. */
static const char *
str_member(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* ====================================================================== */
/* Option parsing                                                          */

/* Whether argv[*i] is option `name` (or one of its spellings a, b) with a
 * value: "--x V" or "--x=V". Returns 1 and advances *i past it, 0 when it
 * is not this option, -1 when the value is missing. */
static int
take_opt(int argc, char **argv, int *i, const char *a, const char *b,
	const char **val)
{
	const char *arg = argv[*i];
	const char *names[2];
	int k;

	names[0] = a;
	names[1] = b;
	for (k = 0; k < 2; k++) {
		size_t n;

		if (names[k] == NULL)
			continue;
		n = strlen(names[k]);
		if (strncmp(arg, names[k], n) != 0)
			continue;
		if (arg[n] == '=') {
			*val = arg + n + 1;
			(*i)++;
			return 1;
		}
		if (arg[n] != '\0')
			continue;
		if (*i + 1 >= argc)
			return -1;
		*val = argv[*i + 1];
		*i += 2;
		return 1;
	}
	return 0;
}

typedef struct read_opts {
	const cli_kind *kind;
	const char *name;
	const char *selector;
	const char *output;
	size_t limit;
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
	o->limit = CLI_DEFAULT_BATCH;
	while (i < argc) {
		const char *v = NULL;
		int r;

		if ((r = take_opt(argc, argv, &i, "-l", "--selector", &v)) != 0) {
			if (r < 0)
				goto missing;
			o->selector = v;
		} else if ((r = take_opt(argc, argv, &i, "-o", "--output",
		    &v)) != 0) {
			if (r < 0)
				goto missing;
			o->output = v;
		} else if ((r = take_opt(argc, argv, &i, "--limit", NULL,
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
		const char *kind = str_member(obj, "kind");
		const cli_kind *ck = kind != NULL ? cli_kind_by_kind(kind) : NULL;

		/* Read by digest, an object is its content: no metadata. */
		json_object_object_get_ex(obj, "metadata", &meta);
		printf("%s/%s\n", ck != NULL ? ck->plural : o.kind->plural,
		    str_member(meta, "name") != NULL ? str_member(meta, "name") :
		    o.name);
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

/* The value column of a run: its median latency or peak memory. */
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
		const char *st = str_member(m, "statistic");
		const char *unit = str_member(m, "unit");

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

typedef struct table {
	int is_run;
	int width;      /* of the NAME column, fixed by the first page */
	int header;
} table;

static void
table_row(table *t, struct json_object *item)
{
	struct json_object *meta = NULL, *spec = NULL, *sn = NULL;
	const char *name, *title;
	char value[64];

	json_object_object_get_ex(item, "metadata", &meta);
	json_object_object_get_ex(item, "spec", &spec);
	name = str_member(meta, "name");
	title = str_member(meta, "title");
	if (name == NULL)
		name = "?";
	if (t->is_run) {
		json_object_object_get_ex(spec, "sourceNative", &sn);
		run_value(item, value, sizeof(value));
		printf("%-*s  %-28s  %-12s  %s\n", t->width, name,
		    str_member(sn, "benchmark") ? str_member(sn, "benchmark") :
		    "", value, str_member(spec, "observedAt") ?
		    str_member(spec, "observedAt") : "");
	} else {
		printf("%-*s  %s\n", t->width, name, title != NULL ? title : "");
	}
}

static void
table_page(table *t, struct json_object *items)
{
	size_t i, n = json_object_array_length(items);

	if (!t->header) {
		for (i = 0; i < n; i++) {
			struct json_object *meta = NULL;
			const char *name;

			json_object_object_get_ex(json_object_array_get_idx(items,
			    i), "metadata", &meta);
			name = str_member(meta, "name");
			if (name != NULL && (int)strlen(name) > t->width)
				t->width = (int)strlen(name);
		}
		if (t->is_run)
			printf("%-*s  %-28s  %-12s  %s\n", t->width, "NAME",
			    "BENCHMARK", "VALUE", "OBSERVED");
		else
			printf("%-*s  %s\n", t->width, "NAME", "TITLE");
		t->header = 1;
	}
	for (i = 0; i < n; i++)
		table_row(t, json_object_array_get_idx(items, i));
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
	int rc, first = 1;

	rc = parse_read(c, "list", argc, argv, 0, &o);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (o.output == NULL || strcmp(o.output, "table") == 0 ||
	    strcmp(o.output, "wide") == 0)
		out = OUT_TABLE;
	else if (strcmp(o.output, "json") == 0)
		out = OUT_JSON;
	else if (strcmp(o.output, "name") == 0)
		out = OUT_NAME;
	else {
		cli_err(c, "list: -o takes table, json or name");
		return CLI_EXIT_USAGE;
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		return rc;
	memset(&t, 0, sizeof(t));
	t.is_run = strcmp(o.kind->kind, "BenchmarkRun") == 0;
	t.width = 4;
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
		ki_buf_printf(&path, "%s/%s?limit=%zu", CLI_API_PREFIX,
		    o.kind->plural, o.limit);
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
		if (page == NULL || !json_object_object_get_ex(page, "items",
		    &items) || !json_object_is_type(items, json_type_array)) {
			json_object_put(page);
			cli_err(c, "list: the server's answer is not a list");
			rc = CLI_EXIT_REJECTED;
			goto out;
		}
		json_object_object_get_ex(page, "metadata", &meta);
		if (out == OUT_JSON && first) {
			const char *rv = str_member(meta, "resourceVersion");

			printf("{\"apiVersion\":\"%s\",\"kind\":\"%sList\","
			    "\"metadata\":{\"resourceVersion\":\"%s\"},"
			    "\"items\":[", CLI_API_VERSION, o.kind->kind,
			    rv != NULL ? rv : "");
		}
		first = 0;
		if (out == OUT_TABLE) {
			table_page(&t, items);
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
				printf("%s/%s\n", o.kind->plural,
				    str_member(m, "name") ?
				    str_member(m, "name") : "?");
			}
		}
		nitems += json_object_array_length(items);
		next = str_member(meta, "continue");
		more = next != NULL && *next != '\0';
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
	type = str_member(ev, "type");
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
		    str_member(meta, "name") ? str_member(meta, "name") : "?");
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
/* main                                                                    */

static int
usage(const cli *c, const char *why)
{
	if (why != NULL)
		cli_err(c, "%s", why);
	fputs(usage_text, stderr);
	return CLI_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	cli c;
	char **args;
	int nargs = 0, i, rc;
	const char *cmd;

	memset(&c, 0, sizeof(c));
	c.prog = "kernelindex";
	c.server = getenv("KERNELINDEX_SERVER");
	if (c.server == NULL || *c.server == '\0')
		c.server = CLI_DEFAULT_SERVER;
	c.token = getenv("KERNELINDEX_TOKEN");
	c.tty = isatty(STDERR_FILENO);

	/* --server and --token may stand anywhere; the rest stays in order. */
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (args == NULL) {
		cli_err(&c, "out of memory");
		return CLI_EXIT_REJECTED;
	}
	for (i = 1; i < argc;) {
		const char *v = NULL;
		int r;

		if (strcmp(argv[i], "--") == 0) {
			for (i++; i < argc; i++)
				args[nargs++] = argv[i];
			break;
		}
		if ((r = take_opt(argc, argv, &i, "--server", "-s", &v)) != 0) {
			if (r < 0) {
				free(args);
				return usage(&c, "--server needs a URL");
			}
			c.server = v;
		} else if ((r = take_opt(argc, argv, &i, "--token", NULL,
		    &v)) != 0) {
			if (r < 0) {
				free(args);
				return usage(&c, "--token needs a value");
			}
			c.token = v;
		} else {
			args[nargs++] = argv[i++];
		}
	}
	if (nargs == 0) {
		free(args);
		return usage(&c, "no command");
	}
	cmd = args[0];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
	    strcmp(cmd, "help") == 0) {
		fputs(usage_text, stdout);
		free(args);
		return CLI_EXIT_OK;
	}
	if (strncmp(c.server, "http://", 7) != 0 &&
	    strncmp(c.server, "https://", 8) != 0) {
		free(args);
		return usage(&c, "the server URL must begin with http:// or "
		    "https://");
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		cli_err(&c, "cannot initialise libcurl");
		free(args);
		return CLI_EXIT_REJECTED;
	}
	if (strcmp(cmd, "push") == 0)
		rc = cli_cmd_push(&c, nargs - 1, args + 1);
	else if (strcmp(cmd, "get") == 0)
		rc = cli_cmd_get(&c, nargs - 1, args + 1);
	else if (strcmp(cmd, "list") == 0)
		rc = cli_cmd_list(&c, nargs - 1, args + 1);
	else if (strcmp(cmd, "watch") == 0)
		rc = cli_cmd_watch(&c, nargs - 1, args + 1);
	else if (strcmp(cmd, "import") == 0)
		rc = cli_cmd_import(&c, nargs - 1, args + 1);
	else if (strcmp(cmd, "export") == 0)
		rc = cli_cmd_export(&c, nargs - 1, args + 1);
	else if (strcmp(cmd, "compare") == 0)
		rc = cli_cmd_compare(&c, nargs - 1, args + 1);
	else
		rc = usage(&c, "unknown command");
	cli_http_free(c.http);
	curl_global_cleanup();
	free(args);
	if (fflush(stdout) != 0 && rc == CLI_EXIT_OK) {
		cli_err(&c, "writing the output: %s", strerror(errno));
		rc = CLI_EXIT_REJECTED;
	}
	return rc;
}
