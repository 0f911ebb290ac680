/* server/http.c — libmicrohttpd glue: bodies, limits, headers, the access
 * log and metrics. The routes are in server/router.c. */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/version.h"
#include "lib/log.h"
#include "server/encode.h"
#include "server/reqcheck.h"
#include "server/reqhead.h"
#include "lib/thread.h"
#include <openssl/crypto.h>
#include <stdio.h>

struct http_server {
	struct MHD_Daemon *d;
	router *rt;
	watch_hub *hub;
	unsigned port;
	ki_buf cert, key;          /* PEM, kept for the daemon's life */
	/* The listening socket is ours: one thread accepts and hands each
	 * connection to the pool (see accept_loop). wake[1] stops it. */
	int lfd, wake[2];
	pthread_t acceptor;
	int accepting;
	/* Connections whose request is being read, for the read deadline
	 * (see reap_slow): the acceptor scans them once a second. */
	pthread_mutex_t mu;
	struct conn_track *conns;
	uint64_t request_timeout_us;
	uint64_t last_scan_us;
	int chunked_ok;             /* accept-chunked-bodies */
};

/* A body gets one more second of the request deadline per this many
 * bytes received. */
#define HTTP_MIN_BODY_RATE (64 * 1024)

/* One connection's read deadline. The pool thread that owns the
 * connection writes seq, phase_us, reading and body_bytes (atomics); the
 * acceptor alone reads them and owns the rest. */
typedef struct conn_track {
	int fd;
	uint32_t seq;               /* bumped when a new request may begin */
	uint64_t phase_us;          /* when it could begin */
	int reading;                /* its request is not read whole yet */
	uint64_t body_bytes;        /* of its body, received so far */
	uint32_t seen_seq;          /* acceptor: the phase begun_us is of */
	uint64_t begun_us;          /* acceptor: its first bytes came; 0 */
	int cut;                    /* acceptor: shut down already */
	struct conn_track *prev, *next;
} conn_track;

/* Reads a whole PEM file into b (NUL-terminated). */
static int
read_pem(const char *path, ki_buf *b)
{
	FILE *f = fopen(path, "rb");
	char chunk[4096];
	size_t n;

	if (f == NULL)
		return KI_EIO;
	b->limit = 1u << 20;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (ki_buf_append(b, chunk, n) != KI_OK) {
			fclose(f);
			return KI_ELIMIT;
		}
	}
	fclose(f);
	return b->len > 0 ? KI_OK : KI_EIO;
}

typedef struct req_ctx {
	uint64_t start_us;
	struct MHD_Connection *conn;
	api_resp resp;
	int waiting;               /* suspended for a group commit */
	int answered;              /* the commit is done: resp is final */
	ki_buf body;
	api_stream *stream;        /* an NDJSON body read as it arrives */
	int discard;               /* the answer is known: drop the body */
	size_t limit;
	int too_large;
	int status;
	size_t bytes;
	int started;               /* the handler's first call is done */
	int head, get;             /* a HEAD, a GET request */
	int nul;                   /* the target has an encoded NUL (%00) */
	const char *uri;           /* the target as received, in the head */
	size_t uri_len;
	int target_bad;            /* it holds a space or a control byte */
	enc_inflater *gunzip;      /* Content-Encoding: gzip, or NULL */
	int bad_gzip;              /* the gzip body does not inflate */
	int oom;                   /* inflating ran out of memory */
	conn_track *ct;            /* the connection's deadline, or NULL */
	char method[16];
	char target[400];          /* as received, escaped for the log */
} req_ctx;

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
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

/* Go's url.Values.Encode() writes spaces as '+': decode it as well as
 * %XX (libmicrohttpd's own unescaper leaves '+' alone). */
static size_t
unescape(void *cls, struct MHD_Connection *c, char *s)
{
	char *w = s;

	(void)cls;
	(void)c;
	for (char *r = s; *r; r++) {
		if (*r == '+') {
			*w++ = ' ';
		} else if (*r == '%' && hexval(r[1]) >= 0 && hexval(r[2]) >= 0) {
			*w++ = (char)(hexval(r[1]) * 16 + hexval(r[2]));
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

typedef struct lookup {
	struct MHD_Connection *c;
} lookup;

static const char *
get_arg(void *cls, const char *name)
{
	return MHD_lookup_connection_value(((lookup *)cls)->c,
	    MHD_GET_ARGUMENT_KIND, name);
}

static const char *
get_header(void *cls, const char *name)
{
	return MHD_lookup_connection_value(((lookup *)cls)->c, MHD_HEADER_KIND,
	    name);
}

typedef struct arg_list {
	const char **names;
	size_t n, max;
} arg_list;

static enum MHD_Result
arg_name(void *cls, enum MHD_ValueKind kind, const char *key,
	const char *value)
{
	arg_list *l = cls;

	(void)kind;
	(void)value;
	if (l->n < l->max)
		l->names[l->n] = key;
	l->n++;
	return MHD_YES;
}

static size_t
get_arg_names(void *cls, const char **names, size_t max)
{
	arg_list l = { names, 0, max };

	MHD_get_connection_values(((lookup *)cls)->c, MHD_GET_ARGUMENT_KIND,
	    arg_name, &l);
	return l.n;
}

static int
is_loopback(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr *sa;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || ci->client_addr == NULL)
		return 0;
	sa = ci->client_addr;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)
		    (const void *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)
		    (const void *)sa;
		static const unsigned char v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
			0, 0, 0xff, 0xff };

		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
			return 1;
		return memcmp(in6->sin6_addr.s6_addr, v4mapped, 12) == 0 &&
		    in6->sin6_addr.s6_addr[12] == 127;
	}
	return 0;
}

