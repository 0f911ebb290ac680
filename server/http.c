/* server/http.c — libmicrohttpd glue: bodies, limits, headers, the access
 * log and metrics. The routes are in server/router.c. */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "lib/log.h"
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
};

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
	char method[12];
	char path[256];
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

/* Adds "Warning: 299 - "text"" with '"' and '\' escaped (RFC 7234). */
static void
add_warning(struct MHD_Response *mr, const char *text)
{
	ki_buf b;

	ki_buf_init(&b);
	ki_buf_puts(&b, "299 - \"");
	for (const char *p = text; *p; p++) {
		if (*p == '"' || *p == '\\')
			ki_buf_putc(&b, '\\');
		if ((unsigned char)*p >= 0x20)
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

static enum MHD_Result
send_resp(struct MHD_Connection *c, req_ctx *rq, api_resp *r, int head)
{
	struct MHD_Response *mr;
	enum MHD_Result ret;
	size_t len = 0;
	char *data;

	if (r->body.oom) {
		api_status st;

		api_status_init(&st);
		api_status_from_rc(&st, KI_ENOMEM, "answering");
		ki_buf_free(&r->body);
		api_resp_status(r, &st);
		api_status_free(&st);
	}
	if (r->spill != NULL && r->code != 304 && !head) {
		mr = spill_response(r, &len);
		if (mr == NULL)
			return MHD_NO;
		goto headers;
	}
	data = ki_buf_steal(&r->body, &len);
	if (data == NULL || r->code == 304 || head) {
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
	MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
	if (r->etag[0] != '\0')
		MHD_add_response_header(mr, "ETag", r->etag);
	if (r->cache_control != NULL)
		MHD_add_response_header(mr, "Cache-Control", r->cache_control);
	if (r->location[0] != '\0')
		MHD_add_response_header(mr, "Location", r->location);
	for (size_t i = 0; i < r->nwarnings; i++)
		add_warning(mr, r->warnings[i]);
	if (r->content_type != NULL &&
	    strncmp(r->content_type, "text/html", 9) == 0)
		MHD_add_response_header(mr, "Content-Security-Policy",
		    "default-src 'self'; img-src 'self' data:; object-src 'none'; "
		    "base-uri 'none'; frame-ancestors 'none'");
	rq->status = r->code;
	rq->bytes = len;
	ret = MHD_queue_response(c, (unsigned)r->code, mr);
	MHD_destroy_response(mr);
	return ret;
}

/* The group commit holding this request finished: wake its connection. */
static void
commit_done(struct store_job *job, int commit_rc)
{
	req_ctx *rq = job->cookie;

	(void)commit_rc;
	__atomic_store_n(&rq->answered, 1, __ATOMIC_RELEASE);
	MHD_resume_connection(rq->conn);
}

/* Suspends the connection until the stream's chunk job is committed. */
static void
stream_wait(http_server *s, req_ctx *rq, store_job *job)
{
	(void)s;
	rq->waiting = 1;
	__atomic_store_n(&rq->answered, 0, __ATOMIC_RELEASE);
	MHD_suspend_connection(rq->conn);
	api_stream_submit(rq->stream, job, commit_done, rq);
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

	if (rq == NULL) {
		const char *cl, *ct;

		rq = calloc(1, sizeof(*rq));
		if (rq == NULL)
			return MHD_NO;
		rq->start_us = now_us();
		rq->conn = c;
		api_resp_init(&rq->resp);
		ki_buf_init(&rq->body);
		snprintf(rq->method, sizeof(rq->method), "%s", method);
		snprintf(rq->path, sizeof(rq->path), "%s", url);
		*con_cls = rq;
		__atomic_add_fetch(&s->rt->metrics->in_flight, 1, __ATOMIC_RELAXED);
		ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    "Content-Type");
		rq->limit = router_body_limit(s->rt, ct);
		rq->body.limit = rq->limit;
		{
			lookup lk = { c };
			http_req req;

			memset(&req, 0, sizeof(req));
			req.method = method;
			req.path = url;
			req.arg = get_arg;
			req.header = get_header;
			req.cls = &lk;
			req.loopback = is_loopback(c);
			rq->stream = router_stream_open(s->rt, &req, &rq->resp);
			if (rq->stream != NULL)
				rq->limit = s->rt->api->lim->max_stream_body;
			else if (rq->resp.code != 0)
				rq->discard = 1;
		}
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    "Content-Length");
		if (cl != NULL && strtoull(cl, NULL, 10) > rq->limit && !rq->discard) {
			rq->too_large = 1;
			api_stream_free(rq->stream);
			rq->stream = NULL;
		}
		/* Answer on the next call: queueing now would close the
		 * connection (measured: 5x slower under keep-alive). */
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		if (rq->stream != NULL) {
			store_job *job = NULL;

			/* Called again after a chunk's commit woke us. */
			rq->waiting = 0;
			api_stream_feed(rq->stream, upload_data, *upload_data_size,
			    &job);
			*upload_data_size = 0;
			if (job != NULL)
				stream_wait(s, rq, job);
			return MHD_YES;
		}
		if (rq->discard) {
			*upload_data_size = 0;
			return MHD_YES;
		}
		if (!rq->too_large &&
		    ki_buf_append(&rq->body, upload_data, *upload_data_size) !=
		    KI_OK)
			rq->too_large = 1;
		*upload_data_size = 0;
		if (rq->too_large)
			ki_buf_free(&rq->body);
		return MHD_YES;
	}
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
	if (rq->stream != NULL) {
		store_job *job = NULL;

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
	if (rq->too_large) {
		api_status st;

		api_status_init(&st);
		api_status_fail(&st, 413, "RequestEntityTooLarge", "the request body "
		    "is larger than the limit of %zu bytes", rq->limit);
		api_resp_status(rp, &st);
		api_status_free(&st);
	} else {
		lookup lk = { c };
		http_req req;

		memset(&req, 0, sizeof(req));
		req.method = method;
		req.path = url;
		req.arg = get_arg;
		req.header = get_header;
		req.cls = &lk;
		req.body = rq->body.data ? rq->body.data : "";
		req.body_len = rq->body.len;
		req.loopback = is_loopback(c);
		router_dispatch(s->rt, &req, rp, &watch);
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
	ret = send_resp(c, rq, rp, strcmp(method, "HEAD") == 0);
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
	uint64_t us;
	int cls_idx;

	(void)c;
	if (rq == NULL)
		return;
	us = now_us() - rq->start_us;
	cls_idx = rq->status >= 100 && rq->status < 600 ? rq->status / 100 : 0;
	__atomic_add_fetch(&m->requests[cls_idx], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->bytes_out, rq->bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->duration_us, us, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&m->in_flight, 1, __ATOMIC_RELAXED);
	log_info("%s %s %d %zu %lluus%s", rq->method, rq->path, rq->status,
	    rq->bytes, (unsigned long long)us,
	    toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted");
	ki_buf_free(&rq->body);
	api_stream_free(rq->stream);
	api_resp_free(&rq->resp);
	free(rq);
	*con_cls = NULL;
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

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_error("http: poll on the listening socket: %s",
			    strerror(errno));
			return NULL;
		}
		if (p[1].revents != 0)
			return NULL;
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
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return KI_ENOMEM;
	s->rt = rt;
	s->hub = hub;
	s->lfd = s->wake[0] = s->wake[1] = -1;
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
