/* cli/compare.c — `kernelindex compare`: asks the server for a Comparison
 * of a baseline and a candidate label selector and prints it as a table,
 * a Markdown PR comment, JSON or CSV; exits 1 when something regressed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char compare_usage[] =
"usage: kernelindex compare --baseline SELECTOR --candidate SELECTOR\n"
"         [-l SELECTOR] [--threshold 5%] [--version-label LABEL]\n"
"         [--include-implausible] [--all] [-o table|markdown|json|csv]\n"
"Pairs the runs of the two selectors by series (workload, provider, GPU,\n"
"metric, protocol) and prints each pair's ratio candidate/baseline with\n"
"its interval; -l narrows both sides. Exit status 1 when a pair changed\n"
"for the worse by more than the threshold.\n";

/* "--x V" or "--x=V": 1 with *val and *i advanced, 0 when argv[*i] is not
 * the option, -1 when its value is missing. */
static int
opt(int argc, char **argv, int *i, const char *a, const char *b,
	const char **val)
{
	const char *names[2] = { a, b };

	for (int k = 0; k < 2; k++) {
		size_t n;

		if (names[k] == NULL)
			continue;
		n = strlen(names[k]);
		if (strncmp(argv[*i], names[k], n) != 0)
			continue;
		if (argv[*i][n] == '=') {
			*val = argv[*i] + n + 1;
			(*i)++;
			return 1;
		}
		if (argv[*i][n] != '\0')
			continue;
		if (*i + 1 >= argc)
			return -1;
		*val = argv[*i + 1];
		*i += 2;
		return 1;
	}
	return 0;
}

/* "5%", "5" or "0.05"? A trailing % or a value above 1 is percent; a
 * fraction up to 1 without % is read as a fraction. */
static int
parse_threshold(const char *s, double *pct)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0 || !isfinite(v))
		return -1;
	if (*end == '%' && end[1] == '\0')
		*pct = v;
	else if (*end == '\0')
		*pct = v <= 1 ? v * 100 : v;
	else
		return -1;
	return *pct < 1000 ? 0 : -1;
}

static const char *
str_at(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, a, &v))
		return NULL;
	if (b != NULL && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : NULL;
}

static double
num_at(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, a, &v))
		return NAN;
	if (b != NULL && !json_object_object_get_ex(v, b, &v))
		return NAN;
	if (!json_object_is_type(v, json_type_double) &&
	    !json_object_is_type(v, json_type_int))
		return NAN;
	return json_object_get_double(v);
}