/* Adds "Warning: 299 - "text"" with '"' and '\' escaped and the controls
 * (DEL too) left out, which no quoted-string holds (RFC 9110 5.6.4). */
static void
add_warning(struct MHD_Response *mr, const char *text)
{
	ki_buf b;

	ki_buf_init(&b);
	ki_buf_puts(&b, "299 - \"");
	for (const char *p = text; *p; p++) {
		if (*p == '"' || *p == '\\')
			ki_buf_putc(&b, '\\');
		if ((unsigned char)*p >= 0x20 && *p != 0x7f)
			ki_buf_putc(&b, *p);
	}
	ki_buf_putc(&b, '"');
	if (!b.oom)
		MHD_add_response_header(mr, "Warning", b.data);
	ki_buf_free(&b);
}

/* A body of three parts: in memory, a file, a static suffix. */
typedef struct spill_body {
	char *head;
	size_t head_len;
	FILE *f;
	uint64_t f_len;
	const char *suffix;
	size_t suffix_len;
} spill_body;

static ssize_t
spill_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	spill_body *b = cls;
	size_t n = 0;

	if (pos < b->head_len) {
		n = b->head_len - (size_t)pos < max ? b->head_len - (size_t)pos : max;
		memcpy(buf, b->head + pos, n);
		return (ssize_t)n;
	}
	pos -= b->head_len;
	if (pos < b->f_len) {
		ssize_t got;
		uint64_t left = b->f_len - pos;

		n = left < max ? (size_t)left : max;
		got = pread(fileno(b->f), buf, n, (off_t)pos);
		if (got > 0)
			return got;
		log_warn("http: reading a spilled answer back: %s",
		    got < 0 ? strerror(errno) : "the file is shorter");
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	pos -= b->f_len;
	if (pos < b->suffix_len) {
		n = b->suffix_len - (size_t)pos < max ? b->suffix_len - (size_t)pos :
		    max;
		memcpy(buf, b->suffix + pos, n);
		return (ssize_t)n;
	}
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static void
spill_free(void *cls)
{
	spill_body *b = cls;

	free(b->head);
	fclose(b->f);
	free(b);
}

/* The response for r's spilled body; takes the body and the file. */
static struct MHD_Response *
spill_response(api_resp *r, size_t *len)
{
	spill_body *b = calloc(1, sizeof(*b));
	struct MHD_Response *mr;

	if (b == NULL)
		return NULL;
	b->head = ki_buf_steal(&r->body, &b->head_len);
	b->f = r->spill;
	b->f_len = r->spill_len;
	b->suffix = r->suffix ? r->suffix : "";
	b->suffix_len = strlen(b->suffix);
	r->spill = NULL;
	*len = (size_t)(b->head_len + b->f_len + b->suffix_len);
	mr = MHD_create_response_from_callback(b->head_len + b->f_len +
	    b->suffix_len, 64 * 1024, spill_read, b, spill_free);
	if (mr == NULL)
		spill_free(b);
	return mr;
}

/* Does the If-None-Match list inm hold etag (weak comparison, RFC 9110
 * 13.1.2), or "*"? */
static int
etag_listed(const char *inm, const char *etag)
{
	size_t n;

	if (strncmp(etag, "W/", 2) == 0)
		etag += 2;
	n = strlen(etag);
	while (*inm != '\0') {
		const char *e;

		while (*inm == ' ' || *inm == '\t' || *inm == ',')
			inm++;
		if (*inm == '*')
			return 1;
		if (strncmp(inm, "W/", 2) == 0)
			inm += 2;
		if (*inm != '"')
			return 0;
		e = strchr(inm + 1, '"');
		if (e == NULL)
			return 0;
		if ((size_t)(e + 1 - inm) == n && memcmp(inm, etag, n) == 0)
			return 1;
		inm = e + 1;
	}
	return 0;
}

/* Turns the ETag of r weak: the bytes sent are another representation
 * (compressed, or YAML) of the same content. */
static void
weaken_etag(api_resp *r)
{
	size_t n = strlen(r->etag);

	if (n == 0 || strncmp(r->etag, "W/", 2) == 0 ||
	    n + 3 > sizeof(r->etag))
		return;
	memmove(r->etag + 2, r->etag, n + 1);
	memcpy(r->etag, "W/", 2);
}

/* The representation the request asked for: YAML for a JSON answer when
 * Accept prefers it, gzip for a large one when Accept-Encoding takes it.
 * Sets *vary to the Vary header's value (static). On a failure to
 * convert, r is left as it was. */
static void
represent(struct MHD_Connection *c, api_resp *r, const char **vary,
	int *gzipped)
{
	int json = r->content_type != NULL &&
	    strncmp(r->content_type, "application/json", 16) == 0;
	int big;

	*vary = json ? "Accept" : NULL;
	*gzipped = 0;
	if (r->spill != NULL || r->code == 304 || r->body.data == NULL)
		return;
	/* A 406 says the Accept header was not met: its Status is JSON, as
	 * Kubernetes answers one, not the YAML the endpoint could not give. */
	if (json && r->code != 406 && enc_wants_yaml(
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept"))) {
		ki_buf y;

		ki_buf_init(&y);
		if (enc_yaml(r->body.data, r->body.len, &y) == KI_OK) {
			ki_buf_free(&r->body);
			r->body = y;
			r->content_type = "application/yaml";
			weaken_etag(r);
		} else {
			ki_buf_free(&y);
		}
	}
	big = r->body.len >= ENC_GZIP_MIN && enc_compressible(r->content_type);
	if (!big)
		return;
	*vary = json ? "Accept, Accept-Encoding" : "Accept-Encoding";
	if (enc_accepts_gzip(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    "Accept-Encoding"))) {
		ki_buf z;

		ki_buf_init(&z);
		if (enc_gzip(r->body.data, r->body.len, &z) == KI_OK) {
			ki_buf_free(&r->body);
			r->body = z;
			weaken_etag(r);
			*gzipped = 1;
		} else {
			ki_buf_free(&z);
		}
	}
}

/* Adds the Location header of the object r created: the API names its kind
 * and name, the path is HTTP's (the collection's, then the name). */
static void
add_location(struct MHD_Response *mr, const api_resp *r)
{
	char path[sizeof(API_PREFIX) + 64 + sizeof(r->created_name)];

	snprintf(path, sizeof(path), API_PREFIX "/%s/%s", r->created->plural,
	    r->created_name);
	MHD_add_response_header(mr, "Location", path);
}

/* Queues r. A HEAD gets the GET's headers and Content-Length, no body
 * (libmicrohttpd leaves the body out). close_after: the request's framing
 * is not to be trusted, so the connection ends with this answer. */
static enum MHD_Result
send_resp(struct MHD_Connection *c, req_ctx *rq, api_resp *r,
	int close_after)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;
	size_t len = 0;
	const char *vary;
	int gzipped;
	char *data;

	if (r->body.oom) {
		api_status st;

		api_status_init(&st);
		api_status_from_rc(&st, KI_ENOMEM, "answering");
		ki_buf_free(&r->body);
		api_resp_status(r, &st);
		api_status_free(&st);
	}
	if (r->code == 200 && r->etag[0] != '\0' && (rq->get || rq->head)) {
		const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    "If-None-Match");

		if (inm != NULL && etag_listed(inm, r->etag))
			r->code = 304;
	}
	represent(c, r, &vary, &gzipped);
	if (r->spill != NULL && r->code != 304) {
		mr = spill_response(r, &len);
		if (mr == NULL)
			return MHD_NO;
		goto headers;
	}
	data = ki_buf_steal(&r->body, &len);
	if (data == NULL || r->code == 304) {
		free(data);
		mr = MHD_create_response_from_buffer(0, (void *)(uintptr_t)"",
		    MHD_RESPMEM_PERSISTENT);
		len = 0;
	} else {
		mr = MHD_create_response_from_buffer(len, data,
		    MHD_RESPMEM_MUST_FREE);
		if (mr == NULL)
			free(data);
	}
	if (mr == NULL)
		return MHD_NO;
