/* server/router.h — maps a decoded HTTP request to an API operation. Kept
 * apart from libmicrohttpd so that tests and fuzzers can drive it. */
#ifndef SERVER_ROUTER_H
#define SERVER_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "api/service.h"
#include "server/watch.h"

typedef struct server_metrics {
	/* Updated with atomic adds from the HTTP threads. */
	uint64_t requests[6];       /* by status class: 1xx … 5xx, [0] other */
	uint64_t bytes_out;
	uint64_t duration_us;
	uint64_t writes;
	uint64_t in_flight;
} server_metrics;

typedef struct http_req {
	const char *method;
	const char *path;           /* decoded, without the query */
	/* Query parameter and header lookups; NULL when absent. */
	const char *(*arg)(void *cls, const char *name);
	const char *(*header)(void *cls, const char *name);
	/* The names of the query parameters, in order, into names (at most
	 * max, borrowed for the request); returns how many there are (may be
	 * more than max). NULL: not known (no check of unknown names). */
	size_t (*arg_names)(void *cls, const char **names, size_t max);
	void *cls;
	const char *body;
	size_t body_len;
	int loopback;               /* the client connected over loopback */
} http_req;

typedef struct router {
	api_ctx *api;
	const char *static_dir;
	server_metrics *metrics;
	int anonymous_reads;        /* reads need no token */
} router;

/* Fills r for req. r must be initialised (api_resp_init). For a watch,
 * r is left with code 0 and *watch receives the parameters (caller owns;
 * hand them to watch_start()). */
void router_dispatch(router *rt, const http_req *req, api_resp *r,
	watch_params **watch);

/* For a request whose body may be read as it arrives (a POST of NDJSON to
 * a collection, neither atomic nor a dry run): a stream to feed it to,
 * after the request's authentication and parameters were checked. NULL
 * otherwise: with r->code set when the request already failed (drop the
 * body and answer r), else read the body whole and dispatch. */
api_stream *router_stream_open(router *rt, const http_req *req, api_resp *r);

/* The largest body accepted for a request with this Content-Type. */
size_t router_body_limit(const router *rt, const char *content_type);

#endif
