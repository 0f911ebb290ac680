/* server/watch.h — watch streams: a hub reads each commit's events once
 * and renders each line once per representation; every watcher is a
 * libmicrohttpd connection, suspended while idle, that the hub resumes when
 * events it selects are ready and that then sends the shared lines. */
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
