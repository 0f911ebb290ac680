/* tests/fuzz/fuzz_router.c — fuzz target for router_dispatch: one HTTP
 * request per input, answered over a store opened once (without sync) and
 * kept for the whole run, so that one input's writes meet the next one's
 * reads.
 *
 * Input framing (text, so that seeds can be written by hand):
 *
 *   METHOD SP TARGET LF        TARGET = path [ "?" query ]
 *   ( NAME ":" [SP] VALUE LF )*   at most 8 headers
 *   LF
 *   BODY                        the remaining bytes
 *
 * A missing part is empty. The path is percent-decoded and the query split
 * into arguments (first occurrence wins, "+" is a space, %XX decoded) as
 * libmicrohttpd does; header names are looked up case-insensitively. The
 * pseudo-header "X-Fuzz-Remote: 1" makes the client non-loopback. Bodies
 * larger than router_body_limit() are dropped as http.c answers them 413
 * before routing. POST /admin/backup is left out: it creates a file at
 * whatever absolute path the body names. A token that an input creates is
 * revoked after it, so that the store stays without tokens (loopback
 * clients may write) and every input meets the same rules.
 *
 * Properties checked beyond "no crash, no leak": fuzz_check_resp() on
 * every answer (a code in 100..599; a JSON body where the Content-Type
 * says JSON; a Status with the same code for >= 400); a watch leaves the
 * code 0 and hands back parameters of the requested kind. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/auth.h"
#include "api/kinds.h"
#include "server/router.h"
#include "tests/fuzz/fuzz.h"

#define MAX_HEADERS 8
#define MAX_ARGS 32

static api_ctx ctx;
static router rt;
static server_metrics metrics;
static char static_dir[4096];

typedef struct kv {
	char *name;
	char *value;
} kv;

typedef struct fuzz_req {
	kv headers[MAX_HEADERS];
	size_t nheaders;
	kv args[MAX_ARGS];
	size_t nargs;
} fuzz_req;

static void
remove_static(void)
{
	char p[4200];

	snprintf(p, sizeof(p), "%s/index.html", static_dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/app.js", static_dir);
	unlink(p);
	rmdir(static_dir);
}

static void
write_file(const char *dir, const char *name, const char *text)
{
	char p[4200];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if ((f = fopen(p, "w")) == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		fuzz_fail("cannot write %s", p);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	memset(&ctx, 0, sizeof(ctx));
	ctx.st = fuzz_store_open(256u << 20);
	ctx.lim = &fuzz_limits;
	ctx.now = fuzz_now;
	fuzz_preload(&ctx);
	/* A small page directory of its own, so that static files answer
	 * the same wherever the fuzzer runs. */
	snprintf(static_dir, sizeof(static_dir), "%s/ki-fuzz-static-XXXXXX",
	    tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(static_dir) == NULL)
		fuzz_fail("cannot create %s", static_dir);
	write_file(static_dir, "index.html", "<!doctype html><title>ki</title>\n");
	write_file(static_dir, "app.js", "export {};\n");
	atexit(remove_static);
	memset(&metrics, 0, sizeof(metrics));
	rt.api = &ctx;
	rt.static_dir = static_dir;
	rt.metrics = &metrics;
	rt.anonymous_reads = 1;
	return 0;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes s[0..n) into a new NUL-terminated string; plus: '+' is
 * a space (query arguments). A decoded NUL ends the string, as it would
 * for libmicrohttpd's C strings. */
static char *
decode(const char *s, size_t n, int plus)
{
	char *out = malloc(n + 1);
	size_t j = 0;

	if (out == NULL)
		fuzz_fail("out of memory");
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
		    (lo = hexval(s[i + 2])) >= 0) {
			out[j++] = (char)(hi * 16 + lo);
			i += 2;
		} else if (plus && s[i] == '+') {
			out[j++] = ' ';
		} else {
			out[j++] = s[i];
		}
	}
	out[j] = '\0';
	return out;
}

static const char *
get_arg(void *cls, const char *name)
{
	fuzz_req *fr = cls;

	for (size_t i = 0; i < fr->nargs; i++)
		if (strcmp(fr->args[i].name, name) == 0)
			return fr->args[i].value;
	return NULL;
}

static const char *
get_header(void *cls, const char *name)
{
	fuzz_req *fr = cls;

	for (size_t i = 0; i < fr->nheaders; i++)
		if (strcasecmp(fr->headers[i].name, name) == 0)
			return fr->headers[i].value;
	return NULL;
}

static void
parse_query(fuzz_req *fr, const char *q, size_t n)
{
	size_t pos = 0;

	while (pos < n && fr->nargs < MAX_ARGS) {
		const char *amp = memchr(q + pos, '&', n - pos);
		size_t end = amp ? (size_t)(amp - q) : n;
		const char *eq = memchr(q + pos, '=', end - pos);

		if (end > pos) {
			kv *a = &fr->args[fr->nargs++];

			if (eq != NULL) {
				a->name = decode(q + pos, (size_t)(eq - (q + pos)), 1);
				a->value = decode(eq + 1, (size_t)(q + end - eq - 1), 1);
			} else {
				/* libmicrohttpd gives a key without '=' a NULL value;
				 * the router's lookups cannot tell it from absent. */
				a->name = decode(q + pos, end - pos, 1);
				a->value = NULL;
			}
		}
		pos = end + 1;
	}
}

