/* cli/run.c — kernelindex run: runs a benchmark command, collects what it
 * writes (the rows Liger's harness writes to all_benchmark_data*.csv during
 * the run, and bundle lines on its standard output), uploads them, and
 * compares the new runs with a baseline's by series. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "harness/liger.h"

/* How deep below the working directory Liger data files are looked for. */
#define RUN_CSV_DEPTH 4
/* The most data files watched. */
#define RUN_CSV_MAX 64
/* The longest line of the command's output that is read as JSON. */
#define RUN_LINE_MAX ((size_t)16 << 20)

typedef struct csv_watch {
	char *path;
	struct json_object *before; /* record text → 1, the rows before */
} csv_watch;

typedef struct run_state {
	cli *c;
	const char *baseline;
	double threshold;           /* percent */
	int dry_run;
	struct json_object *labels; /* --label KEY=VALUE */
	csv_watch csv[RUN_CSV_MAX];
	size_t ncsv;
	int csv_given;              /* --csv named the files */
	struct json_object *bundles; /* what was collected, in order */
	struct json_object *origin;  /* "file: line N" of each */
	size_t refused;             /* rows or lines that could not be read */
	cli_tally tally;
} run_state;

/* ---- Liger data files ------------------------------------------------ */

static int
is_liger_csv(const char *name)
{
	size_t n = strlen(name);

	return strncmp(name, "all_benchmark_data", 18) == 0 && n >= 22 &&
	    strcmp(name + n - 4, ".csv") == 0;
}

static int
watch_add(run_state *s, const char *path)
{
	size_t i;

	for (i = 0; i < s->ncsv; i++)
		if (strcmp(s->csv[i].path, path) == 0)
			return KI_OK;
	if (s->ncsv == RUN_CSV_MAX)
		return KI_ELIMIT;
	s->csv[s->ncsv].path = strdup(path);
	if (s->csv[s->ncsv].path == NULL)
		return KI_ENOMEM;
	s->csv[s->ncsv].before = NULL;
	s->ncsv++;
	return KI_OK;
}

/* Adds the all_benchmark_data*.csv files under dir. */
static void
find_csv(run_state *s, const char *dir, int depth)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;

		if (de->d_name[0] == '.' || strcmp(de->d_name, "node_modules") == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path) || stat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < RUN_CSV_DEPTH)
			find_csv(s, path, depth + 1);
		else if (S_ISREG(st.st_mode) && is_liger_csv(de->d_name))
			watch_add(s, path);
	}
	closedir(d);
}

/* The data files a run watches without --csv: those under the working
 * directory, and those in ../data (Liger's scripts, run from
 * benchmark/scripts, write to benchmark/data). */
static void
find_watched(run_state *s)
{
	struct stat st;

	find_csv(s, ".", 0);
	if (stat("../data", &st) == 0 && S_ISDIR(st.st_mode))
		find_csv(s, "../data", RUN_CSV_DEPTH);
}

/* The key of a CSV record: its fields joined by US. */
static void
record_key(const liger_record *r, ki_buf *out)
{
	size_t i;

	ki_buf_reset(out);
	for (i = 0; i < r->nfields; i++) {
		if (i > 0)
			ki_buf_putc(out, '\x1f');
		ki_buf_append(out, r->field[i], r->len[i]);
	}
	ki_buf_putc(out, '\0');
}

/* Reads a file whole into b; 0, or KI_EIO when it cannot be read. */
static int
slurp(const char *path, ki_buf *b)
{
	char chunk[65536];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (f == NULL)
		return KI_EIO;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		ki_buf_append(b, chunk, n);
	fclose(f);
	if (b->data == NULL)
		ki_buf_reserve(b, 0);
	return b->oom ? KI_ENOMEM : KI_OK;
}

/* Remembers the rows each watched file holds before the run. */
static void
snapshot(run_state *s)
{
	size_t i;

	for (i = 0; i < s->ncsv; i++) {
		liger_record r;
		liger_csv csv;
		ki_buf text, key;
		int got;

		s->csv[i].before = json_object_new_object();
		ki_buf_init(&text);
		ki_buf_init(&key);
		liger_record_init(&r);
		if (slurp(s->csv[i].path, &text) == KI_OK) {
			liger_csv_init(&csv, text.data, text.len);
			while ((got = liger_csv_next(&csv, &r, NULL)) != 0) {
				if (got != 1)
					continue;
				record_key(&r, &key);
				if (!key.oom)
					json_object_object_add(s->csv[i].before,
					    key.data, NULL);
			}
		}
		liger_record_free(&r);
		ki_buf_free(&text);
		ki_buf_free(&key);
	}
}

