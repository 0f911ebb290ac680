/* store/etcd_http.c — requests to etcd's v3 JSON gateway (the grpc-gateway
 * every etcd member serves on its client URL) through libcurl: a pool of
 * kept-alive connections, failover between endpoints, TLS and
 * authentication, and the base64 that keys and values travel in. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/thread.h"
#include "store/etcd_int.h"

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	ki_buf *b = arg;

	if (ki_buf_append(b, p, size * n) != KI_OK)
		return 0;
	return size * n;
}

int
et_unb64(json_object *o, const char *name, char **out, size_t *len)
{
	json_object *v;
	const char *s;
	size_t n;
	int got;
	char *p;

	*out = NULL;
	*len = 0;
	if (!json_object_object_get_ex(o, name, &v))
		return KI_OK;
	s = json_object_get_string(v);
	n = strlen(s);
	if (n % 4 != 0)
		return KI_ESTORE;
	if ((p = malloc(n / 4 * 3 + 1)) == NULL)
		return KI_ENOMEM;
	got = EVP_DecodeBlock((unsigned char *)p, (const unsigned char *)s,
	    (int)n);
	if (got < 0) {
		free(p);
		return KI_ESTORE;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	if (n > 0 && s[n - 1] == '=')
		got--;
	if (n > 1 && s[n - 2] == '=')
		got--;
	p[got] = '\0';
	*out = p;
	*len = (size_t)got;
	/* A value may be stored compressed (etcd_codec.c). */
	if (strcmp(name, "value") == 0) {
		int rc = et_codec_get(out, len);

		if (rc != KI_OK) {
			free(*out);
			*out = NULL;
			*len = 0;
		}
		return rc;
	}
	return KI_OK;
}

int64_t
et_int(json_object *o, const char *name)
{
	json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, name, &v))
		return 0;
	/* The gateway writes 64-bit integers as strings. */
	return json_object_get_int64(v);
}

static int
conn_setup(et_store *e, et_conn *c)
{
	if ((c->curl = curl_easy_init()) == NULL)
		return KI_ENOMEM;
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS,
	    e->timeout_ms < 2000 ? e->timeout_ms : 2000L);
	curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->resp);
	if (e->cacert != NULL)
		curl_easy_setopt(c->curl, CURLOPT_CAINFO, e->cacert);
	if (e->cert != NULL)
		curl_easy_setopt(c->curl, CURLOPT_SSLCERT, e->cert);
	if (e->key != NULL)
		curl_easy_setopt(c->curl, CURLOPT_SSLKEY, e->key);
	ki_buf_init(&c->resp);
	return KI_OK;
}

static void
conn_free(et_conn *c)
{
	if (c == NULL)
		return;
	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->hdrs);
	free(c->hdr_token);
	ki_buf_free(&c->resp);
	free(c);
}

/* A connection for one transaction (or NULL without memory): an idle one
 * or a new one. Give it back with et_conn_put(). */
et_conn *
et_conn_get(et_store *e)
{
	et_conn *c;

	pthread_mutex_lock(&e->mu);
	c = e->idle;
	if (c != NULL) {
		e->idle = c->next;
		e->nidle--;
	}
	pthread_mutex_unlock(&e->mu);
	if (c != NULL)
		return c;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	if (conn_setup(e, c) != KI_OK) {
		conn_free(c);
		return NULL;
	}
	return c;
}

void
et_conn_timeout(et_store *e, et_conn *c, long ms)
{
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, ms > 0 ? ms :
	    e->timeout_ms);
}

void
et_conn_put(et_store *e, et_conn *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&e->mu);
	if (e->nidle < ET_CONNS) {
		c->next = e->idle;
		e->idle = c;
		e->nidle++;
		c = NULL;
	}
	pthread_mutex_unlock(&e->mu);
	conn_free(c);
}

/* The headers for the current auth token (etcd reads it from the
 * Authorization header, without a scheme). */
