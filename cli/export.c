/* cli/export.c — export: reads the runs a selector matches back from the
 * server and writes them as Liger's all_benchmark_data.csv rows (export
 * liger) or as plain CSV, one row a run (export csv). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/liger.h"
#include "cli/cli.h"

static const char *
str_at(struct json_object *o, const char *a, const char *b, const char *k)
{
	const char *keys[3];
	int i;

	keys[0] = a;
	keys[1] = b;
	keys[2] = k;
	for (i = 0; i < 3 && keys[i] != NULL; i++)
		if (o == NULL || !json_object_object_get_ex(o, keys[i], &o))
			return NULL;
	return o != NULL && json_object_is_type(o, json_type_string) ?
	    json_object_get_string(o) : NULL;
}

/* The key of a run's sweep: its externalId without the workload segment
 * (kernel/pass[/memory]/provider/gpu/timestamp), the runs of one Liger
 * sweep sharing it. Writes into out; returns 0 or KI_EINVAL. */
static int
sweep_key(struct json_object *run, ki_buf *out)
{
	const char *eid = str_at(run, "spec", "sourceNative", "externalId");
	const char *last, *prev;

	if (eid == NULL || (last = strrchr(eid, '/')) == NULL || last == eid)
		return KI_EINVAL;
	for (prev = last - 1; prev > eid && *prev != '/'; prev--)
		;
	if (prev == eid)
		return KI_EINVAL;
	ki_buf_append(out, eid, (size_t)(prev - eid));
	ki_buf_puts(out, last);
	return out->oom ? KI_ENOMEM : KI_OK;
}

/* Fetches every run the selector (NULL: all) matches, page by page, into
 * runs (Liger runs only when liger_only). */
static int
fetch_runs(cli *c, const char *selector, int liger_only,
	struct json_object *runs)
{
	ki_buf path, body;
	char *cont = NULL;
	int rc = CLI_EXIT_OK;

	ki_buf_init(&path);
	ki_buf_init(&body);
	for (;;) {
		struct json_object *page, *items = NULL, *meta = NULL;
		const char *next;
		long status = 0;
		size_t i;
		int r, more;

		ki_buf_reset(&path);
		ki_buf_reset(&body);
		ki_buf_printf(&path, "%s/benchmarkruns?limit=%d", CLI_API_PREFIX,
		    CLI_DEFAULT_BATCH);
		if (selector != NULL) {
			ki_buf_puts(&path, "&labelSelector=");
			cli_url_escape(&path, selector);
		}
		if (cont != NULL) {
			ki_buf_puts(&path, "&continue=");
			cli_url_escape(&path, cont);
		}
		r = path.oom ? KI_ENOMEM : cli_http_request(c->http, "GET",
		    path.data, NULL, NULL, 0, &body, &status);
		if (r != KI_OK) {
			rc = cli_transport_fail(c, r);
			break;
		}
		if (status != 200) {
			cli_print_status(c, "export: ", status, body.data,
			    body.len);
			rc = CLI_EXIT_REJECTED;
			break;
		}
		page = json_tokener_parse(body.data);
		if (page == NULL || !json_object_object_get_ex(page, "items",
		    &items) || !json_object_is_type(items, json_type_array)) {
			json_object_put(page);
			cli_err(c, "export: the server's answer is not a list");
			rc = CLI_EXIT_REJECTED;
			break;
		}
		for (i = 0; i < json_object_array_length(items); i++) {
			struct json_object *it = json_object_array_get_idx(items, i);
			const char *src = str_at(it, "spec", "sourceNative",
			    "source");

			if (!liger_only || (src != NULL &&
			    strcmp(src, LIGER_SOURCE) == 0))
				json_object_array_add(runs, json_object_get(it));
		}
		json_object_object_get_ex(page, "metadata", &meta);
		next = str_at(meta, "continue", NULL, NULL);
		more = next != NULL && *next != '\0';
		free(cont);
		cont = more ? strdup(next) : NULL;
		json_object_put(page);
		if (more && cont == NULL) {
			rc = cli_transport_fail(c, KI_ENOMEM);
			break;
		}
		if (!more)
			break;
	}
	free(cont);
	ki_buf_free(&path);
	ki_buf_free(&body);
	return rc;
}

/* The figures of a run: median, p20, p80 of its latency (ns) or, without
 * one, of its peak memory (bytes). Each is NAN when absent. */