static void
collect(run_state *s, struct json_object *bundle, const char *origin)
{
	json_object_array_add(s->bundles, json_object_get(bundle));
	json_object_array_add(s->origin, json_object_new_string(origin));
}

/* Converts the rows of a watched file that were not there before the run
 * (appended, or rewritten in place with new figures). */
static void
read_new_rows(run_state *s, csv_watch *w)
{
	liger_conv *conv = NULL;
	liger_record r;
	liger_csv csv;
	ki_buf text, key, err, origin;
	int got, header = 0;

	ki_buf_init(&text);
	ki_buf_init(&key);
	ki_buf_init(&err);
	ki_buf_init(&origin);
	liger_record_init(&r);
	if (slurp(w->path, &text) != KI_OK || liger_conv_new(&conv) != KI_OK)
		goto out;
	liger_csv_init(&csv, text.data, text.len);
	while ((got = liger_csv_next(&csv, &r, &err)) != 0) {
		struct json_object *b = NULL;

		if (got < 0) {
			cli_err(s->c, "%s: %s", w->path, err.data ? err.data : "?");
			s->refused++;
			ki_buf_reset(&err);
			continue;
		}
		if (!header) {
			header = 1;
			if (liger_conv_header(conv, &r, &err) != KI_OK) {
				cli_err(s->c, "%s: %s", w->path, err.data);
				goto out;
			}
			continue;
		}
		record_key(&r, &key);
		if (key.oom || (w->before != NULL &&
		    json_object_object_get_ex(w->before, key.data, NULL)))
			continue;
		ki_buf_reset(&err);
		if (liger_conv_row(conv, &r, &b, &err) != KI_OK) {
			cli_err(s->c, "%s: %s", w->path, err.data ? err.data :
			    "cannot convert the row");
			s->refused++;
			continue;
		}
		ki_buf_reset(&origin);
		ki_buf_printf(&origin, "%s: line %zu", w->path, r.line);
		collect(s, b, origin.data);
		json_object_put(b);
	}
out:
	liger_conv_free(conv);
	liger_record_free(&r);
	ki_buf_free(&text);
	ki_buf_free(&key);
	ki_buf_free(&err);
	ki_buf_free(&origin);
}

/* ---- the command's output -------------------------------------------- */

/* Whether o is a bundle ({"run": {"kind": "BenchmarkRun", …}, …}) or a
 * lone BenchmarkRun. */
static int
is_result(struct json_object *o)
{
	struct json_object *run;
	const char *kind;

	if (!json_object_is_type(o, json_type_object))
		return 0;
	kind = cli_str_member(o, "kind");
	if (kind != NULL)
		return strcmp(kind, "BenchmarkRun") == 0;
	return json_object_object_get_ex(o, "run", &run) &&
	    json_object_is_type(run, json_type_object) &&
	    cli_str_member(run, "kind") != NULL &&
	    strcmp(cli_str_member(run, "kind"), "BenchmarkRun") == 0;
}

/* One line of the command's standard output: collected when it is a
 * result, passed on to ours otherwise. */
static void
output_line(run_state *s, const char *line, size_t len, size_t lineno)
{
	struct json_object *o = NULL;
	size_t i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i < len && line[i] == '{' && len <= RUN_LINE_MAX)
		o = json_tokener_parse(line + i);
	if (o != NULL && is_result(o)) {
		char origin[64];

		snprintf(origin, sizeof(origin), "output: line %zu", lineno);
		collect(s, o, origin);
	} else {
		fwrite(line, 1, len, stdout);
		fputc('\n', stdout);
		fflush(stdout);
	}
	json_object_put(o);
}

/* Runs argv with its standard output read line by line. Returns the
 * command's exit status (128 + signal when killed), or -1 when it could
 * not be started. */
