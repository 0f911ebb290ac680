/* cli/common.c — what every command of the kernelindex client shares: the
 * kinds, messages, Status printing, reading files, parsing options, and
 * the progress bar. */
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"

static const cli_kind kinds[] = {
	{ "BenchmarkRun", "benchmarkruns", "benchmarkrun", "kbr" },
	{ "BenchmarkProtocol", "benchmarkprotocols", "benchmarkprotocol",
	    "kbp" },
	{ "ExecutionEnvironment", "executionenvironments",
	    "executionenvironment", "kee" },
	{ "Workload", "workloads", "workload", "kwl" },
	{ "Implementation", "implementations", "implementation", "kimpl" },
	{ "Verification", "verifications", "verification", "kver" },
	{ "Threshold", "thresholds", "threshold", "kth" },
};


/* ====================================================================== */
/* Shared helpers                                                          */

const cli_kind *
cli_kind_lookup(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcasecmp(s, kinds[i].plural) == 0 ||
		    strcasecmp(s, kinds[i].singular) == 0 ||
		    strcasecmp(s, kinds[i].short_name) == 0 ||
		    strcasecmp(s, kinds[i].kind) == 0)
			return &kinds[i];
	return NULL;
}

const cli_kind *
cli_kind_by_kind(const char *kind)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kind, kinds[i].kind) == 0)
			return &kinds[i];
	return NULL;
}

void
cli_err(const cli *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", c->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *
cli_str_member(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

void
cli_print_status_obj(const cli *c, const char *prefix,
	struct json_object *st)
{
	struct json_object *details, *causes;
	const char *msg = cli_str_member(st, "message");
	const char *reason = cli_str_member(st, "reason");
	size_t i;

	(void)c;
	fprintf(stderr, "%serror: %s", prefix != NULL ? prefix : "",
	    msg != NULL ? msg : "the server rejected the request");
	if (reason != NULL)
		fprintf(stderr, " (%s)", reason);
	fputc('\n', stderr);
	if (!json_object_object_get_ex(st, "details", &details) ||
	    !json_object_object_get_ex(details, "causes", &causes) ||
	    !json_object_is_type(causes, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(causes); i++) {
		struct json_object *cause = json_object_array_get_idx(causes, i);
		const char *field = cli_str_member(cause, "field");
		const char *cmsg = cli_str_member(cause, "message");
		const char *creason = cli_str_member(cause, "reason");

		fprintf(stderr, "%s  %s: %s%s%s%s\n",
		    prefix != NULL ? prefix : "",
		    field != NULL ? field : "(document)",
		    cmsg != NULL ? cmsg : "invalid",
		    creason != NULL ? " [" : "",
		    creason != NULL ? creason : "",
		    creason != NULL ? "]" : "");
	}
}

void
cli_print_status(const cli *c, const char *prefix, long code,
	const char *body, size_t len)
{
	struct json_object *st = NULL;
	const char *kind;

	if (body != NULL && len > 0)
		st = json_tokener_parse(body);
	kind = cli_str_member(st, "kind");
	if (kind != NULL && strcmp(kind, "Status") == 0) {
		cli_print_status_obj(c, prefix, st);
	} else {
		int n = len > 200 ? 200 : (int)len;

		fprintf(stderr, "%serror: HTTP %ld%s%.*s\n",
		    prefix != NULL ? prefix : "", code, n > 0 ? ": " : "", n,
		    body != NULL ? body : "");
	}
	json_object_put(st);
}

int
cli_transport_fail(const cli *c, int rc)
{
	if (rc == KI_EIO) {
		const char *e = c->http != NULL ? cli_http_error(c->http) : "";

		cli_err(c, "cannot reach the server at %s%s%s", c->server,
		    *e != '\0' ? ": " : "", e);
		return CLI_EXIT_UNREACHABLE;
	}
	cli_err(c, "request failed: %s", ki_strerror(rc));
	return CLI_EXIT_REJECTED;
}

int
cli_connect(cli *c)
{
	int rc;

	if (c->http != NULL)
		return CLI_EXIT_OK;
	rc = cli_http_new(c->server, c->token, &c->http);
	if (rc == KI_EINVAL) {
		cli_err(c, "the token holds a line break");
		return CLI_EXIT_USAGE;
	}
	if (rc != KI_OK) {
		cli_err(c, "%s", ki_strerror(rc));
		return CLI_EXIT_REJECTED;
	}
	return CLI_EXIT_OK;
}

int
cli_read_file(const cli *c, const char *path, ki_buf *b)
{
	char chunk[65536];
	FILE *f;
	size_t n;
	int rc = KI_OK;

	f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (f == NULL) {
		cli_err(c, "%s: %s", path, strerror(errno));
		return KI_EIO;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (b->len + n > CLI_MAX_INPUT) {
			cli_err(c, "%s: larger than %zu bytes", path,
			    (size_t)CLI_MAX_INPUT);
			rc = KI_ELIMIT;
			break;
		}
		if (ki_buf_append(b, chunk, n) != KI_OK) {
			cli_err(c, "%s: out of memory", path);
			rc = KI_ENOMEM;
			break;
		}
	}
	if (rc == KI_OK && ferror(f)) {
		cli_err(c, "%s: %s", path, strerror(errno));
		rc = KI_EIO;
	}
	if (f != stdin)
		fclose(f);
	if (rc == KI_OK && b->data == NULL)
		rc = ki_buf_reserve(b, 0);
	return rc;
}

int
cli_parse_count(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s < '0' || *s > '9')
		return KI_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0 || v == 0 || v > 1000000000ULL)
		return KI_EINVAL;
	*out = (size_t)v;
	return KI_OK;
}

/* ====================================================================== */
/* Option parsing                                                          */

/* Whether argv[*i] is option `name` (or one of its spellings a, b) with a
 * value: "--x V" or "--x=V". Returns 1 and advances *i past it, 0 when it
 * is not this option, -1 when the value is missing. */
int
cli_take_opt(int argc, char **argv, int *i, const char *a, const char *b,
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

int
cli_wants_help(int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return 1;
	}
	return 0;
}

void
cli_progress(cli *c, size_t done, size_t total, const char *what)
{
	const int width = 30;
	int fill;

	if (!c->tty || c->quiet || total == 0)
		return;
	fill = (int)((double)width * (double)done / (double)total);
	if (fill > width)
		fill = width;
	fprintf(stderr, "\r[%.*s%*s] %zu/%zu %s", fill,
	    "##############################", width - fill, "", done, total,
	    what);
	fflush(stderr);
	c->progress_shown = 1;
}

void
cli_progress_clear(cli *c)
{
	if (!c->progress_shown)
		return;
	fprintf(stderr, "\r%*s\r", 72, "");
	fflush(stderr);
	c->progress_shown = 0;
}