static void
run_figures(struct json_object *run, double fig[3], const char **unit,
	const char **metric)
{
	static const char *const stats[3] = { "median", "p20", "p80" };
	struct json_object *spec = NULL, *lat = NULL, *ms = NULL, *v;
	size_t i;
	int k, pass;

	for (k = 0; k < 3; k++)
		fig[k] = NAN;
	*unit = "";
	*metric = "";
	json_object_object_get_ex(run, "spec", &spec);
	if (json_object_object_get_ex(spec, "timing", &lat) &&
	    json_object_object_get_ex(lat, "latencyNs", &lat)) {
		*unit = "ns";
		*metric = "latency";
		for (k = 0; k < 3; k++)
			if (json_object_object_get_ex(lat, stats[k], &v))
				fig[k] = json_object_get_double(v);
	}
	json_object_object_get_ex(spec, "measurements", &ms);
	/* Latency first; peak memory only for a run without latency. */
	for (pass = 0; pass < 2 && ms != NULL; pass++) {
		const char *want = pass == 0 ? "latency" : "peak_memory";

		if (pass == 1 && **metric != '\0')
			break;
		for (i = 0; i < json_object_array_length(ms); i++) {
			struct json_object *m = json_object_array_get_idx(ms, i);
			const char *mt = cli_str_member(m, "metric");
			const char *st = cli_str_member(m, "statistic");

			if (mt == NULL || st == NULL || strcmp(mt, want) != 0 ||
			    !json_object_object_get_ex(m, "value", &v))
				continue;
			if (**metric == '\0') {
				*metric = want;
				*unit = cli_str_member(m, "unit") ?
				    cli_str_member(m, "unit") : "";
			}
			for (k = 0; k < 3; k++)
				if (strcmp(st, stats[k]) == 0 && isnan(fig[k]))
					fig[k] = json_object_get_double(v);
		}
	}
}

static void
csv_put(ki_buf *out, const char *s, int last)
{
	if (s == NULL)
		s = "";
	liger_csv_put_field(out, s, strlen(s));
	ki_buf_puts(out, last ? "\r\n" : ",");
}

/* One run as a row of plain CSV. */
static void
run_csv(struct json_object *r, ki_buf *out)
{
	static const char *const label_cols[] = { "kernel", "pass",
		"provider", "gpu", "dtype" };
	struct json_object *meta = NULL, *labels = NULL, *ann = NULL;
	const char *unit, *metric, *ver, *xn, *xv, *sw;
	char num[3][40], swept[300];
	double fig[3];
	size_t k;

	json_object_object_get_ex(r, "metadata", &meta);
	json_object_object_get_ex(meta, "labels", &labels);
	json_object_object_get_ex(meta, "annotations", &ann);
	csv_put(out, cli_str_member(meta, "name"), 0);
	for (k = 0; k < sizeof(label_cols) / sizeof(label_cols[0]); k++)
		csv_put(out, cli_str_member(labels, label_cols[k]), 0);
	run_figures(r, fig, &unit, &metric);
	csv_put(out, metric, 0);
	sw = cli_str_member(ann, "kernelindex.dev/swept");
	xn = cli_str_member(ann, LIGER_ANN_X_NAME);
	xv = cli_str_member(ann, LIGER_ANN_X_VALUE);
	if (sw == NULL && xn != NULL && xv != NULL) {
		snprintf(swept, sizeof(swept), "%s=%s", xn, xv);
		sw = swept;
	}
	csv_put(out, sw, 0);
	for (k = 0; k < 3; k++) {
		num[k][0] = '\0';
		if (!isnan(fig[k]))
			snprintf(num[k], sizeof(num[k]), "%.17g", fig[k]);
		csv_put(out, num[k], 0);
	}
	csv_put(out, unit, 0);
	csv_put(out, str_at(r, "status", "plausibility", "verdict"), 0);
	ver = cli_str_member(labels, "version");
	csv_put(out, ver != NULL ? ver : cli_str_member(labels,
	    "liger_version"), 0);
	csv_put(out, str_at(r, "spec", "sourceNative", "source"), 0);
	csv_put(out, str_at(r, "spec", "sourceNative", "externalId"), 0);
	csv_put(out, str_at(r, "spec", "observedAt", NULL), 1);
}

