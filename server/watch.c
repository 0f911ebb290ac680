/* server/watch.c — the watch hub and its streaming responses.
 *
 * One hub thread reads each commit's events from the store once and keeps
 * them in a ring (api/events.h: the events, their shared lines, the
 * ring). Each event's line is rendered at most once per representation,
 * and the same immutable, reference-counted bytes are queued to every
 * watcher that selects the event: a thousand watchers cost one render, not
 * a thousand.
 *
 * Getting those bytes out is then most of the cost, so it is kept to one
 * system call per watcher and batch of commits:
 *  - A watcher that has caught up on a plain HTTP/1.1 connection (no TLS)
 *    is handed to the hub: libmicrohttpd keeps the connection suspended
 *    and the hub writes the shared lines to its socket itself, framed as
 *    HTTP chunks, with one sendmsg() of every ready line (no copy into a
 *    connection buffer, no resume and suspend per batch). When the stream
 *    ends (timeout, shutdown, error) the hub finishes its chunk and resumes
 *    the connection, and libmicrohttpd writes the last chunk as usual.
 *  - Any other watcher (TLS, HTTP/1.0, "Connection: close", or one still
 *    sending the initial list or a replay) is a content-reader callback,
 *    suspended while it has nothing to send and resumed by the hub.
 * Watchers whose selectors pick none of a batch's events are not woken at
 * all. Under a stream of commits the hub spaces its rounds by the number
 * of watchers it served in the last one (see hub_main). The commit path
 * only records the newest resourceVersion and signals the hub thread:
 * fan-out never delays a commit. */
#include "server/watch.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "api/admin.h"
#include "api/events.h"
#include "api/labels.h"
#include "api/table.h"
#include "lib/log.h"
#include "lib/thread.h"

#define MAX_PENDING (256 * 1024) /* bytes queued to one watcher at most */
#define BOOKMARK_EVERY 30        /* seconds, when bookmarks are asked for */
#define QUEUE 256                /* lines queued to one watcher at most */
#define FILL_BATCH 128           /* ring events taken per lock */

#define WAKE_GAP_NS 25000u       /* between wake rounds, per watcher woken */
#define WAKE_GAP_MAX_NS 50000000u

typedef struct qent {
	api_line *b;
	size_t off;                  /* bytes of b already sent */
} qent;

typedef struct watcher {
	struct watcher *prev, *next;
	watch_hub *hub;
	struct MHD_Connection *conn;
	watch_params p;
	api_query q;
	int rep;
	uint64_t last_rv;            /* every event up to it is queued or
	                              * skipped */
	/* What is ready to send, in order: shared lines and blobs of the
	 * watcher's own bytes. Bounded by QUEUE entries and MAX_PENDING. */
	qent out[QUEUE];
	size_t out_head, out_n, out_bytes;
	ki_buf own;                  /* own bytes not yet made a blob */
	int suspended;               /* by libmicrohttpd; under the hub's mu */
	int ended;                   /* send what is queued, then end */
	int failed;                  /* out of memory, unreadable store, or
	                              * a broken connection */
	int defs_sent;               /* Table column definitions */
	time_t deadline, next_bookmark;
	/* Direct writes by the hub thread, which alone uses these fields
	 * while direct is set (set and cleared under the hub's mu). */
	int direct_ok;               /* plain HTTP/1.1: chunks are ours to frame */
	int direct;
	int fd;
	int blocked;                 /* the socket is full: wait for EPOLLOUT */
	int hangup;                  /* the client closed or the socket failed */
	time_t blocked_since;
	unsigned idle_limit;         /* libmicrohttpd's connection timeout */
	char ch_hdr[20];             /* the chunk being written: its size line */
	size_t ch_hdr_len, ch_hdr_off;
	size_t ch_left;              /* its data bytes not yet written */
	size_t ch_tail;              /* its closing CRLF bytes not yet written */
} watcher;

/* Ends w's stream on an error of the daemon's own (a client that went
 * away is not one): libmicrohttpd then closes the connection, without
 * saying why. */
static void
watch_fail(watcher *w, const char *why)
{
	if (!w->failed)
		log_warn("watch: ending a watch of %s: %s", w->p.kind->plural,
		    why);
	w->failed = 1;
}

struct watch_hub {
	api_ctx *api;
	/* The commit path's side: the newest committed rv. */
	pthread_mutex_t feed_mu;
	uint64_t notified_rv;
	int sleeping;                /* the hub thread waits: poke it */
	int stop;
	int shutting;                /* atomic: streams are being ended */
	pthread_t thread;
	int ep;                      /* epoll: direct sockets and efd */
	int efd;                     /* eventfd that wakes the hub thread */
	/* mu guards the ring and the watchers. */
	pthread_mutex_t mu;
	api_ring ring;
	watcher *head;
	uint64_t count;
};

