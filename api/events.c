/* api/events.c — committed events kept in memory for watch streams:
 * copied once out of the store, rendered once per representation, shared
 * by reference, kept in a ring (api/events.h). */
#include "api/events.h"

#include <stdlib.h>
#include <string.h>

#include "api/table.h"

void
api_line_unref(api_line *b)
{
	if (b != NULL && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(b->data);
		free(b);
	}
}

/* A blob made of b's bytes (b is left empty). NULL when out of memory. */
api_line *
api_line_from_buf(ki_buf *b, size_t row_off)
{
	api_line *bl;

	if (b->oom) {
		ki_buf_free(b);
		return NULL;
	}
	if ((bl = malloc(sizeof(*bl))) == NULL) {
		ki_buf_free(b);
		return NULL;
	}
	bl->refs = 1;
	bl->row_off = row_off;
	bl->data = ki_buf_steal(b, &bl->len);
	if (bl->data == NULL) {
		free(bl);
		return NULL;
	}
	return bl;
}

void
api_event_unref(api_event *e)
{
	if (e == NULL || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	__atomic_sub_fetch(&e->ring->held_bytes,
	    __atomic_load_n(&e->bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	for (int i = 0; i < API_REP_COUNT; i++)
		api_line_unref(e->lines[i]);
	free(e->buf);
	free(e);
}

static const char *const type_names[] = { "", "ADDED", "MODIFIED",
	"DELETED" };

const char *
api_event_type_name(int type)
{
	return type_names[type];
}

/* Appends the event line for o as representation rep. With defs, a Table
 * carries its column definitions (a watcher's first Table event); without,
 * they are left empty as later events may. *row_off (may be NULL) gets
 * where a Table row begins. */
void
api_render_line(ki_buf *b, const api_kind *k, int rep, int type,
	const store_obj *o, int defs, double now, size_t *row_off)
{
	ki_buf_puts(b, "{\"type\":\"");
	ki_buf_puts(b, type_names[type]);
	ki_buf_puts(b, "\",\"object\":");
	if (rep >= API_REP_TABLE) {
		if (defs)
			api_table_open(b, k);
		else
			ki_buf_puts(b, "{\"kind\":\"Table\",\"apiVersion\":"
			    "\"meta.k8s.io/v1\",\"columnDefinitions\":[],\"rows\":[");
		if (row_off != NULL)
			*row_off = b->len;
		api_table_row(b, k, o, rep - API_REP_TABLE, now, 0);
		api_table_close(b, o->rv, NULL);
	} else {
		ki_buf_append(b, o->json, o->json_len);
	}
	ki_buf_puts(b, "}\n");
}

/* The shared line of e as rep (k is e's kind), rendered now if no one has
 * yet. Borrowed from e: take a reference to keep it. NULL when out of
 * memory. */
api_line *
api_event_line(api_event *e, const api_kind *k, int rep)
{
	api_line *b = __atomic_load_n(&e->lines[rep], __ATOMIC_ACQUIRE), *expect;
	ki_buf buf;
	size_t row_off = 0;

	if (b != NULL)
		return b;
	ki_buf_init(&buf);
	api_render_line(&buf, k, rep, e->type, &e->o, 0,
	    rep >= API_REP_TABLE ? e->ring->api->now() : 0, &row_off);
	if ((b = api_line_from_buf(&buf, row_off)) == NULL)
		return NULL;
	expect = NULL;
	if (!__atomic_compare_exchange_n(&e->lines[rep], &expect, b, 0,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Another watcher rendered it meanwhile: use theirs. */
		api_line_unref(b);
		return expect;
	}
	__atomic_add_fetch(&e->bytes, b->len, __ATOMIC_RELAXED);
	__atomic_add_fetch(&e->ring->held_bytes, b->len, __ATOMIC_RELAXED);
	return b;
}

/* ---- the ring ---- */

api_event *
api_ring_at(api_ring *r, size_t k)
{
	return r->ev[(r->first + k) % API_RING];
}

void
api_ring_drop_oldest(api_ring *r)
{
	api_event *e = r->ev[r->first];

	r->ev[r->first] = NULL;
	r->first = (r->first + 1) % API_RING;
	r->count--;
	r->base_rv = e->rv;
	api_event_unref(e);
}

void
api_ring_reset(api_ring *r, uint64_t rv)
{
	while (r->count > 0)
		api_ring_drop_oldest(r);
	r->base_rv = rv;
	__atomic_store_n(&r->covered_rv, rv, __ATOMIC_RELEASE);
}

size_t
api_ring_find(api_ring *r, uint64_t rv)
{
	size_t lo = 0, hi = r->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (api_ring_at(r, mid)->rv <= rv)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Copies one event out of the store (its pointers die with the txn). */
static int
copy_event(void *arg, int type, const store_obj *o)
{
	api_events *f = arg;
	api_event *e;
	size_t len = o->name_len + o->labels_len + o->json_len + 1;
	char *p;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		api_event **n = realloc(f->ev, cap * sizeof(*n));

		if (n == NULL)
			return KI_ENOMEM;
		f->ev = n;
		f->cap = cap;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return KI_ENOMEM;
	if ((e->buf = malloc(len)) == NULL) {
		free(e);
		return KI_ENOMEM;
	}
	e->refs = 1;
	e->ring = f->ring;
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
	e->bytes = len;
	__atomic_add_fetch(&f->ring->held_bytes, len, __ATOMIC_RELAXED);
	f->ev[f->n++] = e;
	return 0;
}

void
api_ring_push(api_ring *r, api_event *e)
{
	while (r->count == API_RING || (r->count > 0 &&
	    (__atomic_load_n(&r->held_bytes, __ATOMIC_RELAXED) >
	    API_RING_MAX_BYTES ||
	    api_ring_at(r, 0)->rv + r->history <= e->rv)))
		api_ring_drop_oldest(r);
	api_event_ref(e);
	r->ev[(r->first + r->count) % API_RING] = e;
	r->count++;
}

static int
events_since(store *st, uint64_t from, store_event_fn fn, void *arg,
	uint64_t *rv)
{
	store_txn *t;
	int rc = KI_EIO;

	if (store_begin(st, 0, &t) == KI_OK) {
		rc = store_events_since(t, from, fn, arg);
		*rv = store_rv(t);
		store_abort(t);
	}
	return rc;
}

int
api_watch_read(store *st, int kind, int *initial, uint64_t *last_rv,
	store_each_fn each, store_event_fn fn, void *arg, uint64_t *oldest,
	int *began)
{
	store_txn *t;
	int rc;

	*began = 0;
	if ((rc = store_begin(st, 0, &t)) != KI_OK)
		return rc;
	*began = 1;
	if (*initial) {
		*initial = 0;
		*last_rv = store_rv(t);
		rc = store_list(t, kind, 0, each, arg);
	} else {
		rc = store_events_since(t, *last_rv, fn, arg);
		if (rc == KI_EGONE)
			*oldest = store_oldest_event(t);
		else if (rc == KI_OK && *last_rv < store_rv(t))
			*last_rv = store_rv(t);
	}
	store_abort(t);
	return rc;
}

int
api_watch_check_rv(store *st, uint64_t rv, api_resp *r)
{
	store_txn *t;
	uint64_t cur;
	int rc;

	/* A store whose reads may lag (etcd's watch cache) first reaches
	 * rv, as kube-apiserver's cache waits. */
	if (rv > 0)
		(void)store_sync(st, rv, 3000);
	if ((rc = store_begin(st, 0, &t)) != KI_OK) {
		api_fail_rc(r, rc, "reading the store");
		return rc;
	}
	cur = store_rv(t);
	store_abort(t);
	if (rv <= cur)
		return KI_OK;
	api_resp_fail(r, 504, "Timeout", "resourceVersion", "Too large resource "
	    "version: %llu, current: %llu", (unsigned long long)rv,
	    (unsigned long long)cur);
	return KI_EINVAL;
}

int
api_events_read(api_events *f, uint64_t from, uint64_t *upto)
{
	return events_since(f->ring->api->st, from, copy_event, f, upto);
}
