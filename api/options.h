/* api/options.h — the options a client sends with a write besides the
 * object: a DELETE's body (meta/v1 DeleteOptions) and its preconditions. */
#ifndef API_OPTIONS_H
#define API_OPTIONS_H

#include <stddef.h>

#include "api/kinds.h"
#include "api/service.h"
#include "store/store.h"

/* Reads a DELETE's body, a DeleteOptions object (len 0: none), into o:
 * dryRun ["All"] sets o->dry_run; preconditions {uid, resourceVersion} are
 * copied into o; propagationPolicy (Orphan, Background or Foreground),
 * orphanDependents and gracePeriodSeconds are checked and honoured as they
 * are (nothing here has dependents, and deletion is immediate). Anything
 * else is refused: returns KI_EINVAL with r filled (400), changing
 * nothing. max_depth bounds the body's nesting. */
int api_delete_options(const char *body, size_t len, int max_depth,
	api_write_opts *o, api_resp *r);

/* Checks the query parameters a DELETE may carry instead of a body
 * (propagationPolicy, gracePeriodSeconds; each may be NULL; the router
 * reads orphanDependents as a boolean). Returns 0, or KI_EINVAL with r
 * filled (400). */
int api_delete_query(const char *propagation, const char *grace,
	api_resp *r);

/* Do opt's preconditions hold for the stored object o (borrowed) of kind
 * k? Returns 1, or 0 with r filled (409 Conflict). */
int api_preconditions_hold(const api_write_opts *opt, const api_kind *k,
	const store_obj *o, api_resp *r);

#endif