headers:
	if (r->code != 304)
		MHD_add_response_header(mr, "Content-Type", r->content_type);
	if (gzipped)
		MHD_add_response_header(mr, "Content-Encoding", "gzip");
	if (vary != NULL)
		MHD_add_response_header(mr, "Vary", vary);
	MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
	if (r->etag[0] != '\0')
		MHD_add_response_header(mr, "ETag", r->etag);
	if (r->cache_control != NULL)
		MHD_add_response_header(mr, "Cache-Control", r->cache_control);
	if (r->created != NULL)
		add_location(mr, r);
	if (r->code == 503)
		MHD_add_response_header(mr, "Retry-After", "1");
	if (r->allow != NULL && r->code == 405)
		MHD_add_response_header(mr, "Allow", r->allow);
	if (close_after)
		MHD_add_response_header(mr, "Connection", "close");
	for (size_t i = 0; i < r->nwarnings; i++)
		add_warning(mr, r->warnings[i]);
	if (r->content_type != NULL &&
	    strncmp(r->content_type, "text/html", 9) == 0)
		MHD_add_response_header(mr, "Content-Security-Policy",
		    "default-src 'self'; img-src 'self' data:; object-src 'none'; "
		    "base-uri 'none'; frame-ancestors 'none'");
	rq->status = r->code;
	rq->bytes = rq->head ? 0 : len;
	ret = MHD_queue_response(c, (unsigned)r->code, mr);
	MHD_destroy_response(mr);
	return ret;
}