/* Whether event e is one that w sends. */
static int
selects(const watcher *w, const api_event *e)
{
	return e->o.kind == w->p.kind->id && e->type >= 1 && e->type <= 3 &&
	    api_query_match(&w->q, &e->o);
}

/* ---- one watcher ---- */

/* Drops the first k unsent bytes of w's queue (sent), releasing the
 * blobs that are done. */
static void
consume(watcher *w, size_t k)
{
	while (k > 0) {
		qent *q = &w->out[w->out_head];
		size_t n = q->b->len - q->off;

		if (n > k)
			n = k;
		q->off += n;
		k -= n;
		w->out_bytes -= n;
		if (q->off == q->b->len) {
			api_line_unref(q->b);
			q->b = NULL;
			w->out_head = (w->out_head + 1) % QUEUE;
			w->out_n--;
		}
	}
}

/* Releases everything queued to w (unsent). */
static void
queue_clear(watcher *w)
{
	while (w->out_n > 0) {
		api_line_unref(w->out[w->out_head].b);
		w->out[w->out_head].b = NULL;
		w->out_head = (w->out_head + 1) % QUEUE;
		w->out_n--;
	}
	w->out_bytes = 0;
}

/* Appends b (a reference the queue takes over) to w's queue, from offset
 * off. The caller has checked that there is room. */
static void
queue_push(watcher *w, api_line *b, size_t off)
{
	qent *q = &w->out[(w->out_head + w->out_n) % QUEUE];

	q->b = b;
	q->off = off;
	w->out_n++;
	w->out_bytes += b->len - off;
}

/* Moves w's own bytes into the queue, after what is there. */
static void
flush_own(watcher *w)
{
	api_line *b;

	if (w->own.len == 0 && !w->own.oom)
		return;
	if ((b = api_line_from_buf(&w->own, 0)) == NULL) {
		watch_fail(w, ki_strerror(KI_ENOMEM));
		return;
	}
	queue_push(w, b, 0);
}

/* Whether w's queue takes more: a line and a blob of own bytes always fit
 * once this says yes. */
static int
has_room(const watcher *w)
{
	return w->out_n + 2 < QUEUE &&
	    w->out_bytes + w->own.len < MAX_PENDING;
}

/* Queues ring event e for w, which selects it. */
static void
queue_event(watcher *w, api_event *e)
{
	api_line *b = api_event_line(e, w->p.kind, w->rep);
	size_t off = 0;

	if (b == NULL) {
		watch_fail(w, ki_strerror(KI_ENOMEM));
		return;
	}
	if (w->rep >= API_REP_TABLE && !w->defs_sent) {
		/* The first Table carries the column definitions: the watcher's
		 * own head, then the shared line from its row on. */
		ki_buf_puts(&w->own, "{\"type\":\"");
		ki_buf_puts(&w->own, api_event_type_name(e->type));
		ki_buf_puts(&w->own, "\",\"object\":");
		api_table_open(&w->own, w->p.kind);
		off = b->row_off;
		w->defs_sent = 1;
	}
	flush_own(w);
	if (w->failed)
		return;
	__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
	queue_push(w, b, off);
}

/* Queues what the ring holds after last_rv, as much as fits. Returns 0
 * when the ring does not reach back to last_rv (the store must be read). */
static int
fill_from_ring(watcher *w)
{
	watch_hub *h = w->hub;
	api_event *ev[FILL_BATCH];
	size_t n, i;
	uint64_t upto;

	do {
		pthread_mutex_lock(&h->mu);
		if (w->last_rv < h->ring.base_rv) {
			pthread_mutex_unlock(&h->mu);
			return 0;
		}
		n = 0;
		for (size_t k = api_ring_find(&h->ring, w->last_rv);
		    k < h->ring.count && n < FILL_BATCH; k++) {
			ev[n] = api_ring_at(&h->ring, k);
			api_event_ref(ev[n++]);
		}
		/* Taking all that is there covers every rv up to covered_rv. */
		upto = n < FILL_BATCH ? h->ring.covered_rv : ev[n - 1]->rv;
		pthread_mutex_unlock(&h->mu);
		/* Matching and rendering happen without the lock: the events
		 * are immutable and held. */
		for (i = 0; i < n && has_room(w) && !w->failed; i++) {
			w->last_rv = ev[i]->rv;
			if (selects(w, ev[i]))
				queue_event(w, ev[i]);
		}
		if (i == n && upto > w->last_rv)
			w->last_rv = upto;
		for (size_t k = 0; k < n; k++)
			api_event_unref(ev[k]);
	} while (i == n && n == FILL_BATCH && has_room(w) && !w->failed);
	return 1;
}