static void
free_req(fuzz_req *fr)
{
	for (size_t i = 0; i < fr->nheaders; i++) {
		free(fr->headers[i].name);
		free(fr->headers[i].value);
	}
	for (size_t i = 0; i < fr->nargs; i++) {
		free(fr->args[i].name);
		free(fr->args[i].value);
	}
}

/* The next line of data[*pos..size) without its LF (and a CR before it). */
static size_t
next_line(const uint8_t *data, size_t size, size_t *pos, const char **line)
{
	const uint8_t *nl;
	size_t start = *pos, end;

	*line = (const char *)data + start;
	nl = start < size ? memchr(data + start, '\n', size - start) : NULL;
	end = nl ? (size_t)(nl - data) : size;
	*pos = nl ? end + 1 : size;
	if (end > start && data[end - 1] == '\r')
		end--;
	return end - start;
}

/* Revokes the token whose creation r answers. */
static void
revoke_created(const api_resp *r)
{
	struct json_object *o = fuzz_parse_strict(r->body.data, r->body.len);
	struct json_object *id = NULL;
	int rc;

	if (o == NULL || !json_object_object_get_ex(o, "id", &id) ||
	    !json_object_is_type(id, json_type_string))
		fuzz_fail("a created token without an id: %.300s", r->body.data);
	if ((rc = api_token_revoke(ctx.st, json_object_get_string(id))) != KI_OK)
		fuzz_fail("revoking token %s: %s", json_object_get_string(id),
		    ki_strerror(rc));
	json_object_put(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_req fr;
	http_req req;
	api_resp r;
	watch_params *watch = NULL;
	char *method, *path, *body;
	const char *line, *sp, *q;
	size_t pos = 0, n, body_len;
	int loopback = 1;
	char what[160];

	if (size > fuzz_limits.max_bulk_body + 4096)
		return 0;
	memset(&fr, 0, sizeof(fr));

	n = next_line(data, size, &pos, &line);
	sp = memchr(line, ' ', n);
	method = strndup(line, sp ? (size_t)(sp - line) : n);
	if (sp != NULL) {
		const char *target = sp + 1;
		size_t tlen = n - (size_t)(target - line);

		q = memchr(target, '?', tlen);
		path = decode(target, q ? (size_t)(q - target) : tlen, 0);
		if (q != NULL)
			parse_query(&fr, q + 1, tlen - (size_t)(q + 1 - target));
	} else {
		path = strdup("/");
	}
	if (method == NULL || path == NULL)
		fuzz_fail("out of memory");
	while (pos < size) {
		const char *colon;
		size_t vs;

		n = next_line(data, size, &pos, &line);
		if (n == 0)
			break;
		colon = memchr(line, ':', n);
		if (colon == NULL || fr.nheaders == MAX_HEADERS)
			continue;
		vs = (size_t)(colon - line) + 1;
		while (vs < n && (line[vs] == ' ' || line[vs] == '\t'))
			vs++;
		fr.headers[fr.nheaders].name = strndup(line,
		    (size_t)(colon - line));
		fr.headers[fr.nheaders].value = strndup(line + vs, n - vs);
		if (fr.headers[fr.nheaders].name == NULL ||
		    fr.headers[fr.nheaders].value == NULL)
			fuzz_fail("out of memory");
		if (strcasecmp(fr.headers[fr.nheaders].name, "X-Fuzz-Remote") == 0)
			loopback = 0;
		fr.nheaders++;
	}
	body_len = size - pos;
	if (strcmp(path, "/admin/backup") == 0 ||
	    body_len > router_body_limit(&rt, get_header(&fr, "Content-Type"))) {
		free(method);
		free(path);
		free_req(&fr);
		return 0;
	}
	/* NUL-terminated, as http.c hands it over. */
	if ((body = malloc(body_len + 1)) == NULL)
		fuzz_fail("out of memory");
	memcpy(body, data + pos, body_len);
	body[body_len] = '\0';

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.path = path;
	req.arg = get_arg;
	req.header = get_header;
	req.cls = &fr;
	req.body = body;
	req.body_len = body_len;
	req.loopback = loopback;
	api_resp_init(&r);
	router_dispatch(&rt, &req, &r, &watch);
	snprintf(what, sizeof(what), "%.16s %.120s", method, path);
	if (watch != NULL) {
		if (r.code != 0)
			fuzz_fail("%s: a watch with code %d", what, r.code);
		if (watch->kind == NULL)
			fuzz_fail("%s: a watch without a kind", what);
		free(watch->label_selector);
		free(watch->field_selector);
		free(watch);
	} else {
		fuzz_check_resp(&r, what);
		if (r.job != NULL)
			fuzz_fail("%s: a group-commit job without a committer", what);
	}
	if (r.code == 201 && strncmp(path, "/admin/tokens", 13) == 0)
		revoke_created(&r);
	api_resp_free(&r);
	free(body);
	free(method);
	free(path);
	free_req(&fr);
	return 0;
}