/* The group commit holding this request finished: wake its connection. */
static void
commit_done(api_job *job, int commit_rc)
{
	req_ctx *rq = job->cookie;

	(void)commit_rc;
	__atomic_store_n(&rq->answered, 1, __ATOMIC_RELEASE);
	MHD_resume_connection(rq->conn);
}

/* Suspends the connection until the stream's chunk job is committed. */
static void
stream_wait(http_server *s, req_ctx *rq, api_job *job)
{
	(void)s;
	rq->waiting = 1;
	__atomic_store_n(&rq->answered, 0, __ATOMIC_RELEASE);
	MHD_suspend_connection(rq->conn);
	api_stream_submit(rq->stream, job, commit_done, rq);
}

/* Copies s into out (n bytes) for a log line: controls, DEL, '"', '\\'
 * and bytes from 0x80 become \xHH, so a line is what was received and
 * nothing a client sends can start another. Cut with "..." when long. */
static void
log_escape(char *out, size_t n, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t w = 0;

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (w + 8 >= n) {
			memcpy(out + w, "...", 3);
			w += 3;
			break;
		}
		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
			out[w++] = '\\';
			out[w++] = 'x';
			out[w++] = hex[ch >> 4];
			out[w++] = hex[ch & 15];
		} else {
			out[w++] = (char)ch;
		}
	}
	out[w] = '\0';
}

/* libmicrohttpd's URI callback: the request target as received, before
 * any decoding. The request's context starts here, so that the access log
 * has the raw target even for a request refused before the handler. */
static void *
uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	http_server *s = cls;
	req_ctx *rq = calloc(1, sizeof(*rq));

	if (rq == NULL)
		return NULL;
	rq->start_us = now_us();
	rq->conn = c;
	api_resp_init(&rq->resp);
	ki_buf_init(&rq->body);
	/* Escaped only for a log that prints it (one line per request at
	 * info): the loop is a measurable part of a GET's cost. */
	if (uri != NULL) {
		if (log_get_level() <= LOG_INFO)
			log_escape(rq->target, sizeof(rq->target), uri);
		/* Decoded, %00 would cut the path or a query value short. */
		rq->nul = strstr(uri, "%00") != NULL;
		rq->uri = uri;
		rq->uri_len = strlen(uri);
		/* Now: libmicrohttpd decodes the target in place after this. */
		rq->target_bad = reqhead_target_bad(uri, rq->uri_len);
	}
	__atomic_add_fetch(&s->rt->metrics->in_flight, 1, __ATOMIC_RELAXED);
	return rq;
}

static enum MHD_Result
head_field(void *cls, enum MHD_ValueKind kind, const char *key,
	size_t key_size, const char *value, size_t value_size)
{
	(void)kind;
	reqhead_field(cls, key, key_size, value, value_size);
	return MHD_YES;
}

/* Fills r with a 400 when the request head holds what libmicrohttpd did
 * not hand on (server/reqhead.h) or a target no proxy reads the same way
 * (a space or a control character in it). Returns 0 when it is sound. */
static int
head_check(struct MHD_Connection *c, req_ctx *rq, const char *method,
	const char *version, api_resp *r)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
	const char *bad;
	reqhead w;

	if (rq->target_bad) {
		api_resp_fail(r, 400, "BadRequest", NULL, "the request target "
		    "holds a space, a control character or DEL: percent-encode "
		    "it");
		return -1;
	}
	if (ci == NULL)
		return 0;
	reqhead_begin(&w, method, ci->header_size, rq->uri, rq->uri_len,
	    version);
	MHD_get_connection_values_n(c, MHD_HEADER_KIND, head_field, &w);
	if ((bad = reqhead_end(&w)) == NULL)
		return 0;
	api_resp_fail(r, 400, "BadRequest", NULL, "%s", bad);
	return -1;
}

/* Reads Content-Encoding: no coding (or identity) is 0; gzip starts an
 * inflater; anything else fills r with a 415 and is -1. */
static int
body_coding(struct MHD_Connection *c, req_ctx *rq, api_resp *r)
{
	const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    "Content-Encoding");

	if (ce == NULL || *ce == '\0' || strcasecmp(ce, "identity") == 0)
		return 0;
	if (strcasecmp(ce, "gzip") == 0 || strcasecmp(ce, "x-gzip") == 0) {
		if ((rq->gunzip = enc_inflate_new()) == NULL) {
			api_resp_fail(r, 503, "ServiceUnavailable", NULL,
			    "out of memory");
			return -1;
		}
		return 0;
	}
	api_resp_fail(r, 415, "UnsupportedMediaType", NULL, "the "
	    "Content-Encoding \"%.32s\" is not supported: send the body as it "
	    "is, or gzip", ce);
	return -1;
}

/* The connection's deadline record (set by conn_notify), or NULL. */
static conn_track *
track_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? ci->socket_context : NULL;
}

/* The request is read whole: its connection is out of the deadline. */
static void
read_done(req_ctx *rq)
{
	if (rq->ct != NULL)
		__atomic_store_n(&rq->ct->reading, 0, __ATOMIC_RELEASE);
}

/* A request's first handler call: checks what can be checked from the
 * headers. Returns 1 when rq->resp holds an answer to send at once, with
 * the connection closed after it. */
