/* api/plausible.h — plausibility at write time: the physical floor of a
 * run on its GPU, from the workload's byte and FLOP model and the GPU's
 * datasheet peaks, against what the run claims. */
#ifndef API_PLAUSIBLE_H
#define API_PLAUSIBLE_H

#include <json-c/json.h>
#include <stdint.h>

#include "api/object.h"
#include "lib/ki.h"
#include "store/store.h"

typedef struct api_plausibility {
	int known;               /* 0: the floor could not be computed */
	int implausible;
	int memory;              /* a peak-memory run, not a latency one */
	double floor;            /* ns (latency) or bytes (memory) */
	double claimed;          /* the run's median, same unit */
	double fraction;         /* floor / claimed: 1 is the limit */
	double bytes, flops;     /* the model's figures */
	int derived_workload;    /* the workload came from sourceNative */
	char gpu[64];            /* the GPU table row used */
	char model[160];         /* which formula */
	char reason[48];         /* the condition's reason */
	char message[256];       /* why, for people */
} api_plausibility;

/* The workload spec of a run: its resolved Workload, else one derived
 * from sourceNative (benchmark "kernel/pass" and a Liger externalId's
 * workload segment "batch8-hidden4096-…-fp32"). Returns a tree the caller
 * puts, or NULL; *derived tells which. spec is borrowed. */
struct json_object *api_run_workload(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, int *derived);

/* The same from the run's resolved Workload spec (borrowed, may be NULL). */
struct json_object *api_run_workload_from(struct json_object *spec,
	struct json_object *wl_ref, int *derived);

/* Evaluates a run (spec borrowed, refs in API_REF order). */
void api_plausibility_eval(store_txn *txn, struct json_object *spec,
	const uint8_t *refs, size_t nrefs, api_plausibility *out);

/* The same from references already resolved (rr borrowed). */
void api_plausibility_eval_from(struct json_object *spec,
	const api_run_refs *rr, api_plausibility *out);

/* Appends ,"plausibility":{…} for out to a status object being written. */
void api_plausibility_render(const api_plausibility *p, ki_buf *b);

#endif
