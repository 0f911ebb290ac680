/* bench/fanout.c — watch fan-out benchmark client: N watch streams and a
 * paced writer on one epoll loop.
 *
 * usage: fanout HOST PORT WATCHERS COLLECTION TEMPLATE TAG RATE CONNS
 *               SECONDS ROUNDS
 *
 * Reads the current resourceVersion of COLLECTION (a path), opens WATCHERS
 * connections that watch COLLECTION from it, then runs ROUNDS rounds. In each round CONNS keep-alive
 * connections POST the bundle in TEMPLATE ("@ID@" marks, twice, where a
 * unique id goes) for SECONDS seconds, one request every 1/RATE s (open
 * loop: a request whose turn comes while every connection is busy waits for
 * the next free one). Then it waits until every watcher has seen the
 * resourceVersion of the newest 201 answer and checks that each watcher got
 * exactly the events of the 201 answers (count and sum of resourceVersions)
 * in strictly increasing order. One "KIWATCH" line per round goes to
 * stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { ROLE_WATCH = 1, ROLE_POST = 2 };

typedef struct buf {
	char *p;
	size_t len, cap;
} buf;

typedef struct conn {
	int fd, role;
	buf in;                 /* unparsed bytes */
	buf out;                /* request bytes to send */
	size_t out_off;
	/* watch */
	int hdr_done, status, chunked, ended;
	int ch_state;           /* 0 size line, 1 data, 2 CRLF after data */
	uint64_t ch_left;
	buf line;               /* partial event line */
	uint64_t last_rv, events, rv_sum, disorder, errors;
	/* post */
	int busy;
	double sent_at;
} conn;

static struct {
	struct sockaddr_in addr;
	int ep;
	conn *w;                /* watchers */
	int nw;
	conn *p;                /* writers */
	int np;
	const char *host, *post_path;
	char *t1, *t2, *t3;     /* template split at the two "@ID@" */
	const char *tag;
	uint64_t seq;
	/* round */
	uint64_t ok, bad, max_rv, rv_sum, inflight;
	double *lat;
	size_t nlat, caplat;
} g;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	perror(what);
	exit(2);
}

static void
buf_add(buf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 4096;

		while (c < b->len + n + 1)
			c *= 2;
		if ((b->p = realloc(b->p, c)) == NULL)
			die("realloc");
		b->cap = c;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
buf_drop(buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	if (b->p)
		b->p[b->len] = '\0';
}

static int
dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;

	if (fd < 0)
		die("socket");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&g.addr, sizeof(g.addr)) < 0 &&
	    errno != EINPROGRESS)
		die("connect");
	return fd;
}

static void
arm(conn *c, int out)
{
	struct epoll_event ev;

	ev.events = EPOLLIN | (out ? EPOLLOUT : 0);
	ev.data.ptr = c;
	if (epoll_ctl(g.ep, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		die("epoll_ctl");
}

static void
add(conn *c)
{
	struct epoll_event ev;

	ev.events = EPOLLIN | EPOLLOUT;
	ev.data.ptr = c;
	if (epoll_ctl(g.ep, EPOLL_CTL_ADD, c->fd, &ev) < 0)
		die("epoll_ctl");
}

/* Sends what is queued; returns -1 when the connection failed. */
static int
flush(conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.p + c->out_off,
		    c->out.len - c->out_off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == ENOTCONN)
				break;
			return -1;
		}
		c->out_off += (size_t)n;
	}
	if (c->out_off == c->out.len) {
		c->out.len = c->out_off = 0;
		arm(c, 0);
	} else {
		arm(c, 1);
	}
	return 0;
}

static uint64_t
rv_in(const char *p, size_t len)
{
	static const char key[] = "\"resourceVersion\":\"";
	const char *q = memmem(p, len, key, sizeof(key) - 1);
	uint64_t v = 0;

	if (q == NULL)
		return 0;
	for (q += sizeof(key) - 1; q < p + len && *q >= '0' && *q <= '9'; q++)
		v = v * 10 + (uint64_t)(*q - '0');
	return v;
}

static void
on_line(conn *c, const char *p, size_t len)
{
	uint64_t rv;

	if (len < 10 || memcmp(p, "{\"type\":\"", 9) != 0) {
		c->errors++;
		return;
	}
	if (memcmp(p + 9, "BOOKMARK", 8) == 0)
		return;
	if (memcmp(p + 9, "ERROR", 5) == 0) {
		c->errors++;
		return;
	}
	rv = rv_in(p, len);
	if (rv <= c->last_rv)
		c->disorder++;
	c->last_rv = rv;
	c->events++;
	c->rv_sum += rv;
}

