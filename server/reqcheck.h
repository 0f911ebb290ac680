/* server/reqcheck.h — checks of a request's framing headers and query
 * parameters as libmicrohttpd parsed them, before the router reads it:
 * what a proxy in front could read otherwise, or what would be passed
 * over in silence, is a 400. */
#ifndef SERVER_REQCHECK_H
#define SERVER_REQCHECK_H

#include <microhttpd.h>

#include "api/service.h"

/* Fills r with a 400 when the request's framing is ambiguous: read one
 * way by a proxy in front and another here, its body could carry a
 * request of its own; with a 411 when the body is chunked and chunked_ok
 * is 0 (the operator's accept-chunked-bodies). version as libmicrohttpd
 * handed it on. Returns 0 when the framing is sound and taken, -1 when r
 * is filled. */
int reqcheck_framing(struct MHD_Connection *c, const char *version,
	int chunked_ok, api_resp *r);
/* Fills r with a 400 when a query parameter has no value or is given
 * more than once (a 503 when out of memory). Returns 0 when every
 * parameter is one name=value, -1 when r is filled. */
int reqcheck_args(struct MHD_Connection *c, api_resp *r);

#endif
