/* api/events.h — committed events kept in memory for watch streams.
 *
 * Each commit's events are read from the store once and kept in a ring.
 * Each event's line is rendered at most once per representation (the plain
 * JSON event; a one-row Table for each includeObject), on first use, and
 * the same immutable, reference-counted bytes go to every watch stream that
 * selects the event: a thousand watchers cost one render, not a thousand.
 * server/watch.c streams them (its hub thread and sockets).
 *
 * The ring's functions need the caller's lock (the watch hub's mutex);
 * events and their lines are immutable once made, and held by reference,
 * so they are read without it. */
#ifndef API_EVENTS_H
#define API_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "api/service.h"

#define API_RING 4096                /* events kept in memory for watchers */
#define API_RING_MAX_BYTES (64u << 20)

typedef struct api_ring api_ring;

/* The ways an event is written: plain JSON, or a Table row for each
 * includeObject value (api_include). */
enum { API_REP_JSON, API_REP_TABLE, API_REP_COUNT = API_REP_TABLE + 3 };

/* Bytes to send, immutable once made. Reference-counted: an event keeps
 * one reference to each line it rendered, and each queue entry holds one,
 * so a line outlives its event while a slow watcher still sends it. */
typedef struct api_line {
	int refs;                    /* atomic */
	size_t len;
	size_t row_off;              /* Table lines: where the row begins */
	char *data;
} api_line;

/* One committed event in the ring. The object points into buf; lines[]
 * are rendered on first use (whoever installs one first wins). */
typedef struct api_event {
	int refs;                    /* atomic: the ring's, each reader's */
	int type;
	uint64_t rv;
	size_t bytes;                /* atomic: buf and lines, for the bound */
	store_obj o;
	char *buf;
	api_line *lines[API_REP_COUNT]; /* atomic pointers */
	api_ring *ring;              /* its ring: the byte bound, the clock */
} api_event;

/* The ring holds every event in (base_rv, covered_rv], oldest at first,
 * in increasing rv order. */
struct api_ring {
	api_ctx *api;
	uint64_t history;            /* the store's: the ring keeps no more */
	api_event *ev[API_RING];
	size_t first, count;
	uint64_t base_rv;
	uint64_t covered_rv;         /* written under the lock, read atomically */
	size_t held_bytes;           /* atomic: live events' buf and lines */
};

/* Events read from the store for ring, each holding one reference. */
typedef struct api_events {
	api_ring *ring;
	api_event **ev;
	size_t n, cap;
} api_events;

/* Drops a reference to b, freeing it with the last. NULL is ignored. */
void api_line_unref(api_line *b);
/* A line made of b's bytes (b is left empty), one reference held by the
 * caller. NULL when out of memory. */
api_line *api_line_from_buf(ki_buf *b, size_t row_off);

static inline void
api_event_ref(api_event *e)
{
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
}
/* Drops a reference to e, freeing it and its lines with the last. */
void api_event_unref(api_event *e);
/* "ADDED", "MODIFIED" or "DELETED" for an event type 1 to 3. */
const char *api_event_type_name(int type);

/* Appends the event line for o as representation rep. With defs, a Table
 * carries its column definitions (a watcher's first Table event); without,
 * they are left empty as later events may. *row_off (may be NULL) gets
 * where a Table row begins. */
void api_render_line(ki_buf *b, const api_kind *k, int rep, int type,
	const store_obj *o, int defs, double now, size_t *row_off);
/* The shared line of e as rep (k is e's kind), rendered now if no one has
 * yet. Borrowed from e: take a reference to keep it. NULL when out of
 * memory. */
api_line *api_event_line(api_event *e, const api_kind *k, int rep);

/* Under the lock. api_ring_at: the k-th event from the oldest (borrowed).
 * api_ring_drop_oldest: forgets the oldest. api_ring_reset: forgets every
 * event (watchers behind rv from then on read the store) and covers up to
 * rv. api_ring_find: the position of the first event after rv (count when
 * none; rvs increase along the ring, not necessarily by one).
 * api_ring_push: appends e (taking a reference), first dropping the oldest
 * while the ring is full, holds more than API_RING_MAX_BYTES, or its
 * oldest is history events behind e. */
api_event *api_ring_at(api_ring *r, size_t k);
void api_ring_drop_oldest(api_ring *r);
void api_ring_reset(api_ring *r, uint64_t rv);
size_t api_ring_find(api_ring *r, uint64_t rv);
void api_ring_push(api_ring *r, api_event *e);

/* Copies the events after from out of the store into f (f->ring set, the
 * rest zero; the caller unrefs each and frees f->ev), in one read
 * transaction; *upto gets the store's resourceVersion (left as it is when
 * the store cannot be read, and KI_EIO returned). Returns the store's
 * code. Needs no lock. */
int api_events_read(api_events *f, uint64_t from, uint64_t *upto);

/* A watch stream's own read of the store, in one read transaction: for a
 * stream's start (*initial set, cleared here) every object of kind (each)
 * and *last_rv the store's resourceVersion; else the events after
 * *last_rv (fn) and *last_rv advanced to the store's. Returns what the
 * store returned: KI_OK, 1 (a callback stopped), KI_EGONE with *oldest the
 * oldest event kept, or a failure; *began tells whether the read
 * transaction began (nothing was read when not). */
int api_watch_read(store *st, int kind, int *initial, uint64_t *last_rv,
	store_each_fn each, store_event_fn fn, void *arg, uint64_t *oldest,
	int *began);

/* Can a watch start from resourceVersion rv? Not when rv is newer than
 * the store's: the events up to it would be passed over unseen. Returns
 * KI_OK, or KI_EINVAL with r filled (504 Timeout, ResourceVersionTooLarge,
 * as kube-apiserver answers), or the store's failure with r filled. */
int api_watch_check_rv(store *st, uint64_t rv, api_resp *r);

#endif
