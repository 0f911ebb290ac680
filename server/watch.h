/* server/watch.h — watch streams: a hub reads each commit's events once
 * and renders each line once per representation, shared by every watcher.
 * A watcher is a libmicrohttpd connection; once caught up, a plain HTTP/1.1
 * one is suspended and the hub writes the shared lines to its socket
 * itself, others are resumed to send them through libmicrohttpd. */
#ifndef SERVER_WATCH_H
#define SERVER_WATCH_H

#include <stdint.h>

#include "api/service.h"

typedef struct watch_hub watch_hub;

typedef struct watch_params {
	const api_kind *kind;
	char *label_selector;       /* owned, may be NULL */
	char *field_selector;       /* owned, may be NULL */
	uint64_t rv;                /* replay events after this */
	int initial;                /* no rv given: synthetic ADDED first */
	int table;
	int include;
	int bookmarks;              /* allowWatchBookmarks=true */
	int timeout;                /* timeoutSeconds, 0 = none */
	int http11;                 /* the request is HTTP/1.1 */
	/* The Warnings' texts for the answer, each ended by a NUL, the
	 * list by an empty one. */
	char warnings[512];
} watch_params;

/* history: the store's event history; the in-memory ring keeps no more. */
int watch_hub_create(watch_hub **out, api_ctx *api, uint64_t history);
/* Ends every stream and frees. The HTTP server must be stopped first. */
void watch_hub_destroy(watch_hub *h);
/* The api_ctx.committed hook: tells the hub's thread of rv, which reads
 * the new events and wakes the watchers they concern. Does not block on
 * the watchers. */
void watch_hub_notify(void *hub, uint64_t rv);
/* Ends every stream (each sends what it has, then closes) and waits up to
 * two seconds for them to go: libmicrohttpd cannot stop with suspended
 * connections. */
void watch_hub_shutdown(watch_hub *h);
/* Number of open watch streams. */
uint64_t watch_hub_count(watch_hub *h);

/* Starts a watch on connection c (a struct MHD_Connection *): queues a
 * streaming response. Consumes params' strings. Returns an MHD_Result. */
int watch_start(watch_hub *h, void *connection, watch_params *params);

#endif