static void
feed_lines(conn *c, const char *p, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);

		if (nl == NULL) {
			buf_add(&c->line, p, n);
			return;
		}
		if (c->line.len > 0) {
			buf_add(&c->line, p, (size_t)(nl - p));
			on_line(c, c->line.p, c->line.len);
			c->line.len = 0;
		} else {
			on_line(c, p, (size_t)(nl - p));
		}
		n -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
}

/* Consumes c->in for a watch stream: headers, then chunks of lines. */
static void
watch_parse(conn *c)
{
	size_t i = 0;

	if (!c->hdr_done) {
		char *e = strstr(c->in.p, "\r\n\r\n");

		if (e == NULL)
			return;
		*e = '\0';
		c->status = atoi(c->in.p + 9);
		c->chunked = strcasestr(c->in.p, "transfer-encoding: chunked")
		    != NULL;
		c->hdr_done = 1;
		i = (size_t)(e - c->in.p) + 4;
	}
	if (!c->chunked) {
		feed_lines(c, c->in.p + i, c->in.len - i);
		c->in.len = 0;
		return;
	}
	while (i < c->in.len) {
		if (c->ch_state == 0) {
			char *e = memmem(c->in.p + i, c->in.len - i, "\r\n", 2);

			if (e == NULL)
				break;
			c->ch_left = strtoull(c->in.p + i, NULL, 16);
			i = (size_t)(e - c->in.p) + 2;
			if (c->ch_left == 0) {
				c->ended = 1;
				i = c->in.len;
				break;
			}
			c->ch_state = 1;
		} else if (c->ch_state == 1) {
			size_t n = c->in.len - i;

			if (n > c->ch_left)
				n = (size_t)c->ch_left;
			feed_lines(c, c->in.p + i, n);
			i += n;
			c->ch_left -= n;
			if (c->ch_left == 0)
				c->ch_state = 2;
		} else {
			if (c->in.len - i < 2)
				break;
			i += 2;
			c->ch_state = 0;
		}
	}
	buf_drop(&c->in, i);
}

static void
post_send(conn *c)
{
	char id[96], hdr[512];
	int idn, hn;
	size_t blen;

	idn = snprintf(id, sizeof(id), "%s-%llu", g.tag,
	    (unsigned long long)++g.seq);
	blen = strlen(g.t1) + strlen(g.t2) + strlen(g.t3) + 2 * (size_t)idn;
	hn = snprintf(hdr, sizeof(hdr), "POST %s HTTP/1.1\r\nHost: %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	    g.post_path, g.host, blen);
	buf_add(&c->out, hdr, (size_t)hn);
	buf_add(&c->out, g.t1, strlen(g.t1));
	buf_add(&c->out, id, (size_t)idn);
	buf_add(&c->out, g.t2, strlen(g.t2));
	buf_add(&c->out, id, (size_t)idn);
	buf_add(&c->out, g.t3, strlen(g.t3));
	c->busy = 1;
	c->sent_at = now();
	g.inflight++;
	if (flush(c) < 0)
		die("send");
}

/* Consumes one whole response from c->in if there is one. */
static void
post_parse(conn *c)
{
	char *e, *cl;
	size_t hl, bl;
	int status;

	if (!c->busy || (e = strstr(c->in.p, "\r\n\r\n")) == NULL)
		return;
	hl = (size_t)(e - c->in.p) + 4;
	cl = strcasestr(c->in.p, "content-length:");
	bl = cl && cl < e ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
	if (c->in.len < hl + bl)
		return;
	status = atoi(c->in.p + 9);
	if (status == 201) {
		uint64_t rv = rv_in(c->in.p + hl, bl);

		g.ok++;
		g.rv_sum += rv;
		if (rv > g.max_rv)
			g.max_rv = rv;
	} else {
		g.bad++;
	}
	if (g.nlat == g.caplat) {
		g.caplat = g.caplat ? 2 * g.caplat : 4096;
		if ((g.lat = realloc(g.lat, g.caplat * sizeof(double))) == NULL)
			die("realloc");
	}
	g.lat[g.nlat++] = now() - c->sent_at;
	buf_drop(&c->in, hl + bl);
	c->busy = 0;
	g.inflight--;
}

static void
on_readable(conn *c)
{
	char tmp[65536];

	for (;;) {
		ssize_t n = recv(c->fd, tmp, sizeof(tmp), 0);

		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			if (c->role == ROLE_POST)
				die("writer connection closed");
			c->ended = 1;
			epoll_ctl(g.ep, EPOLL_CTL_DEL, c->fd, NULL);
			return;
		}
		if (n < 0)
			return;
		if (c->role == ROLE_WATCH && c->hdr_done && !c->chunked) {
			feed_lines(c, tmp, (size_t)n);
			continue;
		}
		if (c->role == ROLE_WATCH && c->hdr_done && c->in.len == 0 &&
		    c->ch_state == 1 && (size_t)n <= c->ch_left) {
			/* Fast path: the bytes are all chunk data. */
			feed_lines(c, tmp, (size_t)n);
			c->ch_left -= (size_t)n;
			if (c->ch_left == 0)
				c->ch_state = 2;
			continue;
		}
		buf_add(&c->in, tmp, (size_t)n);
		if (c->role == ROLE_WATCH)
			watch_parse(c);
		else
			post_parse(c);
	}
}

