/* server/reqcheck.c — checks of what libmicrohttpd 0.9.75 parsed of a
 * request before the router reads it (see server/reqcheck.h): the
 * framing headers and the query's parameters. */
#include "server/reqcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The headers the daemon reads that libmicrohttpd answers with their
 * first field line only: a second one (an If-None-Match naming the
 * object's ETag, a Content-Type with another charset, an Accept asking
 * for a Table) would be passed over, so one given twice is refused. */
static const char *const ONCE[] = { "Authorization", "Content-Type",
	"Content-Encoding", "Expect", "If-Match", "If-None-Match", "Accept",
	"Accept-Encoding" };
#define NONCE (sizeof(ONCE) / sizeof(ONCE[0]))

/* What the request's framing headers say, gathered over every header. */
typedef struct framing {
	int te;                    /* Transfer-Encoding headers */
	int te_other;              /* one names a coding other than chunked */
	char te_value[64];
	int cl;                    /* Content-Length values */
	int cl_bad;                /* one is not a number, or they differ */
	char cl_first[24];
	int name_bad;              /* a name holds a character not a tchar */
	int value_bad;             /* a value holds a bare CR */
	int host;                  /* Host headers */
	int host_bad;              /* one is no host[:port] */
	int seen[NONCE];           /* each of ONCE's headers */
	const char *twice;         /* the first of ONCE given twice */
} framing;

/* Adds one Content-Length value (v[0..n), trimmed) to f. */
static void
framing_cl(framing *f, const char *v, size_t n)
{
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n == 0 || strspn(v, "0123456789") < n) {
		f->cl_bad = 1;
		return;
	}
	while (n > 1 && *v == '0') {
		v++;
		n--;
	}
	if (f->cl++ == 0) {
		if (n >= sizeof(f->cl_first))
			f->cl_bad = 1;
		else
			snprintf(f->cl_first, sizeof(f->cl_first), "%.*s", (int)n, v);
	} else if (strlen(f->cl_first) != n || memcmp(f->cl_first, v, n) != 0) {
		f->cl_bad = 1;
	}
}

static enum MHD_Result
framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
	size_t key_size, const char *value, size_t value_size)
{
	framing *f = cls;
	static const char tchar[] = "!#$%&'*+-.^_`|~0123456789"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

	(void)kind;
	(void)value_size;
	if (value == NULL)
		value = "";
	/* "Transfer-Encoding : chunked" is no Transfer-Encoding here, and
	 * one to a proxy that trims the name (RFC 9112 5.1: 400). */
	if (*key == '\0' || strspn(key, tchar) != key_size)
		f->name_bad = 1;
	if (strchr(value, '\r') != NULL)
		f->value_bad = 1;
	/* libmicrohttpd joins an obs-fold line after an empty value to the
	 * name ("Content-Length:\r\n 2" arrives as "Content-Length2"), which
	 * a proxy that unfolds reads as the framing header it is. */
	if ((key_size > 14 && strncasecmp(key, "Content-Length", 14) == 0) ||
	    (key_size > 17 && strncasecmp(key, "Transfer-Encoding", 17) == 0))
		f->name_bad = 1;
	for (size_t i = 0; i < NONCE; i++)
		if (strcasecmp(key, ONCE[i]) == 0 && f->seen[i]++ == 1 &&
		    f->twice == NULL)
			f->twice = ONCE[i];
	if (strcasecmp(key, "Host") == 0) {
		/* uri-host [":" port] (RFC 9110 7.2), as Go's server checks
		 * it: no space, and none of the delimiters of a URI's other
		 * parts. */
		if (strcspn(value, " \t/?#@\"<>\\^`{|}") != strlen(value))
			f->host_bad = 1;
		f->host++;
	}
	if (strcasecmp(key, "Transfer-Encoding") == 0) {
		const char *v = value;
		size_t n;

		while (*v == ' ' || *v == '\t')
			v++;
		n = strlen(v);
		if (f->te++ == 0)
			snprintf(f->te_value, sizeof(f->te_value), "%.*s", (int)n, v);
		/* libmicrohttpd trims the spaces before a value, not those
		 * after it: "chunked " is to it an unknown coding, whose body
		 * it reads until the connection closes, while a proxy in front
		 * trims it to chunked and sends the next request after the
		 * last chunk. Refused as any other coding is. */
		if (n != 7 || strncasecmp(v, "chunked", 7) != 0)
			f->te_other = 1;
	} else if (strcasecmp(key, "Content-Length") == 0) {
		const char *comma;

		/* "5, 5" is a list of values (RFC 9110 8.6). */
		while ((comma = strchr(value, ',')) != NULL) {
			framing_cl(f, value, (size_t)(comma - value));
			value = comma + 1;
		}
		framing_cl(f, value, strlen(value));
	}
	return MHD_YES;
}

/* Fills r with a 400 when the request's framing is ambiguous: read one
 * way by a proxy in front and another here, its body could carry a
 * request of its own (request smuggling). libmicrohttpd prefers
 * Transfer-Encoding to Content-Length, takes the first of several
 * Content-Lengths, and reads a body of an unknown coding until the
 * connection closes. A sound chunked body is a 411 where !chunked_ok.
 * Returns 0 when the framing is sound. */
