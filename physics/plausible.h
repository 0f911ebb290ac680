/* physics/plausible.h — plausibility: the physical floor of a run on its
 * GPU, from the workload's byte and FLOP model (physics/costmodel.h) and
 * the GPU's datasheet peaks (physics/gpu.h), against what the run claims.
 * It reads json-c trees only; api/runstatus.h evaluates stored runs. */
#ifndef PHYSICS_PLAUSIBLE_H
#define PHYSICS_PLAUSIBLE_H

#include <json-c/json.h>

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

/* The workload spec of a run: its resolved Workload spec wl_ref (borrowed,
 * may be NULL), else one derived from sourceNative (benchmark
 * "kernel/pass" and a Liger externalId's workload segment
 * "batch8-hidden4096-…-fp32"). Returns a tree the caller puts, or NULL;
 * *derived tells which. spec is borrowed. */
struct json_object *api_run_workload_from(struct json_object *spec,
	struct json_object *wl_ref, int *derived);

/* Evaluates a run's spec against its resolved Workload spec wl_ref and
 * ExecutionEnvironment spec env (all borrowed; wl_ref and env are NULL
 * where not stored yet). Fills out. */
void api_plausibility_eval_specs(struct json_object *spec,
	struct json_object *wl_ref, struct json_object *env,
	api_plausibility *out);

#endif
