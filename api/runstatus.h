/* api/runstatus.h — a stored run's status: each reference resolved or
 * not, and its plausibility (physics/plausible.h) evaluated from the
 * stored Workload and ExecutionEnvironment. */
#ifndef API_RUNSTATUS_H
#define API_RUNSTATUS_H

#include <json-c/json.h>
#include <stdint.h>

#include "api/object.h"
#include "lib/ki.h"
#include "physics/plausible.h"
#include "store/store.h"

/* The workload spec of a run: its stored Workload, else one derived from
 * sourceNative (api_run_workload_from). Returns a tree the caller puts, or
 * NULL; *derived tells which. spec is borrowed. */
struct json_object *api_run_workload(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, int *derived);

/* Evaluates a run (spec borrowed, refs in API_REF order). */
void api_plausibility_eval(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, api_plausibility *out);

/* The same from references already resolved (rr borrowed). */
void api_plausibility_eval_from(struct json_object *spec,
	const api_run_refs *rr, api_plausibility *out);

/* Appends ,"plausibility":{…} for out to a status object being written. */
void api_plausibility_render(const api_plausibility *p, ki_buf *b);

/* Appends the status a stored object of kind k gets: its digest, and for
 * runs each reference resolved or not (rr: the run's references, loaded
 * by api_run_refs_load), the plausibility pl (may be NULL), and
 * conditions DigestsVerified and Plausible. */
int api_compute_status(const api_kind *k,
	const uint8_t digest[API_DIGEST_LEN], const uint8_t *refs, size_t nrefs,
	const api_run_refs *rr, const api_plausibility *pl, double now,
	ki_buf *out);

/* Gives each condition of status (a status object's JSON text, rewritten
 * when a time changes) the lastTransitionTime of the condition of the same
 * type in prev (the status it replaces; prev_len bytes, borrowed) when its
 * status is the same: a condition's time is when its status last
 * changed. Returns 0 or KI_ENOMEM. */
int api_conditions_keep(ki_buf *status, const char *prev, size_t prev_len);

#endif