/* Appends one event line for o to w's own bytes. */
static void
render_own(watcher *w, int type, const store_obj *o)
{
	api_render_line(&w->own, w->p.kind, w->rep, type, o,
	    w->rep >= API_REP_TABLE && !w->defs_sent, w->hub->api->now(), NULL);
	if (w->rep >= API_REP_TABLE)
		w->defs_sent = 1;
}

static int
on_event(void *arg, int type, const store_obj *o)
{
	watcher *w = arg;

	if (!has_room(w))
		return 1;
	w->last_rv = o->rv;
	if (o->kind != w->p.kind->id || type < 1 || type > 3 ||
	    !api_query_match(&w->q, o))
		return 0;
	render_own(w, type, o);
	return w->own.oom ? KI_ENOMEM : 0;
}

static int
on_initial(void *arg, const store_obj *o)
{
	watcher *w = arg;

	if (api_query_match(&w->q, o))
		render_own(w, STORE_ADDED, o);
	return w->own.oom ? KI_ENOMEM : 0;
}

static void
expired(watcher *w, uint64_t rv)
{
	ki_buf_printf(&w->own, "{\"type\":\"ERROR\",\"object\":{\"kind\":"
	    "\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
	    "\"Failure\",\"message\":\"too old resource version: %llu (the "
	    "oldest kept is %llu)\",\"reason\":\"Expired\",\"code\":410}}\n",
	    (unsigned long long)w->p.rv, (unsigned long long)rv);
	w->ended = 1;
}

/* Reads the store: the initial list, or the events after last_rv when
 * the ring no longer holds them (rendered for w alone). */
static void
fill_from_store(watcher *w)
{
	uint64_t oldest = 0;
	int rc, began;

	rc = api_watch_read(w->hub->api->st, w->p.kind->id, &w->p.initial,
	    &w->last_rv, on_initial, on_event, w, &oldest, &began);
	if (!began) {
		watch_fail(w, ki_strerror(rc));
		return;
	}
	if (rc == KI_EGONE)
		expired(w, oldest);
	if (rc != KI_OK && rc != 1 && rc != KI_EGONE)
		watch_fail(w, ki_strerror(rc));
	flush_own(w);
}

/* Queues what happened since last_rv, and a bookmark when one is due. */
static void
fill(watcher *w)
{
	if (w->p.initial || !fill_from_ring(w))
		fill_from_store(w);
	if (w->p.bookmarks && !w->ended && !w->failed &&
	    time(NULL) >= w->next_bookmark && w->out_n + 1 < QUEUE) {
		/* Everything up to last_rv is queued before it. */
		ki_buf_printf(&w->own, "{\"type\":\"BOOKMARK\",\"object\":"
		    "{\"kind\":\"%s\",\"apiVersion\":\"" API_GROUP_VERSION "\","
		    "\"metadata\":{\"resourceVersion\":\"%llu\"}}}\n",
		    w->p.kind->kind, (unsigned long long)w->last_rv);
		w->next_bookmark = time(NULL) + BOOKMARK_EVERY;
		flush_own(w);
	}
}

/* ---- direct writes (hub thread) ---- */

/* Writes what it can of w's current chunk: the rest of its size line, its
 * data from the queue (straight from the shared blobs) and its CRLF.
 * Returns 1 when the chunk is all written, 0 when the socket is full, -1
 * when the connection failed. */
static int
direct_write(watcher *w)
{
	static const char crlf[] = "\r\n";
	struct iovec iov[QUEUE + 2];
	struct msghdr msg;

	for (;;) {
		size_t left = w->ch_left, k;
		int n = 0;
		ssize_t sent;

		if (w->ch_hdr_off < w->ch_hdr_len)
			iov[n++] = (struct iovec){ w->ch_hdr + w->ch_hdr_off,
			    w->ch_hdr_len - w->ch_hdr_off };
		for (size_t i = 0; i < w->out_n && left > 0; i++) {
			qent *q = &w->out[(w->out_head + i) % QUEUE];

			k = q->b->len - q->off < left ? q->b->len - q->off : left;
			iov[n++] = (struct iovec){ q->b->data + q->off, k };
			left -= k;
		}
		if (left == 0 && w->ch_tail > 0)
			iov[n++] = (struct iovec){ (void *)(uintptr_t)(crlf + 2 -
			    w->ch_tail), w->ch_tail };
		if (n == 0)
			return 1;
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)n;
		sent = sendmsg(w->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		k = w->ch_hdr_len - w->ch_hdr_off;
		k = (size_t)sent < k ? (size_t)sent : k;
		w->ch_hdr_off += k;
		sent -= (ssize_t)k;
		k = (size_t)sent < w->ch_left ? (size_t)sent : w->ch_left;
		consume(w, k);
		w->ch_left -= k;
		sent -= (ssize_t)k;
		w->ch_tail -= (size_t)sent;
	}
}

