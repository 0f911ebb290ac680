/* cli/import.c — import liger: CSV rows converted to bundles and uploaded
 * in NDJSON batches, with a progress bar. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "harness/liger.h"

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
progress(import_state *s)
{
	if (!s->dry_run)
		cli_progress(s->c, s->done, s->total, "rows");
}

static void
progress_clear(import_state *s)
{
	cli_progress_clear(s->c);
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
		} else if (strcmp(argv[i], "--quiet") == 0 ||
		    strcmp(argv[i], "-q") == 0) {
			c->quiet = 1;
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
