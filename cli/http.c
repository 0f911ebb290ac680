/* cli/http.c — the CLI's HTTP client over libcurl: one keep-alive connection
 * to the server, bearer token, retries of idempotent requests, and line
 * streaming for watches. */
#include "cli/http.h"

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cli_http {
	CURL *curl;
	char *server;
	char *auth;   /* "Authorization: Bearer …" or NULL */
	const char *accept; /* the Accept header; NULL: application/json */
	char errbuf[CURL_ERROR_SIZE];
};

/* One write target: a bounded buffer, or a line splitter. */
typedef struct sink {
	ki_buf *body;
	int too_big;
	/* streaming */
	CURL *curl;
	cli_line_fn fn;
	void *arg;
	ki_buf line;
	int streaming;  /* -1 undecided, 1 lines, 0 plain body */
	int stopped;
} sink;

static char *
dup_str(const char *s)
{
	size_t n = strlen(s);
	char *p = malloc(n + 1);

	if (p != NULL)
		memcpy(p, s, n + 1);
	return p;
}

int
cli_http_new(const char *server, const char *token, cli_http **out)
{
	cli_http *h;
	size_t n;
	ki_buf auth;

	*out = NULL;
	if (token != NULL && strpbrk(token, "\r\n") != NULL)
		return KI_EINVAL;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return KI_ENOMEM;
	h->server = dup_str(server);
	h->curl = curl_easy_init();
	if (h->server == NULL || h->curl == NULL)
		goto fail;
	n = strlen(h->server);
	while (n > 0 && h->server[n - 1] == '/')
		h->server[--n] = '\0';
	if (token != NULL && *token != '\0') {
		ki_buf_init(&auth);
		ki_buf_printf(&auth, "Authorization: Bearer %s", token);
		h->auth = ki_buf_steal(&auth, NULL);
		if (h->auth == NULL)
			goto fail;
	}
	*out = h;
	return KI_OK;
fail:
	cli_http_free(h);
	return KI_ENOMEM;
}

void
cli_http_free(cli_http *h)
{
	if (h == NULL)
		return;
	if (h->curl != NULL)
		curl_easy_cleanup(h->curl);
	if (h->auth != NULL) {
		/* The header holds the secret: wipe it before freeing. */
		OPENSSL_cleanse(h->auth, strlen(h->auth));
		free(h->auth);
	}
	free(h->server);
	free(h);
}

const char *
cli_http_server(const cli_http *h)
{
	return h->server;
}

const char *
cli_http_error(const cli_http *h)
{
	return h->errbuf;
}

static int
sink_lines(sink *s, const char *p, size_t n)
{
	size_t i, start = 0;

	for (i = 0; i < n && !s->stopped; i++) {
		if (p[i] != '\n')
			continue;
		ki_buf_append(&s->line, p + start, i - start);
		start = i + 1;
		if (s->line.oom)
			return -1;
		if (s->line.len > 0 && s->line.data[s->line.len - 1] == '\r')
			s->line.data[--s->line.len] = '\0';
		if (s->line.len > 0 &&
		    s->fn(s->arg, s->line.data, s->line.len) != 0)
			s->stopped = 1;
		ki_buf_reset(&s->line);
	}
	if (!s->stopped && start < n)
		ki_buf_append(&s->line, p + start, n - start);
	return s->line.oom ? -1 : 0;
}

static size_t
on_write(char *p, size_t size, size_t nmemb, void *arg)
{
	sink *s = arg;
	size_t n = size * nmemb;

	if (s->streaming < 0) {
		long code = 0;

		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &code);
		s->streaming = code == 200;
	}
	if (s->streaming == 1) {
		if (sink_lines(s, p, n) != 0)
			return 0;
		/* Returning less than n ends the transfer: fn asked to stop. */
		return s->stopped ? 0 : n;
	}
	if (s->body->len + n > CLI_HTTP_MAX_BODY) {
		s->too_big = 1;
		return 0;
	}
	if (ki_buf_append(s->body, p, n) != KI_OK)
		return 0;
	return n;
}

/* Whether a transfer failure means the server could not be reached (as
 * opposed to a local problem). */
static int
unreachable(CURLcode rc)
{
	return rc != CURLE_OK && rc != CURLE_OUT_OF_MEMORY &&
	    rc != CURLE_WRITE_ERROR;
}