static int
conn_headers(et_store *e, et_conn *c)
{
	char *tok = NULL;
	struct curl_slist *h;
	int rc = KI_OK;

	pthread_mutex_lock(&e->mu);
	if (e->token != NULL && (tok = strdup(e->token)) == NULL)
		rc = KI_ENOMEM;
	pthread_mutex_unlock(&e->mu);
	if (rc != KI_OK)
		return rc;
	if (c->hdrs != NULL && ((tok == NULL && c->hdr_token == NULL) ||
	    (tok != NULL && c->hdr_token != NULL &&
	    strcmp(tok, c->hdr_token) == 0))) {
		free(tok);
		return KI_OK;
	}
	curl_slist_free_all(c->hdrs);
	c->hdrs = NULL;
	free(c->hdr_token);
	c->hdr_token = tok;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	if (h != NULL && tok != NULL) {
		ki_buf b;

		ki_buf_init(&b);
		ki_buf_printf(&b, "Authorization: %s", tok);
		if (b.oom || (h = curl_slist_append(h, b.data)) == NULL)
			rc = KI_ENOMEM;
		ki_buf_free(&b);
	}
	if (h == NULL)
		rc = KI_ENOMEM;
	c->hdrs = h;
	return rc;
}

/* One POST to the endpoint e->cur, then the others in turn while the
 * connection fails. *status: the HTTP status. */
static int
post_once(et_store *e, et_conn *c, const char *path, const char *body,
	size_t len, long *status)
{
	size_t start, n = e->nendpoints;
	int rc = KI_EIO;

	pthread_mutex_lock(&e->mu);
	start = e->cur;
	pthread_mutex_unlock(&e->mu);
	for (size_t i = 0; i < n; i++) {
		size_t at = (start + i) % n;
		ki_buf url;
		CURLcode cc;

		ki_buf_init(&url);
		ki_buf_printf(&url, "%s%s", e->endpoints[at], path);
		if (url.oom)
			return KI_ENOMEM;
		ki_buf_reset(&c->resp);
		curl_easy_setopt(c->curl, CURLOPT_URL, url.data);
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->hdrs);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)len);
		cc = curl_easy_perform(c->curl);
		ki_buf_free(&url);
		if (cc == CURLE_OK) {
			curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
			if (at != start) {
				pthread_mutex_lock(&e->mu);
				e->cur = at;
				pthread_mutex_unlock(&e->mu);
			}
			return c->resp.oom ? KI_ENOMEM : KI_OK;
		}
		if (cc == CURLE_WRITE_ERROR)
			return KI_ENOMEM;
	}
	return rc;
}

/* Asks etcd for an auth token (etcd's /v3/auth/authenticate). */
static int
authenticate(et_store *e, et_conn *c)
{
	ki_buf b;
	json_object *o = NULL, *tok;
	long status = 0;
	int rc;

	ki_buf_init(&b);
	ki_buf_puts(&b, "{\"name\":");
	ki_buf_json_string(&b, e->user, strlen(e->user));
	ki_buf_puts(&b, ",\"password\":");
	ki_buf_json_string(&b, e->password,
	    e->password ? strlen(e->password) : 0);
	ki_buf_putc(&b, '}');
	if (b.oom) {
		rc = KI_ENOMEM;
		goto out;
	}
	curl_slist_free_all(c->hdrs);
	c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	free(c->hdr_token);
	c->hdr_token = NULL;
	if ((rc = post_once(e, c, "/v3/auth/authenticate", b.data, b.len,
	    &status)) != KI_OK)
		goto out;
	o = json_tokener_parse(c->resp.data != NULL ? c->resp.data : "");
	if (status != 200 || o == NULL ||
	    !json_object_object_get_ex(o, "token", &tok)) {
		rc = KI_ESTORE;
		goto out;
	}
	pthread_mutex_lock(&e->mu);
	free(e->token);
	e->token = strdup(json_object_get_string(tok));
	rc = e->token != NULL ? KI_OK : KI_ENOMEM;
	pthread_mutex_unlock(&e->mu);
	curl_slist_free_all(c->hdrs);
	c->hdrs = NULL;
out:
	json_object_put(o);
	/* The password travelled in it. */
	if (b.data != NULL)
		memset(b.data, 0, b.len);
	ki_buf_free(&b);
	return rc;
}

/* Whether etcd's error message m says it cannot serve for now: an
 * election (no leader, the leader changed), a request that timed out, a
 * member not ready or shedding load. */
