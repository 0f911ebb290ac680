/* server/watch.c — the watch hub and its streaming responses. */
#include "server/watch.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/labels.h"
#include "api/table.h"
#include "lib/log.h"

#define MAX_PENDING (256 * 1024) /* events rendered per wake-up */
#define BOOKMARK_EVERY 30        /* seconds, when bookmarks are asked for */

typedef struct watcher {
	struct watcher *prev, *next;
	watch_hub *hub;
	struct MHD_Connection *conn;
	watch_params p;
	api_query q;
	uint64_t last_rv;
	ki_buf pending;
	size_t sent;                /* bytes of pending already sent */
	int suspended;
	int ended;                  /* send what is pending, then end */
	int defs_sent;              /* Table column definitions */
	time_t deadline, next_bookmark;
} watcher;

/* One event kept in memory: the store_obj points into buf. */
typedef struct cached_event {
	uint64_t rv;
	int type;
	store_obj o;
	char *buf;
} cached_event;

#define RING 4096                /* events kept in memory for watchers */
#define RING_MAX_BYTES (64u << 20)

struct watch_hub {
	api_ctx *api;
	/* The newest events, copied once per commit, so that a thousand
	 * watchers do not each read the store's history. */
	pthread_mutex_t notify_mu;   /* one filler at a time: no gaps */
	cached_event ring[RING];
	size_t ring_head, ring_count, ring_bytes;
	uint64_t cached_rv;          /* newest rv in the ring */
	uint64_t history;            /* the store's: the ring keeps no more */
	pthread_mutex_t mu;
	watcher *head;
	uint64_t count;
	uint64_t rv;                /* newest committed rv */
	pthread_t ticker;
	int stop;
	pthread_cond_t cv;
};

static void
resume_locked(watcher *w)
{
	if (w->suspended) {
		w->suspended = 0;
		MHD_resume_connection(w->conn);
	}
}

static void
ring_drop_oldest(watch_hub *h)
{
	size_t i = (h->ring_head + RING - h->ring_count) % RING;

	h->ring_bytes -= h->ring[i].o.json_len + h->ring[i].o.name_len +
	    h->ring[i].o.labels_len;
	free(h->ring[i].buf);
	memset(&h->ring[i], 0, sizeof(h->ring[i]));
	h->ring_count--;
}

typedef struct fresh {
	cached_event *ev;
	size_t n, cap;
} fresh;

/* Copies one event out of the store (its pointers die with the txn). */
static int
copy_event(void *arg, int type, const store_obj *o)
{
	fresh *f = arg;
	cached_event *e;
	char *p;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		cached_event *n = realloc(f->ev, cap * sizeof(*n));

		if (n == NULL)
			return KI_ENOMEM;
		f->ev = n;
		f->cap = cap;
	}
	e = &f->ev[f->n];
	e->buf = malloc(o->name_len + o->labels_len + o->json_len + 1);
	if (e->buf == NULL)
		return KI_ENOMEM;
	e->rv = o->rv;
	e->type = type;
	e->o = *o;
	p = e->buf;
	memcpy(p, o->name, o->name_len);
	e->o.name = p;
	p += o->name_len;
	if (o->labels_len)
		memcpy(p, o->labels, o->labels_len);
	e->o.labels = o->labels_len ? p : NULL;
	p += o->labels_len;
	memcpy(p, o->json, o->json_len);
	e->o.json = p;
	/* Only what watchers read stays valid. */
	e->o.natkey = NULL;
	e->o.natkey_len = 0;
	e->o.refs = NULL;
	e->o.nrefs = 0;
	e->o.facets = NULL;
	e->o.facets_len = 0;
	f->n++;
	return 0;
}

void
watch_hub_notify(void *arg, uint64_t rv)
{
	watch_hub *h = arg;
	fresh f = { NULL, 0, 0 };
	store_txn *t;
	int ok = 0;

	pthread_mutex_lock(&h->notify_mu);
	if (rv > h->cached_rv && store_begin(h->api->st, 0, &t) == KI_OK) {
		ok = store_events_since(t, h->cached_rv, copy_event, &f) == KI_OK;
		store_abort(t);
	}
	pthread_mutex_lock(&h->mu);
	if (!ok && f.n == 0 && rv > h->cached_rv) {
		/* Could not read: forget the ring, watchers read the store. */
		while (h->ring_count > 0)
			ring_drop_oldest(h);
	}
	for (size_t i = 0; i < f.n; i++) {
		cached_event *e = &f.ev[i];

		if (!ok || e->rv != h->cached_rv + 1) {
			/* Not contiguous with the ring: restart it here. */
			while (h->ring_count > 0)
				ring_drop_oldest(h);
		}
		if (!ok) {
			free(e->buf);
			continue;
		}
		while (h->ring_count == RING || (h->ring_count > 0 &&
		    (h->ring_bytes > RING_MAX_BYTES ||
		    h->ring[(h->ring_head + RING - h->ring_count) % RING].rv +
		    h->history <= e->rv)))
			ring_drop_oldest(h);
		h->ring[h->ring_head] = *e;
		h->ring_head = (h->ring_head + 1) % RING;
		h->ring_count++;
		h->ring_bytes += e->o.json_len + e->o.name_len + e->o.labels_len;
		h->cached_rv = e->rv;
	}
	if (rv > h->rv)
		h->rv = rv;
	for (watcher *w = h->head; w != NULL; w = w->next)
		resume_locked(w);
	pthread_mutex_unlock(&h->mu);
	pthread_mutex_unlock(&h->notify_mu);
	free(f.ev);
}