/* A figure in human units: ns as ns/µs/ms/s, bytes as KiB/MiB/GiB. */
static void
human(double v, const char *unit, char *out, size_t n)
{
	static const char *const t[] = { "ns", "µs", "ms", "s" };
	static const char *const m[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	if (!isfinite(v)) {
		snprintf(out, n, "-");
		return;
	}
	if (unit != NULL && strcmp(unit, "ns") == 0) {
		for (; v >= 1000 && i < 3; i++)
			v /= 1000;
		snprintf(out, n, "%.3g %s", v, t[i]);
	} else if (unit != NULL && strcmp(unit, "bytes") == 0) {
		for (; v >= 1024 && i < 4; i++)
			v /= 1024;
		snprintf(out, n, "%.3g %s", v, m[i]);
	} else {
		snprintf(out, n, "%.4g %s", v, unit != NULL ? unit : "");
	}
}

/* The size a series names: the swept parameter, else the workload. */
static void
size_of(struct json_object *series, char *out, size_t n)
{
	const char *xn = str_at(series, "xName", NULL);
	const char *xv = str_at(series, "xValue", NULL);
	const char *wl = str_at(series, "workload", NULL);

	if (xn != NULL && xv != NULL)
		snprintf(out, n, "%s=%s", xn, xv);
	else
		snprintf(out, n, "%s", wl != NULL ? wl : "-");
}

static void
print_pairs(struct json_object *status, int markdown, int all)
{
	struct json_object *pairs = NULL;
	size_t shown = 0;

	json_object_object_get_ex(status, "pairs", &pairs);
	if (markdown)
		printf("| | kernel | pass | dtype | provider | GPU | metric | size "
		    "| baseline | candidate | change | interval |\n"
		    "|---|---|---|---|---|---|---|---|---:|---:|---:|---|\n");
	else
		printf("%-11s %-22s %-8s %-8s %-14s %-16s %-11s %-14s %11s %11s "
		    "%8s %s\n", "VERDICT", "KERNEL", "PASS", "DTYPE", "PROVIDER",
		    "GPU", "METRIC", "SIZE", "BASELINE", "CANDIDATE", "CHANGE",
		    "INTERVAL");
	for (size_t i = 0; pairs != NULL && i < json_object_array_length(pairs);
	    i++) {
		struct json_object *p = json_object_array_get_idx(pairs, i);
		struct json_object *s = json_object_object_get(p, "series");
		const char *v = str_at(p, "verdict", NULL);
		const char *unit = str_at(s, "unit", NULL);
		char base[32], cand[32], size[96], iv[48];
		double lo = num_at(p, "interval", "low");
		double hi = num_at(p, "interval", "high");

		if (v == NULL || (!all && strcmp(v, "Unchanged") == 0))
			continue;
		shown++;
		human(num_at(p, "baseline", "median"), unit, base, sizeof(base));
		human(num_at(p, "candidate", "median"), unit, cand, sizeof(cand));
		size_of(s, size, sizeof(size));
		snprintf(iv, sizeof(iv), "%.3f-%.3f%s", lo, hi,
		    json_object_get_boolean(json_object_object_get(p,
		    "confident")) ? "" : " (overlaps)");
		if (markdown)
			printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | "
			    "%+.1f%% | ×%s |\n", strcmp(v, "Regression") == 0 ?
			    "🔴" : strcmp(v, "Improvement") == 0 ? "🟢" : "⚪",
			    str_at(s, "kernel", NULL), str_at(s, "pass", NULL),
			    str_at(s, "dtype", NULL), str_at(s, "provider", NULL),
			    str_at(s, "gpu", NULL), str_at(s, "metric", NULL), size,
			    base, cand, num_at(p, "changePercent", NULL), iv);
		else
			printf("%-11s %-22s %-8s %-8s %-14s %-16s %-11s %-14s %11s "
			    "%11s %+7.1f%% %s\n", v, str_at(s, "kernel", NULL),
			    str_at(s, "pass", NULL), str_at(s, "dtype", NULL),
			    str_at(s, "provider", NULL), str_at(s, "gpu", NULL),
			    str_at(s, "metric", NULL), size, base, cand,
			    num_at(p, "changePercent", NULL), iv);
	}
	if (shown == 0 && !markdown)
		printf("(no pair changed beyond the threshold)\n");
}

static void
print_summary(struct json_object *status, const char *bsel,
	const char *csel, int markdown)
{
	struct json_object *s = json_object_object_get(status, "summary");
	int reg = json_object_get_int(json_object_object_get(s, "regressions"));
	int imp = json_object_get_int(json_object_object_get(s, "improvements"));

	if (markdown)
		printf("### %s `%s` against `%s`\n\n", reg ? "🔴 Regressions:" :
		    "✅ No regression:", csel, bsel);
	printf("%s%d paired series: %d regression%s, %d improvement%s, %d "
	    "unchanged beyond ±%g%% (geometric mean ratio %.3f); %d baseline "
	    "only, %d candidate only, %d implausible left out%s\n",
	    markdown ? "" : "# ",
	    json_object_get_int(json_object_object_get(s, "pairs")), reg,
	    reg == 1 ? "" : "s", imp, imp == 1 ? "" : "s",
	    json_object_get_int(json_object_object_get(s, "unchanged")),
	    num_at(s, "thresholdPercent", NULL), num_at(s, "geomeanRatio", NULL),
	    json_object_get_int(json_object_object_get(s, "baselineOnly")),
	    json_object_get_int(json_object_object_get(s, "candidateOnly")),
	    json_object_get_int(json_object_object_get(s,
	    "excludedImplausible")), markdown ? "\n" : "");
}