static int
unavailable(const char *m)
{
	static const char *const says[] = {
		"no leader", "leader changed", "timed out", "timeout",
		"not capable", "too many requests", "unhealthy",
		"not started", "Unavailable", "stopped",
	};

	for (size_t i = 0; i < sizeof(says) / sizeof(says[0]); i++)
		if (strstr(m, says[i]) != NULL)
			return 1;
	return 0;
}

int
et_post(et_store *e, et_conn *c, const char *path, const char *body,
	size_t len, json_object **out)
{
	json_object *o = NULL, *err;
	long status = 0;
	int rc, tries = 0;

	*out = NULL;
	if (strcmp(path, "/v3/kv/range") == 0)
		__atomic_add_fetch(&e->nranges, 1, __ATOMIC_RELAXED);
	else if (strcmp(path, "/v3/kv/txn") == 0)
		__atomic_add_fetch(&e->ntxns, 1, __ATOMIC_RELAXED);
again:
	if ((rc = conn_headers(e, c)) != KI_OK)
		return rc;
	if ((rc = post_once(e, c, path, body, len, &status)) != KI_OK)
		return rc == KI_EIO ? KI_EUNAVAIL : rc;
	o = json_tokener_parse(c->resp.data != NULL ? c->resp.data : "");
	if (o == NULL)
		return status == 502 || status == 503 || status == 504 ?
		    KI_EUNAVAIL : KI_ESTORE;
	if (status == 200) {
		*out = o;
		return KI_OK;
	}
	rc = KI_ESTORE;
	if (json_object_object_get_ex(o, "error", &err)) {
		const char *m = json_object_get_string(err);

		if (strstr(m, "compacted") != NULL)
			rc = KI_EGONE;
		else if (e->user != NULL && tries++ == 0 &&
		    (strstr(m, "auth token") != NULL ||
		    strstr(m, "token") != NULL)) {
			json_object_put(o);
			if ((rc = authenticate(e, c)) != KI_OK)
				return rc;
			goto again;
		} else if (strstr(m, "too large") != NULL ||
		    strstr(m, "too many operations") != NULL)
			rc = KI_ELIMIT;
		else if (strstr(m, "space exceeded") != NULL)
			rc = et_quota_refused(e, m);
		else if (unavailable(m))
			rc = KI_EUNAVAIL;
	} else if (status == 502 || status == 503 || status == 504)
		rc = KI_EUNAVAIL;
	json_object_put(o);
	return rc;
}

int
et_post_read(et_store *e, et_conn *c, const char *path, const char *body,
	size_t len, json_object **out)
{
	int rc;

	for (int i = 0;; i++) {
		rc = et_post(e, c, path, body, len, out);
		if (rc != KI_EUNAVAIL || i + 1 >= ET_TRIES)
			break;
		et_backoff(i);
	}
	return rc;
}

void
et_backoff(int i)
{
	/* 100, 200, 400, 800, 800 ms: about an election's length in all. */
	usleep((useconds_t)(i < 3 ? 100000 << i : 800000));
}

static char *
dup_or_null(const char *s)
{
	return s != NULL && *s != '\0' ? strdup(s) : NULL;
}

int
et_http_open(et_store *e, const store_etcd_options *eo)
{
	const char *p = eo->endpoints;
	int rc = KI_OK;

	if (p == NULL || *p == '\0')
		return KI_EINVAL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	while (*p != '\0') {
		const char *end = strchr(p, ',');
		size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
		char **grown;

		while (n > 0 && p[n - 1] == '/')
			n--;
		if (n > 0) {
			grown = realloc(e->endpoints,
			    (e->nendpoints + 1) * sizeof(*grown));
			if (grown == NULL)
				return KI_ENOMEM;
			e->endpoints = grown;
			if ((e->endpoints[e->nendpoints] = strndup(p, n)) == NULL)
				return KI_ENOMEM;
			e->nendpoints++;
		}
		p += end != NULL ? (size_t)(end - p) + 1 : strlen(p);
	}
	if (e->nendpoints == 0)
		return KI_EINVAL;
	e->cacert = dup_or_null(eo->cacert);
	e->cert = dup_or_null(eo->cert);
	e->key = dup_or_null(eo->key);
	e->user = dup_or_null(eo->user);
	e->password = dup_or_null(eo->password);
	e->timeout_ms = eo->timeout_ms > 0 ? eo->timeout_ms : 10000;
	if (e->user != NULL) {
		et_conn *c = et_conn_get(e);

		if (c == NULL)
			return KI_ENOMEM;
		rc = authenticate(e, c);
		et_conn_put(e, c);
	}
	return rc;
}