/* Hands w back to libmicrohttpd, which then ends the response (or, when
 * failed or a chunk was cut short, closes the connection). w may be freed
 * by a libmicrohttpd thread as soon as this returns. */
static void
direct_end(watcher *w, int failed)
{
	watch_hub *h = w->hub;

	epoll_ctl(h->ep, EPOLL_CTL_DEL, w->fd, NULL);
	if (failed || w->ch_hdr_len > 0) {
		w->failed = 1;
		queue_clear(w);
	}
	__atomic_store_n(&w->ended, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&h->mu);
	w->direct = 0;
	w->suspended = 0;
	pthread_mutex_unlock(&h->mu);
	MHD_resume_connection(w->conn);
}

/* Sends what w has ready and what the ring (or the store) holds for it,
 * until it is caught up, its socket is full, or its stream ends (then it
 * is handed back: the caller must not touch w again). Hub thread only. */
static void
direct_pump(watcher *w)
{
	watch_hub *h = w->hub;

	for (;;) {
		int rc;

		if (w->hangup) {
			direct_end(w, 1);
			return;
		}
		if (w->ch_hdr_len > 0) {
			if ((rc = direct_write(w)) < 0) {
				direct_end(w, 1);
			} else if (rc == 0) {
				/* At shutdown a client that does not read is not
				 * waited for. */
				if (__atomic_load_n(&h->shutting, __ATOMIC_RELAXED)) {
					direct_end(w, 1);
				} else if (!w->blocked) {
					w->blocked = 1;
					w->blocked_since = time(NULL);
				}
			}
			if (rc <= 0)
				return;
			w->ch_hdr_len = w->ch_hdr_off = 0;
			w->blocked = 0;
			continue;
		}
		if (w->failed) {
			direct_end(w, 1);
			return;
		}
		if (w->out_n > 0) {
			int len = snprintf(w->ch_hdr, sizeof(w->ch_hdr), "%zx\r\n",
			    w->out_bytes);

			w->ch_hdr_len = (size_t)len;
			w->ch_hdr_off = 0;
			w->ch_left = w->out_bytes;
			w->ch_tail = 2;
			continue;
		}
		if (__atomic_load_n(&w->ended, __ATOMIC_RELAXED) ||
		    (w->deadline && time(NULL) >= w->deadline)) {
			direct_end(w, 0);
			return;
		}
		fill(w);
		if (w->out_n == 0 && !w->ended && !w->failed)
			return;
	}
}

/* Under mu, in the content reader, with w just suspended: makes the hub
 * thread w's writer. Returns 0 (w stays with libmicrohttpd) when its
 * socket cannot be had or watched. */
static int
direct_take(watcher *w)
{
	watch_hub *h = w->hub;
	const union MHD_ConnectionInfo *ci;
	struct epoll_event ev;
	int one = 1, zero = 0;

	ci = MHD_get_connection_info(w->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci == NULL || h->ep < 0) {
		w->direct_ok = 0;
		return 0;
	}
	w->fd = ci->connect_fd;
	ci = MHD_get_connection_info(w->conn,
	    MHD_CONNECTION_INFO_CONNECTION_TIMEOUT);
	w->idle_limit = ci != NULL ? ci->connection_timeout : 0;
	/* libmicrohttpd may have left the socket corked for a write of its
	 * own to follow; the hub's writes go out as they are made. */
	setsockopt(w->fd, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero));
	setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	w->direct = 1;
	w->blocked = w->hangup = 0;
	w->ch_hdr_len = w->ch_hdr_off = 0;
	/* Last: from here on the hub thread may write (edge-triggered:
	 * EPOLLOUT only after a write found the socket full). */
	ev.events = EPOLLOUT | EPOLLRDHUP | EPOLLET;
	ev.data.ptr = w;
	if (epoll_ctl(h->ep, EPOLL_CTL_ADD, w->fd, &ev) != 0) {
		w->direct = 0;
		w->direct_ok = 0;
		return 0;
	}
	return 1;
}

/* ---- the hub thread ---- */

/* Under mu: an array for every watcher (NULL when out of memory; the
 * caller then serves no one this round and retries on the next). */
static void **
each_array(watch_hub *h)
{
	return malloc((h->count ? h->count : 1) * sizeof(void *));
}

/* Resumes the n suspended connections in wake, then pumps the n_direct
 * direct watchers in direct, outside mu: a connection marked not suspended
 * (under mu) is resumed by no one else, libmicrohttpd keeps a suspended
 * connection, and only the hub thread ends a direct watcher, so all are
 * still there. Frees both arrays. */