static void
pause_ms(long ms)
{
	struct timespec ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

/* Runs one transfer with the options every request shares. */
static CURLcode
perform(cli_http *h, const char *method, const char *path, const char *ctype,
	const char *body, size_t len, sink *s, int stream, long *status)
{
	struct curl_slist *hdrs = NULL, *t;
	ki_buf url, ct;
	CURLcode rc = CURLE_OUT_OF_MEMORY;

	ki_buf_init(&url);
	ki_buf_init(&ct);
	ki_buf_printf(&url, "%s%s", h->server, path);
	if (url.oom)
		goto out;
	curl_easy_reset(h->curl);
	h->errbuf[0] = '\0';
	curl_easy_setopt(h->curl, CURLOPT_URL, url.data);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "kernelindex-cli/0.1");
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, s);
	if (!stream) {
		/* A stalled server fails the request instead of hanging it. */
		curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_TIME, 300L);
	}
	ki_buf_printf(&ct, "Accept: %s", h->accept != NULL ? h->accept :
	    "application/json");
	t = ct.oom ? NULL : curl_slist_append(hdrs, ct.data);
	ki_buf_reset(&ct);
	if (t == NULL)
		goto out;
	hdrs = t;
	if (h->auth != NULL) {
		t = curl_slist_append(hdrs, h->auth);
		if (t == NULL)
			goto out;
		hdrs = t;
	}
	if (ctype != NULL) {
		ki_buf_printf(&ct, "Content-Type: %s", ctype);
		if (ct.oom || (t = curl_slist_append(hdrs, ct.data)) == NULL)
			goto out;
		hdrs = t;
	}
	/* No "Expect: 100-continue" round trip before large bodies. */
	t = curl_slist_append(hdrs, "Expect:");
	if (t == NULL)
		goto out;
	hdrs = t;
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdrs);
	if (body != NULL) {
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)len);
	}
	if (strcmp(method, "GET") != 0)
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
	rc = curl_easy_perform(h->curl);
	*status = 0;
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, status);
out:
	curl_slist_free_all(hdrs);
	ki_buf_free(&url);
	ki_buf_free(&ct);
	return rc;
}

void
cli_http_set_accept(cli_http *h, const char *accept)
{
	h->accept = accept;
}

int
cli_http_request(cli_http *h, const char *method, const char *path,
	const char *ctype, const char *body, size_t len, ki_buf *resp,
	long *status)
{
	size_t start = resp->len;
	int attempt;
	sink s;

	for (attempt = 1;; attempt++) {
		CURLcode rc;

		memset(&s, 0, sizeof(s));
		s.body = resp;
		s.streaming = 0;
		resp->len = start;
		if (resp->data != NULL)
			resp->data[start] = '\0';
		rc = perform(h, method, path, ctype, body, len, &s, 0, status);
		if (s.too_big)
			return KI_ELIMIT;
		if (rc == CURLE_OUT_OF_MEMORY || resp->oom)
			return KI_ENOMEM;
		if (rc == CURLE_OK && *status != 502 && *status != 503 &&
		    *status != 504)
			return KI_OK;
		if (attempt >= CLI_HTTP_ATTEMPTS)
			return rc == CURLE_OK ? KI_OK : KI_EIO;
		if (rc != CURLE_OK && !unreachable(rc))
			return KI_EIO;
		pause_ms(250L << attempt);
	}
}

int
cli_http_stream(cli_http *h, const char *path, cli_line_fn fn, void *arg,
	ki_buf *resp, long *status)
{
	CURLcode rc;
	sink s;
	int ret = KI_OK;

	memset(&s, 0, sizeof(s));
	s.body = resp;
	s.curl = h->curl;
	s.fn = fn;
	s.arg = arg;
	s.streaming = -1;
	ki_buf_init(&s.line);
	rc = perform(h, "GET", path, NULL, NULL, 0, &s, 1, status);
	if (s.streaming == 1 && !s.stopped && s.line.len > 0)
		fn(arg, s.line.data, s.line.len);
	if (rc == CURLE_OUT_OF_MEMORY || s.line.oom || resp->oom)
		ret = KI_ENOMEM;
	else if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && s.stopped))
		ret = s.too_big ? KI_ELIMIT : KI_EIO;
	ki_buf_free(&s.line);
	return ret;
}

int
cli_url_escape(ki_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~') {
			ki_buf_putc(b, (char)c);
		} else {
			ki_buf_putc(b, '%');
			ki_buf_putc(b, hex[c >> 4]);
			ki_buf_putc(b, hex[c & 15]);
		}
	}
	return b->oom ? KI_ENOMEM : KI_OK;
}