static void
poll_once(int ms)
{
	struct epoll_event evs[256];
	int n = epoll_wait(g.ep, evs, 256, ms);

	if (n < 0 && errno != EINTR)
		die("epoll_wait");
	for (int i = 0; i < n; i++) {
		conn *c = evs[i].data.ptr;

		if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			on_readable(c);
		if (evs[i].events & EPOLLOUT) {
			if (flush(c) < 0) {
				if (c->role == ROLE_POST)
					die("writer send");
				c->ended = 1;
			}
		}
	}
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
pct(double q)
{
	size_t i;

	if (g.nlat == 0)
		return 0;
	i = (size_t)(q * (double)(g.nlat - 1) + 0.5);
	return g.lat[i] * 1e6;
}

/* The list's resourceVersion: one blocking request. */
static uint64_t
current_rv(void)
{
	char req[1024], tmp[65536];
	buf b = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0), n;
	ssize_t r;
	uint64_t rv;
	char *body;

	if (fd < 0 || connect(fd, (struct sockaddr *)&g.addr,
	    sizeof(g.addr)) < 0)
		die("connect");
	n = snprintf(req, sizeof(req), "GET %s?limit=1 HTTP/1.1\r\nHost: %s"
	    "\r\nConnection: close\r\n\r\n", g.post_path, g.host);
	if (send(fd, req, (size_t)n, 0) != n)
		die("send");
	while ((r = recv(fd, tmp, sizeof(tmp), 0)) > 0)
		buf_add(&b, tmp, (size_t)r);
	close(fd);
	body = b.p ? strstr(b.p, "\r\n\r\n") : NULL;
	/* The list's own metadata comes after its items. */
	rv = 0;
	if (body != NULL) {
		char *m = strstr(body, "],\"metadata\":");

		rv = rv_in(m ? m : body, strlen(m ? m : body));
	}
	free(b.p);
	if (rv == 0) {
		fprintf(stderr, "fanout: no resourceVersion from %s\n",
		    g.post_path);
		exit(2);
	}
	return rv;
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	buf b = { 0 };
	char tmp[4096];
	size_t n;

	if (f == NULL)
		die(path);
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		buf_add(&b, tmp, n);
	fclose(f);
	return b.p;
}