void
et_http_close(et_store *e)
{
	while (e->idle != NULL) {
		et_conn *c = e->idle;

		e->idle = c->next;
		conn_free(c);
	}
	for (size_t i = 0; i < e->nendpoints; i++)
		free(e->endpoints[i]);
	free(e->endpoints);
	free(e->cacert);
	free(e->cert);
	free(e->key);
	free(e->user);
	if (e->password != NULL)
		memset(e->password, 0, strlen(e->password));
	free(e->password);
	free(e->token);
}

/* The snapshot's stream: one JSON object per chunk,
 * {"result":{"blob":"<base64>",...}}, back to back. */
typedef struct snap {
	json_tokener *tok;
	int fd, rc;
} snap;

static size_t
on_snapshot(char *p, size_t size, size_t n, void *arg)
{
	snap *sn = arg;
	size_t len = size * n, at = 0;

	while (at < len && sn->rc == KI_OK) {
		json_object *o, *res;
		enum json_tokener_error je;

		o = json_tokener_parse_ex(sn->tok, p + at, (int)(len - at));
		je = json_tokener_get_error(sn->tok);
		if (o == NULL && je == json_tokener_continue)
			return len;
		if (o == NULL) {
			sn->rc = KI_ESTORE;
			break;
		}
		at += json_tokener_get_parse_end(sn->tok);
		json_tokener_reset(sn->tok);
		if (json_object_object_get_ex(o, "result", &res)) {
			char *blob;
			size_t blen;

			if ((sn->rc = et_unb64(res, "blob", &blob, &blen)) == KI_OK) {
				for (size_t w = 0; w < blen && sn->rc == KI_OK;) {
					ssize_t k = write(sn->fd, blob + w, blen - w);

					if (k < 0 && errno == EINTR)
						continue;
					if (k <= 0)
						sn->rc = KI_EIO;
					else
						w += (size_t)k;
				}
				free(blob);
			}
		} else
			sn->rc = KI_ESTORE;
		json_object_put(o);
		while (at < len && (p[at] == '\n' || p[at] == '\r' || p[at] == ' '))
			at++;
	}
	return sn->rc == KI_OK ? len : 0;
}

int
et_snapshot(et_store *e, int fd)
{
	et_conn *c = et_conn_get(e);
	snap sn = { NULL, fd, KI_OK };
	long status = 0;
	int rc;

	if (c == NULL || (sn.tok = json_tokener_new()) == NULL) {
		et_conn_put(e, c);
		return KI_ENOMEM;
	}
	if ((rc = conn_headers(e, c)) == KI_OK) {
		curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_snapshot);
		curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &sn);
		curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 0L);
		rc = post_once(e, c, "/v3/maintenance/snapshot", "{}", 2, &status);
		curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->resp);
		curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, e->timeout_ms);
		if (rc == KI_ENOMEM && sn.rc != KI_OK)
			rc = sn.rc;
		if (rc == KI_OK)
			rc = sn.rc != KI_OK ? sn.rc : status == 200 ? KI_OK : KI_ESTORE;
	}
	json_tokener_free(sn.tok);
	et_conn_put(e, c);
	return rc;
}

/* ---- streams ---- */

typedef struct et_streamer {
	int (*stopped)(void *arg);
	void *arg;
	et_sock *sock;
} et_streamer;

/* The stream's socket is noted (so that et_sock_kick can end the
 * transfer at once: libcurl asks the progress callback about once a
 * second only while idle) and forgotten before it is closed. */
static curl_socket_t
on_stream_open(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	et_streamer *s = arg;
	curl_socket_t fd;

	(void)purpose;
	fd = socket(a->family, a->socktype, a->protocol);
	if (fd != CURL_SOCKET_BAD && s->sock != NULL) {
		pthread_mutex_lock(&s->sock->mu);
		s->sock->fd = fd;
		pthread_mutex_unlock(&s->sock->mu);
	}
	return fd;
}

