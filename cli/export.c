/* cli/export.c — export liger: reads every Liger run back from the server and
 * writes the rows in the form of Liger's all_benchmark_data.csv. */
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

/* Fetches every run page by page into runs (Liger runs only). */
static int
fetch_runs(cli *c, struct json_object *runs)
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

			if (src != NULL && strcmp(src, LIGER_SOURCE) == 0)
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

int
cli_cmd_export(cli *c, int argc, char **argv)
{
	struct json_object *runs = NULL, *hints = NULL;
	const char *outpath = NULL;
	ki_buf csv, err, key;
	size_t i, n, nbad = 0;
	FILE *f = stdout;
	int k, rc;

	if (argc < 1 || strcmp(argv[0], "liger") != 0) {
		cli_err(c, "usage: export liger [-o FILE]");
		return CLI_EXIT_USAGE;
	}
	for (k = 1; k < argc; k++) {
		if ((strcmp(argv[k], "-o") == 0 ||
		    strcmp(argv[k], "--output") == 0) && k + 1 < argc) {
			outpath = argv[++k];
		} else {
			cli_err(c, "export: unexpected argument %s", argv[k]);
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
	rc = fetch_runs(c, runs);
	if (rc != CLI_EXIT_OK)
		goto out;
	n = json_object_array_length(runs);
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