static int
run_command(run_state *s, char **argv)
{
	ki_buf line;
	char buf[65536];
	int fds[2], status = 0, rc = -1;
	size_t lineno = 0;
	ssize_t n;
	pid_t pid;

	ki_buf_init(&line);
	if (pipe(fds) != 0) {
		cli_err(s->c, "run: pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		cli_err(s->c, "run: fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(127);
		close(fds[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "kernelindex: run: %s: %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		n = read(fds[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t k = 0; k < n; k++) {
			if (buf[k] != '\n') {
				ki_buf_putc(&line, buf[k]);
				continue;
			}
			lineno++;
			output_line(s, line.data != NULL ? line.data : "",
			    line.len, lineno);
			ki_buf_reset(&line);
		}
	}
	if (line.len > 0)
		output_line(s, line.data, line.len, ++lineno);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
	ki_buf_free(&line);
	return rc;
}

/* ---- upload ---------------------------------------------------------- */

static void
label_origin(void *arg, size_t i, ki_buf *out)
{
	struct json_object *origin = arg;

	ki_buf_puts(out, json_object_get_string(json_object_array_get_idx(
	    origin, i)));
}

/* Adds the --label labels to each collected run. */
static void
add_labels(run_state *s)
{
	size_t i;

	if (s->labels == NULL)
		return;
	for (i = 0; i < json_object_array_length(s->bundles); i++) {
		struct json_object *b = json_object_array_get_idx(s->bundles, i);
		struct json_object *run = b, *meta, *labels;

		json_object_object_get_ex(b, "run", &run);
		if (!json_object_object_get_ex(run, "metadata", &meta)) {
			meta = json_object_new_object();
			json_object_object_add(run, "metadata", meta);
		}
		if (!json_object_object_get_ex(meta, "labels", &labels)) {
			labels = json_object_new_object();
			json_object_object_add(meta, "labels", labels);
		}
		json_object_object_foreach(s->labels, k, v)
			json_object_object_add(labels, k, json_object_get(v));
	}
}

/* Uploads the collected bundles in batches, with a progress bar. Returns
 * 0 or an exit code to stop with. */
static int
upload(run_state *s)
{
	size_t n = json_object_array_length(s->bundles), i = 0;
	int rc = CLI_EXIT_OK;

	cli_progress(s->c, 0, n, "results");
	while (i < n && rc == CLI_EXIT_OK) {
		size_t m = n - i < CLI_DEFAULT_BATCH ? n - i : CLI_DEFAULT_BATCH;
		struct json_object *batch = json_object_new_array();
		struct json_object *orig = json_object_new_array();
		ki_buf nd;
		size_t k;

		ki_buf_init(&nd);
		for (k = 0; k < m; k++) {
			struct json_object *b = json_object_array_get_idx(
			    s->bundles, i + k);

			json_object_array_add(batch, json_object_get(b));
			json_object_array_add(orig, json_object_get(
			    json_object_array_get_idx(s->origin, i + k)));
			ki_buf_puts(&nd, json_object_to_json_string_ext(b,
			    CLI_JSON_FLAGS));
			ki_buf_putc(&nd, '\n');
		}
		if (nd.oom || batch == NULL || orig == NULL) {
			rc = cli_transport_fail(s->c, KI_ENOMEM);
		} else {
			cli_progress_clear(s->c);
			rc = cli_upload_ndjson(s->c, nd.data, nd.len, m, batch, 0,
			    s->c->quiet ? 0 : CLI_VERBOSE_RUNS, label_origin, orig,
			    &s->tally);
		}
		i += m;
		cli_progress(s->c, i, n, "results");
		ki_buf_free(&nd);
		json_object_put(batch);
		json_object_put(orig);
	}
	cli_progress_clear(s->c);
	return rc;
}

/* ---- baseline -------------------------------------------------------- */

/* A run's figure for comparison: its median latency (ns) or, without one,
 * its median peak memory (bytes); the metric in *metric. NAN when none. */
static double
run_median(struct json_object *run, const char **metric)
{
	struct json_object *spec = NULL, *v, *ms;
	size_t i;

	*metric = "";
	json_object_object_get_ex(run, "spec", &spec);
	if (json_object_object_get_ex(spec, "timing", &v) &&
	    json_object_object_get_ex(v, "latencyNs", &v) &&
	    json_object_object_get_ex(v, "median", &v)) {
		*metric = "latency";
		return json_object_get_double(v);
	}
	if (!json_object_object_get_ex(spec, "measurements", &ms))
		return NAN;
	for (i = 0; i < json_object_array_length(ms); i++) {
		struct json_object *m = json_object_array_get_idx(ms, i);
		const char *mt = cli_str_member(m, "metric");
		const char *st = cli_str_member(m, "statistic");

		if (mt != NULL && st != NULL && strcmp(st, "median") == 0 &&
		    json_object_object_get_ex(m, "value", &v)) {
			*metric = mt;
			return json_object_get_double(v);
		}
	}
	return NAN;
}

/* The series of a stored run: workload, implementation provider, GPU,
 * protocol and metric (pass and dtype are the workload's). The
 * implementation's version is left out: versions are what a series
 * orders. */
static int
series_key(struct json_object *run, ki_buf *out, double *median)
{
	struct json_object *spec = NULL, *meta = NULL, *labels = NULL;
	const char *metric, *wl, *proto, *prov, *gpu;

	json_object_object_get_ex(run, "spec", &spec);
	json_object_object_get_ex(run, "metadata", &meta);
	json_object_object_get_ex(meta, "labels", &labels);
	wl = cli_str_member(spec, "workloadDigest");
	proto = cli_str_member(spec, "protocolDigest");
	prov = cli_str_member(labels, "provider");
	gpu = cli_str_member(labels, "gpu");
	*median = run_median(run, &metric);
	if (wl == NULL || proto == NULL || isnan(*median))
		return KI_EINVAL;
	ki_buf_reset(out);
	ki_buf_printf(out, "%s|%s|%s|%s|%s", wl, prov ? prov : "",
	    gpu ? gpu : "", proto, metric);
	return out->oom ? KI_ENOMEM : KI_OK;
}

/* Reads the baseline's runs: series key → {median, observedAt, name},
 * the latest observed of each series. */
static int
load_baseline(run_state *s, struct json_object *base)
{
	ki_buf path, body, key;
	char *cont = NULL;
	int rc = CLI_EXIT_OK;

	ki_buf_init(&path);
	ki_buf_init(&body);
	ki_buf_init(&key);
	for (;;) {
		struct json_object *page, *items = NULL, *meta = NULL;
		const char *next;
		long status = 0;
		size_t i;
		int r;

		ki_buf_reset(&path);
		ki_buf_reset(&body);
		ki_buf_printf(&path, "%s/benchmarkruns?limit=%d&labelSelector=",
		    CLI_API_PREFIX, CLI_DEFAULT_BATCH);
		cli_url_escape(&path, s->baseline);
		if (cont != NULL) {
			ki_buf_puts(&path, "&continue=");
			cli_url_escape(&path, cont);
		}
		r = path.oom ? KI_ENOMEM : cli_http_request(s->c->http, "GET",
		    path.data, NULL, NULL, 0, &body, &status);
		if (r != KI_OK) {
			rc = cli_transport_fail(s->c, r);
			break;
		}
		if (status != 200) {
			cli_print_status(s->c, "run: --baseline: ", status,
			    body.data, body.len);
			rc = CLI_EXIT_REJECTED;
			break;
		}
		page = json_tokener_parse(body.data);
		json_object_object_get_ex(page, "items", &items);
		for (i = 0; items != NULL && i < json_object_array_length(items);
		    i++) {
			struct json_object *it = json_object_array_get_idx(items, i);
			struct json_object *old, *ent, *m = NULL;
			const char *obs = NULL, *oldobs;
			double med;

			if (series_key(it, &key, &med) != KI_OK)
				continue;
			json_object_object_get_ex(it, "spec", &m);
			obs = cli_str_member(m, "observedAt");
			json_object_object_get_ex(it, "metadata", &m);
			if (json_object_object_get_ex(base, key.data, &old)) {
				oldobs = cli_str_member(old, "observedAt");
				if (oldobs != NULL && obs != NULL &&
				    strcmp(oldobs, obs) >= 0)
					continue;
			}
			ent = json_object_new_object();
			json_object_object_add(ent, "median",
			    json_object_new_double(med));
			json_object_object_add(ent, "observedAt",
			    json_object_new_string(obs ? obs : ""));
			json_object_object_add(ent, "name", json_object_new_string(
			    cli_str_member(m, "name") ? cli_str_member(m, "name") :
			    "?"));
			json_object_object_add(base, key.data, ent);
		}
		json_object_object_get_ex(page, "metadata", &meta);
		next = cli_str_member(meta, "continue");
		free(cont);
		cont = next != NULL && *next != '\0' ? strdup(next) : NULL;
		json_object_put(page);
		if (cont == NULL)
			break;
	}
	free(cont);
	ki_buf_free(&path);
	ki_buf_free(&body);
	ki_buf_free(&key);
	return rc;
}

/* Compares each new run with the baseline's run of its series. Returns
 * 0, CLI_EXIT_REGRESSION, or an exit code to stop with. */
static int
compare(run_state *s)
{
	struct json_object *base = json_object_new_object();
	size_t i, n = json_object_array_length(s->bundles);
	size_t nreg = 0, nimp = 0, nsame = 0, nnone = 0;
	ki_buf path, body, key;
	int rc;

	ki_buf_init(&path);
	ki_buf_init(&body);
	ki_buf_init(&key);
	rc = base == NULL ? cli_transport_fail(s->c, KI_ENOMEM) :
	    load_baseline(s, base);
	if (rc != CLI_EXIT_OK)
		goto out;
	printf("compared with %s (threshold %g%%):\n", s->baseline,
	    s->threshold);
	for (i = 0; i < n; i++) {
		struct json_object *b = json_object_array_get_idx(s->bundles, i);
		struct json_object *run = b, *meta = NULL, *stored, *old;
		const char *name, *verdict;
		long status = 0;
		double med, ratio;

		json_object_object_get_ex(b, "run", &run);
		json_object_object_get_ex(run, "metadata", &meta);
		name = cli_str_member(meta, "name");
		if (name == NULL)
			continue;
		/* The stored run: its digests and labels are the server's. */
		ki_buf_reset(&path);
		ki_buf_reset(&body);
		ki_buf_printf(&path, "%s/benchmarkruns/", CLI_API_PREFIX);
		cli_url_escape(&path, name);
		if (path.oom || cli_http_request(s->c->http, "GET", path.data,
		    NULL, NULL, 0, &body, &status) != KI_OK || status != 200)
			continue;
		stored = json_tokener_parse(body.data);
		if (series_key(stored, &key, &med) != KI_OK ||
		    !json_object_object_get_ex(base, key.data, &old)) {
			nnone++;
			printf("  %-60s  no baseline run in its series\n", name);
			json_object_put(stored);
			continue;
		}
		ratio = med / json_object_get_double(json_object_object_get(old,
		    "median"));
		if (ratio > 1.0 + s->threshold / 100.0) {
			verdict = "REGRESSION";
			nreg++;
		} else if (ratio < 1.0 - s->threshold / 100.0) {
			verdict = "improvement";
			nimp++;
		} else {
			verdict = "same";
			nsame++;
		}
		printf("  %-60s  %.4fx of %s  %s\n", name, ratio,
		    cli_str_member(old, "name"), verdict);
		json_object_put(stored);
	}
	printf("%zu regressions, %zu improvements, %zu within %g%%, %zu "
	    "without a baseline\n", nreg, nimp, nsame, s->threshold, nnone);
	rc = nreg > 0 ? CLI_EXIT_REGRESSION : CLI_EXIT_OK;
out:
	json_object_put(base);
	ki_buf_free(&path);
	ki_buf_free(&body);
	ki_buf_free(&key);
	return rc;
}

/* ---- the command ----------------------------------------------------- */

static int
parse_label(run_state *s, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char key[320];

	if (eq == NULL || eq == kv || (size_t)(eq - kv) >= sizeof(key))
		return KI_EINVAL;
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	if (s->labels == NULL)
		s->labels = json_object_new_object();
	json_object_object_add(s->labels, key, json_object_new_string(eq + 1));
	return KI_OK;
}

int
cli_cmd_run(cli *c, int argc, char **argv)
{
	run_state s;
	char **cmd = NULL;
	size_t i;
	int k, rc = CLI_EXIT_OK, status;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.threshold = 5.0;
	s.bundles = json_object_new_array();
	s.origin = json_object_new_array();
	for (k = 0; k < argc;) {
		const char *v = NULL;
		int r;

		if (strcmp(argv[k], "--") == 0) {
			cmd = argv + k + 1;
			break;
		}
		if ((r = cli_take_opt(argc, argv, &k, "--baseline", NULL,
		    &v)) > 0) {
			s.baseline = v;
		} else if (r == 0 && (r = cli_take_opt(argc, argv, &k,
		    "--threshold", NULL, &v)) > 0) {
			char *end;

			s.threshold = strtod(v, &end);
			if (*end == '%')
				end++;
			if (*v == '\0' || *end != '\0' || !(s.threshold >= 0) ||
			    s.threshold > 1e6) {
				cli_err(c, "run: --threshold wants a percentage");
				rc = CLI_EXIT_USAGE;
				goto out;
			}
		} else if (r == 0 && (r = cli_take_opt(argc, argv, &k, "--csv",
		    NULL, &v)) > 0) {
			s.csv_given = 1;
			if (watch_add(&s, v) != KI_OK) {
				cli_err(c, "run: too many --csv files");
				rc = CLI_EXIT_USAGE;
				goto out;
			}
		} else if (r == 0 && (r = cli_take_opt(argc, argv, &k,
		    "--label", "-L", &v)) > 0) {
			if (parse_label(&s, v) != KI_OK) {
				cli_err(c, "run: --label wants KEY=VALUE");
				rc = CLI_EXIT_USAGE;
				goto out;
			}
		} else if (r == 0 && (strcmp(argv[k], "--quiet") == 0 ||
		    strcmp(argv[k], "-q") == 0)) {
			c->quiet = 1;
			k++;
		} else if (r == 0 && strcmp(argv[k], "--dry-run") == 0) {
			s.dry_run = 1;
			k++;
		} else {
			cli_err(c, "run: %s %s", r < 0 ? "a value is missing "
			    "after" : "unknown option", argv[k]);
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	}
	if (cmd == NULL || cmd[0] == NULL) {
		cli_err(c, "usage: run [OPTIONS] -- COMMAND [ARG]…");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (s.baseline != NULL && s.dry_run) {
		cli_err(c, "run: --baseline needs the upload (not --dry-run)");
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (!s.dry_run && (rc = cli_connect(c)) != CLI_EXIT_OK)
		goto out;
	if (!s.csv_given)
		find_watched(&s);
	snapshot(&s);

	status = run_command(&s, cmd);
	/* Files the command created are read whole. */
	if (!s.csv_given)
		find_watched(&s);
	for (i = 0; i < s.ncsv; i++)
		read_new_rows(&s, &s.csv[i]);
	add_labels(&s);
	if (status != 0)
		cli_err(c, "run: %s %s %d", cmd[0], status < 0 ? "could not be "
		    "started:" : status > 128 ? "was killed by signal" :
		    "exited with status", status > 128 ? status - 128 : status);

	if (s.dry_run) {
		for (i = 0; i < json_object_array_length(s.bundles); i++)
			puts(json_object_to_json_string_ext(
			    json_object_array_get_idx(s.bundles, i),
			    CLI_JSON_FLAGS));
	} else {
		rc = upload(&s);
		if (rc != CLI_EXIT_OK)
			goto out;
	}
	printf("%s %zu results: %zu created, %zu unchanged, %zu refused\n",
	    s.dry_run ? "collected" : "uploaded",
	    json_object_array_length(s.bundles), s.tally.created,
	    s.tally.unchanged, s.tally.failed + s.refused);
	if (json_object_array_length(s.bundles) == 0 && s.refused == 0)
		cli_err(c, "run: the command wrote no results (no new rows in "
		    "%zu Liger data file%s, no result lines on its output)",
		    s.ncsv, s.ncsv == 1 ? "" : "s");
	if (s.baseline != NULL)
		rc = compare(&s);
	if (rc == CLI_EXIT_OK && (status != 0 || s.tally.failed > 0 ||
	    s.refused > 0))
		rc = CLI_EXIT_REJECTED;
out:
	for (i = 0; i < s.ncsv; i++) {
		free(s.csv[i].path);
		json_object_put(s.csv[i].before);
	}
	json_object_put(s.bundles);
	json_object_put(s.origin);
	json_object_put(s.labels);
	return rc;
}