static int
on_stream_close(void *arg, curl_socket_t fd)
{
	et_streamer *s = arg;

	if (s->sock != NULL) {
		pthread_mutex_lock(&s->sock->mu);
		if (s->sock->fd == fd)
			s->sock->fd = -1;
		pthread_mutex_unlock(&s->sock->mu);
	}
	return close(fd);
}

void
et_sock_kick(et_sock *k)
{
	pthread_mutex_lock(&k->mu);
	if (k->fd >= 0)
		shutdown(k->fd, SHUT_RDWR);
	pthread_mutex_unlock(&k->mu);
}

static int
on_stream_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
	curl_off_t d)
{
	et_streamer *s = arg;

	(void)a;
	(void)b;
	(void)c;
	(void)d;
	return s->stopped(s->arg);
}

int
et_stream(et_store *e, const char *path, const char *body, size_t len,
	size_t (*on_data)(char *p, size_t size, size_t n, void *arg),
	void *arg, int (*stopped)(void *arg), void *sarg, et_sock *sock)
{
	et_conn *c = et_conn_get(e);
	et_streamer st = { stopped, sarg, sock };
	long status = 0;
	int rc;

	if (c == NULL)
		return KI_ENOMEM;
	if ((rc = conn_headers(e, c)) == KI_OK) {
		curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, arg);
		curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 0L);
		curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION,
		    on_stream_progress);
		curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, &st);
		/* A connection of its own, whose socket et_sock_kick may
		 * shut down. */
		curl_easy_setopt(c->curl, CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(c->curl, CURLOPT_FORBID_REUSE, 1L);
		/* A member that vanishes without closing the connection
		 * ends the stream too. */
		curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPIDLE, 10L);
		curl_easy_setopt(c->curl, CURLOPT_TCP_KEEPINTVL, 5L);
		curl_easy_setopt(c->curl, CURLOPT_OPENSOCKETFUNCTION,
		    on_stream_open);
		curl_easy_setopt(c->curl, CURLOPT_OPENSOCKETDATA, &st);
		curl_easy_setopt(c->curl, CURLOPT_CLOSESOCKETFUNCTION,
		    on_stream_close);
		curl_easy_setopt(c->curl, CURLOPT_CLOSESOCKETDATA, &st);
		rc = post_once(e, c, path, body, len, &status);
	}
	/* The handle's settings are the stream's: not for the pool. */
	conn_free(c);
	return rc;
}

/* ---- following the counter key (/v3/watch) ---- */

struct et_follow {
	et_store *e;
	pthread_t thread;
	int stop;                /* under e->mu */
	void (*fn)(void *arg, uint64_t rv);
	void *arg;
	char *key;               /* P m/rv */
	size_t klen;
	int64_t next_rev;        /* resume from this etcd revision (0: now) */
	json_tokener *tok;
};

static int
follow_stopped(et_follow *f)
{
	int stop;

	pthread_mutex_lock(&f->e->mu);
	stop = f->stop;
	pthread_mutex_unlock(&f->e->mu);
	return stop;
}

static int
on_follow_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
	curl_off_t d)
{
	(void)a;
	(void)b;
	(void)c;
	(void)d;
	return follow_stopped(arg);
}

static uint64_t
be64(const char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | (uint8_t)p[i];
	return v;
}

/* One message of the watch stream: each event's value is the new
 * resourceVersion. */
static void
follow_message(et_follow *f, json_object *o)
{
	json_object *res, *evs;

	if (!json_object_object_get_ex(o, "result", &res))
		return;
	if (et_int(res, "compact_revision") > 0) {
		/* The revision to resume from is compacted: go on from now. */
		f->next_rev = 0;
		return;
	}
	if (!json_object_object_get_ex(res, "events", &evs))
		return;
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		json_object *kv;
		char *v = NULL;
		size_t vl = 0;

		if (!json_object_object_get_ex(json_object_array_get_idx(evs, i),
		    "kv", &kv))
			continue;
		f->next_rev = et_int(kv, "mod_revision") + 1;
		if (et_unb64(kv, "value", &v, &vl) == KI_OK && vl == 8)
			f->fn(f->arg, be64(v));
		free(v);
	}
}