static int
first_call(http_server *s, struct MHD_Connection *c, req_ctx *rq,
	const char *url, const char *method, const char *version)
{
	const char *cl, *ct;
	lookup lk = { c };
	http_req req;

	rq->started = 1;
	if (log_get_level() <= LOG_INFO)
		log_escape(rq->method, sizeof(rq->method), method);
	rq->head = strcmp(method, "HEAD") == 0;
	rq->get = strcmp(method, "GET") == 0;
	rq->ct = track_of(c);
	if (head_check(c, rq, method, version, &rq->resp) != 0 ||
	    reqcheck_framing(c, version, s->chunked_ok, &rq->resp) != 0)
		return 1;
	if (rq->nul) {
		api_resp_fail(&rq->resp, 400, "BadRequest", NULL, "the request "
		    "target contains an encoded NUL (%%00), which no path or query "
		    "value may hold");
		return 1;
	}
	if (reqcheck_args(c, &rq->resp) != 0)
		return 1;
	/* RFC 9110 10.1.1: an expectation other than 100-continue is not
	 * one this server meets (417), rather than one it passes over. */
	ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
	if (ct != NULL && strcasecmp(ct, "100-continue") != 0) {
		api_resp_fail(&rq->resp, 417, "ExpectationFailed", NULL, "the "
		    "expectation \"%.32s\" cannot be met: only 100-continue is", ct);
		return 1;
	}
	if (body_coding(c, rq, &rq->resp) != 0)
		return 1;
	ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	rq->limit = router_body_limit(s->rt, ct);
	rq->body.limit = rq->limit;
	memset(&req, 0, sizeof(req));
	req.method = method;
	req.path = url;
	req.arg = get_arg;
	req.header = get_header;
	req.arg_names = get_arg_names;
	req.cls = &lk;
	req.loopback = is_loopback(c);
	/* A compressed body is read whole (up to the limit for its type,
	 * decompressed), not streamed. */
	if (rq->gunzip == NULL)
		rq->stream = router_stream_open(s->rt, &req, &rq->resp);
	if (rq->stream != NULL)
		rq->limit = s->rt->api->lim->max_stream_body;
	else if (rq->resp.code != 0)
		rq->discard = 1;
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	if (cl != NULL && strtoull(cl, NULL, 10) > rq->limit && !rq->discard) {
		rq->too_large = 1;
		api_stream_free(rq->stream);
		rq->stream = NULL;
	}
	return 0;
}

/* Takes a piece of the request body. */
static void
take_body(http_server *s, req_ctx *rq, const char *data, size_t len)
{
	if (rq->ct != NULL)
		__atomic_add_fetch(&rq->ct->body_bytes, len, __ATOMIC_RELAXED);
	if (rq->stream != NULL) {
		api_job *job = NULL;

		/* Called again after a chunk's commit woke us. */
		rq->waiting = 0;
		api_stream_feed(rq->stream, data, len, &job);
		if (job != NULL)
			stream_wait(s, rq, job);
		return;
	}
	if (rq->discard || rq->too_large || rq->bad_gzip || rq->oom)
		return;
	if (rq->gunzip != NULL) {
		int rc = enc_inflate(rq->gunzip, data, len, &rq->body);

		if (rc == KI_ELIMIT)
			rq->too_large = 1;
		else if (rc == KI_EINVAL)
			rq->bad_gzip = 1;
		else if (rc != KI_OK)
			rq->oom = 1;
	} else if (ki_buf_append(&rq->body, data, len) != KI_OK) {
		rq->too_large = 1;
	}
	if (rq->too_large || rq->bad_gzip || rq->oom)
		ki_buf_free(&rq->body);
}

/* A watch asked with HEAD: the headers its GET would have, and no
 * stream. Its selectors are checked as the GET's would be. */
static enum MHD_Result
head_watch(struct MHD_Connection *c, req_ctx *rq, watch_params *w)
{
	api_query q;
	api_resp *r = &rq->resp;
	enum MHD_Result ret;

	memset(&q, 0, sizeof(q));
	if (api_query_parse(&q, w->kind, w->label_selector, w->field_selector,
	    r) == KI_OK) {
		api_query_free(&q);
		r->code = 200;
		r->cache_control = "no-store";
		/* The GET's Warnings too (a parameter a watch does not read). */
		for (const char *t = w->warnings; *t != '\0'; t += strlen(t) + 1)
			api_resp_warn(r, "%s", t);
	}
	free(w->label_selector);
	free(w->field_selector);
	ret = send_resp(c, rq, r, 0);
	return ret;
}