int
reqcheck_framing(struct MHD_Connection *c, const char *version,
	int chunked_ok, api_resp *r)
{
	framing f;

	memset(&f, 0, sizeof(f));
	MHD_get_connection_values_n(c, MHD_HEADER_KIND, framing_header, &f);
	if (f.name_bad || f.value_bad)
		api_resp_fail(r, 400, "BadRequest", NULL, "a header's name holds "
		    "a space or a character no field name holds, or continues a "
		    "framing header (obs-fold), or its value holds a bare CR: "
		    "the request's framing would be ambiguous");
	else if (f.te > 0 && f.cl > 0)
		api_resp_fail(r, 400, "BadRequest", NULL, "the request has both "
		    "Transfer-Encoding and Content-Length: its length is "
		    "ambiguous");
	else if (f.te > 0 && strcmp(version, MHD_HTTP_VERSION_1_1) != 0)
		api_resp_fail(r, 400, "BadRequest", NULL, "Transfer-Encoding is "
		    "not allowed in an %.16s request", version);
	else if (f.te > 1 || f.te_other)
		api_resp_fail(r, 400, "BadRequest", NULL, "the transfer coding "
		    "\"%s\" is not supported: send the body with Content-Length or "
		    "Transfer-Encoding: chunked (alone, once)", f.te_value);
	else if (f.cl_bad)
		api_resp_fail(r, 400, "BadRequest", NULL, "the request's "
		    "Content-Length is not one non-negative decimal number (several "
		    "differing values, or not a number)");
	else if (f.twice != NULL)
		api_resp_fail(r, 400, "BadRequest", NULL, "the header %s is given "
		    "more than once, and only one would be read: send it once (a "
		    "list of values in one line)", f.twice);
	else if (f.host_bad)
		api_resp_fail(r, 400, "BadRequest", NULL, "the Host header is not "
		    "a host and port");
	else if (f.host > 1 ||
	    (f.host == 0 && strcmp(version, MHD_HTTP_VERSION_1_1) == 0))
		/* RFC 9112 3.2: an HTTP/1.1 request has exactly one Host;
		 * HTTP/1.0 may have none. */
		api_resp_fail(r, 400, "BadRequest", NULL, "the request has %s "
		    "Host header: send exactly one", f.host > 1 ? "more than one" :
		    "no");
	else if (f.te > 0 && !chunked_ok)
		/* The chunk framing is decoded by libmicrohttpd, which takes a
		 * bare LF for a line end and skips the bytes of a chunk
		 * extension unseen (docs/operations.md, accept-chunked-bodies):
		 * where the proxy in front passes chunked bodies on as they
		 * came, the operator refuses them. */
		api_resp_fail(r, 411, "LengthRequired", NULL, "this server takes "
		    "no chunked request bodies (accept-chunked-bodies is false): "
		    "send the body with Content-Length; nothing was read or "
		    "written");
	else
		return 0;
	return -1;
}

/* The query's parameters, gathered to find one with no value or one
 * given twice. */
typedef struct arg_scan {
	const char **names;
	size_t n, max;
	const char *novalue;       /* the first with no '=' */
} arg_scan;

static enum MHD_Result
arg_scan_one(void *cls, enum MHD_ValueKind kind, const char *key,
	const char *value)
{
	arg_scan *a = cls;

	(void)kind;
	/* An empty piece ("a=1&&b=2") is no parameter (the router warns of
	 * it); "?pretty" alone asks kube-apiserver for indented output. */
	if (*key == '\0')
		return MHD_YES;
	if (value == NULL && a->novalue == NULL && strcmp(key, "pretty") != 0)
		a->novalue = key;
	if (a->n < a->max)
		a->names[a->n++] = key;
	return MHD_YES;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Fills r with a 400 when a query parameter has no value ("?dryRun",
 * which every endpoint read as absent: a real write) or is given more
 * than once (only the first was read, the others passed over). Returns
 * 0 when every parameter is one name=value. */
int
reqcheck_args(struct MHD_Connection *c, api_resp *r)
{
	int n = MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, NULL,
	    NULL);
	arg_scan a = { NULL, 0, 0, NULL };
	int rc = 0;

	if (n <= 0)
		return 0;
	a.names = calloc((size_t)n, sizeof(*a.names));
	if (a.names == NULL) {
		api_resp_fail(r, 503, "ServiceUnavailable", NULL, "out of memory "
		    "reading the query");
		return -1;
	}
	a.max = (size_t)n;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, arg_scan_one, &a);
	if (a.novalue != NULL) {
		api_resp_fail(r, 400, "BadRequest", NULL, "the query parameter "
		    "\"%.64s\" has no value: write %.64s=VALUE", a.novalue,
		    a.novalue);
		rc = -1;
		goto out;
	}
	qsort(a.names, a.n, sizeof(*a.names), name_cmp);
	for (size_t i = 1; i < a.n; i++) {
		if (strcmp(a.names[i - 1], a.names[i]) == 0) {
			api_resp_fail(r, 400, "BadRequest", NULL, "the query "
			    "parameter \"%.64s\" is given more than once: give it "
			    "once", a.names[i]);
			rc = -1;
			goto out;
		}
	}
out:
	free(a.names);
	return rc;
}