static void
serve(void **wake, size_t n, void **direct, size_t n_direct)
{
	for (size_t i = 0; i < n; i++)
		MHD_resume_connection(wake[i]);
	for (size_t i = 0; i < n_direct; i++)
		direct_pump(direct[i]);
	free(wake);
	free(direct);
}

/* Reads the events after covered_rv into the ring, then serves the
 * watchers that select one of them: direct ones are written to, suspended
 * ones resumed. Returns the number of watchers served. */
static size_t
hub_refresh(watch_hub *h, uint64_t notified)
{
	api_events f = { &h->ring, NULL, 0, 0 };
	void **wake, **direct;
	size_t nwake = 0, ndirect = 0;
	uint64_t from = __atomic_load_n(&h->ring.covered_rv, __ATOMIC_ACQUIRE);
	uint64_t upto = 0;
	int rc, reset;

	pthread_mutex_lock(&h->mu);
	if (h->count == 0) {
		/* No one watches: nothing to copy. A watcher that comes later
		 * from an earlier rv reads what it missed from the store, as one
		 * behind a trimmed ring does. */
		if (notified > h->ring.covered_rv)
			api_ring_reset(&h->ring, notified);
		pthread_mutex_unlock(&h->mu);
		return 0;
	}
	pthread_mutex_unlock(&h->mu);
	rc = api_events_read(&f, from, &upto);
	pthread_mutex_lock(&h->mu);
	reset = rc != KI_OK;
	if (reset) {
		/* Unreadable, or trimmed past the ring: start over at the newest
		 * rv known; watchers behind it read the store (or get 410). */
		api_ring_reset(&h->ring, upto > notified ? upto : notified);
	} else {
		for (size_t i = 0; i < f.n; i++)
			api_ring_push(&h->ring, f.ev[i]);
		if (f.n > 0 && f.ev[f.n - 1]->rv > upto)
			upto = f.ev[f.n - 1]->rv;
		if (upto > h->ring.covered_rv)
			__atomic_store_n(&h->ring.covered_rv, upto, __ATOMIC_RELEASE);
	}
	wake = each_array(h);
	direct = each_array(h);
	for (watcher *w = h->head; w != NULL && wake && direct; w = w->next) {
		int want = 1;

		/* Only idle watchers wait for the hub: the others take what is
		 * new when they next fill (a direct one whose socket is full,
		 * when it drains). */
		if ((!w->suspended && !w->direct) || w->blocked ||
		    w->last_rv >= h->ring.covered_rv)
			continue;
		if (!reset && w->last_rv >= from) {
			want = 0;
			for (size_t i = 0; i < f.n && !want; i++)
				want = f.ev[i]->rv > w->last_rv && selects(w, f.ev[i]);
		}
		if (!want) {
			w->last_rv = h->ring.covered_rv; /* nothing for it: skipped */
		} else if (w->direct) {
			direct[ndirect++] = w;
		} else {
			w->suspended = 0;
			wake[nwake++] = w->conn;
		}
	}
	pthread_mutex_unlock(&h->mu);
	serve(wake, nwake, direct, ndirect);
	for (size_t i = 0; i < f.n; i++)
		api_event_unref(f.ev[i]);
	free(f.ev);
	return nwake + ndirect;
}

/* Serves the watchers whose timeout ended or whose bookmark is due, and
 * ends direct ones whose socket stayed full for the connection timeout
 * (libmicrohttpd does not time out a suspended connection). With all,
 * serves every direct watcher (shutdown: each ends). */