int
cli_cmd_export(cli *c, int argc, char **argv)
{
	struct json_object *runs = NULL, *hints = NULL;
	const char *outpath = NULL, *selector = NULL;
	ki_buf csv, err, key;
	size_t i, n, nbad = 0;
	FILE *f = stdout;
	int k, rc, liger;

	if (argc < 1 || (strcmp(argv[0], "liger") != 0 &&
	    strcmp(argv[0], "csv") != 0)) {
		cli_err(c, "usage: export liger|csv [-l SELECTOR] [-o FILE]");
		return CLI_EXIT_USAGE;
	}
	liger = strcmp(argv[0], "liger") == 0;
	for (k = 1; k < argc;) {
		const char *v = NULL;
		int r;

		if ((r = cli_take_opt(argc, argv, &k, "-o", "--output", &v)) > 0)
			outpath = v;
		else if (r == 0 && (r = cli_take_opt(argc, argv, &k, "-l",
		    "--selector", &v)) > 0)
			selector = v;
		else {
			cli_err(c, "export: %s %s", r < 0 ? "a value is missing "
			    "after" : "unexpected argument", argv[k]);
			return CLI_EXIT_USAGE;
		}
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		return rc;
	ki_buf_init(&csv);
	ki_buf_init(&err);
	ki_buf_init(&key);
	runs = json_object_new_array();
	hints = json_object_new_object();
	if (runs == NULL || hints == NULL) {
		rc = cli_transport_fail(c, KI_ENOMEM);
		goto out;
	}
	rc = fetch_runs(c, selector, liger, runs);
	if (rc != CLI_EXIT_OK)
		goto out;
	n = json_object_array_length(runs);
	if (!liger) {
		ki_buf_puts(&csv, "name,kernel,pass,provider,gpu,dtype,metric,"
		    "swept,median,p20,p80,unit,verdict,version,source,"
		    "external_id,observed_at\r\n");
		for (i = 0; i < n; i++)
			run_csv(json_object_array_get_idx(runs, i), &csv);
		goto write;
	}
	/* One run with annotations per sweep stands in for runs without. */
	for (i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(runs, i);

		ki_buf_reset(&key);
		if (str_at(r, "metadata", "annotations", LIGER_ANN_X_NAME) == NULL ||
		    sweep_key(r, &key) != KI_OK ||
		    json_object_object_get_ex(hints, key.data, NULL))
			continue;
		json_object_object_add(hints, key.data, json_object_get(r));
	}
	liger_csv_header(&csv);
	for (i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(runs, i);
		struct json_object *hint = NULL;

		ki_buf_reset(&key);
		if (sweep_key(r, &key) == KI_OK)
			json_object_object_get_ex(hints, key.data, &hint);
		ki_buf_reset(&err);
		if (liger_run_to_csv(r, hint, &csv, &err) != KI_OK) {
			cli_err(c, "export: run %s: %s", str_at(r, "metadata",
			    "name", NULL) ? str_at(r, "metadata", "name", NULL) :
			    "?", err.data != NULL ? err.data : "cannot export");
			nbad++;
		}
	}
write:
	if (csv.oom) {
		rc = cli_transport_fail(c, KI_ENOMEM);
		goto out;
	}
	if (outpath != NULL && strcmp(outpath, "-") != 0) {
		f = fopen(outpath, "wb");
		if (f == NULL) {
			cli_err(c, "export: %s: cannot create", outpath);
			rc = CLI_EXIT_REJECTED;
			goto out;
		}
	}
	if (fwrite(csv.data, 1, csv.len, f) != csv.len || fflush(f) != 0) {
		cli_err(c, "export: cannot write the CSV");
		rc = CLI_EXIT_REJECTED;
	}
	if (f != stdout && fclose(f) != 0 && rc == CLI_EXIT_OK) {
		cli_err(c, "export: cannot write the CSV");
		rc = CLI_EXIT_REJECTED;
	}
	if (rc == CLI_EXIT_OK && nbad > 0)
		rc = CLI_EXIT_REJECTED;
	fprintf(stderr, "exported %zu rows%s\n", n - nbad,
	    nbad > 0 ? " (some runs could not be exported)" : "");
out:
	json_object_put(runs);
	json_object_put(hints);
	ki_buf_free(&csv);
	ki_buf_free(&err);
	ki_buf_free(&key);
	return rc;
}