int
cli_cmd_compare(cli *c, int argc, char **argv)
{
	const char *base = NULL, *cand = NULL, *common = NULL, *out = "table";
	const char *thr = NULL, *vlabel = NULL, *v;
	int implausible = 0, all = 0, rc = CLI_EXIT_OK, i = 0, r;
	struct json_object *req = NULL, *spec, *resp = NULL, *status;
	double pct = 5;
	ki_buf body, path;
	long code = 0;

	ki_buf_init(&body);
	ki_buf_init(&path);
	while (i < argc) {
		if ((r = opt(argc, argv, &i, "--baseline", "-b", &v)) > 0)
			base = v;
		else if (r == 0 && (r = opt(argc, argv, &i, "--candidate", "-c",
		    &v)) > 0)
			cand = v;
		else if (r == 0 && (r = opt(argc, argv, &i, "-l", "--selector",
		    &v)) > 0)
			common = v;
		else if (r == 0 && (r = opt(argc, argv, &i, "--threshold", "-t",
		    &v)) > 0)
			thr = v;
		else if (r == 0 && (r = opt(argc, argv, &i, "--version-label", NULL,
		    &v)) > 0)
			vlabel = v;
		else if (r == 0 && (r = opt(argc, argv, &i, "-o", "--output",
		    &v)) > 0)
			out = v;
		else if (r == 0 && strcmp(argv[i], "--include-implausible") == 0) {
			implausible = 1;
			i++;
		} else if (r == 0 && strcmp(argv[i], "--all") == 0) {
			all = 1;
			i++;
		} else {
			cli_err(c, r < 0 ? "%s needs a value" : "unknown argument %s",
			    argv[i]);
			fputs(compare_usage, stderr);
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	}
	if (base == NULL || cand == NULL || (thr != NULL &&
	    parse_threshold(thr, &pct) != 0) || (strcmp(out, "table") != 0 &&
	    strcmp(out, "markdown") != 0 && strcmp(out, "json") != 0 &&
	    strcmp(out, "csv") != 0)) {
		cli_err(c, base == NULL || cand == NULL ? "compare needs "
		    "--baseline and --candidate" : thr != NULL && parse_threshold(
		    thr, &pct) != 0 ? "--threshold: a percentage such as 5%%" :
		    "-o: table, markdown, json or csv");
		fputs(compare_usage, stderr);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if ((rc = cli_connect(c)) != CLI_EXIT_OK)
		goto out;
	req = json_object_new_object();
	spec = json_object_new_object();
	if (req == NULL || spec == NULL) {
		cli_err(c, "out of memory");
		json_object_put(spec);
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	json_object_object_add(req, "apiVersion",
	    json_object_new_string(CLI_API_VERSION));
	json_object_object_add(req, "kind", json_object_new_string("Comparison"));
	json_object_object_add(req, "spec", spec);
	{
		struct json_object *b = json_object_new_object();
		struct json_object *k = json_object_new_object();

		json_object_object_add(b, "labelSelector",
		    json_object_new_string(base));
		json_object_object_add(k, "labelSelector",
		    json_object_new_string(cand));
		json_object_object_add(spec, "baseline", b);
		json_object_object_add(spec, "candidate", k);
	}
	if (common != NULL)
		json_object_object_add(spec, "labelSelector",
		    json_object_new_string(common));
	if (vlabel != NULL)
		json_object_object_add(spec, "versionLabel",
		    json_object_new_string(vlabel));
	json_object_object_add(spec, "thresholdPercent",
	    json_object_new_double(pct));
	if (implausible)
		json_object_object_add(spec, "includeImplausible",
		    json_object_new_boolean(1));
	v = json_object_to_json_string_ext(req, CLI_JSON_FLAGS);
	ki_buf_puts(&path, CLI_API_PREFIX "/comparisons");
	if (strcmp(out, "csv") == 0)
		ki_buf_puts(&path, "?format=csv");
	r = cli_http_request(c->http, "POST", path.data, "application/json", v,
	    strlen(v), &body, &code);
	if (r != KI_OK) {
		rc = cli_transport_fail(c, r);
		goto out;
	}
	if (code != 201 && code != 200) {
		cli_print_status(c, NULL, code, body.data, body.len);
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	if (strcmp(out, "csv") == 0) {
		/* The server's CSV as it is; a row per pair, its verdict first. */
		if (body.len > 0)
			fwrite(body.data, 1, body.len, stdout);
		for (const char *l = body.data; l != NULL && *l != '\0';
		    l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
			if (strncmp(l, "Regression,", 11) == 0)
				rc = CLI_EXIT_REJECTED;
		goto out;
	}
	resp = json_tokener_parse(body.data);
	status = resp != NULL ? json_object_object_get(resp, "status") : NULL;
	if (status == NULL) {
		cli_err(c, "the server's answer is not a Comparison");
		rc = CLI_EXIT_REJECTED;
		goto out;
	}
	if (strcmp(out, "json") == 0) {
		fwrite(body.data, 1, body.len, stdout);
		putchar('\n');
	} else {
		int md = strcmp(out, "markdown") == 0;

		print_summary(status, base, cand, md);
		if (!md)
			putchar('\n');
		print_pairs(status, md, all);
	}
	if (json_object_get_int(json_object_object_get(json_object_object_get(
	    status, "summary"), "regressions")) > 0)
		rc = CLI_EXIT_REJECTED;
out:
	if (req != NULL)
		json_object_put(req);
	if (resp != NULL)
		json_object_put(resp);
	ki_buf_free(&body);
	ki_buf_free(&path);
	return rc;
}