static void
hub_tick(watch_hub *h, int all)
{
	void **wake, **direct;
	size_t nwake = 0, ndirect = 0;
	time_t now = time(NULL);

	pthread_mutex_lock(&h->mu);
	wake = each_array(h);
	direct = each_array(h);
	for (watcher *w = h->head; w != NULL && wake && direct; w = w->next) {
		int due = (w->deadline && now >= w->deadline) ||
		    (w->p.bookmarks && now >= w->next_bookmark);

		if (w->direct) {
			if (w->blocked && w->idle_limit > 0 && !w->hangup &&
			    now - w->blocked_since >= (time_t)w->idle_limit) {
				w->hangup = 1;
				log_info("watch: ending a watch of %s whose "
				    "client read nothing for %u s (the "
				    "connection timeout)", w->p.kind->plural,
				    w->idle_limit);
			}
			if (all || w->hangup || (due && !w->blocked))
				direct[ndirect++] = w;
		} else if (w->suspended && due) {
			w->suspended = 0;
			wake[nwake++] = w->conn;
		}
	}
	pthread_mutex_unlock(&h->mu);
	serve(wake, nwake, direct, ndirect);
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Handles what epoll reported: the wake-up eventfd, or a direct socket
 * that drained (EPOLLOUT) or whose client went (RDHUP, HUP, ERR). */
static void
hub_events(watch_hub *h, const struct epoll_event *ev, int n)
{
	for (int i = 0; i < n; i++) {
		watcher *w = ev[i].data.ptr;

		if (w == NULL) {
			uint64_t v;

			if (read(h->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_warn("watch: the hub's eventfd: %s",
				    strerror(errno));
			continue;
		}
		if (ev[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			w->hangup = 1;
		w->blocked = 0;
		direct_pump(w);
	}
}

/* The hub thread: reads each batch of commits once and serves watchers,
 * writes to direct sockets as they drain, and once a second checks
 * timeouts and bookmarks.
 *
 * A round costs each watcher served a system call or two (and a resume
 * and a pass of libmicrohttpd's loop when it is not direct), whatever the
 * number of events it carries; under a stream of commits, rounds are
 * therefore spaced by WAKE_GAP_NS per watcher served in the last one (at
 * most WAKE_GAP_MAX_NS), and the commits that land meanwhile go out
 * together in the next. A commit after a quiet spell goes out at once, and
 * a few watchers see no delay to speak of. */
static void *
hub_main(void *arg)
{
	watch_hub *h = arg;
	uint64_t next_round = 0, next_tick = mono_ns() + 1000000000u;
	uint64_t tried = 0;
	struct epoll_event ev[64];

	ki_thread_name("ki-watch");
	pthread_mutex_lock(&h->feed_mu);
	while (!h->stop) {
		uint64_t now = mono_ns(), notified = h->notified_rv, wake_at;
		/* A pass that could not read up to what was notified is tried
		 * again on the next commit or tick, not in a loop. */
		int want = notified > __atomic_load_n(&h->ring.covered_rv,
		    __ATOMIC_ACQUIRE) && notified != tried, n, shutting;

		if (want && now >= next_round) {
			size_t served, gap;

			tried = notified;
			pthread_mutex_unlock(&h->feed_mu);
			served = hub_refresh(h, notified);
			pthread_mutex_lock(&h->feed_mu);
			gap = served < WAKE_GAP_MAX_NS / WAKE_GAP_NS ?
			    served * WAKE_GAP_NS : WAKE_GAP_MAX_NS;
			next_round = mono_ns() + gap;
			continue;
		}
		shutting = __atomic_load_n(&h->shutting, __ATOMIC_RELAXED);
		if (now >= next_tick || shutting == 1) {
			/* 1: asked to end the streams; 2: being done. */
			if (shutting == 1)
				__atomic_store_n(&h->shutting, 2, __ATOMIC_RELAXED);
			tried = 0;
			pthread_mutex_unlock(&h->feed_mu);
			hub_tick(h, shutting != 0);
			pthread_mutex_lock(&h->feed_mu);
			next_tick = mono_ns() + 1000000000u;
			continue;
		}
		wake_at = want && next_round < next_tick ? next_round : next_tick;
		h->sleeping = 1;
		pthread_mutex_unlock(&h->feed_mu);
		n = epoll_wait(h->ep, ev, 64,
		    (int)((wake_at - now + 999999u) / 1000000u));
		if (n > 0)
			hub_events(h, ev, n);
		pthread_mutex_lock(&h->feed_mu);
		h->sleeping = 0;
	}
	pthread_mutex_unlock(&h->feed_mu);
	return NULL;
}

/* Wakes the hub thread out of epoll_wait(). */
static void
poke(watch_hub *h)
{
	uint64_t one = 1;

	if (write(h->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("watch: cannot wake the hub: %s", strerror(errno));
}

void
watch_hub_notify(void *arg, uint64_t rv)
{
	watch_hub *h = arg;
	int wake = 0;

	/* The commit path: record, and wake the hub if it sleeps. */
	pthread_mutex_lock(&h->feed_mu);
	if (rv > h->notified_rv) {
		h->notified_rv = rv;
		wake = h->sleeping;
		h->sleeping = 0;
	}
	pthread_mutex_unlock(&h->feed_mu);
	if (wake)
		poke(h);
}

int
watch_hub_create(watch_hub **out, api_ctx *api, uint64_t history)
{
	watch_hub *h = calloc(1, sizeof(*h));
	struct epoll_event ev;
	uint64_t rv;
	int rc = KI_EIO;

	*out = NULL;
	if (h == NULL)
		return KI_ENOMEM;
	h->api = api;
	h->ring.api = api;
	h->ring.history = history ? history : 100000;
	pthread_mutex_init(&h->mu, NULL);
	pthread_mutex_init(&h->feed_mu, NULL);
	h->ep = epoll_create1(EPOLL_CLOEXEC);
	h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	if (h->ep < 0 || h->efd < 0 ||
	    epoll_ctl(h->ep, EPOLL_CTL_ADD, h->efd, &ev) != 0)
		goto fail;
	if (api_current_rv(api->st, &rv) == KI_OK)
		h->ring.covered_rv = h->ring.base_rv = h->notified_rv = rv;
	if (pthread_create(&h->thread, NULL, hub_main, h) != 0)
		goto fail;
	*out = h;
	return KI_OK;
fail:
	if (h->ep >= 0)
		close(h->ep);
	if (h->efd >= 0)
		close(h->efd);
	pthread_mutex_destroy(&h->mu);
	pthread_mutex_destroy(&h->feed_mu);
	free(h);
	return rc;
}

void
watch_hub_destroy(watch_hub *h)
{
	if (h == NULL)
		return;
	pthread_mutex_lock(&h->feed_mu);
	h->stop = 1;
	pthread_mutex_unlock(&h->feed_mu);
	poke(h);
	pthread_join(h->thread, NULL);
	api_ring_reset(&h->ring, 0);
	close(h->ep);
	close(h->efd);
	pthread_mutex_destroy(&h->feed_mu);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

void
watch_hub_shutdown(watch_hub *h)
{
	pthread_mutex_lock(&h->mu);
	for (watcher *w = h->head; w != NULL; w = w->next) {
		__atomic_store_n(&w->ended, 1, __ATOMIC_RELAXED);
		if (w->suspended && !w->direct) {
			w->suspended = 0;
			MHD_resume_connection(w->conn);
		}
	}
	pthread_mutex_unlock(&h->mu);
	/* The hub thread ends the direct streams (not waiting on clients
	 * that do not read). */
	__atomic_store_n(&h->shutting, 1, __ATOMIC_RELAXED);
	poke(h);
	/* Let the streams send their last bytes and close. */
	for (int i = 0; i < 200 && watch_hub_count(h) > 0; i++)
		usleep(10000);
}

uint64_t
watch_hub_count(watch_hub *h)
{
	uint64_t n;

	pthread_mutex_lock(&h->mu);
	n = h->count;
	pthread_mutex_unlock(&h->mu);
	return n;
}

/* Copies queued bytes into buf (up to max), releasing what is sent. */
static size_t
drain(watcher *w, char *buf, size_t max)
{
	size_t n = 0;

	while (w->out_n > 0 && n < max) {
		qent *q = &w->out[w->out_head];
		size_t k = q->b->len - q->off;

		if (k > max - n)
			k = max - n;
		memcpy(buf + n, q->b->data + q->off, k);
		n += k;
		consume(w, k);
	}
	return n;
}

/* libmicrohttpd's content reader: fills buf with as many ready lines as fit;
 * suspends the connection when there are none. */
static ssize_t
reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	watcher *w = cls;
	watch_hub *h = w->hub;
	size_t n = 0;

	(void)pos;
	for (;;) {
		n += drain(w, buf + n, max - n);
		if (n == max)
			return (ssize_t)n;
		/* The queue is empty. */
		if (w->failed)
			return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_WITH_ERROR;
		if (__atomic_load_n(&w->ended, __ATOMIC_RELAXED) ||
		    (w->deadline && time(NULL) >= w->deadline))
			return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
		if (n > 0 && !w->p.initial && (!w->p.bookmarks ||
		    time(NULL) < w->next_bookmark) &&
		    __atomic_load_n(&h->ring.covered_rv, __ATOMIC_ACQUIRE) <=
		    w->last_rv)
			return (ssize_t)n;
		fill(w);
		if (w->out_n > 0 || w->ended || w->failed)
			continue;
		if (n > 0)
			return (ssize_t)n;
		/* Nothing to send: sleep until the hub has events for it, the
		 * deadline or a bookmark, or, caught up on a plain HTTP/1.1
		 * connection, leave the writing to the hub. The checks and the
		 * suspend happen under the hub's lock, so no batch (and no
		 * shutdown) can slip between them. */
		pthread_mutex_lock(&h->mu);
		if (h->ring.covered_rv > w->last_rv ||
		    __atomic_load_n(&w->ended, __ATOMIC_RELAXED)) {
			/* A batch landed after fill() read: read again. */
			pthread_mutex_unlock(&h->mu);
			continue;
		}
		w->suspended = 1;
		MHD_suspend_connection(w->conn);
		if (w->direct_ok)
			direct_take(w);
		pthread_mutex_unlock(&h->mu);
		return 0;
	}
}

/* Frees w and what it holds (its queue's references). */
static void
watcher_free(watcher *w)
{
	queue_clear(w);
	api_query_free(&w->q);
	free(w->p.label_selector);
	free(w->p.field_selector);
	ki_buf_free(&w->own);
	free(w);
}

static void
reader_free(void *cls)
{
	watcher *w = cls;
	watch_hub *h = w->hub;

	pthread_mutex_lock(&h->mu);
	if (w->prev)
		w->prev->next = w->next;
	else
		h->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	h->count--;
	pthread_mutex_unlock(&h->mu);
	watcher_free(w);
}

/* Whether header value v holds token tok (case-insensitive). */
static int
has_token(const char *v, const char *tok)
{
	size_t n = strlen(tok);

	while (v != NULL && *v != '\0') {
		while (*v == ' ' || *v == '\t' || *v == ',')
			v++;
		if (strncasecmp(v, tok, n) == 0 &&
		    (v[n] == '\0' || v[n] == ',' || v[n] == ' ' || v[n] == '\t'))
			return 1;
		v = strchr(v, ',');
	}
	return 0;
}

/* Whether libmicrohttpd sends this response in HTTP chunks over a plain
 * socket, so that the hub may write chunks to the socket itself: HTTP/1.1
 * without TLS, and no "close" or "upgrade" in the request's Connection
 * header (libmicrohttpd then ends the body by closing instead). */
static int
chunks_are_ours(struct MHD_Connection *c, const watch_params *p)
{
	const union MHD_ConnectionInfo *ci;
	const union MHD_DaemonInfo *di;
	const char *conn;

	if (!p->http11 ||
	    (ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON)) == NULL ||
	    (di = MHD_get_daemon_info(ci->daemon, MHD_DAEMON_INFO_FLAGS)) == NULL ||
	    (di->flags & MHD_USE_TLS) != 0)
		return 0;
	conn = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONNECTION);
	return !has_token(conn, "close") && !has_token(conn, "upgrade");
}

int
watch_start(watch_hub *h, void *connection, watch_params *params)
{
	struct MHD_Connection *c = connection;
	struct MHD_Response *mr;
	watcher *w = calloc(1, sizeof(*w));
	api_resp r;
	enum MHD_Result ret;

	api_resp_init(&r);
	if (w == NULL ||
	    (!params->initial && api_watch_check_rv(h->api->st, params->rv,
	    &r) != KI_OK) ||
	    api_query_parse(&w->q, params->kind, params->label_selector,
	    params->field_selector, &r) != KI_OK) {
		/* A bad selector answers as a list would: 400 with a Status;
		 * a resourceVersion the store has not reached, 504. */
		char *body;
		size_t len;

		free(w);
		free(params->label_selector);
		free(params->field_selector);
		if (r.code == 0)
			return MHD_NO;
		body = ki_buf_steal(&r.body, &len);
		mr = MHD_create_response_from_buffer(len, body,
		    MHD_RESPMEM_MUST_FREE);
		if (mr == NULL) {
			free(body);
			return MHD_NO;
		}
		MHD_add_response_header(mr, "Content-Type", "application/json");
		ret = MHD_queue_response(c, (unsigned)r.code, mr);
		MHD_destroy_response(mr);
		api_resp_free(&r);
		return ret;
	}
	api_resp_free(&r);
	w->hub = h;
	w->conn = c;
	w->p = *params;
	w->rep = !params->table ? API_REP_JSON : API_REP_TABLE +
	    (params->include >= API_INCLUDE_NONE &&
	    params->include <= API_INCLUDE_OBJECT ? params->include :
	    API_INCLUDE_METADATA);
	w->last_rv = params->rv;
	w->direct_ok = chunks_are_ours(c, params);
	w->fd = -1;
	ki_buf_init(&w->own);
	if (params->timeout > 0)
		w->deadline = time(NULL) + params->timeout;
	w->next_bookmark = time(NULL) + BOOKMARK_EVERY;
	mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
	    reader, w, reader_free);
	if (mr == NULL) {
		watcher_free(w);
		return MHD_NO;
	}
	pthread_mutex_lock(&h->mu);
	w->next = h->head;
	if (h->head)
		h->head->prev = w;
	h->head = w;
	h->count++;
	pthread_mutex_unlock(&h->mu);
	MHD_add_response_header(mr, "Content-Type", "application/json");
	MHD_add_response_header(mr, "Cache-Control", "no-store");
	for (const char *t = params->warnings; *t != '\0'; t += strlen(t) + 1) {
		char hdr[300];
		size_t n = (size_t)snprintf(hdr, sizeof(hdr), "299 - \"");

		/* A quoted-string: '"' and '\\' escaped, controls left out. */
		for (const char *q = t; *q != '\0' && n + 4 < sizeof(hdr); q++) {
			if (*q == '"' || *q == '\\')
				hdr[n++] = '\\';
			if ((unsigned char)*q >= 0x20 && *q != 0x7f)
				hdr[n++] = *q;
		}
		hdr[n++] = '"';
		hdr[n] = '\0';
		MHD_add_response_header(mr, "Warning", hdr);
	}
	ret = MHD_queue_response(c, 200, mr);
	MHD_destroy_response(mr);
	return ret;
}