static enum MHD_Result
handler(void *cls, struct MHD_Connection *c, const char *url,
	const char *method, const char *version, const char *upload_data,
	size_t *upload_data_size, void **con_cls)
{
	http_server *s = cls;
	req_ctx *rq = *con_cls;
	api_resp *rp;
	enum MHD_Result ret;
	watch_params *watch = NULL;
	int close_after = 0;

	if (rq == NULL)
		return MHD_NO;
	if (!rq->started) {
		if (first_call(s, c, rq, url, method, version)) {
			read_done(rq);
			close_after = 1;
			rp = &rq->resp;
			goto answer;
		}
		/* Answer on the next call: libmicrohttpd closes the
		 * connection of an answer queued on the first call, which
		 * keep-alive clients pay for in new connections. */
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		take_body(s, rq, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	read_done(rq);
	rp = &rq->resp;
	if (rq->waiting) {
		/* Resumed: the group commit is done and rp is the answer (or,
		 * for a stream, its chunk is written). */
		if (!__atomic_load_n(&rq->answered, __ATOMIC_ACQUIRE))
			return MHD_YES;
		rq->waiting = 0;
		if (rq->stream == NULL)
			goto answer;
	}
	/* A chunked body's trailer section is read by no one here, and
	 * libmicrohttpd 0.9.75 ends it at a line starting with ':' (the lines
	 * after it then run as another request, which a proxy in front reads
	 * as trailers) or a bare LF, unseen: a request with trailers is
	 * refused whole and its connection closed. A streamed upload keeps
	 * the chunks it wrote before the body ended, as when its client goes
	 * away. */
	if (MHD_get_connection_values(c, MHD_FOOTER_KIND, NULL, NULL) > 0) {
		api_stream_free(rq->stream);
		rq->stream = NULL;
		api_resp_free(rp);
		api_resp_init(rp);
		api_resp_fail(rp, 400, "BadRequest", NULL, "the chunked body "
		    "ends with a trailer section, which is not read: send the "
		    "fields as headers");
		close_after = 1;
		goto answer;
	}
	if (rq->stream != NULL) {
		api_job *job = NULL;

		api_stream_end(rq->stream, &job);
		if (job != NULL) {
			stream_wait(s, rq, job);
			return MHD_YES;
		}
		api_stream_answer(rq->stream, rp);
		api_stream_free(rq->stream);
		rq->stream = NULL;
		goto answer;
	}
	if (rq->discard)
		goto answer;
	if (rq->gunzip != NULL && !rq->too_large && !rq->oom &&
	    enc_inflate_end(rq->gunzip) != KI_OK)
		rq->bad_gzip = 1;
	if (rq->too_large) {
		api_status st;

		api_status_init(&st);
		api_status_fail(&st, 413, "RequestEntityTooLarge", "the request body "
		    "is larger than the limit of %zu bytes%s", rq->limit,
		    rq->gunzip != NULL ? " (decompressed)" : "");
		api_resp_status(rp, &st);
		api_status_free(&st);
	} else if (rq->bad_gzip) {
		api_resp_fail(rp, 400, "BadRequest", NULL, "the request body is "
		    "not valid gzip (Content-Encoding: gzip)");
	} else if (rq->oom) {
		api_resp_fail(rp, 503, "ServiceUnavailable", NULL, "out of memory "
		    "while decompressing the request body");
	} else {
		lookup lk = { c };
		http_req req;

		memset(&req, 0, sizeof(req));
		req.method = method;
		req.path = url;
		req.arg = get_arg;
		req.header = get_header;
		req.arg_names = get_arg_names;
		req.cls = &lk;
		req.body = rq->body.data ? rq->body.data : "";
		req.body_len = rq->body.len;
		req.loopback = is_loopback(c);
		router_dispatch(s->rt, &req, rp, &watch);
		if (watch != NULL && rq->head) {
			ret = head_watch(c, rq, watch);
			free(watch);
			goto done;
		}
		if (watch != NULL) {
			rq->status = 200;
			watch->http11 = strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
			ret = (enum MHD_Result)watch_start(s->hub, c, watch);
			free(watch);
			ki_buf_free(&rq->body);
			return ret;
		}
		if (rp->job != NULL) {
			/* Wait for the batch's commit without holding a thread:
			 * suspend first, so the wake-up cannot come before. */
			rq->waiting = 1;
			MHD_suspend_connection(c);
			api_create_submit(s->rt->api, rp, commit_done, rq);
			return MHD_YES;
		}
	}
answer:
	ret = send_resp(c, rq, rp, close_after);
done:
	api_resp_free(rp);
	api_resp_init(rp);
	ki_buf_free(&rq->body);
	return ret;
}

static void
completed(void *cls, struct MHD_Connection *c, void **con_cls,
	enum MHD_RequestTerminationCode toe)
{
	http_server *s = cls;
	req_ctx *rq = *con_cls;
	server_metrics *m = s->rt->metrics;
	uint64_t now, us;
	int cls_idx;
	conn_track *ct;

	if (rq == NULL)
		return;
	now = now_us();
	us = now - rq->start_us;
	/* The next request on this connection may start arriving now. */
	ct = rq->started ? rq->ct : track_of(c);
	if (ct != NULL) {
		__atomic_store_n(&ct->phase_us, now, __ATOMIC_RELAXED);
		__atomic_store_n(&ct->body_bytes, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&ct->seq, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&ct->reading, 1, __ATOMIC_RELEASE);
	}
	cls_idx = rq->status >= 100 && rq->status < 600 ? rq->status / 100 : 0;
	__atomic_add_fetch(&m->requests[cls_idx], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->bytes_out, rq->bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->duration_us, us, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&m->in_flight, 1, __ATOMIC_RELAXED);
	log_info("%s \"%s\" %d %zu %lluus%s", rq->method[0] ? rq->method : "-",
	    rq->target, rq->status, rq->bytes, (unsigned long long)us,
	    toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted");
	ki_buf_free(&rq->body);
	api_stream_free(rq->stream);
	enc_inflate_free(rq->gunzip);
	api_resp_free(&rq->resp);
	free(rq);
	*con_cls = NULL;
}

/* Keeps the deadline records of the connections (libmicrohttpd tells of
 * each before it closes the socket, so a record's fd is never another
 * connection's). */
static void
conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
	enum MHD_ConnectionNotificationCode code)
{
	http_server *s = cls;
	conn_track *t = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
		    MHD_CONNECTION_INFO_CONNECTION_FD);

		/* Without a record the connection has only the idle timeout. */
		if (ci == NULL || (t = calloc(1, sizeof(*t))) == NULL)
			return;
		t->fd = ci->connect_fd;
		t->phase_us = now_us();
		t->reading = 1;
		pthread_mutex_lock(&s->mu);
		t->next = s->conns;
		if (s->conns != NULL)
			s->conns->prev = t;
		s->conns = t;
		pthread_mutex_unlock(&s->mu);
		*socket_context = t;
		return;
	}
	if (t == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	if (t->prev != NULL)
		t->prev->next = t->next;
	else
		s->conns = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	pthread_mutex_unlock(&s->mu);
	free(t);
	*socket_context = NULL;
}

/* Closes the connections whose request has been arriving for longer than
 * the request timeout (plus a second per HTTP_MIN_BODY_RATE bytes of
 * body): the idle timeout alone lets a client that sends a byte now and
 * then hold a connection for ever. A request has begun when the socket
 * received data after the previous answer (TCP_INFO), so time spent idle
 * between requests does not count. Runs on the acceptor, once a second. */
static void
reap_slow(http_server *s)
{
	uint64_t now = now_us();

	if (now - s->last_scan_us < 1000000)
		return;
	s->last_scan_us = now;
	pthread_mutex_lock(&s->mu);
	for (conn_track *t = s->conns; t != NULL; t = t->next) {
		uint32_t seq;
		uint64_t limit;

		if (!__atomic_load_n(&t->reading, __ATOMIC_ACQUIRE) || t->cut)
			continue;
		seq = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE);
		if (seq != t->seen_seq) {
			t->seen_seq = seq;
			t->begun_us = 0;
		}
		if (t->begun_us == 0) {
			struct tcp_info ti;
			socklen_t len = sizeof(ti);
			uint64_t since_ms = (now - __atomic_load_n(&t->phase_us,
			    __ATOMIC_RELAXED)) / 1000;

			memset(&ti, 0, sizeof(ti));
			if (getsockopt(t->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
			    (uint64_t)ti.tcpi_last_data_recv + 10 >= since_ms)
				continue;
			t->begun_us = now - (uint64_t)ti.tcpi_last_data_recv * 1000;
		}
		limit = s->request_timeout_us + __atomic_load_n(&t->body_bytes,
		    __ATOMIC_RELAXED) / HTTP_MIN_BODY_RATE * 1000000;
		if (now - t->begun_us > limit) {
			log_info("http: closing a connection whose request has been "
			    "arriving for %llu s", (unsigned long long)
			    ((now - t->begun_us) / 1000000));
			shutdown(t->fd, SHUT_RDWR);
			t->cut = 1;
		}
	}
	pthread_mutex_unlock(&s->mu);
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	/* A response ended on purpose (a watch whose client went away or
	 * read nothing for the connection timeout, a failure the daemon has
	 * logged itself): not worth a warning per connection. */
	if (strstr(line, "application error generating response") != NULL) {
		log_debug("http: %s", line);
		return;
	}
	log_warn("http: %s", line);
}

/* Frees what http_start set up besides the daemon and the thread. */
static void
http_free(http_server *s)
{
	if (s->lfd >= 0)
		close(s->lfd);
	for (int i = 0; i < 2; i++)
		if (s->wake[i] >= 0)
			close(s->wake[i]);
	ki_buf_free(&s->cert);
	if (s->key.data != NULL)
		OPENSSL_cleanse(s->key.data, s->key.len);
	ki_buf_free(&s->key);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Accepts connections and gives each to the pool. When every pool thread
 * accepts from a shared socket, whichever wakes first takes a burst of
 * connections: a client opening 32 keep-alive connections at once left all
 * of them on one thread in 2 of 4 runs (42,000 and 71,000 GET/s, against
 * 101,000-106,000 when they were spread). MHD_add_connection spreads them
 * over the threads by descriptor. */
static void *
accept_loop(void *arg)
{
	http_server *s = arg;

	ki_thread_name("ki-accept");
	for (;;) {
		struct pollfd p[2] = { { s->lfd, POLLIN, 0 },
			{ s->wake[0], POLLIN, 0 } };
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd;

		int n = poll(p, 2, 1000);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("http: poll on the listening socket: %s",
			    strerror(errno));
			return NULL;
		}
		if (p[1].revents != 0)
			return NULL;
		reap_slow(s);
		if (n == 0)
			continue;
		fd = accept4(s->lfd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				log_warn("http: accept: %s", strerror(errno));
				usleep(10000);  /* until descriptors free up */
			}
			continue;   /* EAGAIN, ECONNABORTED, EINTR, ... */
		}
		/* On failure (a limit reached) MHD closes the socket. */
		(void)MHD_add_connection(s->d, fd, (struct sockaddr *)&ss, len);
	}
}

