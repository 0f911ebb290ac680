/* cli/cli.h — the kernelindex command-line client: its shared state, exit
 * codes, kinds, and the commands each file implements. */
#ifndef CLI_CLI_H
#define CLI_CLI_H

#include <json-c/json.h>
#include <stddef.h>

#include "cli/http.h"
#include "lib/ki.h"

#define CLI_API_VERSION "kernelindex.dev/v1alpha1"
#define CLI_API_PREFIX "/apis/kernelindex.dev/v1alpha1"
#define CLI_DEFAULT_SERVER "http://127.0.0.1:8080"

/* The JSON the CLI writes: compact, '/' left unescaped. */
#define CLI_JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Exit codes scripts may rely on. */
enum {
	CLI_EXIT_OK = 0,          /* everything was done */
	CLI_EXIT_REJECTED = 1,    /* the server rejected something, or input
	                             could not be used */
	CLI_EXIT_USAGE = 2,       /* the command line is wrong */
	CLI_EXIT_UNREACHABLE = 3, /* the server could not be reached */
	CLI_EXIT_REGRESSION = 4,  /* run --baseline: a regression beyond the
	                             threshold */
};

/* The default number of bundles per NDJSON upload request. */
#define CLI_DEFAULT_BATCH 500

/* The largest file push or import reads. */
#define CLI_MAX_INPUT ((size_t)1 << 31)

typedef struct cli {
	const char *prog;
	const char *server;
	const char *token;
	cli_http *http;  /* made on first use by cli_connect() */
	int tty;         /* stderr is a terminal: progress may be drawn */
	int quiet;       /* --quiet: no progress, no per-object lines */
	int progress_shown; /* a progress line is on stderr */
} cli;

/* A resource kind as the CLI names it. */
typedef struct cli_kind {
	const char *kind;       /* BenchmarkRun */
	const char *plural;     /* benchmarkruns */
	const char *singular;   /* benchmarkrun */
	const char *short_name; /* kbr */
} cli_kind;

/* The kind named by its plural, singular, short name or Kind
 * (case-insensitive); NULL when none. Static storage. */
const cli_kind *cli_kind_lookup(const char *s);

/* The kind of a Kind string ("BenchmarkRun"); NULL when none. */
const cli_kind *cli_kind_by_kind(const char *kind);

/* Makes c->http if needed. Returns 0, or CLI_EXIT_USAGE / _REJECTED after
 * printing why. */
int cli_connect(cli *c);

/* Prints "prog: " and the message to stderr. */
void cli_err(const cli *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prints an error answer: a Kubernetes Status's message and causes, or
 * the HTTP status and the start of the body. prefix, if non-NULL, is
 * printed first ("line 12: "). */
void cli_print_status(const cli *c, const char *prefix, long code,
	const char *body, size_t len);

/* Prints a Status object's message and causes (borrowed) the same way. */
void cli_print_status_obj(const cli *c, const char *prefix,
	struct json_object *st);

/* Reports a transport failure ("cannot reach …") and returns
 * CLI_EXIT_UNREACHABLE, or CLI_EXIT_REJECTED for other KI_* codes. */
int cli_transport_fail(const cli *c, int rc);

/* Reads a whole file ("-": standard input) into b. Returns 0 or a
 * KI_* code after printing why. */
int cli_read_file(const cli *c, const char *path, ki_buf *b);

/* Parses a positive count ("500"). Returns 0 or KI_EINVAL. */
int cli_parse_count(const char *s, size_t *out);

/* The string member key of o, or NULL; borrowed. */
const char *cli_str_member(struct json_object *o, const char *key);

/* Whether argv[*i] is option a (or its other spelling b) with a value:
 * "--x V" or "--x=V". Returns 1 and advances *i past it (the value in
 * *val, borrowed from argv), 0 when it is not this option, -1 when the
 * value is missing. */
int cli_take_opt(int argc, char **argv, int *i, const char *a,
	const char *b, const char **val);

/* Whether argv holds -h or --help (before a "--"). */
int cli_wants_help(int argc, char **argv);

/* Draws "[####   ] done/total what" on stderr when it is a terminal and
 * c->quiet is off; cli_progress_clear() erases it before other output. */
void cli_progress(cli *c, size_t done, size_t total, const char *what);
void cli_progress_clear(cli *c);

/* Commands: argc/argv start after the command word. Each returns an exit
 * code. */
int cli_cmd_push(cli *c, int argc, char **argv);
int cli_cmd_import(cli *c, int argc, char **argv);
int cli_cmd_export(cli *c, int argc, char **argv);
int cli_cmd_get(cli *c, int argc, char **argv);
int cli_cmd_list(cli *c, int argc, char **argv);
int cli_cmd_watch(cli *c, int argc, char **argv);
int cli_cmd_delete(cli *c, int argc, char **argv);
int cli_cmd_run(cli *c, int argc, char **argv);
/* cli/compare.c: exits 1 when the comparison found a regression. */
int cli_cmd_compare(cli *c, int argc, char **argv);

/* ---- bulk upload (cli/upload.c) -------------------------------------- */

/* The tally of an upload, per document (bundle or object) sent. */
typedef struct cli_tally {
	size_t created, unchanged, failed;
} cli_tally;

/* Describes document i of a batch for messages ("line 12", "file.json");
 * writes into out. */
typedef void (*cli_doc_label_fn)(void *arg, size_t i, ki_buf *out);

/* POSTs ndjson (n documents, one per line, no blank lines) to the
 * benchmarkruns collection, atomically when atomic; adds each document's
 * outcome to t, prints failures and notes to stderr (labelled through
 * label) and each stored object to stdout: every object when verbose is
 * CLI_VERBOSE_ALL, the runs when CLI_VERBOSE_RUNS, none when 0. bundles, if
 * non-NULL, is the array of the n documents (borrowed): a run refused as
 * AlreadyExists whose stored twin has the same source row and figures is
 * then counted unchanged, "already indexed". Returns 0, or
 * CLI_EXIT_UNREACHABLE after printing why (t then counts the documents as
 * neither). */
enum { CLI_VERBOSE_ALL = 1, CLI_VERBOSE_RUNS = 2 };

int cli_upload_ndjson(cli *c, const char *ndjson, size_t len, size_t n,
	struct json_object *bundles, int atomic, int verbose,
	cli_doc_label_fn label, void *arg, cli_tally *t);

#endif