/* Wakes watchers whose timeout ended or whose bookmark is due. */
static void *
ticker(void *arg)
{
	watch_hub *h = arg;
	struct timespec ts;

	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		time_t now = time(NULL);

		for (watcher *w = h->head; w != NULL; w = w->next) {
			if ((w->deadline && now >= w->deadline) ||
			    (w->p.bookmarks && now >= w->next_bookmark))
				resume_locked(w);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&h->cv, &h->mu, &ts);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

int
watch_hub_create(watch_hub **out, api_ctx *api, uint64_t history)
{
	watch_hub *h = calloc(1, sizeof(*h));
	store_txn *t;

	*out = NULL;
	if (h == NULL)
		return KI_ENOMEM;
	h->api = api;
	h->history = history ? history : 100000;
	pthread_mutex_init(&h->mu, NULL);
	pthread_mutex_init(&h->notify_mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (store_begin(api->st, 0, &t) == KI_OK) {
		h->rv = store_rv(t);
		h->cached_rv = h->rv;
		store_abort(t);
	}
	if (pthread_create(&h->ticker, NULL, ticker, h) != 0) {
		pthread_mutex_destroy(&h->mu);
		pthread_cond_destroy(&h->cv);
		free(h);
		return KI_EIO;
	}
	*out = h;
	return KI_OK;
}

void
watch_hub_destroy(watch_hub *h)
{
	if (h == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->ticker, NULL);
	while (h->ring_count > 0)
		ring_drop_oldest(h);
	pthread_mutex_destroy(&h->notify_mu);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

void
watch_hub_shutdown(watch_hub *h)
{
	pthread_mutex_lock(&h->mu);
	for (watcher *w = h->head; w != NULL; w = w->next) {
		__atomic_store_n(&w->ended, 1, __ATOMIC_RELAXED);
		resume_locked(w);
	}
	pthread_mutex_unlock(&h->mu);
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

static const char *const type_names[] = { "", "ADDED", "MODIFIED",
	"DELETED" };

/* Appends one event line for o. */
static void
render_event(watcher *w, int type, const store_obj *o)
{
	ki_buf *b = &w->pending;

	ki_buf_printf(b, "{\"type\":\"%s\",\"object\":", type_names[type]);
	if (w->p.table) {
		if (w->defs_sent) {
			/* Later events may leave the definitions out. */
			ki_buf_puts(b, "{\"kind\":\"Table\",\"apiVersion\":"
			    "\"meta.k8s.io/v1\",\"columnDefinitions\":[],\"rows\":[");
		} else {
			api_table_open(b, w->p.kind);
			w->defs_sent = 1;
		}
		api_table_row(b, w->p.kind, o, w->p.include, w->hub->api->now(), 0);
		api_table_close(b, o->rv, NULL);
	} else {
		ki_buf_append(b, o->json, o->json_len);
	}
	ki_buf_puts(b, "}\n");
}

static int
on_event(void *arg, int type, const store_obj *o)
{
	watcher *w = arg;

	w->last_rv = o->rv;
	if (o->kind != w->p.kind->id || type < 1 || type > 3 ||
	    !api_query_match(&w->q, o))
		return 0;
	render_event(w, type, o);
	return w->pending.len >= MAX_PENDING ? 1 : 0;
}

static int
on_initial(void *arg, const store_obj *o)
{
	watcher *w = arg;

	if (api_query_match(&w->q, o))
		render_event(w, 1, o);
	return w->pending.oom ? KI_ENOMEM : 0;
}

static void
expired(watcher *w, uint64_t rv)
{
	ki_buf_printf(&w->pending, "{\"type\":\"ERROR\",\"object\":{\"kind\":"
	    "\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
	    "\"Failure\",\"message\":\"too old resource version: %llu (the "
	    "oldest kept is %llu)\",\"reason\":\"Expired\",\"code\":410}}\n",
	    (unsigned long long)w->p.rv, (unsigned long long)rv);
	w->ended = 1;
}

/* Serves the events after last_rv from the ring when it holds them all;
 * returns 0 when the store must be read instead. */
static int
fill_from_ring(watcher *w)
{
	watch_hub *h = w->hub;
	size_t first;
	int served = 0;

	pthread_mutex_lock(&h->mu);
	if (h->ring_count > 0) {
		first = (h->ring_head + RING - h->ring_count) % RING;
		/* Only a ring that is up to date with the commits, and reaches
		 * back to what this watcher has seen, can stand for the store. */
		if (h->ring[first].rv <= w->last_rv + 1 &&
		    h->cached_rv >= w->last_rv && h->cached_rv >= h->rv) {
			/* The ring's rvs are consecutive: the first new event is at
			 * a known offset, no scan. */
			size_t skip = (size_t)(w->last_rv + 1 - h->ring[first].rv);

			for (size_t k = skip; k < h->ring_count; k++) {
				cached_event *e = &h->ring[(first + k) % RING];

				if (on_event(w, e->type, &e->o) != 0)
					break;
			}
			served = 1;
		}
	}
	pthread_mutex_unlock(&h->mu);
	return served;
}

/* Reads what happened since last_rv into pending. */
static void
fill(watcher *w)
{
	store_txn *t;
	int rc;

	if (!w->p.initial && !w->p.bookmarks && fill_from_ring(w))
		return;
	if (store_begin(w->hub->api->st, 0, &t) != KI_OK)
		return;
	if (w->p.initial) {
		w->p.initial = 0;
		w->last_rv = store_rv(t);
		rc = store_list(t, w->p.kind->id, 0, on_initial, w);
	} else {
		rc = store_events_since(t, w->last_rv, on_event, w);
		if (rc == KI_EGONE)
			expired(w, store_oldest_event(t));
	}
	if (w->p.bookmarks && time(NULL) >= w->next_bookmark && !w->ended) {
		if (w->last_rv < store_rv(t) && w->pending.len == 0)
			w->last_rv = store_rv(t);
		ki_buf_printf(&w->pending, "{\"type\":\"BOOKMARK\",\"object\":"
		    "{\"kind\":\"%s\",\"apiVersion\":\"" API_GROUP_VERSION "\","
		    "\"metadata\":{\"resourceVersion\":\"%llu\"}}}\n",
		    w->p.kind->kind, (unsigned long long)w->last_rv);
		w->next_bookmark = time(NULL) + BOOKMARK_EVERY;
	}
	store_abort(t);
}

static ssize_t
reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	watcher *w = cls;
	watch_hub *h = w->hub;

	(void)pos;
	for (;;) {
		size_t left = w->pending.len - w->sent;

		if (left > 0) {
			size_t n = left < max ? left : max;

			memcpy(buf, w->pending.data + w->sent, n);
			w->sent += n;
			if (w->sent == w->pending.len) {
				ki_buf_reset(&w->pending);
				w->sent = 0;
			}
			return (ssize_t)n;
		}
		if (__atomic_load_n(&w->ended, __ATOMIC_RELAXED) ||
		    (w->deadline && time(NULL) >= w->deadline))
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (w->pending.oom)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		fill(w);
		if (w->pending.len > 0 || w->ended)
			continue;
		/* Nothing to send: sleep until a commit, the deadline or a
		 * bookmark. The check and the suspend happen under the hub's
		 * lock, so no commit can slip between them. */
		pthread_mutex_lock(&h->mu);
		if (h->rv > w->last_rv) {
			/* A commit landed after fill() read: read again. */
			pthread_mutex_unlock(&h->mu);
			continue;
		}
		w->suspended = 1;
		MHD_suspend_connection(w->conn);
		pthread_mutex_unlock(&h->mu);
		return 0;
	}
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
	api_query_free(&w->q);
	free(w->p.label_selector);
	free(w->p.field_selector);
	ki_buf_free(&w->pending);
	free(w);
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
	    api_query_parse(&w->q, params->kind, params->label_selector,
	    params->field_selector, &r) != KI_OK) {
		/* A bad selector answers as a list would: 400 with a Status. */
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
	w->last_rv = params->rv;
	ki_buf_init(&w->pending);
	if (params->timeout > 0)
		w->deadline = time(NULL) + params->timeout;
	w->next_bookmark = time(NULL) + BOOKMARK_EVERY;
	mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
	    reader, w, reader_free);
	if (mr == NULL) {
		api_query_free(&w->q);
		free(w->p.label_selector);
		free(w->p.field_selector);
		free(w);
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
	ret = MHD_queue_response(c, 200, mr);
	MHD_destroy_response(mr);
	return ret;
}