/* A listening socket on ss; -1 with errno on failure. */
static int
listen_on(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0), on = 1;

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
	    (ss->ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &on, sizeof(on)) != 0) ||
	    bind(fd, (const struct sockaddr *)ss, len) != 0 ||
	    listen(fd, SOMAXCONN) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int
http_start(http_server **out, const ki_config *cfg, router *rt,
	watch_hub *hub)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	char host[256];
	const char *colon = strrchr(cfg->listen, ':');
	unsigned port = (unsigned)strtoul(colon + 1, NULL, 10);
	unsigned threads = (unsigned)cfg->threads;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
	    MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET;
	http_server *s;
	struct MHD_OptionItem tls[3] = { { MHD_OPTION_END, 0, NULL } };

	*out = NULL;
	memset(&ss, 0, sizeof(ss));
	snprintf(host, sizeof(host), "%.*s", (int)(colon - cfg->listen),
	    cfg->listen);
	if (host[0] == '[') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)(void *)&ss;

		host[strlen(host) - 1] = '\0';
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
			return KI_EINVAL;
		sslen = sizeof(*in6);
		flags |= MHD_USE_IPv6;
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)(void *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
			return KI_EINVAL;
		sslen = sizeof(*in);
	}
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (unsigned)n : 1;
		/* Over etcd a request's thread waits for round trips (a list
		 * for the Range that confirms the newest revision, which the
		 * lists waiting at once share): more threads keep the CPUs
		 * busy meanwhile. */
		if (strcmp(cfg->store, "etcd") == 0 && threads < 16)
			threads = threads * 4 < 16 ? 16 : threads * 4;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return KI_ENOMEM;
	s->rt = rt;
	s->hub = hub;
	s->lfd = s->wake[0] = s->wake[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	s->chunked_ok = cfg->accept_chunked_bodies;
	s->request_timeout_us = (uint64_t)(cfg->request_timeout > 0 ?
	    cfg->request_timeout : cfg->connection_timeout) * 1000000;
	ki_buf_init(&s->cert);
	ki_buf_init(&s->key);
	if (cfg->tls_cert[0] != '\0') {
		if (read_pem(cfg->tls_cert, &s->cert) != KI_OK ||
		    read_pem(cfg->tls_key, &s->key) != KI_OK) {
			log_error("cannot read the TLS certificate or key");
			http_free(s);
			return KI_EIO;
		}
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0,
			s->cert.data };
		tls[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0,
			s->key.data };
		tls[2] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	}
	if ((s->lfd = listen_on(&ss, sslen)) < 0) {
		log_error("http: cannot listen on %s: %s", cfg->listen,
		    strerror(errno));
		http_free(s);
		return KI_EIO;
	}
	sslen = sizeof(ss);
	if (getsockname(s->lfd, (struct sockaddr *)&ss, &sslen) != 0 ||
	    pipe2(s->wake, O_CLOEXEC) != 0) {
		http_free(s);
		return KI_EIO;
	}
	s->port = ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)(void *)&ss)->sin6_port :
	    ((struct sockaddr_in *)(void *)&ss)->sin_port);
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, s,
	    MHD_OPTION_ARRAY, tls,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	    MHD_OPTION_THREAD_POOL_SIZE, threads,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_per_ip,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->connection_timeout,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, s,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
	    MHD_OPTION_URI_LOG_CALLBACK, uri_log, s,
	    MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s,
	    MHD_OPTION_END);
	if (s->d == NULL) {
		http_free(s);
		return KI_EIO;
	}
	if (pthread_create(&s->acceptor, NULL, accept_loop, s) != 0) {
		MHD_stop_daemon(s->d);
		http_free(s);
		return KI_EIO;
	}
	s->accepting = 1;
	*out = s;
	return KI_OK;
}

unsigned
http_port(const http_server *s)
{
	return s->port;
}

void
http_stop(http_server *s)
{
	if (s == NULL)
		return;
	/* Stop accepting first; the pool threads finish what they hold. */
	if (s->accepting) {
		ssize_t w;

		do
			w = write(s->wake[1], "x", 1);
		while (w < 0 && errno == EINTR);
		pthread_join(s->acceptor, NULL);
		s->accepting = 0;
	}
	close(s->lfd);
	s->lfd = -1;
	if (s->hub != NULL)
		watch_hub_shutdown(s->hub);
	/* Requests being answered finish first (up to 30 s): an upload that
	 * was committed gets its answer. */
	for (int i = 0; i < 3000 &&
	    __atomic_load_n(&s->rt->metrics->in_flight, __ATOMIC_RELAXED) > 0; i++)
		usleep(10000);
	MHD_stop_daemon(s->d);
	http_free(s);
}