int
main(int argc, char **argv)
{
	char watch_path[1024];
	double rate, secs;
	int rounds;
	struct rlimit rl;
	char *t, *a, *b;

	if (argc != 11) {
		fprintf(stderr, "usage: fanout HOST PORT WATCHERS COLLECTION "
		    "TEMPLATE TAG RATE CONNS SECONDS ROUNDS\n");
		return 2;
	}
	g.host = argv[1];
	g.addr.sin_family = AF_INET;
	g.addr.sin_port = htons((uint16_t)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &g.addr.sin_addr) != 1)
		die("address");
	g.nw = atoi(argv[3]);
	g.post_path = argv[4];
	t = slurp(argv[5]);
	g.tag = argv[6];
	rate = atof(argv[7]);
	g.np = atoi(argv[8]);
	secs = atof(argv[9]);
	rounds = atoi(argv[10]);
	if ((a = strstr(t, "@ID@")) == NULL || (b = strstr(a + 4, "@ID@")) ==
	    NULL) {
		fprintf(stderr, "fanout: the template needs two @ID@\n");
		return 2;
	}
	*a = *b = '\0';
	g.t1 = t;
	g.t2 = a + 4;
	g.t3 = b + 4;

	rl.rlim_cur = rl.rlim_max = (rlim_t)(g.nw + g.np + 64);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur < (rlim_t)(g.nw + g.np + 64)) {
		rl.rlim_cur = (rlim_t)(g.nw + g.np + 64);
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			die("setrlimit (raise ulimit -n)");
	}
	if ((g.ep = epoll_create1(0)) < 0)
		die("epoll_create1");
	g.w = calloc((size_t)g.nw + 1, sizeof(conn));
	g.p = calloc((size_t)g.np + 1, sizeof(conn));
	if (g.w == NULL || g.p == NULL)
		die("calloc");

	/* Watchers: connect, request, wait for every answer's headers. */
	snprintf(watch_path, sizeof(watch_path), "%s?watch=true&"
	    "resourceVersion=%llu", g.post_path,
	    (unsigned long long)current_rv());
	for (int i = 0; i < g.nw; i++) {
		conn *c = &g.w[i];
		char req[2048];
		int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: "
		    "%s\r\nAccept: application/json\r\n\r\n", watch_path,
		    g.host);

		c->role = ROLE_WATCH;
		c->fd = dial();
		add(c);
		buf_add(&c->out, req, (size_t)n);
		if (i % 64 == 63)
			poll_once(0);
	}
	{
		double until = now() + 30;
		int ready = 0;

		while (now() < until) {
			ready = 0;
			for (int i = 0; i < g.nw; i++)
				ready += g.w[i].hdr_done && g.w[i].status ==
				    200 && !g.w[i].ended;
			if (ready == g.nw)
				break;
			poll_once(50);
		}
		printf("KIWATCHERS watchers=%d streaming=%d\n", g.nw, ready);
		fflush(stdout);
	}
	for (int i = 0; i < g.np; i++) {
		g.p[i].role = ROLE_POST;
		g.p[i].fd = dial();
		add(&g.p[i]);
	}

	for (int r = 1; r <= rounds; r++) {
		double t0, due, tend, tdrain, until;
		int delivered = 0, disorder = 0, missing = 0, ended = 0;
		uint64_t emin = UINT64_MAX, emax = 0;

		g.ok = g.bad = g.max_rv = g.rv_sum = 0;
		g.nlat = 0;
		for (int i = 0; i < g.nw; i++)
			g.w[i].events = g.w[i].rv_sum = g.w[i].disorder = 0;
		t0 = now();
		due = t0;
		tend = t0 + secs;
		while (now() < tend) {
			double tn = now();
			int ms;

			while (due <= tn) {
				conn *idle = NULL;

				for (int i = 0; i < g.np && idle == NULL; i++)
					if (!g.p[i].busy)
						idle = &g.p[i];
				if (idle == NULL)
					break;
				post_send(idle);
				due += 1.0 / rate;
			}
			/* Behind (every writer busy): an answer wakes the loop.
			 * Ahead: sleep until the next turn, rounded up to a
			 * millisecond — the schedule is absolute, so a late
			 * turn is made up at once, and the loop never spins. */
			if (due <= now())
				ms = 10;
			else
				ms = (int)((due - now()) * 1000) + 1;
			if (ms > 10)
				ms = 10;
			poll_once(ms);
		}
		until = now() + 30;
		while (g.inflight > 0 && now() < until)
			poll_once(10);
		tdrain = now();
		until = tdrain + 60;
		for (;;) {
			int behind = 0;

			for (int i = 0; i < g.nw; i++)
				if (!g.w[i].ended && g.w[i].last_rv < g.max_rv)
					behind++;
			if (behind == 0 || now() > until)
				break;
			poll_once(10);
		}
		tdrain = now() - tdrain;
		qsort(g.lat, g.nlat, sizeof(double), cmp_d);
		for (int i = 0; i < g.nw; i++) {
			conn *c = &g.w[i];

			if (c->ended)
				ended++;
			if (c->events < emin)
				emin = c->events;
			if (c->events > emax)
				emax = c->events;
			if (c->disorder)
				disorder++;
			if (c->events == g.ok && c->rv_sum == g.rv_sum &&
			    !c->disorder && !c->ended)
				delivered++;
			else
				missing++;
		}
		if (g.nw == 0)
			emin = 0;
		printf("KIWATCH watchers=%d round=%d offered_rps=%.0f "
		    "rps=%.1f created=%llu failed=%llu p50_us=%.0f p99_us=%.0f "
		    "complete=%d incomplete=%d disordered=%d ended=%d "
		    "events_min=%llu events_max=%llu drain_ms=%.0f\n",
		    g.nw, r, rate, (double)g.ok / secs,
		    (unsigned long long)g.ok, (unsigned long long)g.bad,
		    pct(0.50), pct(0.99), delivered, missing, disorder, ended,
		    (unsigned long long)emin, (unsigned long long)emax,
		    tdrain * 1000);
		fflush(stdout);
	}
	return 0;
}