static size_t
on_follow(char *p, size_t size, size_t n, void *arg)
{
	et_follow *f = arg;
	size_t len = size * n, at = 0;

	while (at < len) {
		json_object *o;

		while (at < len && (p[at] == '\n' || p[at] == '\r' || p[at] == ' '))
			at++;
		if (at == len)
			break;
		o = json_tokener_parse_ex(f->tok, p + at, (int)(len - at));
		if (o == NULL) {
			if (json_tokener_get_error(f->tok) == json_tokener_continue)
				return len;
			return 0;
		}
		at += json_tokener_get_parse_end(f->tok);
		json_tokener_reset(f->tok);
		follow_message(f, o);
		json_object_put(o);
	}
	return len;
}

static void *
follow_loop(void *arg)
{
	et_follow *f = arg;
	et_store *e = f->e;

	ki_thread_name("ki-etcd-watch");
	while (!follow_stopped(f)) {
		et_conn *c = et_conn_get(e);
		ki_buf b;
		long status = 0;

		if (c == NULL)
			break;
		ki_buf_init(&b);
		ki_buf_puts(&b, "{\"create_request\":{\"key\":");
		et_b64(&b, f->key, f->klen);
		if (f->next_rev > 0)
			ki_buf_printf(&b, ",\"start_revision\":\"%lld\"",
			    (long long)f->next_rev);
		ki_buf_puts(&b, "}}");
		json_tokener_reset(f->tok);
		if (!b.oom && conn_headers(e, c) == KI_OK) {
			curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_follow);
			curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, f);
			curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, 0L);
			curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
			curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION,
			    on_follow_progress);
			curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, f);
			(void)post_once(e, c, "/v3/watch", b.data, b.len, &status);
		}
		ki_buf_free(&b);
		/* The handle's settings are the stream's: not for the pool. */
		conn_free(c);
		/* The stream ended (a member went away): resume from the next
		 * revision after a pause. */
		for (int i = 0; i < 10 && !follow_stopped(f); i++)
			usleep(50000);
	}
	return NULL;
}

int
et_follow_start(et_store *e, const char *key, size_t klen,
	void (*fn)(void *arg, uint64_t rv), void *arg)
{
	et_follow *f;

	if (e->follow != NULL)
		return KI_EINVAL;
	if ((f = calloc(1, sizeof(*f))) == NULL)
		return KI_ENOMEM;
	f->e = e;
	f->fn = fn;
	f->arg = arg;
	if ((f->key = malloc(klen)) == NULL ||
	    (f->tok = json_tokener_new()) == NULL) {
		free(f->key);
		free(f);
		return KI_ENOMEM;
	}
	memcpy(f->key, key, klen);
	f->klen = klen;
	if (pthread_create(&f->thread, NULL, follow_loop, f) != 0) {
		json_tokener_free(f->tok);
		free(f->key);
		free(f);
		return KI_ENOMEM;
	}
	e->follow = f;
	return KI_OK;
}

void
et_follow_stop(et_store *e)
{
	et_follow *f = e->follow;

	if (f == NULL)
		return;
	pthread_mutex_lock(&e->mu);
	f->stop = 1;
	pthread_mutex_unlock(&e->mu);
	pthread_join(f->thread, NULL);
	json_tokener_free(f->tok);
	free(f->key);
	free(f);
	e->follow = NULL;
}

int
et_rv_mod_now(et_store *e, et_conn *c, const char *key, size_t klen,
	int64_t *mod)
{
	json_object *resp = NULL, *kvs;
	ki_buf b;
	int rc;

	*mod = 0;
	ki_buf_init(&b);
	ki_buf_puts(&b, "{\"key\":");
	et_b64(&b, key, klen);
	ki_buf_puts(&b, ",\"keys_only\":true}");
	rc = b.oom ? KI_ENOMEM :
	    et_post_read(e, c, "/v3/kv/range", b.data, b.len, &resp);
	ki_buf_free(&b);
	if (rc == KI_OK && json_object_object_get_ex(resp, "kvs", &kvs) &&
	    json_object_array_length(kvs) > 0)
		*mod = et_int(json_object_array_get_idx(kvs, 0), "mod_revision");
	json_object_put(resp);
	return rc;
}
